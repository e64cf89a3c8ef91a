/* references.c: content keys, building and verifying store entries, and
 * comparing outputs against stored or freshly computed references. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sha256.h"
#include "ir/round.h"
#include "validate/generator.h"
#include "validate/references.h"

#define READ_BLOCK_ELEMENTS (2 << 20) /* per output, when reading from the store */

static double now_seconds(void)
{
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (double)time.tv_sec + 1e-9 * (double)time.tv_nsec;
}

const char *fv_ref_outcome_name(fv_ref_outcome outcome)
{
    static const char *const names[] = {"cached", "built", "rebuilt", "on-demand", "evaluated"};
    return (unsigned)outcome < sizeof names / sizeof names[0] ? names[outcome] : "unknown";
}

/* ------------------------------------------------------------------ key */

static void describe_inputs(const fv_case *c, fv_text *text)
{
    const fv_fusion *fusion = c->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t id = fusion->inputs[i];
        const fv_value *input = &fusion->values[id];
        fv_text_printf(text, "input %d %s", (int)i, fv_dtype_name(input->dtype));
        if (input->kind == FV_VALUE_SCALAR) {
            fv_text_printf(text, " scalar %a\n", c->scalar_inputs[i]);
            continue;
        }
        int64_t extents[FV_MAX_RANK];
        int rank = fv_case_shape(c, id, extents);
        fv_text_printf(text, " [");
        for (int d = 0; d < rank; d++)
            fv_text_printf(text, "%s%lld", d ? "," : "", (long long)extents[d]);
        char distribution[96];
        fv_distribution_format(&c->distributions[i], distribution, sizeof distribution);
        fv_text_printf(text, "] %s\n", distribution);
    }
}

