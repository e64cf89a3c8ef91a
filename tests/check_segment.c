/* check_segment.c: the segmenter.  Seed 002's case (a `full` used in two
 * segments is created in each and is not a segment output), forwarded cast
 * chains, multi-use inputs not forwarded, segment_set respected, the general
 * schedulers' partition of the norm fusions, and the canonical view. */
#include <stdlib.h>
#include <string.h>

#include "frontend/frontend.h"
#include "norm_fusions.h"
#include "segment/segment.h"
#include "test_support.h"

static fv_definition *parse(const char *text)
{
    fv_definition *definition = NULL;
    FV_ASSERT_OK(fv_frontend_parse_definition("test.py", text, strlen(text), &definition));
    return definition;
}

/* The segment whose outputs include the value named `name`, or -1. */
static int segment_writing(const fv_segmentation *s, const fv_fusion *fusion, const char *name)
{
    for (int32_t i = 0; i < s->count; i++) {
        const fv_fusion *sf = s->segments[i].fusion;
        for (int32_t o = 0; o < sf->output_count; o++)
            if (strcmp(fusion->values[sf->outputs[o]].name, name) == 0)
                return (int)i;
    }
    return -1;
}

static bool segment_reads(const fv_segment *segment, const fv_fusion *fusion, const char *name)
{
    for (int32_t i = 0; i < segment->fusion->input_count; i++)
        if (strcmp(fusion->values[segment->fusion->inputs[i]].name, name) == 0)
            return true;
    return false;
}

/* Index in segment->ops of the op producing `name`, or -1. */
static int op_in_segment(const fv_segment *segment, const fv_fusion *fusion, const char *name)
{
    for (int32_t k = 0; k < segment->op_count; k++)
        if (strcmp(fusion->values[fusion->ops[segment->ops[k]].outputs[0]].name, name) == 0)
            return (int)k;
    return -1;
}

static const char full_source[] =
    "def f(fd : FusionDefinition) -> None :\n"
    "    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)\n"
    "    xf = fd.ops.cast(x, dtype=DataType.Float)\n"
    "    fill = fd.define_scalar(1.5, dtype=DataType.Double)\n"
    "    scale = fd.ops.full(shape=xf.shape(), fill_value=fill, dtype=DataType.Float)\n"
    "    y = fd.ops.mul(xf, scale)\n"
    "    y_next = fd.ops.segment_set(y)\n"
    "    row = fd.ops.sum(fd.ops.add(y_next, scale), dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    fd.add_output(y)\n"
    "    fd.add_output(row)\n";

START_TEST(full_is_created_in_each_segment_and_not_passed)
{
    fv_definition *d = parse(full_source);
    fv_segmentation s;
    FV_ASSERT_OK(fv_segment_fusion(d->fusion, &s));
    ck_assert_int_eq(s.count, 2);
    int first = segment_writing(&s, d->fusion, "y");
    int second = segment_writing(&s, d->fusion, "row");
    ck_assert_int_ge(first, 0);
    ck_assert_int_ge(second, 0);
    ck_assert_int_ne(first, second);
    for (int32_t i = 0; i < s.count; i++) {
        int k = op_in_segment(&s.segments[i], d->fusion, "scale");
        ck_assert_msg(k >= 0, "segment %d does not create the full itself", (int)i);
        ck_assert_msg(s.segments[i].forwarded[k], "the full is not marked forwarded");
        ck_assert_msg(segment_writing(&s, d->fusion, "scale") < 0, "the full is a segment output");
        ck_assert(!segment_reads(&s.segments[i], d->fusion, "scale"));
    }
    /* segment_set: the second segment reads y through the alias, not recomputed */
    ck_assert(segment_reads(&s.segments[second], d->fusion, "y_next"));
    ck_assert_int_lt(op_in_segment(&s.segments[second], d->fusion, "y"), 0);
    fv_segmentation_free(&s);
    fv_frontend_definition_free(d);
}
END_TEST

