/* check_frontend.c: tests for the case reader (src/frontend): nvFuser and
 * Thunder definitions, round trips through the printer and the canonical
 * hash, the inputs list, error messages with exact locations, sweeps and
 * collection, the source tree's cases/ directory, limits, and a deterministic
 * mutation fuzzer over tests/fuzz/ (tests/fuzz/README.md). */
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "frontend/frontend.h"
#include "test_support.h"

/* ------------------------------------------------------------ sources */

/* ../shared/research/nvfuser.md section 5, Example A (LN backward), verbatim. */
static const char example_a[] =
    "import torch\n"
    "from nvfuser import FusionDefinition, DataType\n"
    "def nvfuser_fusion_id0(fd : FusionDefinition) -> None :\n"
    "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, "
    "is_cpu=False)\n"
    "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, "
    "is_cpu=False)\n"
    "    T2 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Float, is_cpu=False)\n"
    "    T3 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, "
    "is_cpu=False)\n"
    "    T4 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, "
    "is_cpu=False)\n"
    "    T0 = fd.ops.cast(T0, dtype=DataType.Float)\n"
    "    T1 = fd.ops.cast(T1, dtype=DataType.Float)\n"
    "    T4 = fd.ops.cast(T4, dtype=DataType.Float)\n"
    "    V8 = fd.define_vector([T0.size(0), 1], dtype=DataType.Int)\n"
    "    T9 = fd.ops.broadcast_in_dim(T2, shape=V8, broadcast_dims=[0])\n"
    "    V12 = T0.shape()\n"
    "    T13 = fd.ops.broadcast_in_dim(T9, shape=V12, broadcast_dims=[0, 1])\n"
    "    T14 = fd.ops.sub(T0, T13)\n"
    "    T18 = fd.ops.broadcast_in_dim(T3, shape=V12, broadcast_dims=[0, 1])\n"
    "    T19 = fd.ops.mul(T14, T18)\n"
    "    T23 = fd.ops.broadcast_in_dim(T4, shape=V12, broadcast_dims=[1])\n"
    "    T28 = fd.ops.sum(T1, dims=[0], keepdim=False, dtype=DataType.Null)\n"
    "    T30 = fd.ops.mul(T1, T23)\n"
    "    T31 = fd.ops.mul(T1, T19)\n"
    "    T32 = fd.ops.sum(T31, dims=[0], keepdim=False, dtype=DataType.Null)\n"
    "    T34 = fd.ops.mul(T30, T18)\n"
    "    T35 = fd.ops.mul(T30, T14)\n"
    "    T36 = fd.ops.sum(T35, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    T40 = fd.ops.broadcast_in_dim(T36, shape=V8, broadcast_dims=[0])\n"
    "    T41 = fd.ops.neg(T34)\n"
    "    T42 = fd.ops.sum(T41, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    T46 = fd.ops.broadcast_in_dim(T42, shape=V8, broadcast_dims=[0])\n"
    "    S47 = fd.define_scalar(-0.500000, dtype=DataType.Double)\n"
    "    T48 = fd.ops.mul(S47, T40)\n"
    "    S49 = fd.define_scalar(3.00000, dtype=DataType.Double)\n"
    "    T50 = fd.ops.pow(T3, S49)\n"
    "    T51 = fd.ops.mul(T48, T50)\n"
    "    T54 = fd.ops.sum(T46, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    T55 = fd.ops.sum(T51, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    T59 = fd.ops.broadcast_in_dim(T55, shape=V8, broadcast_dims=[0])\n"
    "    T63 = fd.ops.broadcast_in_dim(T59, shape=V12, broadcast_dims=[0, 1])\n"
    "    T67 = fd.ops.broadcast_in_dim(T2, shape=V8, broadcast_dims=[0])\n"
    "    T71 = fd.ops.broadcast_in_dim(T67, shape=V12, broadcast_dims=[0, 1])\n"
    "    S72 = fd.define_scalar(2.00000, dtype=DataType.Double)\n"
    "    T73 = fd.ops.mul(S72, T63)\n"
    "    T74 = fd.ops.sub(T0, T71)\n"
    "    T75 = fd.ops.mul(T73, T74)\n"
    "    S77 = fd.ops.reciprocal(T0.size(1))\n"
    "    T78 = fd.ops.mul(T75, S77)\n"
    "    T82 = fd.ops.broadcast_in_dim(T54, shape=V8, broadcast_dims=[0])\n"
    "    T86 = fd.ops.broadcast_in_dim(T82, shape=V12, broadcast_dims=[0, 1])\n"
    "    T88 = fd.ops.mul(S77, T86)\n"
    "    T89 = fd.ops.add(T78, T88)\n"
    "    T90 = fd.ops.add(T34, T89)\n"
    "    T28 = fd.ops.cast(T28, dtype=DataType.BFloat16)\n"
    "    T90 = fd.ops.cast(T90, dtype=DataType.BFloat16)\n"
    "    T32 = fd.ops.cast(T32, dtype=DataType.BFloat16)\n"
    "    fd.add_output(T90)\n"
    "    fd.add_output(T32)\n"
    "    fd.add_output(T28)\n"
    "with FusionDefinition() as fd:\n"
    "    nvfuser_fusion_id0(fd)\n"
    "inputs = [torch.randn(16384, 2048, dtype=torch.bfloat16, device='cuda:0'),   # x\n"
    "          torch.randn(16384, 2048, dtype=torch.bfloat16, device='cuda:0'),   # dy\n"
    "          torch.randn(16384, dtype=torch.float32, device='cuda:0'),          # mean\n"
    "          torch.rand(16384, 1, dtype=torch.float32, device='cuda:0') + 0.5,  # invstd "
    "(benchmark derives mean/invstd from x)\n"
    "          torch.randn(2048, dtype=torch.bfloat16, device='cuda:0')]          # w\n"
    "fd.execute(inputs)\n";

/* Example B (RMS backward) with the harness of Example A. */
static const char example_b[] =
    "import torch\n"
    "from nvfuser import FusionDefinition, DataType\n"
    "def nvfuser_fusion_id1(fd : FusionDefinition) -> None :\n"
    "    T4 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, "
    "is_cpu=False)\n"
    "    T5 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float, "
    "is_cpu=False)\n"
    "    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.BFloat16, "
    "is_cpu=False)\n"
    "    T7 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.BFloat16, "
    "is_cpu=False)\n"
    "    S0 = fd.define_scalar(2.0, dtype=DataType.Double)\n"
    "    T4 = fd.ops.cast(T4, dtype=DataType.Float)\n"
    "    T6 = fd.ops.cast(T6, dtype=DataType.Float)\n"
    "    T7 = fd.ops.cast(T7, dtype=DataType.Float)\n"
    "    T14 = fd.ops.broadcast_in_dim(T5, shape=T4.shape(), broadcast_dims=[0, 1])\n"
    "    T15 = fd.ops.reciprocal(T14)\n"
    "    T16 = fd.ops.mul(T4, T15)\n"
    "    T20 = fd.ops.broadcast_in_dim(T7, shape=T4.shape(), broadcast_dims=[1])\n"
    "    T23 = fd.ops.mul(T6, T16)\n"
    "    T24 = fd.ops.mul(T6, T20)\n"
    "    T25 = fd.ops.sum(T23, dims=[0], keepdim=False, dtype=DataType.Null)\n"
    "    T28 = fd.ops.mul(T24, T15)\n"
    "    T29 = fd.ops.neg(T24)\n"
    "    T30 = fd.ops.mul(T29, T4)\n"
    "    T32 = fd.ops.pow(T14, S0)\n"
    "    T33 = fd.ops.reciprocal(T32)\n"
    "    T34 = fd.ops.mul(T30, T33)\n"
    "    T35 = fd.ops.sum(T34, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    V39 = fd.define_vector([T4.size(0), 1], dtype=DataType.Int)\n"
    "    T41 = fd.ops.broadcast_in_dim(T35, shape=V39, broadcast_dims=[0])\n"
    "    T43 = fd.ops.mul(S0, T5)\n"
    "    T44 = fd.ops.reciprocal(T43)\n"
    "    T45 = fd.ops.mul(T41, T44)\n"
    "    S48 = fd.ops.reciprocal(T4.size(1))\n"
    "    T49 = fd.ops.mul(T45, S48)\n"
    "    T50 = fd.ops.sum(T49, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    T54 = fd.ops.broadcast_in_dim(T50, shape=V39, broadcast_dims=[0])\n"
    "    T58 = fd.ops.broadcast_in_dim(T54, shape=T4.shape(), broadcast_dims=[0, 1])\n"
    "    T59 = fd.ops.mul(T58, S0)\n"
    "    T62 = fd.ops.mul(T59, T4)\n"
    "    T63 = fd.ops.add(T28, T62)\n"
    "    T63 = fd.ops.cast(T63, dtype=DataType.BFloat16)\n"
    "    T25 = fd.ops.cast(T25, dtype=DataType.BFloat16)\n"
    "    fd.add_output(T63)\n"
    "    fd.add_output(T25)\n"
    "with FusionDefinition() as fd:\n"
    "    nvfuser_fusion_id1(fd)\n";

/* A Thunder-style LN backward: concrete shapes, stride_order, literal 1/H,
 * a sum over a size-1 broadcast dimension (tests/fuzz/thunder_ln_bwd.py). */
