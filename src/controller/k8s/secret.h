/* SPDX-License-Identifier: Apache-2.0
 *
 * Secrets the controller makes for itself at first start (the allocation-signature key, the
 * console's token): read data.KEY of Secret NS/NAME or, when there is none, create it with
 * fresh random bytes; a replica that loses the race to create it reads the winner's, so all
 * replicas agree.
 *
 * Thread-safe as the client is.
 */
#ifndef TF_CONTROLLER_K8S_SECRET_H
#define TF_CONTROLLER_K8S_SECRET_H

#include "controller/k8s/client.h"

#include <stdbool.h>
#include <stddef.h>

/* Fills *OUT (malloc'd, *LEN bytes, NUL-terminated; the caller wipes and frees it) with
 * data.KEY of Secret NS/NAME, creating the Secret when absent with NBYTES random bytes, as
 * they are (HEX false) or as lowercase hex text (HEX true: a token a person can paste).
 * 0, or a TF_E* code with ERR set (TF_EINVAL when the stored value is not base64). */
int tf_k8s_secret_ensure(struct tf_k8s_client *c, const char *ns, const char *name, const char *key,
                         size_t nbytes, bool hex, char **out, size_t *len, char *err,
                         size_t errlen);

#endif