/* x is used once: its cast and neg are forwarded into both segments.  dy is
 * used twice (cast and abs): the chain from it is not forwarded (nvFuser's
 * rule), though its cast is still recomputed where needed. */
static const char chain_source[] =
    "def f(fd : FusionDefinition) -> None :\n"
    "    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)\n"
    "    dy = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16)\n"
    "    xf = fd.ops.cast(x, dtype=DataType.Float)\n"
    "    xn = fd.ops.neg(xf)\n"
    "    dyf = fd.ops.cast(dy, dtype=DataType.Float)\n"
    "    dya = fd.ops.abs(dy)\n"
    "    twice = fd.ops.add(dyf, fd.ops.cast(dya, dtype=DataType.Float))\n"
    "    row = fd.ops.sum(fd.ops.mul(xn, twice), dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    rb = fd.ops.broadcast_in_dim(row, shape=xf.shape(), broadcast_dims=[0])\n"
    "    out = fd.ops.mul(fd.ops.mul(xn, rb), twice)\n"
    "    fd.add_output(out)\n";

START_TEST(cast_chains_forwarded_and_multi_use_not)
{
    fv_definition *d = parse(chain_source);
    fv_segmentation s;
    FV_ASSERT_OK(fv_segment_fusion_with(d->fusion, fv_sched_general_families(), &s));
    ck_assert_int_eq(s.count, 2); /* the row sum, then the normalization */
    for (int32_t i = 0; i < s.count; i++) {
        const fv_segment *segment = &s.segments[i];
        int xf = op_in_segment(segment, d->fusion, "xf");
        int xn = op_in_segment(segment, d->fusion, "xn");
        int dyf = op_in_segment(segment, d->fusion, "dyf");
        ck_assert_msg(xf >= 0 && xn >= 0 && dyf >= 0, "segment %d lacks a replicated op", (int)i);
        ck_assert_msg(segment->forwarded[xf] && segment->forwarded[xn], "x's chain is forwarded");
        ck_assert_msg(!segment->forwarded[dyf], "dy has two uses: its cast is not forwarded");
        ck_assert_msg(segment->recomputed[dyf], "dy's cast is recomputed where needed");
        ck_assert(!segment_reads(segment, d->fusion, "xf"));
        ck_assert(!segment_reads(segment, d->fusion, "dyf"));
    }
    fv_text text = {0};
    fv_segmentation_print(&s, d->fusion, &text);
    ck_assert_ptr_nonnull(strstr(fv_text_str(&text), "[forwarded]"));
    ck_assert_ptr_nonnull(strstr(fv_text_str(&text), "[recomputed]"));
    fv_text_free(&text);
    fv_segmentation_free(&s);
    fv_frontend_definition_free(d);
}
END_TEST

/* A pointwise fusion with a segment_set in the middle: two segments even
 * though one pointwise kernel could do everything. */
START_TEST(segment_set_always_separates)
{
    static const char source[] =
        "def f(fd : FusionDefinition) -> None :\n"
        "    x = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)\n"
        "    a = fd.ops.exp(x)\n"
        "    b = fd.ops.segment_set(a)\n"
        "    c = fd.ops.neg(b)\n"
        "    fd.add_output(c)\n";
    fv_definition *d = parse(source);
    fv_segmentation s;
    FV_ASSERT_OK(fv_segment_fusion(d->fusion, &s));
    ck_assert_int_eq(s.count, 2);
    ck_assert_int_eq(segment_writing(&s, d->fusion, "a"), 0);
    ck_assert(segment_reads(&s.segments[1], d->fusion, "b"));
    int32_t b = -1;
    for (int32_t v = 0; v < d->fusion->value_count; v++)
        if (strcmp(d->fusion->values[v].name, "b") == 0)
            b = v;
    ck_assert_int_ge(b, 0);
    ck_assert_str_eq(d->fusion->values[s.alias_of[b]].name, "a");
    fv_segmentation_free(&s);
    fv_frontend_definition_free(d);
}
END_TEST

