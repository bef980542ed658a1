/* SPDX-License-Identifier: Apache-2.0
 *
 * Soft-isolation regions: creation, validation, the config seqlock, VRAM reservations and
 * PID slots (see shm.h).
 */
#include "limits/shm.h"

#include "common/err.h"
#include "common/strutil.h"
#include "limits/bucket.h"

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

#define READ_RETRIES 2000

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

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

/* Header constants, read with memcpy from any buffer. */
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

static int check_consts(const struct hdr_consts *h, size_t len, char *err, size_t errlen)
{
    if (h->magic != TF_SHM_MAGIC) {
        if (h->magic == 0)
            tf_errf(err, errlen, "magic is zero (region not initialised)");
        else
            tf_errf(err, errlen,
                    "bad magic 0x%016" PRIx64 " (want 0x%016" PRIx64
                    ": not a TensorFusion limit region)",
                    h->magic, TF_SHM_MAGIC);
        return TF_EPROTO;
    }
    if (h->version != TF_SHM_VERSION) {
        tf_errf(err, errlen, "version %" PRIu32 ", this build supports version %u", h->version,
                TF_SHM_VERSION);
        return TF_EPROTO;
    }
    if (h->header_size != sizeof(struct tf_shm_header)) {
        tf_errf(err, errlen, "header_size %" PRIu32 ", want %zu", h->header_size,
                sizeof(struct tf_shm_header));
        return TF_EPROTO;
    }
    if (h->size != TF_SHM_SIZE) {
        tf_errf(err, errlen, "size field %" PRIu64 ", want %u", h->size, TF_SHM_SIZE);
        return TF_EPROTO;
    }
    if (len != TF_SHM_SIZE) {
        tf_errf(err, errlen, "region is %zu bytes, want %u", len, TF_SHM_SIZE);
        return TF_EPROTO;
    }
    if (h->max_devices != TF_SHM_MAX_DEVICES || h->max_pids != TF_SHM_MAX_PIDS) {
        tf_errf(err, errlen, "max_devices/max_pids %" PRIu32 "/%" PRIu32 ", want %d/%d",
                h->max_devices, h->max_pids, TF_SHM_MAX_DEVICES, TF_SHM_MAX_PIDS);
        return TF_EPROTO;
    }
    return 0;
}

int tf_shm_validate(const void *buf, size_t len, char *err, size_t errlen)
{
    const unsigned char *p = buf;
    if (!buf || len < sizeof(struct tf_shm_header)) {
        tf_errf(err, errlen, "region is %zu bytes, shorter than the %zu-byte header", len,
                sizeof(struct tf_shm_header));
        return TF_EPROTO;
    }
    struct hdr_consts h;
    read_consts(p, &h);
    int rc = check_consts(&h, len, err, errlen);
    if (rc)
        return rc;
    struct tf_shm_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    memcpy(&cfg.ndev, p + offsetof(struct tf_shm_header, ndev), 4);
    memcpy(&cfg.flags, p + offsetof(struct tf_shm_header, flags), 4);
    memcpy(cfg.name, p + offsetof(struct tf_shm_header, name), TF_SHM_NAME_MAX);
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        const unsigned char *d =
            p + offsetof(struct tf_shm_region, dev) + i * sizeof(struct tf_shm_device);
        memcpy(cfg.dev[i].uuid, d + offsetof(struct tf_shm_device, uuid), 16);
        memcpy(&cfg.dev[i].flags, d + offsetof(struct tf_shm_device, flags), 4);
        memcpy(&cfg.dev[i].compute_limit_bp, d + offsetof(struct tf_shm_device, compute_limit_bp),
               4);
        memcpy(&cfg.dev[i].vram_limit, d + offsetof(struct tf_shm_device, vram_limit), 8);
        memcpy(&cfg.dev[i].mem_total, d + offsetof(struct tf_shm_device, mem_total), 8);
    }
    return tf_shm_check_config(&cfg, err, errlen);
}

