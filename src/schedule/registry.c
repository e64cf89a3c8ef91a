/* registry.c: the scheduler families in the order the segmenter asks them. */
#include <stdio.h>
#include <string.h>

#include "schedule/schedule.h"

static const fv_scheduler *const registry[] = {
    &fv_sched_inner_outer_ws,
    &fv_sched_inner_outer_persistent,
    &fv_sched_inner_tma,
    &fv_sched_inner_persistent,
    &fv_sched_inner_multipass,
    &fv_sched_pointwise,
    &fv_sched_inner_reduction,
    &fv_sched_outer_reduction,
    NULL,
};

/* The general path: what the plan falls back to when a persistent family
 * cannot take a segment. */
static const fv_scheduler *const general_families[] = {
    &fv_sched_pointwise,
    &fv_sched_inner_reduction,
    &fv_sched_outer_reduction,
    NULL,
};

const fv_scheduler *const *fv_sched_registry(void) { return registry; }

const fv_scheduler *const *fv_sched_general_families(void) { return general_families; }

const fv_scheduler *fv_sched_find(const fv_segment_view *view, char *why, size_t why_size)
{
    return fv_sched_find_in(NULL, view, why, why_size);
}

const fv_scheduler *fv_sched_find_in(const fv_scheduler *const *families,
                                     const fv_segment_view *view, char *why, size_t why_size)
{
    const fv_scheduler *const *list = families != NULL ? families : registry;
    size_t used = 0;
    if (why_size > 0)
        why[0] = '\0';
    for (int i = 0; list[i] != NULL; i++) {
        char reason[320] = "";
        if (list[i]->accepts(view, reason, sizeof reason))
            return list[i];
        if (used < why_size) {
            int written = snprintf(why + used, why_size - used, "%s%s", used ? "; " : "", reason);
            if (written > 0)
                used += (size_t)written;
        }
    }
    return NULL;
}

const fv_scheduler *fv_sched_by_name(const char *name)
{
    for (int i = 0; registry[i] != NULL; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}
