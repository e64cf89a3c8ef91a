/* check_codegen.c: the structure of generated kernels.  16-byte vector
 * accesses where alignment and extents allow (8 bf16 lanes, 4 fp32 lanes) and
 * scalar accesses otherwise; extents as parameters (one kernel serves every
 * size with the same parameters); the parameter convention; reductions and
 * the deterministic grid reduction; readable comments; skeleton filling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"
#include "frontend/frontend.h"
#include "norm_fusions.h"
#include "segment/segment.h"
#include "test_support.h"

/* Sources of every segment of case c (planned for the H100) by `families`;
 * *count segments, their families' names in `names`. */
static char **generate_case_with(const fv_scheduler *const *families, const fv_case *c, int *count,
                                 char names[][32])
{
    fv_segmentation s;
    FV_ASSERT_OK(fv_segment_fusion_with(c->fusion, families, &s));
    fv_device device;
    FV_ASSERT_OK(fv_sched_device_from_table("H100", &device));
    char **sources = calloc((size_t)s.count, sizeof(char *));
    for (int32_t i = 0; i < s.count; i++) {
        fv_case segment_case = *c;
        segment_case.fusion = s.segments[i].fusion;
        fv_schedule_params params;
        FV_ASSERT_OK(s.segments[i].scheduler->choose(&s.segments[i].view, &segment_case, &device,
                                                     &params));
        fv_text source = {0};
        FV_ASSERT_OK(s.segments[i].scheduler->emit(&s.segments[i].view, &params, "kernel",
                                                   &source));
        sources[i] = fv_text_take(&source);
        snprintf(names[i], 32, "%s", s.segments[i].scheduler->name);
    }
    *count = s.count;
    fv_segmentation_free(&s);
    return sources;
}

/* Sources of every segment of a norm case; *count segments. */
static char **generate_with(const fv_scheduler *const *families, norm_kind kind, fv_dtype dtype,
                            int64_t rows, int64_t hidden, int *count, char names[][32])
{
    fv_case *c = norm_case(kind, dtype, rows, hidden, 0);
    ck_assert_ptr_nonnull(c);
    char **sources = generate_case_with(families, c, count, names);
    fv_case_free(c);
    return sources;
}

/* The general (multi-kernel) path, which most tests here look at. */
static char **generate(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden, int *count,
                       char names[][32])
{
    return generate_with(fv_sched_general_families(), kind, dtype, rows, hidden, count, names);
}

static void free_sources(char **sources, int count)
{
    for (int i = 0; i < count; i++)
        free(sources[i]);
    free(sources);
}

/* The source of a norm case that segments into one kernel, of family
 * `expected`; the caller frees it. */
static char *generate_one(const fv_scheduler *const *families, norm_kind kind, fv_dtype dtype,
                          int64_t rows, int64_t hidden, const char *expected)
{
    char names[4][32];
    int count;
    char **sources = generate_with(families, kind, dtype, rows, hidden, &count, names);
    ck_assert_int_eq(count, 1);
    ck_assert_str_eq(names[0], expected);
    char *source = sources[0];
    free(sources);
    return source;
}

/* Asserts that `code` contains each of `lines` (NULL-terminated). */
static void assert_has_lines(const char *code, const char *const *lines)
{
    for (; *lines != NULL; lines++)
        ck_assert_msg(strstr(code, *lines) != NULL, "missing: %s", *lines);
}

/* The kernel's code, after the common helpers. */
static const char *kernel_code(const char *source)
{
    const char *code = strstr(source, "extern \"C\" __global__");
    ck_assert_ptr_nonnull(code);
    return code;
}

START_TEST(vector_accesses_follow_dtype_and_alignment)
{
    char names[4][32];
    int count;
    char **sources = generate(NORM_LAYER_BACKWARD, FV_BF16, 256, 1024, &count, names);
    ck_assert_int_eq(count, 2);
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "fv_load<8>(in0 + (safe_row) * inner + (column), v0);"));
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[1]), "fv_store<8>(out0 + (row) * inner + (column), "));
    /* the helpers read bf16 vectors as pairs: the low element shifted up,
     * the high one masked (exact, two instructions a pair) */
    ck_assert_ptr_nonnull(strstr(sources[0], "out[2 * pair] = __uint_as_float(pairs[pair] << 16);"));
    ck_assert_ptr_nonnull(strstr(sources[0], "out[2 * pair + 1] = __uint_as_float(pairs[pair] & 0xffff0000u);"));
    free_sources(sources, count);

    sources = generate(NORM_LAYER_BACKWARD, FV_F32, 256, 1024, &count, names);
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "fv_load<4>("));
    free_sources(sources, count);

    /* H = 1023 is odd: no vector access can stay aligned from row to row. */
    sources = generate(NORM_LAYER_BACKWARD, FV_BF16, 256, 1023, &count, names);
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "fv_load<1>("));
    ck_assert_ptr_null(strstr(kernel_code(sources[0]), "fv_load<8>("));
    free_sources(sources, count);
}
END_TEST

/* Symbolic sizes: the same parameters give the same source for other sizes,
 * and no extent appears as a literal. */
START_TEST(extents_are_parameters)
{
    char names_a[4][32], names_b[4][32];
    int count_a, count_b;
    char **a = generate(NORM_RMS_BACKWARD, FV_BF16, 4096, 2048, &count_a, names_a);
    char **b = generate(NORM_RMS_BACKWARD, FV_BF16, 6000, 2048, &count_b, names_b);
    ck_assert_int_eq(count_a, count_b);
    for (int i = 0; i < count_a; i++) {
        ck_assert_str_eq(a[i], b[i]);
        ck_assert_ptr_null(strstr(kernel_code(a[i]), "4096"));
        ck_assert_ptr_null(strstr(kernel_code(a[i]), "2048"));
        ck_assert_ptr_nonnull(strstr(kernel_code(a[i]), "long long outer, long long inner,"));
    }
    free_sources(a, count_a);
    free_sources(b, count_b);
}
END_TEST

START_TEST(parameters_follow_the_convention)
{
    char names[4][32];
    int count;
    char **sources = generate(NORM_LAYER_BACKWARD, FV_BF16, 64, 256, &count, names);
    const char *inner = kernel_code(sources[0]);
    /* inputs in order, then outputs, then scalars, extents and scratch */
    const char *in0 = strstr(inner, "const __nv_bfloat16 *__restrict__ in0,");
    const char *in3 = strstr(inner, "const float *__restrict__ in3,");
    const char *out0 = strstr(inner, "float *__restrict__ out0,");
    const char *extents = strstr(inner, "long long outer, long long inner,");
    const char *scratch = strstr(inner, "float *__restrict__ workspace, unsigned *__restrict__ semaphores");
    ck_assert(in0 && in3 && out0 && extents && scratch);
    ck_assert(in0 < in3 && in3 < out0 && out0 < extents && extents < scratch);
    /* the outer-reduction kernel gets 1/H as a host-computed scalar */
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[1]), "double scalar0,"));
    free_sources(sources, count);
}
END_TEST

START_TEST(reductions_and_grid_reduction)
{
    char names[4][32];
    int count;
    char **sources = generate(NORM_LAYER_BACKWARD, FV_BF16, 4096, 512, &count, names);
    ck_assert_str_eq(names[0], "inner_reduction");
    ck_assert_ptr_nonnull(strstr(sources[0], "fv_row_sum<"));
    ck_assert_str_eq(names[1], "outer_reduction");
    const char *outer = kernel_code(sources[1]);
    ck_assert_ptr_nonnull(strstr(outer, "atomicAdd(&semaphores[blockIdx.x], 1u)"));
    ck_assert_ptr_nonnull(strstr(outer, "for (unsigned y = 0; y < gridDim.y; ++y)"));
    ck_assert_ptr_nonnull(strstr(outer, "semaphores[blockIdx.x] = 0;"));
    /* the thread's rows four at a time, each row's loads in one unrolled
     * block, then the rest one at a time, in row order */
    static const char *const grouped_rows[] = {
        "for (; column_active && first_row + 3 * row_step < outer; first_row += 4 * row_step) {",
        "#pragma unroll",
        "for (int k = 0; k < 4; ++k) {",
        "const long long row = first_row + k * row_step;",
        "fv_load<8>(in0 + (row) * inner + (column), v0);",
        "for (long long row = first_row; column_active && row < outer; row += row_step) {",
        "fv_load<8>(in0 + (row) * inner + (column), v0);",
        "__syncthreads();",
        NULL,
    };
    fv_test_assert_lines_in_order(outer, grouped_rows);
    free_sources(sources, count);

    sources = generate(NORM_LAYER_FORWARD, FV_BF16, 64, 512, &count, names);
    ck_assert_ptr_nonnull(strstr(sources[0], "fv_welford_add("));
    ck_assert_ptr_nonnull(strstr(sources[0], "fv_row_welford<"));
    free_sources(sources, count);

    /* a 16-bit softmax's exp on the special-function unit, fp32's expf */
    sources = generate(NORM_SOFTMAX, FV_BF16, 64, 512, &count, names);
    ck_assert_ptr_nonnull(strstr(sources[0], "fv_row_max<"));
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[1]), "fv_exp_fast("));
    ck_assert_ptr_null(strstr(kernel_code(sources[1]), "expf("));
    free_sources(sources, count);
    sources = generate(NORM_SOFTMAX, FV_F32, 64, 512, &count, names);
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[1]), "expf("));
    ck_assert_ptr_null(strstr(kernel_code(sources[1]), "fv_exp_fast("));
    free_sources(sources, count);
}
END_TEST

