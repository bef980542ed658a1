/* SPDX-License-Identifier: Apache-2.0
 *
 * Soft-isolation regions as files: validation of both parts, formatting, creation, opening
 * (the limits part read-only on the app side), repair in place and permissions (see shm.h).
 *
 * The engine runs as root and the usage part lives in a directory the workload may write
 * into (Kubernetes mounts rw/ read-write into the pod): the engine therefore opens it with
 * O_NOFOLLOW | O_NONBLOCK and uses it only when it is a regular file, and sets its owner and
 * mode on the descriptor, so a symlink or a device node planted there is never followed,
 * truncated or written.
 */
#include "limits/shm.h"

#include "common/err.h"
#include "common/strutil.h"
#include "limits/bucket.h"
#include "limits/shm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* --- validation --------------------------------------------------------------------- */

int tf_shm_check_config(const struct tf_shm_config *cfg, char *err, size_t errlen)
{
    if (cfg->ndev > TF_SHM_MAX_DEVICES) {
        tf_errf(err, errlen, "ndev is %" PRIu32 ", at most %d devices are allowed", cfg->ndev,
                TF_SHM_MAX_DEVICES);
        return TF_EPROTO;
    }
    if (cfg->flags & ~TF_SHM_F_STANDALONE) {
        tf_errf(err, errlen, "header flags 0x%" PRIx32 " has unknown bits", cfg->flags);
        return TF_EPROTO;
    }
    if (memchr(cfg->name, 0, sizeof(cfg->name)) == NULL) {
        tf_errf(err, errlen, "name is not NUL-terminated within %d bytes", TF_SHM_NAME_MAX);
        return TF_EPROTO;
    }
    for (uint32_t i = 0; i < cfg->ndev; i++) {
        const struct tf_shm_dev_config *d = &cfg->dev[i];
        if (d->flags & ~TF_SHM_DEV_ALL_FLAGS) {
            tf_errf(err, errlen, "device %" PRIu32 ": flags 0x%" PRIx32 " has unknown bits", i,
                    d->flags);
            return TF_EPROTO;
        }
        if (!(d->flags & TF_SHM_DEV_PRESENT)) {
            tf_errf(err, errlen, "device %" PRIu32 ": entry below ndev is not marked present", i);
            return TF_EPROTO;
        }
        if ((d->flags & TF_SHM_DEV_COMPUTE_LIMIT) &&
            (d->compute_limit_bp < 1 || d->compute_limit_bp > 10000)) {
            tf_errf(err, errlen,
                    "device %" PRIu32 ": compute_limit_bp %" PRIu32 " is outside 1..10000", i,
                    d->compute_limit_bp);
            return TF_EPROTO;
        }
        if ((d->flags & TF_SHM_DEV_VRAM_LIMIT) && d->vram_limit > (uint64_t)INT64_MAX) {
            tf_errf(err, errlen, "device %" PRIu32 ": vram_limit %" PRIu64 " is out of range", i,
                    d->vram_limit);
            return TF_EPROTO;
        }
    }
    return 0;
}

/* Header constants of either part, read with memcpy from any buffer (the two headers share
 * their first 32 bytes). */
struct hdr_consts {
    uint64_t magic;
    uint32_t version, header_size;
    uint64_t size;
    uint32_t max_devices, max_pids;
};

static void read_consts(const unsigned char *p, struct hdr_consts *h)
{
    memcpy(&h->magic, p + offsetof(struct tf_shm_header, magic), 8);
    memcpy(&h->version, p + offsetof(struct tf_shm_header, version), 4);
    memcpy(&h->header_size, p + offsetof(struct tf_shm_header, header_size), 4);
    memcpy(&h->size, p + offsetof(struct tf_shm_header, size), 8);
    memcpy(&h->max_devices, p + offsetof(struct tf_shm_header, max_devices), 4);
    memcpy(&h->max_pids, p + offsetof(struct tf_shm_header, max_pids), 4);
}

