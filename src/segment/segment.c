/* segment.c: roots, closures, cuts and greedy merging of segments.
 *
 * A candidate segment is a set of roots (values it materializes); its ops are
 * the closure of its roots backwards up to materialized values.  We start
 * with one segment per fusion output and per segment_set input; a segment no
 * family accepts gets the reduction results inside it cut (materialized, each
 * a new segment); then segments are merged pairwise while some family accepts
 * the union and the segment graph stays acyclic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "segment/segment.h"

typedef struct candidate {
    bool *roots;     /* per value id */
    bool alive;
} candidate;

typedef struct segmenter {
    const fv_fusion *fusion;
    const fv_scheduler *const *families; /* NULL: the registry */
    int32_t *order;            /* live ops, topological */
    int32_t op_count;
    int32_t *position;         /* per op id: index in order, or -1 if dead */
    bool *materialized;        /* per value id */
    bool *required;            /* per value id: must stay materialized (output, segment_set input) */
    int32_t *alias_of;         /* per value id */
    candidate *candidates;
    int32_t candidate_count, candidate_capacity;
    char why[1024];
} segmenter;

/* ------------------------------------------------------------- basics */

static bool is_reduction(const fv_fusion *fusion, const fv_op *op)
{
    return fv_ir_op_category(op->kind) == FV_CATEGORY_REDUCTION &&
           !fv_ir_is_trivial_reduction(fusion, op);
}

