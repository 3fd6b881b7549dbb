/* PTX rewriter.
 *
 * Input: the PTX of one module, as Triton (LLVM's NVPTX back end) writes it, holding
 * sentinel comments "// gwatch.scope_start ID" / "// gwatch.scope_end ID" left by the
 * markers. Output, when the module holds at least one sentinel: every .entry gains
 *   - three parameters, the trace buffer's address, the per-warp capacity in events and
 *     the records per warp slot (appended after its own parameters; launches pass them,
 *     so concurrent launches never share a buffer),
 *   - a prologue that finds the warp's slot and writes its header (lane 0 only),
 *   - a clock reading in place of each sentinel, stored in 16-byte records,
 *   - an epilogue that every ret/exit now branches to, writing the exit anchors.
 * A module without sentinels of the scopes traced is returned untouched (result->changed
 * == 0); the sentinels of other scopes stay the comments they are. For each site
 * the result tells the host which reading of its record it shares and, for a record's
 * first site, how many markers the record covers: the record names only that site.
 *
 * Markers cost the kernel time in its hottest loops, so each one is kept small: the
 * sentinels of one straight-line stretch (no branch and no branch target between them)
 * form a group that tests the slot's room once and advances the counters once;
 * sentinels with no instruction between them share one clock read (a clock read is a
 * point ptxas schedules nothing across); an end marker's reading is taken after the plain
 * arithmetic right behind it that uses nothing the stretch computed before it
 * (ptx_arithmetic.h says why); and up to three readings go out in one store, with the
 * streaming cache hint (the kernel never reads its records back).
 *
 * The rewrite is two passes over lines: the first collects the labels branches jump to
 * (the places a straight-line stretch ends); the second tracks brace depth (outside
 * comments and strings) to know where a function body opens and closes, recognises
 * whole-line sentinels, ret/exit instructions and stretch boundaries, and copies
 * everything else as it is. */
#include "ptx_rewrite.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gwatch_format.h"
#include "ptx_arithmetic.h"
#include "slice_set.h"

#define EXIT_LABEL "$__gwatch_exit"

/* A group's readings are stored after the fact: each waits in a register until
 * PENDING_READINGS_MAX wait or the group closes, so the stores land after the stretch's
 * own memory work instead of in front of the fences and barriers inside it, which would
 * wait for them (docs/PERFORMANCE.md compares storing every three readings). A multiple
 * of READINGS_PER_RECORD. */
#define PENDING_READINGS_MAX 6
#define CLOCK_REGISTERS (PENDING_READINGS_MAX + 1) /* the readings waiting, and the one just taken */
#define RECORD_SHIFT 4 /* log2(RECORD_BYTES) */
/* An end marker's reading waits behind at most this many independent instructions. */
#define READING_WAIT_MAX 32

/* ------------------------------------------------------------------ text buffer */

static void text_append(gw_text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + n + 1) cap *= 2;
        char *grown = realloc(t->data, cap);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
}

static void text_puts(gw_text *t, const char *s) { text_append(t, s, strlen(s)); }

static void text_printf(gw_text *t, const char *fmt, ...) {
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        t->failed = 1;
        return;
    }
    text_append(t, line, (size_t)n);
}

/* ------------------------------------------------------------------ emitted PTX */

/* The warp's slot, from the launch's parameters and the warp's place in the grid:
 * %gwatch_d6 = where its records start, %gwatch_d7 = its header; %gwatch_r2..r4 hold
 * %ctaid.x/y/z and %gwatch_r6 the warp index in the block. The epilogue computes it again
 * rather than keeping two 64-bit registers live through the kernel. */
