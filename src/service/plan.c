/* plan.c: segment, schedule and emit the kernels of one case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"
#include "common/sha256.h"
#include "service/plan.h"

/* The case as a segment's kernel sees it: the segment's fusion (same value
 * ids and symbols), with scalar inputs moved to the segment's input order. */
static void segment_case(const fv_case *c, const fv_segment *segment, fv_case *out)
{
    *out = *c;
    out->fusion = segment->fusion;
    const fv_fusion *sf = segment->fusion;
    for (int32_t i = 0; i < sf->input_count && i < FV_CASE_MAX_INPUTS; i++) {
        int32_t global_index = c->fusion->values[sf->inputs[i]].input_index;
        out->scalar_inputs[i] = global_index >= 0 ? c->scalar_inputs[global_index] : 0;
    }
}

/* Whether the segment's family is selected for the case: a family with a
 * `selected` hook (see fv_scheduler.selected) is when the case forces its
 * approach, is not when the case forces another, and otherwise asks the
 * hook.  FV_ERR_UNSUPPORTED with the reason if not. */
static fv_status check_selected(const fv_kernel_plan *kernel, const fv_device *device)
{
    const fv_scheduler *scheduler = kernel->segment->scheduler;
    const fv_case *c = &kernel->segment_case;
    if (scheduler->selected == NULL || c->approach == scheduler->approach)
        return FV_OK;
    if (c->approach != FV_APPROACH_AUTO)
        FV_FAIL(FV_ERR_UNSUPPORTED, "the case forces the %s approach",
                c->approach == FV_APPROACH_MULTIWAVE ? "multi-wave" : "warp-specialized");
    char why[256] = "";
    if (scheduler->selected(&kernel->segment->view, c, device, why, sizeof why))
        return FV_OK;
    FV_FAIL(FV_ERR_UNSUPPORTED, "%s", why);
}

/* The kernel's source for `params`, in *source (the caller frees it). */
static fv_status emit_source(const fv_kernel_plan *kernel, const fv_schedule_params *params,
                             char **source)
{
    fv_text text = {0};
    fv_status status = kernel->segment->scheduler->emit(&kernel->segment->view, params,
                                                        kernel->name, &text);
    *source = status == FV_OK ? fv_text_take(&text) : NULL;
    fv_text_free(&text);
    FV_TRY(status);
    FV_CHECK_ALLOC(*source);
    return FV_OK;
}

static fv_status plan_kernel(const fv_case *c, const fv_segment *segment, int index,
                             const fv_device *device, fv_kernel_plan *kernel,
                             bool *not_selected)
{
    memset(kernel, 0, sizeof *kernel);
    kernel->segment = segment;
    segment_case(c, segment, &kernel->segment_case);
    const fv_scheduler *scheduler = segment->scheduler;
    snprintf(kernel->name, sizeof kernel->name, "fv_segment%d_%s", index, scheduler->name);
    fv_status status = check_selected(kernel, device);
    *not_selected = status != FV_OK;
    if (status != FV_OK)
        return status;
    status = scheduler->choose(&segment->view, &kernel->segment_case, device, &kernel->params);
    if (status == FV_OK)
        status = scheduler->launch(&segment->view, &kernel->params, &kernel->segment_case,
                                   device, &kernel->launch);
    if (status != FV_OK) {
        fv_error_prefix("segment %d (%s)", index, scheduler->name);
        return status;
    }
    status = emit_source(kernel, &kernel->params, &kernel->source);
    if (status != FV_OK) {
        fv_error_prefix("segment %d (%s)", index, scheduler->name);
        return status;
    }
    fv_sha256_hex_of(kernel->source, strlen(kernel->source), kernel->hash);
    return FV_OK;
}

/* One attempt with the given families; on a family's FV_ERR_UNSUPPORTED
 * for these sizes (or because it was not selected: *not_selected), *rejected
 * names it. */