static fv_status add_candidate(segmenter *s, int32_t *index)
{
    if (s->candidate_count == s->candidate_capacity) {
        int32_t capacity = s->candidate_capacity ? 2 * s->candidate_capacity : 8;
        candidate *grown = realloc(s->candidates, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        s->candidates = grown;
        s->candidate_capacity = capacity;
    }
    candidate *c = &s->candidates[s->candidate_count];
    c->roots = calloc((size_t)s->fusion->value_count + 1, sizeof(bool));
    FV_CHECK_ALLOC(c->roots);
    c->alive = true;
    *index = s->candidate_count++;
    return FV_OK;
}

/* Marks in `ops` (per op id) the ops needed to compute `roots` from
 * materialized values. */
static void closure(const segmenter *s, const bool *roots, bool *ops)
{
    const fv_fusion *fusion = s->fusion;
    memset(ops, 0, (size_t)fusion->op_count + 1);
    bool *needed = calloc((size_t)fusion->value_count + 1, sizeof(bool));
    if (needed == NULL)
        return;
    for (int32_t v = 0; v < fusion->value_count; v++)
        needed[v] = roots[v];
    /* Reverse topological order: one pass suffices. */
    for (int32_t i = s->op_count - 1; i >= 0; i--) {
        const fv_op *op = &fusion->ops[s->order[i]];
        bool wanted = false;
        for (int k = 0; k < op->output_count; k++)
            wanted = wanted || needed[op->outputs[k]];
        if (!wanted || op->kind == FV_OP_SEGMENT_SET)
            continue;
        ops[s->order[i]] = true;
        for (int k = 0; k < op->input_count; k++) {
            int32_t in = op->inputs[k];
            if (!s->materialized[in] || roots[in])
                needed[in] = true;
        }
    }
    free(needed);
}

/* Values the ops read from memory (materialized and not produced inside). */
static bool reads(const segmenter *s, const bool *ops, const bool *roots, int32_t value)
{
    if (!s->materialized[value] || roots[value])
        return false;
    for (int32_t i = 0; i < s->op_count; i++) {
        const fv_op *op = &s->fusion->ops[s->order[i]];
        if (!ops[s->order[i]])
            continue;
        for (int k = 0; k < op->input_count; k++)
            if (op->inputs[k] == value)
                return true;
    }
    return false;
}

/* --------------------------------------------------- segment fusions */

/* Builds the segment as a fusion sharing the whole fusion's value ids: its
 * inputs are what it reads from memory, its outputs its roots. */
static fv_status build_segment_fusion(const segmenter *s, const bool *roots, const bool *ops,
                                      fv_fusion **out)
{
    const fv_fusion *fusion = s->fusion;
    fv_fusion *segment;
    FV_TRY(fv_ir_fusion_copy(fusion, &segment));
    free(segment->inputs); /* a segment may read more values than the fusion's inputs */
    segment->inputs = malloc(sizeof(int32_t) * (size_t)(fusion->value_count + 1));
    if (segment->inputs == NULL) {
        fv_ir_fusion_release(segment);
        FV_FAIL(FV_ERR_NOMEM, "out of memory building a segment");
    }
    segment->input_capacity = fusion->value_count + 1;
    segment->input_count = 0;
    segment->output_count = 0;
    segment->fast_exp = fv_ir_outputs_all_half(fusion);
    for (int32_t v = 0; v < fusion->value_count; v++)
        segment->values[v].input_index = -1;
    /* tensors first (fusion inputs in their order, then intermediates by id),
     * then scalar inputs */
    for (int pass = 0; pass < 3; pass++) {
        for (int32_t v = 0; v < fusion->value_count; v++) {
            if (!reads(s, ops, roots, v))
                continue;
            const fv_value *value = &fusion->values[v];
            bool scalar = value->kind == FV_VALUE_SCALAR;
            bool fusion_input = value->input_index >= 0;
            if ((pass == 0 && (scalar || !fusion_input)) || (pass == 1 && (scalar || fusion_input)) ||
                (pass == 2 && !scalar))
                continue;
            fv_value *copy = &segment->values[v];
            copy->producer = -1;
            copy->input_index = segment->input_count;
            if (!fusion_input)
                for (int d = 0; d < copy->rank; d++) {
                    copy->contiguity[d] = copy->dims[d].broadcast ? -1 : 1;
                    copy->stride_order[d] = (int8_t)(copy->rank - 1 - d);
                }
            segment->inputs[segment->input_count++] = v;
        }
    }
    for (int32_t v = 0; v < fusion->value_count; v++) {
        if (!roots[v])
            continue;
        fv_status status = fv_ir_add_output(segment, v, NULL);
        if (status != FV_OK) {
            fv_ir_fusion_release(segment);
            return status;
        }
    }
    *out = segment;
    return FV_OK;
}

/* Whether some family accepts the candidate; the view is kept on success. */
static fv_status try_schedule(segmenter *s, const bool *roots, const fv_scheduler **scheduler,
                              fv_fusion **segment_fusion, fv_segment_view *view)
{
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    FV_CHECK_ALLOC(ops);
    closure(s, roots, ops);
    fv_fusion *fusion = NULL;
    fv_status status = build_segment_fusion(s, roots, ops, &fusion);
    free(ops);
    FV_TRY(status);
    status = fv_sched_view_build(fusion, view);
    if (status != FV_OK) {
        fv_ir_fusion_release(fusion);
        return status;
    }
    *scheduler = fv_sched_find_in(s->families, view, s->why, sizeof s->why);
    *segment_fusion = fusion;
    return FV_OK;
}

static fv_status accepted(segmenter *s, const bool *roots, bool *result)
{
    const fv_scheduler *scheduler;
    fv_fusion *fusion;
    fv_segment_view view;
    FV_TRY(try_schedule(s, roots, &scheduler, &fusion, &view));
    *result = scheduler != NULL;
    fv_sched_view_free(&view);
    fv_ir_fusion_release(fusion);
    return FV_OK;
}

/* ------------------------------------------------------------- roots */

static void mark_root(segmenter *s, candidate *c, int32_t value)
{
    c->roots[value] = true;
    s->materialized[value] = true;
}

/* One candidate per fusion output and segment_set input; the outputs of one
 * op (var_mean) start together. */
static fv_status initial_candidates(segmenter *s)
{
    const fv_fusion *fusion = s->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++)
        s->materialized[fusion->inputs[i]] = true;
    int32_t *candidate_of_op = malloc(sizeof(int32_t) * (size_t)(fusion->op_count + 1));
    FV_CHECK_ALLOC(candidate_of_op);
    for (int32_t o = 0; o < fusion->op_count; o++)
        candidate_of_op[o] = -1;
    fv_status status = FV_OK;
    for (int32_t i = 0; i < s->op_count && status == FV_OK; i++) {
        const fv_op *op = &fusion->ops[s->order[i]];
        if (op->kind != FV_OP_SEGMENT_SET)
            continue;
        s->alias_of[op->outputs[0]] = op->inputs[0];
        s->materialized[op->outputs[0]] = true;
        s->required[op->inputs[0]] = true;
    }
    for (int32_t v = 0; v < fusion->value_count && status == FV_OK; v++) {
        bool is_output = false;
        for (int32_t o = 0; o < fusion->output_count; o++)
            is_output = is_output || fusion->outputs[o] == v;
        if (is_output)
            s->required[v] = true;
        if (!s->required[v] || fusion->values[v].producer < 0 || s->alias_of[v] >= 0)
            continue;
        int32_t producer = fusion->values[v].producer;
        if (candidate_of_op[producer] < 0)
            status = add_candidate(s, &candidate_of_op[producer]);
        if (status == FV_OK)
            mark_root(s, &s->candidates[candidate_of_op[producer]], v);
    }
    free(candidate_of_op);
    return status;
}