static void emit_slot_address(gw_text *t) {
    text_printf(t,
        "\tld.param.u64 \t%%gwatch_d0, [%s];\n"
        "\tld.param.u32 \t%%gwatch_r1, [%s];\n",
        GWATCH_BUFFER_PARAM, GWATCH_SLOT_RECORDS_PARAM);
    /* Linear block index, then slot = block * warps_per_block + warp (64-bit). */
    text_puts(t,
        "\tmov.u32 \t%gwatch_r2, %ctaid.x;\n"
        "\tmov.u32 \t%gwatch_r3, %ctaid.y;\n"
        "\tmov.u32 \t%gwatch_r4, %ctaid.z;\n"
        "\tmov.u32 \t%gwatch_r5, %nctaid.y;\n"
        "\tmul.wide.u32 \t%gwatch_d2, %gwatch_r4, %gwatch_r5;\n"
        "\tcvt.u64.u32 \t%gwatch_d3, %gwatch_r3;\n"
        "\tadd.u64 \t%gwatch_d2, %gwatch_d2, %gwatch_d3;\n"
        "\tmov.u32 \t%gwatch_r5, %nctaid.x;\n"
        "\tcvt.u64.u32 \t%gwatch_d3, %gwatch_r5;\n"
        "\tmul.lo.u64 \t%gwatch_d2, %gwatch_d2, %gwatch_d3;\n"
        "\tcvt.u64.u32 \t%gwatch_d3, %gwatch_r2;\n"
        "\tadd.u64 \t%gwatch_d2, %gwatch_d2, %gwatch_d3;\n"
        "\tmov.u32 \t%gwatch_r6, %tid.z;\n"
        "\tmov.u32 \t%gwatch_r7, %ntid.y;\n"
        "\tmov.u32 \t%gwatch_r8, %tid.y;\n"
        "\tmad.lo.u32 \t%gwatch_r6, %gwatch_r6, %gwatch_r7, %gwatch_r8;\n"
        "\tmov.u32 \t%gwatch_r8, %ntid.x;\n"
        "\tmov.u32 \t%gwatch_r9, %tid.x;\n"
        "\tmad.lo.u32 \t%gwatch_r6, %gwatch_r6, %gwatch_r8, %gwatch_r9;\n"
        "\tshr.u32 \t%gwatch_r6, %gwatch_r6, 5;\n"
        "\tmul.lo.u32 \t%gwatch_r7, %gwatch_r7, %gwatch_r8;\n"
        "\tmov.u32 \t%gwatch_r9, %ntid.z;\n"
        "\tmul.lo.u32 \t%gwatch_r7, %gwatch_r7, %gwatch_r9;\n"
        "\tadd.u32 \t%gwatch_r7, %gwatch_r7, 31;\n"
        "\tshr.u32 \t%gwatch_r7, %gwatch_r7, 5;\n"
        "\tcvt.u64.u32 \t%gwatch_d3, %gwatch_r7;\n"
        "\tcvt.u64.u32 \t%gwatch_d4, %gwatch_r6;\n"
        "\tmad.lo.u64 \t%gwatch_d2, %gwatch_d2, %gwatch_d3, %gwatch_d4;\n");
    /* Slot = slot_records records, then the header. */
    text_printf(t,
        "\tmul.wide.u32 \t%%gwatch_d5, %%gwatch_r1, %d;\n"
        "\tadd.u64 \t%%gwatch_d6, %%gwatch_d5, %d;\n"
        "\tmad.lo.u64 \t%%gwatch_d6, %%gwatch_d2, %%gwatch_d6, %%gwatch_d0;\n"
        "\tadd.u64 \t%%gwatch_d6, %%gwatch_d6, %d;\n"
        "\tadd.u64 \t%%gwatch_d7, %%gwatch_d6, %%gwatch_d5;\n",
        GWATCH_RECORD_BYTES, GWATCH_SLOT_HEADER_BYTES, GWATCH_GLOBAL_HEADER_BYTES);
}

/* Registers the instrumentation owns; the %gwatch_ prefix keeps them apart from LLVM's.
 * Live across the kernel: the next record's address (ptr), the events attempted so far
 * (n), the capacity in events (cap) and whether this lane records (on: lane 0 with a
 * buffer). n and cap are the same in every lane, so ptxas can keep them on the uniform
 * datapath; the lane test stays a predicate of its own for the same reason. */
static void emit_prologue(gw_text *t) {
    text_printf(t,
        "\t// gwatch: find this warp's trace slot; lane 0 records (docs/FORMAT.md)\n"
        "\t.reg .pred \t%%gwatch_on;\n"
        "\t.reg .pred \t%%gwatch_ok;\n"
        "\t.reg .b32 \t%%gwatch_r<11>;\n"
        "\t.reg .b64 \t%%gwatch_d<8>;\n"
        "\t.reg .b64 \t%%gwatch_ptr;\n"
        "\t.reg .b32 \t%%gwatch_n;\n"
        "\t.reg .b32 \t%%gwatch_cap;\n"
        "\t.reg .b32 \t%%gwatch_clk<%d>;\n"
        "\t.reg .b32 \t%%gwatch_site;\n",
        CLOCK_REGISTERS);
    emit_slot_address(t);
    text_printf(t,
        "\tld.param.u32 \t%%gwatch_cap, [%s];\n"
        "\tmov.u32 \t%%gwatch_r0, %%laneid;\n"
        "\tsetp.eq.u32 \t%%gwatch_on, %%gwatch_r0, 0;\n"
        "\tsetp.ne.and.u64 \t%%gwatch_on, %%gwatch_d0, 0, %%gwatch_on;\n"
        "\tmov.u64 \t%%gwatch_ptr, %%gwatch_d6;\n"
        "\tmov.u32 \t%%gwatch_n, 0;\n"
        "\tmov.u64 \t%%gwatch_d3, %%globaltimer;\n"
        "\tmov.u64 \t%%gwatch_d4, %%clock64;\n"
        "\t@%%gwatch_on st.global.v2.u64 \t[%%gwatch_d7+%d], {%%gwatch_d3, %%gwatch_d4};\n"
        "\tmov.u32 \t%%gwatch_r9, %u;\n"
        "\t@%%gwatch_on st.global.v4.u32 \t[%%gwatch_d7+%d], {%%gwatch_r9, %%gwatch_r6, %%gwatch_r2, %%gwatch_r3};\n"
        "\tmov.u32 \t%%gwatch_r10, %%smid;\n"
        "\t@%%gwatch_on st.global.v4.u32 \t[%%gwatch_d7+%d], {%%gwatch_r4, %%gwatch_r10, %%gwatch_n, %%gwatch_n};\n",
        GWATCH_CAPACITY_PARAM, GWATCH_SH_GT_ENTRY, GWATCH_WARP_MAGIC, GWATCH_SH_MAGIC, GWATCH_SH_BLOCK_Z);
}