static fv_status plan_with(const fv_case *c, const fv_device *device,
                           const fv_scheduler *const *families, fv_case_plan *plan,
                           const fv_scheduler **rejected, bool *not_selected)
{
    *rejected = NULL;
    *not_selected = false;
    FV_TRY(fv_segment_fusion_with(c->fusion, families, &plan->segmentation));
    plan->kernels = calloc((size_t)plan->segmentation.count + 1, sizeof *plan->kernels);
    if (plan->kernels == NULL)
        FV_FAIL(FV_ERR_NOMEM, "out of memory planning a case");
    for (int32_t i = 0; i < plan->segmentation.count; i++) {
        fv_status status = plan_kernel(c, &plan->segmentation.segments[i], (int)i, device,
                                       &plan->kernels[i], not_selected);
        plan->kernel_count = i + 1;
        if (status == FV_ERR_UNSUPPORTED)
            *rejected = plan->segmentation.segments[i].scheduler;
        if (status != FV_OK)
            return status;
    }
    return FV_OK;
}

fv_status fv_plan_case(const fv_case *c, const fv_device *device, fv_case_plan *plan)
{
    return fv_plan_case_excluding(c, device, NULL, NULL, plan);
}

static bool listed(const fv_scheduler *const *list, const fv_scheduler *family)
{
    for (int i = 0; list != NULL && list[i] != NULL; i++)
        if (list[i] == family)
            return true;
    return false;
}

/* Appends "family not selected|not used: why" to a note. */
static void add_note(char *note, size_t size, const fv_scheduler *rejected, bool not_selected)
{
    size_t used = strlen(note);
    snprintf(note + used, size - used, "%s%s %s: %s", used ? "; " : "", rejected->name,
             not_selected ? "not selected" : "not used", fv_error_message());
}

fv_status fv_plan_case_excluding(const fv_case *c, const fv_device *device,
                                 const fv_scheduler *const *excluded, const char *reason,
                                 fv_case_plan *plan)
{
    /* The notes outlive the attempts; the plan gets them at the end. */
    char fallback[sizeof plan->fallback] = "", selection[sizeof plan->selection] = "";
    if (reason != NULL)
        snprintf(fallback, sizeof fallback, "%s", reason);
    memset(plan, 0, sizeof *plan);
    const fv_scheduler *const *registry = fv_sched_registry();
    const fv_scheduler *families[16];
    int count = 0;
    for (int i = 0; registry[i] != NULL && count < 15; i++)
        if (!listed(excluded, registry[i]))
            families[count++] = registry[i];
    families[count] = NULL;
    for (;;) {
        const fv_scheduler *rejected;
        bool not_selected;
        fv_status status = plan_with(c, device, families, plan, &rejected, &not_selected);
        if (status != FV_OK)
            fv_plan_free(plan);
        if (status != FV_ERR_UNSUPPORTED || rejected == NULL) {
            snprintf(plan->fallback, sizeof plan->fallback, "%s", fallback);
            snprintf(plan->selection, sizeof plan->selection, "%s", selection);
            return status;
        }
        /* Set the family aside and segment again with the others. */
        if (not_selected)
            add_note(selection, sizeof selection, rejected, true);
        else
            add_note(fallback, sizeof fallback, rejected, false);
        fv_error_clear();
        int kept = 0;
        for (int i = 0; i < count; i++)
            if (families[i] != rejected)
                families[kept++] = families[i];
        families[kept] = NULL;
        count = kept;
    }
}

fv_case_approach fv_plan_approach(const fv_case_plan *plan)
{
    for (int32_t k = 0; k < plan->kernel_count; k++) {
        fv_case_approach approach = plan->kernels[k].segment->scheduler->approach;
        if (approach != FV_APPROACH_AUTO)
            return approach;
    }
    return FV_APPROACH_AUTO;
}

bool fv_plan_uses_approach(const fv_case_plan *plan, fv_case_approach approach)
{
    for (int32_t k = 0; k < plan->kernel_count; k++)
        if (plan->kernels[k].segment->scheduler->approach == approach)
            return true;
    return false;
}

