/* SPDX-License-Identifier: Apache-2.0
 *
 * Module images as the driver API receives them (cuModuleLoadData, cuLibraryLoadData, the
 * runtime's registration): PTX text, a cubin (ELF), a fatbin container (fatbin.h) or a fatbin
 * wrapper record. Locating an image's bytes, and the bytes of device memory its module-scope
 * variables take (__device__ and __constant__: what a loaded module costs in VRAM beyond its
 * code). Pure and thread-safe.
 *
 * Images handed in by pointer alone have no length: like the driver, these functions then
 * trust the image's own header (a container's size, an ELF's section table) or its NUL (PTX),
 * reading nothing beyond what that describes, capped at TF_IMAGE_MAX bytes.
 */
#ifndef TF_FATBIN_IMAGE_H
#define TF_FATBIN_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define TF_IMAGE_MAX (256u << 20)

enum tf_image_kind {
    TF_IMAGE_PTX = 1, /* NUL-terminated PTX text */
    TF_IMAGE_ELF,     /* a cubin */
    TF_IMAGE_FATBIN,  /* a fatbin container */
};

struct tf_image {
    enum tf_image_kind kind;
    const uint8_t *start; /* the image's bytes (a wrapper record's container) */
    size_t size;          /* PTX: the text's length without its NUL */
};

/* Locates IMAGE. LEN: the bytes known to be readable at IMAGE (a file's size), or 0 for an
 * image known by pointer only; only the latter may be a wrapper record (its pointer is
 * followed). TF_EPARSE with a message in ERR for a wrapper given with a length, a container
 * longer than LEN, an ELF whose tables leave LEN, or sizes over TF_IMAGE_MAX. */
int tf_image_locate(const void *image, size_t len, struct tf_image *out, char *err, size_t errlen);

/* Device memory of the module-scope variables of IM (.global and .const state spaces):
 * - PTX: the sizes of the module-scope .global / .const definitions (.extern ones are not);
 * - ELF: the sizes of the sections .nv.global (uninitialised), .nv.global.init and
 *   .nv.constant3 (the user __constant__ bank);
 * - fatbin: those of its first cubin, else of its first PTX entry (decompressed); every entry
 *   of one container comes from the same source and declares the same variables.
 * TF_EPARSE / TF_ENOTSUP / TF_ENOMEM as the parsers report them (message in ERR). */
int tf_image_globals(const struct tf_image *im, uint64_t *bytes, char *err, size_t errlen);

/* Both in one: the device memory of the module-scope variables of IMAGE (LEN as for
 * tf_image_locate), what a VRAM limit charges for loading it (the soft limiter, tf-worker).
 * Errors as tf_image_locate / tf_image_globals report them. */
int tf_image_vars_bytes(const void *image, size_t len, uint64_t *bytes, char *err, size_t errlen);

/* The same for PTX text of LEN bytes (exposed for tests and the fuzzer). */
uint64_t tf_ptx_globals(const char *text, size_t len);

#endif
