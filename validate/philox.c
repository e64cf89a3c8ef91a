/* philox.c: Philox4x32-10 (see philox.h), written from the SC11 paper. */
#include "validate/philox.h"

/* One Philox4x32 round: two 32x32->64 multiplications, the high halves mixed
 * with the other words and the round key (the S-box / P-box of the paper). */
static void philox_round(uint32_t state[4], uint32_t key0, uint32_t key1)
{
    uint64_t product0 = (uint64_t)FV_PHILOX_M0 * state[0];
    uint64_t product1 = (uint64_t)FV_PHILOX_M1 * state[2];
    uint32_t high0 = (uint32_t)(product0 >> 32), low0 = (uint32_t)product0;
    uint32_t high1 = (uint32_t)(product1 >> 32), low1 = (uint32_t)product1;
    uint32_t next0 = high1 ^ state[1] ^ key0;
    uint32_t next2 = high0 ^ state[3] ^ key1;
    state[0] = next0;
    state[1] = low1;
    state[2] = next2;
    state[3] = low0;
}

void fv_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t state[4] = {counter[0], counter[1], counter[2], counter[3]};
    uint32_t key0 = key[0], key1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) { /* key schedule: Weyl sequence, bumped before rounds 2..10 */
            key0 += FV_PHILOX_W0;
            key1 += FV_PHILOX_W1;
        }
        philox_round(state, key0, key1);
    }
    for (int i = 0; i < 4; i++)
        out[i] = state[i];
}

void fv_philox4x32_10_batch(uint32_t words[4][FV_PHILOX_BATCH], const uint32_t key[2])
{
    uint32_t key0 = key[0], key1 = key[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            key0 += FV_PHILOX_W0;
            key1 += FV_PHILOX_W1;
        }
        /* The same round as philox_round, lane by lane (independent lanes). */
        for (int lane = 0; lane < FV_PHILOX_BATCH; lane++) {
            uint64_t product0 = (uint64_t)FV_PHILOX_M0 * words[0][lane];
            uint64_t product1 = (uint64_t)FV_PHILOX_M1 * words[2][lane];
            uint32_t next0 = (uint32_t)(product1 >> 32) ^ words[1][lane] ^ key0;
            uint32_t next2 = (uint32_t)(product0 >> 32) ^ words[3][lane] ^ key1;
            words[0][lane] = next0;
            words[1][lane] = (uint32_t)product1;
            words[2][lane] = next2;
            words[3][lane] = (uint32_t)product0;
        }
    }
}