/* Generated code is readable: ops are commented with their names, values
 * are named after their ids.  A bf16 output cast from f32 is rounded once,
 * by its store. */
START_TEST(generated_code_is_commented)
{
    char names[4][32];
    int count;
    char **sources = generate(NORM_RMS_FORWARD, FV_BF16, 64, 512, &count, names);
    const char *pointwise = kernel_code(sources[1]);
    ck_assert_ptr_nonnull(strstr(sources[1], "// Generated by fuservalidate: pointwise kernel."));
    ck_assert_ptr_nonnull(strstr(pointwise, "= mul("));
    ck_assert_ptr_null(strstr(pointwise, "fv_round_bf16("));
    ck_assert_ptr_nonnull(strstr(pointwise, "fv_store<8>(out0 + (row) * inner + (column), "));
    ck_assert_ptr_nonnull(strstr(pointwise, "// v0: input 0, bf16"));
    free_sources(sources, count);
}
END_TEST

/* The multi-wave families (the registry without the warp-specialized one). */
static const fv_scheduler *const multiwave_families[] = {
    &fv_sched_inner_outer_persistent, &fv_sched_inner_persistent, &fv_sched_pointwise,
    &fv_sched_inner_reduction,        &fv_sched_outer_reduction,  NULL,
};

/* The warp-specialized backward family in place of the multi-wave one. */
static const fv_scheduler *const ws_families[] = {
    &fv_sched_inner_outer_ws, &fv_sched_inner_persistent, &fv_sched_pointwise,
    &fv_sched_inner_reduction, &fv_sched_outer_reduction, NULL,
};

/* The TMA inner persistent family in place of the inner persistent one. */
static const fv_scheduler *const tma_families[] = {
    &fv_sched_inner_tma, &fv_sched_pointwise, &fv_sched_inner_reduction,
    &fv_sched_outer_reduction, NULL,
};

/* The source of a norm case's one warp-specialized backward kernel; the
 * caller frees it. */
static char *generate_ws(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden)
{
    return generate_one(ws_families, kind, dtype, rows, hidden, "inner_outer_ws");
}

/* With every family, a norm backward is one cooperative persistent kernel:
 * rows loaded once with 16-byte vectors, the grouped inner reductions, the
 * partials in registers, a grid sync and the second stage. */
START_TEST(norm_backward_is_one_persistent_kernel)
{
    char *source = generate_one(multiwave_families, NORM_LAYER_BACKWARD, FV_BF16, 16384, 4096,
                                "inner_outer_persistent");
    const char *code = kernel_code(source);
    /* on the H100 the launch bounds leave the registers to ptxas
     * (check_persistent multi_wave_launch_bounds_follow_the_memory) */
    ck_assert_ptr_nonnull(strstr(code, "__launch_bounds__(128, 1)"));
    ck_assert_ptr_nonnull(strstr(code, "cooperative_groups::this_grid().sync();"));
    /* rows copied to shared memory with cp.async, the next row during this one */
    ck_assert_ptr_nonnull(strstr(code, "const auto *const fetch0 = in0 + fetch_row * inner;"));
    ck_assert_ptr_nonnull(strstr(code, "const bool copy_active = fetch_active && column < inner;"));
    ck_assert_ptr_nonnull(strstr(code, "fv_copy_async_if<8>(buffer0_slots + (slot ^ 1) * 4096 + column, fetch0 + column, copy_active);"));
    ck_assert_ptr_nonnull(strstr(code, "fv_async_wait<1>();"));
    /* registers to spare at 2 blocks/SM: the weight held as float for the
     * whole kernel, x and dy as float for their row (each read once from its
     * slot; 16-bit rows may take the estimate to 224 registers) */
    ck_assert_ptr_nonnull(strstr(code, "fv_load<8>(in2 + column, weight2[b]);"));
    ck_assert_ptr_null(strstr(code, "cached2"));
    ck_assert_ptr_nonnull(strstr(code, "fv_load<8>(buffer0 + column, row_floats0[b]);"));
    ck_assert_ptr_nonnull(strstr(code, "const float (&v0)[8] = row_floats0[b];"));
    ck_assert_ptr_nonnull(strstr(code, "fv_load<8>(buffer1 + column, row_floats1[b]);"));
    ck_assert_ptr_nonnull(strstr(code, "const float (&v1)[8] = row_floats1[b];"));
    ck_assert_ptr_null(strstr(code, "fv_load<8>(buffer1 + column, v1);"));
    /* the row statistics copied with their row, an entry per thread, and
     * read after the wait */
    ck_assert_ptr_nonnull(strstr(code, "fv_copy_async_if<1>(stat3_slots + (slot ^ 1) * 128, in3 + fetch_row, fetch_active);"));
    ck_assert_ptr_null(strstr(code, "row_next3"));
    const char *wait = strstr(code, "fv_async_wait<1>();");
    const char *read = strstr(code, "fv_to_float(stat3[0])");
    ck_assert_ptr_nonnull(read);
    ck_assert(wait != NULL && wait < read);
    ck_assert_ptr_nonnull(strstr(code, "workspace"));
    /* both of layer norm's inner reductions in one grouped block reduction */
    ck_assert_ptr_nonnull(strstr(code, "fv_row_sum_group<128, 2>(sums1, reduction_scratch);"));
    ck_assert_ptr_nonnull(strstr(code, "slot ^= 1;"));
    free(source);

    /* three row slots at H = 2048 (deepen_prefetch): the first two rows
     * copied before the loop, each row then issues the copies of the row two
     * ahead into the previous row's slot, and waits for all but two groups */
    source = generate_one(multiwave_families, NORM_LAYER_BACKWARD, FV_BF16, 16384, 2048,
                          "inner_outer_persistent");
    static const char *const three_slots[] = {
        "const long long fetch_row = (long long)blockIdx.x * 1 + threadIdx.y + 1 * row_stride;",
        "fv_copy_async_if<8>(buffer0_slots + (1) * 2048 + column, fetch0 + column, copy_active);",
        "const long long fetch_row = row + 2 * row_stride;",
        "fv_copy_async_if<8>(buffer0_slots + (slot == 0 ? 2 : slot - 1) * 2048 + column, fetch0 + "
        "column, copy_active);",
        "fv_async_wait<2>();",
        "slot = slot == 2 ? 0 : slot + 1;",
        NULL,
    };
    assert_has_lines(kernel_code(source), three_slots);
    ck_assert_ptr_null(strstr(kernel_code(source), "slot ^= 1;"));
    free(source);

    /* a warp per 1024-wide bf16 row: warp-only inner reductions; the
     * block's 4 rows add their partials in shared memory (dw's and db's
     * together), in order, and write one partial row per block */
    source = generate_one(multiwave_families, NORM_LAYER_BACKWARD, FV_BF16, 16384, 1024,
                          "inner_outer_persistent");
    code = kernel_code(source);
    ck_assert_ptr_nonnull(strstr(code, "fv_row_sum_group<32, 2>(sums1, reduction_scratch);"));
    ck_assert_ptr_nonnull(strstr(code, "const long long partial_rows = (long long)gridDim.x * 1;"));
    ck_assert_ptr_nonnull(strstr(code, "fv_store<8>(combined + (4 + threadIdx.y) * 1024 + column, partial1[b]);"));
    ck_assert_ptr_nonnull(strstr(code, "for (int y = 1; y < 4; ++y) {"));
    free(source);

    source = generate_one(multiwave_families, NORM_RMS_FORWARD, FV_F32, 4096, 1024,
                          "inner_persistent");
    ck_assert_ptr_nonnull(strstr(kernel_code(source), "fv_copy_async_if<4>("));
    ck_assert_ptr_null(strstr(kernel_code(source), "this_grid"));
    free(source);

    /* a warp per 1024-wide bf16 forward row: both var_mean passes reduce
     * within the warp */
    source = generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_BF16, 16384, 1024,
                          "inner_persistent");
    code = kernel_code(source);
    ck_assert_ptr_nonnull(strstr(code, "fv_row_sum_group<32, 1>(sums1, reduction_scratch);"));
    ck_assert_ptr_nonnull(strstr(code, "fv_row_sum_group<32, 1>(squares1, reduction_scratch);"));
    free(source);

    /* layer-norm forward: var_mean in two passes over the buffered row */
    char names[4][32];
    int count;
    char **sources = generate_with(multiwave_families, NORM_LAYER_FORWARD, FV_BF16, 4096, 2048, &count, names);
    ck_assert_int_eq(count, 1);
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "// var_mean, pass 2"));
    /* weight and bias cached in shared memory once per block; the 16-bit
     * row, read three times, converted to float once into registers and
     * read from there by the second and third passes */
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "fv_copy_async<8>(cached1 + column, in1 + column);"));
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "float row_floats0[2][8];"));
    ck_assert_ptr_nonnull(strstr(kernel_code(sources[0]), "const float (&v0)[8] = row_floats0[b];"));
    ck_assert_ptr_null(strstr(kernel_code(sources[0]), "fv_welford_add("));
    free_sources(sources, count);
}
END_TEST

