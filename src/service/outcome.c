/* outcome.c: assignments and case outcomes as wire frames. */
#include "service/outcome.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validate/compare.h"

/* The fixed part of a KERN payload; the CUDA source follows it. */
typedef struct wire_kernel {
    char hash[FV_ARCHIVE_HASH_CAPACITY];
    char arch[16];
    char family[64];
    int32_t registers, spill_bytes, shared_bytes;
} wire_kernel;

/* The fixed part of an RSLT payload; sample_count doubles follow it. */
typedef struct wire_result {
    int32_t index;
    int32_t sample_count;
    fv_result result;
} wire_result;

#define TERMINATE(field) ((field)[sizeof(field) - 1] = '\0')

/* ---------------------------------------------------------- assignments */

void fv_assignment_from_case(const fv_case *c, int32_t index, fv_assignment *assignment)
{
    memset(assignment, 0, sizeof *assignment);
    assignment->index = index;
    snprintf(assignment->case_id, sizeof assignment->case_id, "%s", c->id);
    snprintf(assignment->source, sizeof assignment->source, "%s", c->source_path);
    snprintf(assignment->family, sizeof assignment->family, "%s", c->family);
    snprintf(assignment->dtype, sizeof assignment->dtype, "%s", fv_dtype_name(c->dtype));
    fv_case_size_label(c, assignment->sizes, sizeof assignment->sizes);
    assignment->seed = c->seed;
    fv_text repro = {0};
    fv_repro_command(c, &repro);
    snprintf(assignment->repro, sizeof assignment->repro, "%s", fv_text_str(&repro));
    fv_text_free(&repro);
}

void fv_assignment_put(fv_text *buffer, const fv_assignment *assignment)
{
    fv_wire_put(buffer, FV_WIRE_CASE, assignment, sizeof *assignment);
}

fv_status fv_assignment_take(const fv_wire_frame *frame, fv_assignment *assignment)
{
    if (!fv_wire_is(frame, FV_WIRE_CASE) || frame->length != sizeof *assignment)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: %s frame of %u bytes where a case "
                "assignment (%zu bytes) was expected", frame->tag, frame->length,
                sizeof *assignment);
    memcpy(assignment, frame->payload, sizeof *assignment);
    TERMINATE(assignment->case_id);
    TERMINATE(assignment->source);
    TERMINATE(assignment->family);
    TERMINATE(assignment->dtype);
    TERMINATE(assignment->sizes);
    TERMINATE(assignment->repro);
    return FV_OK;
}

void fv_assignment_result(const fv_assignment *assignment, fv_result_status status,
                          const char *stage, const char *message, fv_result *result)
{
    fv_result_init(result, assignment->case_id, assignment->family, assignment->dtype,
                   assignment->sizes, assignment->seed, assignment->source);
    fv_result_fail(result, status, stage, message);
    snprintf(result->repro, sizeof result->repro, "%s", assignment->repro);
}

/* -------------------------------------------------------------- outcomes */

void fv_outcome_init(fv_outcome *outcome)
{
    memset(outcome, 0, sizeof *outcome);
}

void fv_outcome_free(fv_outcome *outcome)
{
    for (int32_t i = 0; i < outcome->kernel_count; i++)
        free(outcome->kernels[i].source);
    free(outcome->kernels);
    fv_text_free(&outcome->report);
    fv_outcome_init(outcome);
}

