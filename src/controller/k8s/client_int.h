/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to libtfk8s: what client.c and config.c share.
 */
#ifndef TF_CONTROLLER_K8S_CLIENT_INT_H
#define TF_CONTROLLER_K8S_CLIENT_INT_H

#include <stddef.h>

/* A whole (small) file, at most MAX bytes, NUL-terminated and malloc'd; NULL when it cannot be
 * read or is larger. */
char *tf__k8s_read_file(const char *path, size_t max);

/* Cuts trailing newlines, carriage returns and spaces off S. */
void tf__k8s_trim_end(char *s);

#endif
