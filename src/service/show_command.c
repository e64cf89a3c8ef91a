/* show_command.c: `fuservalidate show CASE [PATH...]` prints everything known
 * about one case: where it comes from, its sizes, dtypes and inputs, its
 * outputs with their reduction sizes and nvFuser tolerances, its reference
 * key, the IR in frontend syntax, the segments (with forwarded and recomputed
 * ops), each kernel's scheduler, parameters and launch shape, and the
 * generated CUDA.  --ir, --segments and --cuda pick parts.  With --arch the
 * kernels are compiled for that target as a run would compile them: the
 * plan shown is the one a run launches (a kernel that spills emitted again
 * in a lighter form, or its family set aside), with each kernel's registers
 * and spills. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/commands.h"
#include "service/pipeline.h"
#include "service/plan.h"
#include "validate/references.h"

enum { SHOWN_KERNEL_CAPACITY = 16 }; /* a run launches at most 16 kernels a case */

static void print_inputs(const fv_case *c)
{
    const fv_fusion *fusion = c->fusion;
    for (int32_t i = 0; i < fusion->input_count; i++) {
        int32_t id = fusion->inputs[i];
        char label[40], distribution[96];
        fv_ir_value_label(fusion, id, label);
        if (fusion->values[id].kind == FV_VALUE_SCALAR) {
            printf("  input %d %-8s scalar %s = %.17g\n", (int)i, label,
                   fv_dtype_name(fusion->values[id].dtype), c->scalar_inputs[i]);
            continue;
        }
        int64_t extents[FV_MAX_RANK];
        int rank = fv_case_shape(c, id, extents);
        fv_distribution_format(&c->distributions[i], distribution, sizeof distribution);
        printf("  input %d %-8s %-5s [", (int)i, label, fv_dtype_name(fusion->values[id].dtype));
        for (int d = 0; d < rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)extents[d]);
        printf("] %s\n", distribution);
    }
}

static void print_outputs(const fv_case *c)
{
    for (int32_t o = 0; o < c->fusion->output_count; o++) {
        fv_eval_output output;
        if (fv_eval_describe_output(c, (int)o, &output) != FV_OK)
            continue;
        char label[40];
        fv_ir_value_label(c->fusion, output.value, label);
        double absolute, relative;
        fv_tolerance_nvfuser(output.dtype, output.reduction_size, &absolute, &relative);
        printf("  output %d %-8s %-5s [", (int)o, label, fv_dtype_name(output.dtype));
        for (int d = 0; d < output.rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)output.extents[d]);
        printf("] reduction size %lld, nvFuser tolerance atol %.3g rtol %.3g\n",
               (long long)output.reduction_size, absolute, relative);
    }
}

/* What NVRTC reported for each kernel of the plan that is shown (the last
 * compilation of each index: the plan a run would launch). */
typedef struct compiled_kernels {
    fv_rt_kernel_resources resources[SHOWN_KERNEL_CAPACITY];
    int32_t count;
} compiled_kernels;

static void note_compiled(void *context, const fv_kernel_plan *kernel,
                          const fv_rt_kernel_resources *resources, const char *arch,
                          int32_t index, int32_t count)
{
    (void)arch;
    compiled_kernels *compiled = context;
    if (kernel != NULL && index >= 0 && index < SHOWN_KERNEL_CAPACITY)
        compiled->resources[index] = *resources;
    compiled->count = count;
}

/* The plan a run would launch on `device`: compiled for --arch (through a
 * compile-only pipeline) when it is given, into *compiled; otherwise as
 * planned.  Prints why on failure. */
static int plan_for_show(const fv_case *c, const fv_options *options, const fv_device *device,
                         fv_case_plan *plan, compiled_kernels *compiled)
{
    if (options->arch == NULL) {
        if (fv_plan_case(c, device, plan) == FV_OK)
            return 0;
        printf("\n--- segments ---\nnot schedulable: %s\n", fv_error_message());
        return 1;
    }
    fv_pipeline_options pipeline_options = {.compile_only = true, .arch = options->arch};
    fv_pipeline *pipeline;
    if (fv_pipeline_open(&pipeline_options, NULL, 0, device, &pipeline) != FV_OK) {
        fprintf(stderr, "fuservalidate show: %s\n", fv_error_message());
        return 2;
    }
    fv_result result;
    fv_status status = fv_pipeline_plan_compiled(pipeline, c, plan, &result, note_compiled,
                                                 compiled);
    fv_pipeline_close(pipeline);
    if (status == FV_OK)
        return 0;
    if (status != FV_ERR_NVRTC && status != FV_ERR_UNSUPPORTED) {
        fprintf(stderr, "fuservalidate show: %s\n", fv_error_message());
        return 2;
    }
    printf("\n--- segments ---\nnot %s: %s\n",
           status == FV_ERR_NVRTC ? "compiled" : "schedulable", fv_error_message());
    return 1;
}

