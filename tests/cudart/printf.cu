// SPDX-License-Identifier: Apache-2.0
// printf in a kernel, as every CUDA developer debugs: integers of each width, floats (promoted
// to double), a string literal and a string in device memory, characters, hex, flags, width
// and precision, %% and printf's own return value. The program points its stdout at a file
// around the launch and the synchronisation, then compares the lines (sorted: threads of a
// GPU print in no promised order) with what the host's printf makes of the same values.
#include "check.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

__global__ void talk(int base, float scale, const char *name, int *counts)
{
    int t = threadIdx.x;
    long long big = (long long)(base + t) * 1000000007LL;
    counts[t] = printf("t%d base=%d scale=%.3f %s/%s big=%lld u=%u x=%#x c=%c e=%10.2e|%-5d|%%\n",
                       t, base, scale * t, "lit", name, big, 4000000000u, 255 + t, 'A' + t,
                       1234.5678 * t, -t);
}

static std::vector<std::string> lines_of(const std::string &s)
{
    std::vector<std::string> v;
    size_t a = 0;
    for (size_t b; (b = s.find('\n', a)) != std::string::npos; a = b + 1)
        v.push_back(s.substr(a, b - a + 1));
    if (a < s.size())
        v.push_back(s.substr(a));
    std::sort(v.begin(), v.end());
    return v;
}

int main()
{
    prog = "printf";
    const int n = 4, base = 40;
    const float scale = 0.25f;
    char *dname;
    int *dcounts, counts[n];
    CK(cudaMalloc(&dname, 16));
    CK(cudaMemcpy(dname, "device-str", 11, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&dcounts, sizeof(counts)));
    char path[] = "/tmp/tf-printf-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        mismatch("mkstemp failed");
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    talk<<<1, n>>>(base, scale, dname, dcounts);
    cudaError_t e = cudaDeviceSynchronize();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CK(e);
    CK(cudaGetLastError());
    std::string got;
    char buf[4096];
    lseek(fd, 0, SEEK_SET);
    for (ssize_t r; (r = read(fd, buf, sizeof(buf))) > 0;)
        got.append(buf, (size_t)r);
    close(fd);
    unlink(path);
    CK(cudaMemcpy(counts, dcounts, sizeof(counts), cudaMemcpyDeviceToHost));
    std::string want;
    for (int t = 0; t < n; t++) {
        long long big = (long long)(base + t) * 1000000007LL;
        int k = snprintf(buf, sizeof(buf),
                         "t%d base=%d scale=%.3f %s/%s big=%lld u=%u x=%#x c=%c e=%10.2e|%-5d|%%\n",
                         t, base, (double)(scale * t), "lit", "device-str", big, 4000000000u,
                         255 + t, 'A' + t, 1234.5678 * t, -t);
        want += buf;
        if (counts[t] != k)
            mismatch("thread %d: printf returned %d, expected %d", t, counts[t], k);
    }
    if (lines_of(got) != lines_of(want))
        mismatch("kernel printed:\n%s\nexpected (in any order):\n%s", got.c_str(), want.c_str());
    CK(cudaFree(dname));
    CK(cudaFree(dcounts));
    pass("%d threads printed %zu bytes, each line and return value as the host's printf", n,
         got.size());
    return 0;
}