/* Cuts every reduction inside an unaccepted candidate: its results become
 * roots of new candidates.  *cut says whether anything changed. */
static fv_status cut_reductions(segmenter *s, int32_t index, bool *cut)
{
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    FV_CHECK_ALLOC(ops);
    closure(s, s->candidates[index].roots, ops);
    *cut = false;
    fv_status status = FV_OK;
    for (int32_t i = 0; i < s->op_count && status == FV_OK; i++) {
        const fv_op *op = &s->fusion->ops[s->order[i]];
        if (!ops[s->order[i]] || !is_reduction(s->fusion, op))
            continue;
        if (s->candidates[index].roots[op->outputs[0]])
            continue;
        int32_t created;
        status = add_candidate(s, &created);
        if (status != FV_OK)
            break;
        for (int k = 0; k < op->output_count; k++)
            mark_root(s, &s->candidates[created], op->outputs[k]);
        *cut = true;
    }
    free(ops);
    return status;
}

static fv_status cut_until_accepted(segmenter *s)
{
    for (int32_t i = 0; i < s->candidate_count; i++) {
        bool ok;
        FV_TRY(accepted(s, s->candidates[i].roots, &ok));
        if (ok)
            continue;
        bool cut = false;
        FV_TRY(cut_reductions(s, i, &cut));
        if (cut) {
            i = -1; /* closures changed: check every candidate again */
            continue;
        }
        char label[40] = "?";
        for (int32_t v = 0; v < s->fusion->value_count; v++)
            if (s->candidates[i].roots[v]) {
                fv_ir_value_label(s->fusion, v, label);
                break;
            }
        FV_FAIL(FV_ERR_UNSUPPORTED, "no scheduler accepts the segment computing %s: %s", label,
                s->why);
    }
    return FV_OK;
}

/* ------------------------------------------------------------ merging */

/* Candidate a depends on b if a reads a root of b. */
static bool depends(const segmenter *s, int32_t a, int32_t b, const bool *ops_a)
{
    for (int32_t v = 0; v < s->fusion->value_count; v++) {
        bool root_of_b = s->candidates[b].roots[v] ||
                         (s->alias_of[v] >= 0 && s->candidates[b].roots[s->alias_of[v]]);
        if (root_of_b && reads(s, ops_a, s->candidates[a].roots, v))
            return true;
    }
    return false;
}

static fv_status dependency_matrix(const segmenter *s, bool *matrix)
{
    int32_t n = s->candidate_count;
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    FV_CHECK_ALLOC(ops);
    memset(matrix, 0, (size_t)(n * n));
    for (int32_t a = 0; a < n; a++) {
        if (!s->candidates[a].alive)
            continue;
        closure(s, s->candidates[a].roots, ops);
        for (int32_t b = 0; b < n; b++)
            if (b != a && s->candidates[b].alive)
                matrix[a * n + b] = depends(s, a, b, ops);
    }
    free(ops);
    return FV_OK;
}

