/* check_persistent.c: the persistent normalization heuristics on the built-in
 * device table (H100 and B200), at the shapes of the seed pull requests:
 * Thunder's layer-norm backward at 16384 x 2048 bf16 (seed 000) and the
 * 2048 x H norm-backward shapes of nvFuser's warp-specialized tests
 * (seed 001).  Checks the family each shape gets, the parameters nvFuser's
 * multi-wave search (nvfuser.md 1.2) gives, that every choice fits the
 * device's budgets, and that a row too large for them falls back to the
 * general path with the reason recorded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "frontend/frontend.h"
#include "norm_fusions.h"
#include "segment/segment.h"
#include "schedule/ws_heuristic.h"
#include "service/plan.h"
#include "test_support.h"

/* The chosen family, parameters and launch of a one-segment case. */
typedef struct choice {
    char family[32];
    fv_schedule_params params;
    fv_launch_shape launch;
    int segments;
    int bounded_blocks;  /* the kernel's __launch_bounds__ minimum blocks per SM, or 0 */
} choice;

static void choose_for(const fv_case *c, const char *device_name, choice *out)
{
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table(device_name, &device));
    fv_case_plan plan;
    FV_ASSERT_OK(fv_plan_case(c, &device, &plan));
    memset(out, 0, sizeof *out);
    out->segments = plan.kernel_count;
    snprintf(out->family, sizeof out->family, "%s", plan.segmentation.segments[0].scheduler->name);
    out->params = plan.kernels[0].params;
    out->launch = plan.kernels[0].launch;
    const char *source = plan.kernels[0].source;
    const char *bounds = source != NULL ? strstr(source, "__launch_bounds__(") : NULL;
    int threads = 0;
    if (bounds == NULL || sscanf(bounds, "__launch_bounds__(%d, %d)", &threads,
                                 &out->bounded_blocks) != 2)
        out->bounded_blocks = 0;
    fv_plan_free(&plan);
}

/* Whether a forward choice's blocks each walk two rows (two_round_blocks). */
static bool two_rows_per_block(const choice *chosen)
{
    return strstr(chosen->params.description, "2 rows per block (not one wave)") != NULL;
}

/* Budgets every persistent choice must respect on `device_name`. */
static void assert_fits(const choice *chosen, const char *device_name, int64_t rows)
{
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table(device_name, &device));
    int threads = chosen->launch.block[0] * chosen->launch.block[1];
    ck_assert_int_ge(threads, 32);
    ck_assert_int_le(threads, 512);
    ck_assert_int_le(chosen->launch.dynamic_shared_bytes, (int)device.shared_per_block_optin);
    /* one wave, or forward blocks of two rows each; every multi-wave block
     * with at least 8 row groups (8 rows where a row is a warp's) or else
     * the balanced grid (compare_multiwave_grids: within the planned wave, no
     * more walkers than the rounds they take need, but for whole clusters
     * of partials or span chunks' multiples; a walker is a block, or a
     * cluster where rows are split over clusters), every forward block with
     * at least one row group (or a single block) */
    int64_t blocks = chosen->launch.grid[0];
    bool forward = strcmp(chosen->family, "inner_persistent") == 0;
    int64_t groups = chosen->launch.block[1];
    int64_t least_rows = forward ? groups : chosen->launch.block[0] == 32 ? 8 : 8 * groups;
    if (two_rows_per_block(chosen))
        ck_assert_int_eq(blocks, (rows + 1) / 2);
    else
        ck_assert_int_le(blocks, (int64_t)device.sm_count * 32);
    if (!forward && blocks * least_rows > rows) {
        /* within one wave of the blocks per SM planned */
        const char *per_sm = strstr(chosen->params.description, " blocks/SM");
        ck_assert_ptr_nonnull(per_sm);
        while (per_sm > chosen->params.description && per_sm[-1] >= '0' && per_sm[-1] <= '9')
            per_sm--;
        ck_assert_int_le(blocks, (int64_t)atoi(per_sm) * device.sm_count);
        bool rows_split = strstr(chosen->params.description, "rows split over clusters") != NULL;
        int64_t walkers = rows_split ? blocks / (int64_t)chosen->launch.cluster : blocks;
        int64_t row_groups = (rows + groups - 1) / groups;
        int64_t rounds = (row_groups + walkers - 1) / walkers;
        int64_t balanced = (row_groups + rounds - 1) / rounds;
        /* rounded up to whole clusters of partials or a multiple of span
         * chunks (round_grid_to_multiple; both powers of 2) */
        int64_t multiple = !rows_split && chosen->launch.cluster > 1 ? chosen->launch.cluster : 1;
        if (strstr(chosen->params.description, "-element chunks of the row's aligned span") &&
            chosen->params.vector > multiple)
            multiple = chosen->params.vector;
        ck_assert_int_le(walkers, (balanced + multiple - 1) / multiple * multiple);
    } else {
        ck_assert(blocks == 1 || blocks * least_rows <= rows);
    }
    ck_assert_ptr_nonnull(strstr(chosen->params.description, "blocks/SM"));
}

/* The choice on `device_name` for a norm case at rows x `hidden` with
 * `approach`. */
static void choose_norm(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden,
                        fv_case_approach approach, const char *device_name, choice *chosen)
{
    fv_case *c = norm_case(kind, dtype, rows, hidden, 0);
    ck_assert_ptr_nonnull(c);
    c->approach = approach;
    choose_for(c, device_name, chosen);
    fv_case_free(c);
}

/* The multi-wave choice on `device_name` for a norm case at 16384 x `hidden`. */
static void choose_multiwave(norm_kind kind, fv_dtype dtype, int64_t hidden,
                             const char *device_name, choice *chosen)
{
    choose_norm(kind, dtype, 16384, hidden, FV_APPROACH_MULTIWAVE, device_name, chosen);
}

static fv_case *thunder_layer_norm_backward(fv_case_list *list)
{
    memset(list, 0, sizeof *list);
    FV_ASSERT_OK(fv_frontend_expand_sweep(fv_test_source_path("cases/layer_norm_bwd_thunder.sweep"),
                                          list, NULL, 0));
    for (int32_t i = 0; i < list->count; i++)
        if (strstr(list->cases[i]->id, "/bf16/") != NULL)
            return list->cases[i];
    ck_abort_msg("no bf16 case in layer_norm_bwd_thunder.sweep");
    return NULL;
}

/* Seed 000: Thunder's layer-norm backward (mean as [N], pow(rstd, 3), sums
 * over a size-1 dimension) is one multi-wave kernel on Hopper (and on
 * Blackwell when the multi-wave approach is forced).  H = 2048 in bf16:
 * 8-element vectors, minimum batch 2, so 128 threads with batch 2; two f32
 * partial rows of 16 per thread plus the overhead gives ~96 registers, 5
 * blocks of 4 warps per SM. */
START_TEST(seed_000_thunder_layer_norm_backward)
{
    fv_case_list list;
    fv_case *c = thunder_layer_norm_backward(&list);
    static const struct {
        const char *device;
        int sms;
        int blocks_per_sm; /* the multi-wave rule for 16 elements per thread */
        const char *limit;
    } devices[] = {
        {"H100", 132, 2, "2 blocks/SM (limited by the multi-wave rule: at most 2 without fast "
                         "memory per SM)"},
        {"B200", 148, 3, "3 blocks/SM (limited by the multi-wave rule: at most 3)"}};
    for (size_t d = 0; d < 2; d++) {
        c->approach = d == 0 ? FV_APPROACH_AUTO : FV_APPROACH_MULTIWAVE;
        choice chosen;
        choose_for(c, devices[d].device, &chosen);
        ck_assert_int_eq(chosen.segments, 1);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_int_eq(chosen.params.vector, 8);
        ck_assert_int_eq(chosen.params.block_x, 128);
        ck_assert_int_eq(chosen.params.block_y, 1);
        ck_assert_int_eq(chosen.params.serial, 2);
        ck_assert_msg(strstr(chosen.params.description, "~96 registers") != NULL, "%s",
                      chosen.params.description);
        /* registers allow 5 blocks per SM (nvFuser's choice); our measured
         * multi-wave rule keeps 3 (16 elements per thread), 2 on the H100
         * (no fast memory per SM) */
        ck_assert_msg(strstr(chosen.params.description, "128 threads: batch 2, ~96 registers, "
                                                        "5 blocks/SM (registers)") != NULL,
                      "%s", chosen.params.description);
        ck_assert_msg(strstr(chosen.params.description, devices[d].limit) != NULL, "%s",
                      chosen.params.description);
        ck_assert_int_eq(chosen.launch.grid[0], devices[d].blocks_per_sm * devices[d].sms);
        ck_assert(chosen.launch.cooperative);
        /* dw and db partials: [grid / 2, 2048] floats each (the blocks add
         * theirs together in clusters of 2 first) */
        ck_assert_int_eq(chosen.launch.cluster, 2);
        ck_assert_int_eq(chosen.launch.workspace_bytes, 2LL * chosen.launch.grid[0] / 2 * 2048 * 4);
        /* the registers 2 or 3 blocks/SM leave spare hold the weight and
         * both rows as float (16 each per thread) */
        ck_assert_msg(strstr(chosen.params.description, "held as float in registers: row-constant "
                                                        "inputs and the row buffers, ~144 registers") != NULL,
                      "%s", chosen.params.description);
        /* x and dy rows, and mean and invstd (an entry per thread each), three
         * row slots of each (deepen_prefetch: 2 or 3 blocks x 8 KiB rows in
         * flight per SM are under 32 KiB); no shared copy of the weight */
        ck_assert_msg(strstr(chosen.params.description, "3 row slots (next 2 rows copied") != NULL,
                      "%s", chosen.params.description);
        /* and after them the partial exchange: [2 senders][2 reductions][1024 columns] */
        ck_assert_int_eq(chosen.launch.dynamic_shared_bytes,
                         3 * 2 * 2048 * 2 + 3 * 2 * 128 * 4 + 2 * 2 * 1024 * 4);
        assert_fits(&chosen, devices[d].device, 16384);
    }
    fv_case_list_free(&list);
}
END_TEST

/* The producer is one warp group of 128 threads (nvfuser.md 1.3): a row of
 * its own under compute groups of 128 threads, 128 more threads on x beside
 * a wider group.  LN bwd fp32 16384 x 12288 forced on H100 takes one group of
 * 384 threads (pass D): a block of 512 threads, 128 registers each at launch,
 * 152 for the compute threads after setmaxnreg (a producer row of 384 threads
 * left them 104, and the kernel spilled 304 bytes). */
START_TEST(ws_producer_is_one_warp_group)
{
    choice chosen;
    choose_norm(NORM_LAYER_BACKWARD, FV_F32, 16384, 12288, FV_APPROACH_WS, "H100", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_ws");
    ck_assert_int_eq(chosen.params.block_x, 384);
    ck_assert_int_eq(chosen.params.block_y, 1);
    ck_assert_int_eq(chosen.launch.block[0], 384 + 128);
    ck_assert_int_eq(chosen.launch.block[1], 1);
    ck_assert_msg(strstr(chosen.params.description,
                         "a producer warp group of 128 threads (beside them on x)") != NULL,
                  "%s", chosen.params.description);
    ck_assert_msg(strstr(chosen.params.description, "registers 128 -> producer 56, compute 152") !=
                      NULL,
                  "%s", chosen.params.description);
    /* 152 - 32 (the weight) - 64 (the partials) leaves 56 registers: forced
     * although not good (with nvFuser's 160 it would be) */
    ck_assert(chosen.params.forced_not_good);
    /* RMS bwd bf16 16384 keeps its weight in shared memory: good */
    choose_norm(NORM_RMS_BACKWARD, FV_BF16, 16384, 16384, FV_APPROACH_WS, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.block[0], 384 + 128);
    ck_assert(!chosen.params.forced_not_good);
    /* groups of 128: the producer is a row of its own */
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 16384, 2048, FV_APPROACH_WS, "H100", &chosen);
    ck_assert_int_eq(chosen.params.block_x, 128);
    ck_assert_int_eq(chosen.launch.block[0], 128);
    ck_assert_int_eq(chosen.launch.block[1], 3);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "(a row of its own)"));
    /* forced where the heuristic is not good (one stage): the plan knows */
    choose_norm(NORM_RMS_BACKWARD, FV_F32, 16384, 16384, FV_APPROACH_WS, "H100", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_ws");
    ck_assert(chosen.params.forced_not_good);
}
END_TEST

/* Seed 000 on B200 with the automatic rule: static shapes, 111 rows per SM
 * (> 16 with two inner reductions), a good heuristic: the warp-specialized
 * kernel of nvfuser.md 1.3's worked example (2 compute groups of 128
 * threads, 4 rows per step, 4 stages, the weight in registers). */
START_TEST(seed_000_on_b200_is_warp_specialized)
{
    fv_case_list list;
    fv_case *c = thunder_layer_norm_backward(&list);
    choice chosen;
    choose_for(c, "B200", &chosen);
    ck_assert_int_eq(chosen.segments, 1);
    ck_assert_str_eq(chosen.family, "inner_outer_ws");
    ck_assert_int_eq(chosen.params.block_x, 128);
    ck_assert_int_eq(chosen.params.block_y, 2);
    ck_assert_int_eq(chosen.launch.block[1], 3); /* 2 groups + the producer */
    ck_assert_int_eq(chosen.launch.grid[0], 148);
    ck_assert(chosen.launch.cooperative);
    ck_assert_msg(strstr(chosen.params.description, "4 rows per step, 4 stages") != NULL, "%s",
                  chosen.params.description);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "weight in registers"));
    /* layer norm over 16-bit rows: mean and rstd a step ahead (ws_stats_ahead) */
    ck_assert_ptr_nonnull(
        strstr(chosen.params.description, "weight in registers, row statistics loaded a step ahead"));
    /* x and dy: 4 stages x 4 rows of 2048 bf16 each */
    ck_assert_int_eq(chosen.launch.dynamic_shared_bytes, 2 * 4 * 4 * 2048 * 2);
    ck_assert_int_eq(chosen.launch.workspace_bytes, 2LL * 148 * 2 * 2048 * 4);
    /* the same case with symbolic shapes (the sweep's definition) stays multi-wave */
    fv_case *symbolic = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 2048, 0);
    choose_for(symbolic, "B200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    /* and H = 1023 never takes bulk copies, even when forced */
    fv_case *odd = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 2049, 1023, 0);
    odd->approach = FV_APPROACH_WS;
    choose_for(odd, "H100", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    /* forced on Hopper, a multiple of 16 bytes per row takes it */
    symbolic->approach = FV_APPROACH_WS;
    choose_for(symbolic, "H100", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_ws");
    fv_case_free(odd);
    fv_case_free(symbolic);
    fv_case_list_free(&list);
}
END_TEST

/* nvFuser's multi-wave example (nvfuser.md 1.2) on H100: layer-norm backward
 * at 16384 x 4096 bf16 takes 128 threads with batch 4, whose registers allow
 * 4 blocks per SM (nvFuser's one wave of 528 blocks); with 32 elements per
 * thread our measured multi-wave rule keeps about 8 warps per SM: 2 blocks,
 * 264 in all. */
START_TEST(multi_wave_example_on_h100)
{
    fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 4096, 0);
    ck_assert_ptr_nonnull(c);
    choice chosen;
    choose_for(c, "H100", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    ck_assert_int_eq(chosen.params.block_x * chosen.params.block_y, 128);
    ck_assert_int_eq(chosen.params.serial, 4);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "batch 4, ~128 registers, 4 blocks/SM"));
    ck_assert_int_eq(chosen.launch.grid[0], 264);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "2 blocks/SM (limited by the multi-wave rule"));
    fv_case_free(c);
    /* at H = 8192: 256 threads with batch 4 (32 elements each), 2 blocks/SM
     * by registers, 1 (8 warps) by the rule */
    c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 8192, 0);
    ck_assert_ptr_nonnull(c);
    choose_for(c, "H100", &chosen);
    ck_assert_int_eq(chosen.params.block_x * chosen.params.block_y, 256);
    ck_assert_int_eq(chosen.params.serial, 4);
    ck_assert_int_eq(chosen.launch.grid[0], 132);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "1 blocks/SM (limited by the multi-wave rule"));
    fv_case_free(c);
}
END_TEST

/* partial_cluster_blocks: multi-wave blocks of a row each, two or more per
 * SM, with 8 KiB of partials or more, add their outer partials together in
 * clusters of 2 before the workspace (one partial row per cluster); at one
 * block per SM, with fewer partials, with rows of several per block
 * (combined in the block) or split over clusters, and in forward kernels,
 * they do not. */
START_TEST(partials_added_over_clusters_of_two)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t inner;
        int cluster;      /* expected launch cluster */
        int outer_count;  /* outer reductions */
    } shapes[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 2048, 2, 2},  /* 3 blocks/SM */
        {NORM_LAYER_BACKWARD, FV_BF16, 4096, 2, 2},  /* 2 blocks/SM */
        {NORM_RMS_BACKWARD, FV_BF16, 3072, 2, 1},
        {NORM_LAYER_BACKWARD, FV_F32, 2048, 2, 2},
        {NORM_LAYER_BACKWARD, FV_F32, 1024, 2, 2},   /* 8 KiB of partials per block */
        {NORM_RMS_BACKWARD, FV_F32, 1024, 0, 1},     /* 4 KiB: under PARTIAL_CLUSTER_MIN_BYTES */
        {NORM_LAYER_BACKWARD, FV_BF16, 8192, 0, 2},  /* 1 block/SM */
        {NORM_LAYER_BACKWARD, FV_BF16, 1024, 0, 2},  /* 4 rows per block */
        {NORM_LAYER_BACKWARD, FV_BF16, 32768, 2, 2}, /* rows split over clusters of 2 */
        {NORM_LAYER_FORWARD, FV_BF16, 2048, 0, 0},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        fv_case *c = norm_case(shapes[s].kind, shapes[s].dtype, 16384, shapes[s].inner, 0);
        ck_assert_ptr_nonnull(c);
        c->approach = FV_APPROACH_MULTIWAVE;
        choice chosen;
        choose_for(c, "H100", &chosen);
        bool combined = strstr(chosen.params.description, "partials added over clusters of 2 "
                                                          "blocks before the workspace") != NULL;
        bool rows_split = strstr(chosen.params.description, "rows split over clusters") != NULL;
        ck_assert_msg(combined == (shapes[s].cluster == 2 && !rows_split), "H = %lld: %s",
                      (long long)shapes[s].inner, chosen.params.description);
        ck_assert_int_eq(chosen.launch.cluster, shapes[s].cluster);
        if (combined) {
            ck_assert_int_eq(chosen.launch.grid[0] % 2, 0);
            ck_assert_int_eq(chosen.launch.workspace_bytes,
                             (int64_t)shapes[s].outer_count * chosen.launch.grid[0] / 2 *
                                 shapes[s].inner * 4);
            /* the partial exchange after the row buffers: a float per
             * column of each outer reduction */
            ck_assert_int_ge(chosen.launch.dynamic_shared_bytes,
                             shapes[s].outer_count * shapes[s].inner * 4);
        }
        fv_case_free(c);
    }
}
END_TEST

/* deepen_prefetch: a multi-wave kernel whose rows in flight per SM (one row
 * ahead of each block) are under 32 KiB takes a third row slot, without
 * changing its blocks per SM; at 32 KiB or more, or in a forward kernel, it
 * keeps two. */
START_TEST(few_rows_in_flight_take_a_third_slot)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        int slots;
    } shapes[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 2048, 3}, /* 3 blocks x 8 KiB */
        {NORM_RMS_BACKWARD, FV_BF16, 3072, 3},   /* 2 blocks x 12 KiB */
        {NORM_RMS_BACKWARD, FV_BF16, 6144, 3},   /* 1 block x 24 KiB */
        {NORM_LAYER_BACKWARD, FV_BF16, 4096, 2}, /* 2 blocks x 16 KiB */
        {NORM_RMS_BACKWARD, FV_F32, 2048, 2},    /* 3 blocks x 16 KiB */
        {NORM_LAYER_FORWARD, FV_BF16, 1024, 2},  /* forward: 8 blocks x 2 KiB */
    };
    for (size_t d = 0; d < 2; d++) {
        const char *device = d == 0 ? "H100" : "B200";
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            choice chosen;
            choose_multiwave(shapes[i].kind, shapes[i].dtype, shapes[i].hidden, device, &chosen);
            char expected[32];
            snprintf(expected, sizeof expected, "%d row slots", shapes[i].slots);
            ck_assert_msg(strstr(chosen.params.description, expected) != NULL, "%s H=%lld: %s",
                          device, (long long)shapes[i].hidden, chosen.params.description);
            assert_fits(&chosen, device, 16384);
        }
    }
}
END_TEST

/* Two rows of 128 threads per block where the search gives a row 256
 * threads (pair_rows): one block per SM, twice the batch, one partial row
 * per block in the workspace; at most 48 elements per thread in the pair,
 * 32 for RMS norm (one outer reduction), 64 for layer norm's 16-bit rows on
 * a device of fast memory per SM (H200, B200, GB200; not the H100). */
