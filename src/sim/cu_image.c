/* SPDX-License-Identifier: Apache-2.0
 *
 * Module images of the simulated driver: what cuModuleLoadData / LoadDataEx / LoadFatBinary,
 * cuLibraryLoadData and the runtime's registration path hand in is PTX text, a cubin (ELF), a
 * fatbin container or a fatbin wrapper record (src/fatbin/fatbin.h). The simulated GPU runs
 * PTX only: from a fatbin it takes the PTX entry the device can JIT (the highest architecture
 * at or below its compute capability, decompressed if nvcc compressed it); a fatbin without
 * one, or a cubin, fails with CUDA_ERROR_NO_BINARY_FOR_GPU and a log line naming the
 * architectures the image holds.
 */
#include "sim/drv.h"
#include "sim/kernel.h"

#include "common/err.h"
#include "common/log.h"
#include "fatbin/fatbin.h"
#include "fatbin/image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUresult fail(struct tf__jit_log *log, CUresult rc, const char *msg)
{
    tf__jit_log_write(log, msg);
    tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
    return rc;
}

/* Locates IMAGE (src/fatbin/image.h); a cubin cannot run here (known by its magic alone,
 * before anything else of it is read). */
static CUresult locate(const void *image, size_t file_len, struct tf_image *im,
                       struct tf__jit_log *log)
{
    char err[256];
    size_t have = file_len ? file_len : strnlen(image, 4);
    if (have >= 4 && memcmp(image, "\177ELF", 4) == 0)
        return fail(log, CUDA_ERROR_NO_BINARY_FOR_GPU,
                    "cubin (ELF) images cannot run on the simulated GPU, which runs PTX only");
    if (tf_image_locate(image, file_len, im, err, sizeof(err)) != 0)
        return fail(log, CUDA_ERROR_INVALID_IMAGE, err);
    return CUDA_SUCCESS;
}

CUresult tf__image_copy(const void *image, size_t file_len, void **copy, size_t *size,
                        struct tf__jit_log *log)
{
    struct tf_image im;
    CUresult rc = locate(image, file_len, &im, log);
    if (rc)
        return rc;
    *size = im.size;
    if (!(*copy = malloc(*size + 1)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(*copy, im.start, *size);
    ((char *)*copy)[*size] = 0;
    return CUDA_SUCCESS;
}

CUresult tf__image_ptx(const void *image, size_t file_len, unsigned cc, struct sim_ptx_text *out,
                       struct tf__jit_log *log)
{
    struct tf_image im;
    memset(out, 0, sizeof(*out));
    CUresult rc = locate(image, file_len, &im, log);
    if (rc)
        return rc;
    if (im.kind == TF_IMAGE_PTX) {
        out->text = (const char *)im.start;
        out->len = im.size;
        return CUDA_SUCCESS;
    }
    char err[256], archs[512], msg[1024];
    struct tf_fatbin_entry e;
    int r = tf_fatbin_pick_ptx(im.start, im.size, cc ? cc : TF_FATBIN_ANY_DEVICE, &e, archs,
                               sizeof(archs), err, sizeof(err));
    if (r == TF_ENOENT) {
        char fit[48] = "";
        if (cc)
            snprintf(fit, sizeof(fit), " for sm_%u or older", cc);
        snprintf(msg, sizeof(msg),
                 "the fatbin holds no PTX%s (it holds: %s); the simulated GPU runs PTX only: build "
                 "with PTX%s (nvcc's default embeds it, or add -gencode "
                 "arch=compute_XX,code=compute_XX)",
                 fit, archs[0] ? archs : "nothing", fit);
        return fail(log, CUDA_ERROR_NO_BINARY_FOR_GPU, msg);
    }
    if (r != 0)
        return fail(log, CUDA_ERROR_INVALID_IMAGE, err);
    r = tf_fatbin_unpack(&e, &out->owned, &out->len, err, sizeof(err));
    if (r == TF_ENOMEM)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (r != 0)
        return fail(log, CUDA_ERROR_INVALID_IMAGE, err);
    out->text = out->owned;
    if (tf_log_enabled(TF_LOG_DEBUG)) {
        char name[48];
        tf_fatbin_entry_name(&e, name, sizeof(name));
        tf_log(TF_LOG_DEBUG, "sim", "module load: fatbin (%s): JIT of %s, %zu bytes of PTX", archs,
               name, out->len);
    }
    return CUDA_SUCCESS;
}

void tf__ptx_text_free(struct sim_ptx_text *t)
{
    free(t->owned);
    memset(t, 0, sizeof(*t));
}