/* --- seqlock -------------------------------------------------------------------------- */

static void store_config_fields(struct tf_shm_region *r, const struct tf_shm_config *cfg)
{
    uint64_t name[TF_SHM_NAME_MAX / 8];
    memcpy(name, cfg->name, sizeof(name));
    for (unsigned i = 0; i < TF_SHM_NAME_MAX / 8; i++)
        atomic_store_explicit(&r->hdr.name[i], name[i], memory_order_relaxed);
    atomic_store_explicit(&r->hdr.flags, cfg->flags, memory_order_relaxed);
    atomic_store_explicit(&r->hdr.ndev, cfg->ndev, memory_order_relaxed);
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        struct tf_shm_device *d = &r->dev[i];
        const struct tf_shm_dev_config *c = &cfg->dev[i];
        bool used = i < cfg->ndev;
        uint64_t u[2];
        memcpy(u, c->uuid, 16);
        atomic_store_explicit(&d->uuid[0], used ? u[0] : 0, memory_order_relaxed);
        atomic_store_explicit(&d->uuid[1], used ? u[1] : 0, memory_order_relaxed);
        atomic_store_explicit(&d->flags, used ? c->flags : 0, memory_order_relaxed);
        atomic_store_explicit(&d->compute_limit_bp, used ? c->compute_limit_bp : 0,
                              memory_order_relaxed);
        atomic_store_explicit(&d->vram_limit, used ? c->vram_limit : 0, memory_order_relaxed);
        atomic_store_explicit(&d->mem_total, used ? c->mem_total : 0, memory_order_relaxed);
    }
}

int tf_shm_read_config(const struct tf_shm_region *r, struct tf_shm_config *out)
{
    struct tf_shm_region *rw = (struct tf_shm_region *)r; /* loads only */
    for (int tries = 0; tries < READ_RETRIES; tries++) {
        uint64_t s1 = atomic_load_explicit(&rw->hdr.seq, memory_order_acquire);
        if (s1 & 1) {
            cpu_relax();
            continue;
        }
        uint64_t name[TF_SHM_NAME_MAX / 8];
        for (unsigned i = 0; i < TF_SHM_NAME_MAX / 8; i++)
            name[i] = atomic_load_explicit(&rw->hdr.name[i], memory_order_relaxed);
        memcpy(out->name, name, sizeof(name));
        out->flags = atomic_load_explicit(&rw->hdr.flags, memory_order_relaxed);
        out->ndev = atomic_load_explicit(&rw->hdr.ndev, memory_order_relaxed);
        for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
            struct tf_shm_device *d = &rw->dev[i];
            struct tf_shm_dev_config *c = &out->dev[i];
            uint64_t u[2] = {atomic_load_explicit(&d->uuid[0], memory_order_relaxed),
                             atomic_load_explicit(&d->uuid[1], memory_order_relaxed)};
            memcpy(c->uuid, u, 16);
            c->flags = atomic_load_explicit(&d->flags, memory_order_relaxed);
            c->compute_limit_bp = atomic_load_explicit(&d->compute_limit_bp, memory_order_relaxed);
            c->vram_limit = atomic_load_explicit(&d->vram_limit, memory_order_relaxed);
            c->mem_total = atomic_load_explicit(&d->mem_total, memory_order_relaxed);
        }
        atomic_thread_fence(memory_order_acquire);
        uint64_t s2 = atomic_load_explicit(&rw->hdr.seq, memory_order_relaxed);
        if (s1 == s2)
            return 0;
    }
    return TF_EBUSY;
}

/* Makes seq odd for this writer. A writer that left it odd without progress for
 * TF_SHM_WRITER_TAKEOVER_MS is presumed dead and taken over. Returns the odd value held. */
