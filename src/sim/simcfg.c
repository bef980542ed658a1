/* SPDX-License-Identifier: Apache-2.0
 *
 * Parsing of the simulated-GPU configuration: TF_SIM_DEVICES lists, config files, UUIDs
 * (see simcfg.h).
 */
#include "sim/simcfg.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CONFIG_FILE (1 << 20)

void tf_sim_config_default(struct tf_sim_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    tf_strlcpy(cfg->seed, TF_SIM_DEFAULT_SEED, sizeof(cfg->seed));
    tf_strlcpy(cfg->shm_prefix, TF_SIM_DEFAULT_SHM_PREFIX, sizeof(cfg->shm_prefix));
    struct tf_sim_devcfg *d = &cfg->dev[0];
    d->model = tf_gpu_model_find(TF_SIM_DEFAULT_MODEL);
    d->hw = tf_sim_hwspec_find(d->model->name);
    d->memory = d->model->vram_bytes;
    d->sm_count = d->model->sm_count;
    cfg->ndev = 1;
    tf_sim_config_derive_uuids(cfg);
}

/* ---- UUIDs ------------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

static void derive_uuid(const char *seed, int index, const char *model, uint8_t out[16])
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    h = fnv1a(h, seed, strlen(seed) + 1);
    h = fnv1a(h, &(uint32_t){(uint32_t)index}, 4);
    h = fnv1a(h, model, strlen(model) + 1);
    uint64_t a = mix64(h), b = mix64(h ^ UINT64_C(0x9e3779b97f4a7c15));
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(a >> (56 - 8 * i));
        out[8 + i] = (uint8_t)(b >> (56 - 8 * i));
    }
}

void tf_sim_uuid_format(const uint8_t u[16], char *buf)
{
    static const char hex[] = "0123456789abcdef";
    char *p = buf;
    memcpy(p, "GPU-", 4);
    p += 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = 0;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int tf_sim_uuid_parse(const char *s, uint8_t out[16])
{
    if (!s || strncmp(s, "GPU-", 4) != 0 || strlen(s) != TF_SIM_UUID_LEN)
        return TF_EPARSE;
    const char *p = s + 4;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            if (*p++ != '-')
                return TF_EPARSE;
        }
        int hi = hexval((unsigned char)p[0]), lo = hi < 0 ? -1 : hexval((unsigned char)p[1]);
        if (hi < 0 || lo < 0)
            return TF_EPARSE;
        out[i] = (uint8_t)(hi << 4 | lo);
        p += 2;
    }
    return 0;
}

void tf_sim_config_derive_uuids(struct tf_sim_config *cfg)
{
    for (int i = 0; i < cfg->ndev; i++) {
        struct tf_sim_devcfg *d = &cfg->dev[i];
        if (!d->uuid_given)
            derive_uuid(cfg->seed, i, d->model->name, d->uuid);
        tf_sim_uuid_format(d->uuid, d->uuid_str);
    }
}

/* ---- Device specs ----------------------------------------------------------------------- */

/* Copies S[0..N) trimmed into BUF (capacity CAP); false if it does not fit. */
static int copy_trim(const char *s, size_t n, char *buf, size_t cap)
{
    while (n > 0 && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= cap)
        return 0;
    memcpy(buf, s, n);
    buf[n] = 0;
    return 1;
}