/* Asserts that the kernel of `source` has `lines` in order and not
 * `absent`, then frees `source`. */
static void assert_kernel_lines(char *source, const char *const *lines, const char *absent)
{
    const char *code = kernel_code(source);
    fv_test_assert_lines_in_order(code, lines);
    ck_assert_msg(strstr(code, absent) == NULL, "present: %s", absent);
    free(source);
}

/* Row constants copied to shared memory (LN fwd bf16 16384 x 2048 and LN
 * bwd bf16 16384 x 12288 on an H100): their copies are committed, the
 * first row's copies issued, and only then the constants waited for (the
 * newest group, the first row's, may still be in flight) and the block
 * barrier passed; the first row no longer waits for the constants' round
 * trip before its copies start. */
START_TEST(first_rows_overlap_the_row_constants)
{
    static const char *const forward[] = {
        "fv_copy_async<8>(cached1 + column, in1 + column);",
        "fv_copy_async<8>(cached2 + column, in2 + column);",
        "fv_async_commit();  // waited for after the first rows' copies are issued",
        "// The first row's copies; each row then issues the next one's.",
        "fv_copy_async_if<8>(buffer0_slots + (0) * 2048 + column, fetch0 + column, copy_active);",
        "fv_async_commit();",
        "fv_async_wait<1>();  // the row constants have landed; the first rows' copies may not have",
        "__syncthreads();  // every thread reads what the others copied",
        "for (long long row_base = (long long)blockIdx.x * 1; row_base < outer;",
        NULL,
    };
    assert_kernel_lines(generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_BF16, 16384,
                                     2048, "inner_persistent"),
                        forward, "fv_async_wait<0>();\n    __syncthreads();");
    static const char *const backward[] = {
        "fv_async_commit();  // waited for after the first rows' copies are issued",
        "fv_copy_async_if<8>(buffer1_slots + (0) * 12288 + column, fetch1 + column, copy_active);",
        "fv_async_commit();",
        "fv_async_wait<1>();  // the row constants have landed; the first rows' copies may not have",
        "__syncthreads();  // every thread reads what the others copied",
        "for (long long row_base",
        NULL,
    };
    assert_kernel_lines(generate_one(multiwave_families, NORM_LAYER_BACKWARD, FV_BF16, 16384,
                                     12288, "inner_outer_persistent"),
                        backward, "fv_async_wait<0>();\n    __syncthreads();");
}
END_TEST

/* Partial clusters (LN bwd bf16 2048 on an H100, 3 blocks/SM): each block
 * arrives at a cluster barrier when it starts; after its rows it waits
 * there, stores the dw and db partials of each block's half of the columns
 * into that block's exchange (after the 27648 bytes of row buffers), and
 * after a cluster sync adds the two senders' entries of its own half, rank
 * 0 first, into the cluster's workspace row, before the grid sync. */
START_TEST(partials_added_over_a_cluster)
{
    char *source = generate_one(multiwave_families, NORM_LAYER_BACKWARD, FV_BF16, 16384, 2048,
                                "inner_outer_persistent");
    static const char *const lines[] = {
        "fv_cluster_arrive_relaxed();",
        "for (long long row_base = (long long)blockIdx.x * 1; row_base < outer;",
        "const long long partial_rows = (long long)(gridDim.x / 2) * 1;",
        "const long long partial_row = (long long)(blockIdx.x / 2) * 1 + threadIdx.y;",
        "float *const exchange = reinterpret_cast<float *>(row_buffers + 27648);  "
        "// [2 senders][2 reductions][1024 columns]",
        "fv_cluster_wait();",
        "const unsigned owner = (unsigned)(column / 1024);",
        "float *const to = cooperative_groups::this_cluster().map_shared_rank(exchange, owner) +",
        "cluster_rank * 2048 + (column - (long long)owner * 1024);",
        "fv_store<8>(to + 0, partial0[b]);",
        "fv_store<8>(to + 1024, partial1[b]);",
        "cooperative_groups::this_cluster().sync();",
        "for (int offset = threadIdx.x * 4; offset < 1024; offset += 512) {",
        "const long long column = (long long)cluster_rank * 1024 + offset;",
        "fv_load<4>(exchange + 0 + offset, sum0);",
        "fv_load<4>(exchange + sender * 2048 + 0 + offset, other);",
        "sum0[lane] += other[lane];",
        "fv_store<4>(workspace + ((long long)0 * partial_rows + partial_row) * inner + column, sum0);",
        "fv_load<4>(exchange + 1024 + offset, sum1);",
        "fv_store<4>(workspace + ((long long)1 * partial_rows + partial_row) * inner + column, sum1);",
        "cooperative_groups::this_grid().sync();",
        NULL,
    };
    /* nothing read from a peer: its shared memory is mapped once, for the
     * stores; and no partial row per block */
    const char *code = kernel_code(source);
    const char *mapped = strstr(code, "map_shared_rank(");
    ck_assert_ptr_nonnull(mapped);
    ck_assert_ptr_null(strstr(mapped + 1, "map_shared_rank("));
    assert_kernel_lines(source, lines, "fv_store<8>(workspace +");
}
END_TEST

/* The forms of the row copies: with a refilled slot, the first row's copies
 * before the loop and each row's next copies right after its floats are
 * read, behind a compiler fence; with one slot that is not refilled, the
 * guarded 64-bit form, issued for the row itself and waited for at once;
 * the guarded form also with partials in shared memory and 1-element
 * vectors. */
START_TEST(row_copies_take_their_form)
{
    char *source = generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_BF16, 16384, 32768,
                                "inner_persistent");
    static const char *const refilled[] = {
        "// The first row's copies; each row, once read from the slot, issues the next one's.",
        "const long long fetch_row = (long long)blockIdx.x * 1 + threadIdx.y;",
        "fv_copy_async_if<8>(buffer0_slots + (0) * 32768 + column, fetch0 + column, copy_active);",
        "for (long long row_base",
        "fv_async_wait<0>();  // this row's copies have landed",
        "fv_load<8>(buffer0 + column, row_floats0[b]);",
        "fv_compiler_fence();",
        "const long long fetch_row = row + row_stride;",
        "fv_copy_async_if<8>(buffer0_slots + (0) * 32768 + column, fetch0 + column, copy_active);",
        "fv_async_commit();",
        "// reduction level 1",
        NULL,
    };
    const char *code = kernel_code(source);
    fv_test_assert_lines_in_order(code, refilled);
    ck_assert_ptr_null(strstr(code, "const long long fetch_row = row;"));
    /* the weight and bias cached after the 64 KiB slot, read from there */
    ck_assert_ptr_nonnull(strstr(code, "cached1 = reinterpret_cast<__nv_bfloat16 *>(row_buffers + 65536);"));
    ck_assert_ptr_nonnull(strstr(code, "fv_copy_async<8>(cached2 + column, in2 + column);"));
    ck_assert_ptr_nonnull(strstr(code, "fv_load<8>(cached1 + column, v1);"));
    free(source);

    source = generate_one(multiwave_families, NORM_RMS_FORWARD, FV_F32, 16384, 32768,
                          "inner_persistent");
    static const char *const guarded[] = {
        "const long long fetch_row = row;",
        "if (fetch_row < outer && column < inner) {",
        "fv_copy_async<4>(buffer0_slots + (0) * 32768 + column, in0 + fetch_row * inner + column);",
        "fv_async_wait<0>();  // this row's copies have landed",
        NULL,
    };
    assert_kernel_lines(source, guarded, "fv_compiler_fence();");

    /* the guarded form also with the outer partials in shared memory (the
     * predicated one spilled there) and with 1-element vectors (fp32: 16-bit
     * ones are copied as aligned chunks) */
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        int64_t hidden;
        const char *family, *copy;
    } guarded_too[] = {
        {NORM_LAYER_BACKWARD, FV_BF16, 24576, "inner_outer_persistent",
         "fv_copy_async<8>(buffer0_slots + (0) * 24576 + column, in0 + fetch_row * inner + column);"},
        {NORM_LAYER_FORWARD, FV_F32, 1987, "inner_persistent",
         "fv_copy_async<1>(buffer0_slots + (0) * 2048 + column, in0 + fetch_row * inner + column);"},
    };
    for (size_t i = 0; i < sizeof guarded_too / sizeof guarded_too[0]; i++) {
        source = generate_one(multiwave_families, guarded_too[i].kind, guarded_too[i].dtype, 16384,
                              guarded_too[i].hidden, guarded_too[i].family);
        code = kernel_code(source);
        ck_assert_msg(strstr(code, guarded_too[i].copy) != NULL, "missing: %s", guarded_too[i].copy);
        ck_assert_ptr_null(strstr(code, "fv_copy_async_if<"));
        free(source);
    }
}
END_TEST