START_TEST(rows_pair_up_in_256_thread_blocks)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        int block_x, block_y, batch;
        bool fast_memory_only; /* this row holds on the H200, B200 and GB200; the H100
                                  keeps 256 x 1 threads at half the batch */
    } shapes[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 6144, 128, 2, 6, false}, /* 48 elements per thread */
        {NORM_LAYER_BACKWARD, FV_F32, 3072, 128, 2, 6, false},
        {NORM_LAYER_BACKWARD, FV_F32, 4096, 128, 2, 8, false},
        {NORM_RMS_BACKWARD, FV_F32, 4096, 128, 2, 8, false},    /* 32 */
        {NORM_LAYER_BACKWARD, FV_BF16, 8192, 128, 2, 8, true},  /* 64 */
        {NORM_LAYER_BACKWARD, FV_F16, 8192, 128, 2, 8, true},
        {NORM_LAYER_BACKWARD, FV_F32, 8192, 256, 1, 8, false},  /* fp32 keeps 48 */
        {NORM_RMS_BACKWARD, FV_BF16, 6144, 256, 1, 3, false},   /* a pair would hold 48,
                                                                   RMS norm */
        {NORM_RMS_BACKWARD, FV_BF16, 8192, 256, 1, 4, false},   /* ... 64, RMS norm */
        {NORM_LAYER_BACKWARD, FV_BF16, 4096, 128, 1, 4, false}, /* 128 threads a row already */
    };
    static const char *const devices[] = {"H100", "H200", "B200", "GB200"};
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        const char *device = devices[d];
        bool fast_memory = strcmp(device, "H100") != 0;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            choice chosen;
            choose_multiwave(shapes[i].kind, shapes[i].dtype, shapes[i].hidden, device, &chosen);
            const fv_schedule_params *p = &chosen.params;
            bool applies = fast_memory || !shapes[i].fast_memory_only;
            int block_x = applies ? shapes[i].block_x : 2 * shapes[i].block_x;
            int block_y = applies ? shapes[i].block_y : 1;
            int batch = applies ? shapes[i].batch : shapes[i].batch / 2;
            ck_assert_msg(p->block_x == block_x && p->block_y == block_y && p->serial == batch,
                          "%s H=%lld: %s", device, (long long)shapes[i].hidden, p->description);
            bool paired = block_y == 2;
            ck_assert_int_eq(strstr(p->description, "two rows per block (instead of one of 256 "
                                                    "threads), 128 x 2 threads") != NULL,
                             paired);
            if (paired) {
                ck_assert_ptr_nonnull(strstr(p->description, "1 blocks/SM"));
                int outer = shapes[i].kind == NORM_LAYER_BACKWARD ? 2 : 1;
                ck_assert_int_eq(chosen.launch.workspace_bytes,
                                 (long long)outer * chosen.launch.grid[0] * shapes[i].hidden * 4);
            }
            assert_fits(&chosen, device, 16384);
        }
    }
}
END_TEST

/* Pairs only where their busiest SM walks at most 1/8 more rows than the
 * single rows' busiest SM (pair_keeps_the_grid; both on compare_multiwave_grids'
 * grids).  LN bwd bf16 x 8192 on an H200 pairs at N = 16384 (126 rows
 * against 125), 2048 (16 either way), 2049 (16 either way: 129 balanced
 * blocks of pairs) and 216 (2 either way: 108 blocks of pairs, or of 2
 * single rows), not at 64 (32 blocks of pairs, 2 rows, against 64 of 1);
 * on a B200 (148 SMs) at 2048 too (147 balanced blocks of pairs, 14 rows
 * either way).  fp32 x 4096 (pairs of 32 elements): at N = 216 and 432
 * (H200), 2 and 4 rows either way; at 1664 and 2048 (H200) and 16384
 * (H100) the single rows run 2 blocks per SM and the pairs' one block
 * walks the same rows.  LN bwd bf16 216 x 6144 (pairs of 48): paired, on
 * 108 blocks.  Layer norm's rows of an odd length are never paired (the
 * pair would keep them off row spans): 16-bit x 6143 then computes on span
 * chunks in a 256-thread block; RMS norm's fp32 x 4095 keeps its pair, and
 * so do rows of an even length on shorter vectors (x 6142, fp32 x 4094). */
START_TEST(row_pairs_keep_the_rows_per_sm)
{
    static const struct {
        const char *device;
        norm_kind norm;
        fv_dtype dtype;
        int64_t rows, hidden;
        bool paired;
    } shapes[] = {
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 16384, 8192, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 2048, 8192, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 2049, 8192, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 216, 8192, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 64, 8192, false},
        {"B200", NORM_LAYER_BACKWARD, FV_BF16, 16384, 8192, true},
        {"B200", NORM_LAYER_BACKWARD, FV_BF16, 2048, 8192, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 216, 6144, true},
        {"H200", NORM_LAYER_BACKWARD, FV_F32, 216, 4096, true},
        {"H200", NORM_RMS_BACKWARD, FV_F32, 432, 4096, true},
        {"H200", NORM_LAYER_BACKWARD, FV_F32, 1664, 4096, true},
        {"H200", NORM_RMS_BACKWARD, FV_F32, 2048, 4096, true},
        {"H100", NORM_LAYER_BACKWARD, FV_F32, 16384, 4096, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 16384, 6143, false},
        {"H100", NORM_LAYER_BACKWARD, FV_F16, 2048, 6143, false},
        {"H200", NORM_LAYER_BACKWARD, FV_F32, 16384, 4095, false},
        {"H200", NORM_LAYER_BACKWARD, FV_F32, 16384, 3071, false},
        {"H200", NORM_RMS_BACKWARD, FV_F32, 16384, 4095, true},
        {"H200", NORM_LAYER_BACKWARD, FV_BF16, 16384, 6142, true},  /* 2-element vectors */
        {"H200", NORM_LAYER_BACKWARD, FV_F32, 16384, 4094, true},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        choice chosen;
        choose_norm(shapes[i].norm, shapes[i].dtype, shapes[i].rows, shapes[i].hidden,
                    FV_APPROACH_MULTIWAVE, shapes[i].device, &chosen);
        bool paired = strstr(chosen.params.description, "two rows per block") != NULL;
        ck_assert_msg(paired == shapes[i].paired, "%s %s %lld x %lld: %s", shapes[i].device,
                      fv_dtype_name(shapes[i].dtype), (long long)shapes[i].rows,
                      (long long)shapes[i].hidden, chosen.params.description);
        if (shapes[i].hidden == 6143)
            ck_assert_msg(strstr(chosen.params.description,
                                 "256 x 1 threads, batch 4 of 8-element chunks of the row's "
                                 "aligned span") != NULL,
                          "%s", chosen.params.description);
    }
}
END_TEST

/* Rows of at most 128 vectors get a warp each (no block barrier in their
 * inner reductions): bf16 at H = 1024 is 4 rows of 32 x 4 vectors per
 * 128-thread block, 2 blocks/SM by the multi-wave rule (32 elements per
 * thread).  The 4 rows of a block add their dw and db partials together in
 * shared memory first, so the workspace holds one partial row per block.
 * fp32 at H = 1024 (256 vectors) keeps a row per block. */
START_TEST(short_rows_take_a_warp_each)
{
    const char *devices[] = {"H100", "B200"};
    const int sms[] = {132, 148};
    for (int d = 0; d < 2; d++) {
        fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 1024, 0);
        ck_assert_ptr_nonnull(c);
        c->approach = FV_APPROACH_MULTIWAVE;
        choice chosen;
        choose_for(c, devices[d], &chosen);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_int_eq(chosen.params.block_x, 32);
        ck_assert_int_eq(chosen.params.block_y, 4);
        ck_assert_int_eq(chosen.params.serial, 4);
        ck_assert_int_eq(chosen.launch.grid[0], 2 * sms[d]);
        ck_assert_int_eq(chosen.launch.workspace_bytes, 2LL * chosen.launch.grid[0] * 1024 * 4);
        assert_fits(&chosen, devices[d], 16384);
        fv_case_free(c);

        c = norm_case(NORM_LAYER_BACKWARD, FV_F32, 16384, 1024, 0);
        c->approach = FV_APPROACH_MULTIWAVE;
        choose_for(c, devices[d], &chosen);
        ck_assert_int_eq(chosen.params.block_x, 128);
        ck_assert_int_eq(chosen.params.block_y, 1);
        fv_case_free(c);
    }
}
END_TEST

/* Seed 001's shapes: 2048 x H, H = 1024 .. 8192, layer-norm and RMS-norm
 * backward in bf16 and f32, on both devices: one persistent kernel whose
 * row fits the budgets; the batch covers the row exactly once. */
START_TEST(seed_001_shapes_fit_the_budgets)
{
    static const norm_kind kinds[] = {NORM_LAYER_BACKWARD, NORM_RMS_BACKWARD};
    static const fv_dtype dtypes[] = {FV_BF16, FV_F32};
    static const char *const device_names[] = {"H100", "B200"};
    for (int64_t hidden = 1024; hidden <= 8192; hidden += 1024)
        for (size_t k = 0; k < 2; k++)
            for (size_t t = 0; t < 2; t++)
                for (size_t d = 0; d < 2; d++) {
                    fv_case *c = norm_case(kinds[k], dtypes[t], 2048, hidden, 0);
                    ck_assert_ptr_nonnull(c);
                    choice chosen;
                    choose_for(c, device_names[d], &chosen);
                    ck_assert_msg(strcmp(chosen.family, "inner_outer_persistent") == 0,
                                  "H=%lld: %s", (long long)hidden, chosen.family);
                    const fv_schedule_params *p = &chosen.params;
                    int64_t covered = (int64_t)p->serial * p->block_x * p->vector;
                    ck_assert_int_ge(covered, hidden);
                    ck_assert_int_lt(covered - hidden, (int64_t)p->block_x * p->vector);
                    assert_fits(&chosen, device_names[d], 2048);
                    fv_case_free(c);
                }
}
END_TEST

/* The candidate search prefers the candidate with spare registers, then
 * more warps: at H = 16384 bf16 only 512 threads keep the partials within
 * the register file, and the choice is reported with every candidate. */
START_TEST(large_rows_take_more_threads)
{
    fv_case *c = norm_case(NORM_RMS_BACKWARD, FV_BF16, 16384, 16384, 0);
    choice chosen;
    choose_for(c, "B200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    ck_assert_int_eq(chosen.params.block_x, 512);
    ck_assert_int_eq(chosen.params.serial, 4);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "candidates: 512 threads"));
    fv_case_free(c);
}
END_TEST

/* Rows too long for one block on Hopper and Blackwell are split over a
 * thread-block cluster, the smallest of 2, 4 and 8 blocks that fits, when
 * each block's slice of a row still carries at least 64 KiB of buffered
 * inputs.  LN bwd fp32 at H = 20480: no block size fits (256 threads would
 * need 2 x 80 partial registers); in clusters of 2 each block holds 10240
 * columns (80 KiB of x and dy): 256 threads, batch 10 of 4-element vectors.
 * The grid is whole clusters, the workspace one partial row per cluster. */
START_TEST(long_rows_split_over_clusters)
{
    const char *devices[] = {"H100", "B200"};
    for (int d = 0; d < 2; d++) {
        fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_F32, 16384, 20480, 0);
        choice chosen;
        choose_for(c, devices[d], &chosen);
        ck_assert_int_eq(chosen.segments, 1);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_int_eq(chosen.launch.cluster, 2);
        ck_assert_int_eq(chosen.launch.grid[0] % 2, 0);
        ck_assert_int_eq(chosen.params.block_x, 256);
        ck_assert_int_eq(chosen.params.serial, 10);
        ck_assert_int_eq(chosen.launch.workspace_bytes,
                         2LL * (chosen.launch.grid[0] / 2) * 20480 * 4);
        ck_assert_msg(strstr(chosen.params.description,
                             "rows split over clusters of 2 blocks (10240 columns each)") != NULL,
                      "%s", chosen.params.description);
        assert_fits(&chosen, devices[d], 16384);
        fv_case_free(c);
    }
    /* fp32 at H = 32768 needs clusters of 4: 8192 columns (64 KiB) a block */
    fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_F32, 16384, 32768, 0);
    choice chosen;
    choose_for(c, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 4);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "(8192 columns each)"));
    fv_case_free(c);
    /* RMS-norm fp32 at H = 20480 fits one block only with its weight read
     * from device memory in every pass (neither cached nor held as float):
     * clusters of 2 instead, 10240 columns (80 KiB of x and dy) a block,
     * two row slots and the weight's slice cached */
    for (int d = 0; d < 2; d++) {
        c = norm_case(NORM_RMS_BACKWARD, FV_F32, 16384, 20480, 0);
        choose_for(c, devices[d], &chosen);
        ck_assert_int_eq(chosen.launch.cluster, 2);
        ck_assert_msg(strstr(chosen.params.description, "(10240 columns each; a block per row "
                                                        "would read the row-constant inputs "
                                                        "from device memory in every pass)") != NULL &&
                          strstr(chosen.params.description, "2 row slots") != NULL &&
                          strstr(chosen.params.description,
                                 "row-constant inputs cached in shared memory") != NULL,
                      "%s", chosen.params.description);
        assert_fits(&chosen, devices[d], 16384);
        fv_case_free(c);
    }
    /* a row that fits one block keeps a block per row group */
    c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 16384, 0);
    choose_for(c, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 0);
    ck_assert_ptr_null(strstr(chosen.params.description, "clusters"));
    fv_case_free(c);
    /* bf16 at H = 20480 still fits one block: 256 threads, batch 10, 2 x 80
     * partial registers, ~224 registers in all (the limit for a row per
     * block, 255 - REGISTER_MARGIN) */
    c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 20480, 0);
    choose_for(c, "H100", &chosen);
    ck_assert_int_eq(chosen.segments, 1);
    ck_assert_int_eq(chosen.launch.cluster, 0);
    ck_assert_int_eq(chosen.params.block_x, 256);
    ck_assert_int_eq(chosen.params.serial, 10);
    ck_assert_msg(strstr(chosen.params.description, "~224 registers") != NULL, "%s",
                  chosen.params.description);
    fv_case_free(c);
    /* bf16 at H = 32760: no block holds a row, even with partials in
     * shared memory, and clusters of 2 would give slices of 65520 bytes, 16
     * short of 64 KiB, too small to pay for the exchange; so the general
     * path, with the reason */
    c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 16384, 32760, 0);
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table("H100", &device));
    fv_case_plan plan;
    FV_ASSERT_OK(fv_plan_case(c, &device, &plan));
    ck_assert_int_eq(plan.kernel_count, 2);
    ck_assert_msg(strstr(plan.fallback, "clusters of 2: slices of 65520 bytes, under the 65536") !=
                      NULL, "%s", plan.fallback);
    fv_plan_free(&plan);
    fv_case_free(c);
}
END_TEST

/* The devices and dtypes the partials-in-shared-memory tests plan LN bwd
 * on: bf16 and fp16 on a Hopper and a Blackwell device. */
typedef struct sixteen_bit_target {
    const char *device;
    fv_dtype dtype;
} sixteen_bit_target;

static const sixteen_bit_target sixteen_bit_targets[] = {
    {"H100", FV_BF16}, {"H100", FV_F16}, {"B200", FV_BF16}, {"B200", FV_F16}};

/* A planned case and what it was planned on; planned_free releases it. */
typedef struct planned_kernel {
    fv_case *c;
    fv_device device;
    fv_case_plan plan;
} planned_kernel;

static void planned_free(planned_kernel *planned)
{
    fv_plan_free(&planned->plan);
    fv_case_free(planned->c);
}

/* Plans `kind` at rows x hidden in `dtype` on the table device `device_name`
 * with `approach` into *planned. */
static void plan_norm_on(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden,
                         fv_case_approach approach, const char *device_name,
                         planned_kernel *planned)
{
    planned->c = norm_case(kind, dtype, rows, hidden, 0);
    planned->c->approach = approach;
    FV_ASSERT_OK(fv_sched_device_from_table(device_name, &planned->device));
    FV_ASSERT_OK(fv_plan_case(planned->c, &planned->device, &planned->plan));
}

/* Each of `lines` (NULL-terminated) appears in the kernel's source. */
static void assert_source_has(const fv_kernel_plan *kernel, const char *const *lines)
{
    for (; *lines != NULL; lines++)
        ck_assert_msg(strstr(kernel->source, *lines) != NULL, "missing: %s", *lines);
}

/* Asserts that the kernel's source has `lines` (NULL-terminated) in this
 * order. */
static void assert_source_in_order(const fv_kernel_plan *kernel, const char *const *lines)
{
    const char *at = kernel->source;
    for (; *lines != NULL; lines++) {
        const char *found = strstr(at, *lines);
        ck_assert_msg(found != NULL, "missing or out of order: %s", *lines);
        at = found + strlen(*lines);
    }
}

/* Plans LN bwd 16384 x `hidden` on `target`, multi-wave, into *planned;
 * asserts one kernel and returns it. */
static const fv_kernel_plan *plan_layer_norm_backward(const sixteen_bit_target *target,
                                                      int64_t hidden, planned_kernel *planned)
{
    plan_norm_on(NORM_LAYER_BACKWARD, target->dtype, 16384, hidden, FV_APPROACH_MULTIWAVE,
                 target->device, planned);
    ck_assert_int_eq(planned->plan.kernel_count, 1);
    return &planned->plan.kernels[0];
}

/* Stage 2 loads every workspace row a thread adds before adding any (up
 * to 32 floats of them), then adds them in row order: LN bwd bf16 16384 x
 * 2048 on an H100 (396 blocks in clusters of 2: 198 partial rows over 32
 * slices, 2-element vectors, dw and db) loads 8 rows a round, so one round
 * trip to L2 brings a thread's 7; at H = 8192 (4-element vectors) 32
 * floats are 4 rows of both reductions. */
START_TEST(stage_two_loads_a_threads_rows_at_once)
{
    static const struct {
        int64_t hidden;
        const char *parts;    /* the declaration of dw's loaded rows */
        const char *stride;   /* the loop over a thread's rows, a round at a time */
    } shapes[] = {
        {2048, "float part0[8][2];", "first < partial_rows; first += 256)"},
        {8192, "float part0[4][4];", "first < partial_rows; first += 64)"},
    };
    static const sixteen_bit_target h100 = {"H100", FV_BF16};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        planned_kernel planned;
        const fv_kernel_plan *kernel = plan_layer_norm_backward(&h100, shapes[s].hidden, &planned);
        const char *source = kernel->source;
        ck_assert_msg(strstr(source, shapes[s].parts) != NULL, "H = %lld", (long long)shapes[s].hidden);
        ck_assert_msg(strstr(source, shapes[s].stride) != NULL, "H = %lld", (long long)shapes[s].hidden);
        ck_assert_ptr_null(strstr(source, "#pragma unroll 4"));
        /* both reductions' loads come before the first addition */
        const char *load_db = strstr(source, "(workspace + ((long long)1 * partial_rows + p) * inner + column, part1[k])");
        const char *add_dw = strstr(source, "sum0[lane] += part0[k][lane];");
        ck_assert_ptr_nonnull(load_db);
        ck_assert_ptr_nonnull(add_dw);
        ck_assert(load_db < add_dw);
        planned_free(&planned);
    }
}
END_TEST

/* Stage 2 adds a column's slices within a warp by shuffles where stage_x
 * divides a warp: LN bwd bf16 16384 x 2048 on an H100 (4 column vectors x
 * 32 slices, 8 slices to a warp) adds them over offsets 4, 8, 16, and the
 * first slice of each of the 4 warps puts dw's and db's sums in a scratch
 * of 4 x 2 rows, read after one barrier in warp order; a second barrier
 * keeps the scratch until every thread has read it.  At H = 1024 (2 x 64)
 * the offsets start at 2.  RMS bwd bf16 16384 x 16384 on an H200 (32 column
 * vectors: one slice to a warp) keeps the scratch row per slice.  `show`
 * says which. */
START_TEST(stage_two_adds_slices_within_warps)
{
    static const sixteen_bit_target h100 = {"H100", FV_BF16};
    planned_kernel planned;
    const fv_kernel_plan *kernel = plan_layer_norm_backward(&h100, 2048, &planned);
    static const char *const in_warps[] = {
        "__shared__ float stage_scratch[8][4 * 2];",
        "for (int offset = 4; offset < 32; offset *= 2) {",
        "const float other = __shfl_xor_sync(0xffffffffu, sum0[lane], offset);",
        "const float other = __shfl_xor_sync(0xffffffffu, sum1[lane], offset);",
        "if (thread_index % 32 < 4) {  // the warp's first slice",
        "stage_scratch[warp * 2 + 1][(thread_index % 4) * 2 + lane] = sum1[lane];",
        "__syncthreads();",
        "for (int w = 0; w < 4; ++w)",
        "total1[lane] += stage_scratch[w * 2 + 1][(thread_index % 4) * 2 + lane];",
        "__syncthreads();  // the scratch is read before the next columns'",
        "if (slice == 0 && column_active) {",
        NULL};
    assert_source_in_order(kernel, in_warps);
    ck_assert_ptr_null(strstr(kernel->source, "stage_scratch[slice]"));
    ck_assert_msg(strstr(kernel->params.description,
                         "stage 2 4 x 32 threads of 2-element vectors (slices added within warps)") != NULL,
                  "%s", kernel->params.description);
    planned_free(&planned);

    kernel = plan_layer_norm_backward(&h100, 1024, &planned);
    static const char *const short_rows[] = {"for (int offset = 2; offset < 32; offset *= 2) {",
                                             NULL};
    assert_source_has(kernel, short_rows);
    planned_free(&planned);

    /* the warp-specialized kernel's stage 2 spreads over its 12 warps, the
     * producer's included: 8 column vectors x 48 slices */
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 16384, 2048, FV_APPROACH_WS, "H200", &planned);
    ck_assert_int_eq(planned.plan.kernel_count, 1);
    static const char *const warp_specialized[] = {
        "__shared__ float stage_scratch[24][8 * 2];",
        "for (int offset = 8; offset < 32; offset *= 2) {",
        "for (int w = 0; w < 12; ++w)", NULL};
    assert_source_in_order(&planned.plan.kernels[0], warp_specialized);
    planned_free(&planned);

    plan_norm_on(NORM_RMS_BACKWARD, FV_BF16, 16384, 16384, FV_APPROACH_MULTIWAVE, "H200",
                 &planned);
    kernel = &planned.plan.kernels[0];
    static const char *const per_slice[] = {
        "stage_scratch[slice][(thread_index % 32) * 4 + lane] = sum0[lane];",
        "for (int y = 0; y < 16; ++y)", NULL};
    assert_source_has(kernel, per_slice);
    ck_assert_ptr_null(strstr(kernel->source, "__shfl_xor_sync(0xffffffffu, sum0[lane]"));
    ck_assert_ptr_null(strstr(kernel->params.description, "within warps"));
    planned_free(&planned);
}
END_TEST

/* The multi-wave kernels' row slots start on a 128-byte line whatever the
 * static shared memory before them (304 bytes in LN bwd bf16 16384 x 32768
 * on an H200, whose rows are split over clusters). */
