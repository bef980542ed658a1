// SPDX-License-Identifier: Apache-2.0
// Pitched memory as image and volume code uses it: cudaMallocPitch + cudaMemcpy2D (both
// directions, a sub-rectangle, device to device, async on a stream) + cudaMemset2D, and
// cudaMalloc3D + cudaMemcpy3D + cudaMemset3D, with a kernel reading and writing through the
// pitch. Every byte checked, padding included where the program owns it.
#include "check.h"

__global__ void scale2d(float *p, size_t pitch, int w, int h, float f)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float *row = (float *)((char *)p + y * pitch);
        row[x] *= f;
    }
}

__global__ void add3d(cudaPitchedPtr v, int w, int h, int d, int k)
{
    int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
    if (x < w && y < h && z < d) {
        int *row = (int *)((char *)v.ptr + ((size_t)z * h + y) * v.pitch);
        row[x] += k;
    }
}

int main()
{
    prog = "pitched";
    const int w = 37, h = 23; // floats
    float *host = new float[w * h], *back = new float[w * h];
    for (int i = 0; i < w * h; i++)
        host[i] = rndf();
    float *dev, *dev2;
    size_t pitch, pitch2;
    CK(cudaMallocPitch(&dev, &pitch, w * sizeof(float), h));
    CK(cudaMallocPitch(&dev2, &pitch2, w * sizeof(float), h));
    if (pitch < w * sizeof(float))
        mismatch("pitch %zu below the row of %zu bytes", pitch, w * sizeof(float));
    CK(cudaMemset2D(dev, pitch, 0, pitch, h)); // whole rows, padding included
    CK(cudaMemcpy2D(dev, pitch, host, w * sizeof(float), w * sizeof(float), h,
                    cudaMemcpyHostToDevice));
    dim3 block(16, 8), grid((w + 15) / 16, (h + 7) / 8);
    scale2d<<<grid, block>>>(dev, pitch, w, h, 2.0f);
    CK(cudaGetLastError());
    CK(cudaMemcpy2D(dev2, pitch2, dev, pitch, w * sizeof(float), h, cudaMemcpyDeviceToDevice));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMemcpy2DAsync(back, w * sizeof(float), dev2, pitch2, w * sizeof(float), h,
                         cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < w * h; i++)
        if (!same_bits(back[i], host[i] * 2.0f))
            mismatch("2D: [%d][%d] = %.9g, expected %.9g", i / w, i % w, back[i], host[i] * 2.0f);
    // the padding after each row stayed zero
    unsigned char *raw = new unsigned char[pitch * h];
    CK(cudaMemcpy(raw, dev, pitch * h, cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (size_t b = w * sizeof(float); b < pitch; b++)
            if (raw[y * pitch + b])
                mismatch("2D: padding byte %zu of row %d = %u", b, y, raw[y * pitch + b]);
    // a sub-rectangle: rows 5..9, columns 3..10 set to 0x7f bytes
    CK(cudaMemset2D((char *)dev + 5 * pitch + 3 * sizeof(float), pitch, 0x7f, 8 * sizeof(float),
                    5));
    CK(cudaMemcpy2D(back, w * sizeof(float), dev, pitch, w * sizeof(float), h,
                    cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float want = host[y * w + x] * 2.0f;
            if (y >= 5 && y < 10 && x >= 3 && x < 11)
                memset(&want, 0x7f, sizeof(want));
            if (!same_bits(back[y * w + x], want))
                mismatch("2D sub-rectangle: [%d][%d] = %.9g, expected %.9g", y, x,
                         back[y * w + x], want);
        }

    // 3D
    const int vw = 19, vh = 7, vd = 5;
    cudaExtent ext = make_cudaExtent(vw * sizeof(int), vh, vd);
    cudaPitchedPtr vol;
    CK(cudaMalloc3D(&vol, ext));
    CK(cudaMemset3D(vol, 0, ext));
    int *hv = new int[vw * vh * vd], *hb = new int[vw * vh * vd];
    for (int i = 0; i < vw * vh * vd; i++)
        hv[i] = (int)(rnd() % 100000);
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(hv, vw * sizeof(int), vw, vh);
    up.dstPtr = vol;
    up.extent = ext;
    up.kind = cudaMemcpyHostToDevice;
    CK(cudaMemcpy3D(&up));
    add3d<<<dim3(vh, vd), 32>>>(vol, vw, vh, vd, 1000);
    CK(cudaGetLastError());
    cudaMemcpy3DParms down = {};
    down.srcPtr = vol;
    down.dstPtr = make_cudaPitchedPtr(hb, vw * sizeof(int), vw, vh);
    down.extent = ext;
    down.kind = cudaMemcpyDeviceToHost;
    CK(cudaMemcpy3DAsync(&down, s));
    CK(cudaStreamSynchronize(s));
    for (int i = 0; i < vw * vh * vd; i++)
        if (hb[i] != hv[i] + 1000)
            mismatch("3D: [%d] = %d, expected %d", i, hb[i], hv[i] + 1000);
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));
    CK(cudaFree(dev2));
    CK(cudaFree(vol.ptr));
    delete[] host;
    delete[] back;
    delete[] raw;
    delete[] hv;
    delete[] hb;
    pass("%dx%d floats at pitch %zu (2D copies, memsets, a sub-rectangle), %dx%dx%d ints at "
         "pitch %zu (3D copy and memset)",
         w, h, pitch, vw, vh, vd, vol.pitch);
    return 0;
}
