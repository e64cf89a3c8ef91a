/* evaluator.c: executes a plan.  Row-invariant values (weights, finished
 * reductions over rows) are computed whole; row-varying values are computed
 * block by block of rows on worker threads, and each block of an output goes
 * to the sink as soon as it is done.  Reductions over rows are accumulated
 * per chunk of rows and merged in chunk order, so results do not depend on
 * the thread count. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "validate/eval_internal.h"
#include "ir/round.h"
#include "validate/generator.h"

#define DEFAULT_BUDGET (1LL << 20) /* cache-sized blocks are fastest */
#define MAX_CHUNKS 64

typedef struct evaluation {
    eval_plan plan;
    const fv_eval_options *options;
    int threads;
    fv_eval_sink sink;
    void *sink_context;
    pthread_mutex_t sink_lock;
    fv_eval_output *outputs;
    eval_array *globals;        /* per value id: row-invariant values */
    eval_stream_partial *totals;/* per op id: merged reductions over rows */
    eval_scratch scratch;       /* main thread */
} evaluation;

/* ------------------------------------------------------------ outputs */

fv_status fv_eval_describe_output(const fv_case *c, int index, fv_eval_output *output)
{
    const fv_fusion *fusion = c->fusion;
    if (index < 0 || index >= fusion->output_count)
        FV_FAIL(FV_ERR_INTERNAL, "output %d does not exist", index);
    FV_TRY(fv_case_check_bound(c));
    int32_t value = fusion->outputs[index];
    memset(output, 0, sizeof *output);
    output->value = value;
    output->rank = fv_case_shape(c, value, output->extents);
    output->dtype = fusion->values[value].dtype;
    output->rows = output->rank > 0 ? output->extents[0] : 1;
    output->row_elements = 1;
    for (int d = 1; d < output->rank; d++)
        output->row_elements *= output->extents[d];
    /* reduction size: own reduced extents times the largest input's */
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)(fusion->value_count + 1));
    FV_CHECK_ALLOC(sizes);
    for (int32_t v = 0; v < fusion->value_count; v++)
        sizes[v] = 1;
    for (int32_t o = 0; o < fusion->op_count; o++) {
        const fv_op *op = &fusion->ops[o];
        int64_t size = 1;
        for (int k = 0; k < op->input_count; k++)
            size = sizes[op->inputs[k]] > size ? sizes[op->inputs[k]] : size;
        if (fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION)
            for (int a = 0; a < op->axis_count; a++)
                size *= fv_case_dim_extent(c, fusion->values[op->inputs[0]].dims[op->axes[a]]);
        for (int k = 0; k < op->output_count; k++)
            sizes[op->outputs[k]] = size;
    }
    output->reduction_size = sizes[value];
    free(sizes);
    return FV_OK;
}

/* Expands stored (broadcast) dims to the logical layout and sums channels
 * into bounds, for rows [0, rows) of `array`. */
static void materialize(const eval_array *array, const fv_eval_output *output, int64_t rows,
                        double *values, double *bounds)
{
    if (array->count == rows * output->row_elements) { /* nothing is broadcast */
        memcpy(values, array->value, sizeof(double) * (size_t)array->count);
        if (bounds == NULL)
            return;
        memset(bounds, 0, sizeof(double) * (size_t)array->count);
        for (unsigned s = 0; s < FV_EVAL_SUPPORTS; s++)
            if (array->channel[s] != NULL)
                for (int64_t i = 0; i < array->count; i++)
                    bounds[i] += array->channel[s][i];
        return;
    }
    int64_t logical[FV_MAX_RANK] = {1, 1, 1, 1}, stored_stride[FV_MAX_RANK] = {0, 0, 0, 0};
    int rank = output->rank;
    int64_t step = 1;
    for (int d = rank - 1; d >= 0; d--) {
        logical[d] = d == 0 ? rows : output->extents[d];
        stored_stride[d] = array->extent[d] == 1 ? 0 : step;
        step *= array->extent[d];
    }
    int64_t pad = FV_MAX_RANK - rank;
    int64_t extent[FV_MAX_RANK], stride[FV_MAX_RANK];
    for (int d = 0; d < FV_MAX_RANK; d++) {
        extent[d] = d < pad ? 1 : logical[d - pad];
        stride[d] = d < pad ? 0 : stored_stride[d - pad];
    }
    int64_t at = 0;
    for (int64_t i0 = 0; i0 < extent[0]; i0++)
        for (int64_t i1 = 0; i1 < extent[1]; i1++)
            for (int64_t i2 = 0; i2 < extent[2]; i2++)
                for (int64_t i3 = 0; i3 < extent[3]; i3++, at++) {
                    int64_t source = i0 * stride[0] + i1 * stride[1] + i2 * stride[2] +
                                     i3 * stride[3];
                    values[at] = array->value[source];
                    if (bounds)
                        bounds[at] = eval_array_total_error(array, source);
                }
}