static const char thunder_ln_bwd[] =
    "# Thunder-style layer-norm backward: concrete shapes, stride_order, literal 1/H,\n"
    "# and a sum over a size-1 broadcast dimension.\n"
    "import torch\n"
    "from nvfuser import FusionDefinition, DataType\n"
    "\n"
    "def nvfuser_fusion_id2(fd : FusionDefinition) -> None :\n"
    "    T0 = fd.define_tensor(shape=[16384, 2048], contiguity=[True, True], "
    "dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])\n"
    "    T1 = fd.define_tensor(shape=[16384, 2048], contiguity=[True, True], "
    "dtype=DataType.BFloat16, is_cpu=False, stride_order=[1, 0])\n"
    "    T2 = fd.define_tensor(shape=[16384, 1], contiguity=[True, None], dtype=DataType.Float, "
    "is_cpu=False, stride_order=[1, 0])\n"
    "    T3 = fd.define_tensor(shape=[16384, 1], contiguity=[True, None], dtype=DataType.Float, "
    "is_cpu=False, stride_order=[1, 0])\n"
    "    T4 = fd.define_tensor(shape=[2048], contiguity=[True], dtype=DataType.BFloat16, "
    "is_cpu=False, stride_order=[0])\n"
    "    T5 = fd.ops.cast(T0, dtype=DataType.Float)\n"
    "    T6 = fd.ops.cast(T1, dtype=DataType.Float)\n"
    "    T7 = fd.ops.cast(T4, dtype=DataType.Float)\n"
    "    T8 = fd.ops.broadcast_in_dim(T7, shape=[16384, 2048], broadcast_dims=[1])\n"
    "    T9 = fd.ops.mul(T6, T8)\n"
    "    T10 = fd.ops.broadcast_in_dim(T2, shape=[16384, 2048], broadcast_dims=[0, 1])\n"
    "    T11 = fd.ops.sub(T5, T10)\n"
    "    T12 = fd.ops.broadcast_in_dim(T3, shape=[16384, 2048], broadcast_dims=[0, 1])\n"
    "    T13 = fd.ops.mul(T11, T12)\n"
    "    T14 = fd.ops.mul(T9, T13)\n"
    "    T15 = fd.ops.sum(T14, dims=[1], keepdim=True, dtype=DataType.Null)\n"
    "    T16 = fd.ops.sum(T9, dims=[1], keepdim=True, dtype=DataType.Null)\n"
    "    S17 = fd.define_scalar(0.000488281, dtype=DataType.Double)\n"
    "    T18 = fd.ops.mul(T15, S17)\n"
    "    T19 = fd.ops.mul(T16, S17)\n"
    "    T20 = fd.ops.sum(T18, dims=[1], keepdim=False, dtype=DataType.Null)\n"
    "    T21 = fd.ops.broadcast_in_dim(T20, shape=[16384, 2048], broadcast_dims=[0])\n"
    "    T22 = fd.ops.broadcast_in_dim(T19, shape=[16384, 2048], broadcast_dims=[0, 1])\n"
    "    T23 = fd.ops.mul(T13, T21)\n"
    "    T24 = fd.ops.sub(T9, T22)\n"
    "    T25 = fd.ops.sub(T24, T23)\n"
    "    T26 = fd.ops.mul(T25, T12)\n"
    "    T27 = fd.ops.mul(T6, T13)\n"
    "    T28 = fd.ops.sum(T27, dims=[0], keepdim=False, dtype=DataType.Null)\n"
    "    T29 = fd.ops.sum(T6, dims=[0], keepdim=False, dtype=DataType.Null)\n"
    "    T30 = fd.ops.cast(T26, dtype=DataType.BFloat16)\n"
    "    T31 = fd.ops.cast(T28, dtype=DataType.BFloat16)\n"
    "    T32 = fd.ops.cast(T29, dtype=DataType.BFloat16)\n"
    "    fd.add_output(T30, stride_order=[1, 0])\n"
    "    fd.add_output(T31)\n"
    "    fd.add_output(T32)\n"
    "\n"
    "with FusionDefinition() as fd:\n"
    "    nvfuser_fusion_id2(fd)\n"
    "\n"
    "inputs = [\n"
    "    torch.randn(16384, 2048, dtype=torch.bfloat16, device='cuda:0'),\n"
    "    torch.randn((16384, 2048), dtype=torch.bfloat16, device='cuda:0'),\n"
    "    torch.randn(16384, 1, dtype=torch.float32, device='cuda:0'),\n"
    "    torch.rand(16384, 1, dtype=torch.float32, device='cuda:0') + 0.5,\n"
    "    torch.testing.make_tensor((2048,), dtype=torch.bfloat16, device='cuda:0', low=-1, "
    "high=1),\n"
    "]\n"
    "fd.execute(inputs)\n";

/* A definition whose inputs list exercises every distribution rule. */
static const char distributions_source[] =
    "import torch\n"
    "from nvfuser import FusionDefinition, DataType\n"
    "def fusion(fd : FusionDefinition) -> None :\n"
    "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T2 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T3 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T4 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T5 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T6 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T7 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    T8 = fd.define_tensor(shape=[-1, 16], contiguity=[True, True], dtype=DataType.Float)\n"
    "    S9 = fd.define_scalar(dtype=DataType.Double)\n"
    "    T10 = fd.ops.add(T0, T1)\n"
    "    T10 = fd.ops.add(T10, T2)\n"
    "    T10 = fd.ops.add(T10, T3)\n"
    "    T10 = fd.ops.add(T10, T4)\n"
    "    T10 = fd.ops.add(T10, T5)\n"
    "    T10 = fd.ops.add(T10, T6)\n"
    "    T10 = fd.ops.add(T10, T7)\n"
    "    T10 = fd.ops.add(T10, T8)\n"
    "    T10 = fd.ops.mul(T10, S9)\n"
    "    fd.add_output(T10)\n"
    "with FusionDefinition() as fd:\n"
    "    fusion(fd)\n"
    "inputs = [\n"
    "    torch.randn(8, 16, device='cuda') * 2 + 1,\n"
    "    torch.rand(8, 16, dtype=torch.float32) + 0.5,\n"
    "    torch.testing.make_tensor((8, 16), dtype=torch.float32, device='cuda:0', low=-2, "
    "high=3),\n"
    "    torch.ones(8, 16).cuda(),\n"
    "    torch.zeros([8, 16]).to('cuda'),\n"
    "    torch.full((8, 16), 2.5, dtype=torch.float32, device='cuda'),\n"
    "    -(torch.randn(8, 16) - 3) / 4,\n"
    "    2 * (torch.rand(8, 16, requires_grad=True) - 1),\n"
    "    torch.testing.make_tensor(8, 16, dtype=torch.float32, device='cuda:0'),\n"
    "    1e-5,\n"
    "]\n"
    "fd.execute(inputs)\n";

/* ------------------------------------------------------------ helpers */

static fv_definition *parse_ok(const char *path, const char *text)
{
    fv_definition *definition = NULL;
    FV_ASSERT_OK(fv_frontend_parse_definition(path, text, strlen(text), &definition));
    ck_assert_ptr_nonnull(definition);
    return definition;
}

static const fv_value *input_value(const fv_definition *definition, int k)
{
    return &definition->fusion->values[definition->fusion->inputs[k]];
}

static const fv_value *output_value(const fv_definition *definition, int k)
{
    return &definition->fusion->values[definition->fusion->outputs[k]];
}

/* The symbol class of input k's dim d (which must be symbolic). */
static int32_t input_root(const fv_definition *definition, int k, int d)
{
    fv_dim dim = input_value(definition, k)->dims[d];
    ck_assert_int_ge(dim.symbol, 0);
    return fv_ir_symbol_root(definition->fusion, dim.symbol);
}

static int count_ops(const fv_fusion *fusion, fv_op_kind kind)
{
    int count = 0;
    for (int32_t o = 0; o < fusion->op_count; o++)
        count += fusion->ops[o].kind == kind;
    return count;
}

/* Every `fd.ops.NAME(` of the source became exactly one op of that kind. */
static void check_op_counts(const fv_definition *definition, const char *source)
{
    int total = 0;
    for (int k = 0; k < FV_OP_KIND_COUNT; k++) {
        char needle[64];
        snprintf(needle, sizeof needle, "fd.ops.%s(", fv_ir_op_name((fv_op_kind)k));
        int expected = fv_test_count_occurrences(source, needle);
        ck_assert_msg(count_ops(definition->fusion, (fv_op_kind)k) == expected,
                      "%s: %d ops, %d in the source", fv_ir_op_name((fv_op_kind)k),
                      count_ops(definition->fusion, (fv_op_kind)k), expected);
        total += expected;
    }
    ck_assert_int_eq(definition->fusion->op_count, total);
}

static void hash_of(const fv_fusion *fusion, char hex[65])
{
    FV_ASSERT_OK(fv_ir_hash(fusion, hex));
}

static void hash_of_source(const char *text, char hex[65])
{
    fv_definition *definition = parse_ok("cases/variant.py", text);
    hash_of(definition->fusion, hex);
    fv_frontend_definition_free(definition);
}

/* `text` with every occurrence of `from` replaced by `to` (caller frees). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t from_length = strlen(from), to_length = strlen(to);
    size_t size = strlen(text) + 1 + (size_t)fv_test_count_occurrences(text, from) * to_length;
    char *result = malloc(size);
    ck_assert_ptr_nonnull(result);
    char *out = result;
    while (*text != '\0') {
        if (strncmp(text, from, from_length) == 0) {
            memcpy(out, to, to_length);
            out += to_length;
            text += from_length;
        } else {
            *out++ = *text++;
        }
    }
    *out = '\0';
    return result;
}

/* Renames every variable T<n>, S<n>, V<n> to value_<n>_<letter> (caller frees). */
static char *rename_variables(const char *text)
{
    char *result = malloc(strlen(text) * 4 + 1);
    ck_assert_ptr_nonnull(result);
    char *out = result;
    for (const char *at = text; *at != '\0';) {
        bool boundary = at == text || !(at[-1] == '_' || at[-1] == '.' ||
                                        (at[-1] >= 'a' && at[-1] <= 'z') ||
                                        (at[-1] >= 'A' && at[-1] <= 'Z') ||
                                        (at[-1] >= '0' && at[-1] <= '9'));
        if (boundary && (*at == 'T' || *at == 'S' || *at == 'V') && at[1] >= '0' && at[1] <= '9') {
            char letter = *at++;
            size_t digits = strspn(at, "0123456789");
            out += sprintf(out, "value_%.*s_%c", (int)digits, at, letter + 32);
            at += digits;
        } else {
            *out++ = *at++;
        }
    }
    *out = '\0';
    return result;
}

