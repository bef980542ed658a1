/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the scheduler extender (extender*.c): the extender object and the helpers its
 * files share. Nothing outside src/controller/extender*.c may include it.
 *
 *   extender.c        lifecycle, state locking, informer handlers, autoscaler calls, dispatch
 *   extender_state.c  the allocator's state built from GPU, pool, template, quota, pod objects
 *   extender_verbs.c  /filter, /prioritize (with QoS preemption) and /bind
 *   extender_memo.c   the last /filter's answer, for the /prioritize after it
 *   extender_ledger.c the pods holding GPUs, as the pod informer reports them
 *   extender_gpus.c   the GPUs, as the GPU informer reports them
 */
#ifndef TF_CONTROLLER_EXTENDER_INT_H
#define TF_CONTROLLER_EXTENDER_INT_H

#include "controller/extender.h"
#include "controller/allocsig.h"
#include "controller/extender_gang.h"

#include "controller/extender_codec.h"
#include "controller/podreq.h"
#include "core/alloc.h"
#include "core/alloc_index.h"
#include "core/strmap.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define ANN_GPU_IDS "tensor-fusion.ai/gpu-ids"
#define ANN_CONTAINER_GPUS "tensor-fusion.ai/container-gpus"
#define LABEL_GPUPOOL "tensor-fusion.ai/gpupool"

struct tf_extender {
    struct tf_k8s_client *c;
    struct tf_k8s_recorder *events; /* its Events, written off the verbs' threads */
    struct tf_extender_sources src;
    char *default_pool;
    enum tf_iso_policy policy;
    pthread_rwlock_t lock; /* guards cluster, alloc, quotas */
    struct tf_cluster *cluster;
    struct tf_alloc *alloc;
    struct tf_quota_set *quotas;
    struct tf_alloc_index *index; /* verdicts of filter/prioritize (core/alloc_index.h) over
                                     ALLOC: replaced with it; guarded by index_lock too */
    pthread_mutex_t index_lock;   /* serialises index calls (under the read lock) */
    atomic_bool dirty;
    pthread_mutex_t inflight_lock; /* guards inflight */
    json_object *inflight;         /* "ns/name" -> {"node", "ids", "pod", "at", "anns"}:
                                      reserved by a bind, not yet seen with gpu-ids in the pod
                                      cache (guarded by inflight_lock, as the next three) */
    double sweep_next;             /* when unconfirmed binds are checked again */
    uint64_t sweep_relists;        /* the pod informer's relists at the last check */
    bool sweeping;                 /* a check runs */
    json_object *preempting;       /* "ns/name" -> {"at": s, "node": n, "msg": m}: evictions started
                                      for that pod (guarded by inflight_lock) */
    struct tf__ledger *ledger;     /* the pods holding GPUs per the API (own lock) */
    struct tf__gpus *gpus;         /* the GPUs per the API (own lock) */
    struct tf_ext_gangs *gangs;    /* gang groups with members waiting (extender_gang.h) */
    const struct tf_allocsig *sig; /* signs and checks allocations (borrowed), or NULL */
    pthread_mutex_t scratch_lock;  /* guards scratch: request buffers kept for the next one */
    struct {
        void *p;
        size_t size;
    } scratch[4];
    json_object *loaded[3];      /* pools, templates, quotas of the last tf_extender_load: those
                                    of rebuilds when no informer feeds them (guarded by lock) */
    pthread_mutex_t memo_lock;   /* guards memo */
    struct tf__ext_memo *memo;   /* the last /filter's answer (extender_memo.c), or NULL */
    struct tf__ext_cands *cands; /* the last /filter's candidates (extender_memo.c), or NULL */
    _Atomic uint64_t memo_hits;  /* prioritize calls that used it whole */
    _Atomic uint64_t cands_hits; /* filter calls that took their candidates from CANDS */
};

/* Seconds a started preemption is left to take effect before the same pod may plan again. */
#define PREEMPT_HOLD_S 30

struct req_buf {
    struct tf_podreq pr;
    struct tf_alloc_request req;
    struct tf_alloc_container containers[TF_PODREQ_MAX_CONTAINERS];
};

/* extender.c */
/* Fills B->req from B->pr (strings stay borrowed from B->pr). */
void tf__ext_to_alloc(struct req_buf *b);
/* Takes the read (write) lock with a current state, rebuilding first when dirty. False (and
 * no lock held) when there is no state at all. */
bool tf__ext_read_state(struct tf_extender *x);
bool tf__ext_write_state(struct tf_extender *x);
/* Releases POD's GPUs and forgets its in-flight bind (takes the locks itself). */
void tf__ext_release_pod(struct tf_extender *x, json_object *pod);
/* Monotonic seconds. */
double tf__ext_now(void);

