/* Trace records → events, for the host (docs/FORMAT.md). */
#ifndef GWATCH_EXPAND_H
#define GWATCH_EXPAND_H

#include <stddef.h>
#include <stdint.h>

/* What the rewriter told the host about a kernel's markers, by site number. */
typedef struct {
    const uint32_t *tags;          /* scope_id << 1 | is_end */
    const int64_t *readings;       /* which reading of its record the site shares */
    const int64_t *record_events;  /* markers of the record the site starts; 0 if none */
    size_t num_sites;
} gw_site_table;

/* A table whose readings or record spans point outside it: the index of the first bad
 * site, or -1 when the table is sound. */
long gw_bad_site(const gw_site_table *table);

/* Events held by the records of `slots` warp slots, each `width` records wide (16 bytes:
 * three clock words and a site), of which slot i wrote n_records[i]. Returns -1 and sets
 * *bad (the record's index among the written ones) and *bad_site when a record names a
 * site that starts no record. */
long long gw_count_events(const uint32_t *records, size_t width, const int64_t *n_records, size_t slots,
                          const gw_site_table *table, long long *bad, uint32_t *bad_site);

/* Writes every event's clock word and tag, in slot and program order, and the events each
 * slot holds; the records must have passed gw_count_events. */
void gw_expand(const uint32_t *records, size_t width, const int64_t *n_records, size_t slots,
               const gw_site_table *table, uint32_t *clocks, uint32_t *tags, int64_t *held);

#endif
