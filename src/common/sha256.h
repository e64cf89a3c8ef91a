/* sha256.h: SHA-256 (FIPS 180-4) for content hashes: the canonical fusion hash,
 * reference-store keys and, later, kernel-cache keys. */
#ifndef FV_COMMON_SHA256_H
#define FV_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct fv_sha256 {
    uint32_t state[8];
    uint64_t length_bytes;   /* message bytes absorbed so far */
    uint8_t block[64];       /* pending partial block */
    size_t block_used;
} fv_sha256;

/* Starts a new hash.  Cannot fail. */
void fv_sha256_init(fv_sha256 *hash);

/* Absorbs `size` bytes.  Cannot fail. */
void fv_sha256_update(fv_sha256 *hash, const void *data, size_t size);

/* Finishes the hash into 32 bytes; `hash` must be re-initialised before reuse. */
void fv_sha256_final(fv_sha256 *hash, uint8_t digest[32]);

/* Writes the 64 lower-case hex digits of `digest` and a terminating NUL. */
void fv_sha256_hex(const uint8_t digest[32], char hex[65]);

/* One-shot: hex digest of a buffer. */
void fv_sha256_hex_of(const void *data, size_t size, char hex[65]);

#endif
