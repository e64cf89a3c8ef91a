/* norm_fusions.c: builds layer-norm, RMS-norm and softmax fusions with the IR
 * builder (no frontend involved), as test subjects. */
#include "norm_fusions.h"

#include <stddef.h>
#include <stdio.h>

#define TRY(expr)                                                                  \
    do {                                                                           \
        if ((expr) != FV_OK)                                                       \
            goto failed;                                                           \
    } while (0)

static const int64_t matrix[2] = {-1, -1};
static const int64_t column[2] = {-1, 1};
static const int64_t vector[1] = {-1};

static fv_status to_float(fv_fusion *f, int32_t in, int32_t *out)
{
    if (f->values[in].dtype == FV_F32) {
        *out = in;
        return FV_OK;
    }
    return fv_ir_cast(f, in, FV_F32, out);
}

static fv_status output_in(fv_fusion *f, int32_t value, fv_dtype dtype)
{
    int32_t out = value;
    if (dtype != FV_F32 && fv_ir_cast(f, value, dtype, &out) != FV_OK)
        return fv_error_status();
    return fv_ir_add_output(f, out, NULL);
}

/* Broadcasts `value` (shape of `like` minus some dims) to `like`'s shape. */
static fv_status expand_to(fv_fusion *f, int32_t value, int32_t like, int dim_count,
                           const int *dims, int32_t *out)
{
    fv_dim shape[2] = {fv_ir_dim_of(f, like, 0), fv_ir_dim_of(f, like, 1)};
    return fv_ir_broadcast_in_dim(f, value, 2, shape, dims, out);
}

static fv_status build_layer_backward(fv_fusion *f, fv_dtype dtype)
{
    int32_t x, dy, w, mean, invstd, xf, dyf, wf, mean_b, invstd_b, w_b, centered, xhat, g;
    int32_t sum_g, g_xhat, sum_g_xhat, size_h, inv_h, bsum_g, mean_g, bsum_gx, mean_gx;
    int32_t t1, t2, proj, dx, dy_xhat, dw, db;
    int dims01[2] = {0, 1}, dim1[1] = {1}, dim0[1] = {0};
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &x));
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &dy));
    FV_TRY(fv_ir_define_tensor(f, 1, vector, NULL, dtype, NULL, &w));
    FV_TRY(fv_ir_define_tensor(f, 2, column, NULL, FV_F32, NULL, &mean));
    FV_TRY(fv_ir_define_tensor(f, 2, column, NULL, FV_F32, NULL, &invstd));
    FV_TRY(to_float(f, x, &xf));
    FV_TRY(to_float(f, dy, &dyf));
    FV_TRY(to_float(f, w, &wf));
    FV_TRY(expand_to(f, mean, xf, 2, dims01, &mean_b));
    FV_TRY(expand_to(f, invstd, xf, 2, dims01, &invstd_b));
    FV_TRY(expand_to(f, wf, xf, 1, dim1, &w_b));
    FV_TRY(fv_ir_binary(f, FV_OP_SUB, xf, mean_b, &centered));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, centered, invstd_b, &xhat));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, dyf, w_b, &g));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, g, 1, dim1, false, FV_DTYPE_NONE, &sum_g));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, g, xhat, &g_xhat));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, g_xhat, 1, dim1, false, FV_DTYPE_NONE, &sum_g_xhat));
    FV_TRY(fv_ir_size(f, xf, 1, &size_h));
    FV_TRY(fv_ir_unary(f, FV_OP_RECIPROCAL, size_h, &inv_h));
    FV_TRY(expand_to(f, sum_g, xf, 1, dim0, &bsum_g));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, bsum_g, inv_h, &mean_g));
    FV_TRY(expand_to(f, sum_g_xhat, xf, 1, dim0, &bsum_gx));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, bsum_gx, inv_h, &mean_gx));
    FV_TRY(fv_ir_binary(f, FV_OP_SUB, g, mean_g, &t1));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, xhat, mean_gx, &t2));
    FV_TRY(fv_ir_binary(f, FV_OP_SUB, t1, t2, &proj));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, proj, invstd_b, &dx));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, dyf, xhat, &dy_xhat));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, dy_xhat, 1, dim0, false, FV_DTYPE_NONE, &dw));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, dyf, 1, dim0, false, FV_DTYPE_NONE, &db));
    FV_TRY(output_in(f, dx, dtype));
    FV_TRY(output_in(f, dw, dtype));
    FV_TRY(output_in(f, db, dtype));
    return FV_OK;
}

