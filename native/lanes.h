/* Lanes: the display row of each scope instance in its warp (docs/FORMAT.md, `depth`). */
#ifndef GWATCH_LANES_H
#define GWATCH_LANES_H

#include <stddef.h>
#include <stdint.h>

/* `intervals` instances of a launch, each its start's and its end's position among the
 * launch's `events` (warp-major, program order; an instance lies inside one warp). Sweeping
 * the events in order, an end frees its instance's row and a start takes the lowest free
 * row: properly nested instances get their nesting depth, and no two instances that are
 * open at once share a row. Writes lane[i]; returns 0, -1 when a position is outside the
 * events, an end does not follow its start, or two instances claim one event, -2 when out
 * of memory. */
int gw_lanes(const int64_t *start, const int64_t *end, size_t intervals, size_t events, int32_t *lane);

#endif