/* Parses one "model[:memory[:sms]]" into D. WHAT names it in messages. */
static int parse_spec(const char *s, size_t n, struct tf_sim_devcfg *d, const char *what, char *err,
                      size_t errlen)
{
    char spec[160], field[3][128] = {"", "", ""};
    if (!copy_trim(s, n, spec, sizeof(spec))) {
        tf_errf(err, errlen, "%s: device spec too long", what);
        return TF_ERANGE;
    }
    int nf = 0;
    const char *p = spec;
    for (;;) {
        const char *c = strchr(p, ':');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (nf == 3) {
            tf_errf(err, errlen, "%s: \"%s\": too many fields (want model[:memory[:sms]])", what,
                    spec);
            return TF_EPARSE;
        }
        copy_trim(p, l, field[nf], sizeof(field[nf]));
        nf++;
        if (!c)
            break;
        p = c + 1;
    }
    memset(d, 0, sizeof(*d));
    if (!field[0][0]) {
        tf_errf(err, errlen, "%s: \"%s\": missing GPU model", what, spec);
        return TF_EPARSE;
    }
    d->model = tf_gpu_model_find(field[0]);
    if (!d->model) {
        tf_errf(err, errlen, "%s: unknown GPU model \"%s\"", what, field[0]);
        return TF_ENOENT;
    }
    d->hw = tf_sim_hwspec_find(d->model->name);
    if (!d->hw) {
        tf_errf(err, errlen, "%s: GPU model \"%s\" (%s) cannot be simulated: not a CUDA device",
                what, field[0], d->model->vendor);
        return TF_ENOTSUP;
    }
    d->memory = d->model->vram_bytes;
    d->sm_count = d->model->sm_count;
    if (field[1][0]) {
        char qerr[200];
        int rc = tf_quantity_bytes(field[1], &d->memory, "memory", qerr, sizeof(qerr));
        if (rc) {
            tf_errf(err, errlen, "%s: %s", what, qerr);
            return rc;
        }
        if (d->memory <= 0 || d->memory > TF_SIM_MAX_MEMORY) {
            tf_errf(err, errlen, "%s: memory \"%s\" out of range (1 byte .. 16Ti)", what, field[1]);
            return TF_ERANGE;
        }
    }
    if (field[2][0]) {
        char *end;
        errno = 0;
        long v = strtol(field[2], &end, 10);
        if (*end || end == field[2] || errno) {
            tf_errf(err, errlen, "%s: SM count \"%s\" is not an integer", what, field[2]);
            return TF_EPARSE;
        }
        if (v < 1 || v > TF_SIM_MAX_SMS) {
            tf_errf(err, errlen, "%s: SM count \"%s\" out of range (1..%d)", what, field[2],
                    TF_SIM_MAX_SMS);
            return TF_ERANGE;
        }
        d->sm_count = (int)v;
    }
    return 0;
}

struct list_ctx {
    struct tf_sim_config *cfg;
    const char *source;
    char *err;
    size_t errlen;
};

static int add_list_item(const char *item, size_t len, void *arg)
{
    struct list_ctx *lc = arg;
    struct tf_sim_config *cfg = lc->cfg;
    if (cfg->ndev >= TF_SIM_MAX_DEVICES) {
        tf_errf(lc->err, lc->errlen, "%s: more than %d devices", lc->source, TF_SIM_MAX_DEVICES);
        return TF_ERANGE;
    }
    char what[96];
    snprintf(what, sizeof(what), "%s: device %d", lc->source, cfg->ndev);
    int rc = parse_spec(item, len, &cfg->dev[cfg->ndev], what, lc->err, lc->errlen);
    if (rc)
        return rc;
    cfg->ndev++;
    return 0;
}

int tf_sim_config_parse_devices(struct tf_sim_config *cfg, const char *spec, const char *source,
                                char *err, size_t errlen)
{
    if (!cfg || !spec)
        return TF_EINVAL;
    struct tf_sim_config tmp = *cfg;
    tmp.ndev = 0;
    char trimmed[16];
    if (copy_trim(spec, strlen(spec), trimmed, sizeof(trimmed)) &&
        (!trimmed[0] || tf_streq_ci(trimmed, "none"))) {
        *cfg = tmp;
        return 0;
    }
    struct list_ctx lc = {&tmp, source, err, errlen};
    int rc = tf_split_list(spec, add_list_item, &lc);
    if (rc)
        return rc;
    if (tmp.ndev == 0) {
        tf_errf(err, errlen, "%s: \"%s\" names no device (use \"none\" for zero devices)", source,
                spec);
        return TF_EPARSE;
    }
    tf_sim_config_derive_uuids(&tmp);
    *cfg = tmp;
    return 0;
}