static fv_status deliver(evaluation *e, int output_index, const eval_array *array,
                         int64_t first_row, int64_t rows)
{
    const fv_eval_output *output = &e->outputs[output_index];
    int64_t count = rows * output->row_elements;
    bool reference = e->plan.mode == FV_EVAL_REFERENCE;
    double *values = malloc(sizeof(double) * (size_t)(count > 0 ? count : 1));
    double *bounds = reference ? malloc(sizeof(double) * (size_t)(count > 0 ? count : 1)) : NULL;
    if (values == NULL || (reference && bounds == NULL)) {
        free(values);
        free(bounds);
        FV_FAIL(FV_ERR_NOMEM, "out of memory delivering an output block");
    }
    materialize(array, output, rows, values, bounds);
    bool serialize = !e->options->concurrent_sink;
    if (serialize)
        pthread_mutex_lock(&e->sink_lock);
    fv_status status = e->sink(e->sink_context, output_index, first_row, rows, values, bounds);
    if (serialize)
        pthread_mutex_unlock(&e->sink_lock);
    free(values);
    free(bounds);
    if (status != FV_OK)
        fv_error_trace(__FILE__, __LINE__);
    return status;
}

/* Row-invariant outputs that became available in `pass`. */
static fv_status deliver_invariant_outputs(evaluation *e, int pass)
{
    const fv_fusion *fusion = e->plan.fusion;
    for (int32_t o = 0; o < fusion->output_count; o++) {
        const eval_value_plan *vp = &e->plan.values[fusion->outputs[o]];
        if (vp->row_varying || vp->pass != pass)
            continue;
        FV_TRY(deliver(e, o, &e->globals[fusion->outputs[o]], 0, e->outputs[o].rows));
    }
    return FV_OK;
}

/* ------------------------------------------------ row-invariant values */

static fv_status generate_input(const evaluation *e, int32_t value, eval_array *array,
                                int64_t first_row)
{
    const fv_case *c = e->plan.c;
    const fv_value *input = &c->fusion->values[value];
    int64_t row_elements = 1;
    for (int d = 1; d < array->rank; d++)
        row_elements *= array->extent[d];
    int64_t first = array->rank > 0 ? first_row * row_elements : 0;
    const fv_eval_given_input *given =
        e->options->given_inputs ? &e->options->given_inputs[input->input_index] : NULL;
    if (given && given->elements) {
        if (first + array->count > given->count)
            FV_FAIL(FV_ERR_INTERNAL, "given input %d has %lld elements, %lld needed",
                    input->input_index, (long long)given->count,
                    (long long)(first + array->count));
        const char *base = given->elements;
        fv_load_elements(input->dtype, base + (size_t)first * fv_dtype_size(input->dtype),
                         array->value, array->count);
        return FV_OK;
    }
    FV_TRY(fv_gen_fill(c->seed, input->input_index, &c->distributions[input->input_index],
                       input->dtype, first, array->count, array->value));
    return FV_OK;
}

static fv_status allocate_global(evaluation *e, int32_t value)
{
    eval_array *array = &e->globals[value];
    if (array->value != NULL)
        return FV_OK;
    const eval_value_plan *vp = &e->plan.values[value];
    int64_t count = 1;
    for (int d = 0; d < FV_MAX_RANK; d++)
        count *= vp->stored[d];
    FV_TRY(eval_array_allocate(array, &e->plan, value, count));
    eval_array_shape(array, &e->plan, value, vp->stream_dim >= 0 ? vp->stored[vp->stream_dim] : 1);
    return FV_OK;
}

