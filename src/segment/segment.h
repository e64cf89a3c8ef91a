/* segment.h: splits a fusion into segments, each of which one scheduler
 * family turns into one kernel.
 *
 * Values that cross a segment boundary live in device memory ("materialized"):
 * fusion outputs, the inputs of segment_set (whose output aliases the same
 * buffer), and reduction results that a later segment broadcasts back.  Every
 * other op is computed where it is needed: an element-wise op used by two
 * segments is replicated into both rather than passed through memory.  Two
 * kinds of replication are reported apart (`fuservalidate show --segments`):
 *   - forwarded: the ops nvFuser's segmenter forwards (seed 002): a chain of
 *     single-use unary ops starting at a fusion input, and every `full` whose
 *     result is not a fusion output, with the unary chain after it;
 *   - recomputed: any other element-wise op that appears in several segments.
 * Segments are merged greedily while some family accepts the union, so the
 * result has as few segments as the registered families allow; segment_set
 * always separates.
 */
#ifndef FV_SEGMENT_SEGMENT_H
#define FV_SEGMENT_SEGMENT_H

#include "ir/ir.h"
#include "schedule/schedule.h"

typedef struct fv_segment {
    fv_fusion *fusion;          /* the segment as a fusion: same value ids as the whole
                                   fusion; its inputs are the values it reads from memory,
                                   its outputs the values it materializes */
    fv_segment_view view;
    const fv_scheduler *scheduler;
    int32_t *ops;               /* global op ids it computes, topological */
    int32_t op_count;
    bool *forwarded;            /* per entry of ops: replicated by the forwarding rule */
    bool *recomputed;           /* per entry of ops: replicated for another reason */
} fv_segment;

typedef struct fv_segmentation {
    fv_segment *segments;       /* in execution order */
    int32_t count;
    bool *materialized;         /* per value id: lives in device memory */
    int32_t *alias_of;          /* per value id: segment_set output -> its input, else -1 */
    bool *forwarded_op;         /* per op id: the forwarding rule applies */
} fv_segmentation;

/* Segments `fusion`.  FV_ERR_UNSUPPORTED (naming the part no family takes and
 * each family's reason) if some part cannot be scheduled; FV_ERR_NOMEM. */
fv_status fv_segment_fusion(const fv_fusion *fusion, fv_segmentation *segmentation);

/* The same, with only `families` (NULL-terminated; NULL: all of them). */
fv_status fv_segment_fusion_with(const fv_fusion *fusion, const fv_scheduler *const *families,
                                 fv_segmentation *segmentation);

void fv_segmentation_free(fv_segmentation *segmentation);

/* Appends a readable listing: per segment its family, inputs, outputs, ops
 * (forwarded and recomputed ones marked), and the materialized values. */
void fv_segmentation_print(const fv_segmentation *segmentation, const fv_fusion *fusion,
                           fv_text *out);

#endif
