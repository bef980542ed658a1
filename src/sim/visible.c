/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA_VISIBLE_DEVICES parsing with the real driver's rules (see visible.h).
 */
#include "sim/visible.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum kind { K_INDEX, K_UUID, K_MIG };

_Static_assert(TF_SIM_MAX_DEVICES <= 32, "the seen-set is a 32-bit mask");

static int starts_with(const char *s, size_t n, const char *prefix)
{
    size_t l = strlen(prefix);
    return n >= l && memcmp(s, prefix, l) == 0;
}

/* strtoul-like base-10 reading of S[0..N): optional sign, digits, the rest ignored. Returns
 * the index (saturated above the device range) or -1 when invalid. */
static long read_index(const char *s, size_t n, int ndev)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-'))
        neg = s[i++] == '-';
    if (i >= n || !isdigit((unsigned char)s[i]))
        return -1;
    long v = 0;
    for (; i < n && isdigit((unsigned char)s[i]); i++)
        if (v <= ndev)
            v = v * 10 + (s[i] - '0');
    if (neg && v != 0) /* strtoul wraps "-N" to a huge value: no device has that index */
        return -1;
    return v < ndev ? v : -1;
}

/* The one device whose UUID starts with S[0..N), or -1 (none or several). */
static int find_uuid(const char *s, size_t n, const char *const *uuids, int ndev)
{
    int found = -1;
    for (int i = 0; i < ndev; i++) {
        if (strlen(uuids[i]) < n || memcmp(uuids[i], s, n) != 0)
            continue;
        if (found >= 0)
            return -1;
        found = i;
    }
    return found;
}

/* Writes "entry K ("text")" + WHY into OUT's note, the entry shown printable and short. */
static void note(struct tf_sim_visible *out, int k, const char *s, size_t n, const char *why)
{
    char shown[44];
    size_t l = n < sizeof(shown) - 4 ? n : sizeof(shown) - 4;
    for (size_t i = 0; i < l; i++)
        shown[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
    if (l < n) {
        memcpy(shown + l, "...", 3);
        l += 3;
    }
    shown[l] = 0;
    snprintf(out->note, sizeof(out->note), "entry %d (\"%s\") %s", k, shown, why);
}

void tf_sim_visible_parse(const char *spec, const char *const *uuids, int ndev,
                          struct tf_sim_visible *out)
{
    tf_sim_visible_parse_mig(spec, uuids, ndev, NULL, NULL, 0, out);
}

void tf_sim_visible_parse_mig(const char *spec, const char *const *uuids, int ndev,
                              const char *const *migs, const int *parent, int nmig,
                              struct tf_sim_visible *out)
{
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < TF_SIM_MAX_DEVICES; i++)
        out->mig[i] = -1;
    if (nmig < 0 || !migs || !parent)
        nmig = 0;
    if (ndev < 0)
        ndev = 0;
    if (ndev > TF_SIM_MAX_DEVICES)
        ndev = TF_SIM_MAX_DEVICES;
    if (!spec) {
        for (int i = 0; i < ndev; i++)
            out->phys[i] = i;
        out->n = ndev;
        return;
    }
    enum kind kind = K_INDEX;
    uint32_t seen = 0;
    const char *p = spec;
    for (int k = 1;; k++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && isspace((unsigned char)*p)) {
            p++;
            n--;
        }
        if (k == 1)
            kind = starts_with(p, n, "GPU-") ? K_UUID : starts_with(p, n, "MIG-") ? K_MIG : K_INDEX;
        int dev = -1;
        const char *why = NULL;
        switch (kind) {
        case K_INDEX:
            dev = (int)read_index(p, n, ndev);
            why = "is not the index of a device";
            break;
        case K_UUID:
            dev = starts_with(p, n, "GPU-") ? find_uuid(p, n, uuids, ndev) : -1;
            why = "names no single device";
            break;
        case K_MIG: {
            int m = starts_with(p, n, "MIG-") ? find_uuid(p, n, migs, nmig) : -1;
            if (m >= 0 && parent[m] >= 0 && parent[m] < ndev) {
                out->phys[0] = parent[m];
                out->mig[0] = m;
                out->n = 1;
                if (end)
                    note(out, k + 1, end + 1, strlen(end + 1),
                         "follows a MIG device: a process sees one at most, the rest are ignored");
                return;
            }
            why = "names no single MIG device";
            break;
        }
        }
        if (dev < 0) {
            char w[112];
            snprintf(w, sizeof(w), "%s; it and the rest are ignored", why);
            note(out, k, p, n, w);
            return;
        }
        if (seen & (UINT32_C(1) << dev)) {
            note(out, k, p, n, "repeats a device: no device is visible");
            out->n = 0;
            return;
        }
        seen |= UINT32_C(1) << dev;
        out->phys[out->n++] = dev;
        if (!end)
            return;
        p = end + 1;
    }
}