/* Operand arrays of `op`: row-varying ones from `block`, others global. */
static void gather_operands(const evaluation *e, const fv_op *op, eval_array *block,
                            const eval_array **operands)
{
    const fv_fusion *fusion = e->plan.fusion;
    for (int k = 0; k < op->input_count; k++) {
        int32_t id = op->inputs[k];
        if (fusion->values[id].kind == FV_VALUE_SCALAR)
            operands[k] = NULL;
        else if (e->plan.values[id].row_varying)
            operands[k] = &block[id];
        else
            operands[k] = &e->globals[id];
    }
}

static fv_status run_op(const evaluation *e, const fv_op *op, eval_array *block,
                        eval_array *out, eval_array *second, eval_scratch *scratch)
{
    const eval_array *operands[3] = {NULL, NULL, NULL};
    gather_operands(e, op, block, operands);
    if (fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION)
        return eval_kernel_reduction(&e->plan, op, operands[0], out, second, scratch);
    return eval_kernel_pointwise(&e->plan, op, operands, out, scratch);
}

static fv_status compute_invariant(evaluation *e, int pass)
{
    const fv_fusion *fusion = e->plan.fusion;
    if (pass == 0) {
        for (int32_t i = 0; i < fusion->input_count; i++) {
            int32_t id = fusion->inputs[i];
            const eval_value_plan *vp = &e->plan.values[id];
            if (fusion->values[id].kind != FV_VALUE_TENSOR || vp->row_varying || !vp->live)
                continue;
            FV_TRY(allocate_global(e, id));
            FV_TRY(generate_input(e, id, &e->globals[id], 0));
        }
    }
    for (int32_t i = 0; i < e->plan.op_count; i++) {
        const fv_op *op = &fusion->ops[e->plan.order[i]];
        const eval_value_plan *out = &e->plan.values[op->outputs[0]];
        if (out->row_varying || out->pass != pass || eval_plan_is_stream_reduction(&e->plan, op))
            continue;
        for (int k = 0; k < op->output_count; k++)
            FV_TRY(allocate_global(e, op->outputs[k]));
        eval_array *second = op->output_count > 1 ? &e->globals[op->outputs[1]] : NULL;
        FV_TRY(run_op(e, op, NULL, &e->globals[op->outputs[0]], second, &e->scratch));
    }
    return FV_OK;
}

/* ------------------------------------------------------- block passes */

typedef struct pass_work {
    evaluation *e;
    int pass;
    bool *needed;            /* per value: row-varying and computed in blocks */
    int32_t *block_ops;      /* ops run per block, in order */
    int32_t block_op_count;
    int32_t *stream_ops;     /* reductions over rows finished by this pass */
    int32_t stream_op_count;
    int64_t block_rows;
    int64_t chunk_count;
    atomic_llong next_chunk;
    pthread_mutex_t merge_lock;
    eval_stream_partial **slots; /* per chunk: its partials, until merged */
    int64_t next_merge;
    atomic_int failed;
    fv_status status;
    char message[1024];
} pass_work;

static void record_failure(pass_work *work, fv_status status)
{
    pthread_mutex_lock(&work->merge_lock);
    if (work->status == FV_OK) {
        work->status = status;
        snprintf(work->message, sizeof work->message, "%s", fv_error_message());
    }
    atomic_store(&work->failed, 1);
    pthread_mutex_unlock(&work->merge_lock);
}

