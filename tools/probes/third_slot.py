# third_slot.py: edits a generated forward kernel (2 row slots, x cached weight and bias)
# to prefetch two rows ahead in 3 slots.  Usage: python3 third_slot.py KERNEL.cu H OUT.cu
import re
import sys

source, hidden, output = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(source).read()
row_bytes = hidden * 2
for name in ('cached1', 'cached2'):
    found = re.search(name + r' = reinterpret_cast<__nv_bfloat16 \*>\(row_buffers \+ (\d+)\)', text)
    if found:
        offset = int(found.group(1))
        text = text.replace(found.group(0), found.group(0).replace(str(offset), str(offset + row_bytes)))
first = re.search(r"    // The first row's copies; each row then issues the next one's.\n    \{\n(.*?)\n    \}\n    fv_async_commit\(\);\n",
                  text, re.S).group(0)
second = first.replace('const long long fetch_row = (long long)blockIdx.x * 1 + threadIdx.y;',
                       'const long long fetch_row = (long long)blockIdx.x * 1 + threadIdx.y + row_stride;')
second = second.replace('(0) * %d' % hidden, '(1) * %d' % hidden)
text = text.replace(first, first + second)
text = text.replace('const long long fetch_row = row + row_stride;', 'const long long fetch_row = row + 2 * row_stride;')
text = text.replace('(slot ^ 1) * %d' % hidden, '(slot == 0 ? 2 : slot - 1) * %d' % hidden)
text = text.replace('fv_async_wait<1>();  // this row', 'fv_async_wait<2>();  // this row')
text = text.replace('        slot ^= 1;\n', '        slot = slot == 2 ? 0 : slot + 1;\n')
open(output, 'w').write(text)
