/* philox.h: the Philox4x32-10 counter-based random number generator
 * (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
 * SC11), bit-compatible with Random123's philox4x32 at 10 rounds. */
#ifndef FV_VALIDATE_PHILOX_H
#define FV_VALIDATE_PHILOX_H

#include <stdint.h>

/* Multipliers and Weyl key increments of Philox4x32. */
#define FV_PHILOX_M0 UINT32_C(0xD2511F53)
#define FV_PHILOX_M1 UINT32_C(0xCD9E8D57)
#define FV_PHILOX_W0 UINT32_C(0x9E3779B9)
#define FV_PHILOX_W1 UINT32_C(0xBB67AE85)

/* out = Philox4x32-10(counter, key): ten rounds, the key bumped by the Weyl
 * increments between rounds.  A pure function (thread-safe); `out` may alias
 * `counter`.  Cannot fail. */
void fv_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Lanes of fv_philox4x32_10_batch. */
#define FV_PHILOX_BATCH 64

/* Philox4x32-10 of FV_PHILOX_BATCH counters at once, in place, laid out as
 * structure of arrays so that the lanes' rounds run side by side (much faster
 * than one counter at a time): for every lane i, the counter
 * (words[0][i], words[1][i], words[2][i], words[3][i]) is replaced by
 * fv_philox4x32_10 of it under `key`.  Cannot fail. */
void fv_philox4x32_10_batch(uint32_t words[4][FV_PHILOX_BATCH], const uint32_t key[2]);

#endif /* FV_VALIDATE_PHILOX_H */
