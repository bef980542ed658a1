/* SPDX-License-Identifier: Apache-2.0
 *
 * Pools by selector (see nodepool.h).
 */
#include "controller/nodepool.h"

#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/selector.h"

#include <stdio.h>
#include <string.h>

static json_object *nmc(json_object *pool)
{
    return tf_json_path(pool, "spec", "nodeManagerConfig", NULL);
}

static json_object *vendor_selectors(json_object *pool)
{
    json_object *mv = tf_json_path(nmc(pool), "multiVendorNodeSelector", NULL);
    return mv && json_object_is_type(mv, json_type_object) && json_object_object_length(mv) > 0
               ? mv
               : NULL;
}

bool tf_nodepool_selects(json_object *pool)
{
    return vendor_selectors(pool) || tf_json_path(nmc(pool), "nodeSelector", NULL);
}

static bool selects(json_object *pool, const char *node_name, json_object *labels)
{
    json_object *mv = vendor_selectors(pool);
    if (mv) {
        json_object_object_foreach(mv, vendor, sel)
        {
            (void)vendor;
            if (tf_node_selector_match(sel, node_name, labels))
                return true;
        }
        return false;
    }
    return tf_node_selector_match(tf_json_path(nmc(pool), "nodeSelector", NULL), node_name, labels);
}

static const char *pool_name(json_object *pool)
{
    const char *n = tf_json_str(pool, "metadata", "name", NULL);
    return n ? n : "";
}

static json_object *find_pool(json_object *pools, const char *name)
{
    for (size_t i = 0; name && pools && i < json_object_array_length(pools); i++) {
        json_object *p = json_object_array_get_idx(pools, i);
        if (strcmp(pool_name(p), name) == 0)
            return p;
    }
    return NULL;
}

/* MODE parsed into *OUT when it names an isolation mode. */
static bool mode_of(json_object *v, enum tf_isolation *out)
{
    const char *s =
        v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    enum tf_isolation m;
    if (!s || tf_isolation_parse(s, &m) || m == TF_ISOLATION_UNSET)
        return false;
    *out = m;
    return true;
}

static void resolve_mode(json_object *pool, json_object *labels, struct tf_nodepool *out)
{
    out->mode = TF_ISOLATION_SOFT;
    out->rule = -1;
    json_object *cfg = nmc(pool), *rules = tf_json_path(cfg, "isolationModeRules", NULL);
    for (size_t i = 0; rules && json_object_is_type(rules, json_type_array) &&
                       i < json_object_array_length(rules);
         i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        json_object *sel = tf_json_path(r, "selector", NULL);
        json_object *m = tf_json_path(r, "mode", NULL);
        if (!sel)
            sel = tf_json_path(r, "nodeSelector", NULL);
        if (!m)
            m = tf_json_path(r, "isolation", NULL);
        enum tf_isolation mode;
        if (tf_selector_match(sel, labels) && mode_of(m, &mode)) {
            out->mode = mode;
            out->rule = (int)i;
            return;
        }
    }
    mode_of(tf_json_path(cfg, "defaultIsolationMode", NULL), &out->mode);
}

void tf_nodepool_resolve(json_object *pools, const char *node_name, json_object *node,
                         const char *carried, const char *default_pool, struct tf_nodepool *out)
{
    memset(out, 0, sizeof(*out));
    json_object *labels = tf_json_path(node, "metadata", "labels", NULL);
    const char *first = NULL, *keep = NULL;
    size_t used = 0;
    for (size_t i = 0; node && pools && i < json_object_array_length(pools); i++) {
        json_object *p = json_object_array_get_idx(pools, i);
        if (!selects(p, node_name, labels))
            continue;
        const char *n = pool_name(p);
        out->nmatched++;
        if (!first || strcmp(n, first) < 0)
            first = n;
        if (carried && strcmp(n, carried) == 0)
            keep = n;
    }
    /* The matched names in name order, for messages. */
    const char *last = "";
    for (int k = 0; k < out->nmatched; k++) {
        const char *next = NULL;
        for (size_t i = 0; i < json_object_array_length(pools); i++) {
            json_object *p = json_object_array_get_idx(pools, i);
            const char *n = pool_name(p);
            if (strcmp(n, last) > 0 && (!next || strcmp(n, next) < 0) &&
                selects(p, node_name, labels))
                next = n;
        }
        if (!next)
            break;
        int w =
            snprintf(out->matched + used, sizeof(out->matched) - used, "%s%s", k ? ", " : "", next);
        if (w < 0 || (size_t)w >= sizeof(out->matched) - used)
            break;
        used += (size_t)w;
        last = next;
    }
    const char *chosen;
    if (first) {
        chosen = keep ? keep : first;
        out->source = TF_NODEPOOL_SELECTOR;
    } else {
        json_object *cp = find_pool(pools, carried);
        bool left = node && cp && tf_nodepool_selects(cp);
        chosen = carried && *carried && !left ? carried : default_pool;
        out->source = chosen == carried ? TF_NODEPOOL_LABEL : TF_NODEPOOL_DEFAULT;
    }
    tf_strlcpy(out->pool, chosen ? chosen : "", sizeof(out->pool));
    resolve_mode(find_pool(pools, out->pool), labels, out);
}
