/* Open addressing with linear probing; the capacity is a power of two, at most half full. */
#include "slice_set.h"

#include <stdlib.h>
#include <string.h>

static size_t slice_hash(const char *s, size_t n) {
    size_t h = 1469598103u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

int slice_set_has(const slice_set *set, const char *s, size_t n) {
    if (!set->count) return 0;
    for (size_t i = slice_hash(s, n) & (set->capacity - 1);; i = (i + 1) & (set->capacity - 1)) {
        if (!set->names[i]) return 0;
        if (set->lengths[i] == n && memcmp(set->names[i], s, n) == 0) return 1;
    }
}

void slice_set_add(slice_set *set, const char *s, size_t n) {
    if (set->failed || slice_set_has(set, s, n)) return;
    if (2 * (set->count + 1) > set->capacity) {
        slice_set grown = {0};
        grown.capacity = set->capacity ? set->capacity * 2 : 64;
        grown.names = calloc(grown.capacity, sizeof *grown.names);
        grown.lengths = calloc(grown.capacity, sizeof *grown.lengths);
        if (!grown.names || !grown.lengths) {
            free(grown.names);
            free(grown.lengths);
            set->failed = 1;
            return;
        }
        for (size_t i = 0; i < set->capacity; i++)
            if (set->names[i]) slice_set_add(&grown, set->names[i], set->lengths[i]);
        free(set->names);
        free(set->lengths);
        *set = grown;
    }
    size_t i = slice_hash(s, n) & (set->capacity - 1);
    while (set->names[i]) i = (i + 1) & (set->capacity - 1);
    set->names[i] = s;
    set->lengths[i] = n;
    set->count++;
}

void slice_set_clear(slice_set *set) {
    if (set->count) memset(set->names, 0, set->capacity * sizeof *set->names);
    set->count = 0;
}

void slice_set_free(slice_set *set) {
    free(set->names);
    free(set->lengths);
    memset(set, 0, sizeof *set);
}