/* The open group of sentinels in the current straight-line stretch, and its readings that
 * wait to be stored. */
typedef struct {
    int open;       /* a room test was emitted and the counters are not yet advanced */
    int events;     /* markers in the group so far */
    int records;    /* of its records, those already stored */
    int clock_live; /* the latest clock reading has had no instruction run since */
    int clock;      /* the register holding the latest reading */
    int owed;       /* the latest reading is still to be taken (an end marker's, waiting) */
    int waited;     /* instructions it has waited behind */
    int readings;   /* readings waiting */
    int clock_of[PENDING_READINGS_MAX];  /* each waiting reading's register */
    size_t site_of[PENDING_READINGS_MAX]; /* and the site of its first marker */
} event_group;

/* The waiting readings, three to a record, each record one vector store naming its first
 * site (an unused place repeats the record's first reading), at the group's next records. */
static void store_pending(gw_text *t, event_group *g) {
    for (int first = 0; first < g->readings; first += GWATCH_READINGS_PER_RECORD) {
        text_printf(t, "\tmov.u32 \t%%gwatch_site, %zu;\n\t@%%gwatch_ok st.global.cs.v4.b32 \t[%%gwatch_ptr+%d], {",
                    g->site_of[first], g->records * GWATCH_RECORD_BYTES);
        for (int i = first; i < first + GWATCH_READINGS_PER_RECORD; i++)
            text_printf(t, "%%gwatch_clk%d, ", g->clock_of[i < g->readings ? i : first]);
        text_puts(t, "%gwatch_site};\n");
        g->records++;
    }
    g->readings = 0;
}

/* Take the reading an end marker owes, before the first line it may not wait behind. */
static void take_owed_reading(gw_text *t, event_group *g) {
    text_printf(t, "\tmov.u32 \t%%gwatch_clk%d, %%clock;\n", g->clock);
    g->owed = 0;
}

/* Store what waits and advance the counters past the group: every path out of a stretch
 * passes here first. The record pointer moves only when the group was written, so at the
 * exit it tells how many records the slot holds. */
static void close_group(gw_text *t, event_group *g) {
    if (g->owed) take_owed_reading(t, g);
    if (g->open) {
        store_pending(t, g);
        text_printf(t,
            "\tadd.u32 \t%%gwatch_n, %%gwatch_n, %d;\n"
            "\t@%%gwatch_ok add.u64 \t%%gwatch_ptr, %%gwatch_ptr, %d;\n",
            g->events, g->records * GWATCH_RECORD_BYTES);
    }
    g->open = g->events = g->records = g->clock_live = g->readings = g->waited = 0;
}

/* One marker: a clock reading unless the previous marker's is still fresh, written by
 * lane 0 when the slot had room before the group. An end marker's reading is owed: it
 * is taken after the independent arithmetic that follows (the line loop decides), unless
 * the readings waiting to be stored fill their registers. The site learns which reading
 * of its record it shares, and a record's first site how many markers the record
 * covers. */
