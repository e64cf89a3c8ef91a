/* ws_heuristic.c: budgets, search and selection of the warp-specialized
 * norm-backward approach (nvFuser 1.3-1.4; the formulas are in
 * ws_heuristic.h). */
#include <stdio.h>
#include <string.h>

#include "schedule/family.h"
#include "schedule/ws_heuristic.h"

enum {
    PRODUCER_THREADS = 128,      /* one warp group */
    REGISTER_SLACK = 112,        /* registers besides the buffers (nvFuser's, empirical) */
    MAX_BDIMX = 384,
    MAX_REGISTERS = 255,
    SUB_PARTITIONS = 4,
    WARP_REGISTER_UNIT = 256,
};

static int64_t round_up(int64_t value, int64_t unit) { return fv_family_ceil_div(value, unit) * unit; }

int fv_sched_ws_registers_for(const fv_sched_ws_problem *problem, int64_t bytes, int bdimx)
{
    /* bytes / H per element, over the thread's ceil(H / vec / bdimx) vectors
     * of vec elements, in 4-byte registers */
    int64_t per_element_bytes = bytes / problem->inner;
    return (int)(per_element_bytes * fv_family_ceil_div(problem->inner / problem->vector, bdimx) *
                 problem->vector / 4);
}

int fv_sched_ws_registers_per_thread(const fv_device *device, int threads)
{
    int warps = (int)fv_family_ceil_div(threads, 32);
    int warps_per_partition = (int)fv_family_ceil_div(warps, SUB_PARTITIONS);
    int per_partition = device->registers_per_sm / SUB_PARTITIONS;
    int per_warp = per_partition / warps_per_partition / WARP_REGISTER_UNIT * WARP_REGISTER_UNIT;
    int per_thread = per_warp / 32;
    return per_thread > MAX_REGISTERS ? MAX_REGISTERS : per_thread;
}

/* The candidate being searched, with its flags. */
typedef struct search_state {
    const fv_sched_ws_problem *problem;
    const fv_device *device;
    int bdimx, bdimy, unroll, stages;
    bool regs_cached, gmem_to_regs;
} search_state;

static int64_t shared_bytes(const search_state *s, int bdimx, int bdimy, int unroll, int stages)
{
    const fv_sched_ws_problem *p = s->problem;
    return p->circular_bytes * unroll * stages + (s->gmem_to_regs ? 0 : p->noncircular_bytes) +
           round_up(16LL * stages, 128) + round_up((int64_t)unroll * bdimx * bdimy * 4, 128);
}

static bool shared_fits(const search_state *s, int bdimx, int bdimy, int unroll, int stages)
{
    return shared_bytes(s, bdimx, bdimy, unroll, stages) <= s->device->shared_per_block_optin;
}

/* Compute-group and producer registers per thread for a block shape. */
static void register_split(const fv_device *device, int bdimx, int bdimy, int *compute,
                           int *producer, bool *sharing)
{
    int threads = bdimx * bdimy + PRODUCER_THREADS;
    int per_thread = fv_sched_ws_registers_per_thread(device, threads);
    *sharing = threads > 256;
    if (!*sharing) {
        *compute = *producer = per_thread;
        return;
    }
    int compute_threads = bdimx * bdimy;
    int raised = per_thread + (per_thread - 32) * PRODUCER_THREADS / compute_threads;
    raised = raised / 8 * 8;
    *compute = raised > MAX_REGISTERS ? MAX_REGISTERS : raised;
    int left = per_thread * threads - *compute * compute_threads;
    *producer = left / PRODUCER_THREADS / 8 * 8;
}

static int registers_needed(const search_state *s, int bdimx, int unroll)
{
    const fv_sched_ws_problem *p = s->problem;
    return (s->regs_cached ? fv_sched_ws_registers_for(p, p->circular_bytes, bdimx) * unroll : 0) +
           (s->gmem_to_regs ? fv_sched_ws_registers_for(p, p->noncircular_bytes, bdimx) : 0) +
           fv_sched_ws_registers_for(p, p->partial_bytes, bdimx) + REGISTER_SLACK;
}

static bool registers_fit(const search_state *s, int bdimx, int bdimy, int unroll)
{
    int compute, producer;
    bool sharing;
    register_split(s->device, bdimx, bdimy, &compute, &producer, &sharing);
    return registers_needed(s, bdimx, unroll) <= compute;
}

/* (H / vec) mod bdimx, the vectors of the last, partial batch step. */
static int64_t tail(const search_state *s, int bdimx)
{
    return (s->problem->inner / s->problem->vector) % bdimx;
}

/* nvFuser's update_heuristics: grows stages, bdimy, unroll and bdimx up to
 * the targets while the budgets allow, until nothing changes. */
static void grow(search_state *s, int target_stages, int target_bdimy, int target_unroll)
{
    for (bool changed = true; changed;) {
        changed = false;
        if (s->stages * 2 <= target_stages &&
            shared_fits(s, s->bdimx, s->bdimy, s->unroll, s->stages * 2)) {
            s->stages *= 2;
            changed = true;
        }
        if (s->bdimx == 128 && s->bdimy * 2 <= target_bdimy &&
            registers_fit(s, s->bdimx, s->bdimy * 2, s->unroll) &&
            shared_fits(s, s->bdimx, s->bdimy * 2, s->unroll, s->stages)) {
            s->bdimy *= 2;
            changed = true;
        }
        if (s->unroll * 2 <= target_unroll && s->problem->rows % (2LL * s->unroll) == 0 &&
            registers_fit(s, s->bdimx, s->bdimy, s->unroll * 2) &&
            shared_fits(s, s->bdimx, s->bdimy, s->unroll * 2, s->stages)) {
            s->unroll *= 2;
            changed = true;
        }
        if (s->bdimy == 1 && s->bdimx + 128 <= MAX_BDIMX &&
            shared_fits(s, s->bdimx + 128, s->bdimy, s->unroll, s->stages)) {
            bool worth = s->bdimx == 128 || tail(s, s->bdimx + 128) >= tail(s, s->bdimx) ||
                         !registers_fit(s, s->bdimx, s->bdimy, s->unroll);
            if (worth) {
                s->bdimx += 128;
                changed = true;
            }
        }
    }
}