/* extender_state.c */
/* True unless POD is terminating, Succeeded or Failed. */
bool tf__ext_pod_live(json_object *pod);
/* Builds a fresh cluster + allocator from the arrays (borrowed) and swaps it in; the caller
 * holds the write lock. 0 or TF_ENOMEM. */
int tf__ext_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                 json_object *templates, json_object *quotas, json_object *pods);
/* The state rebuilt from the informers' inventory (or the last tf_extender_load's, when no
 * informer feeds one), the ledger and the in-flight binds; the caller holds the write lock.
 * 0 or TF_ENOMEM (the old state stays). */
int tf__ext_rebuild(struct tf_extender *x);

/* extender_ledger.c: a table of owned (malloc'd) records keyed by a string kept inside each
 * record, dense (a removed record's place is taken by the last one): the storage of the ledger
 * and of the GPU table. Not thread-safe (their owners lock). */
struct tf__rectab {
    struct tf_strmap by_key; /* key -> index */
    void **v;                /* the records */
    const char **keys;       /* each record's key, inside it */
    uint32_t n, cap;
};
/* The record under KEY (LEN bytes), or NULL. */
void *tf__rectab_get(const struct tf__rectab *t, const char *key, size_t len);
/* Stores REC under KEY (NUL-terminated, inside REC), replacing and freeing a record of the same
 * key. 0, or TF_ENOMEM (REC not stored: the caller frees it). */
int tf__rectab_put(struct tf__rectab *t, const char *key, void *rec);
/* Removes and frees the record under KEY; false when there is none. */
bool tf__rectab_del(struct tf__rectab *t, const char *key, size_t len);
/* Frees every record (CLEAR keeps the array for reuse, FREE does not). */
void tf__rectab_clear(struct tf__rectab *t);
void tf__rectab_free(struct tf__rectab *t);

/* extender_ledger.c: the pods that hold GPUs according to the API (live, bound, with
 * tensor-fusion.ai/gpu-ids), each read once when the pod informer reports it (a status
 * update that leaves its metadata and spec as they were is not read again), so that a
 * rebuild restores them without reading JSON. Thread-safe (own lock). */
struct tf__ledger;
struct tf__ledger *tf__ledger_new(void);
void tf__ledger_destroy(struct tf__ledger *l);
/* POD was added (OLD NULL) or changed from OLD: recorded, updated or forgotten. */
void tf__ledger_pod(struct tf__ledger *l, json_object *old, json_object *pod);
/* From now on the ledger keeps only pods whose allocation signature verifies with SIG
 * (borrowed; NULL: every recorded allocation). */
void tf__ledger_set_sig(struct tf__ledger *l, const struct tf_allocsig *sig);
void tf__ledger_del(struct tf__ledger *l, const char *ns, const char *name);
/* Replaces the content with the pods of the array PODS (borrowed, may be NULL). */
void tf__ledger_load(struct tf__ledger *l, json_object *pods);
uint32_t tf__ledger_count(struct tf__ledger *l);
/* Restores every recorded pod on A (warnings for those that do not fit); how many. */
uint32_t tf__ledger_restore(struct tf__ledger *l, struct tf_alloc *a);
/* Restores one pod on the GPUs of the comma list IDS on NODE, warning when it cannot. */
int tf__ext_restore(struct tf_alloc *a, const char *ns, const char *name,
                    const struct tf_alloc_request *req, const char *node, const char *ids);

/* extender_gpus.c: the GPU table, what each GPU object says that scheduling needs, read
 * once per change of the object (by the GPU informer's handlers, or from tf_extender_load's
 * array). Records keep the table's order: insertion, a deleted one's place taken by the
 * last. Thread-safe (LOCK; hold it to read T). */
struct tf__gpu_rec {
    const struct tf_gpu_model *model;
    int64_t tflops, vram; /* capacity; 0 = the model's */
    int32_t index;        /* -1: not given (position on the node) */
    int16_t numa;
    uint8_t phase;
    uint8_t mode; /* enum tf_isolation: the node's static mode (status.isolationMode), or UNSET */
    const char *node, *uuid, *pool; /* into TEXT; POOL NULL when unlabelled */
    char text[];                    /* the object's name first */
};
struct tf__gpus {
    pthread_mutex_t lock;
    struct tf__rectab t; /* struct tf__gpu_rec, keyed by object name */
};
struct tf__gpus *tf__gpus_new(void);
void tf__gpus_destroy(struct tf__gpus *t);
/* GPU object GPU added or changed: recorded, replaced or (no node, unknown model) dropped.
 * True when what scheduling sees changed. */
bool tf__gpus_put(struct tf__gpus *t, json_object *gpu);
bool tf__gpus_del(struct tf__gpus *t, json_object *gpu);
/* Replaces the content with the GPU objects of the array GPUS (borrowed, may be NULL). */
void tf__gpus_load(struct tf__gpus *t, json_object *gpus);