/* Swaps the (whole) lines that start with `first` and `second`. */
static char *swap_lines(const char *text, const char *first, const char *second)
{
    const char *a = strstr(text, first), *b = strstr(text, second);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert(a < b);
    size_t a_length = (size_t)(strchr(a, '\n') - a) + 1;
    size_t b_length = (size_t)(strchr(b, '\n') - b) + 1;
    char *result = malloc(strlen(text) + 1);
    ck_assert_ptr_nonnull(result);
    size_t used = 0;
    memcpy(result, text, (size_t)(a - text));
    used += (size_t)(a - text);
    memcpy(result + used, b, b_length);
    used += b_length;
    memcpy(result + used, a + a_length, (size_t)(b - a) - a_length);
    used += (size_t)(b - a) - a_length;
    memcpy(result + used, a, a_length);
    used += a_length;
    strcpy(result + used, b + b_length);
    return result;
}

static void check_distribution(const fv_distribution *distribution, const char *expected)
{
    char text[96];
    fv_distribution_format(distribution, text, sizeof text);
    ck_assert_str_eq(text, expected);
}

/* ------------------------------------------------------------ parsing */

START_TEST(test_example_a)
{
    fv_definition *definition = parse_ok("cases/layer_norm_bwd.py", example_a);
    const fv_fusion *fusion = definition->fusion;
    ck_assert_str_eq(fusion->name, "nvfuser_fusion_id0");
    ck_assert_str_eq(definition->family, "layer_norm_bwd");
    ck_assert_int_eq(fusion->input_count, 5);
    ck_assert_int_eq(definition->input_count, 5);
    ck_assert_int_eq(fusion->output_count, 3);
    const fv_dtype dtypes[5] = {FV_BF16, FV_BF16, FV_F32, FV_F32, FV_BF16};
    const int ranks[5] = {2, 2, 1, 2, 1};
    for (int k = 0; k < 5; k++) {
        char name[8];
        snprintf(name, sizeof name, "T%d", k);
        ck_assert_str_eq(input_value(definition, k)->name, name);
        ck_assert_int_eq(input_value(definition, k)->dtype, dtypes[k]);
        ck_assert_int_eq(input_value(definition, k)->rank, ranks[k]);
    }
    ck_assert(input_value(definition, 3)->dims[1].broadcast);
    ck_assert_int_eq(input_value(definition, 3)->contiguity[1], -1);
    /* Unification: N is shared by x, dy, mean, invstd; H by x, dy, w. */
    int32_t n = input_root(definition, 0, 0), h = input_root(definition, 0, 1);
    ck_assert_int_ne(n, h);
    ck_assert_int_eq(input_root(definition, 1, 0), n);
    ck_assert_int_eq(input_root(definition, 2, 0), n);
    ck_assert_int_eq(input_root(definition, 3, 0), n);
    ck_assert_int_eq(input_root(definition, 1, 1), h);
    ck_assert_int_eq(input_root(definition, 4, 0), h);
    check_op_counts(definition, example_a);
    /* Outputs: dx [N, H], dw [H], db [H], all bf16 after the final casts. */
    ck_assert_int_eq(output_value(definition, 0)->rank, 2);
    ck_assert_int_eq(output_value(definition, 1)->rank, 1);
    ck_assert_int_eq(output_value(definition, 2)->rank, 1);
    for (int o = 0; o < 3; o++)
        ck_assert_int_eq(output_value(definition, o)->dtype, FV_BF16);
    ck_assert(fv_ir_dims_same_extent(fusion, output_value(definition, 0)->dims[1],
                                     output_value(definition, 1)->dims[0]));
    ck_assert_int_eq(fv_ir_half_dtype(fusion), FV_BF16);
    /* The inputs list. */
    ck_assert(definition->has_inputs);
    ck_assert_int_eq(definition->extents[0][0], 16384);
    ck_assert_int_eq(definition->extents[0][1], 2048);
    ck_assert_int_eq(definition->extents[3][1], 1);
    check_distribution(&definition->distributions[3], "uniform(0.5,1.5)");
    check_distribution(&definition->distributions[0], "normal(0,1)");
    fv_case *c;
    FV_ASSERT_OK(fv_frontend_case_from_inputs(definition, &c));
    ck_assert_str_eq(c->id, "layer_norm_bwd/bf16/16384x2048/s0");
    ck_assert_str_eq(c->family, "layer_norm_bwd");
    ck_assert_str_eq(c->source_path, "cases/layer_norm_bwd.py");
    ck_assert_int_eq(c->source_line, 0);
    ck_assert_int_eq(fv_case_numel(c, fusion->inputs[4]), 2048);
    ck_assert_int_eq(fv_case_numel(c, fusion->outputs[0]), 16384 * 2048);
    fv_case_free(c);
    fv_frontend_definition_free(definition);
}
END_TEST

START_TEST(test_example_b)
{
    fv_definition *definition = parse_ok("cases/rms_norm_bwd.py", example_b);
    const fv_fusion *fusion = definition->fusion;
    ck_assert_str_eq(fusion->name, "nvfuser_fusion_id1");
    ck_assert_int_eq(fusion->input_count, 4);
    ck_assert_int_eq(fusion->output_count, 2);
    int32_t n = input_root(definition, 0, 0), h = input_root(definition, 0, 1);
    ck_assert_int_ne(n, h);
    ck_assert_int_eq(input_root(definition, 1, 0), n);
    ck_assert_int_eq(input_root(definition, 2, 0), n);
    ck_assert_int_eq(input_root(definition, 2, 1), h);
    ck_assert_int_eq(input_root(definition, 3, 0), h);
    check_op_counts(definition, example_b);
    ck_assert_str_eq(input_value(definition, 0)->name, "T4");
    ck_assert_str_eq(input_value(definition, 3)->name, "T7");
    ck_assert_int_eq(output_value(definition, 0)->dtype, FV_BF16);
    ck_assert_int_eq(output_value(definition, 1)->rank, 1);
    /* The S0 literal 2.0 is a Double constant shared by three ops. */
    int uses = 0;
    for (int32_t o = 0; o < fusion->op_count; o++)
        for (int i = 0; i < fusion->ops[o].input_count; i++) {
            const fv_value *operand = &fusion->values[fusion->ops[o].inputs[i]];
            uses += strcmp(operand->name, "S0") == 0 && operand->origin == FV_SCALAR_CONSTANT &&
                    operand->constant == 2.0 && operand->dtype == FV_F64;
        }
    ck_assert_int_eq(uses, 3);
    /* No inputs list: not a case by itself. */
    ck_assert(!definition->has_inputs);
    fv_case *c = NULL;
    ck_assert_int_eq(fv_frontend_case_from_inputs(definition, &c), FV_ERR_INPUT);
    ck_assert_ptr_null(c);
    ck_assert_ptr_nonnull(strstr(fv_error_message(), "cases/rms_norm_bwd.py:1:1: "));
    fv_frontend_definition_free(definition);
}
END_TEST

START_TEST(test_thunder_concrete)
{
    fv_definition *definition = parse_ok("cases/thunder_ln_bwd.py", thunder_ln_bwd);
    const fv_fusion *fusion = definition->fusion;
    ck_assert_str_eq(fusion->name, "nvfuser_fusion_id2");
    ck_assert_int_eq(fusion->symbol_count, 0);
    ck_assert_int_eq(fusion->input_count, 5);
    ck_assert_int_eq(fusion->output_count, 3);
    ck_assert_int_eq(input_value(definition, 0)->dims[0].extent, 16384);
    ck_assert_int_eq(input_value(definition, 0)->dims[1].extent, 2048);
    ck_assert_int_eq(input_value(definition, 0)->stride_order[0], 1);
    ck_assert_int_eq(input_value(definition, 0)->stride_order[1], 0);
    ck_assert(input_value(definition, 2)->dims[1].broadcast);
    ck_assert_int_eq(fusion->output_stride_order[0][0], 1);
    ck_assert_int_eq(fusion->output_stride_order[0][1], 0);
    ck_assert_int_eq(fusion->output_stride_order[1][0], -1);
    check_op_counts(definition, thunder_ln_bwd);
    ck_assert_int_eq(count_ops(fusion, FV_OP_SUM), 5);
    bool found_literal = false;
    for (int32_t v = 0; v < fusion->value_count; v++)
        found_literal = found_literal || (fusion->values[v].origin == FV_SCALAR_CONSTANT &&
                                          fusion->values[v].kind == FV_VALUE_SCALAR &&
                                          fusion->values[v].constant == 0.000488281);
    ck_assert(found_literal);
    check_distribution(&definition->distributions[4], "uniform(-1,1)");
    fv_case *c;
    FV_ASSERT_OK(fv_frontend_case_from_inputs(definition, &c));
    ck_assert_str_eq(c->id, "thunder_ln_bwd/bf16/16384x2048/s0");
    fv_case_free(c);
    fv_frontend_definition_free(definition);
}
END_TEST

/* Old repro style: statements directly in the with block; a def with
 * another parameter name; a lone def without a with block. */
START_TEST(test_definition_styles)
{
    static const char with_block[] =
        "from nvfuser import FusionDefinition, DataType\n"
        "with FusionDefinition() as fd:\n"
        "    T0 = fd.define_tensor(shape=[-1], contiguity=[True], dtype=DataType.Half)\n"
        "    T1 = fd.ops.cast(T0, dtype=DataType.Float)\n"
        "    T2 = fd.ops.mul(T1, 2)\n"
        "    fd.add_output(T2)\n";
    fv_definition *definition = parse_ok("cases/old.py", with_block);
    ck_assert_int_eq(definition->fusion->input_count, 1);
    ck_assert_int_eq(definition->fusion->output_count, 1);
    ck_assert_int_eq(output_value(definition, 0)->dtype, FV_F32);
    fv_frontend_definition_free(definition);

    static const char other_parameter[] =
        "def my_norm(fusion : FusionDefinition) -> None :\n"
        "    x = fusion.define_tensor(shape=[4, 8], dtype=DataType.Float)\n"
        "    fusion.add_output(fusion.ops.neg(x))\n";
    definition = parse_ok("cases/lone.py", other_parameter);
    ck_assert_str_eq(definition->fusion->name, "my_norm");
    ck_assert_str_eq(input_value(definition, 0)->name, "x");
    ck_assert_int_eq(count_ops(definition->fusion, FV_OP_NEG), 1);
    fv_frontend_definition_free(definition);
}
END_TEST

/* ---------------------------------------------------------- round trip */