fv_status fv_outcome_add_kernel(fv_outcome *outcome, const char *hash, const char *source,
                                const char *arch, const char *family, int32_t registers,
                                int32_t spill_bytes, int32_t shared_bytes)
{
    if (outcome->kernel_count == outcome->kernel_capacity) {
        int32_t capacity = outcome->kernel_capacity ? 2 * outcome->kernel_capacity : 4;
        fv_outcome_kernel *grown = realloc(outcome->kernels, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        outcome->kernels = grown;
        outcome->kernel_capacity = capacity;
    }
    fv_outcome_kernel *kernel = &outcome->kernels[outcome->kernel_count];
    memset(kernel, 0, sizeof *kernel);
    kernel->source = strdup(source ? source : "");
    FV_CHECK_ALLOC(kernel->source);
    snprintf(kernel->hash, sizeof kernel->hash, "%s", hash ? hash : "");
    snprintf(kernel->arch, sizeof kernel->arch, "%s", arch ? arch : "");
    snprintf(kernel->family, sizeof kernel->family, "%s", family ? family : "");
    kernel->registers = registers;
    kernel->spill_bytes = spill_bytes;
    kernel->shared_bytes = shared_bytes;
    outcome->kernel_count++;
    return FV_OK;
}

static void put_kernel(fv_text *buffer, const fv_outcome_kernel *kernel)
{
    wire_kernel fixed;
    memset(&fixed, 0, sizeof fixed);
    memcpy(fixed.hash, kernel->hash, sizeof fixed.hash);
    memcpy(fixed.arch, kernel->arch, sizeof fixed.arch);
    memcpy(fixed.family, kernel->family, sizeof fixed.family);
    fixed.registers = kernel->registers;
    fixed.spill_bytes = kernel->spill_bytes;
    fixed.shared_bytes = kernel->shared_bytes;
    size_t source_length = strlen(kernel->source);
    if (source_length > FV_WIRE_MAX_PAYLOAD - sizeof fixed) {
        buffer->failed = true;
        return;
    }
    char *payload = malloc(sizeof fixed + source_length);
    if (payload == NULL) {
        buffer->failed = true;
        return;
    }
    memcpy(payload, &fixed, sizeof fixed);
    memcpy(payload + sizeof fixed, kernel->source, source_length);
    fv_wire_put(buffer, FV_WIRE_KERNEL, payload, sizeof fixed + source_length);
    free(payload);
}

void fv_outcome_put(fv_text *buffer, const fv_outcome *outcome)
{
    for (int32_t i = 0; i < outcome->kernel_count; i++)
        put_kernel(buffer, &outcome->kernels[i]);
    if (outcome->report.length > 0)
        fv_wire_put(buffer, FV_WIRE_REPORT, outcome->report.data, outcome->report.length);
    int32_t count = outcome->sample_count;
    if (count < 0 || count > FV_RESULT_MAX_SAMPLES) {
        buffer->failed = true;
        return;
    }
    size_t size = sizeof(wire_result) + sizeof(double) * (size_t)count;
    uint8_t *payload = malloc(size);
    if (payload == NULL) {
        buffer->failed = true;
        return;
    }
    wire_result fixed;
    memset(&fixed, 0, sizeof fixed);
    fixed.index = outcome->index;
    fixed.sample_count = count;
    fixed.result = outcome->result;
    memcpy(payload, &fixed, sizeof fixed);
    memcpy(payload + sizeof fixed, outcome->samples, sizeof(double) * (size_t)count);
    fv_wire_put(buffer, FV_WIRE_RESULT, payload, size);
    free(payload);
}

bool fv_outcome_is_frame(const fv_wire_frame *frame)
{
    return fv_wire_is(frame, FV_WIRE_KERNEL) || fv_wire_is(frame, FV_WIRE_REPORT) ||
           fv_wire_is(frame, FV_WIRE_RESULT);
}

/* Terminates every string column of a result that came over the wire. */
static void terminate_result(fv_result *result)
{
    int count = 0;
    const fv_archive_column *columns = fv_archive_result_columns(&count);
    for (int i = 0; i < count; i++)
        if (columns[i].kind == FV_ARCHIVE_STRING)
            ((char *)result)[columns[i].offset + columns[i].size - 1] = '\0';
}

static fv_status take_kernel(fv_outcome *outcome, const fv_wire_frame *frame)
{
    wire_kernel fixed;
    if (frame->length < sizeof fixed)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a kernel frame of %u bytes", frame->length);
    memcpy(&fixed, frame->payload, sizeof fixed);
    TERMINATE(fixed.hash);
    TERMINATE(fixed.arch);
    TERMINATE(fixed.family);
    size_t source_length = frame->length - sizeof fixed;
    char *source = malloc(source_length + 1);
    FV_CHECK_ALLOC(source);
    memcpy(source, frame->payload + sizeof fixed, source_length);
    source[source_length] = '\0';
    fv_status status = fv_outcome_add_kernel(outcome, fixed.hash, source, fixed.arch,
                                             fixed.family, fixed.registers, fixed.spill_bytes,
                                             fixed.shared_bytes);
    free(source);
    return status;
}

static fv_status take_result(fv_outcome *outcome, const fv_wire_frame *frame)
{
    wire_result fixed;
    if (frame->length < sizeof fixed)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a result frame of %u bytes", frame->length);
    memcpy(&fixed, frame->payload, sizeof fixed);
    if (fixed.sample_count < 0 || fixed.sample_count > FV_RESULT_MAX_SAMPLES ||
        frame->length != sizeof fixed + sizeof(double) * (size_t)fixed.sample_count)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a result frame of %u bytes with %d samples",
                frame->length, fixed.sample_count);
    if (fixed.result.status < 0 || fixed.result.status >= FV_RESULT_STATUS_COUNT)
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a result with status %d",
                fixed.result.status);
    outcome->index = fixed.index;
    outcome->result = fixed.result;
    terminate_result(&outcome->result);
    outcome->sample_count = fixed.sample_count;
    memcpy(outcome->samples, frame->payload + sizeof fixed,
           sizeof(double) * (size_t)fixed.sample_count);
    return FV_OK;
}

fv_status fv_outcome_take(fv_outcome *outcome, const fv_wire_frame *frame, bool *complete)
{
    *complete = false;
    if (fv_wire_is(frame, FV_WIRE_KERNEL)) {
        FV_TRY(take_kernel(outcome, frame));
    } else if (fv_wire_is(frame, FV_WIRE_REPORT)) {
        fv_text_append(&outcome->report, (const char *)frame->payload, frame->length);
        FV_TRY(fv_text_status(&outcome->report));
    } else if (fv_wire_is(frame, FV_WIRE_RESULT)) {
        FV_TRY(take_result(outcome, frame));
        *complete = true;
    } else {
        FV_FAIL(FV_ERR_CORRUPT, "malformed message: a %s frame inside a case outcome",
                frame->tag);
    }
    return FV_OK;
}