static void emit_event(gw_text *t, event_group *g, gw_result *r, size_t site) {
    gw_site *s = &r->sites[site];
    if (g->owed) take_owed_reading(t, g);
    if (g->open && g->events == GWATCH_GROUP_MAX_EVENTS) close_group(t, g);
    if (!g->open) {
        text_puts(t, "\tsetp.lt.and.u32 \t%gwatch_ok, %gwatch_n, %gwatch_cap, %gwatch_on;\n");
        g->open = 1;
    }
    text_printf(t, "\t// gwatch site %zu: scope_%s %d\n", site, s->is_end ? "end" : "start", s->scope_id);
    if (!g->clock_live) {
        g->clock = (g->clock + 1) % CLOCK_REGISTERS;
        if (s->is_end && g->readings < PENDING_READINGS_MAX) {
            g->owed = 1;
            g->waited = 0;
        } else {
            text_printf(t, "\tmov.u32 \t%%gwatch_clk%d, %%clock;\n", g->clock);
            if (g->readings == PENDING_READINGS_MAX) store_pending(t, g); /* after the reading: never delays it */
        }
        g->clock_of[g->readings] = g->clock;
        g->site_of[g->readings++] = site;
    }
    int latest = g->readings - 1;
    s->reading = latest % GWATCH_READINGS_PER_RECORD;
    r->sites[g->site_of[latest - s->reading]].record_events++;
    g->events++;
    g->clock_live = 1;
}

/* Exit anchors, the events attempted and the records written (the record pointer's
 * distance from the slot's start). */
static void emit_epilogue(gw_text *t) {
    text_puts(t, EXIT_LABEL ":\n");
    emit_slot_address(t);
    text_printf(t,
        "\tsub.u64 \t%%gwatch_d5, %%gwatch_ptr, %%gwatch_d6;\n"
        "\tshr.u64 \t%%gwatch_d5, %%gwatch_d5, %d;\n"
        "\tcvt.u32.u64 \t%%gwatch_r0, %%gwatch_d5;\n"
        "\tmov.u64 \t%%gwatch_d3, %%globaltimer;\n"
        "\tmov.u64 \t%%gwatch_d4, %%clock64;\n"
        "\t@%%gwatch_on st.global.v2.u64 \t[%%gwatch_d7+%d], {%%gwatch_d3, %%gwatch_d4};\n"
        "\t@%%gwatch_on st.global.v2.u32 \t[%%gwatch_d7+%d], {%%gwatch_n, %%gwatch_r0};\n"
        "\tret;\n",
        RECORD_SHIFT, GWATCH_SH_GT_EXIT, GWATCH_SH_EVENTS);
}

/* ------------------------------------------------------------------ line analysis */

typedef struct {
    const char *start;
    size_t length; /* without the line break */
} line_t;

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }
static int is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '%' || c == '.';
}

static const char *find_word(const char *s, size_t n, const char *word) {
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (memcmp(s + i, word, w) == 0) return s + i;
    return NULL;
}

/* The code part of a line: up to a "//" comment; block comments and strings are
 * tracked across the scan so braces inside them are not counted. */
typedef struct {
    int in_block_comment; /* carried from line to line */
} scan_state;

typedef struct {
    size_t code_end;      /* offset where a // comment starts (or the line's length) */
    int opens, closes;    /* braces in code */
    long first_open;      /* offset of the first '{' in code, -1 if none */
    long close_to_zero;   /* offset of the '}' that brings depth back to 0, -1 if none */
    long param_close;     /* offset of the ')' closing a paren level that drops to 0, -1 if none */
    int parens;           /* net parentheses */
    int semicolon;        /* a ';' outside parentheses */
} line_info;

static void scan_line(const line_t *ln, scan_state *st, int depth_before, int paren_before, line_info *info) {
    const char *s = ln->start;
    size_t n = ln->length;
    int depth = depth_before, paren = paren_before, in_string = 0;
    memset(info, 0, sizeof *info);
    info->code_end = n;
    info->first_open = info->close_to_zero = info->param_close = -1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (st->in_block_comment) {
            if (c == '*' && i + 1 < n && s[i + 1] == '/') {
                st->in_block_comment = 0;
                i++;
            }
            continue;
        }
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
            continue;
        }
        if (c == '"') in_string = 1;
        else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            info->code_end = i;
            break;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            st->in_block_comment = 1;
            i++;
        } else if (c == '{') {
            if (info->first_open < 0) info->first_open = (long)i;
            info->opens++;
            depth++;
        } else if (c == '}') {
            info->closes++;
            depth--;
            if (depth == 0 && info->close_to_zero < 0) info->close_to_zero = (long)i;
        } else if (c == '(') {
            paren++;
        } else if (c == ')') {
            paren--;
            if (paren == 0 && info->param_close < 0) info->param_close = (long)i;
        } else if (c == ';' && paren == 0) {
            info->semicolon = 1;
        }
    }
    info->parens = paren - paren_before;
}

/* "// gwatch.scope_start 12" alone on a line: 1 and the id/kind; 0 if the line holds no
 * sentinel word; -1 if it mentions one in any other form. */