static void check_print_round_trip(const char *source)
{
    fv_definition *definition = parse_ok("cases/original.py", source);
    fv_text printed = {0};
    FV_ASSERT_OK(fv_ir_print(definition->fusion, &printed));
    fv_definition *again = parse_ok("cases/printed.py", fv_text_str(&printed));
    char original_hash[65], printed_hash[65];
    hash_of(definition->fusion, original_hash);
    hash_of(again->fusion, printed_hash);
    ck_assert_str_eq(original_hash, printed_hash);
    ck_assert_int_eq(again->fusion->input_count, definition->fusion->input_count);
    ck_assert_int_eq(again->fusion->output_count, definition->fusion->output_count);
    fv_text_free(&printed);
    fv_frontend_definition_free(again);
    fv_frontend_definition_free(definition);
}

START_TEST(test_print_round_trip)
{
    check_print_round_trip(example_a);
    check_print_round_trip(example_b);
    check_print_round_trip(thunder_ln_bwd);
    check_print_round_trip(distributions_source);
}
END_TEST

START_TEST(test_hash_invariance)
{
    char original[65], variant[65];
    hash_of_source(example_a, original);
    char *renamed = rename_variables(example_a);
    ck_assert_ptr_null(strstr(renamed, " T14 "));
    hash_of_source(renamed, variant);
    ck_assert_str_eq(original, variant);
    /* T28 (a sum of dy) and T30 do not depend on each other. */
    char *reordered = swap_lines(example_a, "    T28 = fd.ops.sum(T1", "    T30 = fd.ops.mul(T1");
    hash_of_source(reordered, variant);
    ck_assert_str_eq(original, variant);
    char *both = swap_lines(renamed, "    value_28_t = fd.ops.sum", "    value_30_t = fd.ops.mul");
    hash_of_source(both, variant);
    ck_assert_str_eq(original, variant);
    free(both);
    free(reordered);
    free(renamed);
}
END_TEST

START_TEST(test_hash_changes)
{
    static const char *const changes[][2] = {
        {"T41 = fd.ops.neg(T34)", "T41 = fd.ops.abs(T34)"},                       /* op */
        {"T28 = fd.ops.cast(T28, dtype=DataType.BFloat16)",
         "T28 = fd.ops.cast(T28, dtype=DataType.Half)"},                           /* dtype */
        {"fd.define_scalar(3.00000,", "fd.define_scalar(3.00001,"},                 /* constant */
        {"T14 = fd.ops.sub(T0, T13)", "T14 = fd.ops.sub(T13, T0)"},               /* operands */
        {"    fd.add_output(T32)\n", ""},                                           /* outputs */
    };
    char original[65], variant[65];
    hash_of_source(example_a, original);
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        ck_assert_int_eq(fv_test_count_occurrences(example_a, changes[i][0]), 1);
        char *changed = replace_all(example_a, changes[i][0], changes[i][1]);
        hash_of_source(changed, variant);
        ck_assert_msg(strcmp(original, variant) != 0, "change %zu kept the hash", i);
        free(changed);
    }
    /* One extent of a concrete definition (and of its inputs list). */
    hash_of_source(thunder_ln_bwd, original);
    char *changed = replace_all(thunder_ln_bwd, "2048", "1024");
    hash_of_source(changed, variant);
    ck_assert_str_ne(original, variant);
    free(changed);
}
END_TEST

/* ----------------------------------------------------------- inputs */

START_TEST(test_inputs_distributions)
{
    fv_definition *definition = parse_ok("cases/dist.py", distributions_source);
    static const char *const expected[] = {
        "normal(1,2)",     "uniform(0.5,1.5)", "uniform(-2,3)",   "constant(1)",
        "constant(0)",     "constant(2.5)",    "normal(0.75,0.25)", "uniform(-2,0)",
        "uniform(-9,9)",
    };
    for (int k = 0; k < 9; k++)
        check_distribution(&definition->distributions[k], expected[k]);
    ck_assert(definition->scalar_values[9] == 1e-5);
    ck_assert_int_eq(definition->extents[8][1], 16);
    fv_case *c;
    FV_ASSERT_OK(fv_frontend_case_from_inputs(definition, &c));
    ck_assert_str_eq(c->id, "dist/fp32/8x16/s0");
    ck_assert_int_eq(c->dtype, FV_F32);
    ck_assert_int_eq(c->seed, 0);
    ck_assert(c->scalar_inputs[9] == 1e-5);
    check_distribution(&c->distributions[6], "normal(0.75,0.25)");
    int64_t extents[FV_MAX_RANK];
    ck_assert_int_eq(fv_case_shape(c, definition->fusion->outputs[0], extents), 2);
    ck_assert_int_eq(extents[0], 8);
    ck_assert_int_eq(extents[1], 16);
    fv_case_free(c);
    fv_frontend_definition_free(definition);
}
END_TEST

/* ------------------------------------------------------------- errors */

typedef struct error_case {
    const char *source;
    size_t size;
    const char *location; /* "line:column" */
    const char *text;     /* a part of the message naming the construct */
} error_case;

#define ERROR_CASE(source, location, text) {source, sizeof(source) - 1, location, text}

#define HEAD "from nvfuser import FusionDefinition, DataType\n" \
             "def f(fd : FusionDefinition) -> None :\n"
#define T0_LINE "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], " \
                "dtype=DataType.Float, is_cpu=False)\n"
#define TAIL "    fd.add_output(T1)\nwith FusionDefinition() as fd:\n    f(fd)\n"
#define DEFINE(statements) HEAD T0_LINE statements TAIL
#define HARNESS "with FusionDefinition() as fd:\n    f(fd)\n"

/* Definitions for the inputs-list errors: lines 1-8, the list on line 9. */
#define INPUTS_HEAD "import torch\nfrom nvfuser import FusionDefinition, DataType\n" \
    "def f(fd : FusionDefinition) -> None :\n" \
    "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n" \
    "    T1 = fd.define_tensor(shape=[-1, 4], contiguity=[True, True], dtype=DataType.Float)\n" \
    "    fd.add_output(fd.ops.add(T0, T1))\n" HARNESS