START_TEST(row_buffers_start_on_a_128_byte_line)
{
    planned_kernel planned;
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 16384, 32768, FV_APPROACH_MULTIWAVE, "H200",
                 &planned);
    ck_assert_int_eq(planned.plan.kernel_count, 1);
    static const char *const aligned[] = {
        "extern __shared__ __align__(128) unsigned char row_buffers[];", NULL};
    assert_source_has(&planned.plan.kernels[0], aligned);
    planned_free(&planned);
}
END_TEST

/* The kernel's code from its row groups' combine of partials to the grid
 * sync (the rest of the source holds helpers that may use the same text). */
static char *combine_section(const fv_kernel_plan *kernel)
{
    const char *start = strstr(kernel->source, "row groups add their partials together");
    ck_assert_ptr_nonnull(start);
    const char *end = strstr(start, "cooperative_groups::this_grid().sync();");
    ck_assert_ptr_nonnull(end);
    char *section = strndup(start, (size_t)(end - start));
    ck_assert_ptr_nonnull(section);
    return section;
}

/* A block of a warp per row adds its row groups' dw and db partials in one
 * pass over shared memory: every row group stores both reductions' partials
 * ([2][4][1024] floats in LN bwd bf16 16384 x 1024), and after the barrier
 * that follows the stores (two barriers in all) row group y adds the 4
 * groups' vectors of its batch slice y (32 x 4 threads, batch 4) in
 * row-group order and writes them to the block's workspace row.  RMS norm
 * (dw alone) takes the same form; at H = 768 (batch 3) row group 3 adds
 * nothing, and at H = 1000 the last slice's columns past the row are
 * guarded.  A block of two rows of 128 threads (LN bwd fp32 16384 x 4096 on
 * an H200) adds one reduction at a time, row group 0 adding every slice. */
START_TEST(row_groups_combine_partials_in_one_pass)
{
    planned_kernel planned;
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 16384, 1024, FV_APPROACH_MULTIWAVE, "H200",
                 &planned);
    ck_assert_int_eq(planned.plan.kernel_count, 1);
    const fv_kernel_plan *kernel = &planned.plan.kernels[0];
    static const char *const one_pass[] = {
        "float *const combined = reinterpret_cast<float *>(row_buffers);  // [2][4][1024]",
        "__syncthreads();  // the row buffers (or the previous sums) are read",
        "fv_store<8>(combined + threadIdx.y * 1024 + column, partial0[b]);",
        "fv_store<8>(combined + (4 + threadIdx.y) * 1024 + column, partial1[b]);",
        "__syncthreads();",
        "for (int b = threadIdx.y; b < 4; b += 4) {",
        "fv_load<8>(combined + column, sum0);",
        "fv_load<8>(combined + y * 1024 + column, other);",
        "fv_store<8>(workspace + ((long long)0 * partial_rows + partial_row) * inner + column, sum0);",
        "fv_load<8>(combined + 4096 + column, sum1);",
        "fv_load<8>(combined + (4 + y) * 1024 + column, other);",
        "fv_store<8>(workspace + ((long long)1 * partial_rows + partial_row) * inner + column, sum1);",
        "cooperative_groups::this_grid().sync();",
        NULL};
    assert_source_in_order(kernel, one_pass);
    char *section = combine_section(kernel);
    ck_assert_int_eq(fv_test_count_occurrences(section, "__syncthreads();"), 2);
    ck_assert_ptr_null(strstr(section, "if (threadIdx.y == 0) {"));
    free(section);
    planned_free(&planned);

    static const char *const dw_alone[] = {
        "float *const combined = reinterpret_cast<float *>(row_buffers);  // [4][1024]",
        "for (int b = threadIdx.y; b < 4; b += 4) {", NULL};
    static const char *const batch_of_three[] = {
        "float *const combined = reinterpret_cast<float *>(row_buffers);  // [2][4][768]",
        "for (int b = threadIdx.y; b < 3; b += 4) {", NULL};
    static const char *const past_the_row[] = {
        "float *const combined = reinterpret_cast<float *>(row_buffers);  // [2][4][1024]",
        "for (int b = threadIdx.y; b < 4; b += 4) {",
        "const long long column = ((long long)b * 32 + threadIdx.x) * 8;",
        "if (column < inner) {",
        "fv_load<8>(combined + column, sum0);", NULL};
    static const struct {
        norm_kind kind;
        int64_t hidden;
        const char *const *lines;
    } others[] = {
        {NORM_RMS_BACKWARD, 1024, dw_alone},
        {NORM_LAYER_BACKWARD, 768, batch_of_three},
        {NORM_LAYER_BACKWARD, 1000, past_the_row},
    };
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        plan_norm_on(others[k].kind, FV_BF16, 16384, others[k].hidden, FV_APPROACH_MULTIWAVE,
                     "H200", &planned);
        assert_source_in_order(&planned.plan.kernels[0], others[k].lines);
        planned_free(&planned);
    }

    plan_norm_on(NORM_LAYER_BACKWARD, FV_F32, 16384, 4096, FV_APPROACH_MULTIWAVE, "H200",
                 &planned);
    ck_assert_int_eq(planned.plan.kernels[0].params.block_y, 2);
    static const char *const two_rows[] = {
        "float *const combined = reinterpret_cast<float *>(row_buffers);  // [2][4096]",
        "if (threadIdx.y == 0) {",
        "fv_store<4>(workspace + ((long long)0 * partial_rows + partial_row) * inner + column, sum);",
        "__syncthreads();  // the row buffers (or the previous sums) are read",
        "fv_store<4>(combined + threadIdx.y * 4096 + column, partial1[b]);",
        "if (threadIdx.y == 0) {", NULL};
    assert_source_in_order(&planned.plan.kernels[0], two_rows);
    section = combine_section(&planned.plan.kernels[0]);
    ck_assert_int_eq(fv_test_count_occurrences(section, "__syncthreads();"), 4);
    ck_assert_ptr_null(strstr(section, "b = threadIdx.y;"));
    free(section);
    planned_free(&planned);
}
END_TEST

/* A LN bwd kernel with dw's partials in registers ([batch][8] floats a
 * thread) and db's in shared memory at byte `offset` of the row buffers,
 * indexed by `index` ("column", or "offset" in a cluster's slice), whose
 * weight, read from device memory in both passes, is kept in L1. */
static void assert_db_partials_in_shared(const fv_kernel_plan *kernel, int batch, int offset,
                                         const char *index)
{
    char expected[128];
    snprintf(expected, sizeof expected, "float partial0[%d][8];", batch);
    ck_assert_ptr_nonnull(strstr(kernel->source, expected));
    snprintf(expected, sizeof expected,
             "float *const partial1 = reinterpret_cast<float *>(row_buffers + %d);", offset);
    ck_assert_ptr_nonnull(strstr(kernel->source, expected));
    snprintf(expected, sizeof expected, "fv_load<8>(partial1 + %s, partial1_columns);", index);
    ck_assert_ptr_nonnull(strstr(kernel->source, expected));
    snprintf(expected, sizeof expected, "fv_store<8>(partial1 + %s, partial1_columns);", index);
    ck_assert_ptr_nonnull(strstr(kernel->source, expected));
    ck_assert_ptr_null(strstr(kernel->source, "float partial1["));
    ck_assert_ptr_nonnull(strstr(kernel->source, "fv_load_kept_in_l1<8>(in2 + column, v2);"));
}

/* True if a line of `source` stores a row output ("(row) * inner") with
 * `store` (e.g. "fv_store<"). */
static bool stores_rows(const char *source, const char *store)
{
    for (const char *at = strstr(source, store); at != NULL; at = strstr(at + 1, store)) {
        const char *line_end = strchr(at, '\n');
        const char *row = strstr(at, "(row) * inner");
        if (row != NULL && (line_end == NULL || row < line_end))
            return true;
    }
    return false;
}

/* Multi-wave kernels launched in clusters store their row outputs around
 * L1 (stores_rows_around_l1): RMS bwd fp32 x 24576 (rows split over
 * clusters of 2, the weight cached in shared memory, so its loads are
 * plain) and LN bwd bf16 x 2048 (partials added over clusters of 2);
 * RMS bwd fp32 x 8192 (no clusters) and the warp-specialized kernel of
 * RMS bwd fp32 x 24576 keep plain stores. */
START_TEST(clustered_kernels_store_rows_around_l1)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        bool clustered;
    } shapes[] = {
        {NORM_RMS_BACKWARD, FV_F32, 24576, true},
        {NORM_LAYER_BACKWARD, FV_BF16, 2048, true},
        {NORM_RMS_BACKWARD, FV_F32, 8192, false},
    };
    const char *devices[] = {"H100", "H200"};
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            planned_kernel planned;
            plan_norm_on(shapes[i].kind, shapes[i].dtype, 16384, shapes[i].hidden,
                         FV_APPROACH_AUTO, devices[d], &planned);
            ck_assert_int_eq(planned.plan.kernel_count, 1);
            const fv_kernel_plan *kernel = &planned.plan.kernels[0];
            ck_assert_msg((kernel->launch.cluster > 1) == shapes[i].clustered, "%s %lld: %s",
                          devices[d], (long long)shapes[i].hidden, kernel->params.description);
            ck_assert_msg(stores_rows(kernel->source, "fv_store_around_l1<") == shapes[i].clustered,
                          "%s %lld", devices[d], (long long)shapes[i].hidden);
            ck_assert(stores_rows(kernel->source, "fv_store<") == !shapes[i].clustered);
            ck_assert_ptr_null(strstr(kernel->source, "fv_load_kept_in_l1<"));
            planned_free(&planned);
        }
    }
    /* the warp-specialized kernel of the same rows keeps plain stores */
    planned_kernel ws;
    plan_norm_on(NORM_RMS_BACKWARD, FV_F32, 16384, 24576, FV_APPROACH_WS, "H100", &ws);
    ck_assert_str_eq(ws.plan.segmentation.segments[0].scheduler->name, "inner_outer_ws");
    ck_assert(stores_rows(ws.plan.kernels[0].source, "fv_store<"));
    ck_assert(!stores_rows(ws.plan.kernels[0].source, "fv_store_around_l1<"));
    planned_free(&ws);
}
END_TEST

/* Layer-norm backward in 16 bits at H = 24576: no block size holds both
 * f32 partial rows in registers (512 threads, batch 6: 64 + 2 x 48
 * registers over the 120 a thread may have), and clusters of 2 would give
 * slices of 48 KiB, under MIN_SLICE_BYTES.  So a row per block with db's
 * partials in shared memory: x and dy in one row slot (2 x 48 KiB) and
 * db's 24576 floats (96 KiB) fill it; the weight is read from device
 * memory, the row statistics go to registers and stage 2's scratch reuses
 * the row buffers.  dw's partials stay in registers (48 per thread).  On
 * an H100; a device with fast memory per SM splits such a row over clusters
 * of 2 with two row slots instead, see
 * one_slot_rows_split_on_fast_memory_for_layer_norm.  Rows that fit
 * otherwise keep every partial in registers. */
START_TEST(wide_rows_keep_partials_in_shared_memory)
{
    static const sixteen_bit_target targets[] = {{"H100", FV_BF16}, {"H100", FV_F16}};
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        planned_kernel planned;
        const fv_kernel_plan *kernel = plan_layer_norm_backward(&targets[i], 24576, &planned);
        ck_assert_str_eq(planned.plan.segmentation.segments[0].scheduler->name,
                         "inner_outer_persistent");
        ck_assert_int_eq(kernel->params.block_x, 512);
        ck_assert_int_eq(kernel->params.block_y, 1);
        ck_assert_int_eq(kernel->params.serial, 6);
        ck_assert_int_eq(kernel->launch.cluster, 0);
        ck_assert_int_eq(kernel->launch.dynamic_shared_bytes, 2 * 49152 + 98304);
        ck_assert_int_le(kernel->launch.dynamic_shared_bytes,
                         (int)planned.device.shared_per_block_optin);
        ck_assert_msg(strstr(kernel->params.description,
                             "1 row slot, the partials of 1 outer reduction in shared memory "
                             "(no room in registers), ~112 registers") != NULL,
                      "%s", kernel->params.description);
        /* dw in registers, db in shared memory after the row slot */
        assert_db_partials_in_shared(kernel, 6, 98304, "column");
        ck_assert_ptr_null(strstr(kernel->source, "stat3_slots"));
        ck_assert_ptr_null(strstr(kernel->source, "__shared__ float stage_scratch"));
        ck_assert_ptr_nonnull(strstr(kernel->source, "reinterpret_cast<float (*)[256]>(row_buffers)"));
        /* dx's stores do not allocate in L1, which keeps the weight */
        ck_assert_ptr_nonnull(strstr(kernel->source, "fv_store_around_l1<8>(out0 + (row) * inner"));
        ck_assert_int_eq(kernel->launch.workspace_bytes,
                         2LL * kernel->launch.grid[0] * 24576 * 4);
        planned_free(&planned);
    }
    /* shapes whose partials fit registers keep them there */
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
    } in_registers[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 20480},
        {NORM_RMS_BACKWARD, FV_BF16, 24576},
        {NORM_LAYER_BACKWARD, FV_F32, 16384},
    };
    for (size_t i = 0; i < sizeof in_registers / sizeof in_registers[0]; i++) {
        choice chosen;
        choose_multiwave(in_registers[i].kind, in_registers[i].dtype, in_registers[i].hidden, "H100",
                         &chosen);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_msg(strstr(chosen.params.description, "partials of") == NULL, "%s",
                      chosen.params.description);
        ck_assert_msg(strstr(chosen.params.description, "row-constant inputs cached") != NULL ||
                          strstr(chosen.params.description, "held as float") != NULL,
                      "%s", chosen.params.description);
    }
}
END_TEST

/* In clusters, db's partials go to shared memory where registers cannot
 * hold them, so that a slice takes more threads.  LN bwd bf16 / fp16 at
 * H = 32768 in clusters of 2 (16384 columns a block): 512 threads, batch 4,
 * two row slots of x and dy (2 x 64 KiB) and db's 16384 floats (64 KiB)
 * after them; the weight, not cached, is read through L1, whose 60 KiB
 * beside the 196 KiB carveout hold its 32 KiB slice.  fp32 at 32768 does
 * so in clusters of 4.  Not taken: one row slot (RMS bwd fp32 32768 in
 * clusters of 2 keeps 256 threads with its partials in registers), or a
 * weight slice that L1 cannot hold (LN bwd fp32 20480: 40 KiB beside a
 * 228 KiB carveout; it keeps 256 threads with the weight held as float). */
START_TEST(clustered_rows_keep_partials_in_shared_memory)
{
    for (size_t i = 0; i < sizeof sixteen_bit_targets / sizeof sixteen_bit_targets[0]; i++) {
        planned_kernel planned;
        const fv_kernel_plan *kernel =
            plan_layer_norm_backward(&sixteen_bit_targets[i], 32768, &planned);
        ck_assert_int_eq(kernel->launch.cluster, 2);
        ck_assert_int_eq(kernel->params.block_x, 512);
        ck_assert_int_eq(kernel->params.serial, 4);
        ck_assert_int_eq(kernel->launch.dynamic_shared_bytes, 2 * 65536 + 65536);
        ck_assert_msg(strstr(kernel->params.description,
                             "2 row slots (next row copied during this one), the partials of "
                             "1 outer reduction in shared memory (no room in registers)") != NULL,
                      "%s", kernel->params.description);
        ck_assert_ptr_null(strstr(kernel->params.description, "row-constant inputs cached"));
        /* the description lists every candidate, to the last one tried */
        ck_assert_msg(strstr(kernel->params.description,
                             "; 128 threads in clusters of 2 (partials may use shared "
                             "memory): batch 16") != NULL,
                      "%s", kernel->params.description);
        /* dw in registers; db in shared memory, indexed by the offset in
         * the block's slice */
        assert_db_partials_in_shared(kernel, 4, 131072, "offset");
        ck_assert_ptr_nonnull(strstr(kernel->source, "partial1[offset + lane] = 0.0f;"));
        ck_assert_ptr_null(strstr(kernel->source, "partial1 + column"));
        ck_assert_int_eq(kernel->launch.workspace_bytes,
                         2LL * (kernel->launch.grid[0] / 2) * 32768 * 4);
        planned_free(&planned);
    }
    choice chosen;
    choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 32768, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 4);
    ck_assert_int_eq(chosen.params.block_x, 512);
    ck_assert_msg(strstr(chosen.params.description, "2 row slots") != NULL &&
                      strstr(chosen.params.description, "row-constant inputs cached") != NULL &&
                      strstr(chosen.params.description, "the partials of 1 outer reduction") != NULL,
                  "%s", chosen.params.description);
    /* one row slot only: partials stay in registers */
    choose_multiwave(NORM_RMS_BACKWARD, FV_F32, 32768, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 2);
    ck_assert_int_eq(chosen.params.block_x, 256);
    ck_assert_msg(strstr(chosen.params.description, "partials of") == NULL, "%s",
                  chosen.params.description);
    /* the weight's slice would not fit L1: partials stay in registers */
    choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 20480, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 2);
    ck_assert_int_eq(chosen.params.block_x, 256);
    ck_assert_msg(strstr(chosen.params.description, "partials of") == NULL &&
                      strstr(chosen.params.description, "held as float in registers") != NULL,
                  "%s", chosen.params.description);
}
END_TEST

/* Where the memory is fast per SM (H200, B200), a layer-norm row split over
 * clusters of 2 with one row slot goes to clusters of 4 with two: LN bwd
 * fp32 16384 x 24576 (6-11% faster on an H200; 6% slower on an H100, which
 * keeps clusters of 2).  RMS norm (one inner reduction) keeps its one slot. */
START_TEST(one_slot_clusters_double_on_fast_memory_for_layer_norm)
{
    static const char *const fast[] = {"H200", "B200"};
    choice chosen;
    for (size_t d = 0; d < sizeof fast / sizeof fast[0]; d++) {
        choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 24576, fast[d], &chosen);
        ck_assert_int_eq(chosen.launch.cluster, 4);
        ck_assert_int_eq(chosen.params.block_x, 512);
        ck_assert_msg(strstr(chosen.params.description,
                             "rows split over clusters of 4 blocks (6144 columns each)") != NULL &&
                          strstr(chosen.params.description, "2 row slots") != NULL &&
                          strstr(chosen.params.description,
                                 "; one row slot in clusters of 2, so clusters of 4 tried") !=
                              NULL &&
                          strstr(chosen.params.description,
                                 "; clusters of 4 taken: two row slots") != NULL,
                      "%s: %s", fast[d], chosen.params.description);
        choose_multiwave(NORM_RMS_BACKWARD, FV_F32, 24576, fast[d], &chosen);
        ck_assert_int_eq(chosen.launch.cluster, 2);
        ck_assert_msg(strstr(chosen.params.description, "1 row slot") != NULL, "%s",
                      chosen.params.description);
    }
    choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 24576, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 2);
    ck_assert_msg(strstr(chosen.params.description, "1 row slot") != NULL &&
                      strstr(chosen.params.description, "one row slot in clusters") == NULL,
                  "%s", chosen.params.description);
    /* rows that keep two slots in clusters of 2 stay there */
    choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 20480, "H200", &chosen);
    ck_assert_int_eq(chosen.launch.cluster, 2);
    ck_assert_msg(strstr(chosen.params.description, "2 row slots") != NULL &&
                      strstr(chosen.params.description, "one row slot in clusters") == NULL,
                  "%s", chosen.params.description);
}
END_TEST

/* Whether a chosen multi-wave kernel keeps its rows in one block, with the
 * split for two row slots not tried. */
static bool kept_in_a_block(const choice *chosen)
{
    return chosen->launch.cluster == 0 &&
           strstr(chosen->params.description, "one row slot in a block") == NULL;
}

/* The same for a 16-bit layer-norm row that one block holds with one row
 * slot: LN bwd bf16 / fp16 16384 x 24576 go to clusters of 2 with two slots
 * on fast memory (+5.0 / +4.4% on an H200).  RMS norm's one-slot rows, fp32
 * rows, odd-length 16-bit rows (1-element vectors) and the H100 keep a block
 * per row. */
START_TEST(one_slot_rows_split_on_fast_memory_for_layer_norm)
{
    static const char *const fast[] = {"H200", "B200"};
    static const fv_dtype sixteen_bit[] = {FV_BF16, FV_F16};
    choice chosen;
    for (size_t d = 0; d < sizeof fast / sizeof fast[0]; d++) {
        for (size_t t = 0; t < sizeof sixteen_bit / sizeof sixteen_bit[0]; t++) {
            choose_multiwave(NORM_LAYER_BACKWARD, sixteen_bit[t], 24576, fast[d], &chosen);
            const char *text = chosen.params.description;
            ck_assert_int_eq(chosen.launch.cluster, 2);
            ck_assert_msg(strstr(text, "rows split over clusters of 2 blocks (12288 columns "
                                       "each)") != NULL &&
                              strstr(text, "2 row slots") != NULL &&
                              strstr(text, "; one row slot in a block, so clusters of 2 "
                                           "tried") != NULL &&
                              strstr(text, "; clusters of 2 taken: two row slots") != NULL &&
                              strstr(text, "row-constant inputs cached in shared memory") != NULL,
                          "%s: %s", fast[d], text);
            choose_multiwave(NORM_RMS_BACKWARD, sixteen_bit[t], 32768, fast[d], &chosen);
            ck_assert_msg(kept_in_a_block(&chosen) &&
                              strstr(chosen.params.description, "1 row slot") != NULL,
                          "%s: %s", fast[d], chosen.params.description);
        }
        /* fp32 rows in one block keep it (LN bwd fp32 16384: one slot) */
        choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 16384, fast[d], &chosen);
        ck_assert_msg(kept_in_a_block(&chosen) &&
                          strstr(chosen.params.description, "1 row slot") != NULL,
                      "%s: %s", fast[d], chosen.params.description);
    }
    choose_multiwave(NORM_LAYER_BACKWARD, FV_BF16, 24576, "H100", &chosen);
    ck_assert_msg(kept_in_a_block(&chosen), "%s", chosen.params.description);
    /* an odd length (1-element vectors) in one slot stays in its block */
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 2049, 20481, FV_APPROACH_MULTIWAVE, "H200",
                &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    ck_assert_msg(kept_in_a_block(&chosen) &&
                      strstr(chosen.params.description, "1 row slot") != NULL &&
                      strstr(chosen.params.description, "of 1-element vectors") != NULL,
                  "%s", chosen.params.description);
}
END_TEST

