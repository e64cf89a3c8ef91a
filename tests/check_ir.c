/* check_ir.c: the fusion IR through its C builder API: shape inference,
 * dtype promotion, symbol unification, builder errors with locations, the
 * printer, the canonical hash (invariant to names and statement order,
 * sensitive to every op, dtype, extent and constant), dtype substitution,
 * dead-code handling and case binding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/case.h"
#include "test_support.h"

static const int64_t symbolic2[2] = {-1, -1};
static const int64_t column[2] = {-1, 1};
static const int64_t symbolic1[1] = {-1};

static fv_fusion *new_fusion(void)
{
    fv_fusion *fusion;
    FV_ASSERT_OK(fv_ir_fusion_create(&fusion));
    return fusion;
}

static void hash_of(const fv_fusion *fusion, char hex[65]) { FV_ASSERT_OK(fv_ir_hash(fusion, hex)); }

/* ---------------------------------------- a small RMS-like fusion, two ways
 * y = cast(x) * broadcast(invrms) * broadcast(cast(w)); s = sum(y * y, dim 1)
 * Variant `reordered` creates the independent statements in another order
 * and names every value differently; `mutation` changes one thing. */
typedef enum mutation {
    MUTATE_NONE,
    MUTATE_OP,        /* one mul becomes add */
    MUTATE_DTYPE,     /* the output cast targets fp16 instead of bf16 */
    MUTATE_EXTENT,    /* w is concrete 128 instead of symbolic */
    MUTATE_CONSTANT,  /* the scale constant 0.5 becomes 0.25 */
    MUTATE_KEEPDIM,   /* the sum keeps its dim */
    MUTATE_OUTPUTS,   /* outputs swapped */
    MUTATE_COUNT
} mutation;

static void name(fv_fusion *fusion, int32_t value, const char *prefix, int index)
{
    snprintf(fusion->values[value].name, sizeof fusion->values[value].name, "%s%d", prefix, index);
}

static fv_fusion *build_variant(bool reordered, mutation change)
{
    fv_fusion *f = new_fusion();
    int32_t x, w, invrms, xf, wf, inv_b, w_b, scaled, y, sq, s, half, yh, out;
    int dims01[2] = {0, 1}, dim1[1] = {1};
    int64_t w_shape[1] = {change == MUTATE_EXTENT ? 128 : -1};
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, symbolic2, NULL, FV_BF16, NULL, &x));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, w_shape, NULL, FV_BF16, NULL, &w));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, column, NULL, FV_F32, NULL, &invrms));
    if (reordered) {
        FV_ASSERT_OK(fv_ir_cast(f, w, FV_F32, &wf));
        FV_ASSERT_OK(fv_ir_define_scalar(f, change == MUTATE_CONSTANT ? 0.25 : 0.5, FV_F64, &half));
        FV_ASSERT_OK(fv_ir_cast(f, x, FV_F32, &xf));
    } else {
        FV_ASSERT_OK(fv_ir_cast(f, x, FV_F32, &xf));
        FV_ASSERT_OK(fv_ir_cast(f, w, FV_F32, &wf));
        FV_ASSERT_OK(fv_ir_define_scalar(f, change == MUTATE_CONSTANT ? 0.25 : 0.5, FV_F64, &half));
    }
    fv_dim shape[2] = {fv_ir_dim_of(f, xf, 0), fv_ir_dim_of(f, xf, 1)};
    if (reordered) {
        FV_ASSERT_OK(fv_ir_broadcast_in_dim(f, wf, 2, shape, dim1, &w_b));
        FV_ASSERT_OK(fv_ir_broadcast_in_dim(f, invrms, 2, shape, dims01, &inv_b));
    } else {
        FV_ASSERT_OK(fv_ir_broadcast_in_dim(f, invrms, 2, shape, dims01, &inv_b));
        FV_ASSERT_OK(fv_ir_broadcast_in_dim(f, wf, 2, shape, dim1, &w_b));
    }
    FV_ASSERT_OK(fv_ir_binary(f, change == MUTATE_OP ? FV_OP_ADD : FV_OP_MUL, xf, inv_b, &scaled));
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, scaled, w_b, &y));
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, y, y, &sq));
    FV_ASSERT_OK(fv_ir_reduce(f, FV_OP_SUM, sq, 1, dim1, change == MUTATE_KEEPDIM, FV_DTYPE_NONE, &s));
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, y, half, &yh));
    FV_ASSERT_OK(fv_ir_cast(f, yh, change == MUTATE_DTYPE ? FV_F16 : FV_BF16, &out));
    if (change == MUTATE_OUTPUTS) {
        FV_ASSERT_OK(fv_ir_add_output(f, s, NULL));
        FV_ASSERT_OK(fv_ir_add_output(f, out, NULL));
    } else {
        FV_ASSERT_OK(fv_ir_add_output(f, out, NULL));
        FV_ASSERT_OK(fv_ir_add_output(f, s, NULL));
    }
    for (int32_t v = 0; v < f->value_count; v++)
        name(f, v, reordered ? "renamed_" : "T", v);
    return f;
}