static int parse_sentinel(const line_t *ln, int *scope_id, int *is_end) {
    const char *s = ln->start, *end = ln->start + ln->length;
    if (!find_word(s, ln->length, GWATCH_MARKER_WORD)) return 0;
    while (s < end && is_space(*s)) s++;
    static const char start_word[] = GWATCH_MARKER_START, end_word[] = GWATCH_MARKER_END;
    if ((size_t)(end - s) > sizeof start_word - 1 && memcmp(s, start_word, sizeof start_word - 1) == 0) {
        *is_end = 0;
        s += sizeof start_word - 1;
    } else if ((size_t)(end - s) > sizeof end_word - 1 && memcmp(s, end_word, sizeof end_word - 1) == 0) {
        *is_end = 1;
        s += sizeof end_word - 1;
    } else {
        return -1;
    }
    if (s >= end || !is_space(*s)) return -1;
    while (s < end && is_space(*s)) s++;
    long value = 0;
    int digits = 0;
    while (s < end && *s >= '0' && *s <= '9' && digits < 9) {
        value = value * 10 + (*s - '0');
        s++;
        digits++;
    }
    while (s < end && is_space(*s)) s++;
    if (!digits || s != end || value > GWATCH_MAX_SCOPE_ID) return -1;
    *scope_id = (int)value;
    return 1;
}

/* An instruction line: "[label:]... [@[!]%p] opcode operands;". Returns where the opcode
 * starts (code_end when the line holds only labels), and passes each label it defines to
 * on_label; -1 when a guard has no predicate. */
static long instruction_start(const char *s, size_t code_end, void (*on_label)(const char *, size_t, void *),
                              void *context) {
    size_t i = 0;
    for (;;) {
        while (i < code_end && is_space(s[i])) i++;
        size_t j = i;
        while (j < code_end && is_ident(s[j]) && s[j] != '%') j++;
        if (j == i || j >= code_end || s[j] != ':') break;
        if (on_label) on_label(s + i, j - i, context);
        i = j + 1;
    }
    if (i < code_end && s[i] == '@') {
        i++;
        if (i < code_end && s[i] == '!') i++;
        size_t k = i;
        while (i < code_end && is_ident(s[i])) i++;
        if (i == k) return -1;
        while (i < code_end && is_space(s[i])) i++;
    }
    return (long)i;
}

/* Does the opcode at s name a branch ("bra", "bra.uni", "brx.idx")? */
static int is_branch(const char *s, size_t n) {
    if (n >= 3 && memcmp(s, "bra", 3) == 0 && (n == 3 || s[3] == '.' || is_space(s[3]))) return 1;
    return n >= 4 && memcmp(s, "brx.", 4) == 0;
}

/* A ret or exit instruction, with optional labels and guard predicate. On success
 * *prefix_end is where the opcode starts and *uniform tells whether it carried .uni. */
static int parse_exit(const char *s, size_t code_end, size_t *prefix_end, int *uniform) {
    long start = instruction_start(s, code_end, NULL, NULL);
    if (start < 0) return 0;
    size_t i = (size_t)start, op = i;
    *uniform = 0;
    if (code_end - i >= 3 && memcmp(s + i, "ret", 3) == 0) {
        i += 3;
        if (code_end - i >= 4 && memcmp(s + i, ".uni", 4) == 0) {
            *uniform = 1;
            i += 4;
        }
    } else if (code_end - i >= 4 && memcmp(s + i, "exit", 4) == 0) {
        i += 4;
    } else {
        return 0;
    }
    while (i < code_end && is_space(s[i])) i++;
    if (i >= code_end || s[i] != ';') return 0;
    i++;
    while (i < code_end && is_space(s[i])) i++;
    if (i != code_end) return 0;
    *prefix_end = op;
    return 1;
}

/* The marker's own "mov.u32 %rN, 0;" (its asm must yield a value): no time passes there. */
static int is_marker_value(const char *s, size_t n) {
    static const char head[] = "mov.u32";
    size_t i = 0;
    while (i < n && is_space(s[i])) i++;
    if (n - i < sizeof head - 1 || memcmp(s + i, head, sizeof head - 1) != 0) return 0;
    i += sizeof head - 1;
    if (i >= n || !is_space(s[i])) return 0;
    while (i < n && is_space(s[i])) i++;
    if (n - i < 3 || s[i] != '%' || s[i + 1] != 'r') return 0;
    i += 2;
    size_t digits = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == digits) return 0;
    while (i < n && is_space(s[i])) i++;
    if (i >= n || s[i++] != ',') return 0;
    while (i < n && is_space(s[i])) i++;
    if (i >= n || s[i++] != '0') return 0;
    while (i < n && is_space(s[i])) i++;
    if (i >= n || s[i++] != ';') return 0;
    while (i < n && is_space(s[i])) i++;
    return i == n;
}

