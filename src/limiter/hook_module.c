/* SPDX-License-Identifier: Apache-2.0
 *
 * Module hooks: a module's __device__ and __constant__ variables are device memory the driver
 * allocates when the module loads. After a successful load their sizes (cuModuleGetGlobal of
 * each name limits/imgvars.h finds in the image) are reserved in the workload's region like an
 * allocation; a module whose variables do not fit is unloaded again and the load fails with
 * CUDA_ERROR_OUT_OF_MEMORY. cuModuleUnload gives the bytes back when the driver unloaded it;
 * a destroyed context takes its modules' charges with it (hook_dev.c).
 */
#include "limiter/pass.h"

#include "common/log.h"
#include "limits/imgvars.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t var_size(void *arg, const char *name)
{
    CUdeviceptr p;
    size_t n = 0;
    CUresult rc;
    TF_CALL(rc, cuModuleGetGlobal_v2, &p, &n, (CUmodule)arg, name);
    return rc == CUDA_SUCCESS ? (int64_t)n : -1;
}

static uint64_t cur_ctx(void)
{
    CUcontext c = NULL;
    CUresult rc;
    TF_CALL(rc, cuCtxGetCurrent, &c);
    return rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)c : 0;
}

/* After the real load RC of *MOD from IMAGE (LEN bytes; 0: unknown, PTX text or a cubin is
 * measured up to what its format says): charges its variables, or unloads it. */
static CUresult charge(CUresult rc, CUmodule *mod, const void *image, size_t len)
{
    if (rc != CUDA_SUCCESS || !tf__L.r || !mod || !*mod || !image)
        return rc;
    int idx = tf__cur_idx();
    if (idx < 0)
        return rc;
    CUmodule m = *mod;
    int64_t bytes = tf_imgvars_bytes(image, len, var_size, m);
    if (bytes <= 0)
        return rc;
    if (!tf__reserve(idx, (uint64_t)bytes)) {
        CUresult urc;
        TF_CALL(urc, cuModuleUnload, *mod);
        (void)urc;
        *mod = NULL;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!tf_ptrtab_put(&tf__L.mods, (uint64_t)(uintptr_t)m, (uint64_t)bytes, (uint32_t)idx,
                       cur_ctx()))
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "out of memory for the module table: %lld bytes of module variables stay "
               "counted until the process exits",
               (long long)bytes);
    return rc;
}

/* How far to look into an image given by pointer only: PTX text ends at its NUL; an ELF
 * cubin at its section headers; anything else is not looked into. */
static size_t image_len(const void *image)
{
    const unsigned char *b = image;
    if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
        if (b[4] != 2)
            return 0;
        uint64_t shoff = 0;
        uint16_t shentsize = 0, shnum = 0;
        memcpy(&shoff, b + 40, 8);
        memcpy(&shentsize, b + 58, 2);
        memcpy(&shnum, b + 60, 2);
        uint64_t end = shoff + (uint64_t)shentsize * shnum;
        return end < shoff || end > ((uint64_t)1 << 32) ? 0 : (size_t)end;
    }
    return b[0] == '\0' ? 0 : strnlen(image, (size_t)1 << 30);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    TF_PASS_IF_NESTED(cuModuleLoadData, module, image);
    CUresult rc;
    TF_CALL(rc, cuModuleLoadData, module, image);
    return rc == CUDA_SUCCESS && image ? charge(rc, module, image, image_len(image)) : rc;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    TF_PASS_IF_NESTED(cuModuleLoadDataEx, module, image, numOptions, options, optionValues);
    CUresult rc;
    TF_CALL(rc, cuModuleLoadDataEx, module, image, numOptions, options, optionValues);
    return rc == CUDA_SUCCESS && image ? charge(rc, module, image, image_len(image)) : rc;
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    TF_PASS_IF_NESTED(cuModuleLoadFatBinary, module, fatCubin);
    CUresult rc;
    TF_CALL(rc, cuModuleLoadFatBinary, module, fatCubin);
    return rc == CUDA_SUCCESS && fatCubin ? charge(rc, module, fatCubin, image_len(fatCubin)) : rc;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    TF_PASS_IF_NESTED(cuModuleLoad, module, fname);
    CUresult rc;
    TF_CALL(rc, cuModuleLoad, module, fname);
    if (rc != CUDA_SUCCESS || !fname || !tf__L.r)
        return rc;
    /* The image is a file: map it to find the variables' names. */
    int fd = open(fname, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return rc;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < ((off_t)1 << 32)) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            rc = charge(rc, module, p, (size_t)st.st_size);
            munmap(p, (size_t)st.st_size);
        }
    }
    close(fd);
    return rc;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    TF_PASS_IF_NESTED(cuModuleUnload, hmod);
    struct tf_ptrtab_val v;
    uintptr_t h = tf__L.r ? tf_ptrtab_take(&tf__L.mods, (uint64_t)(uintptr_t)hmod, &v) : 0;
    CUresult rc;
    TF_CALL(rc, cuModuleUnload, hmod);
    if (h) {
        if (rc == CUDA_SUCCESS) {
            tf_ptrtab_done(h);
            tf__unreserve((int)v.idx, v.bytes);
        } else {
            tf_ptrtab_restore(h);
        }
    }
    return rc;
}