static const error_case definition_errors[] = {
    ERROR_CASE(DEFINE("    T1 = fd.ops.slice(T0, [0, 0], [1, 1])\n"), "4:10",
               "unsupported operation fd.ops.slice"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.add(T0, T99)\n"), "4:25", "name 'T99' is not defined"),
    ERROR_CASE(HEAD "    T1 = fd.define_tensor(shap=[-1], dtype=DataType.Float)\n" TAIL, "3:27",
               "define_tensor: unknown keyword argument 'shap'"),
    ERROR_CASE("def g(fd : FusionDefinition) -> None\n", "1:37",
               "expected ':' but found newline"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.add(T0, T0\n"), "5:5",
               "expected ',' or ')' but found name 'fd'"),
    ERROR_CASE(HEAD T0_LINE "    T1 = fd.ops.add(T0, T0", "4:27",
               "expected ',' or ')' but found end of file"),
    ERROR_CASE(DEFINE("      T1 = fd.ops.neg(T0)\n"), "4:7", "unexpected indent"),
    ERROR_CASE(DEFINE("  T1 = fd.ops.neg(T0)\n"), "4:3",
               "unindent does not match any outer indentation level"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.neg(T0)\0\n"), "4:24", "unexpected NUL byte"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.neg(T0) \xc3\xa9\n"), "4:25", "unexpected byte 0xc3"),
    ERROR_CASE(DEFINE("    x = 'abc\n"), "4:9", "unterminated string"),
    ERROR_CASE(DEFINE("    S1 = fd.define_scalar(99999999999999999999, dtype=DataType.Int)\n"),
               "4:27", "integer 99999999999999999999 is too large"),
    ERROR_CASE(DEFINE("    S1 = fd.define_scalar(1e999)\n"), "4:27",
               "number 1e999 is out of range"),
    ERROR_CASE(DEFINE("    S1 = fd.define_scalar(1abc)\n"), "4:27", "invalid number literal"),
    ERROR_CASE("import numpy\n" DEFINE(""), "1:8", "unsupported import 'numpy'"),
    ERROR_CASE("from numpy import array\n" DEFINE(""), "1:6", "unsupported import 'numpy'"),
    ERROR_CASE("import torch as t\n" DEFINE(""), "1:14", "import aliases ('as')"),
    ERROR_CASE(HEAD "    T1 = fd.define_tensor(shape=[2], dtype=DataType.Float, is_cpu=True)\n"
               TAIL,
               "3:67", "define_tensor: is_cpu=True"),
    ERROR_CASE(HEAD T0_LINE "    T1 = fd.ops.neg(T0)\n"
               "    fd.add_output(T1, alias_input=T0)\n" HARNESS,
               "5:35", "add_output: alias_input"),
    ERROR_CASE(DEFINE("    for i in range(3):\n"), "4:5", "unsupported statement 'for'"),
    ERROR_CASE(DEFINE("    T1 = T0[0]\n"), "4:12", "subscripts ('[') are not supported"),
    ERROR_CASE(DEFINE("    T1 = T0 + T0\n"), "4:10",
               "operator '+' is not supported here (use fd.ops.add)"),
    ERROR_CASE(DEFINE("    T5 = fd.define_tensor(shape=[-1], contiguity=[True], "
                      "dtype=DataType.Float)\n"
                      "    T1 = fd.ops.add(T0, T5)\n"),
               "5:10", "add operands have ranks 2 and 1"),
    ERROR_CASE(HEAD "    T1 = fd.define_tensor(shape=[2], dtype=DataType.ComplexFloat)\n" TAIL,
               "3:44", "unsupported dtype DataType.ComplexFloat"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.var_mean(T0, dims=[1])\n"), "4:5",
               "var_mean returns two tensors"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.cast(T0)\n"), "4:10", "cast: missing argument 'dtype'"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.neg(T0, T0)\n"), "4:25",
               "neg: too many positional arguments"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.cast(T0, dtype=DataType.Half, dtype=DataType.Float)\n"),
               "4:47", "cast: argument 'dtype' given twice"),
    ERROR_CASE(DEFINE("    T1 = T2 = T0\n"), "4:13", "chained assignment"),
    ERROR_CASE(HEAD T0_LINE "    T1 = fd.ops.neg(T0)\n" HARNESS, "5:28",
               "the fusion has no outputs"),
    ERROR_CASE("import torch\n", "1:1", "no fusion definition found"),
    ERROR_CASE(HEAD T0_LINE "    fd.add_output(T0)\n" HARNESS "print(1)\n", "7:1",
               "unsupported call print(...) at module level"),
    ERROR_CASE(DEFINE("    T1 = ((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
                      "((((((((T0))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))"
                      "))))))))))\n"),
               "4:74", "brackets nested too deeply"),
    ERROR_CASE(DEFINE("    T1 = lambda: T0\n"), "4:10", "unsupported syntax 'lambda'"),
    ERROR_CASE(HEAD "    T1 = fd.define_tensor(shape=[-1, -1], contiguity=[True, None], "
                    "dtype=DataType.Float)\n" TAIL,
               "3:61", "contiguity[1] is None"),
    ERROR_CASE(HEAD "    T0 = fd.define_tensor(shape=[4, 4], dtype=DataType.Float)\n"
                    "    T1 = fd.ops.reshape(T0, new_shape=[3, 5])\n" TAIL,
               "4:10", "reshape: 16 elements cannot become 15"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.broadcast_in_dim(T0, shape=[4, 8, 2], "
                      "broadcast_dims=[0])\n"),
               "4:70", "broadcast_dims has 1 entries for a rank-2 tensor"),
    ERROR_CASE(HEAD T0_LINE "    T1 = fd.ops.neg(T0)\n    fd.add_output(T1, stride_order=[0, 0])\n"
               HARNESS, "5:36", "stride_order must be a permutation"),
    ERROR_CASE(DEFINE("    aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 1\n"),
               "4:5",
               "name is too long"),
    ERROR_CASE(DEFINE("    S1 = fd.define_scalar(T0)\n"), "4:27",
               "define_scalar: the value must be a number literal"),
    ERROR_CASE(DEFINE("    S1 = fd.define_scalar(0.5, dtype=DataType.Int)\n"), "4:27",
               "0.5 is not a value of DataType.Int"),
    ERROR_CASE(HEAD "    T1 = fd.define_tensor(shape=[0, 4], dtype=DataType.Float)\n" TAIL, "3:34",
               "define_tensor: extent 0 is not supported"),
    ERROR_CASE(HEAD "    T1 = fd.define_tensor(shape=[2, 2, 2, 2, 2], dtype=DataType.Float)\n" TAIL,
               "3:33", "tensors of rank 5 are not supported"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.sum(T0, dims=[5])\n"), "4:10",
               "sum: dim 5 is out of range for a rank-2 tensor"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.squeeze(T0, dims=[0])\n"), "4:10",
               "squeeze: dimension 0 is not a broadcast"),
    ERROR_CASE("with open('x') as fd:\n    pass\n", "1:6", "unsupported with statement"),
    ERROR_CASE("def f(fd, x):\n    pass\n", "1:5", "exactly one parameter"),
    ERROR_CASE("from nvfuser import FusionDefinition, DataType\n"
               "with FusionDefinition() as fd:\n"
               "    T0 = fd.define_tensor(shape=[2], dtype=DataType.Float)\n"
               "    fd.add_output(T0)\n"
               "with FusionDefinition() as fd:\n    pass\n",
               "5:28", "a second FusionDefinition"),
    ERROR_CASE(DEFINE("    T1 = fd.ops.sum(T0, dims=[1], keepdim=1)\n"), "4:43",
               "sum: keepdim must be True or False"),
    /* The inputs list. */
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4)]\n", "9:10",
               "inputs has 1 entries, but the definition has 2 inputs"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4), torch.randn(2, 4), 1.0]\n", "9:49",
               "inputs[2]: the definition has only 2 inputs"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4, 1), torch.randn(2, 4)]\n", "9:11",
               "inputs[0]: a rank-3 tensor for T0, which has rank 2"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4, dtype=torch.float16), torch.randn(2, 4)]\n",
               "9:11", "inputs[0]: dtype fp16 for T0, which is fp32"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4), torch.randn(2, 5)]\n", "9:30",
               "inputs[1]: dim 1 of T1 has the extent 4 in the definition, not 5"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4), torch.randn(3, 4)]\n", "9:30",
               "inputs[1]: conflicting sizes"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4, device='cpu'), torch.randn(2, 4)]\n",
               "9:36", "device 'cpu' is not supported"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.arange(8), torch.randn(2, 4)]\n", "9:11",
               "unsupported input expression torch.arange(...)"),
    ERROR_CASE(INPUTS_HEAD "inputs = [1.0, torch.randn(2, 4)]\n", "9:11",
               "inputs[0]: a number for tensor input T0"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4) * torch.randn(2, 4), torch.randn(2, 4)]\n",
               "9:11", "arithmetic between two tensors"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(2, 4, generator=g), torch.randn(2, 4)]\n", "9:29",
               "torch.randn: unknown keyword argument 'generator'"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.randn(0, 4), torch.randn(2, 4)]\n", "9:23",
               "torch.randn: size 0 is not supported"),
    ERROR_CASE(INPUTS_HEAD "inputs = [torch.rand(2, 4) / 0, torch.randn(2, 4)]\n", "9:11",
               "division by zero"),
};

/* Checks that `message` is exactly "path:location: ..." and names `text`. */
static void check_located_message(const char *message, const char *path, const char *location,
                                  const char *text)
{
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%s: ", path, location);
    ck_assert_msg(strncmp(message, prefix, strlen(prefix)) == 0, "expected '%s...', got '%s'",
                  prefix, message);
    ck_assert_msg(strstr(message, text) != NULL, "expected '%s' in '%s'", text, message);
}

START_TEST(test_definition_error)
{
    const error_case *entry = &definition_errors[_i];
    fv_definition *definition = NULL;
    fv_status status =
        fv_frontend_parse_definition("cases/bad.py", entry->source, entry->size, &definition);
    ck_assert_msg(status == FV_ERR_INPUT || status == FV_ERR_UNSUPPORTED,
                  "entry %d: status %s (%s)", _i, fv_status_name(status), fv_error_message());
    ck_assert_ptr_null(definition);
    check_located_message(fv_error_message(), "cases/bad.py", entry->location, entry->text);
}
END_TEST

/* Sweep errors; definitions ln.py (Example A), fp32.py and broken.py sit
 * next to the sweep. */
static const error_case sweep_errors[] = {
    ERROR_CASE("definition ln.py\nsizez N=1\n", "2:1", "unknown sweep keyword 'sizez'"),
    ERROR_CASE("definition ln.py\ndistribution T3 uniform(2,1)\n", "2:17",
               "invalid distribution 'uniform(2,1)'"),
    ERROR_CASE("definition ln.py\ndim N = T0.0\ndim M = T1.0\ndim H = T0.1\nsizes N=8 M=16 H=4\n",
               "5:11", "conflicting sizes"),
    ERROR_CASE("definition ln.py\ndim N = T0.0\nsizes N=8\n", "3:1",
               "the extent of T0 dim 1 is not bound"),
    ERROR_CASE("definition ln.py\ndim N = T9.0\n", "2:9", "unknown input 'T9'"),
    ERROR_CASE("definition fp32.py\nscalar S2 1\ndtypes fp32 bf16\n", "3:13",
               "uses no half-precision dtype"),
    ERROR_CASE("dim N = T0.0\n", "1:1", "the sweep has no 'definition' line"),
    ERROR_CASE("definition nothere.py\n", "1:12", "cannot open the file"),
    ERROR_CASE("definition ln.py\ndim N = T0.0\nsizes Q=4\n", "3:7", "unknown dim 'Q'"),
    ERROR_CASE("definition ln.py\ndim B = T3.1\n", "2:9", "broadcast dimension"),
    ERROR_CASE("definition ln.py\nseeds 1 -1\n", "2:9", "'-1' is not a seed"),
    ERROR_CASE("definition ln.py\ndefinition ln.py\n", "2:1", "a second 'definition' line"),
    ERROR_CASE("definition ln.py\ndim N = #7.0\n", "2:9", "input #7 does not exist"),
    ERROR_CASE("definition ln.py\ndim N = T0.0\nsizes N=4,0\n", "3:11", "'0' is not an extent"),
    ERROR_CASE("definition fp32.py\ndim N = T0.0\n", "1:12", "scalar input S2 has no value"),
    ERROR_CASE("definition ln.py\nseeds 0\0\n", "2:8", "unexpected NUL byte"),
    ERROR_CASE("definition ln.py\ndtypes bf17\n", "2:8", "unknown dtype 'bf17'"),
    ERROR_CASE("definition broken.py\n", "1:12",
               "broken.py:3:1: expected an expression but found end of file"),
    ERROR_CASE("definition ln.py\ndim N T0.0\n", "2:7", "expected '=' but found 'T'"),
    ERROR_CASE("definition ln.py\nname ln extra\n", "2:9", "unexpected 'extra'"),
    ERROR_CASE("definition ln.py\ndim N = T0.0\nsizes N=abc\n", "3:9", "'abc' is not an extent"),
    ERROR_CASE("definition ln.py\ndtypes i64\n", "2:8", "dtype 'i64' cannot be swept"),
    ERROR_CASE("definition ln.py\ndistribution T0 uniform(0,1)\ndistribution T0 normal(0,1)\n",
               "3:14", "input 'T0' already has a distribution line"),
    ERROR_CASE("definition ln.py\ndim N = T0.0\ndim H = T0.1\nseeds 0 1 2 3 4 5 6 7 8 9\n"
               "dtypes bf16 fp16 fp32\n"
               "sizes N=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,"
               "29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,"
               "56,57,58,59,60,61,62,63,64 "
               "H=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,"
               "31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,"
               "58,59,60,61,62,63,64\n",
               "6:1", "expands to more than 100000 cases"),
};

