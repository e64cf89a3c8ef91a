/* queue.c: longest-first ordering and guided chunk sizes. */
#include "service/queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_entries(const void *a, const void *b)
{
    return strcmp(((const fv_queue_entry *)a)->case_id, ((const fv_queue_entry *)b)->case_id);
}

static fv_queue_entry *find_entry(fv_queue_history *history, const char *case_id)
{
    if (history->count == 0)
        return NULL;
    if (!history->sorted) {
        qsort(history->entries, (size_t)history->count, sizeof *history->entries,
              compare_entries);
        history->sorted = 1;
    }
    fv_queue_entry key;
    snprintf(key.case_id, sizeof key.case_id, "%s", case_id);
    return bsearch(&key, history->entries, (size_t)history->count, sizeof *history->entries,
                   compare_entries);
}

fv_status fv_queue_history_add(fv_queue_history *history, const char *case_id, double wall_ms)
{
    fv_queue_entry *existing = history->sorted ? find_entry(history, case_id) : NULL;
    if (existing == NULL && !history->sorted) {
        for (int32_t i = history->count - 1; i >= 0 && existing == NULL; i--)
            if (strcmp(history->entries[i].case_id, case_id) == 0)
                existing = &history->entries[i];
    }
    if (existing != NULL) {
        existing->wall_ms = wall_ms;
        return FV_OK;
    }
    if (history->count == history->capacity) {
        int32_t capacity = history->capacity ? 2 * history->capacity : 64;
        fv_queue_entry *grown = realloc(history->entries, sizeof *grown * (size_t)capacity);
        FV_CHECK_ALLOC(grown);
        history->entries = grown;
        history->capacity = capacity;
    }
    fv_queue_entry *entry = &history->entries[history->count++];
    snprintf(entry->case_id, sizeof entry->case_id, "%s", case_id);
    entry->wall_ms = wall_ms;
    history->sorted = 0;
    return FV_OK;
}

double fv_queue_history_find(fv_queue_history *history, const char *case_id)
{
    const fv_queue_entry *entry = find_entry(history, case_id);
    return entry ? entry->wall_ms : -1;
}

void fv_queue_history_free(fv_queue_history *history)
{
    free(history->entries);
    memset(history, 0, sizeof *history);
}

/* True if the archives recorded case i's duration. */
static bool duration_known(const double *durations, int32_t i)
{
    return durations != NULL && durations[i] >= 0;
}

/* A case as the sort sees it. */
typedef struct sort_key {
    int known;       /* 1 if a duration is known */
    double size;     /* duration or bytes */
    int32_t index;
} sort_key;

static int compare_keys(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->known != y->known)
        return x->known - y->known; /* unknown (0) first */
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

fv_status fv_queue_order(const double *durations, const double *bytes, int32_t count,
                         int32_t *order)
{
    sort_key *keys = malloc(sizeof *keys * (size_t)(count > 0 ? count : 1));
    FV_CHECK_ALLOC(keys);
    for (int32_t i = 0; i < count; i++) {
        keys[i].known = duration_known(durations, i);
        keys[i].size = keys[i].known ? durations[i] : (bytes != NULL ? bytes[i] : 0);
        keys[i].index = i;
    }
    qsort(keys, (size_t)count, sizeof *keys, compare_keys);
    for (int32_t i = 0; i < count; i++)
        order[i] = keys[i].index;
    free(keys);
    return FV_OK;
}

void fv_queue_costs(const double *durations, const double *bytes, int32_t count,
                    double *costs)
{
    double known_ms = 0, known_bytes = 0;
    for (int32_t i = 0; i < count; i++)
        if (duration_known(durations, i) && bytes != NULL && bytes[i] > 0) {
            known_ms += durations[i];
            known_bytes += bytes[i];
        }
    double ms_per_byte = known_bytes > 0 && known_ms > 0 ? known_ms / known_bytes : 1;
    for (int32_t i = 0; i < count; i++) {
        double size = bytes != NULL && bytes[i] > 0 ? bytes[i] : 0;
        costs[i] = duration_known(durations, i) ? durations[i] : size * ms_per_byte;
    }
}

double fv_queue_chunk_target(double remaining_cost, int ranks)
{
    double divisor = 2.0 * (ranks > 0 ? ranks : 1);
    return remaining_cost > 0 ? remaining_cost / divisor : 0;
}

bool fv_queue_chunk_takes(int32_t taken, double chunk_cost, double next_cost, double target)
{
    return taken == 0 || chunk_cost + next_cost <= target;
}