/* A row that fits neither registers nor shared memory even in clusters of 8
 * blocks (bf16, H = 262144: 32768 columns a block need 2 x 64 partial
 * registers per thread at 512 threads): the plan falls back to the general
 * families and says why (inner_multipass takes one input along both axes,
 * not dy and x), and the outer reduction splits the rows over the grid. */
START_TEST(oversized_rows_fall_back)
{
    planned_kernel oversized;
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 16384, 262144, FV_APPROACH_AUTO, "H100",
                 &oversized);
    const fv_case_plan *plan = &oversized.plan;
    ck_assert_int_eq(plan->kernel_count, 2);
    ck_assert_str_eq(plan->segmentation.segments[0].scheduler->name, "inner_reduction");
    ck_assert_str_eq(plan->segmentation.segments[1].scheduler->name, "outer_reduction");
    ck_assert_msg(strstr(plan->fallback, "inner_outer_persistent") != NULL, "%s",
                  plan->fallback);
    ck_assert_msg(strstr(plan->fallback, "does not fit the persistent budgets") != NULL, "%s",
                  plan->fallback);
    /* The outer reduction splits its rows until the grid has 32 blocks per
     * SM or more (4224 on the H100's 132): 1024 column slices (32 threads of
     * 8-element vectors, 256 columns each), so 5 splits, 409-410 rows for
     * each of a block's 8 row threads. */
    const fv_launch_shape *outer = &plan->kernels[1].launch;
    ck_assert_int_eq(outer->grid[0], 1024);
    ck_assert_int_eq(outer->grid[1], 5);
    ck_assert_int_eq(outer->block[1], 8);
    planned_free(&oversized);
    /* ... but into at most ceil(rows / (32 x 8)) splits: 512 rows in 2 (32
     * rows per thread), 257 rows in 2 as well (16 or 17) */
    static const int64_t few_rows[] = {512, 257};
    for (size_t i = 0; i < sizeof few_rows / sizeof few_rows[0]; i++) {
        plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, few_rows[i], 262144, FV_APPROACH_AUTO, "H100",
                     &oversized);
        ck_assert_int_eq(oversized.plan.kernel_count, 2);
        ck_assert_int_eq(oversized.plan.kernels[1].launch.grid[1], 2);
        planned_free(&oversized);
    }
}
END_TEST

/* hold_floats: a 16-bit row buffer on full 16-byte vectors may take the
 * register estimate to 224, where an fp32 one or a weight stops at 223.
 * LN bwd bf16 16384 x 8192 (256 threads, 1 block per SM, 32 elements per
 * thread) then holds the weight and both rows as float (192 + 32); fp32 at
 * 16384 x 4096 (the same 192 before its rows) holds only the weight.  The
 * odd-length bf16 rows of 2048 x 4095 kept one row as float on 1-element
 * vectors; on span chunks (40 elements a thread) only the weight is held
 * (drop_row_floats_to_fit). */
START_TEST(sixteen_bit_rows_held_as_float_up_to_224_registers)
{
    choice chosen;
    choose_multiwave(NORM_LAYER_BACKWARD, FV_BF16, 8192, "H100", &chosen);
    ck_assert_msg(strstr(chosen.params.description, "held as float in registers: row-constant "
                                                    "inputs and the row buffers, ~224 registers") != NULL,
                  "%s", chosen.params.description);
    choose_multiwave(NORM_LAYER_BACKWARD, FV_F32, 4096, "H100", &chosen);
    ck_assert_msg(strstr(chosen.params.description, "held as float in registers: row-constant "
                                                    "inputs, ~192 registers") != NULL,
                  "%s", chosen.params.description);
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 2048, 4095, FV_APPROACH_MULTIWAVE, "H100", &chosen);
    ck_assert_msg(strstr(chosen.params.description, "batch 5 of 8-element chunks of the row's "
                                                    "aligned span") != NULL &&
                      strstr(chosen.params.description, "held as float in registers: row-constant "
                                                        "inputs, ~184 registers") != NULL,
                  "%s", chosen.params.description);
}
END_TEST

/* The launch bounds of the one kernel of `kind` at 16384 x `hidden` on
 * `device_name`: the minimum blocks per SM they ask for, and *planned, the
 * blocks per SM of the plan's description. */
static int bounded_blocks(norm_kind kind, fv_dtype dtype, int64_t hidden, const char *device_name,
                          int *planned)
{
    choice chosen;
    choose_norm(kind, dtype, 16384, hidden, FV_APPROACH_AUTO, device_name, &chosen);
    ck_assert_int_eq(chosen.segments, 1);
    ck_assert_int_gt(chosen.bounded_blocks, 0);
    const char *description = chosen.params.description;
    const char *per_sm = strstr(description, " blocks/SM");
    ck_assert_ptr_nonnull(per_sm);
    while (per_sm > description && per_sm[-1] >= '0' && per_sm[-1] <= '9')
        per_sm--;
    *planned = atoi(per_sm);
    return chosen.bounded_blocks;
}

/* Asserts that the auto plan of `kind` at 16384 x `hidden` on `device_name`
 * gives `limit` as what limits its blocks per SM. */
static void assert_blocks_limit(norm_kind kind, fv_dtype dtype, int64_t hidden,
                                const char *device_name, const char *limit)
{
    choice chosen;
    choose_norm(kind, dtype, 16384, hidden, FV_APPROACH_AUTO, device_name, &chosen);
    ck_assert_msg(strstr(chosen.params.description, limit) != NULL, "%s: %s", device_name,
                  chosen.params.description);
}

/* The multi-wave rule for threads of fewer than 24 elements of a row, on
 * full 16-byte vectors: at most 2 blocks per SM on the H100, and on every
 * device where a row's buffered inputs come to 16 KiB or more; otherwise
 * at most 3 (H200, B200), and for rows of an odd length everywhere.
 * Threads of 24 or more keep about 8 warps per SM on every device. */
START_TEST(short_slices_take_two_blocks_by_memory_and_row_bytes)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        int h100, h200; /* blocks per SM */
    } shapes[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 2048, 2, 3}, /* 16 elements per thread */
        {NORM_RMS_BACKWARD, FV_F16, 2048, 2, 3},
        {NORM_LAYER_BACKWARD, FV_F32, 1024, 2, 3},  /* 8; rows of 8 KiB */
        {NORM_RMS_BACKWARD, FV_F32, 2048, 2, 2},    /* 16; rows of 16 KiB */
        {NORM_LAYER_BACKWARD, FV_F32, 2048, 2, 2},
        {NORM_LAYER_BACKWARD, FV_BF16, 4096, 2, 2}, /* 32: ~8 warps on both */
        {NORM_RMS_BACKWARD, FV_BF16, 1024, 2, 2},   /* 4 rows of 32 elements per block */
        {NORM_RMS_BACKWARD, FV_BF16, 1023, 3, 3},   /* odd: 1-element vectors keep 3 */
        {NORM_LAYER_BACKWARD, FV_F32, 1023, 3, 3},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int d = 0; d < 2; d++) {
            const char *device = d == 0 ? "H100" : "H200";
            int blocks = d == 0 ? shapes[s].h100 : shapes[s].h200;
            choice chosen;
            choose_norm(shapes[s].kind, shapes[s].dtype, 16384, shapes[s].hidden,
                        FV_APPROACH_AUTO, device, &chosen);
            ck_assert_int_eq(chosen.segments, 1);
            ck_assert_str_eq(chosen.family, "inner_outer_persistent");
            char expected[64];
            snprintf(expected, sizeof expected, " %d blocks/SM (limited by the multi-wave rule",
                     blocks);
            ck_assert_msg(strstr(chosen.params.description, expected) != NULL, "%s, H = %lld: %s",
                          device, (long long)shapes[s].hidden, chosen.params.description);
            ck_assert_int_eq(chosen.launch.grid[0], blocks * 132);
        }
    }
    /* the reason given: the row's bytes (on the H100 both reasons hold) */
    static const char *const devices[] = {"H100", "H200", "B200"};
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++)
        assert_blocks_limit(NORM_LAYER_BACKWARD, FV_F32, 2048, devices[d],
                            "2 blocks/SM (limited by the multi-wave rule: at most 2 with rows "
                            "of 16 KiB or more)");
    /* and the memory on the H100 for rows of 8 KiB */
    assert_blocks_limit(NORM_LAYER_BACKWARD, FV_BF16, 2048, "H100",
                        "2 blocks/SM (limited by the multi-wave rule: at most 2 without fast "
                        "memory per SM)");
}
END_TEST

/* Multi-wave kernels on full 16-byte vectors ask ptxas for the blocks per
 * SM their cooperative grid is sized for where the memory is fast per SM
 * (H200: 36 GB/s, B200: 54), and leave it the registers on the H100 (25
 * GB/s) and on rows of an odd length; forward kernels ask for 1 block
 * everywhere. */
START_TEST(multi_wave_launch_bounds_follow_the_memory)
{
    int planned = 0;
    ck_assert_int_eq(bounded_blocks(NORM_LAYER_BACKWARD, FV_BF16, 2048, "H200", &planned), 3);
    ck_assert_int_eq(planned, 3);
    ck_assert_int_eq(bounded_blocks(NORM_RMS_BACKWARD, FV_BF16, 2048, "B200", &planned), planned);
    ck_assert_int_gt(planned, 1);
    ck_assert_int_eq(bounded_blocks(NORM_LAYER_BACKWARD, FV_BF16, 2048, "H100", &planned), 1);
    ck_assert_int_eq(planned, 2);
    ck_assert_int_eq(bounded_blocks(NORM_LAYER_BACKWARD, FV_BF16, 1023, "H200", &planned), 1);
    ck_assert_int_gt(planned, 1);
    ck_assert_int_eq(bounded_blocks(NORM_LAYER_FORWARD, FV_BF16, 2048, "H200", &planned), 1);
    ck_assert_int_gt(planned, 1);
}
END_TEST

/* The inner-persistent choice on `device_name` for `kind` at rows x hidden. */
static void choose_forward(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden,
                           const char *device_name, choice *chosen)
{
    choose_norm(kind, dtype, rows, hidden, FV_APPROACH_AUTO, device_name, chosen);
    ck_assert_str_eq(chosen->family, "inner_persistent");
}

/* A forward norm at N = 16384 x hidden. */
typedef struct forward_shape {
    norm_kind kind;
    fv_dtype dtype;
    int64_t hidden;
} forward_shape;

static bool rows_held_as_float(const choice *chosen)
{
    return strstr(chosen->params.description, "held as float in registers: the row buffers") != NULL;
}

/* Multi-wave grids at small N (compare_multiwave_grids), and what `show` says
 * of them (multiwave_grid_text): the balanced grid (the
 * fewest rounds a wave allows, over as few blocks as take them) where its
 * busiest SM walks fewer rows than the 8-row grid's (blocks of 8 rows or 8
 * row groups), or as many where the 8-row grid leaves SMs idle and the rows
 * are wider than a warp; else the 8-row grid.  A balanced grid rounded to
 * a multiple (span chunks, clusters of partials) is rounded up where
 * rounding down would add a round (round_grid_to_multiple: LN bwd bf16 500
 * x 1987 on span chunks, 250 blocks -> 256, not 248).  H200 (132 SMs):
 *   LN bwd bf16 216 x 4096: 128-thread rows at 2 blocks/SM, 216 blocks of
 *   a row (26 of 8-9 rows before); 1296 x 4096: 5 rounds of 260 blocks (10
 *   rows on the busiest SM, against 16 on 162 blocks); 864 x 16384: 7
 *   rounds of 124 (against 8 of 108);
 *   a tie where the 8-row grid leaves SMs idle: LN bwd fp32 864 x 2048, 216
 *   blocks of 4 rows (2 on an SM) against 108 of 8; not for warp rows (LN
 *   bwd bf16 864 x 1024 keeps 108 blocks of 2 row groups);
 *   kept: LN bwd bf16 2049 x 1987 (3 blocks/SM: 342 blocks of 6 rows, 3 on
 *   an SM, walk the 18 rows that 256 of 8-9 rows, 2 on an SM, walk; the
 *   larger grid ran 10% slower), fp32 2049 x 1024 and bf16 2048 x 2048 (the
 *   same), and every grid at N = 16384 (264 blocks at x 4096). */
START_TEST(small_batches_take_balanced_grids)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t rows, hidden;
        int grid;
        const char *why;  /* what `show` says of the grid (NULL: nothing) */
    } shapes[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 216, 4096, 216,
         "(balanced: 1 round of row groups, 2 rows on the busiest SM, against 8 on the 27 "
         "blocks of nvFuser's 8 rows a block)"},
        {NORM_LAYER_BACKWARD, FV_BF16, 1296, 4096, 260, "(balanced: 5 rounds"},
        {NORM_LAYER_BACKWARD, FV_BF16, 864, 16384, 124, "(balanced: 7 rounds"},
        {NORM_LAYER_BACKWARD, FV_F32, 864, 2048, 216,
         "8 rows on the busiest SM, as many as on the 108 blocks of nvFuser's 8 rows a block, "
         "which leave SMs idle)"},
        {NORM_LAYER_BACKWARD, FV_BF16, 864, 1024, 108, "kept for rows of a warp or less)"},
        {NORM_LAYER_BACKWARD, FV_BF16, 500, 1987, 256, "(balanced: 2 rounds"},
        {NORM_LAYER_BACKWARD, FV_BF16, 2049, 1987, 256,
         "(nvFuser's 8 rows a block: 18 rows on the busiest SM, as many as on the balanced "
         "grid of 342 blocks, kept where every SM has a block)"},
        {NORM_LAYER_BACKWARD, FV_F32, 2049, 1024, 256, "kept where every SM has a block)"},
        {NORM_LAYER_BACKWARD, FV_BF16, 2048, 2048, 256,
         "16 rows on the busiest SM, against 18 on the balanced grid"},
        {NORM_LAYER_BACKWARD, FV_BF16, 16384, 4096, 264, NULL},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        choice chosen;
        choose_norm(shapes[i].kind, shapes[i].dtype, shapes[i].rows, shapes[i].hidden,
                    FV_APPROACH_MULTIWAVE, "H200", &chosen);
        ck_assert_msg((int)chosen.launch.grid[0] == shapes[i].grid, "case %zu: grid %d: %s", i,
                      (int)chosen.launch.grid[0], chosen.params.description);
        const char *description = chosen.params.description;
        if (shapes[i].why != NULL)
            ck_assert_msg(strstr(description, shapes[i].why) != NULL, "case %zu: %s", i,
                          description);
        else
            ck_assert_msg(strstr(description, "(balanced: ") == NULL &&
                              strstr(description, "(nvFuser's 8 rows a block: ") == NULL,
                          "case %zu: %s", i, description);
        assert_fits(&chosen, "H200", shapes[i].rows);
    }
}
END_TEST

/* Forward kernels with a var_mean (layer norm) hold 16-bit rows of full
 * 16-byte vectors as float in registers, at the cost of blocks per SM;
 * softmax, RMS norm, fp32 and rows of an odd length do not.  Forward grids
 * are one wave with at least one row group per block; multi-wave blocks
 * keep at least 8 row groups, or 8 rows where a row is a warp's, unless
 * the balanced grid of compare_multiwave_grids walks fewer rows on the busiest
 * SM (216 rows of warp rows: 54 blocks of a row group). */
START_TEST(forward_rows_held_as_float_in_one_wave)
{
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table("H100", &device));
    choice chosen;
    /* N = 2048 fills too few waves for blocks of two rows (at N = 16384 the
     * H200 leaves these floats out: forward_rows_left_in_shared_for_two_rows) */
    fv_device h200;
    FV_ASSERT_OK(fv_sched_device_from_table("H200", &h200));
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 2048, 3072, "H200", &chosen);
    ck_assert_msg(rows_held_as_float(&chosen), "%s", chosen.params.description);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "5 blocks/SM (limited by registers)"));
    ck_assert_int_eq(chosen.launch.grid[0], 5 * h200.sm_count);
    choose_forward(NORM_LAYER_FORWARD, FV_F16, 16384, 2048, "B200", &chosen);
    ck_assert_msg(rows_held_as_float(&chosen), "%s", chosen.params.description);
    /* a warp per row, 4 rows per block: one wave, fewer than 8 row groups each */
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 16384, 1024, "H100", &chosen);
    ck_assert_msg(rows_held_as_float(&chosen), "%s", chosen.params.description);
    ck_assert_int_eq(chosen.launch.block[1], 4);
    ck_assert_int_eq(chosen.launch.grid[0], 5 * device.sm_count);
    /* 216 rows: a block per row group of 4 */
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 216, 1024, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.grid[0], 54);

    static const forward_shape not_held[] = {
        {NORM_RMS_FORWARD, FV_BF16, 4096},   /* two passes over the row */
        {NORM_SOFTMAX, FV_BF16, 2048},       /* three, measured slower */
        {NORM_LAYER_FORWARD, FV_F32, 4096},  /* no conversion to save */
        {NORM_LAYER_FORWARD, FV_BF16, 4095}, /* 1-element vectors */
    };
    for (size_t i = 0; i < sizeof not_held / sizeof not_held[0]; i++) {
        choose_forward(not_held[i].kind, not_held[i].dtype, 16384, not_held[i].hidden, "H100",
                       &chosen);
        ck_assert_msg(!rows_held_as_float(&chosen), "%s", chosen.params.description);
        assert_fits(&chosen, "H100", 16384);
    }

    /* multi-wave at 2048 rows, a warp per row: 8 rows (2 row groups of 4)
     * each; at 216 rows the balanced grid (compare_multiwave_grids) of 54 blocks,
     * a row group each, where 27 blocks of 8 rows left most SMs idle; a
     * block of two 128-thread fp32 rows at 2048 x 4096 keeps 8 row groups
     * (16 rows) */
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 2048, 1024, FV_APPROACH_AUTO, "H100", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    ck_assert_int_eq(chosen.launch.block[0], 32);
    ck_assert_int_eq(chosen.launch.grid[0], 2048 / 8);
    choose_norm(NORM_RMS_BACKWARD, FV_F16, 216, 1024, FV_APPROACH_AUTO, "H200", &chosen);
    ck_assert_int_eq(chosen.launch.block[0], 32);
    ck_assert_int_eq(chosen.launch.grid[0], 216 / 4);
    choose_norm(NORM_LAYER_BACKWARD, FV_F32, 2048, 4096, FV_APPROACH_AUTO, "H200", &chosen);
    ck_assert_int_eq(chosen.launch.block[0], 128);
    ck_assert_int_eq(chosen.launch.block[1], 2);
    ck_assert_int_eq(chosen.launch.grid[0], 2048 / (8 * 2));
}
END_TEST

/* A forward kernel holding its exp, compiled to more registers than fit the
 * blocks per SM its plan sized the grid for, is emitted again bounded to
 * them on a device of fast memory per SM (softmax fwd bf16 16384 x 12288 on
 * the H200: 128 threads, 3 blocks planned, 192 registers fit 2); not where
 * the compiled registers fit, not on the H100, and not in a kernel that
 * holds no values (RMS fwd bf16 x 4095).  The replaced kernel can be put
 * back. */
/* Asserts that the 128-thread kernel of `planned`, planned at 3 blocks per
 * SM, stays unbounded compiled to `fitting` registers and is bounded to the
 * 3 blocks compiled to `too_many` (which fit 2), then puts it back. */
static void assert_bounded_to_three_blocks(planned_kernel *planned, int fitting, int too_many)
{
    fv_kernel_plan *kernel = &planned->plan.kernels[0];
    ck_assert_ptr_nonnull(strstr(kernel->source, "__launch_bounds__(128, 1)"));
    fv_kernel_plan previous;
    bool bounded = true;
    kernel->compiled_registers = fitting;
    FV_ASSERT_OK(fv_plan_hold_occupancy(kernel, &planned->device, &previous, &bounded));
    ck_assert(!bounded);
    kernel->compiled_registers = too_many;
    FV_ASSERT_OK(fv_plan_hold_occupancy(kernel, &planned->device, &previous, &bounded));
    ck_assert(bounded);
    ck_assert_ptr_nonnull(strstr(kernel->source, "__launch_bounds__(128, 3)"));
    char note[160];
    snprintf(note, sizeof note,
             "bounded to the 3 blocks per SM planned (__launch_bounds__): unbounded it took %d "
             "registers, which fit 2", too_many);
    ck_assert_str_eq(kernel->relief_note, note);
    char hash[sizeof kernel->hash];
    memcpy(hash, kernel->hash, sizeof hash);
    fv_plan_restore_kernel(kernel, &previous);
    ck_assert_ptr_nonnull(strstr(kernel->source, "__launch_bounds__(128, 1)"));
    ck_assert_str_eq(kernel->relief_note, "");
    ck_assert_str_ne(kernel->hash, hash);
}

/* Asserts that the kernel of `kind` bf16 16384 x `hidden` on `device`,
 * compiled to `registers`, is not bounded to its planned blocks. */
static void assert_left_unbounded(norm_kind kind, int64_t hidden, const char *device,
                                  int registers)
{
    planned_kernel planned;
    plan_norm_on(kind, FV_BF16, 16384, hidden, FV_APPROACH_AUTO, device, &planned);
    fv_kernel_plan *kernel = &planned.plan.kernels[0];
    fv_kernel_plan previous;
    bool bounded = true;
    kernel->compiled_registers = registers;
    FV_ASSERT_OK(fv_plan_hold_occupancy(kernel, &planned.device, &previous, &bounded));
    ck_assert_msg(!bounded, "%s", kernel->params.description);
    planned_free(&planned);
}

