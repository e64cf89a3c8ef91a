/* check_wire.c: the service's messages (service/wire.h, service/outcome.h):
 * frames round-trip and split at any byte, corrupt headers and payloads are
 * refused, failures carry their status, assignments and whole case outcomes
 * (result, samples, report, kernels) survive encoding, and a garbled result
 * cannot smuggle in unterminated strings or a bad status. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/outcome.h"
#include "service/wire.h"
#include "test_support.h"

/* All frames of `buffer`, which must parse completely. */
static int count_frames(const fv_text *buffer)
{
    size_t offset = 0;
    int count = 0;
    for (;;) {
        fv_wire_frame frame;
        bool complete = false;
        FV_ASSERT_OK(fv_wire_next((const uint8_t *)fv_text_str(buffer), buffer->length, &offset,
                                  &frame, &complete));
        if (!complete)
            break;
        count++;
    }
    ck_assert_uint_eq(offset, buffer->length);
    return count;
}

START_TEST(frames_round_trip)
{
    fv_text buffer = {0};
    fv_wire_put_text(&buffer, FV_WIRE_STAGE, "compile");
    fv_wire_put(&buffer, FV_WIRE_WANT, NULL, 0);
    fv_wire_put_int(&buffer, FV_WIRE_BYE, 143);
    FV_ASSERT_OK(fv_text_status(&buffer));
    ck_assert_uint_eq(buffer.length, 3 * FV_WIRE_HEADER_BYTES + 7 + 0 + 4);
    ck_assert_int_eq(count_frames(&buffer), 3);

    size_t offset = 0;
    fv_wire_frame frame;
    bool complete = false;
    const uint8_t *data = (const uint8_t *)buffer.data;
    FV_ASSERT_OK(fv_wire_next(data, buffer.length, &offset, &frame, &complete));
    ck_assert(complete && fv_wire_is(&frame, FV_WIRE_STAGE));
    char stage[4];
    fv_wire_text(&frame, stage, sizeof stage);
    ck_assert_str_eq(stage, "com"); /* truncated to fit */
    FV_ASSERT_OK(fv_wire_next(data, buffer.length, &offset, &frame, &complete));
    ck_assert(complete && fv_wire_is(&frame, FV_WIRE_WANT) && frame.length == 0);
    int32_t value = 0;
    ck_assert_int_eq(fv_wire_int(&frame, &value), FV_ERR_CORRUPT); /* no int in WANT */
    FV_ASSERT_OK(fv_wire_next(data, buffer.length, &offset, &frame, &complete));
    FV_ASSERT_OK(fv_wire_int(&frame, &value));
    ck_assert_int_eq(value, 143);
    ck_assert_str_eq(frame.tag, FV_WIRE_BYE);
    fv_text_free(&buffer);
}
END_TEST

/* A reader that gets the bytes in pieces sees each frame once it is whole. */
START_TEST(frames_split_at_every_byte)
{
    fv_text buffer = {0};
    fv_wire_put_text(&buffer, FV_WIRE_REPORT, "mismatch at (3, 4)");
    fv_wire_put_int(&buffer, FV_WIRE_STOP, 2);
    for (size_t cut = 0; cut <= buffer.length; cut++) {
        size_t offset = 0;
        int frames = 0;
        for (;;) {
            fv_wire_frame frame;
            bool complete = false;
            FV_ASSERT_OK(fv_wire_next((const uint8_t *)buffer.data, cut, &offset, &frame,
                                      &complete));
            if (!complete)
                break;
            frames++;
        }
        size_t first = FV_WIRE_HEADER_BYTES + strlen("mismatch at (3, 4)");
        ck_assert_int_eq(frames, cut < first ? 0 : cut < buffer.length ? 1 : 2);
        ck_assert_uint_eq(offset, cut < first ? 0 : cut < buffer.length ? first : cut);
    }
    fv_text_free(&buffer);
}
END_TEST

START_TEST(corrupt_headers_are_refused)
{
    uint8_t bad_tag[FV_WIRE_HEADER_BYTES] = {'R', 'S', 0x01, 'T', 0, 0, 0, 0};
    size_t offset = 0;
    fv_wire_frame frame;
    bool complete = true;
    ck_assert_int_eq(fv_wire_next(bad_tag, sizeof bad_tag, &offset, &frame, &complete),
                     FV_ERR_CORRUPT);
    ck_assert(!complete);
    ck_assert_uint_eq(offset, 0);
    uint8_t too_long[FV_WIRE_HEADER_BYTES] = {'K', 'E', 'R', 'N'};
    uint32_t length = FV_WIRE_MAX_PAYLOAD + 1;
    memcpy(too_long + 4, &length, 4);
    ck_assert_int_eq(fv_wire_next(too_long, sizeof too_long, &offset, &frame, &complete),
                     FV_ERR_CORRUPT);
    fv_text buffer = {0};
    fv_wire_put(&buffer, "LONGER", "x", 1); /* not a 4-character tag */
    ck_assert_int_eq(fv_text_status(&buffer), FV_ERR_NOMEM);
    fv_text_free(&buffer);
}
END_TEST