/* What a part of kind USAGE (else limits) must hold. */
static int check_consts(const struct hdr_consts *h, size_t len, bool usage, char *err,
                        size_t errlen)
{
    uint64_t magic = usage ? TF_SHM_USAGE_MAGIC : TF_SHM_MAGIC,
             other = usage ? TF_SHM_MAGIC : TF_SHM_USAGE_MAGIC;
    uint32_t hsize = usage ? sizeof(struct tf_shm_usage_header) : sizeof(struct tf_shm_header);
    uint64_t size = usage ? TF_SHM_USAGE_SIZE : TF_SHM_LIMITS_SIZE;
    if (h->magic != magic) {
        if (h->magic == 0)
            tf_errf(err, errlen, "magic is zero (not initialised)");
        else if (h->magic == other)
            tf_errf(err, errlen, "this is a region's %s part, not its %s part",
                    usage ? "limits" : "usage", usage ? "usage" : "limits");
        else
            tf_errf(err, errlen,
                    "bad magic 0x%016" PRIx64 " (want 0x%016" PRIx64
                    ": not a TensorFusion limit region's %s part)",
                    h->magic, magic, usage ? "usage" : "limits");
        return TF_EPROTO;
    }
    if (h->version != TF_SHM_VERSION) {
        tf_errf(err, errlen, "version %" PRIu32 ", this build supports version %u%s", h->version,
                TF_SHM_VERSION,
                h->version == 1 ? " (a one-file region of an older TensorFusion: run the "
                                  "hypervisor and the limiter of one release)"
                                : "");
        return TF_EPROTO;
    }
    if (h->header_size != hsize) {
        tf_errf(err, errlen, "header_size %" PRIu32 ", want %" PRIu32, h->header_size, hsize);
        return TF_EPROTO;
    }
    if (h->size != size) {
        tf_errf(err, errlen, "size field %" PRIu64 ", want %" PRIu64, h->size, size);
        return TF_EPROTO;
    }
    if (len != size) {
        tf_errf(err, errlen, "file is %zu bytes, want %" PRIu64, len, size);
        return TF_EPROTO;
    }
    if (h->max_devices != TF_SHM_MAX_DEVICES || h->max_pids != TF_SHM_MAX_PIDS) {
        tf_errf(err, errlen, "max_devices/max_pids %" PRIu32 "/%" PRIu32 ", want %d/%d",
                h->max_devices, h->max_pids, TF_SHM_MAX_DEVICES, TF_SHM_MAX_PIDS);
        return TF_EPROTO;
    }
    return 0;
}

static int validate_head(const void *buf, size_t len, bool usage, char *err, size_t errlen)
{
    size_t need = usage ? sizeof(struct tf_shm_usage_header) : sizeof(struct tf_shm_header);
    if (!buf || len < need) {
        tf_errf(err, errlen, "%zu bytes, shorter than the %zu-byte header", len, need);
        return TF_EPROTO;
    }
    struct hdr_consts h;
    read_consts(buf, &h);
    return check_consts(&h, len, usage, err, errlen);
}

int tf_shm_validate_limits(const void *buf, size_t len, char *err, size_t errlen)
{
    int rc = validate_head(buf, len, false, err, errlen);
    if (rc)
        return rc;
    const unsigned char *p = buf;
    struct tf_shm_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    memcpy(&cfg.ndev, p + offsetof(struct tf_shm_header, ndev), 4);
    memcpy(&cfg.flags, p + offsetof(struct tf_shm_header, flags), 4);
    memcpy(cfg.name, p + offsetof(struct tf_shm_header, name), TF_SHM_NAME_MAX);
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        const unsigned char *d =
            p + offsetof(struct tf_shm_limits, dev) + i * sizeof(struct tf_shm_ldev);
        memcpy(cfg.dev[i].uuid, d + offsetof(struct tf_shm_ldev, uuid), 16);
        memcpy(&cfg.dev[i].flags, d + offsetof(struct tf_shm_ldev, flags), 4);
        memcpy(&cfg.dev[i].compute_limit_bp, d + offsetof(struct tf_shm_ldev, compute_limit_bp), 4);
        memcpy(&cfg.dev[i].vram_limit, d + offsetof(struct tf_shm_ldev, vram_limit), 8);
        memcpy(&cfg.dev[i].mem_total, d + offsetof(struct tf_shm_ldev, mem_total), 8);
    }
    return tf_shm_check_config(&cfg, err, errlen);
}

