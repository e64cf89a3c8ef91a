/* stats.h: sorting and medians of timing samples (kernel times, % of copy
 * bandwidth), shared by the pipeline, the summary and `compare`. */
#ifndef FV_COMMON_STATS_H
#define FV_COMMON_STATS_H

#include <stddef.h>

/* qsort comparison of two doubles, ascending (NaN-free input). */
int fv_compare_doubles(const void *a, const void *b);

/* Sorts values[count] ascending in place. */
void fv_sort_doubles(double *values, size_t count);

/* Median of sorted values[count] (count >= 1): the middle value, or the
 * mean of the two middle values for an even count. */
double fv_sorted_median(const double *values, size_t count);

#endif