START_TEST(failures_carry_status_and_message)
{
    fv_text buffer = {0};
    fv_wire_put_failure(&buffer, FV_ERR_IO, "cannot write /refs/x.h5: No space left");
    size_t offset = 0;
    fv_wire_frame frame;
    bool complete = false;
    FV_ASSERT_OK(fv_wire_next((const uint8_t *)buffer.data, buffer.length, &offset, &frame,
                              &complete));
    ck_assert(complete);
    ck_assert_int_eq(fv_wire_raise_failure(&frame, "rank 2"), FV_ERR_IO);
    ck_assert_str_eq(fv_error_message(), "rank 2: cannot write /refs/x.h5: No space left");
    fv_wire_frame short_frame = {.tag = FV_WIRE_FAIL, .payload = frame.payload, .length = 2};
    ck_assert_int_eq(fv_wire_raise_failure(&short_frame, "rank 2"), FV_ERR_CORRUPT);
    int32_t bogus = 9999;
    fv_wire_frame odd = {.tag = FV_WIRE_FAIL, .payload = (const uint8_t *)&bogus, .length = 4};
    ck_assert_int_eq(fv_wire_raise_failure(&odd, "rank 1"), FV_ERR_INTERNAL);
    fv_text_free(&buffer);
}
END_TEST

static void make_assignment(fv_assignment *assignment)
{
    memset(assignment, 0, sizeof *assignment);
    assignment->index = 41;
    snprintf(assignment->case_id, sizeof assignment->case_id, "layer_norm_bwd/bf16/64x256/s0");
    snprintf(assignment->source, sizeof assignment->source, "tests/cases/small.sweep");
    snprintf(assignment->family, sizeof assignment->family, "layer_norm_bwd");
    snprintf(assignment->dtype, sizeof assignment->dtype, "bf16");
    snprintf(assignment->sizes, sizeof assignment->sizes, "64x256");
    assignment->seed = 7;
    snprintf(assignment->repro, sizeof assignment->repro,
             "fuservalidate run tests/cases/small.sweep --filter 'layer_norm_bwd/bf16/64x256/s0'");
}

START_TEST(assignments_round_trip)
{
    fv_assignment sent, received;
    make_assignment(&sent);
    fv_text buffer = {0};
    fv_assignment_put(&buffer, &sent);
    size_t offset = 0;
    fv_wire_frame frame;
    bool complete = false;
    FV_ASSERT_OK(fv_wire_next((const uint8_t *)buffer.data, buffer.length, &offset, &frame,
                              &complete));
    FV_ASSERT_OK(fv_assignment_take(&frame, &received));
    ck_assert_mem_eq(&sent, &received, sizeof sent);

    fv_result result;
    fv_assignment_result(&received, FV_RESULT_TIMEOUT, "launch", "no result within 2 s",
                         &result);
    ck_assert_str_eq(result.case_id, sent.case_id);
    ck_assert_str_eq(result.family, "layer_norm_bwd");
    ck_assert_str_eq(result.dtype, "bf16");
    ck_assert_str_eq(result.sizes, "64x256");
    ck_assert_int_eq(result.status, FV_RESULT_TIMEOUT);
    ck_assert_str_eq(result.stage, "launch");
    ck_assert_str_eq(result.repro, sent.repro);
    ck_assert(result.seed == 7);

    frame.length -= 1; /* a short CASE payload */
    ck_assert_int_eq(fv_assignment_take(&frame, &received), FV_ERR_CORRUPT);
    fv_text_free(&buffer);
}
END_TEST

static void make_outcome(fv_outcome *outcome)
{
    fv_outcome_init(outcome);
    outcome->index = 5;
    fv_result_init(&outcome->result, "rms_norm_bwd/fp32/33x1987/s1", "rms_norm_bwd", "fp32",
                   "33x1987", 1, "tests/cases/small_rms.sweep");
    fv_result_fail(&outcome->result, FV_RESULT_FAIL, "compare", "2 of 65571 elements differ");
    outcome->result.worst_ratio = 3.5;
    outcome->sample_count = 3;
    outcome->samples[0] = 0.25;
    outcome->samples[1] = 0.5;
    outcome->samples[2] = 0.125;
    fv_text_printf(&outcome->report, "output dx: 2 / 65571 mismatched\n");
    FV_ASSERT_OK(fv_outcome_add_kernel(outcome, "0123456789abcdef0123", "__global__ void k() {}",
                                       "sm_90a", "inner_reduction", 40, 0, 1024));
    FV_ASSERT_OK(fv_outcome_add_kernel(outcome, "fedcba9876543210fedc", "", "sm_90a",
                                       "pointwise", 16, 8, 0));
}

/* Decodes every frame of `buffer` into `outcome`; returns the frames read. */
static int take_all(const fv_text *buffer, fv_outcome *outcome, bool *complete)
{
    size_t offset = 0;
    int frames = 0;
    *complete = false;
    for (;;) {
        fv_wire_frame frame;
        bool whole = false;
        FV_ASSERT_OK(fv_wire_next((const uint8_t *)buffer->data, buffer->length, &offset,
                                  &frame, &whole));
        if (!whole)
            return frames;
        ck_assert(fv_outcome_is_frame(&frame));
        ck_assert(!*complete); /* nothing after the RSLT frame */
        FV_ASSERT_OK(fv_outcome_take(outcome, &frame, complete));
        frames++;
    }
}

