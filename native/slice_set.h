/* A set of text slices (pointer and length into a text that outlives the set): the
 * rewriter's branch targets and the registers a stretch of code has defined. */
#ifndef GWATCH_SLICE_SET_H
#define GWATCH_SLICE_SET_H

#include <stddef.h>

typedef struct {
    const char **names;
    size_t *lengths;
    size_t capacity, count;
    int failed; /* an allocation failed: the set may lack members */
} slice_set;

int slice_set_has(const slice_set *set, const char *s, size_t n);
void slice_set_add(slice_set *set, const char *s, size_t n);
void slice_set_clear(slice_set *set); /* empty, keeping the memory */
void slice_set_free(slice_set *set);

#endif