/* True if a path a -> x -> ... -> b exists through some other candidate. */
static bool indirect_path(const segmenter *s, const bool *matrix, int32_t a, int32_t b)
{
    int32_t n = s->candidate_count;
    bool *seen = calloc((size_t)n + 1, sizeof(bool));
    int32_t *stack = malloc(sizeof(int32_t) * (size_t)(n + 1));
    if (seen == NULL || stack == NULL) {
        free(seen);
        free(stack);
        return true; /* be conservative */
    }
    int32_t depth = 0;
    for (int32_t x = 0; x < n; x++)
        if (x != b && matrix[a * n + x]) {
            stack[depth++] = x;
            seen[x] = true;
        }
    bool found = false;
    while (depth > 0 && !found) {
        int32_t x = stack[--depth];
        for (int32_t y = 0; y < n && !found; y++) {
            if (!matrix[x * n + y] || seen[y])
                continue;
            if (y == b)
                found = true;
            seen[y] = true;
            stack[depth++] = y;
        }
    }
    free(seen);
    free(stack);
    return found;
}

/* Roots of the merged candidate: a root no other candidate reads stops
 * being materialized, unless an output or segment_set needs it. */
static void drop_internal_roots(segmenter *s, int32_t merged)
{
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    if (ops == NULL)
        return;
    for (int32_t v = 0; v < s->fusion->value_count; v++) {
        if (!s->candidates[merged].roots[v] || s->required[v])
            continue;
        bool read_elsewhere = false;
        for (int32_t other = 0; other < s->candidate_count && !read_elsewhere; other++) {
            if (other == merged || !s->candidates[other].alive)
                continue;
            closure(s, s->candidates[other].roots, ops);
            read_elsewhere = reads(s, ops, s->candidates[other].roots, v);
        }
        if (!read_elsewhere) {
            s->candidates[merged].roots[v] = false;
            s->materialized[v] = false;
        }
    }
    free(ops);
}

/* A segment_set separates: no candidate may both compute a value and read
 * it back through the segment_set's alias. */
static bool crosses_segment_set(const segmenter *s, int32_t a, int32_t b)
{
    const bool *roots_a = s->candidates[a].roots, *roots_b = s->candidates[b].roots;
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    if (ops == NULL)
        return true;
    bool crosses = false;
    for (int pass = 0; pass < 2 && !crosses; pass++) {
        const bool *reader = pass == 0 ? roots_a : roots_b;
        const bool *writer = pass == 0 ? roots_b : roots_a;
        closure(s, reader, ops);
        for (int32_t v = 0; v < s->fusion->value_count && !crosses; v++)
            crosses = s->alias_of[v] >= 0 && writer[s->alias_of[v]] && reads(s, ops, reader, v);
    }
    free(ops);
    return crosses;
}

/* Tries to merge b into a; keeps the merge if accepted. */
static fv_status try_merge(segmenter *s, int32_t a, int32_t b, bool *merged)
{
    *merged = false;
    if (crosses_segment_set(s, a, b))
        return FV_OK;
    int32_t value_count = s->fusion->value_count;
    bool *saved_roots = malloc((size_t)value_count + 1);
    bool *saved_materialized = malloc((size_t)value_count + 1);
    FV_CHECK_ALLOC(saved_roots);
    if (saved_materialized == NULL) {
        free(saved_roots);
        FV_FAIL(FV_ERR_NOMEM, "out of memory merging segments");
    }
    memcpy(saved_roots, s->candidates[a].roots, (size_t)value_count);
    memcpy(saved_materialized, s->materialized, (size_t)value_count);
    for (int32_t v = 0; v < value_count; v++)
        s->candidates[a].roots[v] = s->candidates[a].roots[v] || s->candidates[b].roots[v];
    s->candidates[b].alive = false;
    drop_internal_roots(s, a);
    bool ok;
    fv_status status = accepted(s, s->candidates[a].roots, &ok);
    if (status == FV_OK && ok) {
        *merged = true;
    } else {
        memcpy(s->candidates[a].roots, saved_roots, (size_t)value_count);
        memcpy(s->materialized, saved_materialized, (size_t)value_count);
        s->candidates[b].alive = true;
    }
    free(saved_roots);
    free(saved_materialized);
    return status;
}