START_TEST(outcomes_round_trip)
{
    fv_outcome sent, received;
    make_outcome(&sent);
    fv_text buffer = {0};
    fv_outcome_put(&buffer, &sent);
    FV_ASSERT_OK(fv_text_status(&buffer));
    fv_outcome_init(&received);
    bool complete = false;
    ck_assert_int_eq(take_all(&buffer, &received, &complete), 4); /* 2 KERN, RPRT, RSLT */
    ck_assert(complete);
    ck_assert_int_eq(received.index, 5);
    ck_assert_mem_eq(&received.result, &sent.result, sizeof sent.result);
    ck_assert_int_eq(received.sample_count, 3);
    ck_assert(received.samples[2] == 0.125);
    ck_assert_str_eq(fv_text_str(&received.report), "output dx: 2 / 65571 mismatched\n");
    ck_assert_int_eq(received.kernel_count, 2);
    ck_assert_str_eq(received.kernels[0].hash, "0123456789abcdef0123");
    ck_assert_str_eq(received.kernels[0].source, "__global__ void k() {}");
    ck_assert_str_eq(received.kernels[0].family, "inner_reduction");
    ck_assert_int_eq(received.kernels[0].shared_bytes, 1024);
    ck_assert_str_eq(received.kernels[1].source, "");
    ck_assert_int_eq(received.kernels[1].spill_bytes, 8);
    fv_outcome_free(&sent);
    fv_outcome_free(&received);
    ck_assert_ptr_null(received.kernels);
    fv_text_free(&buffer);
}
END_TEST

/* The RSLT frame of an encoded outcome, writable. */
static uint8_t *result_payload(fv_text *buffer, uint32_t *length)
{
    size_t offset = 0;
    for (;;) {
        fv_wire_frame frame;
        bool complete = false;
        FV_ASSERT_OK(fv_wire_next((const uint8_t *)buffer->data, buffer->length, &offset,
                                  &frame, &complete));
        ck_assert(complete);
        if (fv_wire_is(&frame, FV_WIRE_RESULT)) {
            *length = frame.length;
            return (uint8_t *)frame.payload;
        }
    }
}

START_TEST(garbled_results_are_contained)
{
    fv_outcome sent, received;
    make_outcome(&sent);
    sent.kernel_count = 0; /* keep the kernels out of this buffer (freed below) */
    fv_text buffer = {0};
    fv_outcome_put(&buffer, &sent);
    sent.kernel_count = 2;
    uint32_t length = 0;
    uint8_t *payload = result_payload(&buffer, &length);

    /* Unterminated strings are cut at their last byte. */
    size_t id_offset = 8 + offsetof(fv_result, case_id);
    memset(payload + id_offset, 'x', sizeof sent.result.case_id);
    fv_outcome_init(&received);
    bool complete = false;
    take_all(&buffer, &received, &complete);
    ck_assert(complete);
    ck_assert_uint_eq(strlen(received.result.case_id), sizeof received.result.case_id - 1);
    fv_outcome_free(&received);

    /* A status outside the enum, and a sample count that does not fit. */
    int32_t bad_status = 99;
    memcpy(payload + 8 + offsetof(fv_result, status), &bad_status, 4);
    fv_wire_frame frame = {.tag = FV_WIRE_RESULT, .payload = payload, .length = length};
    fv_outcome_init(&received);
    ck_assert_int_eq(fv_outcome_take(&received, &frame, &complete), FV_ERR_CORRUPT);
    int32_t samples = 200;
    memcpy(payload + 4, &samples, 4);
    ck_assert_int_eq(fv_outcome_take(&received, &frame, &complete), FV_ERR_CORRUPT);
    frame.length = 6;
    ck_assert_int_eq(fv_outcome_take(&received, &frame, &complete), FV_ERR_CORRUPT);
    fv_wire_frame other = {.tag = FV_WIRE_WANT, .payload = payload, .length = 0};
    ck_assert_int_eq(fv_outcome_take(&received, &other, &complete), FV_ERR_CORRUPT);
    fv_outcome_free(&received);
    fv_outcome_free(&sent);
    fv_text_free(&buffer);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("wire");
    TCase *frames = tcase_create("frames");
    tcase_add_test(frames, frames_round_trip);
    tcase_add_test(frames, frames_split_at_every_byte);
    tcase_add_test(frames, corrupt_headers_are_refused);
    tcase_add_test(frames, failures_carry_status_and_message);
    suite_add_tcase(suite, frames);
    TCase *outcomes = tcase_create("outcomes");
    tcase_add_test(outcomes, assignments_round_trip);
    tcase_add_test(outcomes, outcomes_round_trip);
    tcase_add_test(outcomes, garbled_results_are_contained);
    suite_add_tcase(suite, outcomes);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