/* A buffer of at least SIZE bytes for the length of a request (kept between requests, so
 * that large ones do not fault in fresh pages each time), and its return. NULL on ENOMEM. */
void *tf__ext_scratch_get(struct tf_extender *x, size_t size, size_t *got);
void tf__ext_scratch_put(struct tf_extender *x, void *p, size_t size);

/* extender_memo.c: what a /filter answered, for the /prioritize kube-scheduler sends next
 * with the same Pod and, as NodeNames, the filter's own NodeNames text (one extender, all
 * passed nodes scored). Matching bytes stand for the decoded Pod and names: the prioritize
 * neither parses the Pod nor looks the names up again, and its scores come from the verdict
 * index for the node ids the filter resolved, as long as that index (and so its cluster) is
 * the same one. Anything else is decoded as usual. One memo per extender. */
struct tf__ext_memo {
    uint64_t serial;   /* tf_alloc_index_serial of the index IDS were resolved under */
    char *pod, *names; /* the Pod's bytes; the answer's NodeNames array text */
    size_t pod_len, names_len;
    struct tf_podreq pr;     /* what the Pod decodes to */
    size_t n;                /* the nodes in NAMES, in order: */
    const char **node_names; /* into NAMES_BUF */
    size_t *lens;
    uint32_t *hashes, *ids;
    char *names_buf;
    bool names_plain;
};
/* The memo of a filter answer OUT (NodeNames at SPAN, tf_ext_encode_filter_span) for ARGS, the
 * Pod's request PR and the candidates' IDS resolved under index SERIAL, REASONS[i] NULL for
 * those that passed. Takes ARGS's name arrays and IDS on success (NULL: nothing taken). */
struct tf__ext_memo *tf__ext_memo_new(struct tf_ext_args *args, const struct tf_podreq *pr,
                                      uint32_t *ids, const char *const *reasons, uint64_t serial,
                                      const char *out, const size_t span[2]);
void tf__ext_memo_free(struct tf__ext_memo *m);
/* Takes the extender's memo (NULL when none), and gives one back: REPLACE drops the one kept,
 * else M is kept only when none is. */
struct tf__ext_memo *tf__ext_memo_take(struct tf_extender *x);
void tf__ext_memo_put(struct tf_extender *x, struct tf__ext_memo *m, bool replace);

/* extender_memo.c, too: the candidate list of the last /filter. kube-scheduler sends every
 * filter the same NodeNames (the nodes that passed its own filters) until its node set
 * changes: a filter whose NodeNames are the bytes of the previous one's takes the decoded
 * names, their hashes and, while the verdict index is the same one (node ids are those of its
 * cluster), their resolved ids from here instead of scanning and looking them up again. */
struct tf__ext_cands {
    uint64_t serial; /* tf_alloc_index_serial of the index IDS were resolved under */
    char *text;      /* the NodeNames array's bytes in the request */
    size_t text_len;
    size_t n;        /* the names, in order: */
    char *names_buf; /* NUL-terminated names, as the decoder left them */
    size_t buf_len;
    uint32_t *offs; /* each name's offset in NAMES_BUF */
    size_t *lens;
    uint32_t *hashes, *ids;
    bool names_plain, distinct;
};
/* The candidates of ARGS (strict scan: NAMES_TEXT and hashes known) with their IDS resolved
 * under index SERIAL, copied; NULL when ARGS lacks them or on ENOMEM. */
struct tf__ext_cands *tf__ext_cands_new(const struct tf_ext_args *args, const uint32_t *ids,
                                        uint64_t serial);
void tf__ext_cands_free(struct tf__ext_cands *c);
/* ARGS's name arrays (names, lengths, hashes, the names' buffer), copied from C (ARGS decoded
 * with C's text expected: it has none). False on ENOMEM. */
bool tf__ext_cands_apply(const struct tf__ext_cands *c, struct tf_ext_args *args);
/* Takes the extender's candidate memo (NULL when none), and gives one back (the newer one
 * is kept when both are there). */
struct tf__ext_cands *tf__ext_cands_take(struct tf_extender *x);
void tf__ext_cands_put(struct tf_extender *x, struct tf__ext_cands *c);

/* extender_verbs.c: the three verbs; *STATUS is set on errors, the body is a new string. */
char *tf__ext_filter(struct tf_extender *x, const char *body, size_t len, int *status);
char *tf__ext_prioritize(struct tf_extender *x, const char *body, size_t len, int *status);
char *tf__ext_bind(struct tf_extender *x, const char *body, size_t len, int *status);
/* The gang book over this extender's reservations and pod patches (extender_verbs.c). */
struct tf_ext_gangs *tf__ext_gangs_new(struct tf_extender *x);

#endif