static const char fp32_definition[] =
    "from nvfuser import FusionDefinition, DataType\n"
    "def f(fd : FusionDefinition) -> None :\n"
    "    T0 = fd.define_tensor(shape=[-1, -1], dtype=DataType.Float)\n"
    "    T1 = fd.define_tensor(shape=[-1, 1], contiguity=[True, None], dtype=DataType.Float)\n"
    "    S2 = fd.define_scalar(dtype=DataType.Double)\n"
    "    T3 = fd.ops.mul(fd.ops.add(T0, T1), S2)\n"
    "    fd.add_output(T3)\n";

static void write_scratch(const char *name, const char *text)
{
    ck_assert_int_eq(fv_test_write_file(fv_test_path(name), text), 0);
}

static void write_scratch_bytes(const char *name, const char *bytes, size_t size)
{
    FILE *file = fopen(fv_test_path(name), "wb");
    ck_assert_ptr_nonnull(file);
    ck_assert_uint_eq(fwrite(bytes, 1, size, file), size);
    ck_assert_int_eq(fclose(file), 0);
}

static void write_sweep_definitions(void)
{
    write_scratch("ln.py", example_a);
    write_scratch("fp32.py", fp32_definition);
    write_scratch("broken.py", "def f(fd):\n    T0 = fd.ops.add(\n");
}

START_TEST(test_sweep_error)
{
    const error_case *entry = &sweep_errors[_i];
    write_sweep_definitions();
    write_scratch_bytes("e.sweep", entry->source, entry->size);
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("e.sweep"));
    fv_case_list list = {0};
    fv_status status = fv_frontend_expand_sweep(path, &list, NULL, 0);
    ck_assert_msg(status == FV_ERR_INPUT || status == FV_ERR_UNSUPPORTED,
                  "entry %d: status %s (%s)", _i, fv_status_name(status), fv_error_message());
    ck_assert_int_eq(list.count, 0);
    check_located_message(fv_error_message(), path, entry->location, entry->text);
    fv_case_list_free(&list);
}
END_TEST

/* ------------------------------------------------------------- sweeps */

static const char layer_norm_sweep[] =
    "# cases/layer_norm_bwd.sweep\n"
    "definition ln.py          # relative to the sweep file\n"
    "name layer_norm_bwd\n"
    "dim N = T0.0\n"
    "dim H = #0.1\n"
    "dtypes bf16 fp16 fp32\n"
    "seeds 0 1\n"
    "distribution T3 uniform(0.5,1.5)\n"
    "sizes N=2048,16384 H=1024,2048,3072\n"
    "sizes N=216,2049 H=1024,4096\n";

static const fv_case *find_case(const fv_case_list *list, const char *id)
{
    for (int32_t i = 0; i < list->count; i++)
        if (strcmp(list->cases[i]->id, id) == 0)
            return list->cases[i];
    return NULL;
}

START_TEST(test_sweep_expansion)
{
    write_sweep_definitions();
    write_scratch("ln.sweep", layer_norm_sweep);
    char path[1024], named[512];
    snprintf(path, sizeof path, "%s", fv_test_path("ln.sweep"));
    fv_case_list list = {0};
    FV_ASSERT_OK(fv_frontend_expand_sweep(path, &list, named, sizeof named));
    ck_assert_str_eq(named, fv_test_path("ln.py"));
    /* (2*3 + 2*2) shapes x 3 dtypes x 2 seeds */
    ck_assert_int_eq(list.count, (2 * 3 + 2 * 2) * 3 * 2);
    for (int32_t i = 0; i < list.count; i++)
        for (int32_t j = i + 1; j < list.count; j++)
            ck_assert_str_ne(list.cases[i]->id, list.cases[j]->id);
    ck_assert_str_eq(list.cases[0]->id, "layer_norm_bwd/bf16/2048x1024/s0");
    const fv_case *c = find_case(&list, "layer_norm_bwd/fp16/16384x3072/s1");
    ck_assert_ptr_nonnull(c);
    ck_assert_str_eq(c->family, "layer_norm_bwd");
    ck_assert_str_eq(c->source_path, path);
    ck_assert_int_eq(c->source_line, 9);
    ck_assert_int_eq(c->seed, 1);
    ck_assert_int_eq(c->dtype, FV_F16);
    check_distribution(&c->distributions[3], "uniform(0.5,1.5)");
    check_distribution(&c->distributions[0], "normal(0,1)");
    const fv_fusion *fusion = c->fusion;
    ck_assert_int_eq(fusion->values[fusion->inputs[0]].dtype, FV_F16);
    ck_assert_int_eq(fusion->values[fusion->inputs[2]].dtype, FV_F32);
    ck_assert_int_eq(fusion->values[fusion->outputs[0]].dtype, FV_F16);
    ck_assert_int_eq(fv_ir_half_dtype(fusion), FV_F16);
    /* H is bound through T0 dim 1 and reaches w (T4) by unification. */
    ck_assert_int_eq(fv_case_numel(c, fusion->inputs[4]), 3072);
    ck_assert_int_eq(fv_case_numel(c, fusion->inputs[3]), 16384);
    FV_ASSERT_OK(fv_case_check_bound(c));
    /* fp32 cases carry no half dtype at all; bf16 ones keep the original. */
    c = find_case(&list, "layer_norm_bwd/fp32/2049x4096/s0");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->source_line, 10);
    for (int32_t v = 0; v < c->fusion->value_count; v++)
        ck_assert(!fv_dtype_is_half(c->fusion->values[v].dtype));
    c = find_case(&list, "layer_norm_bwd/bf16/216x4096/s1");
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->fusion->values[c->fusion->inputs[0]].dtype, FV_BF16);
    fv_case_list_free(&list);
    ck_assert_int_eq(list.count, 0);
}
END_TEST

/* Defaults: family from the file stem, the definition's own dtype, seed 0,
 * sizes and distributions from its inputs list; scalar lines. */
START_TEST(test_sweep_defaults)
{
    write_sweep_definitions();
    write_scratch("plain.sweep", "definition ln.py\n");
    fv_case_list list = {0};
    FV_ASSERT_OK(fv_frontend_expand_sweep(fv_test_path("plain.sweep"), &list, NULL, 0));
    ck_assert_int_eq(list.count, 1);
    ck_assert_str_eq(list.cases[0]->id, "plain/bf16/16384x2048/s0");
    check_distribution(&list.cases[0]->distributions[3], "uniform(0.5,1.5)");
    fv_case_list_free(&list);

    write_scratch("scalar.sweep", "definition fp32.py\ndim N = T0.0\ndim H = T0.1\n"
                                  "scalar S2 0.25\ndtypes fp32\nsizes N=3 H=5,7\n");
    FV_ASSERT_OK(fv_frontend_expand_sweep(fv_test_path("scalar.sweep"), &list, NULL, 0));
    ck_assert_int_eq(list.count, 2);
    ck_assert_str_eq(list.cases[1]->id, "scalar/fp32/3x7/s0");
    ck_assert(list.cases[1]->scalar_inputs[2] == 0.25);
    ck_assert_int_eq(fv_case_numel(list.cases[1], list.cases[1]->fusion->inputs[1]), 3);
    fv_case_list_free(&list);
}
END_TEST

/* ---------------------------------------------------------- collection */

static void make_scratch_directory(const char *name)
{
    ck_assert_int_eq(mkdir(fv_test_path(name), 0777), 0);
}