START_TEST(held_kernels_are_bounded_to_their_planned_blocks)
{
    planned_kernel planned;
    plan_norm_on(NORM_SOFTMAX, FV_BF16, 16384, 12288, FV_APPROACH_AUTO, "H200", &planned);
    assert_bounded_to_three_blocks(&planned, 160, 192);
    planned_free(&planned);

    static const struct {
        norm_kind kind;
        int64_t hidden;
        const char *device;
        int registers;
    } kept[] = {
        {NORM_SOFTMAX, 12288, "H100", 192},       /* slower memory per SM */
        {NORM_RMS_FORWARD, 4095, "H200", 95},     /* no held values */
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        assert_left_unbounded(kept[i].kind, kept[i].hidden, kept[i].device, kept[i].registers);
}
END_TEST

/* A multi-wave kernel on span chunks, whose register estimate falls far
 * short, is bounded to its planned blocks per SM too: LN bwd bf16 16384 x
 * 1987 on the H200 (128 threads, 3 blocks planned; unbounded NVRTC gave it
 * 246 registers, which fit 2).  Not where the registers fit, not on the
 * H100, and not a multi-wave kernel element by element (x 1023, whose
 * registers ran far over their estimates when bounded). */
START_TEST(span_chunk_backward_kernels_are_bounded_to_their_planned_blocks)
{
    planned_kernel planned;
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 16384, 1987, FV_APPROACH_AUTO, "H200", &planned);
    ck_assert_ptr_nonnull(strstr(planned.plan.kernels[0].params.description,
                                 "chunks of the row's aligned span"));
    assert_bounded_to_three_blocks(&planned, 168, 246);
    planned_free(&planned);

    static const struct {
        int64_t hidden;
        const char *device;
    } kept[] = {
        {1987, "H100"},  /* slower memory per SM */
        {1023, "H200"},  /* element by element (3 blocks planned, bound at 1) */
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        assert_left_unbounded(NORM_LAYER_BACKWARD, kept[i].hidden, kept[i].device, 254);
}
END_TEST

/* fp32 softmax rows that one slot holds are copied as spans only to be
 * computed on their chunks: 4096 x 50257 on the H200 (25 chunks of 4 per
 * thread); at 55297 the chunks no longer fit shared memory and the rows
 * keep their 4-byte copies, element by element.  Layer norm (row
 * constants) keeps them at 32767. */
START_TEST(one_slot_spans_only_on_chunks)
{
    choice chosen;
    choose_forward(NORM_SOFTMAX, FV_F32, 4096, 50257, "H200", &chosen);
    ck_assert_msg(strstr(chosen.params.description,
                         "batch 25 of 4-element chunks of the row's aligned span") != NULL &&
                      strstr(chosen.params.description,
                             "1 row slot (copied as the aligned 16-byte chunks that hold it)") !=
                          NULL,
                  "%s", chosen.params.description);
    static const forward_shape element_by_element[] = {
        {NORM_SOFTMAX, FV_F32, 55297},
        {NORM_LAYER_FORWARD, FV_F32, 32767},
    };
    for (size_t i = 0; i < 2; i++) {
        choose_forward(element_by_element[i].kind, FV_F32, 4096, element_by_element[i].hidden,
                       "H200", &chosen);
        ck_assert_msg(strstr(chosen.params.description, "of 1-element vectors") != NULL &&
                          strstr(chosen.params.description, "aligned") == NULL,
                      "%s", chosen.params.description);
    }
}
END_TEST

/* The blocks a launch takes where fewer are resident than its grid: a
 * one-wave grid (resident) or a cooperative one is clamped, to a multiple of
 * its grid_multiple where it has one (at least one multiple); a grid of
 * waves by design keeps its blocks. */
START_TEST(launch_blocks_clamp_to_the_resident)
{
    fv_launch_shape shape = {.grid = {792, 1, 1}, .resident = true, .grid_multiple = 8};
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 792), 792);
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 1000), 792);
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 660), 656);  /* 5 of 6 blocks per SM */
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 5), 8);
    shape.grid_multiple = 0;
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 660), 660);
    shape.resident = false;
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 660), 792);
    shape.cooperative = true;
    ck_assert_int_eq(fv_sched_launch_blocks(&shape, 264), 264);
}
END_TEST

/* Forward blocks of a row each, left in shared memory on full 16-byte
 * vectors, at 3 or more blocks per SM walk two rows and end, over a grid of
 * rows / 2 blocks where that fills 4 waves or more; at 1-2 blocks per SM
 * only rows of one input with a single reduction (RMS norm) do.  A warp per
 * row and rows of an odd length keep one wave, and so do rows held as float
 * shorter than 8 KiB on devices of 30 GB/s of DRAM bandwidth per SM or more
 * (H200). */
START_TEST(forward_blocks_of_two_rows)
{
    static const forward_shape two_rows[] = {
        {NORM_RMS_FORWARD, FV_BF16, 4096},   /* 7 blocks/SM */
        {NORM_RMS_FORWARD, FV_F32, 2048},
        {NORM_SOFTMAX, FV_BF16, 8192},
        {NORM_LAYER_FORWARD, FV_F32, 1024},
    };
    choice chosen;
    for (size_t i = 0; i < sizeof two_rows / sizeof two_rows[0]; i++) {
        choose_forward(two_rows[i].kind, two_rows[i].dtype, 16384, two_rows[i].hidden, "H100",
                       &chosen);
        ck_assert_msg(two_rows_per_block(&chosen), "%s", chosen.params.description);
        ck_assert_int_eq(chosen.launch.block[1], 1);
        ck_assert_int_eq(chosen.launch.grid[0], 8192);
        ck_assert(!chosen.launch.resident);  /* waves by design: not clamped at launch */
        assert_fits(&chosen, "H100", 16384);
    }
    /* an odd count of rows: the last block walks one */
    choose_forward(NORM_RMS_FORWARD, FV_BF16, 16385, 4096, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.grid[0], 8193);
    /* rows for fewer than 4 waves of such blocks keep the wave: 924 blocks
     * (7 per SM) for 2049 rows, a block per row for 216 */
    choose_forward(NORM_RMS_FORWARD, FV_BF16, 2049, 4096, "H100", &chosen);
    ck_assert_msg(!two_rows_per_block(&chosen), "%s", chosen.params.description);
    ck_assert_int_eq(chosen.launch.grid[0], 7 * 132);
    choose_forward(NORM_RMS_FORWARD, FV_BF16, 216, 4096, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.grid[0], 216);

    /* one wave on the H100's 132 SMs */
    static const struct {
        forward_shape shape;
        int grid;
    } one_wave[] = {
        {{NORM_RMS_FORWARD, FV_BF16, 1024}, 8 * 132},   /* a warp per row */
        {{NORM_SOFTMAX, FV_F32, 16384}, 132},           /* 1 block per SM */
        {{NORM_SOFTMAX, FV_BF16, 16384}, 2 * 132},      /* 2 blocks per SM, 2 reduction levels */
        {{NORM_LAYER_FORWARD, FV_F32, 1987}, 6 * 132},  /* 1-element vectors */
    };
    for (size_t i = 0; i < sizeof one_wave / sizeof one_wave[0]; i++) {
        const forward_shape *shape = &one_wave[i].shape;
        choose_forward(shape->kind, shape->dtype, 16384, shape->hidden, "H100", &chosen);
        ck_assert_msg(!two_rows_per_block(&chosen), "%s", chosen.params.description);
        ck_assert_int_eq(chosen.launch.grid[0], one_wave[i].grid);
        /* clamped at launch to the blocks the compiled kernel keeps resident */
        ck_assert(chosen.launch.resident);
        ck_assert_int_le(chosen.launch.grid_multiple, 1);
    }
    /* on span chunks with the row constants at the rows' shift (RMS fwd
     * bf16 x 4095, 6 blocks per SM), a clamped grid stays a multiple of the
     * chunk's 8 elements; softmax, a shift per row, needs no multiple */
    choose_forward(NORM_RMS_FORWARD, FV_BF16, 16384, 4095, "H200", &chosen);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "8-element chunks"));
    ck_assert(chosen.launch.resident);
    ck_assert_int_eq(chosen.launch.grid_multiple, 8);
    ck_assert_int_eq(chosen.launch.grid[0] % 8, 0);
    choose_forward(NORM_SOFTMAX, FV_BF16, 16384, 4095, "H200", &chosen);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "8-element chunks"));
    ck_assert(chosen.launch.resident);
    ck_assert_int_le(chosen.launch.grid_multiple, 1);
    /* a single block reduction per row of one input (RMS norm) takes two rows
     * at 1-2 blocks per SM too; the same rows with two inputs (the first
     * segment of LN bwd at 2049 x 32760) keep the wave */
    static const struct {
        fv_dtype dtype;
        int64_t hidden;
        int blocks_per_sm;
    } single_reduction[] = {
        {FV_BF16, 16384, 2}, {FV_BF16, 32768, 1}, {FV_F32, 6144, 2}, {FV_F32, 32768, 1},
    };
    for (size_t i = 0; i < sizeof single_reduction / sizeof single_reduction[0]; i++) {
        choose_forward(NORM_RMS_FORWARD, single_reduction[i].dtype, 16384,
                       single_reduction[i].hidden, "H200", &chosen);
        char blocks[32];
        snprintf(blocks, sizeof blocks, " %d blocks/SM (", single_reduction[i].blocks_per_sm);
        ck_assert_msg(strstr(chosen.params.description, blocks) != NULL, "%s",
                      chosen.params.description);
        ck_assert_msg(two_rows_per_block(&chosen), "%s", chosen.params.description);
        ck_assert_int_eq(chosen.launch.grid[0], 8192);
        assert_fits(&chosen, "H200", 16384);
    }
    planned_kernel segmented;
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 2049, 32760, FV_APPROACH_AUTO, "H200",
                 &segmented);
    ck_assert_int_eq(segmented.plan.kernel_count, 2);
    const fv_kernel_plan *first = &segmented.plan.kernels[0];
    ck_assert_str_eq(first->name, "fv_segment0_inner_persistent");
    ck_assert_msg(strstr(first->params.description, " 1 blocks/SM (") != NULL, "%s",
                  first->params.description);
    ck_assert_int_eq(first->launch.grid[0], segmented.device.sm_count);
    planned_free(&segmented);
    /* rows of 4 KiB held as float keep the wave on the H200's faster memory */
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 16384, 2048, "H200", &chosen);
    ck_assert_msg(!two_rows_per_block(&chosen), "%s", chosen.params.description);
    ck_assert_msg(rows_held_as_float(&chosen), "%s", chosen.params.description);
    ck_assert_int_eq(chosen.launch.grid[0], 6 * 132);
}
END_TEST

/* On fast memory per SM, layer norm's 16-bit rows of 6 KiB or more are not
 * held as float where the floats would cost the blocks their two rows
 * (floats_cost_two_rounds): LN fwd 16-bit 16384 x 3072 (5 blocks per SM in
 * one wave -> 7 walking two rows) and x 8192 (2 -> 3) ran 2.7-4.5% faster
 * so on an H200.  Not at x 4096, whose floats keep the two rows; not at x
 * 2048 (4 KiB rows); not at N = 2048, whose blocks keep one wave either
 * way; not on the H100 (no fast memory per SM; not measured there), though
 * its floats keep x 8192 in one wave. */
START_TEST(forward_rows_left_in_shared_for_two_rows)
{
    static const struct {
        const char *device;
        int64_t rows, hidden;
        int blocks_per_sm; /* without the floats, walking two rows; 0: held as float */
    } shapes[] = {
        {"H200", 16384, 3072, 7}, {"H200", 16384, 8192, 3},
        {"B200", 16384, 3072, 7}, /* the H200's rule; not measured on a B200 */
        {"H200", 16384, 2048, 0}, {"H200", 16384, 4096, 0},
        {"H200", 2048, 3072, 0},  {"H200", 2048, 8192, 0},
        {"H100", 16384, 3072, 0}, {"H100", 16384, 8192, 0},
    };
    static const fv_dtype dtypes[] = {FV_BF16, FV_F16};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            choice chosen;
            choose_forward(NORM_LAYER_FORWARD, dtypes[d], shapes[i].rows, shapes[i].hidden,
                           shapes[i].device, &chosen);
            const char *text = chosen.params.description;
            bool held = shapes[i].blocks_per_sm == 0;
            ck_assert_msg(rows_held_as_float(&chosen) == held, "%s %lldx%lld: %s",
                          shapes[i].device, (long long)shapes[i].rows,
                          (long long)shapes[i].hidden, text);
            const char *why =
                strstr(text, "rows not held as float (the floats would cost the two rows)");
            ck_assert_msg((why != NULL) == !held, "%s", text);
            if (held)
                continue;
            char blocks[32];
            snprintf(blocks, sizeof blocks, "%d blocks/SM", shapes[i].blocks_per_sm);
            ck_assert_msg(strstr(text, blocks) != NULL, "%s", text);
            ck_assert_msg(two_rows_per_block(&chosen), "%s", text);
            ck_assert_int_eq(chosen.launch.grid[0], 8192);
            assert_fits(&chosen, shapes[i].device, 16384);
        }
    }
}
END_TEST

/* Layer norm's 16-bit rows held as float walk two rows per block too where
 * a row's buffered inputs come to 8 KiB or more, and at any length on the
 * H100 (25 GB/s of DRAM bandwidth per SM): LN fwd 16-bit 16384 x 2048-6144
 * ran 3.4-5.6% faster so on an H100, x 4096-6144 3.9-7.0% faster on an
 * H200, where x 2048-3072 (4-6 KiB rows) lost 4.5-6.6% (bench/results/
 * h100-2026-11-27.md and h200-2026-11-27.md, session 25).  Their block,
 * registers and blocks per SM stay those of the wave. */
START_TEST(held_rows_take_two_rows_per_block_where_they_pay)
{
    static const struct {
        const char *device;
        int hidden;
        bool two_rows;
    } shapes[] = {
        {"H100", 2048, true},  {"H100", 3072, true},  {"H100", 4096, true},
        {"H100", 6144, true},  {"H200", 2048, false}, {"H200", 4096, true},
        {"H200", 6144, true}, /* H200 x 3072: forward_rows_left_in_shared_for_two_rows */
        {"B200", 4096, true}, /* the H200's rule; not measured on a B200 */
    };
    static const fv_dtype dtypes[] = {FV_BF16, FV_F16};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            choice chosen;
            choose_forward(NORM_LAYER_FORWARD, dtypes[d], 16384, shapes[i].hidden,
                           shapes[i].device, &chosen);
            const char *text = chosen.params.description;
            ck_assert_msg(rows_held_as_float(&chosen), "%s", text);
            ck_assert_msg(two_rows_per_block(&chosen) == shapes[i].two_rows, "%s: %s",
                          shapes[i].device, text);
            if (shapes[i].two_rows) {
                ck_assert_int_eq(chosen.launch.grid[0], 8192);
                assert_fits(&chosen, shapes[i].device, 16384);
            }
        }
    }
    /* the same block, registers and blocks per SM as the wave: the H100's plan
     * is the H200's with two rows per block */
    choice slower, faster;
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 16384, 2048, "H100", &slower);
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 16384, 2048, "H200", &faster);
    size_t length = strlen(faster.params.description);
    ck_assert_msg(strncmp(slower.params.description, faster.params.description, length) == 0,
                  "%s\n%s", slower.params.description, faster.params.description);
    ck_assert_str_eq(slower.params.description + length, ", 2 rows per block (not one wave)");
    /* fp32 rows of 12 KiB on the H200 */
    choose_forward(NORM_LAYER_FORWARD, FV_F32, 16384, 3072, "H200", &faster);
    ck_assert_msg(two_rows_per_block(&faster), "%s", faster.params.description);
    /* at 1-2 blocks per SM they keep the wave (8192: 2 blocks of 256 threads) */
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 16384, 8192, "H100", &slower);
    ck_assert_msg(rows_held_as_float(&slower), "%s", slower.params.description);
    ck_assert_msg(!two_rows_per_block(&slower), "%s", slower.params.description);
    ck_assert_int_eq(slower.launch.grid[0], 2 * 132);
}
END_TEST

static bool keeps_exp(const choice *chosen)
{
    const char *kept = strstr(chosen->params.description, ", the last reduction pass keeps ");
    return kept != NULL && strstr(kept, " as float in registers for the epilogue") != NULL;
}

/* Softmax keeps its exp in registers from the sum pass for the epilogue on
 * issue-bound rows (16-bit on vectors of 4 bytes or more, fp32 under 16
 * bytes) wherever that leaves 12 or more warps per SM, though it costs
 * blocks, in blocks of twice the threads where the chosen ones have no
 * room (16-bit 20480: 512 threads instead of 256 at 2 blocks per SM, whose
 * exp would leave 8 warps), up to the launch bounds' whole share (16-bit
 * 32768: 512 threads, estimated at 128 registers), and on span chunks as
 * chunk arrays; fp32 on 16-byte vectors, 36864 at 512 threads (batch 9) and
 * norms without an exp do not. */
START_TEST(softmax_keeps_exp_where_rows_are_issue_bound)
{
    static const struct {
        forward_shape shape;
        int blocks_per_sm;  /* with the exp held */
    } kept[] = {
        {{NORM_SOFTMAX, FV_BF16, 4096}, 5},
        {{NORM_SOFTMAX, FV_F16, 768}, 5},   /* 4 rows per block */
        {{NORM_SOFTMAX, FV_BF16, 6144}, 4},  /* 7 blocks per SM without it */
        {{NORM_SOFTMAX, FV_BF16, 12288}, 3}, /* 12 warps per SM */
        {{NORM_SOFTMAX, FV_F16, 16384}, 2}, /* 256 threads */
        {{NORM_SOFTMAX, FV_BF16, 20480}, 1}, /* 512 threads */
        {{NORM_SOFTMAX, FV_F16, 32768}, 1},  /* 512 threads, ~128 registers */
        {{NORM_SOFTMAX, FV_F32, 1987}, 5},   /* 1-element vectors */
        {{NORM_SOFTMAX, FV_BF16, 4095}, 4},  /* 5 x 8-element chunks (hold_on_span_chunks) */
        {{NORM_SOFTMAX, FV_F32, 8191}, 2},   /* 256 threads, 9 x 4-element chunks */
    };
    choice chosen;
    char expected[32];
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        const forward_shape *shape = &kept[i].shape;
        choose_forward(shape->kind, shape->dtype, 16384, shape->hidden, "H100", &chosen);
        ck_assert_msg(keeps_exp(&chosen), "%s", chosen.params.description);
        snprintf(expected, sizeof expected, ", %d blocks/SM", kept[i].blocks_per_sm);
        ck_assert_msg(strstr(chosen.params.description, expected) != NULL, "%s",
                      chosen.params.description);
        assert_fits(&chosen, "H100", 16384);
    }
    static const forward_shape not_kept[] = {
        {NORM_SOFTMAX, FV_F32, 4096},    /* memory-bound */
        {NORM_SOFTMAX, FV_F16, 36864},  /* no room at 512 threads */
        {NORM_SOFTMAX, FV_BF16, 12287},  /* 13 chunks per thread: over HELD_CHUNK_STEPS */
        {NORM_LAYER_FORWARD, FV_BF16, 4096},
        {NORM_RMS_FORWARD, FV_BF16, 2048},
    };
    choose_forward(NORM_SOFTMAX, FV_BF16, 16384, 20480, "H100", &chosen);
    ck_assert_int_eq(chosen.launch.block[0], 512);
    for (size_t i = 0; i < sizeof not_kept / sizeof not_kept[0]; i++) {
        choose_forward(not_kept[i].kind, not_kept[i].dtype, 16384, not_kept[i].hidden, "H100",
                       &chosen);
        ck_assert_msg(!keeps_exp(&chosen) &&
                          strstr(chosen.params.description, "keeps") == NULL,
                      "%s", chosen.params.description);
    }
}
END_TEST

static bool copies_spans(const choice *chosen)
{
    return strstr(chosen->params.description, "as the aligned 16-byte chunks that hold it") != NULL;
}

/* Asserts that `holds` is false of the forward kernel of each of `count`
 * shapes at N = 16384 on `device_name`. */
static void assert_none_holds(const forward_shape *shapes, size_t count, const char *device_name,
                              bool (*holds)(const choice *))
{
    choice chosen;
    for (size_t i = 0; i < count; i++) {
        choose_forward(shapes[i].kind, shapes[i].dtype, 16384, shapes[i].hidden, device_name,
                       &chosen);
        ck_assert_msg(!holds(&chosen), "%s: %s", device_name, chosen.params.description);
    }
}

/* Rows of 16 bits and an odd length, which would take 2-byte synchronous
 * copies, are copied as the aligned 16-byte chunks that hold them (each
 * slot 16 elements longer), forward and multi-wave backward (two or three
 * row slots, the row statistics with them, the same blocks per SM); fp32
 * rows of an odd length (4-byte copies, asynchronous) and rows of full
 * vectors are not.  Softmax keeps its exp over spans too, up to 16
 * elements per thread on 1-element vectors.  Forward rows whose chunks
 * fill 3/4 of the thread steps or more compute on them (8-element vectors;
 * odd_forward_rows_compute_on_span_chunks), the others element by
 * element; on chunks, softmax keeps its exp as chunk arrays where the
 * registers leave 12 warps per SM (hold_on_span_chunks). */
