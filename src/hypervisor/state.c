/* SPDX-License-Identifier: Apache-2.0
 *
 * The SQLite state store (see state.h).
 */
#include "hypervisor/state.h"

#include "hypervisor/proc.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tf_hv_state {
    pthread_mutex_t mu;
    sqlite3 *db;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS devices(uuid TEXT PRIMARY KEY, idx INTEGER NOT NULL,"
    " name TEXT NOT NULL, model TEXT NOT NULL, vendor TEXT NOT NULL,"
    " tflops_milli INTEGER NOT NULL, vram_bytes INTEGER NOT NULL, present INTEGER NOT NULL,"
    " seen_ms INTEGER NOT NULL, numa INTEGER NOT NULL DEFAULT -1);"
    "CREATE TABLE IF NOT EXISTS workloads(name TEXT PRIMARY KEY, namespace TEXT NOT NULL,"
    " isolation TEXT NOT NULL, qos TEXT NOT NULL, gpu_count INTEGER NOT NULL,"
    " gpu_model TEXT NOT NULL, tflops_request INTEGER NOT NULL, tflops_limit INTEGER NOT NULL,"
    " percent_request INTEGER NOT NULL, percent_limit INTEGER NOT NULL,"
    " vram_request INTEGER NOT NULL, vram_limit INTEGER NOT NULL, remote TEXT NOT NULL,"
    " shm_path TEXT NOT NULL DEFAULT '', worker_pid INTEGER NOT NULL DEFAULT 0,"
    " worker_addr TEXT NOT NULL DEFAULT '', created_ms INTEGER NOT NULL,"
    " lease INTEGER NOT NULL DEFAULT 0, lease_ms INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS allocations(workload TEXT NOT NULL REFERENCES workloads(name)"
    " ON DELETE CASCADE, ord INTEGER NOT NULL, uuid TEXT NOT NULL,"
    " tflops_milli INTEGER NOT NULL, vram_bytes INTEGER NOT NULL,"
    " tflops_limit INTEGER NOT NULL, vram_limit INTEGER NOT NULL,"
    " compute_limit_bp INTEGER NOT NULL, PRIMARY KEY(workload, ord));"
    "CREATE INDEX IF NOT EXISTS allocations_uuid ON allocations(uuid);"
    "CREATE TABLE IF NOT EXISTS processes(workload TEXT NOT NULL REFERENCES workloads(name)"
    " ON DELETE CASCADE, pid INTEGER NOT NULL, start_ticks INTEGER NOT NULL,"
    " PRIMARY KEY(workload, pid));"
    "CREATE TABLE IF NOT EXISTS counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "PRAGMA user_version = 3;";

/* Version 1 stores lacked the lease columns. */
static const char migrate_1_2[] =
    "ALTER TABLE workloads ADD COLUMN lease INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE workloads ADD COLUMN lease_ms INTEGER NOT NULL DEFAULT 0;"
    "PRAGMA user_version = 2;";

/* Version 2 stores lacked the devices' NUMA node. */
static const char migrate_2_3[] = "ALTER TABLE devices ADD COLUMN numa INTEGER NOT NULL DEFAULT -1;"
                                  "PRAGMA user_version = 3;";

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int exec_sql(struct tf_hv_state *st, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(st->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        tf_errf(err, errlen, "state db: %s", msg ? msg : sqlite3_errmsg(st->db));
        sqlite3_free(msg);
        return TF_EIO;
    }
    return 0;
}

static int prep(struct tf_hv_state *st, const char *sql, sqlite3_stmt **s, char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(st->db, sql, -1, s, NULL) != SQLITE_OK) {
        tf_errf(err, errlen, "state db: %s", sqlite3_errmsg(st->db));
        *s = NULL;
        return TF_EIO;
    }
    return 0;
}

static int step_done(struct tf_hv_state *st, sqlite3_stmt *s, char *err, size_t errlen)
{
    int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) {
        tf_errf(err, errlen, "state db: %s", sqlite3_errmsg(st->db));
        return TF_EIO;
    }
    return 0;
}