START_TEST(hash_ignores_names_and_statement_order)
{
    fv_fusion *a = build_variant(false, MUTATE_NONE);
    fv_fusion *b = build_variant(true, MUTATE_NONE);
    char hash_a[65], hash_b[65];
    hash_of(a, hash_a);
    hash_of(b, hash_b);
    ck_assert_str_eq(hash_a, hash_b);
    fv_text text_a = {0}, text_b = {0};
    FV_ASSERT_OK(fv_ir_canonical_text(a, &text_a));
    FV_ASSERT_OK(fv_ir_canonical_text(b, &text_b));
    ck_assert_str_eq(fv_text_str(&text_a), fv_text_str(&text_b));
    fv_text_free(&text_a);
    fv_text_free(&text_b);
    fv_ir_fusion_release(a);
    fv_ir_fusion_release(b);
}
END_TEST

START_TEST(hash_changes_with_every_mutation)
{
    fv_fusion *base = build_variant(false, MUTATE_NONE);
    char base_hash[65];
    hash_of(base, base_hash);
    for (int m = MUTATE_OP; m < MUTATE_COUNT; m++) {
        fv_fusion *changed = build_variant(m % 2 == 0, (mutation)m);
        char hash[65];
        hash_of(changed, hash);
        ck_assert_msg(strcmp(hash, base_hash) != 0, "mutation %d did not change the hash", m);
        fv_ir_fusion_release(changed);
    }
    fv_ir_fusion_release(base);
}
END_TEST

START_TEST(dead_code_does_not_change_the_hash)
{
    fv_fusion *a = build_variant(false, MUTATE_NONE);
    fv_fusion *b = build_variant(false, MUTATE_NONE);
    int32_t dead, unused;
    FV_ASSERT_OK(fv_ir_unary(b, FV_OP_EXP, b->inputs[0], &dead));
    FV_ASSERT_OK(fv_ir_unary(b, FV_OP_NEG, dead, &unused));
    char hash_a[65], hash_b[65];
    hash_of(a, hash_a);
    hash_of(b, hash_b);
    ck_assert_str_eq(hash_a, hash_b);
    int32_t *order, count;
    FV_ASSERT_OK(fv_ir_live_ops(b, &order, &count));
    ck_assert_int_eq(count, b->op_count - 2);
    for (int32_t i = 0; i < count; i++)
        for (int k = 0; k < b->ops[order[i]].input_count; k++) {
            int32_t producer = b->values[b->ops[order[i]].inputs[k]].producer;
            bool earlier = producer < 0;
            for (int32_t j = 0; j < i && !earlier; j++)
                earlier = order[j] == producer;
            ck_assert_msg(earlier, "op %d comes before its producer", order[i]);
        }
    free(order);
    fv_ir_fusion_release(a);
    fv_ir_fusion_release(b);
}
END_TEST

START_TEST(printer_writes_the_frontend_syntax)
{
    fv_fusion *f = build_variant(false, MUTATE_NONE);
    snprintf(f->name, sizeof f->name, "nvfuser_fusion_id7");
    fv_text text = {0};
    FV_ASSERT_OK(fv_ir_print(f, &text));
    const char *printed = fv_text_str(&text);
    ck_assert_ptr_nonnull(strstr(printed, "def nvfuser_fusion_id7(fd : FusionDefinition) -> None :"));
    ck_assert_ptr_nonnull(strstr(printed,
        "T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, is_cpu=False)"));
    ck_assert_ptr_nonnull(strstr(printed,
        "T2 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, is_cpu=False)"));
    ck_assert_ptr_nonnull(strstr(printed, "fd.ops.broadcast_in_dim(T2, shape=[T0.size(0), T0.size(1)], broadcast_dims=[0, 1])"));
    ck_assert_ptr_nonnull(strstr(printed, "fd.ops.sum("));
    ck_assert_ptr_nonnull(strstr(printed, "dims=[1], keepdim=False, dtype=DataType.Null)"));
    ck_assert_ptr_nonnull(strstr(printed, "= fd.define_scalar(0.5, dtype=DataType.Double)"));
    ck_assert_ptr_nonnull(strstr(printed, "with FusionDefinition() as fd:\n    nvfuser_fusion_id7(fd)"));
    ck_assert_ptr_nonnull(strstr(printed, "fd.add_output("));
    fv_text_free(&text);
    fv_ir_fusion_release(f);
}
END_TEST