/* Marks the row-varying values the pass must compute per block. */
static fv_status plan_pass(pass_work *work)
{
    evaluation *e = work->e;
    const fv_fusion *fusion = e->plan.fusion;
    work->needed = calloc((size_t)fusion->value_count + 1, 1);
    work->block_ops = malloc(sizeof(int32_t) * (size_t)(e->plan.op_count + 1));
    work->stream_ops = malloc(sizeof(int32_t) * (size_t)(e->plan.op_count + 1));
    FV_CHECK_ALLOC(work->needed);
    FV_CHECK_ALLOC(work->block_ops);
    FV_CHECK_ALLOC(work->stream_ops);
    for (int32_t o = 0; o < fusion->output_count; o++) {
        const eval_value_plan *vp = &e->plan.values[fusion->outputs[o]];
        if (vp->row_varying && vp->pass == work->pass)
            work->needed[fusion->outputs[o]] = true;
    }
    for (int32_t i = 0; i < e->plan.op_count; i++) {
        const fv_op *op = &fusion->ops[e->plan.order[i]];
        if (eval_plan_is_stream_reduction(&e->plan, op) &&
            e->plan.values[op->outputs[0]].pass == work->pass + 1) {
            work->needed[op->inputs[0]] = true;
            work->stream_ops[work->stream_op_count++] = e->plan.order[i];
        }
    }
    /* Backward closure over row-varying operands, in reverse topological order. */
    for (int32_t i = e->plan.op_count - 1; i >= 0; i--) {
        const fv_op *op = &fusion->ops[e->plan.order[i]];
        bool any = false;
        for (int k = 0; k < op->output_count; k++)
            any = any || work->needed[op->outputs[k]];
        if (!any || !e->plan.values[op->outputs[0]].row_varying ||
            eval_plan_is_stream_reduction(&e->plan, op))
            continue;
        for (int k = 0; k < op->output_count; k++)
            work->needed[op->outputs[k]] = true;
        for (int k = 0; k < op->input_count; k++)
            if (e->plan.values[op->inputs[k]].row_varying)
                work->needed[op->inputs[k]] = true;
    }
    for (int32_t i = 0; i < e->plan.op_count; i++) {
        const fv_op *op = &fusion->ops[e->plan.order[i]];
        if (work->needed[op->outputs[0]] && e->plan.values[op->outputs[0]].row_varying &&
            !eval_plan_is_stream_reduction(&e->plan, op))
            work->block_ops[work->block_op_count++] = e->plan.order[i];
    }
    return FV_OK;
}

static int64_t stored_row_elements(const eval_value_plan *vp, int rank)
{
    int64_t count = 1;
    for (int d = 0; d < rank; d++)
        if (d != vp->stream_dim)
            count *= vp->stored[d];
    return count;
}

static void choose_block_rows(pass_work *work)
{
    evaluation *e = work->e;
    const fv_fusion *fusion = e->plan.fusion;
    int64_t bytes_per_row = 0;
    for (int32_t v = 0; v < fusion->value_count; v++) {
        if (!work->needed[v])
            continue;
        int channels = __builtin_popcount(e->plan.values[v].supports);
        bytes_per_row += (int64_t)(1 + channels) * 8 *
                         stored_row_elements(&e->plan.values[v], fusion->values[v].rank);
    }
    int64_t budget = e->options->memory_budget > 0 ? e->options->memory_budget : DEFAULT_BUDGET;
    int64_t rows = bytes_per_row > 0 ? budget / bytes_per_row : e->plan.rows;
    if (rows < 1)
        rows = 1;
    if (rows > e->plan.rows)
        rows = e->plan.rows;
    work->block_rows = rows;
    work->chunk_count = e->plan.rows < MAX_CHUNKS ? e->plan.rows : MAX_CHUNKS;
}

typedef struct worker_state {
    eval_array *arrays;   /* per value id, allocated for `needed` values */
    eval_scratch scratch;
} worker_state;

static void free_worker(const evaluation *e, worker_state *state)
{
    if (state->arrays != NULL)
        for (int32_t v = 0; v < e->plan.fusion->value_count; v++)
            eval_array_free(&state->arrays[v]);
    free(state->arrays);
    eval_scratch_free(&state->scratch);
}

static fv_status prepare_worker(const pass_work *work, worker_state *state)
{
    const evaluation *e = work->e;
    const fv_fusion *fusion = e->plan.fusion;
    state->arrays = calloc((size_t)fusion->value_count + 1, sizeof(eval_array));
    FV_CHECK_ALLOC(state->arrays);
    for (int32_t v = 0; v < fusion->value_count; v++) {
        if (!work->needed[v])
            continue;
        int64_t capacity = work->block_rows *
                           stored_row_elements(&e->plan.values[v], fusion->values[v].rank);
        FV_TRY(eval_array_allocate(&state->arrays[v], &e->plan, v, capacity));
    }
    return FV_OK;
}

