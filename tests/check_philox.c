/* check_philox.c: Philox4x32-10 against the published known-answer vectors
 * (Random123 tests/kat_vectors, "philox4x32 10" lines), plus basic
 * properties of the function. */
#include <stdint.h>
#include <string.h>

#include "test_support.h"
#include "validate/philox.h"

typedef struct known_answer {
    uint32_t counter[4];
    uint32_t key[2];
    uint32_t expected[4];
} known_answer;

/* From Random123's kat_vectors: counter[4] key[2] -> output[4]. */
static const known_answer known_answers[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

START_TEST(test_known_answers)
{
    const known_answer *vector = &known_answers[_i];
    uint32_t out[4];
    fv_philox4x32_10(vector->counter, vector->key, out);
    for (int word = 0; word < 4; word++)
        ck_assert_msg(out[word] == vector->expected[word],
                      "vector %d word %d: 0x%08x, expected 0x%08x", _i, word, out[word],
                      vector->expected[word]);
}
END_TEST

START_TEST(test_output_may_alias_counter)
{
    uint32_t words[4];
    memcpy(words, known_answers[2].counter, sizeof words);
    fv_philox4x32_10(words, known_answers[2].key, words);
    ck_assert(memcmp(words, known_answers[2].expected, sizeof words) == 0);
}
END_TEST

static uint32_t xorshift_state = 2463534242u;

static uint32_t next_word(void)
{
    xorshift_state ^= xorshift_state << 13;
    xorshift_state ^= xorshift_state >> 17;
    xorshift_state ^= xorshift_state << 5;
    return xorshift_state;
}

/* The batched form gives the single-counter results in every lane; round 0
 * puts a known-answer vector in lane 0 (the others random counters). */
START_TEST(test_batch_matches_single)
{
    uint32_t words[4][FV_PHILOX_BATCH], counters[FV_PHILOX_BATCH][4];
    for (int round = 0; round < 50; round++) {
        uint32_t key[2] = {next_word(), next_word()};
        for (int lane = 0; lane < FV_PHILOX_BATCH; lane++)
            for (int word = 0; word < 4; word++)
                counters[lane][word] = next_word();
        if (round == 0) {
            memcpy(counters[0], known_answers[2].counter, sizeof counters[0]);
            memcpy(key, known_answers[2].key, sizeof key);
        }
        for (int lane = 0; lane < FV_PHILOX_BATCH; lane++)
            for (int word = 0; word < 4; word++)
                words[word][lane] = counters[lane][word];
        fv_philox4x32_10_batch(words, key);
        for (int lane = 0; lane < FV_PHILOX_BATCH; lane++) {
            uint32_t out[4];
            fv_philox4x32_10(counters[lane], key, out);
            for (int word = 0; word < 4; word++)
                ck_assert_msg(words[word][lane] == out[word], "round %d lane %d word %d", round,
                              lane, word);
        }
        if (round == 0)
            for (int word = 0; word < 4; word++)
                ck_assert(words[word][0] == known_answers[2].expected[word]);
    }
}
END_TEST

START_TEST(test_neighbouring_counters_differ)
{
    /* Counters and keys one bit apart give unrelated outputs: about half of
     * the 128 output bits change. */
    const uint32_t key[2] = {1, 2};
    uint32_t base_counter[4] = {5, 0, 0, 0}, base[4];
    fv_philox4x32_10(base_counter, key, base);
    for (int bit = 0; bit < 128; bit++) {
        uint32_t counter[4] = {5, 0, 0, 0}, out[4];
        counter[bit / 32] ^= UINT32_C(1) << (bit % 32);
        fv_philox4x32_10(counter, key, out);
        int changed = 0;
        for (int word = 0; word < 4; word++)
            changed += __builtin_popcount(out[word] ^ base[word]);
        ck_assert_msg(changed > 32 && changed < 96, "bit %d: %d output bits changed", bit,
                      changed);
    }
    const uint32_t other_key[2] = {1, 3};
    uint32_t out[4];
    fv_philox4x32_10(base_counter, other_key, out);
    ck_assert(memcmp(out, base, sizeof out) != 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *suite = suite_create("philox");
    TCase *vectors = tcase_create("known answers");
    tcase_add_loop_test(vectors, test_known_answers, 0,
                        (int)(sizeof known_answers / sizeof known_answers[0]));
    tcase_add_test(vectors, test_output_may_alias_counter);
    tcase_add_test(vectors, test_batch_matches_single);
    tcase_add_test(vectors, test_neighbouring_counters_differ);
    suite_add_tcase(suite, vectors);
    return suite;
}

int main(void) { return fv_test_run_suite(make_suite()); }