static bool ends_with(const char *text, const char *suffix)
{
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

static const char with_block_case[] =
    "import torch\nfrom nvfuser import FusionDefinition, DataType\n"
    "with FusionDefinition() as fd:\n"
    "    T0 = fd.define_tensor(shape=[-1, -1], contiguity=[True, True], dtype=DataType.Float)\n"
    "    fd.add_output(fd.ops.neg(T0))\n"
    "inputs = [torch.randn(3, 5, device='cuda')]\n"
    "fd.execute(inputs)\n";

START_TEST(test_collect_directory)
{
    make_scratch_directory("coll");
    make_scratch_directory("coll/sub");
    write_scratch("coll/a_good.py", with_block_case);
    write_scratch("coll/b_broken.py", DEFINE("    T1 = fd.ops.nonsense(T0)\n"));
    write_scratch("coll/c_def.py", example_b);
    write_scratch("coll/sub/d.sweep", "definition ../c_def.py\nname rms\ndim N = T4.0\n"
                                      "dim H = T4.1\ndtypes bf16 fp32\nsizes N=64 H=128\n");
    write_scratch("coll/.hidden.py", "this is not python");
    write_scratch("coll/notes.txt", "ignored");
    char directory[1024];
    snprintf(directory, sizeof directory, "%s", fv_test_path("coll"));
    const char *paths[] = {directory};
    fv_case_list list = {0};
    FV_ASSERT_OK(fv_frontend_collect(paths, 1, &list));
    ck_assert_int_eq(list.count, 3);
    ck_assert_str_eq(list.cases[0]->id, "a_good/fp32/3x5/s0");
    ck_assert_str_eq(list.cases[1]->id, "rms/bf16/64x128/s0");
    ck_assert_str_eq(list.cases[2]->id, "rms/fp32/64x128/s0");
    ck_assert(ends_with(list.cases[1]->source_path, "coll/sub/d.sweep"));
    ck_assert_int_eq(list.error_count, 1);
    const fv_case_error *error = &list.errors[0];
    ck_assert(ends_with(error->path, "coll/b_broken.py"));
    ck_assert_str_eq(error->family, "b_broken");
    ck_assert_int_eq(error->status, FV_ERR_UNSUPPORTED);
    check_located_message(error->message, error->path, "4:10", "fd.ops.nonsense");
    /* Named explicitly, a definition always runs: c_def.py has no inputs. */
    char explicit_path[1024];
    snprintf(explicit_path, sizeof explicit_path, "%s", fv_test_path("coll/c_def.py"));
    const char *explicit_paths[] = {explicit_path};
    FV_ASSERT_OK(fv_frontend_collect(explicit_paths, 1, &list));
    ck_assert_int_eq(list.count, 3);
    ck_assert_int_eq(list.error_count, 2);
    check_located_message(list.errors[1].message, explicit_path, "1:1", "no `inputs = [...]`");
    /* A missing top-level path fails the call and adds nothing. */
    char missing[1024];
    snprintf(missing, sizeof missing, "%s", fv_test_path("coll/missing"));
    const char *missing_paths[] = {directory, missing};
    ck_assert_int_eq(fv_frontend_collect(missing_paths, 2, &list), FV_ERR_NOT_FOUND);
    ck_assert_int_eq(list.count, 3);
    ck_assert_int_eq(list.error_count, 2);
    fv_case_list_free(&list);
}
END_TEST

START_TEST(test_collect_duplicates)
{
    make_scratch_directory("dup");
    make_scratch_directory("dup/x1");
    make_scratch_directory("dup/x2");
    write_scratch("dup/x1/same.py", with_block_case);
    write_scratch("dup/x2/same.py", with_block_case);
    char directory[1024];
    snprintf(directory, sizeof directory, "%s", fv_test_path("dup"));
    const char *paths[] = {directory};
    fv_case_list list = {0};
    FV_ASSERT_OK(fv_frontend_collect(paths, 1, &list));
    ck_assert_int_eq(list.count, 1);
    ck_assert(ends_with(list.cases[0]->source_path, "x1/same.py"));
    ck_assert_int_eq(list.error_count, 1);
    ck_assert(ends_with(list.errors[0].path, "x2/same.py"));
    ck_assert_ptr_nonnull(strstr(list.errors[0].message, "duplicate case id 'same/fp32/3x5/s0'"));
    ck_assert_ptr_nonnull(strstr(list.errors[0].message, "x1/same.py"));
    fv_case_list_free(&list);
}
END_TEST

/* Counts .py and .sweep files under a directory (recursively). */
static int count_case_files(const char *directory)
{
    DIR *handle = opendir(directory);
    if (handle == NULL)
        return 0;
    int count = 0;
    for (struct dirent *entry = readdir(handle); entry != NULL; entry = readdir(handle)) {
        if (entry->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", directory, entry->d_name);
        struct stat info;
        if (stat(path, &info) == 0 && S_ISDIR(info.st_mode))
            count += count_case_files(path);
        else if (ends_with(entry->d_name, ".py") || ends_with(entry->d_name, ".sweep"))
            count++;
    }
    closedir(handle);
    return count;
}

START_TEST(test_cases_directory)
{
    char directory[1024];
    snprintf(directory, sizeof directory, "%s", fv_test_source_path("cases"));
    const char *paths[] = {directory};
    fv_case_list list = {0};
    struct stat info;
    if (stat(directory, &info) != 0) {
        printf("check_frontend: %s does not exist yet; nothing to check there\n", directory);
        ck_assert_int_eq(fv_frontend_collect(paths, 1, &list), FV_ERR_NOT_FOUND);
        return;
    }
    int files = count_case_files(directory);
    FV_ASSERT_OK(fv_frontend_collect(paths, 1, &list));
    for (int32_t i = 0; i < list.error_count; i++)
        printf("check_frontend: %s\n", list.errors[i].message);
    ck_assert_int_eq(list.error_count, 0);
    if (files == 0) {
        printf("check_frontend: %s has no .py or .sweep files yet; nothing to check there\n",
               directory);
        ck_assert_int_eq(list.count, 0);
    } else {
        printf("check_frontend: %d files under cases/ gave %d cases\n", files, (int)list.count);
        ck_assert_int_gt(list.count, 0);
    }
    fv_case_list_free(&list);
}
END_TEST

/* ------------------------------------------------------------- limits */

/* Parses `size` bytes that must be rejected with a located message. */
static void expect_rejected(const char *text, size_t size, const char *text_expected)
{
    fv_definition *definition = NULL;
    fv_status status = fv_frontend_parse_definition("limits.py", text, size, &definition);
    ck_assert_msg(status == FV_ERR_INPUT || status == FV_ERR_UNSUPPORTED, "status %s: %s",
                  fv_status_name(status), fv_error_message());
    ck_assert_ptr_null(definition);
    ck_assert_msg(strncmp(fv_error_message(), "limits.py:", 10) == 0, "%s", fv_error_message());
    if (text_expected != NULL)
        ck_assert_msg(strstr(fv_error_message(), text_expected) != NULL, "expected '%s' in '%s'",
                      text_expected, fv_error_message());
}

/* `prefix` + `count` copies of `repeated` + `suffix` (caller frees). */
static char *repeat(const char *prefix, const char *repeated, size_t count, const char *suffix,
                    size_t *size)
{
    size_t prefix_length = strlen(prefix), repeated_length = strlen(repeated);
    *size = prefix_length + repeated_length * count + strlen(suffix);
    char *text = malloc(*size + 1);
    ck_assert_ptr_nonnull(text);
    memcpy(text, prefix, prefix_length);
    for (size_t i = 0; i < count; i++)
        memcpy(text + prefix_length + i * repeated_length, repeated, repeated_length);
    strcpy(text + prefix_length + repeated_length * count, suffix);
    return text;
}

START_TEST(test_limits)
{
    size_t size;
    char *text = repeat("", " ", ((size_t)8 << 20) + 1, "", &size);
    expect_rejected(text, size, "larger than 8 MiB");
    free(text);
    struct {
        const char *prefix, *repeated, *suffix, *expected;
        size_t count;
    } cases[] = {
        {"x = ", "(", "1", "brackets nested too deeply", 100000},
        {"x = ", "[", "", "brackets nested too deeply", 100000},
        {"x = ", "-", "1", "nested too deeply", 100000},
        {"x = a", ".b", "\n", "nested too deeply", 100000},
        {"x = f", "()", "\n", "nested too deeply", 100000},
        {"x = 1", "+1", "\n", "nested too deeply", 100000},
        {"x = a", "a", "\n", "name is too long", 1 << 20},
        {"x = ", "1", "\n", "number literal is too long", 1 << 20},
        {"x = 0.", "0", "1\n", "number literal is too long", 1 << 20},
        {"def f(fd):\n", " ", "x\n", "2:1048577: name 'x' is not defined", 1 << 20},
        {"x = '", "a", "", "unterminated string", 1 << 20},
        {"\"\"\"", "\n", "", "unterminated string", 100000},
        {"", "# only comments\n\n", "", "no fusion definition found", 10000},
        {"", "", "", "no fusion definition found", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        text = repeat(cases[i].prefix, cases[i].repeated, cases[i].count, cases[i].suffix, &size);
        expect_rejected(text, size, cases[i].expected);
        free(text);
    }
    char zeros[1000] = {0};
    expect_rejected(zeros, sizeof zeros, "1:1: unexpected NUL byte");
    /* Deep indentation: nested defs, one space more each. */
    fv_text nested = {0};
    for (int level = 0; level < 200; level++)
        fv_text_printf(&nested, "%*sdef f%d(fd):\n", level, "", level);
    expect_rejected(fv_text_str(&nested), nested.length, "too deeply indented");
    fv_text_free(&nested);
    /* A long but valid definition reads quickly. */
    fv_text big = {0};
    fv_text_printf(&big, "def f(fd):\n"
                         "    T1 = fd.define_tensor(shape=[-1], dtype=DataType.Float)\n");
    for (int i = 0; i < 20000; i++)
        fv_text_printf(&big, "    T1 = fd.ops.neg(T1)  # %d\n", i);
    fv_text_printf(&big, "    fd.add_output(T1)\n");
    fv_definition *definition = parse_ok("big.py", fv_text_str(&big));
    ck_assert_int_eq(definition->fusion->op_count, 20000);
    fv_frontend_definition_free(definition);
    fv_text_free(&big);
    /* Reading: a missing file, a directory. */
    ck_assert_int_eq(fv_frontend_read_definition(fv_test_path("none.py"), &definition),
                     FV_ERR_NOT_FOUND);
    ck_assert_ptr_null(definition);
    const char *missing = fv_test_path("none.py");
    ck_assert(strncmp(fv_error_message(), missing, strlen(missing)) == 0);
    fv_status status = fv_frontend_read_definition(fv_test_scratch_dir(), &definition);
    ck_assert_int_eq(status, FV_ERR_IO);
}
END_TEST

/* --------------------------------------------------------------- fuzz */

/* xorshift64* (Vigna): small, deterministic, good enough for mutations. */
static uint64_t next_random(uint64_t *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

static size_t random_below(uint64_t *state, size_t bound)
{
    return bound == 0 ? 0 : (size_t)(next_random(state) % bound);
}

typedef struct seed_file {
    char name[256];
    char *text;
    size_t size;
    bool is_sweep;
} seed_file;

typedef struct corpus {
    seed_file files[64];
    int count;
} corpus;

static void load_seeds(corpus *seeds, const char *directory, bool sweeps_too)
{
    DIR *handle = opendir(directory);
    if (handle == NULL)
        return;
    char *names[64];
    int count = 0;
    for (struct dirent *entry = readdir(handle); entry != NULL && count < 64;
         entry = readdir(handle))
        if (ends_with(entry->d_name, ".py") || (sweeps_too && ends_with(entry->d_name, ".sweep")))
            names[count++] = strdup(entry->d_name);
    closedir(handle);
    for (int i = 1; i < count; i++) /* name order, for determinism */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *swap = names[j];
            names[j] = names[j - 1];
            names[j - 1] = swap;
        }
    for (int i = 0; i < count; i++) {
        if (seeds->count < 64) {
            seed_file *seed = &seeds->files[seeds->count];
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", directory, names[i]);
            seed->text = fv_test_read_file(path, &seed->size);
            if (seed->text != NULL) {
                snprintf(seed->name, sizeof seed->name, "%s", names[i]);
                seed->is_sweep = ends_with(names[i], ".sweep");
                seeds->count++;
            }
        }
        free(names[i]);
    }
}

static const char *const fuzz_tokens[] = {
    "(", ")", "[", "]", ",", "=", ":", ".", "fd.ops.", "None", "-1", "1e999", "0", "-",
    "True", "False", "T0", "DataType.Half", "DataType.Null", "\n", "\n    ", "    ", "\t", "\\\n",
    "'", "\"\"\"", "#", "#0", "def ", "with ", "inputs = [", "torch.randn(", "fd.define_tensor(",
    "shape=", "dims=", "dtype=", "99999999999999999999999999", "1.5e-300", ".5", "1_000", "*", "/",
    "+", "->", "**", "sizes N=", "dim N = T0.0\n", "dtypes bf16 fp64\n", "uniform(", ",,",
};

/* Applies one random mutation in place; returns the new size (< capacity). */
static size_t mutate(uint64_t *state, char *buffer, size_t size, size_t capacity)
{
    size_t at = random_below(state, size + 1);
    char insert[2048];
    size_t insert_size = 0;
    switch (random_below(state, 10)) {
    case 0: /* flip a bit */
        if (size > 0)
            buffer[at % size] ^= (char)(1u << random_below(state, 8));
        return size;
    case 1: { /* delete a range */
        size_t length = 1 + random_below(state, 16);
        if (at + length > size)
            length = size - at;
        memmove(buffer + at, buffer + at + length, size - at - length);
        return size - length;
    }
    case 2: /* random bytes */
        insert_size = 1 + random_below(state, 8);
        for (size_t i = 0; i < insert_size; i++)
            insert[i] = (char)next_random(state);
        break;
    case 3: { /* a special byte */
        static const char special[] = {'\0', '\xff', '\n', '\r', '\t', '\\', '#', '"', '\'', ' '};
        insert[0] = special[random_below(state, sizeof special)];
        insert_size = 1;
        break;
    }
    case 4: { /* a token */
        size_t token_count = sizeof fuzz_tokens / sizeof fuzz_tokens[0];
        const char *token = fuzz_tokens[random_below(state, token_count)];
        insert_size = strlen(token);
        memcpy(insert, token, insert_size);
        break;
    }
    case 5: { /* duplicate the line around `at` */
        size_t start = at, end = at;
        while (start > 0 && buffer[start - 1] != '\n')
            start--;
        while (end < size && buffer[end] != '\n')
            end++;
        insert_size = end - start + (end < size ? 1 : 0);
        if (insert_size > sizeof insert)
            insert_size = sizeof insert;
        memcpy(insert, buffer + start, insert_size);
        at = start;
        break;
    }
    case 6: /* truncate */
        return at;
    case 7: { /* a long run of digits or name characters */
        insert_size = 100 + random_below(state, sizeof insert - 100);
        memset(insert, random_below(state, 2) ? '9' : 'x', insert_size);
        break;
    }
    case 8: /* overwrite with a printable byte */
        if (size > 0)
            buffer[at % size] = (char)(' ' + random_below(state, 95));
        return size;
    default: { /* swap two lines' first bytes: cheap reordering */
        size_t other = random_below(state, size + 1);
        if (size > 0) {
            char swap = buffer[at % size];
            buffer[at % size] = buffer[other % size];
            buffer[other % size] = swap;
        }
        return size;
    }
    }
    if (size + insert_size >= capacity)
        return size;
    memmove(buffer + at + insert_size, buffer + at, size - at);
    memcpy(buffer + at, insert, insert_size);
    return size + insert_size;
}

/* The message must be "path:line:column: ...". */
static void check_fuzz_message(const char *path, fv_status status, const char *text, size_t size)
{
    const char *message = fv_error_message();
    size_t path_length = strlen(path);
    int line = 0, column = 0, consumed = 0;
    bool located = strncmp(message, path, path_length) == 0 &&
                   sscanf(message + path_length, ":%d:%d: %n", &line, &column, &consumed) == 2 &&
                   consumed > 0 && line >= 1 && column >= 1;
    if (!located || (status != FV_ERR_INPUT && status != FV_ERR_UNSUPPORTED)) {
        fprintf(stderr, "fuzz input (%zu bytes) gave %s: %s\n", size, fv_status_name(status),
                message);
        fwrite(text, 1, size, stderr);
        ck_abort_msg("bad error for a fuzz input: %s (%s)", message, fv_status_name(status));
    }
}

/* A definition that reads must print to one that reads with the same hash. */
static void check_fuzz_definition(fv_definition *definition)
{
    fv_text printed = {0};
    FV_ASSERT_OK(fv_ir_print(definition->fusion, &printed));
    fv_definition *again = NULL;
    fv_status status = fv_frontend_parse_definition("printed.py", fv_text_str(&printed),
                                                    printed.length, &again);
    ck_assert_msg(status == FV_OK, "the printed fusion does not read back: %s\n%s",
                  fv_error_message(), fv_text_str(&printed));
    char first[65], second[65];
    hash_of(definition->fusion, first);
    hash_of(again->fusion, second);
    ck_assert_msg(strcmp(first, second) == 0, "the printed fusion hashes differently:\n%s",
                  fv_text_str(&printed));
    fv_frontend_definition_free(again);
    fv_text_free(&printed);
    if (definition->has_inputs) {
        fv_case *c = NULL;
        status = fv_frontend_case_from_inputs(definition, &c);
        if (status == FV_OK)
            fv_case_free(c);
    }
}

static void fuzz_one(const seed_file *seed, const char *text, size_t size, int *accepted)
{
    if (!seed->is_sweep) {
        char path[300];
        snprintf(path, sizeof path, "fuzz/%s", seed->name);
        fv_definition *definition = NULL;
        fv_status status = fv_frontend_parse_definition(path, text, size, &definition);
        if (status == FV_OK) {
            (*accepted)++;
            check_fuzz_definition(definition);
            fv_frontend_definition_free(definition);
        } else {
            ck_assert_ptr_null(definition);
            check_fuzz_message(path, status, text, size);
        }
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s", fv_test_path("fuzz/mutant.sweep"));
    fv_case_list list = {0};
    fv_status status = fv_frontend_expand_sweep_text(path, text, size, &list, NULL, 0);
    if (status == FV_OK)
        (*accepted)++;
    else
        check_fuzz_message(path, status, text, size);
    fv_case_list_free(&list);
}

START_TEST(test_fuzz)
{
    corpus seeds = {.count = 0};
    load_seeds(&seeds, fv_test_source_path("tests/fuzz"), true);
    load_seeds(&seeds, fv_test_source_path("cases"), false);
    ck_assert_int_ge(seeds.count, 5);
    /* Sweeps name definitions next to them: copy the seeds there. */
    make_scratch_directory("fuzz");
    for (int i = 0; i < seeds.count; i++) {
        char name[300];
        snprintf(name, sizeof name, "fuzz/%s", seeds.files[i].name);
        if (!seeds.files[i].is_sweep)
            write_scratch_bytes(name, seeds.files[i].text, seeds.files[i].size);
    }
    const char *sanitized = getenv("FV_SANITIZED");
    const char *requested = getenv("FV_FUZZ_ITERATIONS");
    const char *seed_text = getenv("FV_FUZZ_SEED");
    long iterations = sanitized != NULL && strcmp(sanitized, "1") == 0 ? 20000 : 200000;
    if (requested != NULL && atol(requested) > 0)
        iterations = atol(requested);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    if (seed_text != NULL) /* spread small seeds; xorshift needs a nonzero state */
        state = strtoull(seed_text, NULL, 0) * 0xbf58476d1ce4e5b9ull + 0x9e3779b97f4a7c15ull;
    if (state == 0)
        state = 1;
    size_t capacity = 1 << 18;
    char *buffer = malloc(capacity);
    ck_assert_ptr_nonnull(buffer);
    const seed_file *seed = NULL;
    size_t size = 0;
    int accepted = 0;
    clock_t start = clock();
    for (long i = 0; i < iterations; i++) {
        if (i % 4 == 0) { /* a fresh seed, then a chain of mutations on it */
            seed = &seeds.files[random_below(&state, (size_t)seeds.count)];
            size = seed->size < capacity / 2 ? seed->size : capacity / 2;
            memcpy(buffer, seed->text, size);
        }
        int mutations = 1 + (int)random_below(&state, 3);
        for (int m = 0; m < mutations; m++)
            size = mutate(&state, buffer, size, capacity);
        fuzz_one(seed, buffer, size, &accepted);
    }
    printf("check_frontend: fuzz: %ld inputs from %d seeds, %d accepted, %.1f s\n", iterations,
           seeds.count, accepted, (double)(clock() - start) / CLOCKS_PER_SEC);
    ck_assert_int_gt(accepted, 0);
    ck_assert_int_lt(accepted, iterations);
    free(buffer);
    for (int i = 0; i < seeds.count; i++)
        free(seeds.files[i].text);
}
END_TEST

/* -------------------------------------------------------------- suite */

static Suite *make_suite(void)
{
    Suite *suite = suite_create("frontend");
    TCase *parse = tcase_create("parse");
    tcase_add_test(parse, test_example_a);
    tcase_add_test(parse, test_example_b);
    tcase_add_test(parse, test_thunder_concrete);
    tcase_add_test(parse, test_definition_styles);
    suite_add_tcase(suite, parse);

    TCase *round_trip = tcase_create("round_trip");
    tcase_add_test(round_trip, test_print_round_trip);
    tcase_add_test(round_trip, test_hash_invariance);
    tcase_add_test(round_trip, test_hash_changes);
    suite_add_tcase(suite, round_trip);

    TCase *inputs = tcase_create("inputs");
    tcase_add_test(inputs, test_inputs_distributions);
    suite_add_tcase(suite, inputs);

    TCase *errors = tcase_create("errors");
    tcase_add_loop_test(errors, test_definition_error, 0,
                        (int)(sizeof definition_errors / sizeof definition_errors[0]));
    tcase_add_loop_test(errors, test_sweep_error, 0,
                        (int)(sizeof sweep_errors / sizeof sweep_errors[0]));
    suite_add_tcase(suite, errors);

    TCase *sweeps = tcase_create("sweeps");
    tcase_add_test(sweeps, test_sweep_expansion);
    tcase_add_test(sweeps, test_sweep_defaults);
    suite_add_tcase(suite, sweeps);

    TCase *collect = tcase_create("collect");
    tcase_add_test(collect, test_collect_directory);
    tcase_add_test(collect, test_collect_duplicates);
    tcase_add_test(collect, test_cases_directory);
    suite_add_tcase(suite, collect);

    TCase *limits = tcase_create("limits");
    tcase_add_test(limits, test_limits);
    tcase_set_timeout(limits, 120);
    suite_add_tcase(suite, limits);

    TCase *fuzz = tcase_create("fuzz");
    tcase_add_test(fuzz, test_fuzz);
    tcase_set_timeout(fuzz, 600);
    suite_add_tcase(suite, fuzz);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
