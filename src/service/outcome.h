/* outcome.h: what travels between the processes of a run, in wire frames
 * (service/wire.h): the assignment of a case (rank 0 -> rank -> GPU worker)
 * and the outcome of a case (worker -> rank -> rank 0): its result row, timed
 * repeats, comparison report and the kernels it used. */
#ifndef FV_SERVICE_OUTCOME_H
#define FV_SERVICE_OUTCOME_H

#include <stdint.h>

#include "common/status.h"
#include "common/text.h"
#include "ir/case.h"
#include "service/archive.h"
#include "service/result.h"
#include "service/wire.h"

/* A case handed out: enough to find it (case id in its source file) and to
 * record a complete row for it if its worker dies before reporting. */
typedef struct fv_assignment {
    int32_t index;                  /* position in rank 0's case list */
    char case_id[FV_CASE_ID_CAPACITY];
    char source[512];               /* the .py or .sweep file that defines it */
    char family[64];
    char dtype[8];
    char sizes[64];                 /* "64x256" */
    uint64_t seed;
    char repro[512];                /* one-line command that reruns just this case */
} fv_assignment;

/* Fills an assignment for case `c` at position `index`. */
void fv_assignment_from_case(const fv_case *c, int32_t index, fv_assignment *assignment);

/* Appends a CASE frame. */
void fv_assignment_put(fv_text *buffer, const fv_assignment *assignment);

/* Reads a CASE frame.  FV_ERR_CORRUPT if the payload has the wrong size. */
fv_status fv_assignment_take(const fv_wire_frame *frame, fv_assignment *assignment);

/* A result row for an assignment that produced no result of its own (its
 * worker crashed or timed out): identity from the assignment, then status,
 * stage and message. */
void fv_assignment_result(const fv_assignment *assignment, fv_result_status status,
                          const char *stage, const char *message, fv_result *result);

/* A kernel a case used, as the archive stores it under /kernels/<hash>. */
typedef struct fv_outcome_kernel {
    char hash[FV_ARCHIVE_HASH_CAPACITY];
    char arch[16];
    char family[64];             /* scheduler family */
    int32_t registers, spill_bytes, shared_bytes;
    char *source;                /* CUDA C, owned */
} fv_outcome_kernel;

/* Everything one case produced.  Zero it with fv_outcome_init. */
typedef struct fv_outcome {
    int32_t index;                              /* the assignment's index */
    fv_result result;
    double samples[FV_RESULT_MAX_SAMPLES];      /* timed repeats, milliseconds */
    int32_t sample_count;
    fv_text report;                             /* failure report, "" if none */
    fv_outcome_kernel *kernels;
    int32_t kernel_count, kernel_capacity;
} fv_outcome;

void fv_outcome_init(fv_outcome *outcome);

/* Frees what the outcome owns and zeroes it (ready for reuse). */
void fv_outcome_free(fv_outcome *outcome);

/* Adds a kernel (copying the strings; NULL strings are stored as "").
 * FV_ERR_NOMEM. */
fv_status fv_outcome_add_kernel(fv_outcome *outcome, const char *hash, const char *source,
                                const char *arch, const char *family, int32_t registers,
                                int32_t spill_bytes, int32_t shared_bytes);

/* Appends the outcome as frames: one KERN per kernel, an RPRT if there is a
 * report, and the RSLT frame, which ends it. */
void fv_outcome_put(fv_text *buffer, const fv_outcome *outcome);

/* Takes one KERN, RPRT or RSLT frame into `outcome`; *complete is set by
 * the RSLT frame.  String fields of the result are NUL-terminated whatever
 * arrived.  FV_ERR_CORRUPT for a malformed payload or another tag;
 * FV_ERR_NOMEM. */
fv_status fv_outcome_take(fv_outcome *outcome, const fv_wire_frame *frame, bool *complete);

/* True for the tags fv_outcome_take reads. */
bool fv_outcome_is_frame(const fv_wire_frame *frame);

#endif