/* The warp-specialized kernel: one producer thread issues 1-D bulk copies
 * of whole rows completing on the stage's full barrier; compute groups wait
 * on it, reduce on their own named barrier and release the stage. */
START_TEST(warp_specialized_kernel_structure)
{
    char *source = generate_ws(NORM_LAYER_BACKWARD, FV_BF16, 16384, 4096);
    const char *code = kernel_code(source);
    ck_assert_ptr_nonnull(strstr(code, "fv_bulk_copy(buffer0_slots + (long long)slot_row * 4096, in0 + fetch_row * inner,"));
    ck_assert_ptr_nonnull(strstr(code, "fv_barrier_expect_bytes(&full_barriers[stage], (unsigned)(rows * inner * 4));"));
    ck_assert_ptr_nonnull(strstr(code, "fv_barrier_wait(&full_barriers[stage]"));
    ck_assert_ptr_nonnull(strstr(code, "fv_barrier_arrive(&empty_barriers[stage]);"));
    ck_assert_ptr_nonnull(strstr(code, "fv_group_sum<128, 2>(sums1, group_scratch, 1 + group);"));
    ck_assert_ptr_null(strstr(code, "fv_row_sum_group<"));
    ck_assert_ptr_nonnull(strstr(code, "cooperative_groups::this_grid().sync();"));
    /* two compute groups of 128 threads: the producer is the third row */
    static const char *const producer_row[] = {
        "__launch_bounds__(384, 1)",
        "const int group = threadIdx.y;  // a compute group, or 2: the producer",
        "        if (threadIdx.x == 0) {\n            for (long long step = 0;; ++step) {",
        "const int thread_index = threadIdx.y * 128 + threadIdx.x;",
        NULL,
    };
    assert_has_lines(code, producer_row);
    free(source);
    /* one compute group of 384 threads (LN bwd fp32 12288): the producer
     * warp group is threads 384-511 on x, and stage 2 spreads over all 512 */
    source = generate_ws(NORM_LAYER_BACKWARD, FV_F32, 16384, 12288);
    code = kernel_code(source);
    static const char *const producer_on_x[] = {
        "__launch_bounds__(512, 1)",
        "const int group = threadIdx.x < 384 ? 0 : 1;  // the compute group, or 1: the producer",
        "        if (threadIdx.x == 384) {\n            for (long long step = 0;; ++step) {",
        "fv_barrier_init(&empty_barriers[stage], 384);",
        "fv_release_registers<56>();",
        "fv_claim_registers<152>();",
        "const int thread_index = threadIdx.y * 512 + threadIdx.x;",
        NULL,
    };
    assert_has_lines(code, producer_on_x);
    /* setmaxnreg and bar.sync are .aligned: the leader's warp reconverges
     * after the producer loop, before either */
    static const char *const reconverged[] = {
        "        if (threadIdx.x == 384) {",
        "        __syncwarp();",
        "        fv_claim_registers<128>();  // back to the launch share for stage 2",
        "cooperative_groups::this_grid().sync();",
        NULL,
    };
    fv_test_assert_lines_in_order(code, reconverged);
    free(source);
}
END_TEST

/* regs_cached and grouped steps.  Where the step's rows fit as float beside
 * the partials, the weight and the step's sums (RMS bwd bf16 2048, 4 rows per
 * step), the compute group reads them from the stage into registers and
 * releases the stage before its reductions.  Where they fit only in their
 * own 16-bit type (LN bwd fp16 2048: 4 rows and 8 sums; RMS bwd fp16 4096: 2
 * rows of 32 elements per thread), it holds them so and converts each
 * vector where it is read; bf16 rows at those shapes stay in the stage
 * (ws_rows_in_registers says why).  Without regs_cached (LN bwd bf16 8192, one row
 * of 384 threads per step) the row is read from the stage, which is
 * released after it.  With several rows, the step's rows share one group
 * reduction: a first pass adds each row's sums into step_sums1, a second
 * computes the rows. */
START_TEST(warp_specialized_stage_in_registers)
{
    char *source = generate_ws(NORM_RMS_BACKWARD, FV_BF16, 16384, 2048);
    static const char *const cached[] = {
        "fv_barrier_wait(&full_barriers[stage], (unsigned)(step / 2) & 1u);",
        "float row_floats0[4][2][8];",
        "const bool row_active = first_row + u < outer;",
        "fv_load<8>(buffer0_slots + (long long)slot_row * 2048 + column, row_floats0[u][b]);",
        "fv_barrier_arrive(&empty_barriers[stage]);  // the rows are in registers: refill the stage",
        "float step_sums1[4];  // the step's rows' sums: one group reduction for all",
        "#pragma unroll  // the rows below index their registers by u",
        "for (int u = 0; u < 4; ++u) {",
        "float sums1[1] = {};  // this row's sums",
        "const float (&v0)[8] = row_floats0[u][b];",
        "sums1[0] += ",
        "step_sums1[u * 1 + 0] = sums1[0];",
        "fv_group_sum<128, 4>(step_sums1, group_scratch, 1 + group);",
        "#pragma unroll  // the rows below index their registers by u",
        "for (int u = 0; u < 4; ++u) {",
        "const float *const sums1 = step_sums1 + u * 1;  // this row's totals",
        "const float (&v0)[8] = row_floats0[u][b];",
        "// the stage was released once its rows were read",
        NULL,
    };
    const char *code = kernel_code(source);
    fv_test_assert_lines_in_order(code, cached);
    ck_assert_ptr_null(strstr(code, "this group is done with the stage"));
    ck_assert_ptr_null(strstr(code, "fv_load<8>(buffer0 + column"));
    ck_assert_ptr_nonnull(strstr(code, "__shared__ float reduction_scratch[2 * 128];"));
    free(source);

    static const struct {
        norm_kind kind;
        int64_t hidden;
        int rows, batch, step_sums;
    } own_type[] = {{NORM_LAYER_BACKWARD, 2048, 4, 2, 8}, {NORM_RMS_BACKWARD, 4096, 2, 4, 2}};
    for (size_t i = 0; i < sizeof own_type / sizeof own_type[0]; i++) {
        source = generate_ws(own_type[i].kind, FV_F16, 16384, own_type[i].hidden);
        char declaration[96], load[128], loop[48], step_sums[48], group_sum[96];
        snprintf(declaration, sizeof declaration, "fv_vector<__half, 8> row_copies0[%d][%d];",
                 own_type[i].rows, own_type[i].batch);
        snprintf(load, sizeof load,
                 "fv_load_vector(buffer0_slots + (long long)slot_row * %lld + column, row_copies0[u][b]);",
                 (long long)own_type[i].hidden);
        snprintf(loop, sizeof loop, "for (int u = 0; u < %d; ++u) {", own_type[i].rows);
        snprintf(step_sums, sizeof step_sums, "float step_sums1[%d];", own_type[i].step_sums);
        snprintf(group_sum, sizeof group_sum,
                 "fv_group_sum<128, %d>(step_sums1, group_scratch, 1 + group);",
                 own_type[i].step_sums);
        const char *const held_in_own_type[] = {
            "fv_barrier_wait(&full_barriers[stage]",
            declaration,
            load,
            "fv_barrier_arrive(&empty_barriers[stage]);  // the rows are in registers: refill the stage",
            step_sums,
            "#pragma unroll  // the rows below index their registers by u",
            loop,
            "fv_vector_to_floats(row_copies0[u][b], v0);",
            group_sum,
            loop,
            "fv_vector_to_floats(row_copies0[u][b], v0);",
            "// the stage was released once its rows were read",
            NULL,
        };
        assert_kernel_lines(source, held_in_own_type, "float row_floats");
        /* bf16 rows are not held as bf16: the stage is released after the step */
        source = generate_ws(own_type[i].kind, FV_BF16, 16384, own_type[i].hidden);
        const char *const read_from_stage[] = {
            "fv_barrier_wait(&full_barriers[stage]",
            loop,
            "fv_barrier_arrive(&empty_barriers[stage]);  // this group is done with the stage",
            NULL,
        };
        assert_kernel_lines(source, read_from_stage, "row_copies0");
    }

    source = generate_ws(NORM_LAYER_BACKWARD, FV_BF16, 16384, 8192);
    static const char *const released_after[] = {
        "fv_barrier_wait(&full_barriers[stage]",
        "for (int u = 0; u < 1; ++u) {",
        "fv_load<8>(buffer0 + column, v0);",
        "fv_barrier_arrive(&empty_barriers[stage]);  // this group is done with the stage",
        NULL,
    };
    assert_kernel_lines(source, released_after, "row_copies0");
}
END_TEST

/* Layer norm's warp-specialized kernels over 16-bit rows load mean and
 * invstd a step ahead, before the group waits for the step's rows.  With
 * several rows per step (LN bwd bf16 2048: 4; 3072: 2, its rows read into
 * registers first) lane k of each warp holds row k % rows and each row
 * reads it with a shuffle, in every pass before the pass's lane branch
 * (`if (row_active && column < inner)`), so that the whole warp takes it;
 * with one (LN bwd fp16 4096, and bf16 8192's one group of 384 threads
 * beside the producer) every lane holds it.  No row reads safe_row then.
 * RMS norm (one inner reduction) and fp32 rows keep the load in each row's
 * prologue. */