/* The general families split the norms as expected. */
START_TEST(norm_fusions_partition)
{
    static const struct {
        norm_kind kind;
        int segments;
        const char *families[3];
    } expected[] = {
        {NORM_LAYER_BACKWARD, 2, {"inner_reduction", "outer_reduction"}},
        {NORM_RMS_BACKWARD, 2, {"inner_reduction", "outer_reduction"}},
        {NORM_LAYER_FORWARD, 2, {"inner_reduction", "pointwise"}},
        {NORM_RMS_FORWARD, 2, {"inner_reduction", "pointwise"}},
        {NORM_SOFTMAX, 3, {"inner_reduction", "inner_reduction", "pointwise"}},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        fv_case *c = norm_case(expected[i].kind, FV_BF16, 64, 256, 0);
        fv_segmentation s;
        FV_ASSERT_OK(fv_segment_fusion_with(c->fusion, fv_sched_general_families(), &s));
        ck_assert_int_eq(s.count, expected[i].segments);
        for (int32_t k = 0; k < s.count; k++)
            ck_assert_str_eq(s.segments[k].scheduler->name, expected[i].families[k]);
        /* only reduction results and outputs cross: nothing full-size in f32 */
        for (int32_t v = 0; v < c->fusion->value_count; v++) {
            bool output = false;
            for (int32_t o = 0; o < c->fusion->output_count; o++)
                output = output || c->fusion->outputs[o] == v;
            if (s.materialized[v] && c->fusion->values[v].producer >= 0 && !output)
                ck_assert_msg(c->fusion->values[v].rank <= 1 || c->fusion->values[v].dims[1].broadcast,
                              "kind %zu: value %d crosses segments at full size", i, (int)v);
        }
        fv_segmentation_free(&s);
        fv_case_free(c);
    }
}
END_TEST

/* With every family registered, each norm is one persistent segment and
 * nothing crosses a segment boundary. */