START_TEST(odd_rows_copy_aligned_spans)
{
    static const struct {
        forward_shape shape;
        bool exp_kept;
    } spanned[] = {
        {{NORM_LAYER_FORWARD, FV_BF16, 4095}, false},
        {{NORM_RMS_FORWARD, FV_F16, 1987}, false},
        {{NORM_SOFTMAX, FV_BF16, 1023}, true},   /* a warp on 5 x 8-element chunks */
        {{NORM_SOFTMAX, FV_F16, 1987}, true},    /* batch 16, on 2 x 8-element chunks */
        {{NORM_SOFTMAX, FV_BF16, 4095}, true},   /* batch 32, on 5 x 8-element chunks */
    };
    choice chosen;
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table("H100", &device));
    for (size_t i = 0; i < sizeof spanned / sizeof spanned[0]; i++) {
        const forward_shape *shape = &spanned[i].shape;
        choose_forward(shape->kind, shape->dtype, 16384, shape->hidden, "H100", &chosen);
        ck_assert_msg(copies_spans(&chosen), "%s", chosen.params.description);
        ck_assert_msg(keeps_exp(&chosen) == spanned[i].exp_kept, "%s", chosen.params.description);
        ck_assert_int_eq(chosen.params.vector, 8);
        /* two slots of the row capacity and 16 elements more, then the
         * row-constant inputs' cache, within the device's shared memory */
        int64_t capacity = (int64_t)chosen.params.serial * chosen.params.block_x * chosen.params.vector;
        int64_t slots_bytes = 2 * (capacity + 16) * 2;
        ck_assert_int_ge(chosen.launch.dynamic_shared_bytes, slots_bytes);
        assert_fits(&chosen, "H100", 16384);
    }
    /* the tensor's last row ends inside a chunk: the same form */
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 2049, 1987, "H100", &chosen);
    ck_assert_msg(copies_spans(&chosen), "%s", chosen.params.description);

    static const forward_shape not_spanned[] = {
        {NORM_LAYER_FORWARD, FV_F32, 1987},
        {NORM_RMS_FORWARD, FV_F32, 1023},
        {NORM_RMS_FORWARD, FV_BF16, 4096},
    };
    assert_none_holds(not_spanned, sizeof not_spanned / sizeof not_spanned[0], "H100",
                      copies_spans);
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        bool spanned;
    } backward[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 1987, true},
        {NORM_RMS_BACKWARD, FV_F16, 4095, true},
        {NORM_LAYER_BACKWARD, FV_F32, 1987, true},  /* 4-byte rows: spans in multi-wave */
        {NORM_RMS_BACKWARD, FV_BF16, 4096, false},
    };
    for (size_t i = 0; i < sizeof backward / sizeof backward[0]; i++) {
        choose_norm(backward[i].kind, backward[i].dtype, 16384, backward[i].hidden,
                    FV_APPROACH_AUTO, "H100", &chosen);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_msg(copies_spans(&chosen) == backward[i].spanned, "%s",
                      chosen.params.description);
        assert_fits(&chosen, "H100", 16384);
    }
}
END_TEST

static bool slot_refilled(const choice *chosen)
{
    return strstr(chosen->params.description,
                  "1 row slot (refilled with the next row once read)") != NULL;
}

static bool on_span_chunks(const choice *chosen)
{
    return strstr(chosen->params.description, "-element chunks of the row's aligned span") != NULL;
}

/* Forward rows of 16 bits and an odd length, copied as spans, compute on
 * the span's 16-byte chunks where those fill 3/4 of the thread steps or
 * more: 8-element vectors, as many steps as the row's span can take
 * (ceil((H + 7) / 8) chunks).  Where the row constants are cached in shared
 * memory or held in registers at the rows' shift, the grid is a multiple
 * of 8 blocks, so that a block's rows share it; softmax (no row constants)
 * keeps its one-wave grid.  Rows of at most 5 chunks per lane get a block
 * of one warp, and of at most 3 per lane in two warps a block of two, however
 * few steps they fill (warps_per_span_row: 1023, 129 chunks in 32 x 5
 * steps; 201, 27 in 32 x 1; 511, 65 in 32 x 3; 1279, 161 in 64 x 3),
 * softmax included.  Where a longer row's chunks would fill under 3/4 of
 * the steps, kernels with row constants take a block of a multiple of 32
 * threads, 128 or more, that they fill (2049: 257 in 160 x 2 instead of
 * 128 x 3); softmax then computes element by element, as do rows whose
 * constants would be read from device memory (LN 32767: neither cached
 * nor held), fp32 layer norm rows copied element by element (1987) and
 * the multi-wave backward kernels. */
START_TEST(odd_forward_rows_compute_on_span_chunks)
{
    static const char *const devices[] = {"H100", "H200", "B200"};
    static const struct {
        forward_shape shape;
        int threads, steps;
        bool constants_at_shift;
    } chunked[] = {
        {{NORM_LAYER_FORWARD, FV_BF16, 1987}, 128, 2, true},   /* 250 chunks */
        {{NORM_RMS_FORWARD, FV_F16, 4095}, 128, 5, true},      /* 513 */
        {{NORM_RMS_FORWARD, FV_F16, 20481}, 512, 6, true},     /* 2561, weight in registers */
        {{NORM_SOFTMAX, FV_BF16, 8191}, 128, 9, false},        /* 1025 */
        {{NORM_SOFTMAX, FV_BF16, 20481}, 256, 11, false},
        {{NORM_LAYER_FORWARD, FV_BF16, 1023}, 32, 5, true},    /* 129, warps_per_span_row */
        {{NORM_SOFTMAX, FV_F16, 1023}, 32, 5, false},
        {{NORM_RMS_FORWARD, FV_BF16, 1151}, 32, 5, true},      /* 145 */
        {{NORM_LAYER_FORWARD, FV_BF16, 201}, 32, 1, true},     /* 27 */
        {{NORM_RMS_FORWARD, FV_F16, 1279}, 64, 3, true},       /* 161: two warps of 3 */
        {{NORM_SOFTMAX, FV_BF16, 511}, 32, 3, false},          /* 65: 68% of the steps */
        {{NORM_LAYER_FORWARD, FV_F16, 1535}, 128, 2, true},    /* 193: over 3 per lane in two */
        {{NORM_RMS_FORWARD, FV_BF16, 2049}, 160, 2, true},     /* 257; not 96 x 3 (under 128) */
    };
    choice chosen;
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        fv_device device;
        FV_ASSERT_OK(fv_sched_device_from_table(devices[d], &device));
        for (size_t i = 0; i < sizeof chunked / sizeof chunked[0]; i++) {
            const forward_shape *shape = &chunked[i].shape;
            choose_forward(shape->kind, shape->dtype, 16384, shape->hidden, devices[d], &chosen);
            const char *text = chosen.params.description;
            ck_assert_msg(on_span_chunks(&chosen) && copies_spans(&chosen), "%s: %s", devices[d], text);
            ck_assert_int_eq(chosen.params.vector, 8);
            ck_assert_int_eq(chosen.params.block_x, chunked[i].threads);
            ck_assert_int_eq(chosen.params.serial, chunked[i].steps);
            ck_assert_int_ge((int64_t)chosen.params.serial * chosen.params.block_x * 8,
                             (shape->hidden + 14) / 8 * 8);
            int grid = chosen.launch.grid[0];
            if (chunked[i].constants_at_shift)
                ck_assert_msg(grid % 8 == 0, "%s: grid %d: %s", devices[d], grid, text);
            else
                ck_assert_int_eq(grid % device.sm_count, 0);
            assert_fits(&chosen, devices[d], 16384);
        }
    }
    static const forward_shape by_element[] = {
        {NORM_SOFTMAX, FV_BF16, 2049},
        {NORM_LAYER_FORWARD, FV_BF16, 32767},
        {NORM_LAYER_FORWARD, FV_F32, 1987},
    };
    assert_none_holds(by_element, sizeof by_element / sizeof by_element[0], "H200",
                      on_span_chunks);
    /* a block for each of 216 rows: the shift is the row's, whatever the grid */
    choose_forward(NORM_LAYER_FORWARD, FV_BF16, 216, 1987, "H200", &chosen);
    ck_assert_msg(on_span_chunks(&chosen), "%s", chosen.params.description);
    ck_assert_int_eq(chosen.launch.grid[0], 216);
}
END_TEST

/* Multi-wave backward rows of an odd length compute on span chunks
 * (multiwave_takes_span_chunks): the partials at the block's shift, so a
 * grid of a multiple of 8 and no partial clusters; stage 2 reads the
 * workspace's rows of 1987 floats one at a time.  fp32 rows too, on
 * 4-element chunks (a grid of a multiple of 4).  Chunks that fill under 3/4
 * of the thread steps in 3 steps or more (sparse_chunks_taken: x 2047, 257
 * chunks in 3 x 128 steps; layer norm then reads x and dy from their
 * slots, whose floats would leave 2 of its 3 blocks per SM:
 * drop_row_floats_to_fit).  16-bit rows with the 16-bit weight cached in
 * shared memory at the shift (LN bwd x 9215), and rows whose estimate
 * takes the whole register share of 512 threads (x 12287, ~128
 * registers).  In 2 steps only 16-bit chunks filling 5/8 of them (x 1279,
 * not x 1023 / 1151 or fp32 x 639); not on a grid under a chunk's 8 blocks
 * (it would be rounded up to blocks that walk no row: 7 rows), nor with the weight cached in shared memory in fp32 (LN
 * bwd fp32 x 3071; bf16 rows with an fp32 weight at x 9215). */
START_TEST(odd_backward_rows_compute_on_span_chunks)
{
    choice chosen;
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 16384, 1987, FV_APPROACH_AUTO, "H200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_persistent");
    ck_assert_msg(copies_spans(&chosen) && on_span_chunks(&chosen) &&
                      strstr(chosen.params.description, "the partials at the block's shift") != NULL,
                  "%s", chosen.params.description);
    ck_assert_int_eq(chosen.params.vector, 8);
    ck_assert_int_eq(chosen.launch.grid[0] % 8, 0);
    ck_assert_msg(strstr(chosen.params.description, "partials added over clusters") == NULL &&
                      strstr(chosen.params.description, "threads of 1-element vectors (slices added within warps); candidates") != NULL,
                  "%s", chosen.params.description);
    assert_fits(&chosen, "H200", 16384);
    choose_norm(NORM_RMS_BACKWARD, FV_F16, 2049, 8191, FV_APPROACH_AUTO, "H100", &chosen);
    ck_assert_msg(on_span_chunks(&chosen), "%s", chosen.params.description);
    ck_assert_int_eq(chosen.launch.grid[0] % 8, 0);
    assert_fits(&chosen, "H100", 2049);
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        int vector, serial;
    } on_chunks[] = {
        {NORM_RMS_BACKWARD, FV_BF16, 2047, 8, 3},  /* 257 chunks in 3 x 128 steps */
        {NORM_LAYER_BACKWARD, FV_BF16, 2047, 8, 3}, /* x and dy not held: 3 blocks kept */
        {NORM_LAYER_BACKWARD, FV_F32, 1987, 4, 4}, /* 498 chunks in 4 x 128 */
        {NORM_LAYER_BACKWARD, FV_F32, 1023, 4, 3}, /* 257 chunks in 3 x 128 */
    };
    for (size_t i = 0; i < sizeof on_chunks / sizeof on_chunks[0]; i++) {
        choose_norm(on_chunks[i].kind, on_chunks[i].dtype, 16384, on_chunks[i].hidden,
                    FV_APPROACH_AUTO, "H200", &chosen);
        ck_assert_msg(on_span_chunks(&chosen) && chosen.params.vector == on_chunks[i].vector &&
                          chosen.params.serial == on_chunks[i].serial && chosen.params.block_x == 128,
                      "case %zu: %s", i, chosen.params.description);
        ck_assert_int_eq(chosen.launch.grid[0] % on_chunks[i].vector, 0);  /* one shift a block */
        assert_fits(&chosen, "H200", 16384);
    }
    static const struct {
        norm_kind kind;
        int64_t rows, hidden;
        int block_x, serial;
    } sixteen_bit[] = {
        {NORM_LAYER_BACKWARD, 2049, 9215, 512, 3},   /* the weight cached at the shift */
        {NORM_LAYER_BACKWARD, 16384, 12287, 512, 4}, /* ~128 registers of 128 */
        {NORM_RMS_BACKWARD, 16384, 12287, 512, 4},
    };
    for (size_t i = 0; i < sizeof sixteen_bit / sizeof sixteen_bit[0]; i++) {
        choose_norm(sixteen_bit[i].kind, FV_BF16, sixteen_bit[i].rows, sixteen_bit[i].hidden,
                    FV_APPROACH_AUTO, "H200", &chosen);
        ck_assert_msg(on_span_chunks(&chosen) && chosen.params.vector == 8 &&
                          chosen.params.block_x == sixteen_bit[i].block_x &&
                          chosen.params.serial == sixteen_bit[i].serial,
                      "case %zu: %s", i, chosen.params.description);
        assert_fits(&chosen, "H200", sixteen_bit[i].rows);
    }
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 2049, 9215, FV_APPROACH_AUTO, "H200", &chosen);
    ck_assert_msg(strstr(chosen.params.description, "row-constant inputs cached in shared memory"),
                  "%s", chosen.params.description);
    static const struct {
        norm_kind kind;
        int64_t rows, hidden;
    } by_element[] = {
        {NORM_LAYER_BACKWARD, 16384, 1023},  /* half of 2 steps filled */
        {NORM_RMS_BACKWARD, 16384, 1023},
        {NORM_LAYER_BACKWARD, 7, 1987},      /* a grid under a chunk's 8 blocks */
        {NORM_RMS_BACKWARD, 5, 4095},
    };
    for (size_t i = 0; i < sizeof by_element / sizeof by_element[0]; i++) {
        choose_norm(by_element[i].kind, FV_BF16, by_element[i].rows, by_element[i].hidden,
                    FV_APPROACH_AUTO, "H200", &chosen);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_msg(!on_span_chunks(&chosen) && chosen.params.vector == 1, "case %zu: %s", i,
                      chosen.params.description);
    }
    /* 20 rows: on chunks, on the balanced grid of 20 blocks (a row each, so
     * span_chunk_grid leaves it as it is) */
    choose_norm(NORM_LAYER_BACKWARD, FV_BF16, 20, 1987, FV_APPROACH_AUTO, "H200", &chosen);
    ck_assert_msg(on_span_chunks(&chosen), "%s", chosen.params.description);
    ck_assert_int_eq(chosen.launch.grid[0], 20);
    /* two steps: 16-bit chunks filling 5/8 of them or more (x 1279: 161 in 2
     * x 128) are taken, fewer (x 1151: 145) and fp32 ones (x 639: 161 of 4)
     * are not; nor one step (16-bit x 639: 81 chunks in 128) */
    static const struct {
        fv_dtype dtype;
        int64_t hidden;
        bool on_chunks;
    } two_steps[] = {
        {FV_BF16, 1279, true}, {FV_BF16, 1151, false}, {FV_F32, 639, false},
        {FV_BF16, 639, false},
    };
    for (size_t i = 0; i < sizeof two_steps / sizeof two_steps[0]; i++) {
        choose_norm(NORM_RMS_BACKWARD, two_steps[i].dtype, 16384, two_steps[i].hidden,
                    FV_APPROACH_AUTO, "H200", &chosen);
        ck_assert_msg(on_span_chunks(&chosen) == two_steps[i].on_chunks && chosen.params.block_x == 128,
                      "case %zu: %s", i, chosen.params.description);
    }
    /* 16-bit rows with an fp32 weight cached in shared memory: that form never
     * ran on chunks */
    fv_case_list list;
    memset(&list, 0, sizeof list);
    char sweep[512];
    snprintf(sweep, sizeof sweep,
             "definition %s\nname fp32_weight\ndim N = x.0\ndim H = x.1\ndtypes bf16\n"
             "seeds 0\nsizes N=2049 H=9215\n",
             fv_test_source_path("tests/mixed_constants/layer_norm_bwd_fp32_weight.py"));
    const char *path = fv_test_path("fp32_weight.sweep");
    ck_assert_int_eq(fv_test_write_file(path, sweep), 0);
    FV_ASSERT_OK(fv_frontend_expand_sweep(path, &list, NULL, 0));
    ck_assert_int_eq(list.count, 1);
    choose_for(list.cases[0], "H200", &chosen);
    ck_assert_msg(strstr(chosen.params.description, "row-constant inputs cached in shared memory") &&
                      !on_span_chunks(&chosen),
                  "%s", chosen.params.description);
    fv_case_list_free(&list);
    /* fp32 rows with the weight cached in shared memory: spans, element by element */
    choose_norm(NORM_LAYER_BACKWARD, FV_F32, 16384, 3071, FV_APPROACH_AUTO, "H200", &chosen);
    ck_assert_msg(copies_spans(&chosen) && !on_span_chunks(&chosen) && chosen.params.vector == 1 &&
                      strstr(chosen.params.description, "row-constant inputs cached in shared memory"),
                  "%s", chosen.params.description);
}
END_TEST

/* Multi-wave kernels on span chunks test each lane against the thread's
 * lane window, computed once from the block's shift: step 0 from
 * lane_begin (thread 0's chunk starts before the row), the steps from
 * whole_steps (W) on before lane_end[b], and no test or branch on the steps
 * between.  LN bwd bf16 16384 x 4089: 4 steps of 128 x 8, W = 3 (steps 1-2
 * whole); fp32 x 1987: 4 steps of 128 x 4, W = 3; RMS bwd bf16 2049 x 2047:
 * 3 steps of 128 x 8, W = 1 (no whole step after step 0).  Forward kernels
 * keep the split lane loops (a whole chunk unmasked, the row's ends lane by
 * lane). */
START_TEST(multiwave_span_lanes_test_a_lane_window)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t rows, hidden;
        const char *end;   /* lane_end's declaration */
        const char *test;  /* a lane's test */
    } shapes[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 16384, 4089,
         "lane_end[b] = row_length + row_shift - (b * 128 + (int)threadIdx.x) * 8;",
         "if ((b > 0 || lane >= lane_begin) && (b < 3 || lane < lane_end[b]))"},
        {NORM_LAYER_BACKWARD, FV_F32, 16384, 1987,
         "lane_end[b] = row_length + row_shift - (b * 128 + (int)threadIdx.x) * 4;",
         "if ((b > 0 || lane >= lane_begin) && (b < 3 || lane < lane_end[b]))"},
        {NORM_RMS_BACKWARD, FV_BF16, 2049, 2047,
         "lane_end[b] = row_length + row_shift - (b * 128 + (int)threadIdx.x) * 8;",
         "if ((b > 0 || lane >= lane_begin) && (b < 1 || lane < lane_end[b]))"},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        planned_kernel planned;
        plan_norm_on(shapes[s].kind, shapes[s].dtype, shapes[s].rows, shapes[s].hidden,
                     FV_APPROACH_AUTO, "H200", &planned);
        ck_assert_int_eq(planned.plan.kernel_count, 1);
        const fv_kernel_plan *kernel = &planned.plan.kernels[0];
        ck_assert_msg(strstr(kernel->params.description, "chunks of the row's aligned span") != NULL,
                      "shape %zu: %s", s, kernel->params.description);
        assert_source_has(kernel, (const char *const[]){
                                      "const int lane_begin = threadIdx.x == 0 ? row_shift : 0;",
                                      shapes[s].end, shapes[s].test, NULL});
        ck_assert_ptr_null(strstr(kernel->source, "// a chunk wholly in the row"));
        ck_assert_ptr_null(strstr(kernel->source, "fv_in_row(column + lane"));
        planned_free(&planned);
    }
    planned_kernel forward;
    plan_norm_on(NORM_LAYER_FORWARD, FV_BF16, 16384, 2047, FV_APPROACH_AUTO, "H200", &forward);
    ck_assert_int_eq(forward.plan.kernel_count, 1);
    ck_assert_ptr_nonnull(strstr(forward.plan.kernels[0].source, "// a chunk wholly in the row"));
    ck_assert_ptr_null(strstr(forward.plan.kernels[0].source, "lane_begin"));
    planned_free(&forward);
}
END_TEST

/* 16-bit multi-wave rows that one row slot holds at most (RMS bwd x 22527:
 * two buffers of 44 KiB and the weight) are copied as the 16-byte chunks of
 * their span, not 2 bytes at a time through registers, and read element by
 * element; the row's copies are issued after the row start, so its
 * statistic (its rms) is loaded a row ahead into registers, not copied with
 * the row.  Layer norm's rows of that length spill in every form and take
 * the general path whatever the copies. */
START_TEST(odd_backward_rows_in_one_slot_copy_spans)
{
    planned_kernel planned;
    plan_norm_on(NORM_RMS_BACKWARD, FV_BF16, 16384, 22527, FV_APPROACH_AUTO, "H200", &planned);
    fv_kernel_plan *kernel = &planned.plan.kernels[0];
    ck_assert_msg(strstr(kernel->params.description,
                         "1 row slot (copied as the aligned 16-byte chunks that hold it)") != NULL &&
                      kernel->params.vector == 1,
                  "%s", kernel->params.description);
    ck_assert_ptr_nonnull(strstr(kernel->source, ": loaded one row ahead"));
    ck_assert_ptr_null(strstr(kernel->source, "copied with each row's inputs"));
    ck_assert_ptr_null(strstr(kernel->source, "fv_async_wait<-1>"));
    static const char *const row_steps[] = {
        "for (long long row_base", "const auto row_value",
        "__syncthreads();  // every thread is past the last row",
        "fv_copy_async_if<8>(to + at, span + at, at < whole_length);",
        "fv_async_wait<0>();  // this row's copies have landed",
        "__syncthreads();  // ... all of them", NULL};
    fv_test_assert_lines_in_order(kernel->source, row_steps);
    planned_free(&planned);
}
END_TEST

/* A short row on span chunks as short_span_rows_take_warps expects it on
 * `device`: on chunks of `chunk` elements, in a block of `threads` x 1 of
 * `steps` chunks per thread, its row buffers held as float or not. */
typedef struct {
    forward_shape shape;
    int threads, steps, chunk;
    bool floats;
} warp_row_shape;

static void assert_warp_row(const warp_row_shape *expected, const char *device)
{
    const forward_shape *shape = &expected->shape;
    choice chosen;
    choose_forward(shape->kind, shape->dtype, 16384, shape->hidden, device, &chosen);
    const char *text = chosen.params.description;
    ck_assert_msg(on_span_chunks(&chosen), "%s: %s", device, text);
    ck_assert_int_eq(chosen.params.block_x, expected->threads);
    ck_assert_int_eq(chosen.params.block_y, 1);
    ck_assert_int_eq(chosen.params.serial, expected->steps);
    ck_assert_int_eq(chosen.params.vector, expected->chunk);
    ck_assert_msg((strstr(text, "held as float in registers: the row buffers") != NULL) ==
                      expected->floats,
                  "%s: %s", device, text);
    assert_fits(&chosen, device, 16384);
}

