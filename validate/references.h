/* references.h: a case's references in the reference store: their content
 * key, building and verifying them, and comparing outputs against them (read
 * from the store, or computed on the fly for cases above the size limit). */
#ifndef FV_VALIDATE_REFERENCES_H
#define FV_VALIDATE_REFERENCES_H

#include "ir/case.h"
#include "validate/compare.h"
#include "validate/evaluator.h"
#include "validate/store.h"

/* SHA-256 (64 hex digits) of everything the references depend on: the
 * canonical fusion, every input's extents, dtypes and distribution, scalar
 * inputs, the seed, and the generator and evaluator versions.  The text that
 * was hashed goes to `material` when it is not NULL (docs/reference-store.md). */
fv_status fv_ref_key(const fv_case *c, char key[65], fv_text *material);

typedef enum fv_ref_outcome {
    FV_REF_CACHED,    /* present and verified (or trusted) */
    FV_REF_BUILT,     /* computed and stored now */
    FV_REF_REBUILT,   /* the stored file was corrupt or stale: removed and rebuilt */
    FV_REF_ON_DEMAND, /* above the size limit: computed when needed, never stored */
    FV_REF_EVALUATED  /* above the size limit, computed now (refs --include-large) */
} fv_ref_outcome;

const char *fv_ref_outcome_name(fv_ref_outcome outcome);

typedef struct fv_ref_report {
    fv_ref_outcome outcome;
    double seconds;          /* evaluation (and write) time; 0 if cached */
    int64_t bytes;           /* values + bounds, float64 */
    char key[65];
    char detail[768];        /* why an entry was rebuilt, etc. */
} fv_ref_report;

/* Makes sure the references of `c` are in the store.  With `verify`, a
 * present entry is read back whole to check its checksums; a corrupt one is
 * reported in report->detail, removed and rebuilt.  Cases above the store's
 * size limit are left on demand, or evaluated without storing when
 * `evaluate_large`.  Fails on evaluation or store errors (the store keeps no
 * partial entry). */
fv_status fv_ref_ensure(fv_store *store, const fv_case *c, const fv_eval_options *options,
                        bool verify, bool evaluate_large, fv_ref_report *report);

/* Compares a case's outputs with its references.  actual[i] holds output i as
 * raw elements of its dtype, row-major in its logical shape.  The references
 * come from the store (built first if missing and within the limit; rebuilt if
 * corrupt) or are computed on the fly.  comparisons[] has one entry per
 * output.  `store` may be NULL (always compute). */
fv_status fv_ref_compare(fv_store *store, const fv_case *c, const fv_eval_options *options,
                         fv_tolerance_policy policy, const void *const *actual,
                         fv_comparison *comparisons, fv_ref_report *report);

#endif