/* Merges producer-consumer pairs first (they save memory traffic), then any
 * pair, until nothing merges. */
static fv_status merge_candidates(segmenter *s)
{
    int32_t n = s->candidate_count;
    bool *matrix = malloc((size_t)(n * n) + 1);
    FV_CHECK_ALLOC(matrix);
    fv_status status = FV_OK;
    bool progress = true;
    while (progress && status == FV_OK) {
        progress = false;
        status = dependency_matrix(s, matrix);
        for (int round = 0; round < 2 && !progress && status == FV_OK; round++)
            for (int32_t a = 0; a < n && !progress && status == FV_OK; a++)
                for (int32_t b = 0; b < n && !progress && status == FV_OK; b++) {
                    if (a == b || !s->candidates[a].alive || !s->candidates[b].alive)
                        continue;
                    bool linked = matrix[a * n + b] || matrix[b * n + a];
                    if ((round == 0) != linked)
                        continue;
                    if (indirect_path(s, matrix, a, b) || indirect_path(s, matrix, b, a))
                        continue;
                    status = try_merge(s, a, b, &progress);
                }
    }
    free(matrix);
    return status;
}

/* --------------------------------------------------------- forwarding */

static bool is_unary(const fv_op *op)
{
    return op->kind == FV_OP_CAST || op->kind == FV_OP_SET ||
           fv_ir_op_category(op->kind) == FV_CATEGORY_UNARY;
}

/* nvFuser's forwarding: single-use unary chains from inputs and from fulls
 * that are not outputs (and the chain stops at outputs and segment_sets). */
static void label_forwarded(const segmenter *s, const int32_t *uses, const int32_t *single_use,
                            bool *forwarded)
{
    const fv_fusion *fusion = s->fusion;
    int32_t start_count = fusion->input_count;
    for (int32_t i = 0; i < s->op_count; i++)
        start_count += fusion->ops[s->order[i]].kind == FV_OP_FULL;
    for (int32_t i = -fusion->input_count; i < s->op_count; i++) {
        int32_t value;
        if (i < 0) {
            value = fusion->inputs[i + fusion->input_count];
        } else {
            const fv_op *op = &fusion->ops[s->order[i]];
            if (op->kind != FV_OP_FULL || s->required[op->outputs[0]])
                continue;
            forwarded[s->order[i]] = true;
            value = op->outputs[0];
        }
        while (uses[value] == 1) {
            int32_t op_id = single_use[value];
            const fv_op *op = &fusion->ops[op_id];
            if (!is_unary(op) || s->required[op->outputs[0]])
                break;
            forwarded[op_id] = true;
            value = op->outputs[0];
        }
    }
}

