// SPDX-License-Identifier: Apache-2.0
// Spins on %globaltimer for ns nanoseconds (a kernel of known duration, for utilisation and
// limiter tests), counting completed kernels with a device-side atomic.
extern "C" __global__ void spin_ns(unsigned long long ns, unsigned long long *done)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(done, 1ull);
}
