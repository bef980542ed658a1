/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX executor: runs a launch's grid block by block on the calling thread. A block's
 * warps (32 lanes each) run round-robin in time slices until each blocks at a barrier or
 * finishes; a warp executes its decoded instructions in SIMT lockstep with an active mask.
 * Divergent branches push reconvergence entries keyed on the branch's immediate
 * post-dominator; calls push frames (registers, predicates, per-lane .param area, .local
 * stack). Also here: memory checks against the launch's memview (with a last-hit cache), the
 * shared/local/param windows of generic addresses, barriers, faults and their messages.
 */
#include "sim/ptx/internal.h"

#include "common/strutil.h"

#include <stdlib.h>
#include <time.h>

static size_t frame_bytes(const struct tf__func *fn)
{
    size_t regs = (size_t)fn->nslots * TF__WARP * 8;
    size_t preds = ((size_t)fn->npreds * 4 + 15) & ~(size_t)15;
    return regs + preds + (size_t)fn->param_size * TF__WARP;
}

static void frame_ptrs(struct tf__warp *w, const struct tf__func *fn, size_t off)
{
    w->r = (uint64_t *)(void *)(w->fmem + off);
    w->p = (uint32_t *)(void *)(w->fmem + off + (size_t)fn->nslots * TF__WARP * 8);
    w->prm = w->fmem + off + (size_t)fn->nslots * TF__WARP * 8 +
             (((size_t)fn->npreds * 4 + 15) & ~(size_t)15);
    w->prm_stride = fn->param_size;
}

