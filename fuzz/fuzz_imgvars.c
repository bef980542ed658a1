/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: module image variable names (tf_imgvars_each) from PTX text or ELF cubins
 * must never read outside the image or crash, and every name is a NUL-terminated string
 * shorter than TF_IMGVARS_NAME_MAX.
 */
#include "limits/imgvars.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check(void *arg, const char *name)
{
    (void)arg;
    if (strlen(name) >= TF_IMGVARS_NAME_MAX || !*name)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy: reads past the end trip ASan */
    uint8_t *img = malloc(size ? size : 1);
    if (!img)
        return 0;
    memcpy(img, data, size);
    (void)tf_imgvars_each(img, size, check, NULL);
    free(img);
    return 0;
}