static void free_partials(const pass_work *work, eval_stream_partial *partials)
{
    if (partials == NULL)
        return;
    for (int32_t i = 0; i < work->stream_op_count; i++)
        eval_stream_partial_free(&partials[i]);
    free(partials);
}

static fv_status new_partials(const pass_work *work, eval_stream_partial **out)
{
    eval_stream_partial *partials = calloc((size_t)work->stream_op_count + 1, sizeof *partials);
    FV_CHECK_ALLOC(partials);
    for (int32_t i = 0; i < work->stream_op_count; i++) {
        const fv_op *op = &work->e->plan.fusion->ops[work->stream_ops[i]];
        fv_status status = eval_stream_partial_allocate(&partials[i], &work->e->plan, op);
        if (status != FV_OK) {
            free_partials(work, partials);
            fv_error_trace(__FILE__, __LINE__);
            return status;
        }
    }
    *out = partials;
    return FV_OK;
}

/* Hands a chunk's partials over and merges every chunk that is next in order. */
static void submit_chunk(pass_work *work, int64_t chunk, eval_stream_partial *partials)
{
    pthread_mutex_lock(&work->merge_lock);
    work->slots[chunk] = partials;
    while (work->next_merge < work->chunk_count && work->slots[work->next_merge] != NULL) {
        eval_stream_partial *ready = work->slots[work->next_merge];
        for (int32_t i = 0; i < work->stream_op_count; i++) {
            const fv_op *op = &work->e->plan.fusion->ops[work->stream_ops[i]];
            eval_stream_merge(op, &work->e->totals[work->stream_ops[i]], &ready[i]);
        }
        free_partials(work, ready);
        work->slots[work->next_merge] = NULL;
        work->next_merge++;
    }
    pthread_mutex_unlock(&work->merge_lock);
}

static fv_status run_block(pass_work *work, worker_state *state, int64_t first_row,
                           int64_t rows, eval_stream_partial *partials)
{
    evaluation *e = work->e;
    const fv_fusion *fusion = e->plan.fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t id = fusion->inputs[i];
        if (!work->needed[id])
            continue;
        eval_array_shape(&state->arrays[id], &e->plan, id, rows);
        FV_TRY(generate_input(e, id, &state->arrays[id], first_row));
    }
    for (int32_t i = 0; i < work->block_op_count; i++) {
        const fv_op *op = &fusion->ops[work->block_ops[i]];
        for (int k = 0; k < op->output_count; k++)
            eval_array_shape(&state->arrays[op->outputs[k]], &e->plan, op->outputs[k], rows);
        eval_array *second = op->output_count > 1 ? &state->arrays[op->outputs[1]] : NULL;
        FV_TRY(run_op(e, op, state->arrays, &state->arrays[op->outputs[0]], second,
                      &state->scratch));
    }
    for (int32_t i = 0; i < work->stream_op_count; i++) {
        const fv_op *op = &fusion->ops[work->stream_ops[i]];
        eval_stream_accumulate(&e->plan, op, &state->arrays[op->inputs[0]], &partials[i]);
    }
    for (int32_t o = 0; o < fusion->output_count; o++) {
        int32_t id = fusion->outputs[o];
        if (work->needed[id] && e->plan.values[id].pass == work->pass)
            FV_TRY(deliver(e, o, &state->arrays[id], first_row, rows));
    }
    return FV_OK;
}

static fv_status run_chunk(pass_work *work, worker_state *state, int64_t chunk)
{
    int64_t rows = work->e->plan.rows;
    int64_t first = chunk * rows / work->chunk_count;
    int64_t end = (chunk + 1) * rows / work->chunk_count;
    eval_stream_partial *partials = NULL;
    FV_TRY(new_partials(work, &partials));
    for (int64_t row = first; row < end && !atomic_load(&work->failed); row += work->block_rows) {
        int64_t count = end - row < work->block_rows ? end - row : work->block_rows;
        fv_status status = run_block(work, state, row, count, partials);
        if (status != FV_OK) {
            free_partials(work, partials);
            fv_error_trace(__FILE__, __LINE__);
            return status;
        }
    }
    submit_chunk(work, chunk, partials);
    return FV_OK;
}