/* ------------------------------------------------------------------ branch targets */

/* Every label named as an operand of a branch or in a .branchtargets list. Only lines
 * that mention "br" are read; one inside a block comment adds a label that ends a stretch
 * needlessly, which costs a little and is never wrong. */
static void collect_branch_targets(const char *ptx, size_t length, slice_set *targets) {
    const char *p = ptx, *end = ptx + length;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line_t ln = {p, (size_t)((nl ? nl : end) - p)};
        p = nl ? nl + 1 : end;
        if (!find_word(ln.start, ln.length, "br")) continue;
        scan_state scan = {0};
        line_info info;
        scan_line(&ln, &scan, 0, 0, &info);
        const char *s = ln.start;
        long op = instruction_start(s, info.code_end, NULL, NULL);
        const char *list = find_word(s, info.code_end, ".branchtargets");
        int branch = op >= 0 && is_branch(s + op, info.code_end - (size_t)op);
        if (!branch && !list) continue;
        size_t i = list ? (size_t)(list - s) + strlen(".branchtargets") : (size_t)op;
        if (branch) /* skip the opcode itself */
            while (i < info.code_end && !is_space(s[i])) i++;
        while (i < info.code_end) {
            while (i < info.code_end && !is_ident(s[i])) i++;
            size_t b = i;
            while (i < info.code_end && is_ident(s[i])) i++;
            if (i > b && s[b] != '%' && s[b] != '.') slice_set_add(targets, s + b, i - b);
        }
    }
}

/* At module level: does this line open a function header? 1 = .entry, 2 = .func. */
static int function_kind(const line_t *ln, size_t code_end, size_t *name_offset, size_t *name_length) {
    const char *s = ln->start;
    size_t i = 0;
    for (;;) {
        while (i < code_end && is_space(s[i])) i++;
        size_t b = i;
        while (i < code_end && !is_space(s[i]) && s[i] != '(') i++;
        size_t w = i - b;
        if (w == 0 || s[b] != '.') return 0;
        int kind = 0;
        if (w == 6 && memcmp(s + b, ".entry", 6) == 0) kind = 1;
        else if (w == 5 && memcmp(s + b, ".func", 5) == 0) kind = 2;
        if (kind) {
            while (i < code_end && is_space(s[i])) i++;
            size_t n0 = i;
            while (i < code_end && is_ident(s[i])) i++;
            *name_offset = n0;
            *name_length = i - n0;
            return kind;
        }
        if (!((w == 8 && memcmp(s + b, ".visible", 8) == 0) || (w == 5 && memcmp(s + b, ".weak", 5) == 0) ||
              (w == 7 && memcmp(s + b, ".extern", 7) == 0)))
            return 0;
    }
}

static size_t count_word(const char *s, size_t n, const char *word) {
    size_t count = 0, w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (memcmp(s + i, word, w) == 0 && (i + w == n || !is_ident(s[i + w]))) count++;
    return count;
}

/* ------------------------------------------------------------------ bookkeeping */