fv_status fv_ref_key(const fv_case *c, char key[65], fv_text *material)
{
    fv_text text = {0};
    fv_text_printf(&text, "fuservalidate reference key 1\ngenerator %d\nevaluator %d\nseed %llu\n",
                   FV_GENERATOR_VERSION, FV_EVALUATOR_VERSION, (unsigned long long)c->seed);
    describe_inputs(c, &text);
    fv_status status = fv_ir_canonical_text(c->fusion, &text);
    if (status == FV_OK)
        status = fv_text_status(&text);
    if (status == FV_OK) {
        fv_sha256_hex_of(fv_text_str(&text), text.length, key);
        if (material != NULL)
            fv_text_append(material, fv_text_str(&text), text.length);
    }
    fv_text_free(&text);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* ------------------------------------------------------------ outputs */

typedef struct case_outputs {
    int count;
    fv_eval_output *eval;
    fv_store_output *store;
} case_outputs;

static void free_outputs(case_outputs *outputs)
{
    free(outputs->eval);
    free(outputs->store);
}

static fv_status describe_outputs(const fv_case *c, case_outputs *outputs)
{
    outputs->count = c->fusion->output_count;
    outputs->eval = calloc((size_t)outputs->count + 1, sizeof *outputs->eval);
    outputs->store = calloc((size_t)outputs->count + 1, sizeof *outputs->store);
    if (outputs->eval == NULL || outputs->store == NULL) {
        free_outputs(outputs);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    for (int o = 0; o < outputs->count; o++) {
        fv_eval_output *e = &outputs->eval[o];
        fv_status status = fv_eval_describe_output(c, o, e);
        if (status != FV_OK) {
            free_outputs(outputs);
            fv_error_trace(__FILE__, __LINE__);
            return status;
        }
        fv_store_output *s = &outputs->store[o];
        fv_ir_value_label(c->fusion, e->value, s->name);
        s->rank = e->rank;
        memcpy(s->extents, e->extents, sizeof e->extents);
        s->dtype = e->dtype;
        s->reduction_length = e->reduction_size;
    }
    return FV_OK;
}

/* ------------------------------------------------------------ building */

/* Where evaluated blocks go: the store, the comparison, or both.  The
 * evaluator calls it from all its threads at once (concurrent_sink): blocks
 * are compared on the calling thread and only the merge and the store write
 * take the lock, so comparing does not serialize the evaluation. */
typedef struct build_sink {
    fv_store_writer *writer;     /* NULL: do not store */
    const case_outputs *outputs;
    fv_tolerance_policy policy;
    const void *const *actual;   /* NULL: do not compare */
    fv_comparison *comparisons;
    pthread_mutex_t lock;        /* guards writer and comparisons */
} build_sink;

/* Elements decoded at a time by compare_block, in a buffer on the stack:
 * no allocation per block, whichever thread calls it. */
enum { DECODE_PIECE = 2048 };

static fv_status compare_block(build_sink *sink, int output_index, int64_t first_row,
                               int64_t row_count, const double *values, const double *bounds)
{
    const fv_eval_output *output = &sink->outputs->eval[output_index];
    int64_t count = row_count * output->row_elements;
    int64_t first = first_row * output->row_elements;
    size_t element_bytes = fv_dtype_size(output->dtype);
    const char *raw = (const char *)sink->actual[output_index] + (size_t)first * element_bytes;
    fv_comparison part;
    fv_comparison_init(&part, sink->policy, output);
    double decoded[DECODE_PIECE];
    for (int64_t done = 0; done < count; done += DECODE_PIECE) {
        int64_t piece = count - done < DECODE_PIECE ? count - done : DECODE_PIECE;
        fv_load_elements(output->dtype, raw + (size_t)done * element_bytes, decoded, piece);
        fv_comparison_add(&part, decoded, values + done, bounds ? bounds + done : NULL,
                          first + done, piece);
    }
    pthread_mutex_lock(&sink->lock);
    fv_comparison_merge(&sink->comparisons[output_index], &part);
    pthread_mutex_unlock(&sink->lock);
    return FV_OK;
}

static fv_status build_sink_block(void *context, int output_index, int64_t first_row,
                                  int64_t row_count, const double *values, const double *bounds)
{
    build_sink *sink = context;
    if (sink->writer != NULL) {
        pthread_mutex_lock(&sink->lock);
        fv_status status = fv_store_write_rows(sink->writer, output_index, first_row, row_count,
                                               values, bounds);
        pthread_mutex_unlock(&sink->lock);
        FV_TRY(status);
    }
    if (sink->actual != NULL)
        FV_TRY(compare_block(sink, output_index, first_row, row_count, values, bounds));
    return FV_OK;
}

/* Evaluates `c` into `sink`, calling it from every evaluator thread. */
static fv_status evaluate_into(const fv_case *c, const fv_eval_options *options,
                               build_sink *sink)
{
    fv_eval_options concurrent = *options;
    concurrent.concurrent_sink = true;
    return fv_eval_run(c, &concurrent, build_sink_block, sink);
}

static void join_dtypes(const fv_case *c, char *buffer, size_t size)
{
    size_t used = 0;
    buffer[0] = '\0';
    for (int32_t i = 0; i < c->fusion->input_count && used < size; i++)
        used += (size_t)snprintf(buffer + used, size - used, "%s%s", i ? "," : "",
                                 fv_dtype_name(c->fusion->values[c->fusion->inputs[i]].dtype));
}

/* Evaluates the case into a new store entry (and compares, when asked). */
static fv_status build_entry(fv_store *store, const fv_case *c, const fv_eval_options *options,
                             const case_outputs *outputs, const char *key, build_sink *sink)
{
    fv_text canonical = {0};
    char sizes[96], dtypes[256];
    FV_TRY(fv_ir_canonical_text(c->fusion, &canonical));
    fv_case_size_label(c, sizes, sizeof sizes);
    join_dtypes(c, dtypes, sizeof dtypes);
    fv_store_provenance provenance = {
        .key = key, .case_id = c->id, .canonical_fusion = fv_text_str(&canonical),
        .sizes = sizes, .dtypes = dtypes, .seed = c->seed,
        .generator_version = FV_GENERATOR_VERSION, .evaluator_version = FV_EVALUATOR_VERSION,
        .bound_policy = FV_BOUND_POLICY_NAME, .tool_version = FV_VERSION,
        .git_revision = FV_GIT_REVISION};
    fv_status status = fv_store_begin(store, &provenance, outputs->count, outputs->store,
                                      &sink->writer);
    fv_text_free(&canonical);
    if (status != FV_OK) {
        fv_error_trace(__FILE__, __LINE__);
        return status;
    }
    status = evaluate_into(c, options, sink);
    if (status != FV_OK) {
        fv_store_abort(sink->writer);
        sink->writer = NULL;
        fv_error_trace(__FILE__, __LINE__);
        return status;
    }
    status = fv_store_commit(sink->writer);
    sink->writer = NULL;
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* Opens a stored entry, verifying it when asked.  A corrupt entry is removed
 * and reported as FV_ERR_NOT_FOUND with the reason in `detail`. */
static fv_status open_valid_entry(fv_store *store, const char *key, bool verify,
                                  fv_store_reader **reader, char *detail, size_t detail_size)
{
    fv_status status = fv_store_open_entry(store, key, reader);
    if (status == FV_OK && verify) {
        status = fv_store_verify(*reader);
        if (status != FV_OK) {
            fv_store_close_entry(*reader);
            *reader = NULL;
        }
    }
    if (status == FV_ERR_CORRUPT) {
        snprintf(detail, detail_size, "%s", fv_error_message());
        fv_error_clear();
        FV_TRY(fv_store_remove(store, key));
        FV_FAIL(FV_ERR_NOT_FOUND, "removed a corrupt entry");
    }
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

static fv_status discard_block(void *context, int output_index, int64_t first_row,
                               int64_t row_count, const double *values, const double *bounds)
{
    return FV_OK;
}

fv_status fv_ref_ensure(fv_store *store, const fv_case *c, const fv_eval_options *options,
                        bool verify, bool evaluate_large, fv_ref_report *report)
{
    memset(report, 0, sizeof *report);
    FV_TRY(fv_ref_key(c, report->key, NULL));
    case_outputs outputs;
    FV_TRY(describe_outputs(c, &outputs));
    report->bytes = fv_store_case_bytes(outputs.count, outputs.store);
    double start = now_seconds();
    fv_status status = FV_OK;
    if (!fv_store_keeps(store, report->bytes)) {
        report->outcome = FV_REF_ON_DEMAND;
        if (evaluate_large) {
            report->outcome = FV_REF_EVALUATED;
            status = fv_eval_run(c, options, discard_block, NULL);
        }
        goto done;
    }
    fv_store_reader *reader = NULL;
    status = open_valid_entry(store, report->key, verify, &reader, report->detail,
                              sizeof report->detail);
    if (status == FV_OK) {
        fv_store_close_entry(reader);
        report->outcome = FV_REF_CACHED;
        goto done;
    }
    if (status != FV_ERR_NOT_FOUND)
        goto done;
    fv_error_clear();
    report->outcome = report->detail[0] ? FV_REF_REBUILT : FV_REF_BUILT;
    build_sink sink = {.outputs = &outputs, .lock = PTHREAD_MUTEX_INITIALIZER};
    status = build_entry(store, c, options, &outputs, report->key, &sink);
    pthread_mutex_destroy(&sink.lock);
done:
    report->seconds = report->outcome == FV_REF_CACHED ? 0 : now_seconds() - start;
    free_outputs(&outputs);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* ----------------------------------------------------------- comparing */

/* Compares against a stored entry, reading it in blocks of rows. */
static fv_status compare_stored(fv_store_reader *reader, const case_outputs *outputs,
                                build_sink *sink)
{
    double *values = NULL, *bounds = NULL;
    fv_status status = FV_OK;
    for (int o = 0; o < outputs->count && status == FV_OK; o++) {
        const fv_eval_output *output = &outputs->eval[o];
        int64_t row_elements = output->row_elements > 0 ? output->row_elements : 1;
        int64_t rows_per_block = READ_BLOCK_ELEMENTS / row_elements;
        if (rows_per_block < 1)
            rows_per_block = 1;
        free(values);
        free(bounds);
        values = malloc(sizeof(double) * (size_t)(rows_per_block * row_elements));
        bounds = malloc(sizeof(double) * (size_t)(rows_per_block * row_elements));
        if (values == NULL || bounds == NULL) {
            status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
            break;
        }
        for (int64_t row = 0; row < output->rows && status == FV_OK; row += rows_per_block) {
            int64_t count = output->rows - row < rows_per_block ? output->rows - row : rows_per_block;
            status = fv_store_read_rows(reader, o, row, count, values, bounds);
            if (status == FV_OK)
                status = compare_block(sink, o, row, count, values, bounds);
        }
    }
    free(values);
    free(bounds);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

static void reset_comparisons(const case_outputs *outputs, fv_tolerance_policy policy,
                              fv_comparison *comparisons)
{
    for (int o = 0; o < outputs->count; o++) {
        fv_comparison_init(&comparisons[o], policy, &outputs->eval[o]);
    }
}

fv_status fv_ref_compare(fv_store *store, const fv_case *c, const fv_eval_options *options,
                         fv_tolerance_policy policy, const void *const *actual,
                         fv_comparison *comparisons, fv_ref_report *report)
{
    memset(report, 0, sizeof *report);
    FV_TRY(fv_ref_key(c, report->key, NULL));
    case_outputs outputs;
    FV_TRY(describe_outputs(c, &outputs));
    report->bytes = fv_store_case_bytes(outputs.count, outputs.store);
    build_sink sink = {.outputs = &outputs, .policy = policy, .actual = actual,
                       .comparisons = comparisons, .lock = PTHREAD_MUTEX_INITIALIZER};
    reset_comparisons(&outputs, policy, comparisons);
    double start = now_seconds();
    fv_status status = FV_OK;
    if (store == NULL || !fv_store_keeps(store, report->bytes)) {
        report->outcome = FV_REF_ON_DEMAND;
        status = evaluate_into(c, options, &sink);
        goto done;
    }
    fv_store_reader *reader = NULL;
    status = open_valid_entry(store, report->key, false, &reader, report->detail,
                              sizeof report->detail);
    if (status == FV_OK) {
        report->outcome = FV_REF_CACHED;
        status = compare_stored(reader, &outputs, &sink);
        fv_store_close_entry(reader);
        if (status != FV_ERR_CORRUPT)
            goto done;
        /* A checksum failed while reading: drop the entry and rebuild it. */
        snprintf(report->detail, sizeof report->detail, "%s", fv_error_message());
        fv_error_clear();
        reset_comparisons(&outputs, policy, comparisons);
        FV_TRY_GOTO(status, fv_store_remove(store, report->key), done);
        status = FV_ERR_NOT_FOUND;
    }
    if (status != FV_ERR_NOT_FOUND)
        goto done;
    fv_error_clear();
    report->outcome = report->detail[0] ? FV_REF_REBUILT : FV_REF_BUILT;
    status = build_entry(store, c, options, &outputs, report->key, &sink);
done:
    report->seconds = now_seconds() - start;
    pthread_mutex_destroy(&sink.lock);
    free_outputs(&outputs);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}