static void *pass_worker(void *argument)
{
    pass_work *work = argument;
    worker_state state = {0};
    fv_status status = prepare_worker(work, &state);
    while (status == FV_OK && !atomic_load(&work->failed)) {
        int64_t chunk = atomic_fetch_add(&work->next_chunk, 1);
        if (chunk >= work->chunk_count)
            break;
        status = run_chunk(work, &state, chunk);
    }
    if (status != FV_OK)
        record_failure(work, status);
    free_worker(work->e, &state);
    return NULL;
}

static fv_status run_workers(pass_work *work)
{
    int threads = work->e->threads;
    if (threads > work->chunk_count)
        threads = (int)work->chunk_count;
    pthread_t *handles = calloc((size_t)threads, sizeof(pthread_t));
    FV_CHECK_ALLOC(handles);
    int started = 0;
    for (int t = 1; t < threads; t++) {
        if (pthread_create(&handles[t], NULL, pass_worker, work) != 0)
            break;
        started = t;
    }
    pass_worker(work);
    for (int t = 1; t <= started; t++)
        pthread_join(handles[t], NULL);
    free(handles);
    if (work->status != FV_OK)
        return fv_error_raise(work->status, __FILE__, __LINE__, "%s", work->message);
    return FV_OK;
}

static fv_status finalize_stream_ops(pass_work *work)
{
    evaluation *e = work->e;
    for (int32_t i = 0; i < work->stream_op_count; i++) {
        int32_t op_id = work->stream_ops[i];
        const fv_op *op = &e->plan.fusion->ops[op_id];
        FV_TRY(allocate_global(e, op->outputs[0]));
        eval_stream_finalize(&e->plan, op, &e->totals[op_id], &e->globals[op->outputs[0]]);
        eval_stream_partial_free(&e->totals[op_id]);
    }
    return FV_OK;
}