static fv_status compute_forwarding(const segmenter *s, bool *forwarded)
{
    const fv_fusion *fusion = s->fusion;
    int32_t *uses = calloc((size_t)fusion->value_count + 1, sizeof(int32_t));
    int32_t *single_use = calloc((size_t)fusion->value_count + 1, sizeof(int32_t));
    if (uses == NULL || single_use == NULL) {
        free(uses);
        free(single_use);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    for (int32_t i = 0; i < s->op_count; i++) {
        const fv_op *op = &fusion->ops[s->order[i]];
        for (int k = 0; k < op->input_count; k++) {
            uses[op->inputs[k]]++;
            single_use[op->inputs[k]] = s->order[i];
        }
    }
    label_forwarded(s, uses, single_use, forwarded);
    free(uses);
    free(single_use);
    return FV_OK;
}

/* ------------------------------------------------------------- result */

static fv_status emit_segment(segmenter *s, int32_t index, fv_segmentation *out,
                              const int32_t *op_segment_count)
{
    fv_segment *segment = &out->segments[out->count];
    memset(segment, 0, sizeof *segment);
    FV_TRY(try_schedule(s, s->candidates[index].roots, &segment->scheduler, &segment->fusion,
                        &segment->view));
    out->count++;
    if (segment->scheduler == NULL)
        FV_FAIL(FV_ERR_INTERNAL, "a merged segment lost its scheduler: %s", s->why);
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    segment->ops = malloc(sizeof(int32_t) * (size_t)(s->op_count + 1));
    segment->forwarded = calloc((size_t)s->op_count + 1, sizeof(bool));
    segment->recomputed = calloc((size_t)s->op_count + 1, sizeof(bool));
    if (!ops || !segment->ops || !segment->forwarded || !segment->recomputed) {
        free(ops);
        FV_FAIL(FV_ERR_NOMEM, "out of memory");
    }
    closure(s, s->candidates[index].roots, ops);
    for (int32_t i = 0; i < s->op_count; i++) {
        int32_t op_id = s->order[i];
        if (!ops[op_id])
            continue;
        int32_t k = segment->op_count++;
        segment->ops[k] = op_id;
        segment->forwarded[k] = out->forwarded_op[op_id];
        segment->recomputed[k] = !out->forwarded_op[op_id] && op_segment_count[op_id] > 1;
    }
    free(ops);
    return FV_OK;
}

/* Orders the surviving candidates so each comes after those it reads. */
static fv_status order_segments(segmenter *s, fv_segmentation *out)
{
    int32_t n = s->candidate_count;
    bool *matrix = malloc((size_t)(n * n) + 1);
    bool *placed = calloc((size_t)n + 1, sizeof(bool));
    int32_t *op_segment_count = calloc((size_t)s->fusion->op_count + 1, sizeof(int32_t));
    bool *ops = calloc((size_t)s->fusion->op_count + 1, sizeof(bool));
    fv_status status = FV_OK;
    if (!matrix || !placed || !op_segment_count || !ops) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    FV_TRY_GOTO(status, dependency_matrix(s, matrix), done);
    for (int32_t a = 0; a < n; a++) {
        if (!s->candidates[a].alive)
            continue;
        closure(s, s->candidates[a].roots, ops);
        for (int32_t o = 0; o < s->fusion->op_count; o++)
            op_segment_count[o] += ops[o];
    }
    out->segments = calloc((size_t)n + 1, sizeof(fv_segment));
    if (out->segments == NULL) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    for (int32_t placed_count = 0;; placed_count++) {
        int32_t next = -1;
        for (int32_t a = 0; a < n && next < 0; a++) {
            if (!s->candidates[a].alive || placed[a])
                continue;
            bool ready = true;
            for (int32_t b = 0; b < n && ready; b++)
                ready = !(matrix[a * n + b] && !placed[b]);
            if (ready)
                next = a;
        }
        if (next < 0)
            break;
        placed[next] = true;
        FV_TRY_GOTO(status, emit_segment(s, next, out, op_segment_count), done);
    }
done:
    free(matrix);
    free(placed);
    free(op_segment_count);
    free(ops);
    return status;
}

fv_status fv_segment_fusion(const fv_fusion *fusion, fv_segmentation *out)
{
    return fv_segment_fusion_with(fusion, NULL, out);
}

fv_status fv_segment_fusion_with(const fv_fusion *fusion, const fv_scheduler *const *families,
                                 fv_segmentation *out)
{
    memset(out, 0, sizeof *out);
    segmenter s = {.fusion = fusion, .families = families};
    fv_status status = fv_ir_live_ops(fusion, &s.order, &s.op_count);
    if (status != FV_OK)
        return status;
    int32_t values = fusion->value_count + 1;
    s.materialized = calloc((size_t)values, sizeof(bool));
    s.required = calloc((size_t)values, sizeof(bool));
    s.alias_of = malloc(sizeof(int32_t) * (size_t)values);
    out->forwarded_op = calloc((size_t)fusion->op_count + 1, sizeof(bool));
    if (!s.materialized || !s.required || !s.alias_of || !out->forwarded_op) {
        status = fv_error_raise(FV_ERR_NOMEM, __FILE__, __LINE__, "out of memory");
        goto done;
    }
    for (int32_t v = 0; v < fusion->value_count; v++)
        s.alias_of[v] = -1;
    FV_TRY_GOTO(status, initial_candidates(&s), done);
    FV_TRY_GOTO(status, compute_forwarding(&s, out->forwarded_op), done);
    FV_TRY_GOTO(status, cut_until_accepted(&s), done);
    FV_TRY_GOTO(status, merge_candidates(&s), done);
    FV_TRY_GOTO(status, order_segments(&s, out), done);
    out->materialized = s.materialized;
    out->alias_of = s.alias_of;
    s.materialized = NULL;
    s.alias_of = NULL;
done:
    for (int32_t i = 0; i < s.candidate_count; i++)
        free(s.candidates[i].roots);
    free(s.candidates);
    free(s.order);
    free(s.materialized);
    free(s.required);
    free(s.alias_of);
    if (status != FV_OK)
        fv_segmentation_free(out);
    return status;
}

void fv_segmentation_free(fv_segmentation *segmentation)
{
    for (int32_t i = 0; i < segmentation->count; i++) {
        fv_segment *segment = &segmentation->segments[i];
        fv_sched_view_free(&segment->view);
        fv_ir_fusion_release(segment->fusion);
        free(segment->ops);
        free(segment->forwarded);
        free(segment->recomputed);
    }
    free(segmentation->segments);
    free(segmentation->materialized);
    free(segmentation->alias_of);
    free(segmentation->forwarded_op);
    memset(segmentation, 0, sizeof *segmentation);
}

/* ------------------------------------------------------------ printing */

static void print_value(const fv_fusion *fusion, int32_t v, fv_text *out)
{
    char label[40];
    const fv_value *value = &fusion->values[v];
    fv_text_printf(out, "%s %s [", fv_ir_value_label(fusion, v, label), fv_dtype_name(value->dtype));
    for (int d = 0; d < value->rank; d++) {
        fv_dim dim = value->dims[d];
        if (dim.broadcast && !dim.expanded)
            fv_text_printf(out, "%s1", d ? ", " : "");
        else if (dim.symbol >= 0)
            fv_text_printf(out, "%ss%d", d ? ", " : "", (int)fv_ir_symbol_root(fusion, dim.symbol));
        else
            fv_text_printf(out, "%s%lld", d ? ", " : "", (long long)dim.extent);
    }
    fv_text_printf(out, "]");
}

void fv_segmentation_print(const fv_segmentation *segmentation, const fv_fusion *fusion,
                           fv_text *out)
{
    fv_text_printf(out, "%d segment%s\n", (int)segmentation->count,
                   segmentation->count == 1 ? "" : "s");
    for (int32_t i = 0; i < segmentation->count; i++) {
        const fv_segment *segment = &segmentation->segments[i];
        const fv_fusion *sf = segment->fusion;
        fv_text_printf(out, "segment %d: %s\n  reads:", (int)i, segment->scheduler->name);
        for (int32_t k = 0; k < sf->input_count; k++) {
            fv_text_printf(out, k ? ", " : " ");
            print_value(fusion, sf->inputs[k], out);
        }
        fv_text_printf(out, "\n  writes:");
        for (int32_t k = 0; k < sf->output_count; k++) {
            fv_text_printf(out, k ? ", " : " ");
            print_value(fusion, sf->outputs[k], out);
        }
        fv_text_printf(out, "\n  ops:\n");
        for (int32_t k = 0; k < segment->op_count; k++) {
            const fv_op *op = &fusion->ops[segment->ops[k]];
            char label[40];
            fv_text_printf(out, "    %-18s -> %-10s line %-4d%s\n", fv_ir_op_name(op->kind),
                           fv_ir_value_label(fusion, op->outputs[0], label), op->loc.line,
                           segment->forwarded[k] ? " [forwarded]"
                                                 : (segment->recomputed[k] ? " [recomputed]" : ""));
        }
    }
    for (int32_t v = 0; v < fusion->value_count; v++)
        if (segmentation->alias_of[v] >= 0) {
            char a[40], b[40];
            fv_text_printf(out, "segment_set: %s aliases %s\n", fv_ir_value_label(fusion, v, a),
                           fv_ir_value_label(fusion, segmentation->alias_of[v], b));
        }
}
