# batch_stage_two_loads.py: stage 2 of a generated inner-outer kernel with K predicated workspace loads
# per thread issued together (the rows added in the same order).  Usage: python3 batch_stage_two_loads.py KERNEL.cu OUT.cu K
import sys, re
src, out, K = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = open(src).read()
m = re.search(r'( *)#pragma unroll 4\n *for \(long long p = slice; p < partial_rows; p \+= (\d+)\) \{\n(.*?)\n\1\}\n', t, re.S)
ind, step, body = m.group(1), m.group(2), m.group(3)
# body: loads into partN and adds; rewrite: arrays [K][V]
loads = re.findall(r'float (part\d)\[(\d+)\];\n *(fv_load_past_l1<\d+>\(.*?, \1\));', body)
new = f'{ind}for (long long p0 = slice; p0 < partial_rows; p0 += {step} * {K}) {{\n'
for name, v, call in loads:
    new += f'{ind}    float {name}[{K}][{v}];\n'
new += f'{ind}    #pragma unroll\n{ind}    for (int k = 0; k < {K}; ++k) {{\n{ind}        const long long p = p0 + (long long)k * {step};\n'
for name, v, call in loads:
    c = call.replace(f', {name})', f', {name}[k])')
    new += f'{ind}        if (p < partial_rows) {c}; else for (int lane = 0; lane < {v}; ++lane) {name}[k][lane] = 0.0f;\n'
new += f'{ind}    }}\n{ind}    #pragma unroll\n{ind}    for (int k = 0; k < {K}; ++k) {{\n'
sums = re.findall(r'sum(\d)\[lane\] \+= part\1\[lane\];', body)
for s in sums:
    new += f'{ind}        for (int lane = 0; lane < 2; ++lane) sum{s}[lane] += part{s}[k][lane];\n'
new += f'{ind}    }}\n{ind}}}\n'
t = t[:m.start()] + new + t[m.end():]
open(out, 'w').write(t)