START_TEST(norm_fusions_are_one_persistent_segment)
{
    static const struct {
        norm_kind kind;
        const char *family;
    } expected[] = {
        /* the first of the two approaches; the plan selects between them */
        {NORM_LAYER_BACKWARD, "inner_outer_ws"},
        {NORM_RMS_BACKWARD, "inner_outer_ws"},
        {NORM_LAYER_FORWARD, "inner_tma"},
        {NORM_RMS_FORWARD, "inner_tma"},
        {NORM_SOFTMAX, "inner_tma"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        fv_case *c = norm_case(expected[i].kind, FV_BF16, 64, 256, 0);
        fv_segmentation s;
        FV_ASSERT_OK(fv_segment_fusion(c->fusion, &s));
        ck_assert_int_eq(s.count, 1);
        ck_assert_str_eq(s.segments[0].scheduler->name, expected[i].family);
        fv_segmentation_free(&s);
        fv_case_free(c);
    }
}
END_TEST

/* Segments take fast_exp from the whole fusion: every segment of a softmax
 * with a 16-bit output (also those whose own outputs are the f32 max and sum),
 * none of an fp32 softmax or of a layer-norm forward with f32 statistics. */
START_TEST(segments_take_fast_exp_from_the_whole_fusion)
{
    static const struct {
        norm_kind kind;
        fv_dtype dtype;
        bool fast_exp;
    } expected[] = {
        {NORM_SOFTMAX, FV_BF16, true},        {NORM_SOFTMAX, FV_F16, true},
        {NORM_SOFTMAX, FV_F32, false},        {NORM_LAYER_FORWARD, FV_BF16, false},
        {NORM_LAYER_BACKWARD, FV_BF16, true},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        fv_case *c = norm_case(expected[i].kind, expected[i].dtype, 64, 256, 0);
        ck_assert_int_eq(fv_ir_outputs_all_half(c->fusion), expected[i].fast_exp);
        ck_assert(!c->fusion->fast_exp);  /* set on segments only */
        const fv_scheduler *const *family_sets[] = {fv_sched_general_families(), NULL};
        for (int f = 0; f < 2; f++) {
            fv_segmentation s;
            FV_ASSERT_OK(fv_segment_fusion_with(c->fusion, family_sets[f], &s));
            ck_assert(f == 1 || s.count > 1);
            for (int32_t k = 0; k < s.count; k++)
                ck_assert_msg(s.segments[k].fusion->fast_exp == expected[i].fast_exp,
                              "case %zu, segment %d", i, (int)k);
            fv_segmentation_free(&s);
        }
        fv_case_free(c);
    }
}
END_TEST

/* [B, S, H] layer-norm forward is scheduled as [B*S, H]. */
START_TEST(rank3_is_canonicalized_to_two_axes)
{
    static const char source[] =
        "def f(fd : FusionDefinition) -> None :\n"
        "    x = fd.define_tensor(shape=[-1, -1, -1], contiguity=[True, True, True], dtype=DataType.Float)\n"
        "    w = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float)\n"
        "    s = fd.ops.sum(fd.ops.mul(x, x), dims=[2], keepdim=True, dtype=DataType.Null)\n"
        "    wb = fd.ops.broadcast_in_dim(w, shape=x.shape(), broadcast_dims=[2])\n"
        "    y = fd.ops.mul(fd.ops.mul(x, s), wb)\n"
        "    fd.add_output(s)\n"
        "    fd.add_output(y)\n";
    fv_definition *d = parse(source);
    fv_segmentation s;
    FV_ASSERT_OK(fv_segment_fusion_with(d->fusion, fv_sched_general_families(), &s));
    ck_assert_int_eq(s.count, 2);
    for (int32_t i = 0; i < s.count; i++) {
        ck_assert(s.segments[i].view.canonical);
        ck_assert_int_eq(s.segments[i].view.axis_count, 2);
        ck_assert_int_eq(s.segments[i].view.axis_class_count[0], 2); /* B and S merged */
        ck_assert_int_eq(s.segments[i].view.axis_class_count[1], 1);
    }
    fv_segmentation_free(&s);
    fv_frontend_definition_free(d);
}
END_TEST

/* A purely element-wise fusion is one flat axis; a permuted input has no
 * canonical view and is refused with the reason. */
START_TEST(flat_and_permuted_views)
{
    static const char flat[] =
        "def f(fd : FusionDefinition) -> None :\n"
        "    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
        "    fd.add_output(fd.ops.exp(x))\n";
    fv_definition *d = parse(flat);
    fv_segmentation s;
    FV_ASSERT_OK(fv_segment_fusion(d->fusion, &s));
    ck_assert_int_eq(s.count, 1);
    ck_assert_int_eq(s.segments[0].view.axis_count, 1);
    fv_segmentation_free(&s);
    fv_frontend_definition_free(d);
    static const char permuted[] =
        "def f(fd : FusionDefinition) -> None :\n"
        "    x = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float, stride_order=[0, 1])\n"
        "    fd.add_output(fd.ops.exp(x))\n";
    d = parse(permuted);
    ck_assert_int_eq(fv_segment_fusion(d->fusion, &s), FV_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "permuted stride order"));
    fv_frontend_definition_free(d);
}
END_TEST

static Suite *segment_suite(void)
{
    Suite *suite = suite_create("segment");
    TCase *tcase = tcase_create("segment");
    tcase_add_test(tcase, full_is_created_in_each_segment_and_not_passed);
    tcase_add_test(tcase, cast_chains_forwarded_and_multi_use_not);
    tcase_add_test(tcase, segment_set_always_separates);
    tcase_add_test(tcase, norm_fusions_partition);
    tcase_add_test(tcase, norm_fusions_are_one_persistent_segment);
    tcase_add_test(tcase, segments_take_fast_exp_from_the_whole_fusion);
    tcase_add_test(tcase, rank3_is_canonicalized_to_two_axes);
    tcase_add_test(tcase, flat_and_permuted_views);
    suite_add_tcase(suite, tcase);
    return suite;
}

int main(void) { return fv_test_run_suite(segment_suite()); }