static void start(search_state *s, bool regs_cached, bool gmem_to_regs)
{
    s->bdimx = 128;
    s->bdimy = s->unroll = s->stages = 1;
    s->regs_cached = regs_cached;
    s->gmem_to_regs = gmem_to_regs;
}

/* is_good_ws_heuristic, with `compute_registers` per compute thread.  With
 * `any_weight_place`, the 64-register floor applies to one compute group
 * with the weight in shared memory as well (beside the partials alone). */
static void judge(const search_state *s, int compute_registers, bool any_weight_place,
                  fv_sched_ws_params *params)
{
    params->good = true;
    params->why_not_good[0] = '\0';
    if (s->stages == 1) {
        params->good = false;
        snprintf(params->why_not_good, sizeof params->why_not_good,
                 "one stage: no room for a second row slot in shared memory");
        return;
    }
    int weight = s->gmem_to_regs
                     ? fv_sched_ws_registers_for(s->problem, s->problem->noncircular_bytes, s->bdimx)
                     : 0;
    int left = compute_registers - weight -
               fv_sched_ws_registers_for(s->problem, s->problem->partial_bytes, s->bdimx);
    if (s->bdimy == 1 && (s->gmem_to_regs || any_weight_place) && left < 64) {
        params->good = false;
        snprintf(params->why_not_good, sizeof params->why_not_good,
                 s->gmem_to_regs
                     ? "one compute group with the weight in registers leaves %d registers (< 64)"
                     : "one compute group leaves %d registers beside the partials (< 64)",
                 left);
    }
}

fv_status fv_sched_ws_heuristic(const fv_sched_ws_problem *problem, const fv_device *device,
                                fv_sched_ws_params *params)
{
    if (problem->rows <= 0 || problem->inner <= 0 || problem->vector <= 0 ||
        problem->inner % problem->vector != 0)
        FV_FAIL(FV_ERR_INTERNAL, "warp-specialized heuristic: bad sizes %lld x %lld (vector %d)",
                (long long)problem->rows, (long long)problem->inner, problem->vector);
    search_state s = {.problem = problem, .device = device};
    char pass = 'A';
    start(&s, true, true);
    grow(&s, 2, 2, 4);
    if (s.bdimy == 1) {
        pass = 'B';
        start(&s, false, true);
        grow(&s, 2, 2, 1);
    }
    if (s.bdimy == 1) {
        pass = 'C';
        start(&s, false, false);
        grow(&s, 2, 2, 1);
    }
    if (s.stages == 1) {
        pass = 'D';
        start(&s, false, true);
        grow(&s, 2, 1, 1);
    }
    while (shared_fits(&s, s.bdimx, s.bdimy, s.unroll, s.stages * 2))
        s.stages *= 2;
    if (s.stages >= s.bdimy)
        s.stages = s.stages / s.bdimy * s.bdimy;
    memset(params, 0, sizeof *params);
    params->bdimx = s.bdimx;
    params->bdimy = s.bdimy;
    params->unroll = s.unroll;
    params->stages = s.stages;
    params->regs_cached = s.regs_cached;
    params->gmem_to_regs = s.gmem_to_regs;
    params->threads = s.bdimx * s.bdimy + PRODUCER_THREADS;
    register_split(device, s.bdimx, s.bdimy, &params->compute_registers,
                   &params->producer_registers, &params->register_sharing);
    params->registers_needed = registers_needed(&s, s.bdimx, s.unroll);
    params->shared_bytes = shared_bytes(&s, s.bdimx, s.bdimy, s.unroll, s.stages);
    params->pass = pass;
    judge(&s, params->compute_registers, false, params);
    return FV_OK;
}

void fv_sched_ws_judge(const fv_sched_ws_problem *problem, int compute_registers,
                       fv_sched_ws_params *params)
{
    search_state s = {
        .problem = problem,
        .bdimx = params->bdimx,
        .bdimy = params->bdimy,
        .unroll = params->unroll,
        .stages = params->stages,
        .regs_cached = params->regs_cached,
        .gmem_to_regs = params->gmem_to_regs,
    };
    judge(&s, compute_registers, true, params);
}

bool fv_sched_ws_preferred(const fv_sched_ws_problem *problem, const fv_device *device, char *why,
                           size_t why_size)
{
    if (device->major < 10) {
        snprintf(why, why_size, "compute capability %d.%d: the multi-wave approach below 10.0",
                 device->major, device->minor);
        return false;
    }
    if (!problem->static_shapes) {
        snprintf(why, why_size, "symbolic input shapes: warp specialization needs a static CTA shape");
        return false;
    }
    int64_t rows_per_sm = fv_family_ceil_div(problem->rows, device->sm_count);
    int64_t needed = problem->inner_reductions > 1 ? 16 : 4;
    if (rows_per_sm <= needed) {
        snprintf(why, why_size, "%lld rows per SM (needs more than %lld with %d inner reductions)",
                 (long long)rows_per_sm, (long long)needed, problem->inner_reductions);
        return false;
    }
    return true;
}
