/* Lanes by a sweep of the events with a min-heap of the rows free now: greedy interval
 * colouring in program order, O(events + intervals log rows). Interval graphs colour
 * optimally this way: a warp never gets more rows than the most instances open at once. */
#include "lanes.h"

#include <stdlib.h>

typedef struct {
    int32_t *rows;
    size_t count, capacity;
} row_heap;

static int heap_push(row_heap *h, int32_t row) {
    if (h->count == h->capacity) {
        size_t capacity = h->capacity ? 2 * h->capacity : 16;
        int32_t *grown = realloc(h->rows, capacity * sizeof *grown);
        if (!grown) return -1;
        h->rows = grown;
        h->capacity = capacity;
    }
    size_t i = h->count++;
    while (i > 0 && h->rows[(i - 1) / 2] > row) {
        h->rows[i] = h->rows[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->rows[i] = row;
    return 0;
}

static int32_t heap_pop(row_heap *h) {
    int32_t top = h->rows[0], last = h->rows[--h->count];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= h->count) break;
        if (child + 1 < h->count && h->rows[child + 1] < h->rows[child]) child++;
        if (h->rows[child] >= last) break;
        h->rows[i] = h->rows[child];
        i = child;
    }
    if (h->count) h->rows[i] = last;
    return top;
}

int gw_lanes(const int64_t *start, const int64_t *end, size_t intervals, size_t events, int32_t *lane) {
    /* What each event does: 0 nothing, 1 + 2i starts instance i, 2 + 2i ends it. */
    if (intervals > (UINT32_MAX - 2) / 2) return -2;
    uint32_t *at = calloc(events ? events : 1, sizeof *at);
    if (!at) return -2;
    for (size_t i = 0; i < intervals; i++) {
        int64_t s = start[i], e = end[i];
        if (s < 0 || e <= s || (uint64_t)e >= events || at[s] || at[e]) {
            free(at);
            return -1;
        }
        at[s] = 1 + 2 * (uint32_t)i;
        at[e] = 2 + 2 * (uint32_t)i;
    }
    row_heap free_rows = {0};
    int32_t rows = 0; /* rows used so far: the heap holds the free ones below it */
    int status = 0;
    for (size_t p = 0; p < events && !status; p++) {
        uint32_t what = at[p];
        if (!what) continue;
        uint32_t i = (what - 1) / 2;
        if (what & 1)
            lane[i] = free_rows.count ? heap_pop(&free_rows) : rows++;
        else if (heap_push(&free_rows, lane[i]))
            status = -2;
    }
    free(free_rows.rows);
    free(at);
    return status;
}