START_TEST(warp_specialized_row_statistics_a_step_ahead)
{
    char *source = generate_ws(NORM_LAYER_BACKWARD, FV_BF16, 16384, 2048);
    static const char *const four_rows[] = {
        "fv_claim_registers<224>();",
        "const int step_lane = (int)(threadIdx.x % 32) % 4;",
        "const long long step_rows = (long long)gridDim.x * 2 * 4;  // rows a step of the grid takes",
        "const long long first_step_row = ((long long)blockIdx.x * 2 + group) * 4 + step_lane;",
        "float step_next3 = fv_to_float(in3[first_step_row < outer ? first_step_row : 0]);",
        "float step_next4 = fv_to_float(in4[first_step_row < outer ? first_step_row : 0]);",
        "for (long long step = 0;; ++step) {",
        "const long long next_row = first_row + step_rows + step_lane;",
        "const float step_value3 = step_next3;",
        "step_next3 = fv_to_float(in3[next_row < outer ? next_row : 0]);",
        "const float step_value4 = step_next4;",
        "fv_barrier_wait(&full_barriers[stage]",
        "for (int u = 0; u < 4; ++u) {",
        "const float v3 = __shfl_sync(0xffffffffu, step_value3, u);",
        "const float v4 = __shfl_sync(0xffffffffu, step_value4, u);",
        "if (row_active && column < inner) {",
        "fv_group_sum<128, 8>(step_sums1, group_scratch, 1 + group);",
        "for (int u = 0; u < 4; ++u) {",
        "const float v3 = __shfl_sync(0xffffffffu, step_value3, u);",
        "if (row_active) {",
        NULL,
    };
    assert_kernel_lines(source, four_rows, "safe_row");

    source = generate_ws(NORM_LAYER_BACKWARD, FV_BF16, 16384, 3072);
    static const char *const two_rows_held[] = {
        "const int step_lane = (int)(threadIdx.x % 32) % 2;",
        "const long long next_row = first_row + step_rows + step_lane;",
        "fv_barrier_wait(&full_barriers[stage]",
        "fv_barrier_arrive(&empty_barriers[stage]);  // the rows are in registers: refill the stage",
        "const float v3 = __shfl_sync(0xffffffffu, step_value3, u);",
        "if (row_active && column < inner) {",
        "fv_group_sum<128, 4>(step_sums1, group_scratch, 1 + group);",
        NULL,
    };
    assert_kernel_lines(source, two_rows_held, "safe_row");

    static const struct {
        fv_dtype dtype;
        int64_t hidden;
        const char *first_step_row;
    } one_row[] = {
        {FV_F16, 4096, "const long long first_step_row = ((long long)blockIdx.x * 2 + group) * 1;"},
        {FV_BF16, 8192, "const long long first_step_row = ((long long)blockIdx.x * 1 + group) * 1;"},
    };
    for (size_t i = 0; i < sizeof one_row / sizeof one_row[0]; i++) {
        source = generate_ws(NORM_LAYER_BACKWARD, one_row[i].dtype, 16384, one_row[i].hidden);
        const char *const every_lane[] = {
            one_row[i].first_step_row,
            "const long long next_row = first_row + step_rows;",
            "fv_barrier_wait(&full_barriers[stage]",
            "const float v3 = step_value3;",
            NULL,
        };
        char *copy = strdup(source);
        assert_kernel_lines(source, every_lane, "step_lane");
        ck_assert_ptr_null(strstr(kernel_code(copy), "__shfl_sync(0xffffffffu, step_value"));
        free(copy);
    }

    static const struct {
        norm_kind kind;
        fv_dtype dtype;
    } in_prologue[] = {{NORM_RMS_BACKWARD, FV_BF16}, {NORM_LAYER_BACKWARD, FV_F32}};
    for (size_t i = 0; i < sizeof in_prologue / sizeof in_prologue[0]; i++) {
        source = generate_ws(in_prologue[i].kind, in_prologue[i].dtype, 16384, 4096);
        static const char *const prologue[] = {
            "fv_barrier_wait(&full_barriers[stage]",
            "const long long safe_row = row_active ? row : 0;",
            "[safe_row]);",
            NULL,
        };
        assert_kernel_lines(source, prologue, "step_next");
    }
}
END_TEST

/* The TMA inner persistent kernel (seed 003): the same producer and
 * compute groups, but no partials, no grid sync and no second stage. */
START_TEST(tma_inner_persistent_kernel_structure)
{
    char *source = generate_one(tma_families, NORM_RMS_FORWARD, FV_BF16, 16384, 4096,
                                "inner_tma");
    const char *code = kernel_code(source);
    ck_assert_ptr_nonnull(strstr(code, "__launch_bounds__(384, 1)"));
    ck_assert_ptr_nonnull(strstr(code, "fv_bulk_copy(buffer0_slots + (long long)slot_row * 4096, in0 + fetch_row * inner,"));
    ck_assert_ptr_nonnull(strstr(code, "fv_barrier_wait(&full_barriers[stage]"));
    ck_assert_ptr_nonnull(strstr(code, "fv_barrier_arrive(&empty_barriers[stage]);"));
    ck_assert_ptr_nonnull(strstr(code, "group_scratch, 1 + group);"));
    ck_assert_ptr_null(strstr(code, "this_grid().sync()"));
    ck_assert_ptr_null(strstr(code, "partial_row"));
    /* the step's 2 rows of 32 elements per thread fit as float: read, then
     * the stage released, before the one group reduction of the step */
    static const char *const cached[] = {
        "float row_floats0[2][4][8];",
        "fv_barrier_arrive(&empty_barriers[stage]);  // the rows are in registers: refill the stage",
        "float step_sums1[2];",
        "fv_group_sum<128, 2>(step_sums1, group_scratch, 1 + group);",
        "// the stage was released once its rows were read",
        NULL,
    };
    fv_test_assert_lines_in_order(code, cached);
    free(source);
}
END_TEST

/* Grouped steps with chained reductions (seed 003): each reduction pass
 * runs over both rows of the step before one group reduction for them, and
 * what a later pass needs of an earlier one (layer norm's mean, softmax's
 * maximum) is computed per row at the group position, inside that pass's
 * loop over the step's rows. */
START_TEST(tma_inner_groups_chained_reductions)
{
    char *source = generate_one(tma_families, NORM_LAYER_FORWARD, FV_BF16, 16384, 4096,
                                "inner_tma");
    static const char *const layer_norm[] = {
        "float step_sums1[2];  // the step's rows' sums: one group reduction for all",
        "for (int u = 0; u < 2; ++u) {",
        "float sums1[1] = {};  // this row's sums",
        "sums1[0] += v3[lane];",
        "step_sums1[u * 1 + 0] = sums1[0];",
        "fv_group_sum<128, 2>(step_sums1, group_scratch, 1 + group);",
        "float step_squares1[2];",
        "for (int u = 0; u < 2; ++u) {",
        "const float *const sums1 = step_sums1 + u * 1;  // this row's totals",
        "const float mean0 = sums1[0] / (float)inner;  // var_mean, pass 1",
        "float squares1[1] = {};  // var_mean, pass 2",
        "squares1[0] += deviation * deviation;",
        "step_squares1[u * 1 + 0] = squares1[0];",
        "fv_group_sum<128, 2>(step_squares1, group_scratch, 1 + group);",
        "#pragma unroll  // the rows below",
        "for (int u = 0; u < 2; ++u) {",
        "const float mean0 = sums1[0] / (float)inner;  // var_mean, pass 1",
        "= squares1[0] / ((float)inner - 0.0f);",
        "fv_store<8>(out2",
        NULL,
    };
    const char *code = kernel_code(source);
    fv_test_assert_lines_in_order(code, layer_norm);
    ck_assert_ptr_null(strstr(code, "fv_group_sum<128, 1>"));
    ck_assert_ptr_nonnull(strstr(code, "__shared__ float reduction_scratch[2 * 64];"));
    /* each compute group reduces in its own slice: the groups run apart */
    ck_assert_ptr_nonnull(strstr(code, "float *const group_scratch = reduction_scratch + group * 64;"));
    free(source);

    source = generate_one(tma_families, NORM_SOFTMAX, FV_BF16, 16384, 4096, "inner_tma");
    static const char *const softmax[] = {
        "float step_maxima1[2];  // the step's rows' maxima: one group reduction for all",
        "float maximum0 = -INFINITY;  // max",
        "maximum0 = fv_maximum(maximum0, v1[lane]);",
        "step_maxima1[u * 1 + 0] = maximum0;",
        "fv_group_maxima<128, 2>(step_maxima1, group_scratch, 1 + group);",
        "float step_sums2[2];",
        "= maxima1[0];",
        "sums2[0] += v5[lane];",
        "fv_group_sum<128, 2>(step_sums2, group_scratch, 1 + group);",
        "#pragma unroll  // the rows below",
        "= maxima1[0];",
        "fv_store<8>(out0",
        NULL,
    };
    code = kernel_code(source);
    fv_test_assert_lines_in_order(code, softmax);
    ck_assert_ptr_null(strstr(code, "fv_group_max<"));
    free(source);
}
END_TEST