/* Short rows on span chunks take a block of one warp up to 5 chunks per
 * lane, two warps up to 3 (warps_per_span_row), in 16 bits and in fp32
 * (softmax, the one fp32 kernel on chunks at such lengths); layer norm's
 * 16-bit rows in one warp are held as float (hold_warp_row_floats), RMS
 * norm's (no var_mean) and those in two warps stay in their slots.  The
 * same on every device table. */
START_TEST(short_span_rows_take_warps)
{
    static const char *const devices[] = {"H100", "H200", "B200"};
    static const warp_row_shape shapes[] = {
        {{NORM_LAYER_FORWARD, FV_BF16, 1023}, 32, 5, 8, true},   /* 129 chunks */
        {{NORM_LAYER_FORWARD, FV_F16, 151}, 32, 1, 8, true},     /* 20: 62% of the steps */
        {{NORM_LAYER_FORWARD, FV_BF16, 1279}, 64, 3, 8, false},  /* 161 */
        {{NORM_RMS_FORWARD, FV_BF16, 1023}, 32, 5, 8, false},
        {{NORM_SOFTMAX, FV_F32, 511}, 32, 5, 4, false},          /* 129 4-element chunks */
        {{NORM_SOFTMAX, FV_F32, 151}, 32, 2, 4, false},          /* 39 */
        {{NORM_RMS_FORWARD, FV_BF16, 1273}, 32, 5, 8, false},    /* 160: one warp's most */
        {{NORM_RMS_FORWARD, FV_BF16, 1275}, 64, 3, 8, false},    /* 161 */
        {{NORM_SOFTMAX, FV_F16, 1529}, 64, 3, 8, false},         /* 192: two warps' most */
    };
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            assert_warp_row(&shapes[i], devices[d]);
    /* past those (16-bit 1531: 193 chunks), and fp32 rows over one warp's
     * 160 chunks (703: 177; 767: 193), keep blocks of 128 threads */
    static const forward_shape longer[] = {
        {NORM_RMS_FORWARD, FV_BF16, 1531},
        {NORM_SOFTMAX, FV_F32, 703},
        {NORM_SOFTMAX, FV_F32, 767},
    };
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        for (size_t i = 0; i < sizeof longer / sizeof longer[0]; i++) {
            choice chosen;
            choose_forward(longer[i].kind, longer[i].dtype, 16384, longer[i].hidden, devices[d],
                           &chosen);
            ck_assert_msg(chosen.params.block_x >= 128, "%s: %s", devices[d],
                          chosen.params.description);
        }
    }
}
END_TEST

/* Forward fp32 rows of an odd length (4-byte copies, asynchronous) are
 * copied as spans without row constants (softmax) or at 12 KiB a row and
 * more (spans_fp32_rows), and then compute on 4-element chunks where those
 * fill 3/4 of the thread steps (or a warp takes them:
 * short_span_rows_take_warps) and the constants, if any, are cached or
 * held; layer and RMS norm keep their 4-byte copies at 1023 and 1987. */
START_TEST(odd_fp32_forward_rows_copy_spans_where_they_pay)
{
    static const struct {
        forward_shape shape;
        bool chunks;
    } spanned[] = {
        {{NORM_SOFTMAX, FV_F32, 1023}, false},        /* 257 chunks in 3 x 128 steps */
        {{NORM_SOFTMAX, FV_F32, 1987}, true},
        {{NORM_SOFTMAX, FV_F32, 20481}, true},
        {{NORM_LAYER_FORWARD, FV_F32, 4095}, true},   /* 16 KiB rows */
        {{NORM_RMS_FORWARD, FV_F32, 4095}, true},
        {{NORM_LAYER_FORWARD, FV_F32, 20481}, false}, /* weight and bias from device memory */
    };
    static const char *const devices[] = {"H100", "H200"};
    choice chosen;
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        for (size_t i = 0; i < sizeof spanned / sizeof spanned[0]; i++) {
            const forward_shape *shape = &spanned[i].shape;
            choose_forward(shape->kind, shape->dtype, 16384, shape->hidden, devices[d], &chosen);
            const char *text = chosen.params.description;
            ck_assert_msg(copies_spans(&chosen), "%s: %s", devices[d], text);
            ck_assert_msg((strstr(text, "4-element chunks of the row's aligned span") != NULL) ==
                              spanned[i].chunks,
                          "%s: %s", devices[d], text);
            ck_assert_int_eq(chosen.params.vector, spanned[i].chunks ? 4 : 1);
            if (spanned[i].chunks)
                ck_assert_int_ge((int64_t)chosen.params.serial * chosen.params.block_x * 4,
                                 (shape->hidden + 6) / 4 * 4);
            assert_fits(&chosen, devices[d], 16384);
        }
    }
    static const forward_shape kept[] = {
        {NORM_LAYER_FORWARD, FV_F32, 1023},
        {NORM_LAYER_FORWARD, FV_F32, 1987},
        {NORM_RMS_FORWARD, FV_F32, 1987},
    };
    assert_none_holds(kept, sizeof kept / sizeof kept[0], "H200", copies_spans);
}
END_TEST

/* Forward kernels whose weight and bias find no room next to two row slots
 * hold their rows as float and refill one slot, which leaves room for the
 * cache (LN fwd 16-bit 32768, fp32 16384; RMS fwd fp32 20480-24576); where
 * the cache fits with two slots (RMS fwd 16-bit 32768), where it fits no
 * way (LN fwd fp32 32768) and with 1-element vectors, nothing changes. */
START_TEST(forward_rows_refill_one_slot_for_the_cache)
{
    static const char *const devices[] = {"H100", "H200", "B200"};
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
    } refilled[] = {
        {NORM_LAYER_FORWARD, FV_BF16, 32768}, {NORM_LAYER_FORWARD, FV_F16, 32768},
        {NORM_LAYER_FORWARD, FV_F32, 16384},  {NORM_RMS_FORWARD, FV_F32, 20480},
        {NORM_RMS_FORWARD, FV_F32, 24576},
    };
    choice chosen;
    for (size_t d = 0; d < sizeof devices / sizeof devices[0]; d++) {
        for (size_t i = 0; i < sizeof refilled / sizeof refilled[0]; i++) {
            choose_forward(refilled[i].kind, refilled[i].dtype, 16384, refilled[i].hidden,
                           devices[d], &chosen);
            const char *text = chosen.params.description;
            ck_assert_msg(slot_refilled(&chosen), "%s: %s", devices[d], text);
            ck_assert_msg(strstr(text, "row-constant inputs cached in shared memory") != NULL,
                          "%s", text);
            ck_assert_msg(rows_held_as_float(&chosen), "%s", text);
            assert_fits(&chosen, devices[d], 16384);
        }
    }
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        const char *expected;
    } unchanged[] = {
        {NORM_RMS_FORWARD, FV_BF16, 32768, "2 row slots"},
        {NORM_LAYER_FORWARD, FV_F32, 32768, "1 row slot,"},
        {NORM_LAYER_FORWARD, FV_BF16, 32767, "1-element"},
    };
    for (size_t i = 0; i < sizeof unchanged / sizeof unchanged[0]; i++) {
        choose_forward(unchanged[i].kind, unchanged[i].dtype, 16384, unchanged[i].hidden, "H200",
                       &chosen);
        const char *text = chosen.params.description;
        ck_assert_msg(!slot_refilled(&chosen), "%s", text);
        ck_assert_msg(strstr(text, unchanged[i].expected) != NULL, "%s", text);
    }
}
END_TEST

/* Forward norms: one inner-persistent kernel; rows of at most 128 vectors
 * take a warp each (several rows per block: warp-only reductions), larger
 * ones a group of 128 threads or more, large ones a block each. */
START_TEST(forward_norms_are_inner_persistent)
{
    static const struct {
        int64_t inner;
        int block_x, block_y, batch;
    } shapes[] = {
        {512, 32, 4, 2},   /* 64 vectors */
        {1024, 32, 4, 4},  /* 128 vectors */
        {2048, 128, 1, 2}, /* 256 vectors: a warp per row measured slower */
    };
    choice chosen;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        fv_case *c = norm_case(NORM_LAYER_FORWARD, FV_BF16, 16384, shapes[i].inner, 0);
        choose_for(c, "H100", &chosen);
        ck_assert_str_eq(chosen.family, "inner_persistent");
        ck_assert_int_eq(chosen.params.block_x, shapes[i].block_x);
        ck_assert_int_eq(chosen.params.block_y, shapes[i].block_y);
        ck_assert_int_eq(chosen.params.serial, shapes[i].batch);
        ck_assert(!chosen.launch.cooperative);
        assert_fits(&chosen, "H100", 16384);
        fv_case_free(c);
    }
    fv_case *c;
    c = norm_case(NORM_RMS_FORWARD, FV_BF16, 16384, 8192, 0);
    choose_for(c, "B200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_persistent");
    ck_assert_int_eq(chosen.params.block_y, 1);
    assert_fits(&chosen, "B200", 16384);
    fv_case_free(c);
    /* a forward row whose two slots and weight cache do not both fit keeps
     * the two slots: fp32 layer norm at H = 20480 (two 80 KiB slots, the
     * weight and bias read from device memory); a backward kernel keeps the
     * cache and takes one slot */
    for (int d = 0; d < 2; d++) {
        const char *device = d == 0 ? "H100" : "B200";
        c = norm_case(NORM_LAYER_FORWARD, FV_F32, 16384, 20480, 0);
        choose_for(c, device, &chosen);
        ck_assert_msg(strstr(chosen.params.description, "2 row slots") != NULL &&
                          strstr(chosen.params.description, "cached in shared memory") == NULL,
                      "%s", chosen.params.description);
        ck_assert_int_le(chosen.launch.dynamic_shared_bytes, 2 * 20480 * 4 + 4096);
        fv_case_free(c);
    }
    c = norm_case(NORM_RMS_BACKWARD, FV_F32, 16384, 16384, 0);
    choose_for(c, "H100", &chosen);
    ck_assert_msg(strstr(chosen.params.description, "1 row slot, row-constant inputs cached") != NULL,
                  "%s", chosen.params.description);
    fv_case_free(c);
}
END_TEST

/* Seed 003, the TMA inner persistent kernel: never taken by --approach auto
 * (nvFuser's opt-in); forced, nvFuser's example RMS-norm forward bf16 16384 x
 * 4096 on B200 takes batch 4 of 8-element vectors, 2 groups of 128 threads
 * and the producer, 2 grouped rows; nvFuser's 7 stages (shared memory over
 * a stage of both groups' grouped rows) are 14 of ours, less the weight's
 * slot and rounding: 12.  Rows bulk copies cannot move, short rows, too few
 * rows per SM and more than 12 vectors per thread stay inner persistent. */
START_TEST(seed_003_tma_inner_persistent)
{
    fv_case *c = norm_case(NORM_RMS_FORWARD, FV_BF16, 16384, 4096, 0);
    choice chosen;
    choose_for(c, "B200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_persistent");
    c->approach = FV_APPROACH_WS;
    choose_for(c, "B200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_tma");
    ck_assert_int_eq(chosen.params.block_x, 128);
    ck_assert_int_eq(chosen.params.block_y, 2);
    ck_assert_int_eq(chosen.params.serial, 4);
    ck_assert_int_eq(chosen.params.vector, 8);
    ck_assert_int_eq(chosen.launch.block[1], 3);
    ck_assert_int_eq(chosen.launch.grid[0], 148);
    ck_assert(!chosen.launch.cooperative);
    ck_assert_int_eq(chosen.launch.workspace_bytes, 0);
    ck_assert_msg(strstr(chosen.params.description, "2 rows per step, 12 stages") != NULL, "%s",
                  chosen.params.description);
    ck_assert_int_le(chosen.launch.dynamic_shared_bytes, 232448 - 4096);
    fv_case_free(c);
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t rows, inner;
    } inner_persistent[] = {
        {NORM_LAYER_FORWARD, FV_BF16, 16384, 1023},   /* 2046-byte rows */
        {NORM_LAYER_FORWARD, FV_F32, 16384, 8192},    /* 4-element f32 vectors: 128-bit, but 16
                                                         vectors per thread */
        {NORM_RMS_FORWARD, FV_BF16, 16384, 512},      /* 64 vectors per row */
        {NORM_SOFTMAX, FV_BF16, 216, 4096},           /* 216 rows: under 2 stages per group */
    };
    for (size_t i = 0; i < sizeof inner_persistent / sizeof inner_persistent[0]; i++) {
        c = norm_case(inner_persistent[i].kind, inner_persistent[i].dtype,
                      inner_persistent[i].rows, inner_persistent[i].inner, 0);
        c->approach = FV_APPROACH_WS;
        choose_for(c, "H100", &chosen);
        ck_assert_msg(strcmp(chosen.family, "inner_persistent") == 0, "case %zu: %s", i,
                      chosen.family);
        fv_case_free(c);
    }
}
END_TEST

/* Sizes that are not multiples of the vector width or of the grid: a
 * narrower vector that divides H (1023), or 8-element chunks of the rows'
 * aligned spans (1987, 4095: take_span_chunks), and a grid that is still one
 * wave. */
START_TEST(irregular_sizes)
{
    static const int64_t hiddens[] = {1023, 1987, 4095};
    static const int expected_vector[] = {1, 8, 8};
    for (size_t i = 0; i < 3; i++) {
        fv_case *c = norm_case(NORM_LAYER_BACKWARD, FV_BF16, 2049, hiddens[i], 0);
        choice chosen;
        choose_for(c, "H100", &chosen);
        ck_assert_str_eq(chosen.family, "inner_outer_persistent");
        ck_assert_int_eq(chosen.params.vector, expected_vector[i]);
        assert_fits(&chosen, "H100", 2049);
        fv_case_free(c);
    }
    fv_case *c = norm_case(NORM_RMS_BACKWARD, FV_BF16, 2049, 4092, 0);
    choice chosen;
    choose_for(c, "H100", &chosen);
    ck_assert_int_eq(chosen.params.vector, 4); /* 4092 = 4 * 1023 */
    fv_case_free(c);
}
END_TEST

/* ----------------------------------------- warp-specialized heuristic */

static fv_device device_named(const char *name)
{
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table(name, &device));
    return device;
}

/* A bf16 norm backward at rows x hidden: x and dy circular, the weight
 * along the row, `partial_rows` f32 partial rows (1 for RMS, 2 for LN). */
static fv_sched_ws_problem norm_problem(int64_t rows, int64_t hidden, int element_bytes,
                                        int partial_rows, int inner_reductions)
{
    return (fv_sched_ws_problem){.rows = rows, .inner = hidden, .vector = 16 / element_bytes,
                                 .circular_bytes = 2 * hidden * element_bytes,
                                 .noncircular_bytes = hidden * element_bytes,
                                 .partial_bytes = partial_rows * hidden * 4,
                                 .inner_reductions = inner_reductions, .static_shapes = true};
}

/* Registers per thread of a block and register sharing, as in nvFuser:
 * 384 threads get 168, split 232 (compute) / 40 (producer). */
START_TEST(ws_register_budgets)
{
    fv_device b200 = device_named("B200");
    ck_assert_int_eq(fv_sched_ws_registers_per_thread(&b200, 384), 168);
    ck_assert_int_eq(fv_sched_ws_registers_per_thread(&b200, 256), 255);
    ck_assert_int_eq(fv_sched_ws_registers_per_thread(&b200, 640), 96);
    fv_sched_ws_problem rms = norm_problem(16384, 4096, 2, 1, 1);
    ck_assert_int_eq(fv_sched_ws_registers_for(&rms, rms.circular_bytes, 128), 32);
    ck_assert_int_eq(fv_sched_ws_registers_for(&rms, rms.noncircular_bytes, 128), 16);
    ck_assert_int_eq(fv_sched_ws_registers_for(&rms, rms.partial_bytes, 128), 32);
}
END_TEST

/* nvfuser.md 1.3's worked examples on B200. */
START_TEST(ws_worked_examples_on_b200)
{
    fv_device b200 = device_named("B200");
    fv_sched_ws_params p;
    /* RMS bwd 16384 x 4096 bf16: unroll 4 would need 288 > 232 registers */
    fv_sched_ws_problem rms = norm_problem(16384, 4096, 2, 1, 1);
    FV_ASSERT_OK(fv_sched_ws_heuristic(&rms, &b200, &p));
    ck_assert_int_eq(p.bdimx, 128);
    ck_assert_int_eq(p.bdimy, 2);
    ck_assert_int_eq(p.unroll, 2);
    ck_assert_int_eq(p.stages, 4);
    ck_assert_int_eq(p.threads, 384);
    ck_assert(p.register_sharing);
    ck_assert_int_eq(p.compute_registers, 232);
    ck_assert_int_eq(p.producer_registers, 40);
    ck_assert_int_eq(p.registers_needed, 224);
    ck_assert(p.regs_cached && p.gmem_to_regs);
    ck_assert_int_eq(p.pass, 'A');
    ck_assert(p.good);
    /* LN bwd 16384 x 2048 bf16: 216 <= 232 registers, 135 KB of shared memory */
    fv_sched_ws_problem ln = norm_problem(16384, 2048, 2, 2, 2);
    FV_ASSERT_OK(fv_sched_ws_heuristic(&ln, &b200, &p));
    ck_assert_int_eq(p.bdimx, 128);
    ck_assert_int_eq(p.bdimy, 2);
    ck_assert_int_eq(p.unroll, 4);
    ck_assert_int_eq(p.stages, 4);
    ck_assert_int_eq(p.registers_needed, 216);
    ck_assert_int_eq(p.shared_bytes, 135296);
    ck_assert(p.good);
}
END_TEST

/* is_good_ws_heuristic: the B200 RMS-bwd fp16 cutoff near H = 24K (one
 * compute group with the weight in registers must leave 64 registers). */
START_TEST(ws_good_heuristic_cutoff)
{
    fv_device b200 = device_named("B200");
    fv_sched_ws_params p;
    fv_sched_ws_problem at_24k = norm_problem(16384, 24576, 2, 1, 1);
    FV_ASSERT_OK(fv_sched_ws_heuristic(&at_24k, &b200, &p));
    ck_assert_int_eq(p.bdimy, 1);
    ck_assert_int_eq(p.bdimx, 384);
    ck_assert_int_eq(p.stages, 2);
    ck_assert(p.gmem_to_regs);
    ck_assert_msg(p.good, "%s", p.why_not_good); /* 160 - 32 - 64 = 64 registers left */
    fv_sched_ws_problem at_28k = norm_problem(16384, 28672, 2, 1, 1);
    FV_ASSERT_OK(fv_sched_ws_heuristic(&at_28k, &b200, &p));
    ck_assert(!p.good);
    ck_assert_ptr_nonnull(strstr(p.why_not_good, "leaves 40 registers"));
    /* a row too large for two stages */
    fv_sched_ws_problem at_32k = norm_problem(16384, 32768, 2, 1, 1);
    FV_ASSERT_OK(fv_sched_ws_heuristic(&at_32k, &b200, &p));
    ck_assert(!p.good);
    /* judged again with the 152 registers our kernel's 384 compute threads
     * get (its producer keeps 56), 24K leaves 56: not good */
    FV_ASSERT_OK(fv_sched_ws_heuristic(&at_24k, &b200, &p));
    fv_sched_ws_judge(&at_24k, 152, &p);
    ck_assert(!p.good);
    ck_assert_ptr_nonnull(strstr(p.why_not_good, "leaves 56 registers"));
    fv_sched_ws_judge(&at_24k, 160, &p);
    ck_assert(p.good);
    /* with the weight in shared memory, the floor counts the partials alone:
     * LN bwd bf16 16384 x 20480 (pass C, 7 vectors of 8 per thread, 112
     * registers of dw and db partials) leaves 40 of 152 (its kernel spilled
     * 96 bytes on sm_90a) */
    fv_sched_ws_problem ln_20k = norm_problem(16384, 20480, 2, 2, 2);
    FV_ASSERT_OK(fv_sched_ws_heuristic(&ln_20k, &b200, &p));
    ck_assert_int_eq(p.bdimx, 384);
    ck_assert(!p.gmem_to_regs);
    ck_assert_msg(p.good, "%s", p.why_not_good); /* nvFuser's rule does not look */
    fv_sched_ws_judge(&ln_20k, 152, &p);
    ck_assert(!p.good);
    ck_assert_ptr_nonnull(strstr(p.why_not_good, "leaves 40 registers beside the partials"));
    /* the plan applies it: RMS bwd bf16 24576 forced on B200 knows it is not good */
    choice chosen;
    choose_norm(NORM_RMS_BACKWARD, FV_BF16, 16384, 24576, FV_APPROACH_WS, "B200", &chosen);
    ck_assert_str_eq(chosen.family, "inner_outer_ws");
    ck_assert(chosen.params.forced_not_good);
    ck_assert_ptr_nonnull(strstr(chosen.params.description, "leaves 56 registers"));
}
END_TEST

/* Selection (nvfuser.md 1.4): Blackwell only, static shapes, enough rows per
 * SM (more than 16 for layer norm, more than 4 for RMS norm). */
START_TEST(ws_selection_rules)
{
    fv_device b200 = device_named("B200"), h100 = device_named("H100");
    char why[160];
    fv_sched_ws_problem ln = norm_problem(16384, 2048, 2, 2, 2);
    ck_assert(fv_sched_ws_preferred(&ln, &b200, why, sizeof why));
    ck_assert(!fv_sched_ws_preferred(&ln, &h100, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "compute capability 9.0"));
    fv_sched_ws_problem symbolic = ln;
    symbolic.static_shapes = false;
    ck_assert(!fv_sched_ws_preferred(&symbolic, &b200, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "symbolic"));
    /* 2368 rows = 16 per SM on 148 SMs: not enough for layer norm ... */
    fv_sched_ws_problem few = norm_problem(2368, 2048, 2, 2, 2);
    ck_assert(!fv_sched_ws_preferred(&few, &b200, why, sizeof why));
    few.rows = 2369;
    ck_assert(fv_sched_ws_preferred(&few, &b200, why, sizeof why));
    /* ... while RMS norm needs more than 4 per SM (592 rows) */
    fv_sched_ws_problem rms = norm_problem(592, 4096, 2, 1, 1);
    ck_assert(!fv_sched_ws_preferred(&rms, &b200, why, sizeof why));
    rms.rows = 593;
    ck_assert(fv_sched_ws_preferred(&rms, &b200, why, sizeof why));
}
END_TEST