int tf_shm_validate_usage(const void *buf, size_t len, uint64_t *instance, char *err, size_t errlen)
{
    int rc = validate_head(buf, len, true, err, errlen);
    if (rc == 0 && instance)
        memcpy(instance,
               (const unsigned char *)buf + offsetof(struct tf_shm_usage_header, instance), 8);
    return rc;
}

bool tf_shm_usage_path(const char *limits_path, char *out, size_t len)
{
    const char *slash = strrchr(limits_path, '/');
    const char *base = slash ? slash + 1 : limits_path;
    int dlen = slash ? (int)(slash - limits_path) : 1;
    int n =
        snprintf(out, len, "%.*s/" TF_SHM_USAGE_DIR "/%s", dlen, slash ? limits_path : ".", base);
    return *base && n > 0 && (size_t)n < len && dlen < 4096;
}

/* --- formatting ---------------------------------------------------------------------- */

static uint64_t random_u64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 48);
    }
    return v ? v : 1;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TF_BUCKET_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static void limits_consts(struct tf_shm_limits *l)
{
    l->hdr.version = TF_SHM_VERSION;
    l->hdr.header_size = sizeof(struct tf_shm_header);
    l->hdr.size = TF_SHM_LIMITS_SIZE;
    l->hdr.max_devices = TF_SHM_MAX_DEVICES;
    l->hdr.max_pids = TF_SHM_MAX_PIDS;
}

static void usage_consts(struct tf_shm_usage *u, uint64_t instance)
{
    u->hdr.version = TF_SHM_VERSION;
    u->hdr.header_size = sizeof(struct tf_shm_usage_header);
    u->hdr.size = TF_SHM_USAGE_SIZE;
    u->hdr.max_devices = TF_SHM_MAX_DEVICES;
    u->hdr.max_pids = TF_SHM_MAX_PIDS;
    u->hdr.instance = instance;
    memset(u->hdr.reserved, 0, sizeof(u->hdr.reserved));
}

/* Full buckets at CFG's limits (unused entries: a whole device), launch cost unknown. */
static void reset_buckets(struct tf_shm_region *r, const struct tf_shm_config *cfg, uint64_t now)
{
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        bool used = i < cfg->ndev;
        uint32_t bp = used && (cfg->dev[i].flags & TF_SHM_DEV_COMPUTE_LIMIT)
                          ? cfg->dev[i].compute_limit_bp
                          : 10000;
        uint64_t rate;
        int64_t cap;
        tf_shm_bucket_params(bp, &rate, &cap);
        tf_bucket_init(&r->use->dev[i].bucket, &r->lim->dev[i].bucket, rate, cap, now);
        atomic_store_explicit(&r->lim->dev[i].launch_cost, 0, memory_order_relaxed);
        atomic_store_explicit(&r->lim->dev[i].rate_bp, used ? bp : 0, memory_order_relaxed);
    }
}

void tf_shm_format(struct tf_shm_region *r, const struct tf_shm_config *cfg, uint64_t now_ns)
{
    memset(r->lim, 0, sizeof(*r->lim));
    memset(r->use, 0, sizeof(*r->use));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    limits_consts(r->lim);
    r->lim->hdr.created_unix_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    r->lim->hdr.instance = random_u64();
    usage_consts(r->use, r->lim->hdr.instance);
    tf__shm_store_config(r, cfg);
    reset_buckets(r, cfg, now_ns);
    /* Magic last: a reader of a half-written buffer sees "not initialised". */
    atomic_thread_fence(memory_order_release);
    r->use->hdr.magic = TF_SHM_USAGE_MAGIC;
    r->lim->hdr.magic = TF_SHM_MAGIC;
}