/* ------------------------------------------------------ shape inference */

START_TEST(broadcast_and_reduction_shapes)
{
    fv_fusion *f = new_fusion();
    int32_t x, mean, mean_col, mean_full, centered, summed, kept;
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, symbolic2, NULL, FV_F32, NULL, &x));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_F32, NULL, &mean));
    fv_dim col_shape[2] = {fv_ir_dim_of(f, x, 0), fv_ir_dim_concrete(1)};
    int dim0[1] = {0}, dims01[2] = {0, 1}, dim1[1] = {1};
    FV_ASSERT_OK(fv_ir_broadcast_in_dim(f, mean, 2, col_shape, dim0, &mean_col));
    ck_assert(f->values[mean_col].dims[1].broadcast && !f->values[mean_col].dims[1].expanded);
    fv_dim full_shape[2] = {fv_ir_dim_of(f, x, 0), fv_ir_dim_of(f, x, 1)};
    FV_ASSERT_OK(fv_ir_broadcast_in_dim(f, mean_col, 2, full_shape, dims01, &mean_full));
    ck_assert(f->values[mean_full].dims[1].broadcast && f->values[mean_full].dims[1].expanded);
    /* mean's extent is now unified with x's rows */
    ck_assert_int_eq(fv_ir_symbol_root(f, f->values[mean].dims[0].symbol),
                     fv_ir_symbol_root(f, f->values[x].dims[0].symbol));
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_SUB, x, mean_full, &centered));
    ck_assert(!f->values[centered].dims[1].broadcast);
    FV_ASSERT_OK(fv_ir_reduce(f, FV_OP_SUM, centered, 1, dim1, false, FV_DTYPE_NONE, &summed));
    ck_assert_int_eq(f->values[summed].rank, 1);
    FV_ASSERT_OK(fv_ir_reduce(f, FV_OP_SUM, centered, 1, (int[]){-1}, true, FV_F64, &kept));
    ck_assert_int_eq(f->values[kept].rank, 2);
    ck_assert(f->values[kept].dims[1].broadcast);
    ck_assert_int_eq(f->values[kept].dtype, FV_F64);
    int32_t variance, average;
    FV_ASSERT_OK(fv_ir_var_mean(f, x, 1, dim1, 1, false, &variance, &average));
    ck_assert_int_eq(f->values[variance].producer, f->values[average].producer);
    ck_assert_int_eq(f->values[average].producer_output, 1);
    int32_t transposed;
    FV_ASSERT_OK(fv_ir_permute(f, x, (int[]){1, 0}, &transposed));
    ck_assert_int_eq(f->values[transposed].dims[0].symbol, f->values[x].dims[1].symbol);
    int32_t squeezed;
    FV_ASSERT_OK(fv_ir_squeeze(f, mean_col, 1, dim1, &squeezed));
    ck_assert_int_eq(f->values[squeezed].rank, 1);
    fv_ir_fusion_release(f);
}
END_TEST

START_TEST(dtype_promotion)
{
    fv_fusion *f = new_fusion();
    int32_t a, b, c, i, s, r;
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_BF16, NULL, &a));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_F32, NULL, &b));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_F16, NULL, &c));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_I64, NULL, &i));
    FV_ASSERT_OK(fv_ir_define_scalar(f, 2.0, FV_F64, &s));
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_ADD, a, a, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_BF16);
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_ADD, a, b, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_F32);
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, a, c, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_F32);
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, a, s, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_BF16); /* a double scalar keeps the tensor dtype */
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, i, s, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_F32);  /* a float scalar with an int tensor */
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_LT, a, b, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_BOOL);
    FV_ASSERT_OK(fv_ir_unary(f, FV_OP_EXP, i, &r));
    ck_assert_int_eq(f->values[r].dtype, FV_F32);
    int32_t cond, selected;
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_GT, b, s, &cond));
    FV_ASSERT_OK(fv_ir_where(f, cond, a, b, &selected));
    ck_assert_int_eq(f->values[selected].dtype, FV_F32);
    int32_t scalar_sum;
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_ADD, s, s, &scalar_sum));
    ck_assert(fv_ir_is_scalar(f, scalar_sum));
    ck_assert_int_eq(f->values[scalar_sum].origin, FV_SCALAR_COMPUTED);
    fv_ir_fusion_release(f);
}
END_TEST

