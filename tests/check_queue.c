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

START_TEST(costs_share_one_unit)
{
    const double bytes[4] = {1000, 2000, 4000, 0};
    const double durations[4] = {-1, 10, -1, 3};
    double costs[4];
    fv_queue_costs(durations, bytes, 4, costs);
    /* 10 ms for 2000 bytes: the unknown ones at 5 ms per 1000 bytes */
    ck_assert(costs[0] == 5.0 && costs[1] == 10.0 && costs[2] == 20.0 && costs[3] == 3.0);
    fv_queue_costs(NULL, bytes, 4, costs); /* nothing known: bytes */
    ck_assert(costs[0] == 1000.0 && costs[2] == 4000.0 && costs[3] == 0.0);
}
END_TEST

/* Takes the next chunk as the coordinator does: cases from position *next
 * of the hand-out order (order[k], or k itself when order is NULL) while
 * fv_queue_chunk_takes allows.  Returns the cases taken; *chunk_cost their
 * cost. */
static int32_t take_chunk(const double *costs, const int32_t *order, int32_t count,
                          int32_t *next, double remaining, int ranks, double *chunk_cost)
{
    double target = fv_queue_chunk_target(remaining, ranks);
    int32_t taken = 0;
    *chunk_cost = 0;
    for (; *next < count; taken++, (*next)++) {
        double cost = costs[order ? order[*next] : *next];
        if (!fv_queue_chunk_takes(taken, *chunk_cost, cost, target))
            break;
        *chunk_cost += cost;
    }
    return taken;
}

START_TEST(chunks_shrink_and_cover)
{
    ck_assert(fv_queue_chunk_target(100, 4) == 12.5);
    ck_assert(fv_queue_chunk_target(100, 0) == 50); /* a bad rank count counts as one */
    ck_assert(fv_queue_chunk_target(-1, 4) == 0);
    ck_assert(fv_queue_chunk_takes(0, 0, 1e9, 1));  /* a chunk never starts empty */
    ck_assert(fv_queue_chunk_takes(1, 5, 5, 10));
    ck_assert(!fv_queue_chunk_takes(1, 5, 5.5, 10));
    double unit_costs[1000];
    for (int i = 0; i < 1000; i++)
        unit_costs[i] = 1;
    for (int ranks = 1; ranks <= 64; ranks *= 2) {
        double remaining = 1000;
        int32_t handed = 0, previous = 1 << 30, chunks = 0;
        while (handed < 1000) {
            double cost;
            int32_t chunk = take_chunk(unit_costs, NULL, 1000, &handed, remaining, ranks, &cost);
            ck_assert_int_ge(chunk, 1);
            ck_assert_int_le(chunk, previous);
            previous = chunk;
            remaining -= cost;
            chunks++;
        }
        ck_assert_int_eq(previous, 1);          /* the last chunks are single cases */
        ck_assert_int_lt(chunks, 1000);         /* fewer messages than cases */
    }
}
END_TEST

/* Ranks that ask for a chunk whenever they run out, over the default sweep's
 * case sizes in longest-first order (6 x 3 fusions x N {2048, 16384} x H
 * 768 .. 32768): the last rank finishes within 10% of the ideal, the larger
 * of (total / ranks) and the largest case.  Chunks of a fixed share of the
 * *count* (the first of them all heavy cases) finish at 1.57, 2.32 and 2.80
 * times the ideal at 2, 4 and 8 ranks in the same simulation. */
START_TEST(weighted_chunks_balance_longest_first)
{
    static const double hidden[] = {32768, 24576, 20480, 16384, 12288, 8192, 6144,
                                    4096,  4095,  3072,  2048,  1987,  1024, 1023, 768};
    enum { SIZES = sizeof hidden / sizeof hidden[0], CASES = 18 * 2 * SIZES };
    double costs[CASES];
    int32_t count = 0;
    for (int s = 0; s < SIZES; s++)
        for (int rows = 16384; rows >= 2048; rows /= 8)
            for (int fusion = 0; fusion < 18; fusion++)
                costs[count++] = rows * hidden[s];
    double durations[CASES];
    int32_t order[CASES];
    for (int32_t i = 0; i < count; i++)
        durations[i] = -1;
    FV_ASSERT_OK(fv_queue_order(durations, costs, count, order));
    double total = 0, largest = 0;
    for (int32_t i = 0; i < count; i++) {
        total += costs[i];
        largest = costs[i] > largest ? costs[i] : largest;
    }
    for (int ranks = 2; ranks <= 8; ranks *= 2) {
        double busy_until[8] = {0};
        double remaining = total;
        int32_t next = 0;
        while (next < count) {
            int idle = 0; /* the rank that runs out first asks next */
            for (int r = 1; r < ranks; r++)
                if (busy_until[r] < busy_until[idle])
                    idle = r;
            double chunk_cost;
            take_chunk(costs, order, count, &next, remaining, ranks, &chunk_cost);
            remaining -= chunk_cost;
            busy_until[idle] += chunk_cost;
        }
        double makespan = 0;
        for (int r = 0; r < ranks; r++)
            makespan = busy_until[r] > makespan ? busy_until[r] : makespan;
        double ideal = total / ranks > largest ? total / ranks : largest;
        ck_assert_msg(makespan <= 1.10 * ideal, "%d ranks: last finishes at %.3f of ideal", ranks,
                      makespan / ideal);
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
    tcase_add_test(order, costs_share_one_unit);
    tcase_add_test(order, chunks_shrink_and_cover);
    tcase_add_test(order, weighted_chunks_balance_longest_first);
    tcase_add_test(order, history_finds_and_replaces);
    suite_add_tcase(suite, order);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