/* The segments, parameters and CUDA of the case on the chosen device. */
static int show_compiled(const fv_case *c, const fv_options *options, bool all)
{
    fv_device device;
    if (fv_options_planning_device(options, &device) != FV_OK) {
        fprintf(stderr, "fuservalidate show: %s\n", fv_error_message());
        return 2;
    }
    fv_case_plan plan;
    compiled_kernels compiled = {.count = 0};
    int planned = plan_for_show(c, options, &device, &plan, &compiled);
    if (planned != 0)
        return planned;
    if (all || options->show_segments) {
        fv_text text = {0};
        fv_segmentation_print(&plan.segmentation, c->fusion, &text);
        printf("\n--- segments (on %s) ---\n%s", device.name, fv_text_str(&text));
        if (plan.selection[0])
            printf("approach (%s): %s\n", fv_case_approach_name(c->approach), plan.selection);
        if (plan.fallback[0])
            printf("set aside for these sizes: %s\n", plan.fallback);
        fv_text_free(&text);
        for (int32_t k = 0; k < plan.kernel_count; k++) {
            const fv_kernel_plan *kernel = &plan.kernels[k];
            const fv_launch_shape *shape = &kernel->launch;
            printf("kernel %s: %s%s%s\n  grid (%d, %d, %d), block (%d, %d, %d), %d bytes dynamic "
                   "shared, %lld bytes workspace%s",
                   kernel->name, kernel->relief_note, kernel->relief_note[0] ? "; " : "",
                   kernel->params.description, shape->grid[0], shape->grid[1],
                   shape->grid[2], shape->block[0], shape->block[1], shape->block[2],
                   shape->dynamic_shared_bytes, (long long)shape->workspace_bytes,
                   shape->cooperative ? ", cooperative" : "");
            if (shape->cluster > 1)
                printf(", clusters of %d blocks", shape->cluster);
            printf("\n");
            if (k < compiled.count && k < SHOWN_KERNEL_CAPACITY) {
                const fv_rt_kernel_resources *resources = &compiled.resources[k];
                printf("  compiled for %s: %d registers, %d spill bytes, %d bytes static shared\n",
                       options->arch, resources->registers,
                       resources->spill_store_bytes + resources->spill_load_bytes,
                       resources->static_shared_bytes);
            }
        }
    }
    if (all || options->show_cuda)
        for (int32_t k = 0; k < plan.kernel_count; k++)
            printf("\n--- CUDA: %s (sha256 %.16s) ---\n%s", plan.kernels[k].name, plan.kernels[k].hash,
                   plan.kernels[k].source);
    fv_plan_free(&plan);
    return 0;
}

static const fv_case *find_case(fv_case **cases, int32_t count, const char *wanted)
{
    for (int32_t i = 0; i < count; i++)
        if (strcmp(cases[i]->id, wanted) == 0)
            return cases[i];
    return NULL;
}

int fv_command_show(const fv_options *options)
{
    if (options->path_count < 1) {
        fprintf(stderr, "usage: fuservalidate show CASE-ID|FILE [PATH...]\n");
        return 2;
    }
    /* "show FILE" shows the file's first case; "show ID [PATH...]" finds it. */
    fv_options search = *options;
    const char *wanted = options->paths[0];
    bool by_file = strchr(wanted, '/') != NULL && (strstr(wanted, ".py") || strstr(wanted, ".sweep"));
    if (!by_file) {
        search.paths = options->paths + 1;
        search.path_count = options->path_count - 1;
    } else {
        search.path_count = 1;
    }
    fv_case_list list = {0};
    fv_case **cases = NULL;
    int32_t count = 0;
    int exit_code = 0;
    if (fv_options_select_cases(&search, &list, &cases, &count) != FV_OK) {
        fprintf(stderr, "fuservalidate show: %s\n", fv_error_message());
        exit_code = 2;
        goto done;
    }
    /* "ID@ws" forces the approach, as --approach does. */
    char base[FV_CASE_ID_CAPACITY];
    fv_case_approach approach;
    fv_case_split_approach(wanted, base, sizeof base, &approach);
    const fv_case *found = by_file ? (count > 0 ? cases[0] : NULL) : find_case(cases, count, base);
    fv_case shown;
    const fv_case *c = NULL;
    if (found != NULL) {
        shown = *found;
        fv_case_with_approach(&shown, approach != FV_APPROACH_AUTO ? approach : options->approach);
        c = &shown;
    }
    if (c == NULL) {
        fv_command_print_case_errors(&list);
        fprintf(stderr, "fuservalidate show: no case '%s' (try `fuservalidate show FILE`)\n",
                wanted);
        exit_code = 2;
        goto done;
    }
    char key[65];
    fv_text ir = {0};
    if (fv_ref_key(c, key, NULL) != FV_OK || fv_ir_print(c->fusion, &ir) != FV_OK) {
        fprintf(stderr, "fuservalidate show: %s\n", fv_error_message());
        exit_code = 2;
        fv_text_free(&ir);
        goto done;
    }
    printf("case %s\n  from %s%s", c->id, c->source_path, c->source_line ? "" : "\n");
    if (c->source_line)
        printf(":%d\n", c->source_line);
    printf("  seed %llu, reference key %s\n", (unsigned long long)c->seed, key);
    print_inputs(c);
    print_outputs(c);
    bool all = !options->show_ir && !options->show_segments && !options->show_cuda;
    if (all || options->show_ir)
        printf("\n--- IR (nvFuser frontend syntax) ---\n%s", fv_text_str(&ir));
    fv_text_free(&ir);
    if (all || options->show_segments || options->show_cuda)
        exit_code = show_compiled(c, options, all);
done:
    free(cases);
    fv_case_list_free(&list);
    return exit_code;
}