/* Rejects two devices with the same UUID (possible only with explicit uuid= options). */
static int check_unique(const struct tf_sim_config *cfg, const char *source, char *err,
                        size_t errlen)
{
    for (int i = 0; i < cfg->ndev; i++)
        for (int j = 0; j < i; j++)
            if (memcmp(cfg->dev[i].uuid, cfg->dev[j].uuid, 16) == 0) {
                tf_errf(err, errlen, "%s: devices %d and %d have the same uuid %s", source, j, i,
                        cfg->dev[i].uuid_str);
                return TF_EEXIST;
            }
    return 0;
}

/* ---- Config files ----------------------------------------------------------------------- */

/* Parses the value of a "device =" line: "<spec> [uuid=GPU-...]". */
static int parse_device_line(struct tf_sim_config *cfg, const char *v, const char *where, char *err,
                             size_t errlen)
{
    if (cfg->ndev >= TF_SIM_MAX_DEVICES) {
        tf_errf(err, errlen, "%s: more than %d devices", where, TF_SIM_MAX_DEVICES);
        return TF_ERANGE;
    }
    const char *end = v;
    while (*end && !isspace((unsigned char)*end))
        end++;
    struct tf_sim_devcfg *d = &cfg->dev[cfg->ndev];
    int rc = parse_spec(v, (size_t)(end - v), d, where, err, errlen);
    if (rc)
        return rc;
    const char *p = end;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *w = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        char opt[96];
        if (!copy_trim(w, (size_t)(p - w), opt, sizeof(opt))) {
            tf_errf(err, errlen, "%s: device option too long", where);
            return TF_ERANGE;
        }
        if (strncmp(opt, "uuid=", 5) == 0) {
            if (tf_sim_uuid_parse(opt + 5, d->uuid) != 0) {
                tf_errf(err, errlen,
                        "%s: uuid \"%s\" is not of the form GPU-xxxxxxxx-xxxx-xxxx-xxxx-"
                        "xxxxxxxxxxxx",
                        where, opt + 5);
                return TF_EPARSE;
            }
            d->uuid_given = 1;
        } else {
            tf_errf(err, errlen, "%s: unknown device option \"%s\" (known: uuid=)", where, opt);
            return TF_EPARSE;
        }
    }
    cfg->ndev++;
    return 0;
}

int tf_sim_config_parse_file(struct tf_sim_config *cfg, const char *text, size_t len,
                             const char *source, char *err, size_t errlen)
{
    if (!cfg || (!text && len))
        return TF_EINVAL;
    struct tf_sim_config tmp = *cfg;
    int saw_device = 0, lineno = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t eol = pos;
        while (eol < len && text[eol] != '\n')
            eol++;
        lineno++;
        char line[512], where[300];
        snprintf(where, sizeof(where), "%s:%d", source, lineno);
        size_t n = eol - pos;
        const char *hash = memchr(text + pos, '#', n);
        if (hash)
            n = (size_t)(hash - (text + pos));
        if (memchr(text + pos, 0, n)) {
            tf_errf(err, errlen, "%s: NUL byte in line", where);
            return TF_EPARSE;
        }
        if (!copy_trim(text + pos, n, line, sizeof(line))) {
            tf_errf(err, errlen, "%s: line longer than %zu bytes", where, sizeof(line) - 1);
            return TF_ERANGE;
        }
        pos = eol + 1;
        if (!line[0])
            continue;
        char *eq = strchr(line, '=');
        if (!eq) {
            tf_errf(err, errlen, "%s: \"%s\": expected key = value", where, line);
            return TF_EPARSE;
        }
        char key[64], val[448];
        if (!copy_trim(line, (size_t)(eq - line), key, sizeof(key)) ||
            !copy_trim(eq + 1, strlen(eq + 1), val, sizeof(val))) {
            tf_errf(err, errlen, "%s: key or value too long", where);
            return TF_ERANGE;
        }
        int rc = 0;
        if (strcmp(key, "device") == 0) {
            if (!saw_device) {
                tmp.ndev = 0;
                saw_device = 1;
            }
            rc = parse_device_line(&tmp, val, where, err, errlen);
        } else if (strcmp(key, "seed") == 0) {
            if (!val[0] || !tf_strlcpy(tmp.seed, val, sizeof(tmp.seed))) {
                tf_errf(err, errlen, "%s: seed must be 1..%zu bytes", where, sizeof(tmp.seed) - 1);
                rc = TF_ERANGE;
            }
        } else if (strcmp(key, "shm_prefix") == 0) {
            if (!val[0] || !tf_strlcpy(tmp.shm_prefix, val, sizeof(tmp.shm_prefix))) {
                tf_errf(err, errlen, "%s: shm_prefix must be 1..%zu bytes", where,
                        sizeof(tmp.shm_prefix) - 1);
                rc = TF_ERANGE;
            }
        } else {
            tf_errf(err, errlen, "%s: unknown key \"%s\" (known: device, seed, shm_prefix)", where,
                    key);
            rc = TF_EPARSE;
        }
        if (rc)
            return rc;
    }
    tf_sim_config_derive_uuids(&tmp);
    int rc = check_unique(&tmp, source, err, errlen);
    if (rc)
        return rc;
    *cfg = tmp;
    return 0;
}

