/* approaches.c: pairs the rows of `run --approach all` by shape and works
 * out the fastest approach and the regret of the automatic choice. */
#include "service/approaches.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ir/case.h"

static bool is_approach(const char *text, fv_case_approach approach)
{
    return strcmp(text, fv_case_approach_name(approach)) == 0;
}

static bool timed(const fv_result *r)
{
    return (r->status == FV_RESULT_PASS || r->status == FV_RESULT_SKIPPED) &&
           r->time_median_ms > 0;
}

static int32_t find_shape(const fv_approach_row *rows, int32_t count, const char *shape)
{
    for (int32_t i = 0; i < count; i++)
        if (strcmp(rows[i].shape, shape) == 0)
            return i;
    return -1;
}

static void start_row(fv_approach_row *row, const fv_result *r, const char *shape)
{
    memset(row, 0, sizeof *row);
    snprintf(row->shape, sizeof row->shape, "%s", shape);
    snprintf(row->family, sizeof row->family, "%s", r->family);
    snprintf(row->dtype, sizeof row->dtype, "%s", r->dtype);
    snprintf(row->sizes, sizeof row->sizes, "%s", r->sizes);
    row->multiwave_ms = row->ws_ms = row->auto_regret = NAN;
}

/* Takes one forced row into its shape's entry. */
static void take_result(fv_approach_row *row, const fv_result *r, fv_case_approach approach)
{
    double time = timed(r) ? r->time_median_ms : NAN;
    if (approach == FV_APPROACH_WS) {
        row->ws_ms = time;
        row->ws_taken = is_approach(r->taken_approach, FV_APPROACH_WS);
    } else {
        row->multiwave_ms = time;
    }
    if (r->auto_approach[0] != '\0')
        snprintf(row->auto_approach, sizeof row->auto_approach, "%s", r->auto_approach);
}

/* A shape whose @ws row ran multi-wave has one approach only: fastest is
 * multi-wave and there is no regret to count. */
static void finish_row(fv_approach_row *row)
{
    if (isnan(row->multiwave_ms) || isnan(row->ws_ms))
        return;
    if (!row->ws_taken) {
        snprintf(row->fastest, sizeof row->fastest, "%s", fv_case_approach_name(FV_APPROACH_MULTIWAVE));
        return;
    }
    bool ws_faster = row->ws_ms < row->multiwave_ms;
    snprintf(row->fastest, sizeof row->fastest, "%s",
             fv_case_approach_name(ws_faster ? FV_APPROACH_WS : FV_APPROACH_MULTIWAVE));
    double best = ws_faster ? row->ws_ms : row->multiwave_ms;
    double chosen = is_approach(row->auto_approach, FV_APPROACH_WS) ? row->ws_ms : row->multiwave_ms;
    row->auto_regret = chosen / best - 1.0;
}

fv_status fv_approaches_compare(const fv_result *results, int32_t result_count,
                                fv_approach_row **rows, int32_t *count)
{
    *rows = NULL;
    *count = 0;
    fv_approach_row *table = NULL;
    int32_t used = 0;
    bool seen[FV_APPROACH_WS + 1] = {false};
    for (int32_t i = 0; i < result_count; i++) {
        char shape[sizeof table->shape];
        fv_case_approach approach;
        fv_case_split_approach(results[i].case_id, shape, sizeof shape, &approach);
        if (approach == FV_APPROACH_AUTO)
            continue;
        int32_t at = find_shape(table, used, shape);
        if (at < 0) {
            fv_approach_row *grown = realloc(table, sizeof *grown * (size_t)(used + 1));
            if (grown == NULL) {
                free(table);
                FV_FAIL(FV_ERR_NOMEM, "out of memory comparing approaches");
            }
            table = grown;
            at = used++;
            start_row(&table[at], &results[i], shape);
        }
        take_result(&table[at], &results[i], approach);
        seen[approach] = true;
    }
    if (!seen[FV_APPROACH_MULTIWAVE] || !seen[FV_APPROACH_WS]) {
        free(table);  /* one approach forced: nothing to compare */
        return FV_OK;
    }
    for (int32_t i = 0; i < used; i++)
        finish_row(&table[i]);
    *rows = table;
    *count = used;
    return FV_OK;
}

double fv_approaches_geomean_regret(const fv_approach_row *rows, int32_t count,
                                    int32_t *compared)
{
    double log_sum = 0;
    *compared = 0;
    for (int32_t i = 0; i < count; i++) {
        if (isnan(rows[i].auto_regret))
            continue;
        log_sum += log1p(rows[i].auto_regret);
        ++*compared;
    }
    return *compared > 0 ? expm1(log_sum / *compared) : NAN;
}

static void print_time(FILE *out, double ms)
{
    if (isnan(ms))
        fprintf(out, " %10s", "-");
    else
        fprintf(out, " %10.4f", ms);
}

void fv_approaches_print(const fv_approach_row *rows, int32_t count, FILE *out)
{
    if (count == 0)
        return;
    fprintf(out, "\napproaches (kernel time in ms; auto = the automatic rule on this GPU):\n");
    fprintf(out, "%-44s %10s %10s  %-9s  %-9s %7s\n", "shape", "multiwave", "ws", "fastest",
            "auto", "regret");
    int32_t fell_back = 0;
    for (int32_t i = 0; i < count; i++) {
        const fv_approach_row *row = &rows[i];
        fprintf(out, "%-44s", row->shape);
        print_time(out, row->multiwave_ms);
        print_time(out, row->ws_ms);
        fprintf(out, "%s %-9s  %-9s", row->ws_taken || isnan(row->ws_ms) ? " " : "*",
                row->fastest[0] ? row->fastest : "-",
                row->auto_approach[0] ? row->auto_approach : "-");
        if (isnan(row->auto_regret))
            fprintf(out, " %7s\n", "-");
        else
            fprintf(out, " %6.1f%%\n", 100.0 * row->auto_regret);
        fell_back += !row->ws_taken && !isnan(row->ws_ms);
    }
    int32_t compared;
    double regret = fv_approaches_geomean_regret(rows, count, &compared);
    if (compared > 0)
        fprintf(out, "auto's geometric-mean regret over %d shapes: %.2f%%\n", (int)compared,
                100.0 * regret);
    if (fell_back > 0)
        fprintf(out, "* %d shape%s could not use the warp-specialized kernel and ran multi-wave "
                     "(see the row's parameters)\n",
                (int)fell_back, fell_back > 1 ? "s" : "");
}
