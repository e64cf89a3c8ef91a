# cut_the_end.py: the end of a generated inner-outer kernel, cut back to time its parts.  KIND: noload (stage 2
# without its workspace loads), bar (an arrive/poll grid barrier instead of cooperative groups), nows (no
# workspace stores and no sync).  Also: sed "s/cooperative_groups::this_grid().sync();/return;/" (no grid sync,
# no stage 2).  Usage: python3 cut_the_end.py KERNEL.cu OUT.cu KIND
import sys, re
src, out, kind = sys.argv[1:4]
t = open(src).read()
SYNC = 'cooperative_groups::this_grid().sync();'
if kind == 'noload':
    t = re.sub(r'fv_load_past_l1<2>\((.*?), (part\d)\);', r'\2[0] = 0.0f, \2[1] = 0.0f;', t)
elif kind == 'bar':
    t = t.replace(SYNC, '''__syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        const unsigned arrival = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
        unsigned before, now;
        asm volatile("atom.add.release.gpu.u32 %0, [%1], %2;" : "=r"(before) : "l"(semaphores), "r"(arrival) : "memory");
        do { asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(now) : "l"(semaphores) : "memory"); } while (((before ^ now) & 0x80000000u) == 0);
    }
    __syncthreads();''')
elif kind == 'nows':
    t = re.sub(r'fv_store<8>\(workspace.*?\n', '\n', t)
    t = t.replace(SYNC, 'return;')
open(out, 'w').write(t)
