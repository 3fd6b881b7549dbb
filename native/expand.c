/* Trace records → events: each record stands for the markers its first site's record
 * covers, each taking its own reading of the record's three (docs/FORMAT.md). A plain loop
 * here is several times faster than the same expansion in numpy, and a launch holds
 * millions of records. */
#include "expand.h"

#include "gwatch_format.h"

#define WORDS_PER_RECORD (GWATCH_RECORD_BYTES / 4)
#define SITE_WORD (GWATCH_REC_SITE / 4)

long gw_bad_site(const gw_site_table *t) {
    for (size_t s = 0; s < t->num_sites; s++) {
        int64_t reading = t->readings[s], covered = t->record_events[s];
        if (reading < 0 || reading >= GWATCH_READINGS_PER_RECORD || covered < 0 ||
            (uint64_t)covered > t->num_sites - s)
            return (long)s;
    }
    return -1;
}

long long gw_count_events(const uint32_t *records, size_t width, const int64_t *n_records, size_t slots,
                          const gw_site_table *t, long long *bad, uint32_t *bad_site) {
    long long events = 0, index = 0;
    for (size_t w = 0; w < slots; w++) {
        const uint32_t *record = records + w * width * WORDS_PER_RECORD;
        for (int64_t r = 0; r < n_records[w]; r++, index++, record += WORDS_PER_RECORD) {
            uint32_t site = record[SITE_WORD];
            if (site >= t->num_sites || t->record_events[site] == 0) {
                *bad = index;
                *bad_site = site;
                return -1;
            }
            events += t->record_events[site];
        }
    }
    return events;
}

void gw_expand(const uint32_t *records, size_t width, const int64_t *n_records, size_t slots,
               const gw_site_table *t, uint32_t *clocks, uint32_t *tags, int64_t *held) {
    for (size_t w = 0; w < slots; w++) {
        const uint32_t *record = records + w * width * WORDS_PER_RECORD;
        int64_t events = 0;
        for (int64_t r = 0; r < n_records[w]; r++, record += WORDS_PER_RECORD) {
            uint32_t first = record[SITE_WORD];
            for (int64_t k = 0; k < t->record_events[first]; k++) {
                *clocks++ = record[t->readings[first + k]];
                *tags++ = t->tags[first + k];
            }
            events += t->record_events[first];
        }
        held[w] = events;
    }
}