uint64_t tf__globaltimer(const struct tf__run *run)
{
    const struct tf_ptx_env *env = run->l->env;
    if (env && env->globaltimer_ns)
        return env->globaltimer_ns(env->globaltimer_arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tf__clock64(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Fills a new frame's const and special slots and clears its predicates. */
static void frame_init(struct tf__warp *w, const struct tf__func *fn)
{
    struct tf__run *run = w->run;
    const struct tf_ptx_launch *l = run->l;
    for (uint32_t i = 0; i < fn->nconsts; i++) {
        uint64_t *s = w->r + (size_t)fn->consts[i].slot * TF__WARP;
        uint64_t v = fn->consts[i].value;
        for (int k = 0; k < TF__WARP; k++)
            s[k] = v;
    }
    for (uint32_t i = 0; i < fn->nspecials; i++) {
        uint64_t *s = w->r + (size_t)fn->specials[i].slot * TF__WARP;
        uint32_t arg = fn->specials[i].arg;
        for (int k = 0; k < TF__WARP; k++) {
            uint32_t lin = w->tid0 + (uint32_t)k;
            uint64_t v = 0;
            switch (fn->specials[i].kind) {
            case SPK_TID_X:
                v = lin % l->block[0];
                break;
            case SPK_TID_Y:
                v = (lin / l->block[0]) % l->block[1];
                break;
            case SPK_TID_Z:
                v = lin / (l->block[0] * l->block[1]);
                break;
            case SPK_NTID_X:
                v = l->block[0];
                break;
            case SPK_NTID_Y:
                v = l->block[1];
                break;
            case SPK_NTID_Z:
                v = l->block[2];
                break;
            case SPK_CTAID_X:
                v = run->ctaid[0];
                break;
            case SPK_CTAID_Y:
                v = run->ctaid[1];
                break;
            case SPK_CTAID_Z:
                v = run->ctaid[2];
                break;
            case SPK_NCTAID_X:
                v = l->grid[0];
                break;
            case SPK_NCTAID_Y:
                v = l->grid[1];
                break;
            case SPK_NCTAID_Z:
                v = l->grid[2];
                break;
            case SPK_LANEID:
                v = (uint64_t)k;
                break;
            case SPK_WARPID:
                v = w->id;
                break;
            case SPK_NWARPID:
                v = 64;
                break;
            case SPK_SMID:
                v = run->block_lin % (l->env && l->env->sm_count ? l->env->sm_count : 1);
                break;
            case SPK_NSMID:
                v = l->env && l->env->sm_count ? l->env->sm_count : 1;
                break;
            case SPK_GRIDID:
                v = 1;
                break;
            case SPK_LANEMASK_EQ:
                v = 1u << k;
                break;
            case SPK_LANEMASK_LT:
                v = (uint32_t)((1ull << k) - 1);
                break;
            case SPK_LANEMASK_LE:
                v = (uint32_t)((2ull << k) - 1);
                break;
            case SPK_LANEMASK_GT:
                v = (uint32_t) ~((2ull << k) - 1);
                break;
            case SPK_LANEMASK_GE:
                v = (uint32_t) ~((1ull << k) - 1);
                break;
            case SPK_DYN_SMEM:
                v = l->dynamic_shared;
                break;
            case SPK_TOTAL_SMEM:
                v = run->shared_size;
                break;
            case SPK_LOCAL:
                v = (uint64_t)w->local_base + arg;
                break;
            case SPK_EXTERN_SMEM:
                v = run->dyn_base + arg;
                break;
            case SPK_CLUSTER_ZERO:
                v = 0;
                break;
            case SPK_CLUSTER_ONE:
                v = 1;
                break;
            }
            s[k] = v;
        }
    }
    if (fn->npreds)
        memset(w->p, 0, (size_t)fn->npreds * 4);
}

static int grow_fmem(struct tf__warp *w, size_t need)
{
    if (need <= w->fmem_cap)
        return 0;
    size_t nc = w->fmem_cap ? w->fmem_cap : 4096;
    while (nc < need)
        nc *= 2;
    uint8_t *nm = realloc(w->fmem, nc);
    if (!nm)
        return -1;
    memset(nm + w->fmem_cap, 0, nc - w->fmem_cap);
    w->fmem = nm;
    w->fmem_cap = nc;
    return 0;
}

static int push_ent(struct tf__warp *w, uint32_t pc, uint32_t mask, uint32_t rpc)
{
    if (w->nstk == w->capstk) {
        uint32_t nc = w->capstk ? w->capstk * 2 : 16;
        struct tf__stkent *ns = realloc(w->stk, nc * sizeof(*ns));
        if (!ns)
            return -1;
        w->stk = ns;
        w->capstk = nc;
    }
    w->stk[w->nstk++] = (struct tf__stkent){pc, mask, rpc};
    return 0;
}

void tf__diverge(struct tf__warp *w, uint32_t target, uint32_t taken, uint32_t fall,
                 uint32_t reconv)
{
    uint32_t not_taken = w->active & ~taken;
    int fail = 0;
    if (reconv != w->rpc)
        fail |= push_ent(w, reconv, w->active, w->rpc);
    if (fall != reconv)
        fail |= push_ent(w, fall, not_taken, reconv);
    if (fail) {
        /* out of memory: the run stops at the next instruction */
        w->run->fault = TF_PTX_NO_MEMORY;
    }
    w->pc = target;
    w->active = taken;
    w->rpc = reconv;
}

/* Makes the warp runnable again after its lanes left the current path: pops reconvergence
 * entries and frames of dead lanes. Returns 1 when every lane of the warp has exited. */
static int reconverge(struct tf__warp *w)
{
    for (;;) {
        if (w->active && w->pc != w->rpc)
            return 0;
        struct tf__frame *f = &w->frames[w->nframes - 1];
        if (w->nstk > f->stk_base) {
            struct tf__stkent e = w->stk[--w->nstk];
            w->pc = e.pc;
            w->active = e.mask & w->alive;
            w->rpc = e.rpc;
            continue;
        }
        if (w->active) {
            w->rpc = TF__NONE; /* cannot happen: the base context reconverges nowhere */
            return 0;
        }
        if (w->nframes == 1)
            return 1;
        /* every lane in this call exited: unwind to the caller */
        w->nframes--;
        struct tf__frame *c = &w->frames[w->nframes - 1];
        w->fmem_used = f->mem_off;
        frame_ptrs(w, &w->run->mod->funcs[c->func], c->mem_off);
        w->local_base = c->local_base;
        w->pc = f->ret_pc;
        w->rpc = f->saved_rpc;
        w->active = f->call_mask & w->alive;
    }
}

int tf__call_enter(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    struct tf__run *run = w->run;
    const struct tf__call *c = in->aux;
    const struct tf__func *cf = &run->mod->funcs[c->callee];
    struct tf__frame *cur = &w->frames[w->nframes - 1];
    const struct tf__func *caller = &run->mod->funcs[cur->func];
    if (w->nframes >= TF__MAX_CALL_DEPTH)
        return tf__fault(w, in, __builtin_ctz(m), TF_PTX_ILLEGAL_ADDRESS, 0, "call stack overflow");
    uint64_t lbase = (uint64_t)w->local_base + caller->local_size;
    if (lbase + cf->local_size > run->local_stride)
        return tf__fault(w, in, __builtin_ctz(m), TF_PTX_ILLEGAL_ADDRESS, lbase,
                         "stack overflow (.local)");
    size_t off = (w->fmem_used + 15) & ~(size_t)15;
    size_t cur_off = cur->mem_off;
    if (grow_fmem(w, off + frame_bytes(cf))) {
        run->fault = TF_PTX_NO_MEMORY;
        return tf__fault(w, in, __builtin_ctz(m), TF_PTX_NO_MEMORY, 0, NULL);
    }
    frame_ptrs(w, caller, cur_off); /* fmem may have moved; it does not move again below */
    const uint8_t *cprm = w->prm;
    uint32_t cstride = w->prm_stride;
    if (m != w->active) {
        /* guarded call with some lanes off: they wait at the return point */
        if (push_ent(w, w->pc, w->active, w->rpc))
            return tf__fault(w, in, __builtin_ctz(m), TF_PTX_NO_MEMORY, 0, NULL);
        w->rpc = w->pc;
    }
    struct tf__frame nf = {.func = c->callee,
                           .ret_pc = w->pc,
                           .saved_rpc = w->rpc,
                           .stk_base = w->nstk,
                           .call_mask = m,
                           .local_base = (uint32_t)lbase,
                           .mem_off = off,
                           .call = in};
    w->frames[w->nframes++] = nf;
    w->fmem_used = off + frame_bytes(cf);
    frame_ptrs(w, cf, off);
    w->local_base = (uint32_t)lbase;
    frame_init(w, cf);
    for (uint32_t j = 0; j < c->nargs; j++) {
        uint32_t so = c->arg_off[j], dof = cf->params[j].offset, n = c->arg_size[j];
        TF__FOR_LANES(m, memcpy(w->prm + (size_t)l * w->prm_stride + dof,
                                cprm + (size_t)l * cstride + so, n));
    }
    w->active = m;
    w->rpc = TF__NONE;
    w->pc = cf->entry_pc;
    return TF__GO;
}

int tf__call_return(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    (void)in;
    struct tf__run *run = w->run;
    struct tf__frame *f = &w->frames[w->nframes - 1];
    struct tf__frame *c = &w->frames[w->nframes - 2];
    const struct tf__func *cf = &run->mod->funcs[f->func];
    const struct tf__func *caller = &run->mod->funcs[c->func];
    const struct tf__call *call = f->call->aux;
    const uint8_t *sprm = w->prm;
    uint32_t sstride = w->prm_stride;
    frame_ptrs(w, caller, c->mem_off);
    for (uint32_t j = 0; j < call->nrets; j++) {
        uint32_t so = cf->rets[j].offset, dof = call->ret_off[j], n = call->ret_size[j];
        TF__FOR_LANES(m, memcpy(w->prm + (size_t)l * w->prm_stride + dof,
                                sprm + (size_t)l * sstride + so, n));
    }
    w->fmem_used = f->mem_off;
    w->nframes--;
    w->local_base = c->local_base;
    w->pc = f->ret_pc;
    w->rpc = f->saved_rpc;
    w->active = f->call_mask & w->alive;
    return TF__GO;
}

int tf__fault(struct tf__warp *w, const struct tf__insn *in, int lane, enum tf_ptx_status st,
              uint64_t addr, const char *what)
{
    struct tf__run *run = w->run;
    if (run->fault == TF_PTX_OK || run->fault == TF_PTX_NO_MEMORY) {
        run->fault = st;
        run->fault_addr = addr;
        run->fault_insn = in;
        run->fault_lane = (uint32_t)lane;
        run->fault_warp = w->id;
        tf_errf(run->fault_what, sizeof(run->fault_what), "%s", what ? what : "");
    }
    return TF__STOP_FAULT;
}

/* The memview range holding [A, A+SIZE), or NULL. */
static const struct tf_ptx_range *range_of(const struct tf__run *run, uint64_t a, uint32_t size)
{
    size_t lo = 0, hi = run->nranges;
    while (lo < hi) { /* last range with base <= a */
        size_t mid = lo + (hi - lo) / 2;
        if (run->ranges[mid].base <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct tf_ptx_range *r = &run->ranges[lo - 1];
    uint64_t off = a - r->base;
    return off < r->size && r->size - off >= size ? r : NULL;
}

void *tf__gmem_slow(struct tf__warp *w, const struct tf__insn *in, int lane, uint64_t a,
                    uint32_t size, int write)
{
    struct tf__run *run = w->run;
    const struct tf_ptx_range *r = range_of(run, a, size);
    if (r) {
        if (write && r->read_only) {
            tf__fault(w, in, lane, TF_PTX_ILLEGAL_ADDRESS, a, "write to read-only memory");
            return NULL;
        }
        run->c_base = r->base;
        run->c_size = r->size;
        run->c_ro = r->read_only;
        return (void *)(uintptr_t)a;
    }
    tf__fault(w, in, lane, TF_PTX_ILLEGAL_ADDRESS, a, NULL);
    return NULL;
}

const void *tf__probe(const struct tf__warp *w, uint64_t a, uint32_t size)
{
    const struct tf__run *run = w->run;
    uint64_t off = a - (uint64_t)(uintptr_t)run->shared;
    if (off < run->shared_size)
        return run->shared_size - off >= size ? run->shared + off : NULL;
    off = a - (uint64_t)(uintptr_t)run->local;
    if (off < run->local_total)
        return run->local_total - off >= size ? run->local + off : NULL;
    off = a - (uint64_t)(uintptr_t)run->params;
    if (run->params && off < run->params_size)
        return run->params_size - off >= size ? (const void *)(uintptr_t)a : NULL;
    return range_of(run, a, size) ? (const void *)(uintptr_t)a : NULL;
}

void *tf__generic(struct tf__warp *w, const struct tf__insn *in, int lane, uint64_t a,
                  uint32_t size, int write)
{
    struct tf__run *run = w->run;
    if (a & (size - 1)) {
        tf__fault(w, in, lane, TF_PTX_MISALIGNED_ADDRESS, a, NULL);
        return NULL;
    }
    uint64_t off = a - run->c_base;
    if (off < run->c_size && run->c_size - off >= size && !(write && run->c_ro))
        return (void *)(uintptr_t)a;
    off = a - (uint64_t)(uintptr_t)run->shared;
    if (off < run->shared_size) {
        if (run->shared_size - off < size) {
            tf__fault(w, in, lane, TF_PTX_ILLEGAL_ADDRESS, a, "generic address in .shared");
            return NULL;
        }
        return run->shared + off;
    }
    off = a - (uint64_t)(uintptr_t)run->local;
    if (off < run->local_total) {
        if (run->local_total - off < size) {
            tf__fault(w, in, lane, TF_PTX_ILLEGAL_ADDRESS, a, "generic address in .local");
            return NULL;
        }
        return run->local + off;
    }
    off = a - (uint64_t)(uintptr_t)run->params;
    if (run->params && off < run->params_size) {
        if (run->params_size - off < size || write) {
            tf__fault(w, in, lane, TF_PTX_ILLEGAL_ADDRESS, a, "generic address in .param");
            return NULL;
        }
        return (void *)(uintptr_t)a;
    }
    return tf__gmem_slow(w, in, lane, a, size, write);
}

/* ---- barriers ---- */

static void bar_release(struct tf__run *run, uint32_t id)
{
    struct tf__barrier *b = &run->bar[id];
    for (uint32_t i = 0; i < run->nwarps; i++) {
        struct tf__warp *w = &run->warps[i];
        if (w->state != WS_BARRIER || w->bar_id != id)
            continue;
        w->state = WS_READY;
        const struct tf__insn *in = w->bar_insn;
        if (in && in->flags) {
            /* bar.red: popc -> u32 register, and/or -> predicate */
            if (in->flags == 1) {
                uint64_t *d = w->r + in->d[0];
                TF__FOR_LANES(w->bar_mask, d[l] = b->red_popc);
            } else {
                uint32_t res = in->flags == 2 ? b->red_and : b->red_or;
                uint32_t *p = &w->p[in->d[0]];
                *p = (*p & ~w->bar_mask) | (res ? w->bar_mask : 0);
            }
        }
    }
    memset(b, 0, sizeof(*b));
    b->red_and = 1;
}

/* Releases barrier ID when enough threads arrived. */
void tf__bar_check(struct tf__run *run, uint32_t id);
void tf__bar_check(struct tf__run *run, uint32_t id)
{
    struct tf__barrier *b = &run->bar[id];
    if (!b->arrived)
        return;
    uint32_t expected = b->expected ? b->expected : run->live_threads;
    if (b->arrived >= expected)
        bar_release(run, id);
}

/* ---- warps and blocks ---- */

static inline uint32_t popc32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    return (x * 0x01010101u) >> 24;
}

/* Runs W for up to TF__SLICE instructions; returns why it stopped (TF__STOP_*). The
 * thread-instruction count (active lanes per instruction) goes to run->insns. */
static int run_warp(struct tf__warp *w)
{
    struct tf__run *run = w->run;
    const struct tf__insn *code = run->mod->code;
    uint64_t insns = run->insns;
    const uint64_t max = run->max_insns;
    uint32_t cmask = 0, cnt = 0;
    int rc = TF__STOP_YIELD;
    for (int budget = TF__SLICE; budget > 0; budget--) {
        const struct tf__insn *in = &code[w->pc];
        uint32_t act = w->active, m = act;
        if (in->has_guard) {
            uint32_t g = w->p[in->guard];
            m &= in->gneg ? ~g : g;
        }
        w->pc++;
        if (act != cmask) {
            cmask = act;
            cnt = popc32(act);
        }
        insns += cnt;
        int r = m ? in->fn(w, in, m) : TF__GO;
        if (r == TF__STOP_FAULT) {
            rc = r;
            break;
        }
        if ((w->pc == w->rpc || !w->active) && reconverge(w)) {
            rc = TF__STOP_DONE;
            break;
        }
        if (r) {
            rc = r;
            break;
        }
        if (run->fault) {
            run->insns = insns;
            return tf__fault(w, in, 0, run->fault, 0, NULL);
        }
        if (insns > max) {
            run->insns = insns;
            return tf__fault(w, in, __builtin_ctz(w->active), TF_PTX_LAUNCH_TIMEOUT, 0, NULL);
        }
    }
    run->insns = insns;
    return rc;
}

static int warp_start(struct tf__run *run, struct tf__warp *w)
{
    const struct tf__func *kf = run->kfn;
    w->fmem_used = frame_bytes(kf);
    if (grow_fmem(w, w->fmem_used))
        return -1;
    if (!w->frames) {
        w->frames = calloc(TF__MAX_CALL_DEPTH, sizeof(*w->frames));
        if (!w->frames)
            return -1;
    }
    w->frames[0] =
        (struct tf__frame){.func = run->l->kernel->func, .ret_pc = TF__NONE, .saved_rpc = TF__NONE};
    w->nframes = 1;
    w->nstk = 0;
    w->local_base = 0;
    frame_ptrs(w, kf, 0);
    frame_init(w, kf);
    w->pc = kf->entry_pc;
    w->rpc = TF__NONE;
    w->alive = w->active = w->nlanes == 32 ? TF__FULL : (1u << w->nlanes) - 1;
    w->cc = 0;
    w->state = WS_READY;
    w->bar_insn = NULL;
    return 0;
}

static enum tf_ptx_status run_block(struct tf__run *run)
{
    for (uint32_t i = 0; i < run->nwarps; i++)
        if (warp_start(run, &run->warps[i]))
            return TF_PTX_NO_MEMORY;
    for (uint32_t i = 0; i < 16; i++) {
        memset(&run->bar[i], 0, sizeof(run->bar[i]));
        run->bar[i].red_and = 1;
    }
    run->live_threads = run->nthreads;
    uint32_t done = 0;
    while (done < run->nwarps) {
        int ran = 0;
        for (uint32_t i = 0; i < run->nwarps; i++) {
            struct tf__warp *w = &run->warps[i];
            if (w->state != WS_READY)
                continue;
            ran = 1;
            int rc = run_warp(w);
            if (rc == TF__STOP_FAULT)
                return (enum tf_ptx_status)run->fault;
            if (rc == TF__STOP_DONE) {
                w->state = WS_DONE;
                done++;
                run->live_threads -= w->nlanes;
                for (uint32_t b = 0; b < 16; b++)
                    tf__bar_check(run, b);
            }
        }
        if (!ran && done < run->nwarps) {
            /* every live warp waits at a barrier that cannot complete: on hardware the
             * block hangs until the watchdog; report it as a timeout */
            for (uint32_t i = 0; i < run->nwarps; i++) {
                struct tf__warp *w = &run->warps[i];
                if (w->state == WS_BARRIER) {
                    tf__fault(w, w->bar_insn, __builtin_ctz(w->bar_mask ? w->bar_mask : 1),
                              TF_PTX_LAUNCH_TIMEOUT, 0, "barrier deadlock");
                    break;
                }
            }
            return TF_PTX_LAUNCH_TIMEOUT;
        }
    }
    return TF_PTX_OK;
}

static void format_fault(const struct tf__run *run, enum tf_ptx_status st, char *err, size_t errlen)
{
    const struct tf_ptx_launch *l = run->l;
    const struct tf__func *kf = run->kfn;
    const struct tf__insn *in = run->fault_insn;
    uint32_t lin = run->fault_warp * TF__WARP + run->fault_lane;
    uint32_t tx = lin % l->block[0], ty = (lin / l->block[0]) % l->block[1],
             tz = lin / (l->block[0] * l->block[1]);
    char where[256];
    tf_errf(where, sizeof(where), "in kernel %s at line %u: %s, block (%u,%u,%u) thread (%u,%u,%u)",
            kf->name, in ? in->line : 0, in ? in->text : "?", run->ctaid[0], run->ctaid[1],
            run->ctaid[2], tx, ty, tz);
    const char *what = run->fault_what;
    switch (st) {
    case TF_PTX_ILLEGAL_ADDRESS:
    case TF_PTX_MISALIGNED_ADDRESS:
        tf_errf(err, errlen, "%s 0x%llx%s%s%s %s", tf_ptx_status_str(st),
                (unsigned long long)run->fault_addr, *what ? " (" : "", what, *what ? ")" : "",
                where);
        break;
    case TF_PTX_LAUNCH_TIMEOUT:
        if (*what)
            tf_errf(err, errlen, "%s %s", what, where);
        else
            tf_errf(err, errlen, "exceeded max_instructions (%llu) %s",
                    (unsigned long long)l->max_instructions, where);
        break;
    default:
        tf_errf(err, errlen, "%s %s", tf_ptx_status_str(st), where);
        break;
    }
}

static enum tf_ptx_status launch_err(char *err, size_t errlen, enum tf_ptx_status st,
                                     const char *msg)
{
    tf_errf(err, errlen, "%s", msg);
    return st;
}

enum tf_ptx_status tf_ptx_launch_run(const struct tf_ptx_launch *l, uint64_t *insns, char *err,
                                     size_t errlen)
{
    char msg[200];
    if (!l || !l->kernel || !l->kernel->mod)
        return launch_err(err, errlen, TF_PTX_INVALID_VALUE, "no kernel");
    const struct tf_ptx_module *mod = l->kernel->mod;
    const struct tf__func *kf = &mod->funcs[l->kernel->func];
    for (int i = 0; i < 3; i++)
        if (l->grid[i] == 0 || l->block[i] == 0)
            return launch_err(err, errlen, TF_PTX_INVALID_VALUE, "zero grid or block dimension");
    if (l->grid[0] > 0x7fffffffu || l->grid[1] > 65535 || l->grid[2] > 65535)
        return launch_err(err, errlen, TF_PTX_INVALID_VALUE, "grid dimension too large");
    uint64_t nthreads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    if (l->block[0] > 1024 || l->block[1] > 1024 || l->block[2] > 64 ||
        nthreads > TF_PTX_MAX_THREADS_PER_BLOCK) {
        tf_errf(msg, sizeof(msg),
                "block (%u,%u,%u) exceeds the limits of %u threads per block, 1024x1024x64",
                l->block[0], l->block[1], l->block[2], TF_PTX_MAX_THREADS_PER_BLOCK);
        return launch_err(err, errlen, TF_PTX_LAUNCH_OUT_OF_RESOURCES, msg);
    }
    if (kf->max_threads && nthreads > kf->max_threads) {
        tf_errf(msg, sizeof(msg), "block of %llu threads exceeds .maxntid %u of kernel %s",
                (unsigned long long)nthreads, kf->max_threads, kf->name);
        return launch_err(err, errlen, TF_PTX_LAUNCH_OUT_OF_RESOURCES, msg);
    }
    if (kf->reqntid[0] && (l->block[0] != kf->reqntid[0] || l->block[1] != kf->reqntid[1] ||
                           l->block[2] != kf->reqntid[2])) {
        tf_errf(msg, sizeof(msg), "block (%u,%u,%u) differs from .reqntid %u,%u,%u of kernel %s",
                l->block[0], l->block[1], l->block[2], kf->reqntid[0], kf->reqntid[1],
                kf->reqntid[2], kf->name);
        return launch_err(err, errlen, TF_PTX_INVALID_VALUE, msg);
    }
    if (l->params_size != kf->params_size || (kf->params_size && !l->params)) {
        tf_errf(msg, sizeof(msg), "kernel %s takes %u bytes of parameters, got %zu", kf->name,
                kf->params_size, l->params ? l->params_size : 0);
        return launch_err(err, errlen, TF_PTX_INVALID_VALUE, msg);
    }
    uint64_t static_shared = (uint64_t)mod->module_shared + kf->own_shared;
    uint64_t dyn_base =
        (static_shared + mod->extern_align - 1) & ~(uint64_t)(mod->extern_align - 1);
    uint64_t shared_size = l->dynamic_shared ? dyn_base + l->dynamic_shared : static_shared;
    uint64_t limit = TF_PTX_MAX_SHARED_PER_BLOCK;
    if (l->max_dynamic_shared) {
        limit = TF_PTX_MAX_SHARED_OPTIN;
        if (l->dynamic_shared > l->max_dynamic_shared) {
            tf_errf(msg, sizeof(msg), "%u bytes of dynamic shared memory exceed the kernel's %u",
                    l->dynamic_shared, l->max_dynamic_shared);
            return launch_err(err, errlen, TF_PTX_LAUNCH_OUT_OF_RESOURCES, msg);
        }
    }
    if (static_shared + l->dynamic_shared > limit) {
        tf_errf(msg, sizeof(msg), "%llu bytes of shared memory exceed the limit of %llu",
                (unsigned long long)(static_shared + l->dynamic_shared), (unsigned long long)limit);
        return launch_err(err, errlen, TF_PTX_LAUNCH_OUT_OF_RESOURCES, msg);
    }
    for (uint32_t i = 0; i < kf->nvars_used; i++) {
        if (!mod->var_bound[kf->vars_used[i]]) {
            tf_errf(msg, sizeof(msg), "module variable '%s' is not bound",
                    mod->vars[kf->vars_used[i]].name);
            return launch_err(err, errlen, TF_PTX_INVALID_VALUE, msg);
        }
    }
    if (l->mem && l->mem->count && !l->mem->ranges)
        return launch_err(err, errlen, TF_PTX_INVALID_VALUE, "memview without ranges");

    struct tf__run run;
    memset(&run, 0, sizeof(run));
    run.l = l;
    run.mod = mod;
    run.kfn = kf;
    run.shared_size = shared_size;
    run.dyn_base = dyn_base;
    run.params = l->params;
    run.params_size = l->params_size;
    run.ranges = l->mem ? l->mem->ranges : NULL;
    run.nranges = l->mem ? l->mem->count : 0;
    run.max_insns = l->max_instructions ? l->max_instructions : UINT64_MAX;
    run.nthreads = (uint32_t)nthreads;
    run.nwarps = (run.nthreads + TF__WARP - 1) / TF__WARP;
    run.local_stride = ((uint64_t)kf->stack_need + 15) & ~15ull;
    run.local_total = run.local_stride * nthreads;
    enum tf_ptx_status st = TF_PTX_NO_MEMORY;
    run.shared = calloc(1, shared_size ? shared_size : 1);
    run.local = run.local_total ? calloc(1, run.local_total) : NULL;
    run.warps = calloc(run.nwarps, sizeof(*run.warps));
    if (!run.shared || (run.local_total && !run.local) || !run.warps) {
        tf_errf(err, errlen, "out of memory for launch scratch state");
        goto out;
    }
    for (uint32_t i = 0; i < run.nwarps; i++) {
        struct tf__warp *w = &run.warps[i];
        w->run = &run;
        w->id = i;
        w->tid0 = i * TF__WARP;
        w->nlanes = run.nthreads - w->tid0 < TF__WARP ? run.nthreads - w->tid0 : TF__WARP;
    }
    st = TF_PTX_OK;
    for (uint32_t z = 0; z < l->grid[2] && st == TF_PTX_OK; z++) {
        for (uint32_t y = 0; y < l->grid[1] && st == TF_PTX_OK; y++) {
            for (uint32_t x = 0; x < l->grid[0] && st == TF_PTX_OK; x++) {
                run.ctaid[0] = x;
                run.ctaid[1] = y;
                run.ctaid[2] = z;
                if (shared_size)
                    memset(run.shared, 0, shared_size);
                st = run_block(&run);
                run.block_lin++;
            }
        }
    }
    if (st == TF_PTX_NO_MEMORY && !run.fault_insn)
        tf_errf(err, errlen, "out of memory for launch scratch state");
    else if (st != TF_PTX_OK)
        format_fault(&run, st, err, errlen);
out:
    if (insns)
        *insns += run.insns;
    if (run.warps) {
        for (uint32_t i = 0; i < run.nwarps; i++) {
            free(run.warps[i].fmem);
            free(run.warps[i].stk);
            free(run.warps[i].frames);
        }
    }
    free(run.warps);
    free(run.local);
    free(run.shared);
    return st;
}