/* Thunder's form: takes rms, s = sum(-g x / rms^2), dx = g/rms + s x/(rms H). */
static fv_status build_rms_backward(fv_fusion *f, fv_dtype dtype)
{
    int32_t x, rms, dy, w, xf, dyf, wf, rms_b, inv_rms, w_b, g, g_over, xhat, dy_xhat, dw;
    int32_t neg_g, neg_gx, two, rms_sq, inv_sq, term, s, s_col, inv_rms_col, s_over, size_h;
    int32_t inv_h, s_scaled, s_b, s_x, dx;
    int dims01[2] = {0, 1}, dim1[1] = {1}, dim0[1] = {0};
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &x));
    FV_TRY(fv_ir_define_tensor(f, 2, column, NULL, FV_F32, NULL, &rms));
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &dy));
    FV_TRY(fv_ir_define_tensor(f, 1, vector, NULL, dtype, NULL, &w));
    FV_TRY(to_float(f, x, &xf));
    FV_TRY(to_float(f, dy, &dyf));
    FV_TRY(to_float(f, w, &wf));
    FV_TRY(expand_to(f, rms, xf, 2, dims01, &rms_b));
    FV_TRY(fv_ir_unary(f, FV_OP_RECIPROCAL, rms_b, &inv_rms));
    FV_TRY(expand_to(f, wf, xf, 1, dim1, &w_b));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, dyf, w_b, &g));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, g, inv_rms, &g_over));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, xf, inv_rms, &xhat));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, dyf, xhat, &dy_xhat));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, dy_xhat, 1, dim0, false, FV_DTYPE_NONE, &dw));
    FV_TRY(fv_ir_unary(f, FV_OP_NEG, g, &neg_g));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, neg_g, xf, &neg_gx));
    FV_TRY(fv_ir_define_scalar(f, 2.0, FV_F64, &two));
    FV_TRY(fv_ir_binary(f, FV_OP_POW, rms_b, two, &rms_sq));
    FV_TRY(fv_ir_unary(f, FV_OP_RECIPROCAL, rms_sq, &inv_sq));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, neg_gx, inv_sq, &term));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, term, 1, dim1, true, FV_DTYPE_NONE, &s_col));
    (void)s;
    FV_TRY(fv_ir_unary(f, FV_OP_RECIPROCAL, rms, &inv_rms_col));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, s_col, inv_rms_col, &s_over));
    FV_TRY(fv_ir_size(f, xf, 1, &size_h));
    FV_TRY(fv_ir_unary(f, FV_OP_RECIPROCAL, size_h, &inv_h));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, s_over, inv_h, &s_scaled));
    FV_TRY(expand_to(f, s_scaled, xf, 2, dims01, &s_b));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, s_b, xf, &s_x));
    FV_TRY(fv_ir_binary(f, FV_OP_ADD, g_over, s_x, &dx));
    FV_TRY(output_in(f, dx, dtype));
    FV_TRY(output_in(f, dw, dtype));
    return FV_OK;
}

static fv_status build_layer_forward(fv_fusion *f, fv_dtype dtype)
{
    int32_t x, w, b, xf, wf, bf, var, mean, eps, var_eps, invstd, mean_b, invstd_b, w_b, b_b;
    int32_t centered, xhat, scaled, y;
    int dim1[1] = {1}, dim0[1] = {0};
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &x));
    FV_TRY(fv_ir_define_tensor(f, 1, vector, NULL, dtype, NULL, &w));
    FV_TRY(fv_ir_define_tensor(f, 1, vector, NULL, dtype, NULL, &b));
    FV_TRY(to_float(f, x, &xf));
    FV_TRY(to_float(f, w, &wf));
    FV_TRY(to_float(f, b, &bf));
    FV_TRY(fv_ir_var_mean(f, xf, 1, dim1, 0, false, &var, &mean));
    FV_TRY(fv_ir_define_scalar(f, 1e-5, FV_F64, &eps));
    FV_TRY(fv_ir_binary(f, FV_OP_ADD, var, eps, &var_eps));
    FV_TRY(fv_ir_unary(f, FV_OP_RSQRT, var_eps, &invstd));
    FV_TRY(expand_to(f, mean, xf, 1, dim0, &mean_b));
    FV_TRY(expand_to(f, invstd, xf, 1, dim0, &invstd_b));
    FV_TRY(expand_to(f, wf, xf, 1, dim1, &w_b));
    FV_TRY(expand_to(f, bf, xf, 1, dim1, &b_b));
    FV_TRY(fv_ir_binary(f, FV_OP_SUB, xf, mean_b, &centered));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, centered, invstd_b, &xhat));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, xhat, w_b, &scaled));
    FV_TRY(fv_ir_binary(f, FV_OP_ADD, scaled, b_b, &y));
    FV_TRY(output_in(f, y, dtype));
    FV_TRY(fv_ir_add_output(f, mean, NULL));
    FV_TRY(fv_ir_add_output(f, invstd, NULL));
    return FV_OK;
}

