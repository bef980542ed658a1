/* SPDX-License-Identifier: Apache-2.0
 *
 * Names and messages of the TF_E* error codes, generated from TF_ERRNO_MAP.
 */
#include "common/err.h"

const char *tf_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define TF_ERR_MSG(name, num, msg)                                                                 \
    case TF_E##name:                                                                               \
        return msg;
        TF_ERRNO_MAP(TF_ERR_MSG)
#undef TF_ERR_MSG
    default:
        return "unknown error";
    }
}

const char *tf_err_name(int err)
{
    switch (err) {
    case 0:
        return "TF_OK";
#define TF_ERR_NAME(name, num, msg)                                                                \
    case TF_E##name:                                                                               \
        return "TF_E" #name;
        TF_ERRNO_MAP(TF_ERR_NAME)
#undef TF_ERR_NAME
    default:
        return "TF_EUNKNOWN";
    }
}
