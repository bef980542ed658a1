/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the CUDA_VISIBLE_DEVICES parser of the simulated driver. The first byte
 * picks the machine's device count (0..16, UUIDs sharing prefixes); the rest is the value.
 * The result must be a list of distinct existing devices, the same on a second parse, with a
 * printable note; with the machine's MIG devices too, at most one MIG device, on its GPU.
 */
#include "sim/visible.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    static char names[TF_SIM_MAX_DEVICES][TF_SIM_UUID_LEN + 1];
    const char *uuids[TF_SIM_MAX_DEVICES];
    for (int i = 0; i < TF_SIM_MAX_DEVICES; i++) {
        /* devices 2k and 2k+1 share 6 hex digits */
        snprintf(names[i], sizeof(names[i]), "GPU-%06x%02x-0000-4000-8000-%012x", 0xabc000 + i / 2,
                 i, i);
        uuids[i] = names[i];
    }
    int ndev = data[0] % (TF_SIM_MAX_DEVICES + 1);
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    struct tf_sim_visible a, b;
    tf_sim_visible_parse(s, uuids, ndev, &a);
    tf_sim_visible_parse(s, uuids, ndev, &b);
    if (a.n < 0 || a.n > ndev || memcmp(&a, &b, sizeof(a)) != 0)
        abort();
    uint32_t seen = 0;
    for (int i = 0; i < a.n; i++) {
        if (a.phys[i] < 0 || a.phys[i] >= ndev || (seen >> a.phys[i] & 1))
            abort();
        seen |= UINT32_C(1) << a.phys[i];
    }
    static const char *const migs[] = {"MIG-abc00000-0000-4000-8000-000000000000",
                                       "MIG-abc00001-0000-4000-8000-000000000001"};
    static const int parent[] = {1, 3};
    struct tf_sim_visible m;
    tf_sim_visible_parse_mig(s, uuids, ndev, migs, parent, 2, &m);
    for (int i = 0; i < m.n; i++)
        if (m.mig[i] >= 0 && (m.n != 1 || m.phys[i] != parent[m.mig[i]] || m.phys[i] >= ndev))
            abort();
    if (strnlen(m.note, sizeof(m.note)) == sizeof(m.note))
        abort();
    size_t l = strnlen(a.note, sizeof(a.note));
    if (l == sizeof(a.note))
        abort();
    for (size_t i = 0; i < l; i++)
        if (a.note[i] < 0x20 || a.note[i] > 0x7e)
            abort();
    free(s);
    return 0;
}
