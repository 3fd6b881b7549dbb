/* PTX rewriter: turns gwatch sentinels into per-warp trace records. */
#ifndef GWATCH_PTX_REWRITE_H
#define GWATCH_PTX_REWRITE_H

#include <stddef.h>

#include "gwatch_format.h"

typedef struct {
    char *data;
    size_t len, cap;
    int failed; /* an allocation failed; the text is incomplete */
} gw_text;

typedef struct {
    int entry;    /* index into gw_result.entries */
    int scope_id;
    int is_end;
    int line;     /* 1-based line of the sentinel in the input */
    int reading;  /* which clock reading of its record it shares (0 .. READINGS_PER_RECORD-1) */
    int record_events; /* markers of the record this site starts; 0 if it starts none */
} gw_site;

typedef struct {
    size_t name_offset, name_length; /* the entry's name inside the input text */
    int line;                         /* 1-based line of its .entry directive */
    int num_params;                   /* parameters before the one the rewrite appends */
    int num_sites;
    int num_exits;                    /* ret/exit instructions sent through the epilogue */
} gw_entry;

typedef struct {
    gw_text out;          /* instrumented text; empty when `changed` is 0 */
    int changed;          /* 0: the module holds no sentinel and is left as it is */
    gw_site *sites;
    size_t num_sites, sites_capacity;
    gw_entry *entries;
    size_t num_entries, entries_capacity;
    char error[512];      /* set when gw_rewrite returns -1 */
} gw_result;

/* The scope ids a rewrite traces, a bit each; the markers of the others stay idle
 * comments, which ptxas compiles to nothing. */
typedef struct {
    unsigned char bits[GWATCH_MAX_SCOPE_ID / 8 + 1];
} gw_scope_set;

/* Rewrites `ptx` (`length` bytes, need not be NUL-terminated), tracing the markers of the
 * scopes in `traced` (NULL: every scope). Returns 0, or -1 with result->error set. A
 * module none of whose markers is traced is left as it is (result->changed == 0). Always
 * call gw_result_free afterwards. */
int gw_rewrite(const char *ptx, size_t length, const gw_scope_set *traced, gw_result *result);
void gw_result_free(gw_result *result);

#endif
