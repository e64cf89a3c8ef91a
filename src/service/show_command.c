/* show_command.c: `fuservalidate show CASE [PATH...]` prints everything known
 * about one case: where it comes from, its sizes, dtypes and inputs, its
 * outputs with their reduction sizes and nvFuser tolerances, its reference
 * key, the IR in frontend syntax, the segments (with forwarded and recomputed
 * ops), each kernel's scheduler, parameters and launch shape, and the
 * generated CUDA.  --ir, --segments and --cuda pick parts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/commands.h"
#include "service/plan.h"
#include "validate/references.h"

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

/* The segments, parameters and CUDA of the case on the chosen device. */
static int show_compiled(const fv_case *c, const fv_options *options, bool all)
{
    fv_device device;
    if (fv_options_planning_device(options, &device) != FV_OK) {
        fprintf(stderr, "fuservalidate show: %s\n", fv_error_message());
        return 2;
    }
    fv_case_plan plan;
    if (fv_plan_case(c, &device, &plan) != FV_OK) {
        printf("\n--- segments ---\nnot schedulable: %s\n", fv_error_message());
        return 1;
    }
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
            printf("kernel %s: %s\n  grid (%d, %d, %d), block (%d, %d, %d), %d bytes dynamic shared, "
                   "%lld bytes workspace%s",
                   kernel->name, kernel->params.description, shape->grid[0], shape->grid[1],
                   shape->grid[2], shape->block[0], shape->block[1], shape->block[2],
                   shape->dynamic_shared_bytes, (long long)shape->workspace_bytes,
                   shape->cooperative ? ", cooperative" : "");
            if (shape->cluster > 1)
                printf(", clusters of %d blocks", shape->cluster);
            printf("\n");
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
