/* stats.c: sorting and medians (see stats.h). */
#include "common/stats.h"

#include <stdlib.h>

int fv_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void fv_sort_doubles(double *values, size_t count)
{
    qsort(values, count, sizeof *values, fv_compare_doubles);
}

double fv_sorted_median(const double *values, size_t count)
{
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}