int tf_shm_anon(const struct tf_shm_config *cfg, struct tf_shm_map *out)
{
    memset(out, 0, sizeof(*out));
    if (tf_shm_check_config(cfg, NULL, 0))
        return TF_EINVAL;
    size_t len = TF_SHM_LIMITS_SIZE + 64 + TF_SHM_USAGE_SIZE; /* (the usage part 64-aligned) */
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return TF_ENOMEM;
    out->base[0] = p;
    out->len[0] = len;
    out->r.lim = p;
    out->r.use = (struct tf_shm_usage *)((char *)p + ((TF_SHM_LIMITS_SIZE + 63) & ~63u));
    tf_shm_format(&out->r, cfg, mono_ns());
    return 0;
}

void tf_shm_unmap(struct tf_shm_map *m)
{
    if (!m)
        return;
    for (int i = 0; i < 2; i++)
        if (m->base[i])
            munmap(m->base[i], m->len[i]);
    memset(m, 0, sizeof(*m));
}

/* --- files ----------------------------------------------------------------------------- */

/* Opens an existing part without following a symlink or blocking on a special file;
 * TF_EIO unless it is a regular file. *ST receives its status. */
static int open_part(const char *path, int flags, struct stat *st, char *err, size_t errlen)
{
    int fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        tf_errf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return e == ENOENT                                 ? TF_ENOENT
               : (e == EACCES || e == EPERM || e == EROFS) ? TF_EPERM
                                                           : TF_EIO;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        tf_errf(err, errlen, "%s: not a regular file", path);
        close(fd);
        return TF_EIO;
    }
    return fd;
}

static int map_fd(int fd, size_t len, bool writable, void **out)
{
    void *p = mmap(NULL, len, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return TF_EIO;
    *out = p;
    return 0;
}

static int apply_perms(int fd, const char *path, mode_t mode, int uid, int gid, char *err,
                       size_t errlen)
{
    if ((uid >= 0 || gid >= 0) && fchown(fd, (uid_t)uid, (gid_t)gid) != 0) {
        tf_errf(err, errlen, "%s: cannot give it to %d:%d: %s", path, uid, gid, strerror(errno));
        return TF_EIO;
    }
    if (fchmod(fd, mode) != 0) {
        tf_errf(err, errlen, "%s: cannot chmod %o: %s", path, (unsigned)mode, strerror(errno));
        return TF_EIO;
    }
    return 0;
}

/* Makes DIR/rw (mode 0755, whoever made it). */
static int make_rw_dir(const char *upath, char *err, size_t errlen)
{
    char dir[4096];
    tf_strlcpy(dir, upath, sizeof(dir));
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        tf_errf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
        return TF_EIO;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, 0755) != 0) {
        tf_errf(err, errlen, "%s: not a usable directory: %s", dir, strerror(errno));
        if (fd >= 0)
            close(fd);
        return TF_EIO;
    }
    close(fd);
    return 0;
}

/* Creates a file at PATH under a fresh temporary name (O_EXCL: nothing planted there is
 * used), sized LEN, with PERMS' MODE/UID/GID; *TMP receives the name. */
static int create_tmp(const char *path, size_t len, mode_t mode, int uid, int gid, char *tmp,
                      size_t tlen, char *err, size_t errlen)
{
    if (snprintf(tmp, tlen, "%s.tmp.%d.%016" PRIx64, path, (int)getpid(), random_u64()) >=
        (int)tlen) {
        tf_errf(err, errlen, "%s: path too long", path);
        return TF_EINVAL;
    }
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        tf_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(e));
        return e == EACCES ? TF_EPERM : TF_EIO;
    }
    int rc = 0;
    if (ftruncate(fd, (off_t)len) != 0) {
        tf_errf(err, errlen, "%s: cannot size to %zu bytes: %s", tmp, len, strerror(errno));
        rc = TF_EIO;
    } else {
        rc = apply_perms(fd, tmp, mode, uid, gid, err, errlen);
    }
    if (rc) {
        close(fd);
        unlink(tmp);
        return rc;
    }
    return fd;
}