/* Softmax divides each exp by the row's sum: a multiply by the sum's
 * reciprocal (one IEEE division per thread and row), not a division per
 * element. */
START_TEST(division_by_a_row_value_is_a_reciprocal_multiply)
{
    char *source = generate_one(multiwave_families, NORM_SOFTMAX, FV_F32, 2048, 1024,
                                "inner_persistent");
    const char *code = kernel_code(source);
    ck_assert_msg(strstr(code, "[lane] * (1.0f / v") != NULL, "%s", code);
    ck_assert_msg(strstr(code, "[lane] / v") == NULL, "%s", code);
    free(source);
}
END_TEST

/* Values of the row, not along it (layer norm's invstd, the backward's
 * means of the row sums), are computed once per row before the epilogue's
 * loop over the row's chunks, not in each chunk: the loop declares only
 * arrays along the row (`float v<n>[8]`), no `const float v<n> =`; the
 * forward norms call rsqrtf once a row, for the epilogue and the row's own
 * invstd / invrms output. */
START_TEST(row_values_are_computed_before_the_chunk_loop)
{
    static const struct {
        norm_kind kind;
        int64_t hidden;
        const char *expected;
    } kernels[] = {
        {NORM_LAYER_FORWARD, 4095, "inner_persistent"},
        {NORM_LAYER_FORWARD, 4096, "inner_persistent"},
        {NORM_RMS_FORWARD, 4096, "inner_persistent"},
        {NORM_LAYER_BACKWARD, 2048, "inner_outer_persistent"},
    };
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        char *source = generate_one(multiwave_families, kernels[k].kind, FV_BF16, 16384,
                                    kernels[k].hidden, kernels[k].expected);
        const char *code = kernel_code(source);
        const char *epilogue = strstr(code, "if (row_active) {");
        ck_assert_ptr_nonnull(epilogue);
        const char *chunks = strstr(epilogue, "for (int b = 0;");
        const char *store = chunks ? strstr(chunks, "fv_store") : NULL;
        ck_assert_ptr_nonnull(store);
        const char *row_value = strstr(epilogue, "const float v");
        ck_assert_msg(row_value != NULL && row_value < chunks,
                      "no row value before the chunk loop (hidden %lld)",
                      (long long)kernels[k].hidden);
        const char *inside = strstr(chunks, "const float v");
        ck_assert_msg(inside == NULL || inside >= store,
                      "a row value in the chunk loop (hidden %lld): %.40s",
                      (long long)kernels[k].hidden, inside);
        if (kernels[k].kind != NORM_LAYER_BACKWARD) {
            const char *first = strstr(code, "rsqrtf(");
            ck_assert_ptr_nonnull(first);
            ck_assert_msg(strstr(first + 1, "rsqrtf(") == NULL,
                          "rsqrtf computed twice a row (hidden %lld)",
                          (long long)kernels[k].hidden);
        }
        free(source);
    }
}
END_TEST

/* A second reduction level that reads a row value of the first
 * (tests/chained: z = x * rsqrt(mean(x^2) + eps), then var_mean(z)).  Outside
 * grouped steps the passes share the row's scope, so each row value is
 * declared once in the kernel: a second declaration there does not compile
 * (f81c6d6 made one in the squares pass). */
START_TEST(row_values_are_declared_once_a_row)
{
    fv_case_list list = {0};
    FV_ASSERT_OK(fv_frontend_expand_sweep(
        fv_test_source_path("tests/chained/rms_scaled_then_standardized.sweep"), &list, NULL, 0));
    ck_assert_int_eq(list.count, 16);
    for (int32_t i = 0; i < list.count; i++) {
        char names[4][32];
        int count;
        char **sources = generate_case_with(multiwave_families, list.cases[i], &count, names);
        ck_assert_int_eq(count, 1);
        ck_assert_str_eq(names[0], "inner_persistent");
        const char *code = kernel_code(sources[0]);
        for (const char *at = code; (at = strstr(at, "const float v")) != NULL; at++) {
            int value;
            if (sscanf(at, "const float v%d =", &value) != 1)
                continue;
            char declaration[40];
            snprintf(declaration, sizeof declaration, "const float v%d =", value);
            ck_assert_msg(strstr(at + 1, declaration) == NULL, "%s declared twice in %s",
                          declaration, list.cases[i]->id);
        }
        free_sources(sources, count);
    }
    fv_case_list_free(&list);
}
END_TEST

/* Softmax's sum pass keeps each exp in registers for the epilogue, which
 * divides it without reading the row or calling expf again: one expf per
 * element (bf16 16384 x 4096 on the H100: batch 4 of 8-element vectors). */
START_TEST(softmax_keeps_its_exp_for_the_epilogue)
{
    char *source = generate_one(multiwave_families, NORM_SOFTMAX, FV_BF16, 16384, 4096,
                                "inner_persistent");
    const char *code = kernel_code(source);
    static const char *const kept[] = {
        "// reduction level 2",
        "float held5[4][8];  // v5, kept for the epilogue",
        "v5[lane] = fv_exp_fast(v4[lane]);",
        "held5[b][lane] = v5[lane];",
        "sums2[0] += v5[lane];",
        "const float (&v5)[8] = held5[b];  // v5, from the last reduction pass",
        "v8[lane] = v5[lane] * (1.0f / v7);",
        "fv_store<8>(out0",
        NULL,
    };
    fv_test_assert_lines_in_order(code, kept);
    const char *first = strstr(code, "fv_exp_fast(");
    ck_assert_ptr_null(strstr(first + 1, "fv_exp_fast("));
    /* the epilogue reads no row buffer */
    const char *epilogue = strstr(code, "held5[b];  // v5, from");
    ck_assert_ptr_null(strstr(epilogue, "fv_load<8>(buffer0"));
    free(source);
    /* fp32 rows on 16-byte vectors keep computing it twice */
    source = generate_one(multiwave_families, NORM_SOFTMAX, FV_F32, 16384, 4096,
                          "inner_persistent");
    code = kernel_code(source);
    ck_assert_ptr_null(strstr(code, "held"));
    first = strstr(code, "expf(");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_nonnull(strstr(first + 1, "expf("));
    free(source);
}
END_TEST

/* 16-bit rows of an odd length are copied as the aligned 16-byte chunks
 * that hold them: the chunk of the row's first element onwards; the
 * tensor's last chunk, where it runs past the tensor's end, after the
 * unrolled loop, element by element, by the thread whose turn it is
 * (fv_copy_elements: 2049 x 2049 elements end 1 past a chunk); the row is read
 * at its first element's offset in the chunk, after its copies have landed
 * and a block barrier, and only then do the next row's copies go into the
 * slot the last row used.  Softmax fwd bf16 2049 x 2049 (batch 17 of 128
 * threads, slots of 2176 + 16 elements) computes element by element from
 * the row's first element (its 257 chunks would fill 2/3 of 3 x 128 thread
 * steps, they are too many for warps, and without row constants it takes
 * no block they fill: compute_on_span_chunks). */
START_TEST(odd_rows_are_copied_as_aligned_chunks)
{
    char *source = generate_one(multiwave_families, NORM_SOFTMAX, FV_BF16, 2049, 2049,
                                "inner_persistent");
    static const char *const spans[] = {
        "// (each slot 16 elements more: the 16-byte chunks around the row)",
        "// The first row's copies",
        "const long long whole_end = outer * inner & ~7LL;  // the tensor's whole chunks end here",
        "const long long span_begin = row_begin & ~7LL;",
        "const int whole_length = (int)((row_begin + inner < whole_end ? row_begin + inner : whole_end) - span_begin);  // of its whole chunks",
        "const __nv_bfloat16 *const span = in0 + span_begin;",
        "__nv_bfloat16 *const to = buffer0_slots + (0) * 2192;",
        "for (int step = 0; step < 3; ++step) {",
        "const int at = (step * 128 + (int)threadIdx.x) * 8;",
        "fv_copy_async_if<8>(to + at, span + at, at < whole_length);",
        "if (row_begin + inner > whole_end && whole_length / 8 % 128 == (int)threadIdx.x)",
        "fv_copy_elements(to + whole_length, span + whole_length, (int)(row_begin + inner - whole_end));",
        "const __nv_bfloat16 *const buffer0 = buffer0_slots + slot * 2192 + (int)((safe_row * inner) & 7);",
        "fv_async_wait<0>();  // this row's copies have landed",
        "__syncthreads();  // ... all of them: threads read chunks others copied",
        "const long long fetch_row = row + row_stride;",
        "__nv_bfloat16 *const to = buffer0_slots + (slot ^ 1) * 2192;",
        "fv_copy_async_if<8>(to + at, span + at, at < whole_length);",
        "fv_copy_elements(to + whole_length, span + whole_length,",
        "fv_async_commit();",
        "// reduction level 1",
        "fv_load<1>(buffer0 + column, v",
        NULL,
    };
    assert_kernel_lines(source, spans, "fv_copy_async<1>(buffer0_slots");
    /* fp32 rows of an odd length keep their 4-byte asynchronous copies */
    source = generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_F32, 2049, 1987,
                          "inner_persistent");
    static const char *const asynchronous[] = {
        "fv_copy_async<1>(buffer0_slots + (slot ^ 1)",
        "fv_async_wait<1>();  // this row's copies have landed",
        NULL,
    };
    assert_kernel_lines(source, asynchronous, "fv_copy_elements");
    /* multi-wave backward with three row slots: the row statistic's own
     * entry comes with the chunks, the wait leaves the next row in flight,
     * and the row two ahead goes into the last row's slot after the barrier */
    source = generate_one(multiwave_families, NORM_RMS_BACKWARD, FV_BF16, 16384, 1987,
                          "inner_outer_persistent");
    static const char *const three_slots[] = {
        "// The first 2 rows' copies; each row then issues those of the row 2 ahead.",
        "__nv_bfloat16 *const to = buffer0_slots + (1) * 2064;",
        "_slots + (1) * 128, in",
        "fv_async_wait<1>();  // this row's copies have landed",
        "__syncthreads();  // ... all of them: threads read chunks others copied",
        "// The copies of the row 2 ahead, into the last row's slot.",
        "const long long fetch_row = row + 2 * row_stride;",
        "__nv_bfloat16 *const to = buffer0_slots + (slot == 0 ? 2 : slot - 1) * 2064;",
        "fv_async_commit();",
        "// reduction level 1",
        NULL,
    };
    assert_kernel_lines(source, three_slots, "fv_async_wait<2>");
}
END_TEST