/* Each builder mistake is an input error whose message starts with the
 * location set by fv_ir_set_location. */
START_TEST(builder_errors_carry_the_location)
{
    fv_fusion *f = new_fusion();
    int32_t x, v, c2, r;
    int64_t concrete[2] = {8, 16}, other[2] = {8, 32};
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, symbolic2, NULL, FV_F32, NULL, &x));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_F32, NULL, &v));
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, concrete, NULL, FV_F32, NULL, &c2));
    int32_t c3;
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, other, NULL, FV_F32, NULL, &c3));
    struct {
        int line;
        fv_status status;
        const char *text;
    } expected[] = {
        {10, FV_ERR_INPUT, "ranks 2 and 1"},
        {11, FV_ERR_INPUT, "does not match"},
        {12, FV_ERR_INPUT, "not a broadcast"},
        {13, FV_ERR_INPUT, "permutation"},
        {14, FV_ERR_INPUT, "out of range"},
        {15, FV_ERR_INPUT, "floating-point"},
        {16, FV_ERR_UNSUPPORTED, "rank 5"},
        {17, FV_ERR_INPUT, "elements cannot become"},
    };
    int32_t ints;
    FV_ASSERT_OK(fv_ir_define_tensor(f, 1, symbolic1, NULL, FV_I32, NULL, &ints));
    for (size_t k = 0; k < sizeof expected / sizeof expected[0]; k++) {
        fv_ir_set_location(f, expected[k].line, 5);
        fv_status status = FV_OK;
        int32_t unused_variance, unused_mean;
        int64_t five[5] = {1, 2, 3, 4, 5};
        fv_dim wrong[1] = {fv_ir_dim_concrete(100)};
        switch (k) {
        case 0: status = fv_ir_binary(f, FV_OP_ADD, x, v, &r); break;
        case 1: status = fv_ir_binary(f, FV_OP_ADD, c2, c3, &r); break;
        case 2: status = fv_ir_squeeze(f, x, 1, (int[]){0}, &r); break;
        case 3: status = fv_ir_permute(f, x, (int[]){0, 0}, &r); break;
        case 4: status = fv_ir_reduce(f, FV_OP_SUM, x, 1, (int[]){2}, false, FV_DTYPE_NONE, &r); break;
        case 5: status = fv_ir_var_mean(f, ints, 1, (int[]){0}, 0, false, &unused_variance, &unused_mean); break;
        case 6: status = fv_ir_define_tensor(f, 5, five, NULL, FV_F32, NULL, &r); break;
        case 7: status = fv_ir_reshape(f, c2, 1, wrong, &r); break;
        }
        char prefix[16];
        snprintf(prefix, sizeof prefix, "%d:5: ", expected[k].line);
        ck_assert_msg(status == expected[k].status, "case %zu: status %s (%s)", k,
                      fv_status_name(status), fv_error_message());
        ck_assert_msg(strncmp(fv_error_message(), prefix, strlen(prefix)) == 0,
                      "case %zu: '%s' does not start with '%s'", k, fv_error_message(), prefix);
        ck_assert_msg(strstr(fv_error_message(), expected[k].text) != NULL,
                      "case %zu: '%s' lacks '%s'", k, fv_error_message(), expected[k].text);
    }
    fv_ir_fusion_release(f);
}
END_TEST

START_TEST(substitute_dtype_and_copy)
{
    fv_fusion *f = build_variant(false, MUTATE_NONE);
    ck_assert_int_eq(fv_ir_half_dtype(f), FV_BF16);
    fv_fusion *half;
    FV_ASSERT_OK(fv_ir_substitute_dtype(f, FV_BF16, FV_F16, &half));
    ck_assert_int_eq(fv_ir_half_dtype(half), FV_F16);
    for (int32_t v = 0; v < half->value_count; v++)
        ck_assert_int_ne(half->values[v].dtype, FV_BF16);
    char original[65], copied[65];
    hash_of(f, original);
    hash_of(half, copied);
    ck_assert_str_ne(original, copied);
    fv_fusion *same;
    FV_ASSERT_OK(fv_ir_fusion_copy(f, &same));
    hash_of(same, copied);
    ck_assert_str_eq(original, copied);
    fv_ir_fusion_release(same);
    fv_ir_fusion_release(half);
    fv_ir_fusion_release(f);
}
END_TEST

/* --------------------------------------------------------------- cases */