static fv_status build_rms_forward(fv_fusion *f, fv_dtype dtype)
{
    int32_t x, w, xf, wf, square, sum_sq, size_h, inv_h, mean_sq, eps, shifted, invrms;
    int32_t invrms_b, w_b, normed, y;
    int dims01[2] = {0, 1}, dim1[1] = {1};
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &x));
    FV_TRY(fv_ir_define_tensor(f, 1, vector, NULL, dtype, NULL, &w));
    FV_TRY(to_float(f, x, &xf));
    FV_TRY(to_float(f, w, &wf));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, xf, xf, &square));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, square, 1, dim1, true, FV_DTYPE_NONE, &sum_sq));
    FV_TRY(fv_ir_size(f, xf, 1, &size_h));
    FV_TRY(fv_ir_unary(f, FV_OP_RECIPROCAL, size_h, &inv_h));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, sum_sq, inv_h, &mean_sq));
    FV_TRY(fv_ir_define_scalar(f, 1e-6, FV_F64, &eps));
    FV_TRY(fv_ir_binary(f, FV_OP_ADD, mean_sq, eps, &shifted));
    FV_TRY(fv_ir_unary(f, FV_OP_RSQRT, shifted, &invrms));
    FV_TRY(expand_to(f, invrms, xf, 2, dims01, &invrms_b));
    FV_TRY(expand_to(f, wf, xf, 1, dim1, &w_b));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, xf, invrms_b, &normed));
    FV_TRY(fv_ir_binary(f, FV_OP_MUL, normed, w_b, &y));
    FV_TRY(output_in(f, y, dtype));
    FV_TRY(fv_ir_add_output(f, invrms, NULL));
    return FV_OK;
}

static fv_status build_softmax(fv_fusion *f, fv_dtype dtype)
{
    int32_t x, xf, row_max, max_b, shifted, e, row_sum, sum_b, y;
    int dim1[1] = {1}, dim0[1] = {0};
    FV_TRY(fv_ir_define_tensor(f, 2, matrix, NULL, dtype, NULL, &x));
    FV_TRY(to_float(f, x, &xf));
    FV_TRY(fv_ir_reduce(f, FV_OP_MAX, xf, 1, dim1, false, FV_DTYPE_NONE, &row_max));
    FV_TRY(expand_to(f, row_max, xf, 1, dim0, &max_b));
    FV_TRY(fv_ir_binary(f, FV_OP_SUB, xf, max_b, &shifted));
    FV_TRY(fv_ir_unary(f, FV_OP_EXP, shifted, &e));
    FV_TRY(fv_ir_reduce(f, FV_OP_SUM, e, 1, dim1, false, FV_DTYPE_NONE, &row_sum));
    FV_TRY(expand_to(f, row_sum, xf, 1, dim0, &sum_b));
    FV_TRY(fv_ir_binary(f, FV_OP_DIV, e, sum_b, &y));
    FV_TRY(output_in(f, y, dtype));
    return FV_OK;
}

fv_case *norm_case(norm_kind kind, fv_dtype dtype, int64_t rows, int64_t hidden, uint64_t seed)
{
    fv_fusion *fusion = NULL;
    fv_case *c = NULL;
    TRY(fv_ir_fusion_create(&fusion));
    switch (kind) {
    case NORM_LAYER_BACKWARD: TRY(build_layer_backward(fusion, dtype)); break;
    case NORM_RMS_BACKWARD: TRY(build_rms_backward(fusion, dtype)); break;
    case NORM_LAYER_FORWARD: TRY(build_layer_forward(fusion, dtype)); break;
    case NORM_RMS_FORWARD: TRY(build_rms_forward(fusion, dtype)); break;
    case NORM_SOFTMAX: TRY(build_softmax(fusion, dtype)); break;
    }
    TRY(fv_case_create(fusion, &c));
    fv_ir_fusion_release(fusion);
    fusion = NULL;
    TRY(fv_case_bind(c, 0, 0, rows));
    TRY(fv_case_bind(c, 0, 1, hidden));
    if (kind == NORM_LAYER_BACKWARD)
        c->distributions[4] = (fv_distribution){FV_DIST_UNIFORM, 0.5, 1.5};
    if (kind == NORM_RMS_BACKWARD)
        c->distributions[1] = (fv_distribution){FV_DIST_UNIFORM, 0.5, 1.5};
    c->seed = seed;
    c->dtype = dtype;
    snprintf(c->family, sizeof c->family, "norm%d", (int)kind);
    fv_case_make_id(c);
    TRY(fv_case_check_bound(c));
    return c;
failed:
    fv_ir_fusion_release(fusion);
    fv_case_free(c);
    return NULL;
}