/* Multi-wave backward rows of 16 bits and an odd length compute on the
 * chunks of their aligned span too (multiwave_takes_span_chunks): the
 * outer partials are arrays of chunks at the block's shift, every row of a
 * block at the same shift (the grid a multiple of 8), folded for every
 * lane (those outside the row are never stored) and stored to the
 * workspace lane by lane at their columns; no cluster adds them, and stage
 * 2 reads the workspace rows of 4095 floats one at a time.  Of the 5 steps
 * of 128 chunks, steps 1 and 2 end by column 3072 <= 4095 whatever the
 * shift (EXTRA_WHOLE_STEPS = 4095 / 1024 = 3): a test on b, constant once
 * unrolled, takes their lane tests and their stores' test away (the store
 * stays fv_store_lanes' explicit vector store: a plain one beside lane
 * stores was merged into 2-byte stores).  The row's sums test each lane of
 * steps 0, 3 and 4 against the thread's lane window (uses_lane_window), in
 * one lane loop per chunk, not split.  LN bwd bf16 16384 x 4095. */
START_TEST(odd_backward_rows_compute_on_span_chunks)
{
    char *source = generate_one(multiwave_families, NORM_LAYER_BACKWARD, FV_BF16, 16384, 4095,
                                "inner_outer_persistent");
    static const char *const lines[] = {
        "float partial0[5][8];  // sum over rows",
        "const int row_shift = (int)(((long long)blockIdx.x * inner) & 7);",
        "const int lane_begin = threadIdx.x == 0 ? row_shift : 0;",
        "lane_end[b] = row_length + row_shift - (b * 128 + (int)threadIdx.x) * 8;",
        "if (b < 3 || column < row_length) {",
        "fv_load_lanes<8>(in2 + column, column, row_length, weight2[b]);",
        "fv_copy_async_if<8>(to + at, span + at, at < whole_length);",
        "fv_async_wait<1>();  // this row's copies have landed",
        "const int at = (b * 128 + threadIdx.x) * 8;  // the chunk's first element in the span",
        "if (row_active && (b < 3 || column < row_length)) {",
        "if ((b > 0 || lane >= lane_begin) && (b < 3 || lane < lane_end[b]))",
        "sums1[0] += v",
        "fv_store_lanes<8>(out0 + (row) * inner + (column), column, row_length, v",
        ", (b >= 1 && b < 3));",
        "partial0[b][lane] += v",
        "fv_store_lanes_exact<8>(workspace + ((long long)0 * partial_rows + partial_row) * inner + column, column, row_length, partial0[b]);",
        "cooperative_groups::this_grid().sync();",
        "fv_load_past_l1<1>(workspace + ((long long)0 * partial_rows + p) * inner + column, part0[k]);",
        NULL,
    };
    /* the lane tests: the row's two sums only, not the two partials */
    ck_assert_int_eq(fv_test_count_occurrences(kernel_code(source),
                                               "if ((b > 0 || lane >= lane_begin) && (b < 3 || lane < lane_end[b]))"),
                     2);
    ck_assert_int_eq(fv_test_count_occurrences(kernel_code(source), "a chunk wholly in the row"), 0);
    assert_kernel_lines(source, lines, "map_shared_rank");
}
END_TEST

/* Forward rows of an odd length whose chunks fill the thread steps compute
 * on the chunks of their aligned span (compute_on_span_chunks): vectors
 * read from the slot at the chunk's place `at`, the lanes outside the row
 * left out of the reductions and stored lane by lane; the columns are ints
 * (a row the block holds has fewer than 2^31 elements), tested against
 * `row_length`.  LN fwd bf16 2049 x 1987 caches weight and bias in shared
 * memory at the rows' shift, one per block (2 x 128 steps of 8 elements);
 * softmax, without row constants, takes each row's own shift. */
