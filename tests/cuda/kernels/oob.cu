// SPDX-License-Identifier: Apache-2.0
// Writes far outside its buffer (host/oob.c picks an address mapped nowhere): the driver must
// report CUDA_ERROR_ILLEGAL_ADDRESS, and the context is unusable afterwards (sticky error), as
// on hardware.
extern "C" __global__ void write_oob(int *p, long long offset)
{
    if (threadIdx.x == 0)
        p[offset] = 42;
}
