// SPDX-License-Identifier: Apache-2.0
// Warp-level behaviour: lanes diverge (different branches, different loop trip counts),
// intrinsics run inside a divergent branch on the active lanes only, then the warp
// reconverges for ballot/any/all, shuffles of every kind (including sub-warp widths),
// match, redux and the block-wide __syncthreads_count/_and/_or.
extern "C" __global__ void warp_ops(const int *in, unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned lane = threadIdx.x & 31;
    int v = i < n ? in[i] : 0;
    unsigned *o = out + i * 16;
    int acc = 0;
    if (lane % 3 == 0) {
        for (int k = 0; k < (v & 7); k++)
            acc += k * v;
    } else if (lane % 3 == 1) {
        acc = v * 7;
        unsigned am = __activemask();
        o[10] = am;
        o[11] = __ballot_sync(am, v > 0);
        o[12] = __shfl_sync(am, v, __ffs(am) - 1);
    } else {
        acc = -v;
    }
    o[0] = __ballot_sync(0xffffffffu, acc & 1);
    o[1] = __any_sync(0xffffffffu, acc > 1000);
    o[2] = __all_sync(0xffffffffu, acc != 12345);
    int s = acc;
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    o[3] = s;
    o[4] = __shfl_up_sync(0xffffffffu, acc, 3);
    o[5] = __shfl_down_sync(0xffffffffu, acc, 5);
    o[6] = __shfl_sync(0xffffffffu, acc, (lane * 7) & 31);
    o[7] = __shfl_down_sync(0xffffffffu, acc, 2, 8);
    o[8] = __popc(__activemask());
    o[9] = __match_any_sync(0xffffffffu, acc & 3);
    o[13] = __reduce_add_sync(0xffffffffu, (unsigned)acc);
    o[14] = __syncthreads_count(acc > 0);
    o[15] = __syncthreads_or(acc == 42) | (__syncthreads_and(acc != 7) << 1);
}
