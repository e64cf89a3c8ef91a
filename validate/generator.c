/* generator.c: the input generator (see generator.h and
 * docs/input-generator.md for the bit-exact definition).
 *
 * Note on bit-exactness: the project compiles as ISO C17 (-std=c17), in which
 * GCC does not contract a*b+c into a fused multiply-add, so every operation
 * below is one IEEE double operation as written. */
#include "validate/generator.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "ir/round.h"
#include "validate/philox.h"

/* pi as the double nearest to it (M_PI is not in ISO C). */
static const double pi_double = 3.141592653589793115997963468544185161590576171875;

/* Doubles generated per chunk by fv_gen_fill_raw before conversion. */
enum { RAW_CHUNK = 2048 };
/* Below this many elements per thread, extra threads cost more than they save. */
enum { MIN_ELEMENTS_PER_THREAD = 16384 };
/* Upper bound on threads for one call. */
enum { MAX_THREADS = 256 };

/* The parameters every element of one input shares. */
typedef struct stream {
    uint32_t key[2];
    uint32_t seed_high;
    fv_distribution distribution;
    fv_dtype dtype;
} stream;

static stream make_stream(uint64_t seed, int input_position, const fv_distribution *distribution,
                          fv_dtype dtype)
{
    stream s;
    s.key[0] = (uint32_t)seed;
    s.key[1] = (uint32_t)input_position;
    s.seed_high = (uint32_t)(seed >> 32);
    s.distribution = *distribution;
    s.dtype = dtype;
    return s;
}

/* A uniform in [0, 1) from 53 bits: 27 from `high`, 26 from `low`. */
static double uniform53(uint32_t high, uint32_t low)
{
    uint64_t bits = ((uint64_t)(high >> 5) << 26) | (uint64_t)(low >> 6);
    return (double)bits * 0x1p-53;
}

/* The unrounded value of an element from its Philox output words. */
static double value_from_words(const fv_distribution *distribution, uint32_t word0,
                               uint32_t word1, uint32_t word2, uint32_t word3)
{
    double u_a = uniform53(word0, word1);
    if (distribution->kind == FV_DIST_UNIFORM) {
        double width = distribution->b - distribution->a;
        return distribution->a + width * u_a;
    }
    double u_b = uniform53(word2, word3);
    double radius = sqrt(-2.0 * log(1.0 - u_a)); /* 1 - u_a is exact and in (0, 1] */
    double angle = 2.0 * pi_double * u_b;
    double z = radius * cos(angle);
    double scaled = distribution->b * z;
    return distribution->a + scaled;
}

/* Unrounded values of `count` elements: indices[k] when `indices` is not
 * NULL, else first_index + k.  values: count doubles.  Philox runs on
 * FV_PHILOX_BATCH counters at a time. */
static void generate_values(const stream *s, uint64_t first_index, const int64_t *indices,
                            int64_t count, double *values)
{
    if (s->distribution.kind == FV_DIST_CONSTANT) {
        for (int64_t k = 0; k < count; k++)
            values[k] = s->distribution.a;
        return;
    }
    uint32_t words[4][FV_PHILOX_BATCH];
    for (int64_t done = 0; done < count; done += FV_PHILOX_BATCH) {
        int lanes = count - done < FV_PHILOX_BATCH ? (int)(count - done) : FV_PHILOX_BATCH;
        for (int lane = 0; lane < FV_PHILOX_BATCH; lane++) {
            int64_t k = done + (lane < lanes ? lane : 0); /* unused lanes repeat one */
            uint64_t index = indices != NULL ? (uint64_t)indices[k] : first_index + (uint64_t)k;
            words[0][lane] = (uint32_t)index;
            words[1][lane] = (uint32_t)(index >> 32);
            words[2][lane] = 0;
            words[3][lane] = s->seed_high;
        }
        fv_philox4x32_10_batch(words, s->key);
        for (int lane = 0; lane < lanes; lane++)
            values[done + lane] = value_from_words(&s->distribution, words[0][lane],
                                                   words[1][lane], words[2][lane], words[3][lane]);
    }
}

static fv_status check_distribution(const fv_distribution *distribution)
{
    if (distribution == NULL)
        FV_FAIL(FV_ERR_INPUT, "input generator: no distribution");
    double a = distribution->a, b = distribution->b;
    switch (distribution->kind) {
    case FV_DIST_NORMAL:
        if (!isfinite(a) || !isfinite(b) || b < 0)
            FV_FAIL(FV_ERR_INPUT, "input generator: bad normal(%.17g, %.17g): the mean must be "
                    "finite and the standard deviation finite and >= 0", a, b);
        return FV_OK;
    case FV_DIST_UNIFORM:
        if (!isfinite(a) || !isfinite(b) || !(a <= b) || !isfinite(b - a))
            FV_FAIL(FV_ERR_INPUT, "input generator: bad uniform(%.17g, %.17g): the bounds must "
                    "be finite with a <= b", a, b);
        return FV_OK;
    case FV_DIST_CONSTANT:
        if (!isfinite(a))
            FV_FAIL(FV_ERR_INPUT, "input generator: bad constant(%.17g)", a);
        return FV_OK;
    }
    FV_FAIL(FV_ERR_INPUT, "input generator: unknown distribution kind %d", (int)distribution->kind);
}