int tf_shm_create(const char *lpath, const struct tf_shm_config *cfg,
                  const struct tf_shm_perms *perms, struct tf_shm_map *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char cerr[200], upath[4096], ltmp[4200], utmp[4200];
    if (tf_shm_check_config(cfg, cerr, sizeof(cerr))) {
        tf_errf(err, errlen, "%s: invalid configuration: %s", lpath, cerr);
        return TF_EINVAL;
    }
    if (!tf_shm_usage_path(lpath, upath, sizeof(upath))) {
        tf_errf(err, errlen, "%s: path too long", lpath);
        return TF_EINVAL;
    }
    struct stat st;
    if (lstat(lpath, &st) == 0) {
        tf_errf(err, errlen, "%s: already exists (attach with tf_shm_open)", lpath);
        return TF_EEXIST;
    }
    int rc = make_rw_dir(upath, err, errlen);
    if (rc)
        return rc;
    int ufd = create_tmp(upath, TF_SHM_USAGE_SIZE, perms->umode, perms->uid, perms->gid, utmp,
                         sizeof(utmp), err, errlen);
    if (ufd < 0)
        return ufd;
    int lfd = create_tmp(lpath, TF_SHM_LIMITS_SIZE, perms->lmode, -1, -1, ltmp, sizeof(ltmp), err,
                         errlen);
    if (lfd < 0) {
        close(ufd);
        unlink(utmp);
        return lfd;
    }
    if (map_fd(lfd, TF_SHM_LIMITS_SIZE, true, &out->base[0]) != 0 ||
        map_fd(ufd, TF_SHM_USAGE_SIZE, true, &out->base[1]) != 0) {
        tf_errf(err, errlen, "%s: mmap: %s", lpath, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    out->len[0] = TF_SHM_LIMITS_SIZE;
    out->len[1] = TF_SHM_USAGE_SIZE;
    out->r.lim = out->base[0];
    out->r.use = out->base[1];
    tf_shm_format(&out->r, cfg, mono_ns());
    /* Usage first (replacing one of an earlier region), then the limits part appears. */
    if (rename(utmp, upath) != 0) {
        tf_errf(err, errlen, "%s: %s", upath, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    if (link(ltmp, lpath) != 0) {
        rc = errno == EEXIST ? TF_EEXIST : TF_EIO;
        tf_errf(err, errlen, "%s: %s", lpath,
                rc == TF_EEXIST ? "already exists (attach with tf_shm_open)" : strerror(errno));
    }
out:
    if (rc)
        tf_shm_unmap(out);
    unlink(ltmp);
    unlink(utmp); /* (gone after the rename) */
    close(lfd);
    close(ufd);
    return rc;
}

int tf_shm_set_perms(const char *lpath, const struct tf_shm_perms *perms, char *err, size_t errlen)
{
    char upath[4096];
    struct stat st;
    if (!tf_shm_usage_path(lpath, upath, sizeof(upath))) {
        tf_errf(err, errlen, "%s: path too long", lpath);
        return TF_EINVAL;
    }
    int rc = make_rw_dir(upath, err, errlen);
    int fd = rc ? rc : open_part(lpath, O_RDONLY, &st, err, errlen);
    if (fd < 0)
        return fd;
    rc = apply_perms(fd, lpath, perms->lmode, -1, -1, err, errlen);
    close(fd);
    if (rc || (fd = open_part(upath, O_RDONLY, &st, err, errlen)) < 0)
        return rc ? rc : fd;
    rc = apply_perms(fd, upath, perms->umode, perms->uid, perms->gid, err, errlen);
    close(fd);
    return rc;
}

/* Opens, checks and maps one part. */
static int open_checked(const char *path, bool usage, bool writable, void **base, char *err,
                        size_t errlen)
{
    struct stat st;
    char why[300];
    int fd = open_part(path, writable ? O_RDWR : O_RDONLY, &st, why, sizeof(why));
    if (fd < 0) {
        tf_errf(err, errlen, "%s (the limit region's %s part)", why, usage ? "usage" : "limits");
        return fd;
    }
    unsigned char head[sizeof(struct tf_shm_header)];
    size_t hsize = usage ? sizeof(struct tf_shm_usage_header) : sizeof(struct tf_shm_header);
    memset(head, 0, sizeof(head));
    ssize_t n = pread(fd, head, hsize, 0);
    int rc = 0;
    struct hdr_consts h;
    read_consts(head, &h);
    if (n < (ssize_t)hsize) {
        tf_errf(err, errlen,
                "%s: rejected the limit region's %s part: file is %lld bytes, shorter than the "
                "%zu-byte header",
                path, usage ? "usage" : "limits", (long long)st.st_size, hsize);
        rc = TF_EPROTO;
    } else if ((rc = check_consts(&h, (size_t)st.st_size, usage, why, sizeof(why))) != 0) {
        tf_errf(err, errlen, "%s: rejected the limit region's %s part: %s", path,
                usage ? "usage" : "limits", why);
    } else if (map_fd(fd, usage ? TF_SHM_USAGE_SIZE : TF_SHM_LIMITS_SIZE, writable, base) != 0) {
        tf_errf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        rc = TF_EIO;
    }
    close(fd);
    return rc;
}

int tf_shm_open(const char *lpath, enum tf_shm_access access, struct tf_shm_map *out, char *err,
                size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char upath[4096], why[200];
    if (!tf_shm_usage_path(lpath, upath, sizeof(upath))) {
        tf_errf(err, errlen, "%s: path too long", lpath);
        return TF_EINVAL;
    }
    int rc = open_checked(lpath, false, access == TF_SHM_ENGINE, &out->base[0], err, errlen);
    if (rc)
        return rc;
    out->len[0] = TF_SHM_LIMITS_SIZE;
    out->r.lim = out->base[0];
    if ((rc = open_checked(upath, true, access != TF_SHM_READ, &out->base[1], err, errlen)) != 0)
        goto fail;
    out->len[1] = TF_SHM_USAGE_SIZE;
    out->r.use = out->base[1];
    if (out->r.use->hdr.instance != out->r.lim->hdr.instance) {
        tf_errf(err, errlen,
                "%s: rejected limit region: its usage part %s belongs to another region "
                "(instance %016" PRIx64 ", the limits part's is %016" PRIx64 ")",
                lpath, upath, out->r.use->hdr.instance, out->r.lim->hdr.instance);
        rc = TF_EPROTO;
        goto fail;
    }
    struct tf_shm_config cfg;
    for (int i = 0; (rc = tf_shm_read_config(&out->r, &cfg)) == TF_EBUSY && i < 200; i++)
        tf__shm_sleep_ms(1);
    if (rc == TF_EBUSY) {
        tf_errf(err, errlen,
                "%s: rejected limit region: its writer left a config update unfinished (seq "
                "stays odd)",
                lpath);
        rc = TF_EPROTO;
    } else if ((rc = tf_shm_check_config(&cfg, why, sizeof(why))) != 0) {
        tf_errf(err, errlen, "%s: rejected limit region: %s", lpath, why);
        rc = TF_EPROTO;
    }
    if (rc == 0)
        return 0;
fail:
    tf_shm_unmap(out);
    return rc;
}

/* Opens the part at PATH read-write for repair, sized LEN: an existing regular file, or (a
 * usage part: CREATE) a new one when it is missing or not a regular file. */
static int repair_fd(const char *path, size_t len, bool create, mode_t mode, int uid, int gid,
                     char *err, size_t errlen)
{
    struct stat st;
    int fd = open_part(path, O_RDWR, &st, err, errlen);
    if (fd == TF_ENOENT || (fd == TF_EIO && create)) {
        if (!create)
            return fd;
        char tmp[4200];
        fd = create_tmp(path, len, mode, uid, gid, tmp, sizeof(tmp), err, errlen);
        if (fd >= 0 && rename(tmp, path) != 0) {
            tf_errf(err, errlen, "%s: %s", path, strerror(errno));
            close(fd);
            unlink(tmp);
            return TF_EIO;
        }
        return fd;
    }
    if (fd < 0)
        return fd;
    if ((st.st_size != (off_t)len && ftruncate(fd, (off_t)len) != 0) ||
        apply_perms(fd, path, mode, uid, gid, err, errlen) != 0) {
        tf_errf(err, errlen, "%s: cannot repair: %s", path, strerror(errno));
        close(fd);
        return TF_EIO;
    }
    return fd;
}

int tf_shm_repair(const char *lpath, const struct tf_shm_config *cfg,
                  const struct tf_shm_perms *perms, struct tf_shm_map *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char cerr[200], upath[4096];
    if (tf_shm_check_config(cfg, cerr, sizeof(cerr))) {
        tf_errf(err, errlen, "%s: invalid configuration: %s", lpath, cerr);
        return TF_EINVAL;
    }
    if (!tf_shm_usage_path(lpath, upath, sizeof(upath))) {
        tf_errf(err, errlen, "%s: path too long", lpath);
        return TF_EINVAL;
    }
    int rc = make_rw_dir(upath, err, errlen);
    if (rc)
        return rc;
    int lfd = repair_fd(lpath, TF_SHM_LIMITS_SIZE, false, perms->lmode, -1, -1, err, errlen);
    if (lfd < 0)
        return lfd;
    int ufd = repair_fd(upath, TF_SHM_USAGE_SIZE, true, perms->umode, perms->uid, perms->gid, err,
                        errlen);
    if (ufd < 0) {
        close(lfd);
        return ufd;
    }
    if (map_fd(lfd, TF_SHM_LIMITS_SIZE, true, &out->base[0]) != 0 ||
        map_fd(ufd, TF_SHM_USAGE_SIZE, true, &out->base[1]) != 0) {
        tf_errf(err, errlen, "%s: mmap: %s", lpath, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    out->len[0] = TF_SHM_LIMITS_SIZE;
    out->len[1] = TF_SHM_USAGE_SIZE;
    struct tf_shm_region *r = &out->r;
    r->lim = out->base[0];
    r->use = out->base[1];
    /* Readers see "not initialised" until the end. */
    r->lim->hdr.magic = 0;
    r->use->hdr.magic = 0;
    atomic_thread_fence(memory_order_release);
    limits_consts(r->lim);
    if (r->lim->hdr.instance == 0)
        r->lim->hdr.instance = random_u64();
    usage_consts(r->use, r->lim->hdr.instance);
    atomic_store(&r->lim->hdr.seq, 0);
    atomic_store(&r->lim->hdr.heartbeat_ns, 0);
    memset(r->lim->hdr.reserved, 0, sizeof(r->lim->hdr.reserved));
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        int64_t used = 0;
        for (unsigned j = 0; j < TF_SHM_MAX_PIDS; j++) {
            int64_t v = atomic_load(&r->use->pid[j].vram_used[i]);
            if (v < 0 || !atomic_load(&r->use->pid[j].owner)) {
                atomic_store(&r->use->pid[j].vram_used[i], 0);
                continue;
            }
            used = v > INT64_MAX - used ? INT64_MAX : used + v;
        }
        struct tf_shm_udev *d = &r->use->dev[i];
        atomic_store(&d->vram_used, i < cfg->ndev ? used : 0);
        if (atomic_load(&d->vram_peak) < used)
            atomic_store(&d->vram_peak, used);
    }
    reset_buckets(r, cfg, mono_ns());
    tf__shm_store_config(r, cfg);
    atomic_thread_fence(memory_order_release);
    r->use->hdr.magic = TF_SHM_USAGE_MAGIC;
    r->lim->hdr.magic = TF_SHM_MAGIC;
    char verr[200];
    if (tf_shm_validate_limits(r->lim, TF_SHM_LIMITS_SIZE, verr, sizeof(verr)) != 0) {
        tf_errf(err, errlen, "%s: still invalid after repair: %s", lpath, verr);
        rc = TF_EIO;
    }
out:
    if (rc)
        tf_shm_unmap(out);
    close(lfd);
    close(ufd);
    return rc;
}