static uint64_t write_begin(struct tf_shm_region *r)
{
    uint64_t start = 0, seen = UINT64_MAX;
    for (;;) {
        uint64_t s = atomic_load_explicit(&r->hdr.seq, memory_order_relaxed);
        if (!(s & 1)) {
            if (atomic_compare_exchange_weak_explicit(&r->hdr.seq, &s, s + 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                break;
            continue;
        }
        uint64_t now = mono_ms();
        if (s != seen) {
            seen = s;
            start = now;
        } else if (now - start >= TF_SHM_WRITER_TAKEOVER_MS) {
            if (atomic_compare_exchange_strong_explicit(&r->hdr.seq, &s, s + 2,
                                                        memory_order_relaxed, memory_order_relaxed))
                break;
            continue;
        }
        sleep_ms(1);
    }
    atomic_thread_fence(memory_order_release);
    return atomic_load_explicit(&r->hdr.seq, memory_order_relaxed);
}

static void write_end(struct tf_shm_region *r, uint64_t odd)
{
    atomic_store_explicit(&r->hdr.seq, odd + 1, memory_order_release);
}

void tf_shm_bucket_params(uint32_t compute_limit_bp, uint64_t *rate, int64_t *capacity)
{
    if (compute_limit_bp > 10000)
        compute_limit_bp = 10000;
    uint64_t r = (uint64_t)compute_limit_bp * (TF_BUCKET_NS_PER_S / 10000u);
    *rate = r;
    int64_t cap = (int64_t)(r / 1000u * TF_SHM_BURST_MS);
    *capacity = cap < 1 ? 1 : cap;
}

static void reset_bucket_if_changed(struct tf_shm_device *d, uint32_t old_flags, uint32_t old_bp,
                                    uint32_t new_flags, uint32_t new_bp)
{
    bool was = old_flags & TF_SHM_DEV_COMPUTE_LIMIT, now = new_flags & TF_SHM_DEV_COMPUTE_LIMIT;
    if (!now || (was && old_bp == new_bp))
        return;
    uint64_t rate;
    int64_t cap;
    tf_shm_bucket_params(new_bp, &rate, &cap);
    tf_bucket_set(&d->bucket, rate, cap);
    atomic_store_explicit(&d->rate_bp, new_bp, memory_order_relaxed);
}

int tf_shm_write_config(struct tf_shm_region *r, const struct tf_shm_config *cfg)
{
    if (tf_shm_check_config(cfg, NULL, 0))
        return TF_EINVAL;
    uint32_t old_flags[TF_SHM_MAX_DEVICES], old_bp[TF_SHM_MAX_DEVICES];
    uint64_t odd = write_begin(r);
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        old_flags[i] = atomic_load_explicit(&r->dev[i].flags, memory_order_relaxed);
        old_bp[i] = atomic_load_explicit(&r->dev[i].compute_limit_bp, memory_order_relaxed);
    }
    store_config_fields(r, cfg);
    write_end(r, odd);
    for (unsigned i = 0; i < cfg->ndev; i++)
        reset_bucket_if_changed(&r->dev[i], old_flags[i], old_bp[i], cfg->dev[i].flags,
                                cfg->dev[i].compute_limit_bp);
    return 0;
}

int tf_shm_set_limits(struct tf_shm_region *r, unsigned dev, uint32_t flags,
                      uint32_t compute_limit_bp, uint64_t vram_limit)
{
    if (flags & ~(TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT | TF_SHM_DEV_PRESENT))
        return TF_EINVAL;
    if ((flags & TF_SHM_DEV_COMPUTE_LIMIT) && (compute_limit_bp < 1 || compute_limit_bp > 10000))
        return TF_EINVAL;
    if ((flags & TF_SHM_DEV_VRAM_LIMIT) && vram_limit > (uint64_t)INT64_MAX)
        return TF_EINVAL;
    uint64_t odd = write_begin(r);
    if (dev >= atomic_load_explicit(&r->hdr.ndev, memory_order_relaxed)) {
        write_end(r, odd);
        return TF_ERANGE;
    }
    struct tf_shm_device *d = &r->dev[dev];
    uint32_t old_flags = atomic_load_explicit(&d->flags, memory_order_relaxed);
    uint32_t old_bp = atomic_load_explicit(&d->compute_limit_bp, memory_order_relaxed);
    flags |= TF_SHM_DEV_PRESENT;
    atomic_store_explicit(&d->compute_limit_bp,
                          (flags & TF_SHM_DEV_COMPUTE_LIMIT) ? compute_limit_bp : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&d->vram_limit, (flags & TF_SHM_DEV_VRAM_LIMIT) ? vram_limit : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&d->flags, flags, memory_order_relaxed);
    write_end(r, odd);
    reset_bucket_if_changed(d, old_flags, old_bp, flags, compute_limit_bp);
    return 0;
}

/* --- whole regions ------------------------------------------------------------------ */

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

void tf_shm_format(struct tf_shm_region *r, const struct tf_shm_config *cfg, uint64_t now_ns)
{
    memset(r, 0, sizeof(*r));
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r->hdr.version = TF_SHM_VERSION;
    r->hdr.header_size = sizeof(struct tf_shm_header);
    r->hdr.size = TF_SHM_SIZE;
    r->hdr.max_devices = TF_SHM_MAX_DEVICES;
    r->hdr.max_pids = TF_SHM_MAX_PIDS;
    r->hdr.created_unix_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    r->hdr.instance = random_u64();
    store_config_fields(r, cfg);
    for (unsigned i = 0; i < cfg->ndev; i++) {
        uint64_t rate;
        int64_t cap;
        uint32_t bp =
            (cfg->dev[i].flags & TF_SHM_DEV_COMPUTE_LIMIT) ? cfg->dev[i].compute_limit_bp : 10000;
        tf_shm_bucket_params(bp, &rate, &cap);
        tf_bucket_init(&r->dev[i].bucket, rate, cap, now_ns);
        atomic_store_explicit(&r->dev[i].rate_bp, bp, memory_order_relaxed);
    }
    /* Magic last: a reader of a half-written buffer sees "not initialised". */
    atomic_thread_fence(memory_order_release);
    r->hdr.magic = TF_SHM_MAGIC;
}

static int map_fd(int fd, struct tf_shm_map *out)
{
    void *p = mmap(NULL, TF_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return TF_EIO;
    out->r = p;
    out->len = TF_SHM_SIZE;
    return 0;
}

int tf_shm_create(const char *path, const struct tf_shm_config *cfg, mode_t mode,
                  struct tf_shm_map *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char cerr[200];
    if (tf_shm_check_config(cfg, cerr, sizeof(cerr))) {
        tf_errf(err, errlen, "%s: invalid configuration: %s", path, cerr);
        return TF_EINVAL;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp)) {
        tf_errf(err, errlen, "%s: path too long", path);
        return TF_EINVAL;
    }
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        tf_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        return errno == EACCES ? TF_EPERM : TF_EIO;
    }
    int rc = 0;
    if (ftruncate(fd, TF_SHM_SIZE) != 0) {
        tf_errf(err, errlen, "%s: cannot size to %u bytes: %s", tmp, TF_SHM_SIZE, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    if (map_fd(fd, out) != 0) {
        tf_errf(err, errlen, "%s: mmap: %s", tmp, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    tf_shm_format(out->r, cfg, (uint64_t)ts.tv_sec * TF_BUCKET_NS_PER_S + (uint64_t)ts.tv_nsec);
    if (link(tmp, path) != 0) {
        rc = errno == EEXIST ? TF_EEXIST : TF_EIO;
        tf_errf(err, errlen, "%s: %s", path,
                rc == TF_EEXIST ? "already exists (attach with tf_shm_open)" : strerror(errno));
        tf_shm_unmap(out);
    }
out:
    unlink(tmp);
    close(fd);
    return rc;
}

int tf_shm_open(const char *path, struct tf_shm_map *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        tf_errf(err, errlen, "%s: cannot open limit region: %s", path, strerror(e));
        return e == ENOENT ? TF_ENOENT : e == EACCES ? TF_EPERM : TF_EIO;
    }
    int rc = 0;
    char why[200] = "";
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tf_errf(err, errlen, "%s: fstat: %s", path, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    unsigned char head[sizeof(struct tf_shm_header)];
    memset(head, 0, sizeof(head));
    ssize_t n = pread(fd, head, sizeof(head), 0);
    struct hdr_consts h;
    read_consts(head, &h);
    if (n < (ssize_t)sizeof(head)) {
        tf_errf(err, errlen,
                "%s: rejected limit region: file is %lld bytes, shorter than the "
                "%zu-byte header",
                path, (long long)st.st_size, sizeof(head));
        rc = TF_EPROTO;
        goto out;
    }
    if ((rc = check_consts(&h, (size_t)st.st_size, why, sizeof(why))) != 0) {
        tf_errf(err, errlen, "%s: rejected limit region: %s", path, why);
        goto out;
    }
    if (map_fd(fd, out) != 0) {
        tf_errf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    struct tf_shm_config cfg;
    for (int i = 0; (rc = tf_shm_read_config(out->r, &cfg)) == TF_EBUSY && i < 200; i++)
        sleep_ms(1);
    if (rc == TF_EBUSY) {
        tf_errf(err, errlen,
                "%s: rejected limit region: its writer left a config update "
                "unfinished (seq stays odd)",
                path);
        rc = TF_EPROTO;
    } else if ((rc = tf_shm_check_config(&cfg, why, sizeof(why))) != 0) {
        tf_errf(err, errlen, "%s: rejected limit region: %s", path, why);
        rc = TF_EPROTO;
    }
    if (rc)
        tf_shm_unmap(out);
out:
    close(fd);
    return rc;
}

int tf_shm_repair(const char *path, const struct tf_shm_config *cfg, struct tf_shm_map *out,
                  char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    char cerr[200];
    if (tf_shm_check_config(cfg, cerr, sizeof(cerr))) {
        tf_errf(err, errlen, "%s: invalid configuration: %s", path, cerr);
        return TF_EINVAL;
    }
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        tf_errf(err, errlen, "%s: cannot open limit region: %s", path, strerror(e));
        return e == ENOENT ? TF_ENOENT : TF_EIO;
    }
    int rc = 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (st.st_size != TF_SHM_SIZE && ftruncate(fd, TF_SHM_SIZE) != 0) || map_fd(fd, out) != 0) {
        tf_errf(err, errlen, "%s: cannot repair: %s", path,
                S_ISREG(st.st_mode) ? strerror(errno) : "not a regular file");
        rc = TF_EIO;
        goto out;
    }
    struct tf_shm_region *r = out->r;
    r->hdr.magic = 0; /* readers see "not initialised" until the end */
    atomic_thread_fence(memory_order_release);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * TF_BUCKET_NS_PER_S + (uint64_t)ts.tv_nsec;
    r->hdr.version = TF_SHM_VERSION;
    r->hdr.header_size = sizeof(struct tf_shm_header);
    r->hdr.size = TF_SHM_SIZE;
    r->hdr.max_devices = TF_SHM_MAX_DEVICES;
    r->hdr.max_pids = TF_SHM_MAX_PIDS;
    atomic_store(&r->hdr.seq, 0);
    atomic_store(&r->hdr.heartbeat_ns, 0);
    memset(r->hdr.reserved, 0, sizeof(r->hdr.reserved));
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        int64_t used = 0;
        for (unsigned j = 0; j < TF_SHM_MAX_PIDS; j++) {
            int64_t v = atomic_load(&r->pid[j].vram_used[i]);
            if (v < 0 || !atomic_load(&r->pid[j].owner)) {
                atomic_store(&r->pid[j].vram_used[i], 0);
                continue;
            }
            used = v > INT64_MAX - used ? INT64_MAX : used + v;
        }
        struct tf_shm_device *d = &r->dev[i];
        atomic_store(&d->vram_used, i < cfg->ndev ? used : 0);
        if (atomic_load(&d->vram_peak) < used)
            atomic_store(&d->vram_peak, used);
        uint32_t bp =
            (cfg->dev[i].flags & TF_SHM_DEV_COMPUTE_LIMIT) ? cfg->dev[i].compute_limit_bp : 10000;
        uint64_t rate;
        int64_t cap;
        tf_shm_bucket_params(i < cfg->ndev ? bp : 10000, &rate, &cap);
        tf_bucket_init(&d->bucket, rate, cap, now);
        atomic_store(&d->launch_cost, 0);
        atomic_store(&d->rate_bp, i < cfg->ndev ? bp : 0);
    }
    store_config_fields(r, cfg);
    atomic_thread_fence(memory_order_release);
    r->hdr.magic = TF_SHM_MAGIC;
    char verr[200];
    if (tf_shm_validate(r, TF_SHM_SIZE, verr, sizeof(verr)) != 0) {
        tf_errf(err, errlen, "%s: still invalid after repair: %s", path, verr);
        tf_shm_unmap(out);
        rc = TF_EIO;
    }
out:
    close(fd);
    return rc;
}

void tf_shm_unmap(struct tf_shm_map *m)
{
    if (m && m->r) {
        munmap(m->r, m->len);
        m->r = NULL;
        m->len = 0;
    }
}

/* --- heartbeat ------------------------------------------------------------------------ */

void tf_shm_heartbeat(struct tf_shm_region *r, uint64_t now_ns, uint32_t period_ms,
                      uint32_t writer_pid)
{
    atomic_store_explicit(&r->hdr.heartbeat_period_ms, period_ms, memory_order_relaxed);
    atomic_store_explicit(&r->hdr.writer_pid, writer_pid, memory_order_relaxed);
    atomic_store_explicit(&r->hdr.heartbeat_ns, now_ns ? now_ns : 1, memory_order_release);
}

bool tf_shm_heartbeat_stale(const struct tf_shm_region *r, uint64_t now_ns)
{
    struct tf_shm_region *rw = (struct tf_shm_region *)r;
    uint64_t hb = atomic_load_explicit(&rw->hdr.heartbeat_ns, memory_order_acquire);
    if (hb == 0)
        return false;
    uint64_t period = atomic_load_explicit(&rw->hdr.heartbeat_period_ms, memory_order_relaxed);
    uint64_t bound_ms = period * TF_SHM_STALE_PERIODS;
    if (bound_ms < TF_SHM_STALE_MIN_MS)
        bound_ms = TF_SHM_STALE_MIN_MS;
    return now_ns > hb && now_ns - hb > bound_ms * 1000000u;
}

/* --- VRAM ------------------------------------------------------------------------------ */

static void sub_clamped(_Atomic(int64_t) *v, uint64_t bytes)
{
    int64_t cur = atomic_load_explicit(v, memory_order_relaxed);
    for (;;) {
        int64_t next = (uint64_t)cur <= bytes || cur < 0 ? 0 : cur - (int64_t)bytes;
        if (atomic_compare_exchange_weak_explicit(v, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
    }
}

int tf_shm_vram_reserve(struct tf_shm_region *r, unsigned dev, int slot, uint64_t bytes)
{
    if (dev >= TF_SHM_MAX_DEVICES || slot >= TF_SHM_MAX_PIDS || bytes > (uint64_t)INT64_MAX)
        return TF_ERANGE;
    struct tf_shm_device *d = &r->dev[dev];
    int64_t cur = atomic_load_explicit(&d->vram_used, memory_order_relaxed);
    int64_t next;
    for (;;) {
        int64_t base = cur < 0 ? 0 : cur; /* a negative counter (corruption) counts as 0 */
        if ((int64_t)bytes > INT64_MAX - base)
            return TF_ERANGE;
        next = base + (int64_t)bytes;
        uint32_t flags = atomic_load_explicit(&d->flags, memory_order_relaxed);
        if (flags & TF_SHM_DEV_VRAM_LIMIT) {
            uint64_t limit = atomic_load_explicit(&d->vram_limit, memory_order_relaxed);
            if ((uint64_t)next > limit) {
                atomic_fetch_add_explicit(&d->oom_count, 1, memory_order_relaxed);
                return TF_ENOSPC;
            }
        }
        if (atomic_compare_exchange_weak_explicit(&d->vram_used, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    int64_t peak = atomic_load_explicit(&d->vram_peak, memory_order_relaxed);
    while (next > peak &&
           !atomic_compare_exchange_weak_explicit(&d->vram_peak, &peak, next, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    if (slot >= 0)
        atomic_fetch_add_explicit(&r->pid[slot].vram_used[dev], (int64_t)bytes,
                                  memory_order_relaxed);
    return 0;
}

void tf_shm_vram_release(struct tf_shm_region *r, unsigned dev, int slot, uint64_t bytes)
{
    if (dev >= TF_SHM_MAX_DEVICES || slot >= TF_SHM_MAX_PIDS || bytes == 0)
        return;
    /* Slot first: a process killed between the two leaves the device over-counted (slack a
     * reap cannot see), never under-counted (room beyond the limit). */
    if (slot >= 0)
        sub_clamped(&r->pid[slot].vram_used[dev], bytes);
    sub_clamped(&r->dev[dev].vram_used, bytes);
}

void tf_shm_vram_view(const struct tf_shm_region *r, unsigned dev, uint64_t phys_free,
                      uint64_t phys_total, uint64_t *free_out, uint64_t *total_out)
{
    struct tf_shm_region *rw = (struct tf_shm_region *)r;
    if (dev >= TF_SHM_MAX_DEVICES) {
        *free_out = phys_free;
        *total_out = phys_total;
        return;
    }
    struct tf_shm_device *d = &rw->dev[dev];
    uint32_t flags = atomic_load_explicit(&d->flags, memory_order_relaxed);
    if (!(flags & TF_SHM_DEV_VRAM_LIMIT)) {
        *free_out = phys_free > phys_total ? phys_total : phys_free;
        *total_out = phys_total;
        return;
    }
    uint64_t total = atomic_load_explicit(&d->vram_limit, memory_order_relaxed);
    if (phys_total && total > phys_total)
        total = phys_total;
    int64_t used = atomic_load_explicit(&d->vram_used, memory_order_relaxed);
    uint64_t u = used < 0 ? 0 : (uint64_t)used;
    if (u > total)
        u = total;
    uint64_t free = total - u;
    if (phys_total && free > phys_free)
        free = phys_free;
    *free_out = free;
    *total_out = total;
}

/* --- PID slots ------------------------------------------------------------------------- */

uint64_t tf_shm_owner_id(uint32_t pid, uint64_t starttime_ticks)
{
    return (uint64_t)pid | ((starttime_ticks & 0x7fffffffu) << 32);
}

int tf_shm_pid_claim(struct tf_shm_region *r, uint64_t owner, uint64_t pidns)
{
    owner &= ~TF_SHM_OWNER_RECLAIM;
    if (owner == 0)
        return TF_EINVAL;
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++) {
        uint64_t expect = 0;
        if (atomic_compare_exchange_strong_explicit(&r->pid[i].owner, &expect, owner,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            atomic_store_explicit(&r->pid[i].host_pid, 0, memory_order_relaxed);
            atomic_store_explicit(&r->pid[i].pidns, pidns, memory_order_relaxed);
            return i;
        }
    }
    return TF_ENOSPC;
}

/* Returns the slot's bytes to the devices and clears its counters. The caller holds the
 * slot: its owner word equals HELD (the owner id, or this reclaimer's mark); draining stops
 * if that changes (a stalled reclaimer was taken over). */
static void drain_slot(struct tf_shm_region *r, int slot, uint64_t held)
{
    struct tf_shm_pid *p = &r->pid[slot];
    for (unsigned d = 0; d < TF_SHM_MAX_DEVICES; d++) {
        if (atomic_load_explicit(&p->owner, memory_order_acquire) != held)
            return;
        int64_t b = atomic_exchange_explicit(&p->vram_used[d], 0, memory_order_relaxed);
        if (b > 0)
            sub_clamped(&r->dev[d].vram_used, (uint64_t)b);
        atomic_store_explicit(&p->launches[d], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&p->host_pid, 0, memory_order_relaxed);
    atomic_store_explicit(&p->pidns, 0, memory_order_relaxed);
}

void tf_shm_pid_release(struct tf_shm_region *r, int slot, uint64_t owner)
{
    if (slot < 0 || slot >= TF_SHM_MAX_PIDS)
        return;
    owner &= ~TF_SHM_OWNER_RECLAIM;
    if (atomic_load_explicit(&r->pid[slot].owner, memory_order_acquire) != owner)
        return;
    drain_slot(r, slot, owner);
    uint64_t expect = owner;
    atomic_compare_exchange_strong_explicit(&r->pid[slot].owner, &expect, 0, memory_order_release,
                                            memory_order_relaxed);
}

int tf_shm_reap(struct tf_shm_region *r, uint64_t self, uint64_t now_ns, tf_shm_alive_fn alive,
                void *ctx)
{
    int n = 0;
    uint64_t mark = TF_SHM_OWNER_RECLAIM | (self & ~TF_SHM_OWNER_RECLAIM);
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++) {
        struct tf_shm_pid *p = &r->pid[i];
        uint64_t o = atomic_load_explicit(&p->owner, memory_order_acquire);
        if (o == 0 || o == mark)
            continue;
        if (o & TF_SHM_OWNER_RECLAIM) {
            uint64_t since = atomic_load_explicit(&p->reclaim_ns, memory_order_relaxed);
            if (now_ns < since || now_ns - since < TF_SHM_RECLAIM_STALE_MS * UINT64_C(1000000))
                continue; /* a reclaim in progress */
        } else if (alive(p, o, ctx)) {
            continue;
        }
        atomic_store_explicit(&p->reclaim_ns, now_ns, memory_order_relaxed);
        if (!atomic_compare_exchange_strong_explicit(&p->owner, &o, mark, memory_order_acq_rel,
                                                     memory_order_relaxed))
            continue; /* changed under us: someone else handles it */
        drain_slot(r, i, mark);
        uint64_t expect = mark;
        if (atomic_compare_exchange_strong_explicit(&p->owner, &expect, 0, memory_order_release,
                                                    memory_order_relaxed))
            n++;
    }
    return n;
}

/* --- helpers ---------------------------------------------------------------------------- */

void tf_shm_uuid_load(const struct tf_shm_region *r, unsigned dev, uint8_t out[16])
{
    struct tf_shm_region *rw = (struct tf_shm_region *)r;
    uint64_t u[2] = {0, 0};
    if (dev < TF_SHM_MAX_DEVICES) {
        u[0] = atomic_load_explicit(&rw->dev[dev].uuid[0], memory_order_relaxed);
        u[1] = atomic_load_explicit(&rw->dev[dev].uuid[1], memory_order_relaxed);
    }
    memcpy(out, u, 16);
}

void tf_shm_uuid_format(const uint8_t u[16], char *buf, size_t len)
{
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int tf_shm_uuid_parse(const char *s, uint8_t out[16])
{
    if (!s)
        return TF_EINVAL;
    if (!strncmp(s, "GPU-", 4))
        s += 4;
    int n = 0, hi = -1;
    for (; *s; s++) {
        if (*s == '-')
            continue;
        int v = hexval(*s);
        if (v < 0 || n >= 16)
            return TF_EINVAL;
        if (hi < 0) {
            hi = v;
        } else {
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return n == 16 && hi < 0 ? 0 : TF_EINVAL;
}