/* Relieves the first kernel of `planned` as the pipeline does after it
 * spilled 100 bytes; asserts that its row copy loop, opened by `loop`, is
 * now unrolled 4 at a time, that the description and hash follow, and that
 * a second relief has nothing left to offer. */
static void assert_relieved(planned_kernel *planned, const char *family, const char *loop)
{
    static const char pragma[] =
        "#pragma unroll 4  // not wholly: wholly unrolled, this kernel spilled";
    fv_kernel_plan *kernel = &planned->plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, family);
    ck_assert_ptr_null(strstr(kernel->source, pragma));
    char old_hash[sizeof kernel->hash];
    memcpy(old_hash, kernel->hash, sizeof old_hash);
    bool relieved = false;
    FV_ASSERT_OK(fv_plan_relieve_registers(kernel, 100, &relieved));
    ck_assert(relieved);
    const char *at = strstr(kernel->source, pragma);
    ck_assert_msg(at != NULL, "%s", kernel->params.description);
    at += strlen(pragma);
    while (*at == ' ' || *at == '\n')
        at++;
    ck_assert_msg(strncmp(at, loop, strlen(loop)) == 0, "after the pragma: %.80s", at);
    ck_assert_str_eq(kernel->relief_note, "emitted again after spilling 100 bytes: its row copy "
                                          "loop unrolled 4 at a time, not wholly");
    /* the note stays out of the source: another compiler's spill count
     * leaves the hash alone */
    ck_assert_ptr_null(strstr(kernel->source, "emitted again"));
    char hash[sizeof kernel->hash];
    fv_sha256_hex_of(kernel->source, strlen(kernel->source), hash);
    ck_assert_str_eq(kernel->hash, hash);
    ck_assert_str_ne(kernel->hash, old_hash);
    char *before = strdup(kernel->source);
    FV_ASSERT_OK(fv_plan_relieve_registers(kernel, 100, &relieved));
    ck_assert(!relieved);
    ck_assert_str_eq(kernel->source, before);
    free(before);
    planned_free(planned);
}

/* A kernel that spills is emitted again with its row copy loop unrolled 4
 * at a time, in each of the loop's three forms (guarded copies: softmax fwd
 * fp32 2049 x 32766, which spilled 8 bytes on sm_90a wholly unrolled until
 * fv_maximum became one instruction, and bf16 2049 x 65534, 368 bytes, the
 * case of tests/relief/; predicated copies: multi-wave LN bwd;
 * aligned chunks: LN fwd bf16 x 20481).  Left as it is: a kernel of a
 * family with no such form (the general path's), one with 4 copies a
 * thread or fewer, one whose loop is already unrolled 4 at a time (softmax
 * fwd fp32 x 32767), and one that reads its row constants from device memory
 * in every pass (RMS fwd fp32 2049 x 32766, and the first of the general
 * path's kernels of LN bwd fp32 2049 x 32760, which spilled 144 bytes on
 * sm_90a; on the H200 the general path was as fast or faster where
 * timed). */
START_TEST(spilling_kernels_unroll_their_row_copies_by_four)
{
    planned_kernel planned;
    plan_norm_on(NORM_SOFTMAX, FV_F32, 2049, 32766, FV_APPROACH_AUTO, "H200", &planned);
    assert_relieved(&planned, "inner_persistent", "for (int b = 0; b < 32; ++b) {");
    plan_norm_on(NORM_LAYER_BACKWARD, FV_BF16, 16384, 16384, FV_APPROACH_MULTIWAVE, "H100",
                 &planned);
    assert_relieved(&planned, "inner_outer_persistent",
                    "for (int b = 0; b < 8; ++b) {\n            const int column = ");
    plan_norm_on(NORM_LAYER_FORWARD, FV_BF16, 16384, 20481, FV_APPROACH_AUTO, "H200", &planned);
    assert_relieved(&planned, "inner_persistent", "for (int step = 0; step < ");
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        fv_case_approach approach;
        const char *family;
    } kept[] = {
        /* general path: the multipass kernel's rows outgrow half the L2 even
         * in clusters of 8 */
        {NORM_LAYER_FORWARD, FV_F32, 1048576, FV_APPROACH_AUTO, "inner_reduction"},
        {NORM_LAYER_FORWARD, FV_BF16, 1024, FV_APPROACH_AUTO, "inner_persistent"},  /* 1 copy */
        /* already 4 at a time (fetch_unrolled_wholly): the form changes nothing */
        {NORM_LAYER_FORWARD, FV_F32, 32767, FV_APPROACH_AUTO, "inner_persistent"},
        {NORM_RMS_FORWARD, FV_F32, 32766, FV_APPROACH_AUTO, "inner_persistent"},
        {NORM_LAYER_BACKWARD, FV_F32, 32760, FV_APPROACH_AUTO, "inner_persistent"},
    };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        plan_norm_on(kept[i].kind, kept[i].dtype, 2049, kept[i].hidden, kept[i].approach, "H200",
                     &planned);
        fv_kernel_plan *kernel = &planned.plan.kernels[0];
        ck_assert_str_eq(kernel->segment->scheduler->name, kept[i].family);
        char *before = strdup(kernel->source);
        bool relieved = true;
        FV_ASSERT_OK(fv_plan_relieve_registers(kernel, 100, &relieved));
        ck_assert_msg(!relieved, "%s", kernel->params.description);
        ck_assert_str_eq(kernel->source, before);
        ck_assert_str_eq(kernel->relief_note, "");
        free(before);
        planned_free(&planned);
    }
}
END_TEST

/* Rows no persistent budget holds take one inner_multipass kernel: a block
 * of 1024 threads per row, a pass over the row per reduction level (two
 * for a var_mean, one for softmax's max and sum(exp(x - max)) computed
 * online) and one for the outputs, passes alternating direction;
 * rows whose length the 16-byte vector does not divide walk their span's
 * aligned chunks with the lanes outside the row left out of the reductions.
 * Where a row per SM outgrows the L2 (H200's 50 MiB, not B200's 126 MiB),
 * a cluster of blocks shares each row, a slice each, and the blocks add
 * their totals through distributed shared memory; softmax's online pass
 * keeps a row per block.  The general path keeps layer norm where the rows
 * in flight outgrow half the L2 even in clusters of 8.  Outputs are
 * streaming stores, so that the passes find the inputs' lines in L2. */
START_TEST(rows_no_block_holds_take_one_multipass_kernel)
{
    planned_kernel planned;
    plan_norm_on(NORM_SOFTMAX, FV_BF16, 4096, 128256, FV_APPROACH_AUTO, "H200", &planned);
    ck_assert_int_eq(planned.plan.kernel_count, 1);
    const fv_kernel_plan *kernel = &planned.plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, "inner_multipass");
    ck_assert_msg(strstr(planned.plan.fallback, "inner_persistent not used") != NULL, "%s",
                  planned.plan.fallback);
    ck_assert_msg(strstr(kernel->params.description,
                         "8-element vectors, 2 passes over each row (2 reduction levels, "
                         "softmax's maximum and sum in one online pass, then the outputs)") != NULL,
                  "%s", kernel->params.description);
    ck_assert_int_eq(kernel->launch.grid[0], 132);
    ck_assert_int_eq(kernel->launch.block[0], 1024);
    assert_source_has(kernel, (const char *const[]){
                                  "__launch_bounds__(1024, 1)",
                                  "accumulator1 *= fv_exp_fast(accumulator0 - chunk_maximum);",
                                  "accumulator1 += fv_exp_fast(v1[lane] - accumulator0);",
                                  "fv_row_online_max_sum<1024>(accumulator0, accumulator1, "
                                  "reduction_scratch);",
                                  "vector_index >= 0; vector_index -= 1024",
                                  "fv_store_streaming<8>(out0 + (row) * inner",
                                  NULL});
    ck_assert_ptr_null(strstr(kernel->source, "fv_in_row(column + lane"));
    ck_assert_ptr_null(strstr(kernel->source, "fv_cluster_exchange_init"));
    ck_assert_int_eq(kernel->launch.cluster, 0);
    ck_assert(!kernel->launch.resident);
    /* relief: the passes one iteration at a time, then no form left */
    fv_kernel_plan *relieved_kernel = &planned.plan.kernels[0];
    bool relieved = false;
    FV_ASSERT_OK(fv_plan_relieve_registers(relieved_kernel, 8, &relieved));
    ck_assert(relieved);
    ck_assert_ptr_null(strstr(relieved_kernel->source, "#pragma unroll 4"));
    ck_assert_str_eq(relieved_kernel->relief_note,
                     "emitted again after spilling 8 bytes: passes not unrolled (were 4 "
                     "iterations at a time)");
    FV_ASSERT_OK(fv_plan_relieve_registers(relieved_kernel, 8, &relieved));
    ck_assert(!relieved);
    planned_free(&planned);

    /* an odd length: the span's chunks; each pass walks those wholly in the
     * row (vector loads and streaming stores, no masks), then threads 0 and
     * 1 take the row's partial end chunks (lanes outside the row masked) */
    plan_norm_on(NORM_SOFTMAX, FV_BF16, 4096, 128257, FV_APPROACH_AUTO, "H200", &planned);
    kernel = &planned.plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, "inner_multipass");
    ck_assert_msg(strstr(kernel->params.description,
                         "8-element vectors on the aligned chunks of each row's span") != NULL,
                  "%s", kernel->params.description);
    assert_source_in_order(kernel, (const char *const[]){
                                       "const long long whole_begin = row_start % 8 != 0 ? 1 : 0;",
                                       "const long long walk_begin = whole_begin, walk_end = "
                                       "whole_end;",
                                       NULL});
    for (int pass = 0; pass < 2; pass++)
        assert_source_in_order(kernel, (const char *const[]){
                                           pass == 0 ? "// pass 1:" : "// pass 2:",
                                           pass == 0 ? "vector_index = walk_begin + threadIdx.x; "
                                                       "vector_index < walk_end;"
                                                     : "vector_index = walk_end - 1 - threadIdx.x; "
                                                       "vector_index >= walk_begin;",
                                           "fv_load<8>(in0 + (row) * inner + (column), v0);",
                                           pass == 0 ? "accumulator1 += fv_exp_fast(v1[lane] - accumulator0);"
                                                     : "fv_store_streaming<8>(out0 + (row) * inner "
                                                       "+ (column), v8);",
                                           "if (threadIdx.x < 2 && threadIdx.x < row_vectors) {",
                                           "const long long vector_index = threadIdx.x == 0 ? 0 : "
                                           "row_vectors - 1;",
                                           "if (!(column >= 0 && column + 8 <= inner)) {",
                                           "fv_load_chunk<8>(in0 + (row) * inner + (column)",
                                           pass == 0 ? "if (fv_in_row(column + lane, inner))"
                                                     : "fv_store_lanes<8>(out0",
                                           NULL});
    planned_free(&planned);
    /* with row constants (w, b [H]) the shorter vectors that divide the row:
     * the chunks of w would not be aligned */
    plan_norm_on(NORM_LAYER_FORWARD, FV_BF16, 4096, 131070, FV_APPROACH_AUTO, "H200", &planned);
    kernel = &planned.plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, "inner_multipass");
    ck_assert_msg(strstr(kernel->params.description, "2-element vectors, 3 passes") != NULL, "%s",
                  kernel->params.description);
    ck_assert_ptr_null(strstr(kernel->source, "fv_load_chunk<"));
    planned_free(&planned);

    /* layer norm: var_mean in two passes; 512 KiB rows outgrow the H200's L2 */
    plan_norm_on(NORM_LAYER_FORWARD, FV_F32, 4096, 131072, FV_APPROACH_AUTO, "B200", &planned);
    kernel = &planned.plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, "inner_multipass");
    ck_assert_msg(strstr(kernel->params.description, "3 passes over each row (1 reduction "
                                                     "level") != NULL,
                  "%s", kernel->params.description);
    ck_assert_ptr_nonnull(strstr(kernel->source, "squares0 += deviation * deviation;"));
    ck_assert_ptr_null(strstr(kernel->source, "fv_welford_add(accumulator"));
    planned_free(&planned);
    /* not for fp64 rows (inner_persistent sets them aside whatever their
     * length), nor rows a 1024-thread block would leave threads idle in */
    plan_norm_on(NORM_SOFTMAX, FV_F64, 4096, 128, FV_APPROACH_AUTO, "H200", &planned);
    ck_assert_str_eq(planned.plan.kernels[0].segment->scheduler->name, "inner_reduction");
    planned_free(&planned);
    plan_norm_on(NORM_SOFTMAX, FV_F64, 4096, 128256, FV_APPROACH_AUTO, "H200", &planned);
    ck_assert_str_eq(planned.plan.kernels[0].segment->scheduler->name, "inner_reduction");
    planned_free(&planned);
    fv_case *short_rows = norm_case(NORM_SOFTMAX, FV_F32, 4096, 2048, 0);
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table("H200", &device));
    fv_schedule_params params;
    const fv_segment_view *view = NULL;
    fv_segmentation segmentation;
    FV_ASSERT_OK(fv_segment_fusion(short_rows->fusion, &segmentation));
    view = &segmentation.segments[0].view;
    ck_assert(fv_sched_inner_multipass.accepts(view, NULL, 0));
    ck_assert_int_eq(fv_sched_inner_multipass.choose(view, short_rows, &device, &params),
                     FV_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(fv_error_message(), "rows of 2048 elements would leave threads") != NULL,
                  "%s", fv_error_message());
    fv_error_clear();
    fv_segmentation_free(&segmentation);
    fv_case_free(short_rows);

    /* 512 KiB rows on an H200: 132 rows in flight would be 66 MiB, so a
     * cluster of 4 blocks takes each row (33 rows, 16 MiB) */
    plan_norm_on(NORM_LAYER_FORWARD, FV_F32, 4096, 131072, FV_APPROACH_AUTO, "H200", &planned);
    ck_assert_int_eq(planned.plan.kernel_count, 1);
    kernel = &planned.plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, "inner_multipass");
    ck_assert_msg(strstr(kernel->params.description,
                         "a row per cluster of 4 blocks of 1024 threads (a slice of the row "
                         "each)") != NULL &&
                      strstr(kernel->params.description, "rows in flight 16 MiB (33 x 512 KiB") !=
                          NULL,
                  "%s", kernel->params.description);
    ck_assert_int_eq(kernel->launch.cluster, 4);
    ck_assert_int_eq(kernel->launch.grid[0], 132);
    ck_assert(kernel->launch.resident);
    assert_source_has(kernel, (const char *const[]){
                                  "#include <cooperative_groups.h>",
                                  "fv_cluster_exchange_init(cluster_arrived);",
                                  "row < outer; row += gridDim.x / 4)",
                                  "vector_index = slice_begin + threadIdx.x; "
                                  "vector_index < slice_end;",
                                  "vector_index = slice_end - 1 - threadIdx.x; "
                                  "vector_index >= slice_begin;",
                                  "const float mean0 = fv_cluster_total<4>(accumulator0, "
                                  "cluster_exchange",
                                  "squares0 = fv_cluster_total<4>(squares0",
                                  "if (threadIdx.x == 0 && cluster_rank == 0) {",
                                  NULL});
    planned_free(&planned);
    /* the same rows in RMS norm: a sum in clusters */
    plan_norm_on(NORM_RMS_FORWARD, FV_F32, 4096, 131072, FV_APPROACH_AUTO, "H200", &planned);
    kernel = &planned.plan.kernels[0];
    ck_assert_int_eq(kernel->launch.cluster, 4);
    ck_assert_ptr_nonnull(strstr(kernel->source, "accumulator0 = fv_cluster_total<4>(accumulator0, "
                                                 "cluster_exchange, cluster_arrived, "
                                                 "exchange_phase);"));
    planned_free(&planned);
    /* softmax's online pass keeps a row per block there */
    plan_norm_on(NORM_SOFTMAX, FV_F32, 4096, 128256, FV_APPROACH_AUTO, "H200", &planned);
    kernel = &planned.plan.kernels[0];
    ck_assert_str_eq(kernel->segment->scheduler->name, "inner_multipass");
    ck_assert_int_eq(kernel->launch.cluster, 0);
    ck_assert_msg(strstr(kernel->params.description, "a row per block of 1024 threads") != NULL,
                  "%s", kernel->params.description);
    planned_free(&planned);
    /* 4 MiB rows: 16 x 4 MiB in flight in clusters of 8, more than half the L2 */
    plan_norm_on(NORM_LAYER_FORWARD, FV_F32, 64, 1048576, FV_APPROACH_AUTO, "H200", &planned);
    ck_assert_int_eq(planned.plan.kernel_count, 2);
    ck_assert_str_eq(planned.plan.kernels[0].segment->scheduler->name, "inner_reduction");
    ck_assert_msg(strstr(planned.plan.fallback, "inner_multipass not used: segment 0 "
                                                "(inner_multipass): rows in flight (64 MiB, a "
                                                "row per cluster of 8 blocks) outgrow half the "
                                                "L2 (50 MiB)") != NULL,
                  "%s", planned.plan.fallback);
    planned_free(&planned);
}
END_TEST

static Suite *persistent_suite(void)
{
    Suite *suite = suite_create("persistent");
    TCase *tcase = tcase_create("persistent");
    tcase_set_timeout(tcase, 60);
    tcase_add_test(tcase, seed_000_thunder_layer_norm_backward);
    tcase_add_test(tcase, seed_000_on_b200_is_warp_specialized);
    tcase_add_test(tcase, ws_producer_is_one_warp_group);
    tcase_add_test(tcase, multi_wave_example_on_h100);
    tcase_add_test(tcase, short_rows_take_a_warp_each);
    tcase_add_test(tcase, partials_added_over_clusters_of_two);
    tcase_add_test(tcase, few_rows_in_flight_take_a_third_slot);
    tcase_add_test(tcase, rows_pair_up_in_256_thread_blocks);
    tcase_add_test(tcase, row_pairs_keep_the_rows_per_sm);
    tcase_add_test(tcase, seed_001_shapes_fit_the_budgets);
    tcase_add_test(tcase, large_rows_take_more_threads);
    tcase_add_test(tcase, long_rows_split_over_clusters);
    tcase_add_test(tcase, wide_rows_keep_partials_in_shared_memory);
    tcase_add_test(tcase, clustered_kernels_store_rows_around_l1);
    tcase_add_test(tcase, stage_two_loads_a_threads_rows_at_once);
    tcase_add_test(tcase, stage_two_adds_slices_within_warps);
    tcase_add_test(tcase, row_groups_combine_partials_in_one_pass);
    tcase_add_test(tcase, row_buffers_start_on_a_128_byte_line);
    tcase_add_test(tcase, clustered_rows_keep_partials_in_shared_memory);
    tcase_add_test(tcase, oversized_rows_fall_back);
    tcase_add_test(tcase, rows_no_block_holds_take_one_multipass_kernel);
    tcase_add_test(tcase, forward_norms_are_inner_persistent);
    tcase_add_test(tcase, forward_rows_held_as_float_in_one_wave);
    tcase_add_test(tcase, small_batches_take_balanced_grids);
    tcase_add_test(tcase, forward_blocks_of_two_rows);
    tcase_add_test(tcase, held_rows_take_two_rows_per_block_where_they_pay);
    tcase_add_test(tcase, forward_rows_left_in_shared_for_two_rows);
    tcase_add_test(tcase, short_slices_take_two_blocks_by_memory_and_row_bytes);
    tcase_add_test(tcase, one_slot_clusters_double_on_fast_memory_for_layer_norm);
    tcase_add_test(tcase, one_slot_rows_split_on_fast_memory_for_layer_norm);
    tcase_add_test(tcase, multi_wave_launch_bounds_follow_the_memory);
    tcase_add_test(tcase, sixteen_bit_rows_held_as_float_up_to_224_registers);
    tcase_add_test(tcase, softmax_keeps_exp_where_rows_are_issue_bound);
    tcase_add_test(tcase, odd_rows_copy_aligned_spans);
    tcase_add_test(tcase, odd_forward_rows_compute_on_span_chunks);
    tcase_add_test(tcase, odd_backward_rows_compute_on_span_chunks);
    tcase_add_test(tcase, multiwave_span_lanes_test_a_lane_window);
    tcase_add_test(tcase, short_span_rows_take_warps);
    tcase_add_test(tcase, odd_fp32_forward_rows_copy_spans_where_they_pay);
    tcase_add_test(tcase, forward_rows_refill_one_slot_for_the_cache);
    tcase_add_test(tcase, spilling_kernels_unroll_their_row_copies_by_four);
    tcase_add_test(tcase, launch_blocks_clamp_to_the_resident);
    tcase_add_test(tcase, one_slot_spans_only_on_chunks);
    tcase_add_test(tcase, held_kernels_are_bounded_to_their_planned_blocks);
    tcase_add_test(tcase, span_chunk_backward_kernels_are_bounded_to_their_planned_blocks);
    tcase_add_test(tcase, odd_backward_rows_in_one_slot_copy_spans);
    tcase_add_test(tcase, seed_003_tma_inner_persistent);
    tcase_add_test(tcase, irregular_sizes);
    suite_add_tcase(suite, tcase);
    TCase *ws = tcase_create("warp_specialized");
    tcase_add_test(ws, ws_register_budgets);
    tcase_add_test(ws, ws_worked_examples_on_b200);
    tcase_add_test(ws, ws_good_heuristic_cutoff);
    tcase_add_test(ws, ws_selection_rules);
    suite_add_tcase(suite, ws);
    return suite;
}

int main(void) { return fv_test_run_suite(persistent_suite()); }