static void col_text(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    tf_strlcpy(dst, t ? (const char *)t : "", cap);
}

int tf_hv_state_open(const char *path, struct tf_hv_state **out, char *err, size_t errlen)
{
    *out = NULL;
    struct tf_hv_state *st = calloc(1, sizeof(*st));
    if (!st)
        return TF_ENOMEM;
    pthread_mutex_init(&st->mu, NULL);
    if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        tf_errf(err, errlen, "state db %s: %s", path,
                st->db ? sqlite3_errmsg(st->db) : "cannot open");
        tf_hv_state_close(st);
        return TF_EIO;
    }
    sqlite3_busy_timeout(st->db, 10000);
    int rc = exec_sql(st,
                      "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                      " PRAGMA foreign_keys=ON;",
                      err, errlen);
    if (!rc)
        rc = exec_sql(st, "BEGIN IMMEDIATE", err, errlen);
    if (!rc) {
        sqlite3_stmt *v;
        int version = 0;
        if (prep(st, "PRAGMA user_version", &v, NULL, 0) == 0) {
            if (sqlite3_step(v) == SQLITE_ROW)
                version = sqlite3_column_int(v, 0);
            sqlite3_finalize(v);
        }
        rc = version == 1 ? exec_sql(st, migrate_1_2, err, errlen) : 0;
        if (!rc && (version == 1 || version == 2))
            rc = exec_sql(st, migrate_2_3, err, errlen);
        if (!rc)
            rc = exec_sql(st, schema, err, errlen);
        if (!rc)
            rc = exec_sql(st, "COMMIT", err, errlen);
        else
            exec_sql(st, "ROLLBACK", NULL, 0);
    }
    if (rc) {
        tf_hv_state_close(st);
        return rc;
    }
    *out = st;
    return 0;
}

