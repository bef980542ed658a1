/* SPDX-License-Identifier: Apache-2.0
 *
 * The webhook's pod-index allocator over the pod cache (see podidx.h).
 */
#include "controller/podidx.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void tf_ctl_podidx_init(struct tf_ctl_podidx *p, struct tf_informer *pods)
{
    pthread_mutex_init(&p->mu, NULL);
    tf_podidx_init(&p->a);
    p->pods = pods;
}

void tf_ctl_podidx_destroy(struct tf_ctl_podidx *p)
{
    pthread_mutex_destroy(&p->mu);
}

struct live {
    int idx[TF_PODIDX_MAX * 4];
    size_t n;
};

static int collect(json_object *pod, void *arg)
{
    struct live *l = arg;
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    int i = tf_podidx_parse_annotation(
        tf_json_str(pod, "metadata", "annotations", TF_PODIDX_ANNOTATION, NULL));
    if (i > 0 && !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) &&
        l->n < sizeof(l->idx) / sizeof(l->idx[0]))
        l->idx[l->n++] = i;
    return 0;
}

int tf_ctl_podidx_take(struct tf_ctl_podidx *p, char *err, size_t errlen)
{
    static struct live l; /* under p->mu */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    pthread_mutex_lock(&p->mu);
    l.n = 0;
    if (p->pods)
        tf_informer_foreach(p->pods, collect, &l);
    tf_podidx_live(&p->a, l.idx, l.n);
    int rc = tf_podidx_take(&p->a, now);
    if (rc < 0)
        tf_errf(err, errlen,
                "all %d pod indexes are held by partitioned pods that have not finished (%zu in "
                "the cache, the rest admitted in the last %d s); retry once one finishes",
                TF_PODIDX_MAX, l.n, TF_PODIDX_RESERVE_MS / 1000);
    pthread_mutex_unlock(&p->mu);
    if (rc < 0)
        tf_log(TF_LOG_WARN, "webhook", "pod index refused: %s", err);
    return rc;
}