static int fail(gw_result *r, int line, const char *fmt, ...) {
    int n = snprintf(r->error, sizeof r->error, "PTX line %d: ", line);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof r->error) vsnprintf(r->error + n, sizeof r->error - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static int add_site(gw_result *r, gw_site site) {
    if (r->num_sites == r->sites_capacity) {
        size_t cap = r->sites_capacity ? r->sites_capacity * 2 : 64;
        gw_site *grown = realloc(r->sites, cap * sizeof *grown);
        if (!grown) return -1;
        r->sites = grown;
        r->sites_capacity = cap;
    }
    r->sites[r->num_sites++] = site;
    return 0;
}

static int add_entry(gw_result *r, gw_entry entry) {
    if (r->num_entries == r->entries_capacity) {
        size_t cap = r->entries_capacity ? r->entries_capacity * 2 : 8;
        gw_entry *grown = realloc(r->entries, cap * sizeof *grown);
        if (!grown) return -1;
        r->entries = grown;
        r->entries_capacity = cap;
    }
    r->entries[r->num_entries++] = entry;
    return 0;
}

void gw_result_free(gw_result *r) {
    free(r->out.data);
    free(r->sites);
    free(r->entries);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ stretches */

/* What a line of an entry's body means for the open group of sentinels. */
enum { PASSES_NO_TIME, TAKES_TIME, ENDS_STRETCH };

typedef struct {
    const slice_set *targets;
    int targeted;
} label_probe;

static void probe_label(const char *s, size_t n, void *context) {
    label_probe *probe = context;
    if (slice_set_has(probe->targets, s, n)) probe->targeted = 1;
}

/* Blank lines, comments, directives (.loc), labels no branch names and the markers' own
 * movs pass no time; a branch or a label some branch names ends the stretch. Lines with
 * block comments are treated as ending it: a needless end costs two adds and a room
 * test, a missed one would be wrong. */
static int classify_line(const line_t *ln, const line_info *info, int block_comment, const slice_set *targets,
                         long *opcode) {
    const char *s = ln->start;
    size_t n = info->code_end, i = 0;
    *opcode = -1;
    if (block_comment) return ENDS_STRETCH;
    while (i < n && is_space(s[i])) i++;
    if (i == n) return PASSES_NO_TIME;
    if (s[i] == '.') return PASSES_NO_TIME;
    if (info->opens || info->closes) return TAKES_TIME;
    label_probe probe = {targets, 0};
    long op = instruction_start(s, n, probe_label, &probe);
    if (probe.targeted) return ENDS_STRETCH;
    if (op < 0) return TAKES_TIME;
    if ((size_t)op == n) return PASSES_NO_TIME;
    if (is_branch(s + op, n - (size_t)op)) return ENDS_STRETCH;
    *opcode = op;
    return is_marker_value(s, n) ? PASSES_NO_TIME : TAKES_TIME;
}

/* ------------------------------------------------------------------ the pass */

enum { AT_MODULE, IN_HEADER, IN_BODY };

/* `computed` holds the registers the current stretch has written so far (the arithmetic
 * an end marker's reading may wait behind must not read them). */
static int rewrite_lines(const char *ptx, size_t length, const slice_set *targets, slice_set *computed,
                         const gw_scope_set *traced, gw_result *r) {
    gw_text *out = &r->out;
    event_group group = {0};
    scan_state scan = {0};
    int state = AT_MODULE, depth = 0, paren = 0, is_entry = 0, params_done = 0;
    int line_no = 0;
    long entry = -1;
    const char *header_start = NULL;

    const char *p = ptx, *end = ptx + length;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        line_t ln = {p, (size_t)((nl ? nl : end) - p)};
        const char *next = nl ? nl + 1 : end;
        size_t full = (size_t)(next - p); /* with its line break */
        line_no++;
        p = next;

        int was_in_comment = scan.in_block_comment;
        line_info info;
        scan_line(&ln, &scan, depth, paren, &info);

        int scope_id = 0, is_end = 0;
        int sentinel = was_in_comment ? 0 : parse_sentinel(&ln, &scope_id, &is_end);
        if (sentinel < 0)
            return fail(r, line_no, "malformed gwatch sentinel (expected '" GWATCH_MARKER_START " ID' or '"
                                    GWATCH_MARKER_END " ID' with 0 <= ID <= %d)", GWATCH_MAX_SCOPE_ID);
        if (sentinel && traced && !(traced->bits[scope_id / 8] & (1u << (scope_id % 8))))
            sentinel = 0; /* an idle marker: copied as the comment it is */

        if (state == AT_MODULE) {
            size_t name_offset = 0, name_length = 0;
            int kind = depth == 0 && !was_in_comment ? function_kind(&ln, info.code_end, &name_offset, &name_length) : 0;
            if (sentinel) return fail(r, line_no, "gwatch sentinel outside any function");
            if (!kind) {
                depth += info.opens - info.closes;
                text_append(out, ln.start, full);
                continue;
            }
            state = IN_HEADER;
            is_entry = kind == 1;
            params_done = !is_entry;
            paren = 0;
            header_start = ln.start;
            if (is_entry) {
                gw_entry e = {(size_t)(ln.start + name_offset - ptx), name_length, line_no, 0, 0, 0};
                if (add_entry(r, e)) return fail(r, line_no, "out of memory");
                entry = (long)r->num_entries - 1;
            }
            /* fall through: the header line may also hold the parameters and the brace */
        }

        if (state == IN_HEADER) {
            if (sentinel) return fail(r, line_no, "gwatch sentinel inside a function header");
            size_t copied = 0;
            if (is_entry && !params_done && info.param_close >= 0 && paren + info.parens <= 0) {
                /* The entry's parameter list closes on this line: append the trace parameters. */
                gw_entry *e = &r->entries[entry];
                e->num_params = (int)count_word(header_start, (size_t)(ln.start + info.param_close - header_start), ".param");
                text_append(out, ln.start, (size_t)info.param_close);
                text_printf(out, "%s\n\t.param .u64 %s,\n\t.param .u32 %s,\n\t.param .u32 %s\n",
                            e->num_params ? "," : "", GWATCH_BUFFER_PARAM, GWATCH_CAPACITY_PARAM,
                            GWATCH_SLOT_RECORDS_PARAM);
                copied = (size_t)info.param_close;
                params_done = 1;
            }
            paren += info.parens;
            if (info.opens == 0) {
                if (info.semicolon && paren == 0) state = AT_MODULE; /* a declaration without a body */
                text_append(out, ln.start + copied, full - copied);
                continue;
            }
            if (is_entry && !params_done) return fail(r, line_no, "entry body opens before its parameter list closes");
            /* The body opens on this line. */
            const char *after = ln.start + info.first_open + 1;
            for (const char *c = after; c < ln.start + info.code_end; c++)
                if (!is_space(*c)) return fail(r, line_no, "code after a function's opening brace is not supported");
            depth += info.opens - info.closes;
            state = IN_BODY;
            text_append(out, ln.start + copied, full - copied);
            if (!nl) text_append(out, "\n", 1);
            if (is_entry) emit_prologue(out);
            group = (event_group){0};
            slice_set_clear(computed);
            continue;
        }

        /* IN_BODY */
        if (sentinel) {
            if (!is_entry) {
                return fail(r, line_no, "scope markers inside a non-inlined device function (.func) are not "
                                        "supported; mark the calling kernel instead");
            }
            gw_site site = {(int)entry, scope_id, is_end, line_no, 0, 0};
            if (add_site(r, site)) return fail(r, line_no, "out of memory");
            r->entries[entry].num_sites++;
            emit_event(out, &group, r, r->num_sites - 1);
            continue;
        }
        size_t prefix_end = 0;
        int uniform = 0;
        int exit_line = is_entry && !was_in_comment && info.opens == 0 && info.closes == 0 &&
                        parse_exit(ln.start, info.code_end, &prefix_end, &uniform);
        if (is_entry) {
            int block_comment = was_in_comment || scan.in_block_comment || find_word(ln.start, info.code_end, "/*");
            long opcode = -1;
            int effect = exit_line || info.close_to_zero >= 0
                             ? ENDS_STRETCH
                             : classify_line(&ln, &info, block_comment, targets, &opcode);
            if (group.owed) {
                int waits = info.opens == 0 && info.closes == 0 &&
                            (effect == PASSES_NO_TIME ||
                             (effect == TAKES_TIME && opcode >= 0 && group.waited < READING_WAIT_MAX &&
                              gw_is_independent_arithmetic(ln.start, info.code_end, (size_t)opcode, computed)));
                if (waits) { /* the reading is taken after this line, whose results depend on no
                              * value the stretch computed: they stay free for what follows */
                    group.waited += effect == TAKES_TIME;
                    text_append(out, ln.start, full);
                    continue;
                }
                take_owed_reading(out, &group);
            }
            if (effect == ENDS_STRETCH) {
                close_group(out, &group);
                slice_set_clear(computed);
            } else if (effect == TAKES_TIME) {
                group.clock_live = 0;
                gw_note_written(ln.start, info.code_end, opcode >= 0 ? (size_t)opcode : 0, computed);
            }
        }
        if (exit_line) {
            r->entries[entry].num_exits++;
            text_append(out, ln.start, prefix_end);
            text_printf(out, "bra%s \t" EXIT_LABEL ";\n", uniform ? ".uni" : "");
            continue;
        }
        if (info.close_to_zero >= 0) {
            for (const char *c = ln.start; c < ln.start + info.close_to_zero; c++)
                if (!is_space(*c)) return fail(r, line_no, "code before a function's closing brace is not supported");
            if (is_entry) emit_epilogue(out);
            state = AT_MODULE;
            entry = -1;
        }
        depth += info.opens - info.closes;
        if (depth < 0) return fail(r, line_no, "unbalanced braces");
        text_append(out, ln.start, full);
    }
    if (state != AT_MODULE) return fail(r, line_no, "module ends inside a function");
    if (out->failed) return fail(r, line_no, "out of memory");
    r->changed = r->num_sites > 0;
    return 0;
}

int gw_rewrite(const char *ptx, size_t length, const gw_scope_set *traced, gw_result *r) {
    memset(r, 0, sizeof *r);
    if (!find_word(ptx, length, GWATCH_MARKER_WORD)) return 0; /* nothing to do: the module stays as it is */
    slice_set targets = {0}, computed = {0};
    collect_branch_targets(ptx, length, &targets);
    int status = targets.failed ? fail(r, 0, "out of memory")
                                : rewrite_lines(ptx, length, &targets, &computed, traced, r);
    if (computed.failed && status == 0) status = fail(r, 0, "out of memory");
    slice_set_free(&targets);
    slice_set_free(&computed);
    return status;
}