static int read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tf_errf(err, errlen, "TF_SIM_CONFIG: cannot open \"%s\": %s", path, strerror(errno));
        return TF_EIO;
    }
    char *buf = malloc(MAX_CONFIG_FILE + 1);
    size_t n = 0;
    int rc = 0;
    if (!buf) {
        rc = TF_ENOMEM;
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, buf + n, MAX_CONFIG_FILE + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            tf_errf(err, errlen, "TF_SIM_CONFIG: reading \"%s\": %s", path, strerror(errno));
            rc = TF_EIO;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > MAX_CONFIG_FILE) {
            tf_errf(err, errlen, "TF_SIM_CONFIG: \"%s\" is larger than 1 MiB", path);
            rc = TF_ERANGE;
            goto out;
        }
    }
    *out = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

int tf_sim_config_load(struct tf_sim_config *cfg, char *err, size_t errlen)
{
    struct tf_sim_config tmp;
    tf_sim_config_default(&tmp);
    const char *path = getenv("TF_SIM_CONFIG");
    if (path && *path) {
        char *text = NULL;
        size_t len = 0;
        int rc = read_file(path, &text, &len, err, errlen);
        if (rc)
            return rc;
        rc = tf_sim_config_parse_file(&tmp, text, len, path, err, errlen);
        free(text);
        if (rc)
            return rc;
    }
    const char *seed = getenv("TF_SIM_SEED");
    if (seed && *seed && !tf_strlcpy(tmp.seed, seed, sizeof(tmp.seed))) {
        tf_errf(err, errlen, "TF_SIM_SEED: longer than %zu bytes", sizeof(tmp.seed) - 1);
        return TF_ERANGE;
    }
    const char *prefix = getenv("TF_SIM_SHM_PREFIX");
    if (prefix && *prefix && !tf_strlcpy(tmp.shm_prefix, prefix, sizeof(tmp.shm_prefix))) {
        tf_errf(err, errlen, "TF_SIM_SHM_PREFIX: longer than %zu bytes",
                sizeof(tmp.shm_prefix) - 1);
        return TF_ERANGE;
    }
    const char *devs = getenv("TF_SIM_DEVICES");
    if (devs) {
        int rc = tf_sim_config_parse_devices(&tmp, devs, "TF_SIM_DEVICES", err, errlen);
        if (rc)
            return rc;
    }
    tf_sim_config_derive_uuids(&tmp);
    int rc = check_unique(&tmp, "configuration", err, errlen);
    if (rc)
        return rc;
    *cfg = tmp;
    return 0;
}