static fv_status check_stream(int input_position, const fv_distribution *distribution,
                              fv_dtype dtype)
{
    FV_TRY(check_distribution(distribution));
    if ((int)dtype <= (int)FV_DTYPE_NONE || (int)dtype >= (int)FV_DTYPE_COUNT)
        FV_FAIL(FV_ERR_INPUT, "input generator: bad dtype %d", (int)dtype);
    if (input_position < 0)
        FV_FAIL(FV_ERR_INPUT, "input generator: negative input position %d", input_position);
    return FV_OK;
}

static fv_status check_range(int64_t first_index, int64_t count, const void *buffer)
{
    if (first_index < 0 || count < 0)
        FV_FAIL(FV_ERR_INPUT, "input generator: bad element range (first %lld, count %lld)",
                (long long)first_index, (long long)count);
    if (count > 0 && count - 1 > INT64_MAX - first_index) /* last index first + count - 1 */
        FV_FAIL(FV_ERR_INPUT, "input generator: element range beyond INT64_MAX");
    if (count > 0 && buffer == NULL)
        FV_FAIL(FV_ERR_INPUT, "input generator: no output buffer");
    return FV_OK;
}

fv_status fv_gen_fill(uint64_t seed, int input_position, const fv_distribution *distribution,
                      fv_dtype dtype, int64_t first_index, int64_t count, double *values)
{
    FV_TRY(check_stream(input_position, distribution, dtype));
    FV_TRY(check_range(first_index, count, values));
    const stream s = make_stream(seed, input_position, distribution, dtype);
    generate_values(&s, (uint64_t)first_index, NULL, count, values);
    for (int64_t k = 0; k < count; k++)
        values[k] = fv_round_to_dtype(values[k], dtype);
    return FV_OK;
}

fv_status fv_gen_fill_indices(uint64_t seed, int input_position,
                              const fv_distribution *distribution, fv_dtype dtype,
                              const int64_t *indices, int64_t count, double *values)
{
    FV_TRY(check_stream(input_position, distribution, dtype));
    if (count < 0)
        FV_FAIL(FV_ERR_INPUT, "input generator: negative count %lld", (long long)count);
    if (count > 0 && (indices == NULL || values == NULL))
        FV_FAIL(FV_ERR_INPUT, "input generator: no index or output buffer");
    for (int64_t k = 0; k < count; k++) {
        if (indices[k] < 0)
            FV_FAIL(FV_ERR_INPUT, "input generator: negative element index %lld at %lld",
                    (long long)indices[k], (long long)k);
    }
    const stream s = make_stream(seed, input_position, distribution, dtype);
    generate_values(&s, 0, indices, count, values);
    for (int64_t k = 0; k < count; k++)
        values[k] = fv_round_to_dtype(values[k], dtype);
    return FV_OK;
}

/* One thread's share of fv_gen_fill_raw: elements [first_index, first_index +
 * count) written to `elements` (which points at element first_index). */
typedef struct raw_range {
    const stream *s;
    int64_t first_index;
    int64_t count;
    unsigned char *elements;
    pthread_t thread;
    bool started;
} raw_range;

static void fill_raw_range(const raw_range *range)
{
    double chunk[RAW_CHUNK];
    const size_t element_size = fv_dtype_size(range->s->dtype);
    for (int64_t done = 0; done < range->count; done += RAW_CHUNK) {
        int64_t length = range->count - done < RAW_CHUNK ? range->count - done : RAW_CHUNK;
        generate_values(range->s, (uint64_t)(range->first_index + done), NULL, length, chunk);
        fv_store_elements(range->s->dtype, chunk, range->elements + (size_t)done * element_size,
                          length);
    }
}

static void *fill_raw_thread(void *argument)
{
    fill_raw_range(argument);
    return NULL;
}

static int choose_thread_count(int64_t count, int threads)
{
    int64_t useful = count / MIN_ELEMENTS_PER_THREAD;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (useful < threads)
        threads = (int)useful;
    return threads < 1 ? 1 : threads;
}

fv_status fv_gen_fill_raw(uint64_t seed, int input_position, const fv_distribution *distribution,
                          fv_dtype dtype, int64_t first_index, int64_t count, void *elements,
                          int threads)
{
    FV_TRY(check_stream(input_position, distribution, dtype));
    FV_TRY(check_range(first_index, count, elements));
    if (count == 0)
        return FV_OK;
    const stream s = make_stream(seed, input_position, distribution, dtype);
    const size_t element_size = fv_dtype_size(dtype);
    const int thread_count = choose_thread_count(count, threads);
    raw_range ranges[MAX_THREADS];
    /* Contiguous ranges; the first count % thread_count get one extra element. */
    int64_t share = count / thread_count, extra = count % thread_count, offset = 0;
    for (int t = 0; t < thread_count; t++) {
        int64_t length = share + (t < extra ? 1 : 0);
        unsigned char *start = (unsigned char *)elements + (size_t)offset * element_size;
        ranges[t] = (raw_range){
            .s = &s, .first_index = first_index + offset, .count = length, .elements = start};
        offset += length;
    }
    /* Range 0 runs on the calling thread; the others on new threads when possible. */
    for (int t = 1; t < thread_count; t++) {
        int created = pthread_create(&ranges[t].thread, NULL, fill_raw_thread, &ranges[t]);
        ranges[t].started = created == 0;
    }
    fill_raw_range(&ranges[0]);
    bool join_failed = false;
    for (int t = 1; t < thread_count; t++) {
        if (!ranges[t].started)
            fill_raw_range(&ranges[t]);
        else if (pthread_join(ranges[t].thread, NULL) != 0)
            join_failed = true;
    }
    if (join_failed)
        FV_FAIL(FV_ERR_INTERNAL, "input generator: pthread_join failed");
    return FV_OK;
}
