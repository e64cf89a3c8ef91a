/* dtype.c: names, sizes and classes of the IR's element types. */
#include <string.h>
#include <strings.h>

#include "ir/ir.h"

typedef struct dtype_info {
    const char *short_name;
    const char *frontend_name;
    size_t size;
} dtype_info;

static const dtype_info dtype_table[FV_DTYPE_COUNT] = {
    [FV_DTYPE_NONE] = {"none", "Null", 0},   [FV_F64] = {"fp64", "Double", 8},
    [FV_F32] = {"fp32", "Float", 4},          [FV_F16] = {"fp16", "Half", 2},
    [FV_BF16] = {"bf16", "BFloat16", 2},     [FV_I64] = {"i64", "Int", 8},
    [FV_I32] = {"i32", "Int32", 4},          [FV_BOOL] = {"bool", "Bool", 1},
};

static bool dtype_valid(fv_dtype dtype) { return (int)dtype >= 0 && dtype < FV_DTYPE_COUNT; }

const char *fv_dtype_name(fv_dtype dtype)
{
    return dtype_valid(dtype) ? dtype_table[dtype].short_name : "invalid";
}

const char *fv_dtype_frontend_name(fv_dtype dtype)
{
    return dtype_valid(dtype) ? dtype_table[dtype].frontend_name : "Invalid";
}

size_t fv_dtype_size(fv_dtype dtype) { return dtype_valid(dtype) ? dtype_table[dtype].size : 0; }

bool fv_dtype_parse(const char *name, fv_dtype *dtype)
{
    static const struct {
        const char *alias;
        fv_dtype dtype;
    } aliases[] = {
        {"f64", FV_F64}, {"float64", FV_F64}, {"f32", FV_F32}, {"float32", FV_F32},
        {"f16", FV_F16}, {"float16", FV_F16}, {"half", FV_F16}, {"bfloat16", FV_BF16},
        {"int64", FV_I64}, {"int32", FV_I32}, {"float", FV_F32}, {"double", FV_F64},
    };
    for (int i = 1; i < FV_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_table[i].short_name) == 0 ||
            strcmp(name, dtype_table[i].frontend_name) == 0) {
            *dtype = (fv_dtype)i;
            return true;
        }
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcasecmp(name, aliases[i].alias) == 0) {
            *dtype = aliases[i].dtype;
            return true;
        }
    }
    return false;
}

bool fv_dtype_is_float(fv_dtype dtype)
{
    return dtype == FV_F64 || dtype == FV_F32 || dtype == FV_F16 || dtype == FV_BF16;
}

bool fv_dtype_is_half(fv_dtype dtype) { return dtype == FV_F16 || dtype == FV_BF16; }

bool fv_dtype_is_integer(fv_dtype dtype) { return dtype == FV_I64 || dtype == FV_I32; }