START_TEST(odd_forward_rows_compute_on_span_chunks)
{
    char *source = generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_BF16, 2049, 1987,
                                "inner_persistent");
    static const char *const cached_at_shift[] = {
        "const int row_length = (int)inner;  // a row fits a block: its columns are ints",
        "const int row_shift = (int)(((long long)blockIdx.x * inner) & 7);",
        ": the same for every row, stored in shared memory once per block at the rows' shift (below)",
        "// The first row's copies; each row then issues the next one's.",
        "fv_copy_async_if<8>(to + at, span + at, at < whole_length);",
        "fv_async_commit();",
        /* the constants' 16-byte chunks are read while the first row's
         * copies are in flight, and stored at the shift */
        "for (int step = 0; step < 2; ++step) {",
        "const int column = (step * 128 + (int)threadIdx.x) * 8;",
        "if (column < row_length)",
        "fv_copy_chunk_to_shift<8>(cached1 + row_shift + column, in1 + column, column, row_length);",
        "for (int step = 0; step < 2; ++step) {",
        "fv_copy_chunk_to_shift<8>(cached2 + row_shift + column, in2 + column, column, row_length);",
        /* stored directly: nothing to wait for, only the barrier */
        "__syncthreads();  // every thread reads what the others copied",
        "const __nv_bfloat16 *const buffer0 = buffer0_slots + slot * 2064;",
        /* each thread reads the chunks it copied: the next row's copies at
         * the row's start, then the wait for its own, no barrier */
        "// The next row's copies, in flight while this row is computed.",
        "__nv_bfloat16 *const to = buffer0_slots + (slot ^ 1) * 2064;",
        "fv_async_commit();",
        "fv_async_wait<1>();  // this row's copies have landed",
        "for (int b = 0; b < 2; ++b) {",
        "const int at = (b * 128 + threadIdx.x) * 8;  // the chunk's first element in the span",
        "const int column = at - row_shift;  // its column, negative before the row",
        "if (row_active && (b < 1 || column < row_length)) {",
        "fv_load<8>(buffer0 + at, v0);",
        /* a chunk wholly in the row folds every lane, the row's end
         * chunks only the lanes in the row */
        "if (column >= 0 && column + 8 <= row_length) {  // a chunk wholly in the row",
        "sums1[0] += v",
        "} else {  // the row's first or last chunk: its lanes in the row",
        "if (fv_in_row(column + lane, row_length))",
        "sums1[0] += v",
        "// var_mean, pass 2",
        "if (column >= 0 && column + 8 <= row_length) {  // a chunk wholly in the row",
        "squares1[0] += deviation * deviation;",
        "} else {  // the row's first or last chunk: its lanes in the row",
        "if (fv_in_row(column + lane, row_length))",
        "squares1[0] += deviation * deviation;",
        "fv_load<8>(cached1 + at, v1);",
        "fv_load<8>(cached2 + at, v2);",
        "fv_store_lanes<8>(out2 + (row) * inner + (column), column, row_length, v",
        NULL,
    };
    ck_assert_ptr_null(strstr(kernel_code(source), "threads read chunks others copied"));
    ck_assert_ptr_null(strstr(kernel_code(source), "the first rows' copies may not have landed"));
    assert_kernel_lines(source, cached_at_shift, "(safe_row * inner) & 7");
    /* RMS norm, one reduction, waits for its row and passes a barrier before
     * copying the next (load_row_issues_copies) */
    source = generate_one(multiwave_families, NORM_RMS_FORWARD, FV_BF16, 2049, 1987,
                          "inner_persistent");
    static const char *const copies_after_the_barrier[] = {
        "fv_async_wait<0>();  // this row's copies have landed",
        "__syncthreads();  // ... all of them: threads read chunks others copied",
        "// The next row's copies, in flight while this row is computed.",
        "__nv_bfloat16 *const to = buffer0_slots + (slot ^ 1) * 2064;",
        NULL,
    };
    assert_kernel_lines(source, copies_after_the_barrier, "fv_async_wait<1>();  // this row's");
    source = generate_one(multiwave_families, NORM_SOFTMAX, FV_BF16, 2049, 1987,
                          "inner_persistent");
    static const char *const shift_per_row[] = {
        "const int row_shift = (int)((safe_row * inner) & 7);  // the row's first element in its chunk",
        "fv_compiler_fence();  // the last row's reads stay before the next row's copies",
        "// The next row's copies, in flight while this row is computed.",
        "fv_async_wait<1>();  // this row's copies have landed",
        "const int at = (b * 128 + threadIdx.x) * 8;",
        "fv_load<8>(buffer0 + at, v0);",
        "maximum0 = fv_maximum(maximum0, v",
        "fv_store_lanes<8>(out0 + (row) * inner + (column), column, row_length, v",
        NULL,
    };
    assert_kernel_lines(source, shift_per_row, "blockIdx.x * inner");
    /* RMS fwd fp16 16384 x 20481 holds its weight in registers, loaded
     * once per thread lane by lane at the block's shift */
    source = generate_one(multiwave_families, NORM_RMS_FORWARD, FV_F16, 16384, 20481,
                          "inner_persistent");
    static const char *const weight_at_shift[] = {
        "const int row_shift = (int)(((long long)blockIdx.x * inner) & 7);",
        "float weight1[6][8];",
        "fv_load_lanes<8>(in1 + column, column, row_length, weight1[b]);",
        "const float (&v1)[8] = weight1[b];",
        "fv_store_lanes<8>(out1 + (row) * inner + (column), column, row_length, v",
        NULL,
    };
    assert_kernel_lines(source, weight_at_shift, "(safe_row * inner) & 7");
    /* 4-lane fp32 chunks: layer norm keeps its mask on every lane (the
     * split measured slower there), softmax, with its exp, splits; both
     * leave the test out of the steps whose chunks lie wholly in any row of
     * 4095 (layer norm's 256 threads: steps 1 and 2; softmax's 128: 1 to 6) */
    static const char *const lane_tests[] = {
        "threadIdx.x) * 4;  // the chunk's first element in the span",
        "if (row_active && (b < 3 || column < row_length)) {",
        "if ((b >= 1 && b < 3) || fv_in_row(column + lane, row_length))",
        "sums1[0] += v",
        NULL,
    };
    source = generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_F32, 16384, 4095,
                          "inner_persistent");
    assert_kernel_lines(source, lane_tests, "// the row's first or last chunk");
    static const char *const split_for_exp[] = {
        "threadIdx.x) * 4;  // the chunk's first element in the span",
        "if ((b >= 1 && b < 7) || (column >= 0 && column + 4 <= row_length)) {  // a chunk wholly in the row",
        "} else {  // the row's first or last chunk: its lanes in the row",
        "if (fv_in_row(column + lane, row_length))",
        NULL,
    };
    source = generate_one(multiwave_families, NORM_SOFTMAX, FV_F32, 16384, 4095,
                          "inner_persistent");
    /* the whole chunk's branch folds its lanes with no test: its maximum
     * comes before the first lane test */
    const char *whole = strstr(kernel_code(source), "// a chunk wholly in the row");
    ck_assert_ptr_nonnull(whole);
    const char *folded = strstr(whole, "maximum0 = fv_maximum(maximum0, v");
    const char *tested = strstr(whole, "fv_in_row(column + lane, row_length)");
    ck_assert_msg(folded != NULL && tested != NULL && folded < tested,
                  "the whole chunk's lanes are tested");
    assert_kernel_lines(source, split_for_exp, "fv_in_row(column + lane, row_length) ?");
}
END_TEST

/* Forward fp32 rows of 32767 in one slot with row constants (RMS norm)
 * take 64 1-element copies per thread: their copy loop is unrolled 4 at a
 * time (wholly, ptxas spilled the copies' addresses: fetch_unrolled_wholly);
 * 16 copies (1987) stay wholly unrolled.  Softmax's rows, without row
 * constants, are copied as spans in their one slot (copy_row_spans) and
 * computed on the chunks, with no block barrier per row: each thread reads
 * only the chunks it copied. */
START_TEST(long_fp32_rows_fetch_four_copies_at_a_time)
{
    static const char *const by_four[] = {
        "#pragma unroll 4  // not wholly: ptxas would keep every copy's address",
        "for (int b = 0; b < 64; ++b) {",
        "fv_copy_async<1>(buffer0_slots + (0) * 32768 + column, in0 + fetch_row * inner + column);",
        NULL,
    };
    assert_kernel_lines(generate_one(multiwave_families, NORM_RMS_FORWARD, FV_F32, 2049, 32767,
                                     "inner_persistent"),
                        by_four, "fv_copy_elements");
    static const char *const one_span_slot[] = {
        ": 1 row slot of [1 rows][34816 elements] in shared memory",
        "const int row_shift = (int)((safe_row * inner) & 3);  // the row's first element in its chunk",
        "fv_compiler_fence();  // the last row's reads stay before this row's copies",
        "const long long fetch_row = row;",
        "float *const to = buffer0_slots + (0) * 34824;",
        "fv_copy_async_if<4>(to + at, span + at, at < whole_length);",
        "fv_async_commit();",
        "fv_async_wait<0>();  // this row's copies have landed",
        "// reduction level 1",
        "const int at = (b * 512 + threadIdx.x) * 4;  // the chunk's first element in the span",
        NULL,
    };
    char *softmax = generate_one(multiwave_families, NORM_SOFTMAX, FV_F32, 2049, 32767,
                                 "inner_persistent");
    assert_kernel_lines(softmax, one_span_slot, "__syncthreads();  // ... all of them");
    static const char *const wholly[] = {
        "for (int b = 0; b < 16; ++b) {",
        "fv_copy_async<1>(buffer0_slots + (slot ^ 1) * 2048 + column, in0 + fetch_row * inner + column);",
        NULL,
    };
    assert_kernel_lines(generate_one(multiwave_families, NORM_LAYER_FORWARD, FV_F32, 2049, 1987,
                                     "inner_persistent"),
                        wholly, "#pragma unroll 4");
}
END_TEST

START_TEST(skeleton_filling)
{
    const char *skeleton = "a @X@ b\n    @BODY@\nend\n";
    const char *names[] = {"X", "BODY"};
    const char *sections[] = {"1", "line one\nline two\n"};
    fv_text out = {0};
    FV_ASSERT_OK(fv_codegen_fill(skeleton, names, sections, 2, &out));
    ck_assert_str_eq(fv_text_str(&out), "a 1 b\n    line one\n    line two\nend\n");
    fv_text_reset(&out);
    ck_assert_int_eq(fv_codegen_fill("x @MISSING@\n", names, sections, 2, &out), FV_ERR_INTERNAL);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "MISSING"));
    fv_text_free(&out);
}
END_TEST

static Suite *codegen_suite(void)
{
    Suite *suite = suite_create("codegen");
    TCase *tcase = tcase_create("codegen");
    tcase_add_test(tcase, vector_accesses_follow_dtype_and_alignment);
    tcase_add_test(tcase, extents_are_parameters);
    tcase_add_test(tcase, parameters_follow_the_convention);
    tcase_add_test(tcase, reductions_and_grid_reduction);
    tcase_add_test(tcase, generated_code_is_commented);
    tcase_add_test(tcase, norm_backward_is_one_persistent_kernel);
    tcase_add_test(tcase, partials_added_over_a_cluster);
    tcase_add_test(tcase, row_copies_take_their_form);
    tcase_add_test(tcase, first_rows_overlap_the_row_constants);
    tcase_add_test(tcase, warp_specialized_kernel_structure);
    tcase_add_test(tcase, warp_specialized_stage_in_registers);
    tcase_add_test(tcase, warp_specialized_row_statistics_a_step_ahead);
    tcase_add_test(tcase, tma_inner_persistent_kernel_structure);
    tcase_add_test(tcase, tma_inner_groups_chained_reductions);
    tcase_add_test(tcase, division_by_a_row_value_is_a_reciprocal_multiply);
    tcase_add_test(tcase, row_values_are_computed_before_the_chunk_loop);
    tcase_add_test(tcase, row_values_are_declared_once_a_row);
    tcase_add_test(tcase, softmax_keeps_its_exp_for_the_epilogue);
    tcase_add_test(tcase, odd_rows_are_copied_as_aligned_chunks);
    tcase_add_test(tcase, odd_forward_rows_compute_on_span_chunks);
    tcase_add_test(tcase, odd_backward_rows_compute_on_span_chunks);
    tcase_add_test(tcase, long_fp32_rows_fetch_four_copies_at_a_time);
    tcase_add_test(tcase, skeleton_filling);
    suite_add_tcase(suite, tcase);
    return suite;
}

int main(void) { return fv_test_run_suite(codegen_suite()); }