static fv_status run_pass_blocks(evaluation *e, int pass)
{
    pass_work work = {.e = e, .pass = pass};
    pthread_mutex_init(&work.merge_lock, NULL);
    fv_status status;
    FV_TRY_GOTO(status, plan_pass(&work), done);
    if (work.block_op_count == 0 && work.stream_op_count == 0) {
        bool any_needed = false;
        for (int32_t v = 0; v < e->plan.fusion->value_count && !any_needed; v++)
            any_needed = work.needed[v];
        if (!any_needed)
            goto done;
    }
    choose_block_rows(&work);
    work.slots = calloc((size_t)work.chunk_count + 1, sizeof *work.slots);
    if (work.slots == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    for (int32_t i = 0; i < work.stream_op_count; i++) {
        const fv_op *op = &e->plan.fusion->ops[work.stream_ops[i]];
        FV_TRY_GOTO(status, eval_stream_partial_allocate(&e->totals[work.stream_ops[i]], &e->plan, op),
                    done);
    }
    FV_TRY_GOTO(status, run_workers(&work), done);
    FV_TRY_GOTO(status, finalize_stream_ops(&work), done);
done:
    if (work.slots != NULL)
        for (int64_t c = 0; c < work.chunk_count; c++)
            free_partials(&work, work.slots[c]);
    free(work.slots);
    free(work.needed);
    free(work.block_ops);
    free(work.stream_ops);
    pthread_mutex_destroy(&work.merge_lock);
    return status;
}

/* ---------------------------------------------------------------- run */

static void free_evaluation(evaluation *e)
{
    if (e->globals != NULL)
        for (int32_t v = 0; v < e->plan.fusion->value_count; v++)
            eval_array_free(&e->globals[v]);
    if (e->totals != NULL)
        for (int32_t o = 0; o < e->plan.fusion->op_count; o++)
            eval_stream_partial_free(&e->totals[o]);
    free(e->globals);
    free(e->totals);
    free(e->outputs);
    eval_scratch_free(&e->scratch);
    eval_plan_free(&e->plan);
    pthread_mutex_destroy(&e->sink_lock);
}

static int default_threads(const fv_eval_options *options)
{
    if (options->threads > 0)
        return options->threads;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    return online > 0 ? (int)online : 1;
}

fv_status fv_eval_run(const fv_case *c, const fv_eval_options *options, fv_eval_sink sink,
                      void *context)
{
    evaluation e = {.options = options, .sink = sink, .sink_context = context};
    pthread_mutex_init(&e.sink_lock, NULL);
    e.threads = default_threads(options);
    fv_status status = eval_plan_build(c, options, &e.plan);
    if (status != FV_OK) {
        pthread_mutex_destroy(&e.sink_lock);
        fv_error_prefix("case %s", c->id);
        return status;
    }
    const fv_fusion *fusion = c->fusion;
    e.outputs = calloc((size_t)fusion->output_count + 1, sizeof *e.outputs);
    e.globals = calloc((size_t)fusion->value_count + 1, sizeof *e.globals);
    e.totals = calloc((size_t)fusion->op_count + 1, sizeof *e.totals);
    if (e.outputs == NULL || e.globals == NULL || e.totals == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    for (int32_t o = 0; o < fusion->output_count; o++)
        FV_TRY_GOTO(status, fv_eval_describe_output(c, o, &e.outputs[o]), done);
    for (int pass = 0; pass < e.plan.pass_count; pass++) {
        FV_TRY_GOTO(status, compute_invariant(&e, pass), done);
        FV_TRY_GOTO(status, deliver_invariant_outputs(&e, pass), done);
        if (e.plan.stream_class >= 0)
            FV_TRY_GOTO(status, run_pass_blocks(&e, pass), done);
    }
done:
    free_evaluation(&e);
    return status;
}

/* ------------------------------------------------------ memory sink */

typedef struct memory_sink {
    const fv_case *c;
    fv_eval_output *outputs;
    double **values;
    double **bounds;
} memory_sink;

static fv_status store_block(void *context, int output_index, int64_t first_row,
                             int64_t row_count, const double *values, const double *bounds)
{
    memory_sink *sink = context;
    const fv_eval_output *output = &sink->outputs[output_index];
    size_t offset = (size_t)(first_row * output->row_elements);
    size_t count = (size_t)(row_count * output->row_elements);
    memcpy(sink->values[output_index] + offset, values, count * sizeof(double));
    if (bounds != NULL && sink->bounds[output_index] != NULL)
        memcpy(sink->bounds[output_index] + offset, bounds, count * sizeof(double));
    return FV_OK;
}

fv_status fv_eval_to_memory(const fv_case *c, const fv_eval_options *options, double ***values,
                            double ***bounds)
{
    int32_t count = c->fusion->output_count;
    memory_sink sink = {.c = c};
    sink.outputs = calloc((size_t)count + 1, sizeof *sink.outputs);
    sink.values = calloc((size_t)count + 1, sizeof(double *));
    sink.bounds = calloc((size_t)count + 1, sizeof(double *));
    fv_status status = FV_OK;
    if (sink.outputs == NULL || sink.values == NULL || sink.bounds == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto failed;
    }
    for (int32_t o = 0; o < count; o++) {
        FV_TRY_GOTO(status, fv_eval_describe_output(c, o, &sink.outputs[o]), failed);
        size_t elements = (size_t)(sink.outputs[o].rows * sink.outputs[o].row_elements);
        sink.values[o] = malloc(sizeof(double) * (elements + 1));
        if (options->mode == FV_EVAL_REFERENCE)
            sink.bounds[o] = malloc(sizeof(double) * (elements + 1));
        if (sink.values[o] == NULL || (options->mode == FV_EVAL_REFERENCE && !sink.bounds[o])) {
            status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
            goto failed;
        }
    }
    FV_TRY_GOTO(status, fv_eval_run(c, options, store_block, &sink), failed);
    free(sink.outputs);
    *values = sink.values;
    *bounds = sink.bounds;
    return FV_OK;
failed:
    for (int32_t o = 0; sink.values && o < count; o++) {
        free(sink.values[o]);
        free(sink.bounds[o]);
    }
    free(sink.values);
    free(sink.bounds);
    free(sink.outputs);
    return status;
}