/* Emits `kernel` again with `params`: where the source differs, puts it in
 * place with its hash, `params` and `note` (the relief_note) and hands the
 * replaced source to the caller in *replaced; else *replaced is NULL and
 * the kernel unchanged. */
static fv_status emit_in_place(fv_kernel_plan *kernel, const fv_schedule_params *params,
                               const char *note, char **replaced)
{
    *replaced = NULL;
    char *source;
    FV_TRY(emit_source(kernel, params, &source));
    if (strcmp(source, kernel->source) == 0) {  /* the form changes nothing */
        free(source);
        return FV_OK;
    }
    *replaced = kernel->source;
    snprintf(kernel->relief_note, sizeof kernel->relief_note, "%s", note);
    kernel->source = source;
    fv_sha256_hex_of(source, strlen(source), kernel->hash);
    kernel->params = *params;
    return FV_OK;
}

fv_status fv_plan_relieve_registers(fv_kernel_plan *kernel, int spill_bytes, bool *relieved)
{
    *relieved = false;
    const fv_scheduler *scheduler = kernel->segment->scheduler;
    fv_schedule_params params = kernel->params;
    char what[160] = "";
    if (scheduler->relieve_registers == NULL ||
        !scheduler->relieve_registers(&kernel->segment->view, &params, what, sizeof what))
        return FV_OK;
    char note[sizeof kernel->relief_note], *replaced;
    snprintf(note, sizeof note, "emitted again after spilling %d bytes: %s", spill_bytes, what);
    FV_TRY(emit_in_place(kernel, &params, note, &replaced));
    *relieved = replaced != NULL;
    free(replaced);
    return FV_OK;
}

fv_status fv_plan_hold_occupancy(fv_kernel_plan *kernel, const fv_device *device,
                                 fv_kernel_plan *previous, bool *bounded)
{
    *bounded = false;
    const fv_scheduler *scheduler = kernel->segment->scheduler;
    fv_schedule_params params = kernel->params;
    char what[160] = "";
    if (scheduler->hold_occupancy == NULL ||
        !scheduler->hold_occupancy(&kernel->segment->view, &params, device,
                                   kernel->compiled_registers, what, sizeof what))
        return FV_OK;
    fv_kernel_plan before = *kernel;
    char note[sizeof kernel->relief_note], *replaced;
    snprintf(note, sizeof note, "%s%s%s", kernel->relief_note, kernel->relief_note[0] ? "; " : "",
             what);
    FV_TRY(emit_in_place(kernel, &params, note, &replaced));
    if (replaced == NULL)
        return FV_OK;
    *previous = before;  /* its source, the replaced one, now the caller's */
    *bounded = true;
    return FV_OK;
}

void fv_plan_restore_kernel(fv_kernel_plan *kernel, fv_kernel_plan *previous)
{
    free(kernel->source);
    *kernel = *previous;
    previous->source = NULL;
}

void fv_plan_forget_kernel(fv_kernel_plan *previous)
{
    free(previous->source);
    previous->source = NULL;
}

void fv_plan_free(fv_case_plan *plan)
{
    for (int32_t i = 0; i < plan->kernel_count; i++)
        free(plan->kernels[i].source);
    free(plan->kernels);
    fv_segmentation_free(&plan->segmentation);
    memset(plan, 0, sizeof *plan);
}

fv_status fv_plan_scalar_arguments(const fv_kernel_plan *kernel, double *values, int capacity,
                                   int *count)
{
    const fv_segment_view *view = &kernel->segment->view;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(view->fusion->value_count + 1));
    FV_CHECK_ALLOC(ids);
    int32_t found = fv_codegen_scalar_params(view, ids);
    fv_status status = FV_OK;
    if (found > capacity)
        status = fv_error_raise(FV_ERR_UNSUPPORTED, __FILE__, __LINE__,
                                "kernel %s takes %d scalars; at most %d are supported",
                                kernel->name, (int)found, capacity);
    for (int32_t i = 0; i < found && status == FV_OK; i++)
        status = fv_case_scalar_value(&kernel->segment_case, ids[i], &values[i]);
    *count = (int)found;
    free(ids);
    return status;
}