void tf_hv_state_close(struct tf_hv_state *st)
{
    if (!st)
        return;
    sqlite3_close(st->db);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* Runs FN inside BEGIN IMMEDIATE ... COMMIT under the mutex; rolls back on error. */
static int in_txn(struct tf_hv_state *st, int (*fn)(struct tf_hv_state *, void *, char *, size_t),
                  void *arg, char *err, size_t errlen)
{
    pthread_mutex_lock(&st->mu);
    int rc = exec_sql(st, "BEGIN IMMEDIATE", err, errlen);
    if (!rc) {
        rc = fn(st, arg, err, errlen);
        if (!rc)
            rc = exec_sql(st, "COMMIT", err, errlen);
        if (rc)
            (void)exec_sql(st, "ROLLBACK", NULL, 0);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

struct sync_args {
    const struct tf_hv_device *devs;
    int n;
};

static int do_sync(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    struct sync_args *a = arg;
    int rc = exec_sql(st, "UPDATE devices SET present = 0", err, errlen);
    sqlite3_stmt *s = NULL;
    if (!rc)
        rc = prep(st,
                  "INSERT INTO devices(uuid, idx, name, model, vendor, tflops_milli, vram_bytes,"
                  " present, seen_ms, numa) VALUES (?,?,?,?,?,?,?,1,?,?) ON CONFLICT(uuid) DO"
                  " UPDATE SET idx=excluded.idx, name=excluded.name, model=excluded.model,"
                  " vendor=excluded.vendor, tflops_milli=excluded.tflops_milli,"
                  " vram_bytes=excluded.vram_bytes, present=1, seen_ms=excluded.seen_ms,"
                  " numa=excluded.numa",
                  &s, err, errlen);
    for (int i = 0; !rc && i < a->n; i++) {
        const struct tf_hv_device *d = &a->devs[i];
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, d->uuid, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 2, d->index);
        sqlite3_bind_text(s, 3, d->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, d->model, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 5, d->vendor, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 6, d->tflops_milli);
        sqlite3_bind_int64(s, 7, d->vram_bytes);
        sqlite3_bind_int64(s, 8, now_ms());
        sqlite3_bind_int(s, 9, d->numa);
        rc = step_done(st, s, err, errlen);
    }
    sqlite3_finalize(s);
    return rc;
}

int tf_hv_state_sync_devices(struct tf_hv_state *st, const struct tf_hv_device *devs, int n,
                             char *err, size_t errlen)
{
    struct sync_args a = {devs, n};
    return in_txn(st, do_sync, &a, err, errlen);
}

/* Reads devices with allocation sums; caller holds the mutex. */
static int read_devices(struct tf_hv_state *st, struct tf_hv_device *out, int max, int *n,
                        bool present_only, char *err, size_t errlen)
{
    sqlite3_stmt *s;
    int rc = prep(st,
                  "SELECT d.uuid, d.idx, d.name, d.model, d.vendor, d.tflops_milli, d.vram_bytes,"
                  " d.present, COALESCE(sum(a.tflops_milli), 0), COALESCE(sum(a.vram_bytes), 0),"
                  " count(a.workload), min(w.isolation), d.numa FROM devices d"
                  " LEFT JOIN allocations a ON a.uuid = d.uuid"
                  " LEFT JOIN workloads w ON w.name = a.workload"
                  " WHERE d.present >= ? GROUP BY d.uuid ORDER BY d.present DESC, d.idx",
                  &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int(s, 1, present_only ? 1 : 0);
    *n = 0;
    while (sqlite3_step(s) == SQLITE_ROW && *n < max) {
        struct tf_hv_device *d = &out[(*n)++];
        memset(d, 0, sizeof(*d));
        col_text(s, 0, d->uuid, sizeof(d->uuid));
        d->index = sqlite3_column_int(s, 1);
        col_text(s, 2, d->name, sizeof(d->name));
        col_text(s, 3, d->model, sizeof(d->model));
        col_text(s, 4, d->vendor, sizeof(d->vendor));
        d->tflops_milli = sqlite3_column_int64(s, 5);
        d->vram_bytes = sqlite3_column_int64(s, 6);
        d->present = sqlite3_column_int(s, 7) != 0;
        d->alloc_tflops_milli = sqlite3_column_int64(s, 8);
        d->alloc_vram_bytes = sqlite3_column_int64(s, 9);
        d->nworkloads = sqlite3_column_int(s, 10);
        const unsigned char *iso = sqlite3_column_text(s, 11);
        d->mode = TF_HV_SOFT;
        if (iso)
            (void)tf_hv_isolation_parse((const char *)iso, &d->mode);
        d->numa = sqlite3_column_int(s, 12);
    }
    sqlite3_finalize(s);
    return 0;
}

int tf_hv_state_devices(struct tf_hv_state *st, struct tf_hv_device *out, int max, int *n,
                        char *err, size_t errlen)
{
    pthread_mutex_lock(&st->mu);
    int rc = read_devices(st, out, max, n, false, err, errlen);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

struct create_args {
    const struct tf_hv_request *r;
    struct tf_hv_workload *out;
    struct tf_dynbuf *reasons;
    bool dry_run; /* placement only; nothing is written */
};

static int insert_process(struct tf_hv_state *st, const char *name, int pid, int64_t start,
                          char *err, size_t errlen)
{
    sqlite3_stmt *s;
    int rc = prep(st,
                  "INSERT INTO processes(workload, pid, start_ticks) VALUES (?,?,?)"
                  " ON CONFLICT(workload, pid) DO UPDATE SET start_ticks=excluded.start_ticks",
                  &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, pid);
    sqlite3_bind_int64(s, 3, start);
    rc = step_done(st, s, err, errlen);
    sqlite3_finalize(s);
    return rc;
}

struct held_strings {
    char workload[TF_HV_NAME_MAX], ns[TF_HV_NAME_MAX], uuid[64];
};

/* Every GPU share recorded, grouped by workload in GPU order (caller holds the mutex). *OUT
 * and *STRS are malloc'ed (the strings OUT points to). */
static int read_held(struct tf_hv_state *st, struct tf_hv_held **out, struct held_strings **strs,
                     int *n, char *err, size_t errlen)
{
    sqlite3_stmt *s;
    int rc = prep(st,
                  "SELECT w.name, w.namespace, w.isolation, a.uuid, a.tflops_milli, a.vram_bytes,"
                  " a.tflops_limit, a.vram_limit FROM allocations a JOIN workloads w"
                  " ON w.name = a.workload ORDER BY w.name, a.ord",
                  &s, err, errlen);
    if (rc)
        return rc;
    int cap = 0;
    *n = 0;
    *out = NULL;
    *strs = NULL;
    while (sqlite3_step(s) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            struct tf_hv_held *h = realloc(*out, (size_t)cap * sizeof(*h));
            struct held_strings *hs = h ? realloc(*strs, (size_t)cap * sizeof(*hs)) : NULL;
            if (h)
                *out = h;
            if (hs)
                *strs = hs;
            if (!h || !hs) {
                sqlite3_finalize(s);
                return TF_ENOMEM;
            }
        }
        struct held_strings *x = &(*strs)[*n];
        col_text(s, 0, x->workload, sizeof(x->workload));
        col_text(s, 1, x->ns, sizeof(x->ns));
        col_text(s, 3, x->uuid, sizeof(x->uuid));
        struct tf_hv_held *h = &(*out)[*n];
        char iso[16];
        col_text(s, 2, iso, sizeof(iso));
        h->isolation = TF_HV_SOFT;
        (void)tf_hv_isolation_parse(iso, &h->isolation);
        h->tflops_milli = sqlite3_column_int64(s, 4);
        h->vram_bytes = sqlite3_column_int64(s, 5);
        h->tflops_limit = sqlite3_column_int64(s, 6);
        h->vram_limit = sqlite3_column_int64(s, 7);
        (*n)++;
    }
    sqlite3_finalize(s);
    /* Pointers last: the arrays may have moved while growing. */
    for (int i = 0; i < *n; i++) {
        (*out)[i].workload = (*strs)[i].workload;
        (*out)[i].ns = (*strs)[i].ns;
        (*out)[i].uuid = (*strs)[i].uuid;
    }
    return 0;
}

static int do_create(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    struct create_args *a = arg;
    const struct tf_hv_request *r = a->r;
    sqlite3_stmt *s;
    int rc = prep(st, "SELECT 1 FROM workloads WHERE name = ?", &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
    bool exists = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    if (exists) {
        tf_errf(err, errlen, "workload \"%s\" already exists", r->name);
        return TF_EEXIST;
    }
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    struct tf_hv_gpu_view *views = calloc(TF_HV_MAX_DEVICES, sizeof(*views));
    struct tf_hv_grant grants[TF_HV_MAX_GPUS];
    struct tf_hv_held *held = NULL;
    struct held_strings *hs = NULL;
    int n = 0, nheld = 0;
    if (!devs || !views) {
        rc = TF_ENOMEM;
        goto out;
    }
    if ((rc = read_devices(st, devs, TF_HV_MAX_DEVICES, &n, true, err, errlen)))
        goto out;
    for (int i = 0; i < n; i++) {
        views[i].uuid = devs[i].uuid;
        views[i].model = devs[i].model;
        views[i].index = devs[i].index;
        views[i].tflops_milli = devs[i].tflops_milli;
        views[i].vram_bytes = devs[i].vram_bytes;
        views[i].alloc_tflops_milli = devs[i].alloc_tflops_milli;
        views[i].alloc_vram_bytes = devs[i].alloc_vram_bytes;
        views[i].nworkloads = devs[i].nworkloads;
        views[i].mode = devs[i].mode;
    }
    if ((rc = read_held(st, &held, &hs, &nheld, err, errlen)))
        goto out;
    if ((rc = tf_hv_place(r, views, n, held, nheld, grants, a->reasons))) {
        if (rc == TF_ENOSPC)
            tf_errf(err, errlen, "workload \"%s\" is unschedulable on this machine", r->name);
        goto out;
    }
    if (a->dry_run)
        goto out;
    if ((rc = prep(st,
                   "INSERT INTO workloads(name, namespace, isolation, qos, gpu_count, gpu_model,"
                   " tflops_request, tflops_limit, percent_request, percent_limit, vram_request,"
                   " vram_limit, remote, created_ms, lease, lease_ms)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   &s, err, errlen)))
        goto out;
    int64_t created = now_ms();
    sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, r->ns, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, tf_hv_isolation_name(r->isolation), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, r->qos, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 5, r->gpu_count);
    sqlite3_bind_text(s, 6, r->gpu_model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, r->tflops_request);
    sqlite3_bind_int64(s, 8, r->tflops_limit);
    sqlite3_bind_int(s, 9, r->percent_request);
    sqlite3_bind_int(s, 10, r->percent_limit);
    sqlite3_bind_int64(s, 11, r->vram_request);
    sqlite3_bind_int64(s, 12, r->vram_limit);
    sqlite3_bind_text(s, 13, r->remote, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 14, created);
    sqlite3_bind_int(s, 15, r->lease ? 1 : 0);
    sqlite3_bind_int64(s, 16, r->lease ? created : 0);
    rc = step_done(st, s, err, errlen);
    sqlite3_finalize(s);
    if (rc)
        goto out;
    if ((rc = prep(st,
                   "INSERT INTO allocations(workload, ord, uuid, tflops_milli, vram_bytes,"
                   " tflops_limit, vram_limit, compute_limit_bp) VALUES (?,?,?,?,?,?,?,?)",
                   &s, err, errlen)))
        goto out;
    for (int k = 0; !rc && k < r->gpu_count; k++) {
        const struct tf_hv_grant *g = &grants[k];
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, r->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 2, k);
        sqlite3_bind_text(s, 3, views[g->gpu].uuid, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, g->tflops_milli);
        sqlite3_bind_int64(s, 5, g->vram_bytes);
        sqlite3_bind_int64(s, 6, g->tflops_limit);
        sqlite3_bind_int64(s, 7, g->vram_limit);
        sqlite3_bind_int(s, 8, g->compute_limit_bp);
        rc = step_done(st, s, err, errlen);
    }
    sqlite3_finalize(s);
    if (!rc && r->pid > 0)
        rc = insert_process(st, r->name, r->pid, tf_hv_proc_start_ticks(r->pid), err, errlen);
    if (!rc && a->out) {
        memset(a->out, 0, sizeof(*a->out));
        a->out->req = *r;
        a->out->created_ms = created;
        a->out->nalloc = r->gpu_count;
        for (int k = 0; k < r->gpu_count; k++) {
            struct tf_hv_alloc *al = &a->out->alloc[k];
            tf_strlcpy(al->uuid, views[grants[k].gpu].uuid, sizeof(al->uuid));
            al->tflops_milli = grants[k].tflops_milli;
            al->vram_bytes = grants[k].vram_bytes;
            al->tflops_limit = grants[k].tflops_limit;
            al->vram_limit = grants[k].vram_limit;
            al->compute_limit_bp = grants[k].compute_limit_bp;
        }
        if (r->pid > 0) {
            a->out->npids = 1;
            a->out->pids[0].pid = r->pid;
            a->out->pids[0].start_ticks = tf_hv_proc_start_ticks(r->pid);
        }
    }
out:
    free(devs);
    free(views);
    free(held);
    free(hs);
    return rc;
}

int tf_hv_state_create(struct tf_hv_state *st, const struct tf_hv_request *r,
                       struct tf_hv_workload *out, struct tf_dynbuf *reasons, char *err,
                       size_t errlen)
{
    struct create_args a = {r, out, reasons, false};
    int rc = in_txn(st, do_create, &a, err, errlen);
    tf_hv_state_counter_add(st, rc == 0 ? "alloc_success" : "alloc_fail", 1);
    return rc;
}

int tf_hv_state_check(struct tf_hv_state *st, const struct tf_hv_request *r,
                      struct tf_dynbuf *reasons, char *err, size_t errlen)
{
    struct create_args a = {r, NULL, reasons, true};
    return in_txn(st, do_create, &a, err, errlen);
}

static int do_delete(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    const char *name = arg;
    sqlite3_stmt *s;
    int rc = prep(st, "DELETE FROM workloads WHERE name = ?", &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    rc = step_done(st, s, err, errlen);
    sqlite3_finalize(s);
    if (!rc && sqlite3_changes(st->db) == 0) {
        tf_errf(err, errlen, "workload \"%s\" not found", name);
        rc = TF_ENOENT;
    }
    return rc;
}

int tf_hv_state_delete(struct tf_hv_state *st, const char *name, char *err, size_t errlen)
{
    return in_txn(st, do_delete, (void *)name, err, errlen);
}

/* Loads allocations and processes of W (caller holds the mutex). */
static int load_children(struct tf_hv_state *st, struct tf_hv_workload *w, char *err, size_t errlen)
{
    sqlite3_stmt *s;
    int rc = prep(st,
                  "SELECT uuid, tflops_milli, vram_bytes, tflops_limit, vram_limit,"
                  " compute_limit_bp FROM allocations WHERE workload = ? ORDER BY ord",
                  &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, w->req.name, -1, SQLITE_STATIC);
    w->nalloc = 0;
    while (sqlite3_step(s) == SQLITE_ROW && w->nalloc < TF_HV_MAX_GPUS) {
        struct tf_hv_alloc *a = &w->alloc[w->nalloc++];
        col_text(s, 0, a->uuid, sizeof(a->uuid));
        a->tflops_milli = sqlite3_column_int64(s, 1);
        a->vram_bytes = sqlite3_column_int64(s, 2);
        a->tflops_limit = sqlite3_column_int64(s, 3);
        a->vram_limit = sqlite3_column_int64(s, 4);
        a->compute_limit_bp = sqlite3_column_int(s, 5);
    }
    sqlite3_finalize(s);
    if ((rc = prep(st, "SELECT pid, start_ticks FROM processes WHERE workload = ? ORDER BY pid", &s,
                   err, errlen)))
        return rc;
    sqlite3_bind_text(s, 1, w->req.name, -1, SQLITE_STATIC);
    w->npids = 0;
    while (sqlite3_step(s) == SQLITE_ROW && w->npids < TF_HV_MAX_PIDS) {
        w->pids[w->npids].pid = sqlite3_column_int(s, 0);
        w->pids[w->npids].start_ticks = sqlite3_column_int64(s, 1);
        w->npids++;
    }
    sqlite3_finalize(s);
    return 0;
}

#define WL_COLS                                                                                    \
    "name, namespace, isolation, qos, gpu_count, gpu_model, tflops_request, tflops_limit,"         \
    " percent_request, percent_limit, vram_request, vram_limit, remote, shm_path, worker_pid,"     \
    " worker_addr, created_ms, lease, lease_ms"

static void read_workload_row(sqlite3_stmt *s, struct tf_hv_workload *w)
{
    memset(w, 0, sizeof(*w));
    char iso[16];
    col_text(s, 0, w->req.name, sizeof(w->req.name));
    col_text(s, 1, w->req.ns, sizeof(w->req.ns));
    col_text(s, 2, iso, sizeof(iso));
    (void)tf_hv_isolation_parse(iso, &w->req.isolation);
    col_text(s, 3, w->req.qos, sizeof(w->req.qos));
    w->req.gpu_count = sqlite3_column_int(s, 4);
    col_text(s, 5, w->req.gpu_model, sizeof(w->req.gpu_model));
    w->req.tflops_request = sqlite3_column_int64(s, 6);
    w->req.tflops_limit = sqlite3_column_int64(s, 7);
    w->req.percent_request = sqlite3_column_int(s, 8);
    w->req.percent_limit = sqlite3_column_int(s, 9);
    w->req.vram_request = sqlite3_column_int64(s, 10);
    w->req.vram_limit = sqlite3_column_int64(s, 11);
    col_text(s, 12, w->req.remote, sizeof(w->req.remote));
    col_text(s, 13, w->shm_path, sizeof(w->shm_path));
    w->worker_pid = sqlite3_column_int(s, 14);
    col_text(s, 15, w->worker_addr, sizeof(w->worker_addr));
    w->created_ms = sqlite3_column_int64(s, 16);
    w->req.lease = sqlite3_column_int(s, 17) != 0;
    w->lease_ms = sqlite3_column_int64(s, 18);
}

int tf_hv_state_get(struct tf_hv_state *st, const char *name, struct tf_hv_workload *out, char *err,
                    size_t errlen)
{
    pthread_mutex_lock(&st->mu);
    sqlite3_stmt *s;
    int rc = prep(st, "SELECT " WL_COLS " FROM workloads WHERE name = ?", &s, err, errlen);
    if (!rc) {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW) {
            read_workload_row(s, out);
        } else {
            tf_errf(err, errlen, "workload \"%s\" not found", name);
            rc = TF_ENOENT;
        }
        sqlite3_finalize(s);
    }
    if (!rc)
        rc = load_children(st, out, err, errlen);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int tf_hv_state_list(struct tf_hv_state *st, struct tf_hv_workload **out, int *n, char *err,
                     size_t errlen)
{
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&st->mu);
    sqlite3_stmt *s;
    int rc =
        prep(st, "SELECT " WL_COLS " FROM workloads ORDER BY created_ms, name", &s, err, errlen);
    int cap = 0;
    while (!rc && sqlite3_step(s) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            struct tf_hv_workload *p = realloc(*out, (size_t)cap * sizeof(*p));
            if (!p) {
                rc = TF_ENOMEM;
                break;
            }
            *out = p;
        }
        read_workload_row(s, &(*out)[(*n)++]);
    }
    sqlite3_finalize(s);
    for (int i = 0; !rc && i < *n; i++)
        rc = load_children(st, &(*out)[i], err, errlen);
    pthread_mutex_unlock(&st->mu);
    if (rc) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

struct proc_args {
    const char *name;
    int pid;
    int64_t start;
    bool add;
};

static int do_process(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    struct proc_args *a = arg;
    sqlite3_stmt *s;
    int rc = prep(st,
                  "SELECT (SELECT count(*) FROM processes WHERE workload = ?1)"
                  " FROM workloads WHERE name = ?1",
                  &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, a->name, -1, SQLITE_STATIC);
    int count = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        count = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (count < 0) {
        tf_errf(err, errlen, "workload \"%s\" not found", a->name);
        return TF_ENOENT;
    }
    if (!a->add) {
        if ((rc =
                 prep(st, "DELETE FROM processes WHERE workload = ? AND pid = ?", &s, err, errlen)))
            return rc;
        sqlite3_bind_text(s, 1, a->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 2, a->pid);
        rc = step_done(st, s, err, errlen);
        sqlite3_finalize(s);
        return rc;
    }
    if (count >= TF_HV_MAX_PIDS) {
        tf_errf(err, errlen, "workload \"%s\" already has %d processes", a->name, count);
        return TF_ERANGE;
    }
    return insert_process(st, a->name, a->pid, a->start, err, errlen);
}

int tf_hv_state_add_process(struct tf_hv_state *st, const char *name, int pid, int64_t start_ticks,
                            char *err, size_t errlen)
{
    struct proc_args a = {name, pid, start_ticks < 0 ? tf_hv_proc_start_ticks(pid) : start_ticks,
                          true};
    return in_txn(st, do_process, &a, err, errlen);
}

int tf_hv_state_remove_process(struct tf_hv_state *st, const char *name, int pid, char *err,
                               size_t errlen)
{
    struct proc_args a = {name, pid, 0, false};
    return in_txn(st, do_process, &a, err, errlen);
}

struct runtime_args {
    const char *name, *shm, *addr;
    int wpid;
};

static int do_runtime(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    struct runtime_args *a = arg;
    sqlite3_stmt *s;
    int rc = prep(st, "UPDATE workloads SET shm_path=?, worker_pid=?, worker_addr=? WHERE name=?",
                  &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, a->shm ? a->shm : "", -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 2, a->wpid);
    sqlite3_bind_text(s, 3, a->addr ? a->addr : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, a->name, -1, SQLITE_STATIC);
    rc = step_done(st, s, err, errlen);
    sqlite3_finalize(s);
    if (!rc && sqlite3_changes(st->db) == 0) {
        tf_errf(err, errlen, "workload \"%s\" not found", a->name);
        rc = TF_ENOENT;
    }
    return rc;
}

int tf_hv_state_set_runtime(struct tf_hv_state *st, const char *name, const char *shm_path,
                            int worker_pid, const char *worker_addr, char *err, size_t errlen)
{
    struct runtime_args a = {name, shm_path, worker_addr, worker_pid};
    return in_txn(st, do_runtime, &a, err, errlen);
}

static int do_heartbeat(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    const char *name = arg;
    sqlite3_stmt *s;
    int rc = prep(st, "SELECT lease FROM workloads WHERE name = ?", &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int lease = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
        lease = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (lease < 0) {
        tf_errf(err, errlen, "workload \"%s\" not found", name);
        return TF_ENOENT;
    }
    if (!lease) {
        tf_errf(err, errlen, "workload \"%s\" is not leased (its processes keep it)", name);
        return TF_EINVAL;
    }
    if ((rc = prep(st, "UPDATE workloads SET lease_ms = ? WHERE name = ?", &s, err, errlen)))
        return rc;
    sqlite3_bind_int64(s, 1, now_ms());
    sqlite3_bind_text(s, 2, name, -1, SQLITE_STATIC);
    rc = step_done(st, s, err, errlen);
    sqlite3_finalize(s);
    return rc;
}

int tf_hv_state_heartbeat(struct tf_hv_state *st, const char *name, char *err, size_t errlen)
{
    return in_txn(st, do_heartbeat, (void *)name, err, errlen);
}

struct counter_args {
    const char *name;
    int64_t delta;
};

static int do_counter(struct tf_hv_state *st, void *arg, char *err, size_t errlen)
{
    struct counter_args *a = arg;
    sqlite3_stmt *s;
    int rc = prep(st,
                  "INSERT INTO counters(name, value) VALUES (?, ?) ON CONFLICT(name)"
                  " DO UPDATE SET value = value + excluded.value",
                  &s, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(s, 1, a->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, a->delta);
    rc = step_done(st, s, err, errlen);
    sqlite3_finalize(s);
    return rc;
}

int tf_hv_state_counter_add(struct tf_hv_state *st, const char *name, int64_t delta)
{
    struct counter_args a = {name, delta};
    char err[256];
    int rc = in_txn(st, do_counter, &a, err, sizeof(err));
    if (rc)
        tf_log(TF_LOG_WARN, "state", "counter %s: %s", name, err);
    return rc;
}

int64_t tf_hv_state_counter(struct tf_hv_state *st, const char *name)
{
    pthread_mutex_lock(&st->mu);
    sqlite3_stmt *s;
    int64_t v = 0;
    if (prep(st, "SELECT value FROM counters WHERE name = ?", &s, NULL, 0) == 0) {
        sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(s) == SQLITE_ROW)
            v = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    pthread_mutex_unlock(&st->mu);
    return v;
}
