/* check_queue.c: the hand-out order and chunk sizes (service/queue.h):
 * longest first by recorded duration, unknown cases first by bytes, stable
 * ties; guided chunks that shrink to one and cover every case; the history
 * of durations by case id. */
#include <stdio.h>
#include <stdlib.h>

#include "service/queue.h"
#include "test_support.h"

START_TEST(order_by_bytes_without_history)
{
    double bytes[] = {10, 40, 20, 40, 5};
    int32_t order[5];
    FV_ASSERT_OK(fv_queue_order(NULL, bytes, 5, order));
    int32_t expected[] = {1, 3, 2, 0, 4}; /* ties (1 and 3) keep index order */
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(order[i], expected[i]);
}
END_TEST

START_TEST(order_by_duration_unknown_first)
{
    double durations[] = {5.0, -1, 300.0, -1, 42.0};
    double bytes[] = {1e9, 10, 1e9, 20, 1e9};
    int32_t order[5];
    FV_ASSERT_OK(fv_queue_order(durations, bytes, 5, order));
    int32_t expected[] = {3, 1, 2, 4, 0};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(order[i], expected[i]);
    FV_ASSERT_OK(fv_queue_order(durations, bytes, 0, order)); /* nothing to order */
}
END_TEST

START_TEST(chunks_shrink_and_cover)
{
    ck_assert_int_eq(fv_queue_chunk(0, 4), 0);
    ck_assert_int_eq(fv_queue_chunk(1, 4), 1);
    ck_assert_int_eq(fv_queue_chunk(100, 1), 50);
    ck_assert_int_eq(fv_queue_chunk(100, 4), 13);
    ck_assert_int_eq(fv_queue_chunk(7, 0), 4); /* a bad rank count counts as one */
    for (int ranks = 1; ranks <= 64; ranks *= 2) {
        int32_t remaining = 1000, handed = 0, previous = 1 << 30, chunks = 0;
        while (remaining > 0) {
            int32_t chunk = fv_queue_chunk(remaining, ranks);
            ck_assert_int_ge(chunk, 1);
            ck_assert_int_le(chunk, previous);
            ck_assert_int_le(chunk, remaining);
            previous = chunk;
            remaining -= chunk;
            handed += chunk;
            chunks++;
        }
        ck_assert_int_eq(handed, 1000);
        ck_assert_int_eq(previous, 1);          /* the last chunks are single cases */
        ck_assert_int_lt(chunks, 1000);         /* fewer messages than cases */
    }
}
END_TEST

START_TEST(history_finds_and_replaces)
{
    fv_queue_history history = {0};
    ck_assert(fv_queue_history_find(&history, "a/bf16/1x1/s0") < 0);
    char id[64];
    for (int i = 0; i < 300; i++) {
        snprintf(id, sizeof id, "case/%03d", (i * 7) % 300);
        FV_ASSERT_OK(fv_queue_history_add(&history, id, (double)i));
    }
    ck_assert_int_eq(history.count, 300);
    ck_assert(fv_queue_history_find(&history, "case/007") == 1.0);
    ck_assert(fv_queue_history_find(&history, "case/300") < 0);
    FV_ASSERT_OK(fv_queue_history_add(&history, "case/007", 99.5)); /* after a lookup */
    FV_ASSERT_OK(fv_queue_history_add(&history, "case/new", 0));
    FV_ASSERT_OK(fv_queue_history_add(&history, "case/new", 3));    /* before a lookup */
    ck_assert_int_eq(history.count, 301);
    ck_assert(fv_queue_history_find(&history, "case/007") == 99.5);
    ck_assert(fv_queue_history_find(&history, "case/new") == 3);
    fv_queue_history_free(&history);
    ck_assert_int_eq(history.count, 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("queue");
    TCase *order = tcase_create("order");
    tcase_add_test(order, order_by_bytes_without_history);
    tcase_add_test(order, order_by_duration_unknown_first);
    tcase_add_test(order, chunks_shrink_and_cover);
    tcase_add_test(order, history_finds_and_replaces);
    suite_add_tcase(suite, order);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