START_TEST(case_binding_unifies_and_reports_conflicts)
{
    fv_fusion *f = build_variant(false, MUTATE_NONE);
    fv_case *c;
    FV_ASSERT_OK(fv_case_create(f, &c));
    ck_assert_int_eq(fv_case_check_bound(c), FV_ERR_INPUT);
    FV_ASSERT_OK(fv_case_bind(c, 0, 0, 64));
    FV_ASSERT_OK(fv_case_bind(c, 0, 1, 96));
    /* w's extent is x's dim 1 by unification: binding it to 96 agrees ... */
    FV_ASSERT_OK(fv_case_bind(c, 1, 0, 96));
    /* ... and to anything else conflicts, with both extents named. */
    ck_assert_int_eq(fv_case_bind(c, 1, 0, 97), FV_ERR_INPUT);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "97"));
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "96"));
    /* invrms's size-1 dim is a broadcast dim and cannot be sized */
    ck_assert_int_eq(fv_case_bind(c, 2, 1, 5), FV_ERR_INPUT);
    FV_ASSERT_OK(fv_case_check_bound(c));
    ck_assert_int_eq(fv_case_numel(c, f->inputs[1]), 96);
    ck_assert_int_eq(fv_case_numel(c, f->inputs[2]), 64);
    snprintf(c->family, sizeof c->family, "rms_like");
    c->seed = 3;
    fv_case_make_id(c);
    ck_assert_str_eq(c->id, "rms_like/bf16/64x96/s3");
    fv_case_free(c);
    fv_ir_fusion_release(f);
}
END_TEST

START_TEST(scalar_values_follow_the_case)
{
    fv_fusion *f = new_fusion();
    int32_t x, size, inverse, two, product;
    FV_ASSERT_OK(fv_ir_define_tensor(f, 2, symbolic2, NULL, FV_F32, NULL, &x));
    FV_ASSERT_OK(fv_ir_size(f, x, 1, &size));
    FV_ASSERT_OK(fv_ir_unary(f, FV_OP_RECIPROCAL, size, &inverse));
    FV_ASSERT_OK(fv_ir_define_scalar(f, 2.0, FV_F64, &two));
    FV_ASSERT_OK(fv_ir_binary(f, FV_OP_MUL, inverse, two, &product));
    fv_case *c;
    FV_ASSERT_OK(fv_case_create(f, &c));
    FV_ASSERT_OK(fv_case_bind(c, 0, 0, 3));
    FV_ASSERT_OK(fv_case_bind(c, 0, 1, 2048));
    double value;
    FV_ASSERT_OK(fv_case_scalar_value(c, product, &value));
    ck_assert_double_eq(value, 2.0 / 2048);
    fv_case_free(c);
    fv_ir_fusion_release(f);
}
END_TEST

START_TEST(distribution_syntax_round_trips)
{
    const char *good[] = {"normal(0,1)", "uniform(0.5,1.5)", "constant(2)", "ones", "zeros",
                          " normal ( -1 , 0.25 ) "};
    const char *bad[] = {"normal(0)", "normal(0,-1)", "uniform(2,1)", "gauss(0,1)",
                         "normal(0,1)x", "constant(nan)", ""};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fv_distribution d, again;
        ck_assert_msg(fv_distribution_parse(good[i], &d), "%s", good[i]);
        char text[96];
        fv_distribution_format(&d, text, sizeof text);
        ck_assert(fv_distribution_parse(text, &again));
        ck_assert(d.kind == again.kind && d.a == again.a && d.b == again.b);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fv_distribution d;
        ck_assert_msg(!fv_distribution_parse(bad[i], &d), "accepted '%s'", bad[i]);
    }
}
END_TEST

static Suite *ir_suite(void)
{
    Suite *suite = suite_create("ir");
    TCase *hash = tcase_create("hash-and-printer");
    tcase_add_test(hash, hash_ignores_names_and_statement_order);
    tcase_add_test(hash, hash_changes_with_every_mutation);
    tcase_add_test(hash, dead_code_does_not_change_the_hash);
    tcase_add_test(hash, printer_writes_the_frontend_syntax);
    suite_add_tcase(suite, hash);
    TCase *builder = tcase_create("builder");
    tcase_add_test(builder, broadcast_and_reduction_shapes);
    tcase_add_test(builder, dtype_promotion);
    tcase_add_test(builder, builder_errors_carry_the_location);
    tcase_add_test(builder, substitute_dtype_and_copy);
    suite_add_tcase(suite, builder);
    TCase *cases = tcase_create("cases");
    tcase_add_test(cases, case_binding_unifies_and_reports_conflicts);
    tcase_add_test(cases, scalar_values_follow_the_case);
    tcase_add_test(cases, distribution_syntax_round_trips);
    suite_add_tcase(suite, cases);
    return suite;
}

int main(void) { return fv_test_run_suite(ir_suite()); }
