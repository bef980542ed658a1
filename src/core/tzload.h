/* SPDX-License-Identifier: Apache-2.0
 *
 * The I/O half of time zones: loads an IANA zone by name from a zoneinfo directory (Debian's
 * tzdata: /usr/share/zoneinfo) and hands the bytes to the pure parser in tz.h. Kept out of
 * libtfcore (which does no I/O) in its own small library, tftzload; the controller and tfctl
 * link it, the planners only see parsed zones.
 *
 * "UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu", "Universal", "Etc/Universal",
 * "GMT" and "Etc/GMT" work without tzdata (built in) when the file is missing.
 * Thread-safe (no shared state); each call opens and reads the file once.
 */
#ifndef TF_CORE_TZLOAD_H
#define TF_CORE_TZLOAD_H

#include "core/tz.h"

#include <stddef.h>

#define TF_ZONEINFO_DIR "/usr/share/zoneinfo"

/* Loads zone NAME from DIR (NULL = TF_ZONEINFO_DIR). NAME is validated first
 * (tf_tz_name_valid), so it cannot escape DIR. 0 and *OUT (caller owns), or TF_EINVAL (bad
 * name), TF_ENOENT (no such zone: the message says whether tzdata seems installed), TF_EIO,
 * or the parser's codes, with ERR naming KEY ("timezone" when NULL) and the zone. */
int tf_tz_load(const char *dir, const char *name, struct tf_tz **out, const char *key, char *err,
               size_t errlen);

#endif
