/* SPDX-License-Identifier: Apache-2.0
 *
 * CUresult names and messages (see cuerr.h).
 */
#include "common/cuerr.h"

#include <stddef.h>

static const struct {
    int code;
    const char *name, *msg;
} errs[] = {
#define X(name, value, msg) {value, #name, msg},
#include "common/cuerr.def"
#undef X
};

static int find(int code)
{
    for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
        if (errs[i].code == code)
            return (int)i;
    return -1;
}

const char *tf_cuerr_name(int code)
{
    int i = find(code);
    return i < 0 ? NULL : errs[i].name;
}

const char *tf_cuerr_string(int code)
{
    int i = find(code);
    return i < 0 ? NULL : errs[i].msg;
}
