/* The trace buffer's layout: the one source of truth for every offset and constant.
 * The rewriter (ptx_rewrite.c) emits PTX from these numbers and the Python module
 * exports them (gwatch_nb._native.FORMAT) for the host side; docs/FORMAT.md describes
 * them and a test checks that the document agrees with this file. */
#ifndef GWATCH_FORMAT_H
#define GWATCH_FORMAT_H

#define GWATCH_FORMAT_VERSION 3

/* Global header at the start of each launch's buffer, written by the host so a buffer
 * describes itself; the collector checks it is intact after the launch. */
#define GWATCH_GLOBAL_HEADER_BYTES 64
#define GWATCH_BUFFER_MAGIC 0x54574747u /* "GGWT" little-endian */
#define GWATCH_GH_MAGIC 0               /* u32 */
#define GWATCH_GH_VERSION 4             /* u32 */
#define GWATCH_GH_CAPACITY 8            /* u32: events per warp the host keeps */
#define GWATCH_GH_SLOT_BYTES 12         /* u32: slot_records * RECORD_BYTES + SLOT_HEADER_BYTES */
#define GWATCH_GH_NUM_SLOTS 16          /* u64: warps the launch has */
#define GWATCH_GH_SLOT_RECORDS 24       /* u32: records each warp slot holds */

/* One slot per warp, at GLOBAL_HEADER_BYTES + slot_index * slot_bytes: slot_records
 * records first, then the warp's header. slot_index = block_linear * warps_per_block + warp,
 * which the host sizes the buffer for from the same launch's grid and block, so every
 * warp's slot lies inside the buffer by construction; events past the capacity are
 * counted, never written. */
#define GWATCH_SLOT_HEADER_BYTES 64
#define GWATCH_WARP_MAGIC 0x57574747u /* "GGWW": the warp wrote its header */
#define GWATCH_SH_GT_ENTRY 0          /* u64 %globaltimer at entry (ns) */
#define GWATCH_SH_CK_ENTRY 8          /* u64 %clock64 at entry (SM cycles) */
#define GWATCH_SH_GT_EXIT 16          /* u64 %globaltimer at exit; 0 if the warp never exited */
#define GWATCH_SH_CK_EXIT 24          /* u64 %clock64 at exit */
#define GWATCH_SH_MAGIC 32            /* u32 WARP_MAGIC */
#define GWATCH_SH_WARP 36             /* u32 warp index inside the block (linear tid / 32) */
#define GWATCH_SH_BLOCK_X 40          /* u32 %ctaid.x */
#define GWATCH_SH_BLOCK_Y 44          /* u32 %ctaid.y */
#define GWATCH_SH_BLOCK_Z 48          /* u32 %ctaid.z */
#define GWATCH_SH_SM 52               /* u32 %smid */
#define GWATCH_SH_EVENTS 56           /* u32 events the warp tried to record (kept or dropped) */
#define GWATCH_SH_RECORDS 60          /* u32 records the warp wrote */

/* Records: 16 bytes, written by lane 0 with one vector store. A record holds up to
 * READINGS_PER_RECORD 32-bit clock readings and the number of the marker site its first
 * reading belongs to; the rewriter tells the host, per site, its scope, which reading it
 * shares and how many markers each record covers, so the record itself names no scope.
 * The markers of one straight-line stretch of code (at most GROUP_MAX_EVENTS) form a
 * group with one room test: its records are written when fewer than capacity events came
 * before it, so a slot holds at most capacity + GROUP_MAX_EVENTS - 1 events' records, and
 * the host keeps the first capacity events. */
#define GWATCH_RECORD_BYTES 16
#define GWATCH_READINGS_PER_RECORD 3
#define GWATCH_REC_CLOCKS 0 /* u32[READINGS_PER_RECORD]: low 32 bits of %clock64 (unused ones: any value) */
#define GWATCH_REC_SITE 12  /* u32: the site of the record's first marker */
#define GWATCH_MAX_SCOPE_ID 32767
#define GWATCH_GROUP_MAX_EVENTS 16

/* The markers' text: a marker's inline asm (gwatch_nb/triton.py) is this comment and the
 * scope id in decimal, "// gwatch.scope_start 12", which Triton copies into the PTX
 * verbatim and the rewriter reads there. */
#define GWATCH_MARKER_WORD "gwatch.scope_"
#define GWATCH_MARKER_START "// " GWATCH_MARKER_WORD "start"
#define GWATCH_MARKER_END "// " GWATCH_MARKER_WORD "end"

/* The parameters the rewriter appends to every entry of an instrumented module. */
#define GWATCH_BUFFER_PARAM "__gwatch_trace_buffer"             /* .u64: the launch's buffer */
#define GWATCH_CAPACITY_PARAM "__gwatch_trace_capacity"         /* .u32: events per warp the host keeps */
#define GWATCH_SLOT_RECORDS_PARAM "__gwatch_trace_slot_records" /* .u32: records per warp slot */

/* The sass tier (gwatch_nb/sass/probes.py) writes the same buffer from probes spliced into
 * the compiled kernel, with these differences. Its kernels take three parameters after their
 * own: the address of slot 0 (u64), the slot's bytes (u32) and the capacity (u32). A record
 * holds the readings of up to READINGS_PER_RECORD sites of one basic block and its first
 * site, like the ptx tier's. Up to SASS_OVERFLOW_ROWS consecutive records of one block share
 * one room test: they get rows of their own when fewer than capacity events came before them
 * (at most GROUP_MAX_EVENTS - 1 events past the capacity, as on the ptx tier), and otherwise
 * overwrite the rows after the last one written, which the host never reads (the slot has
 * SASS_OVERFLOW_ROWS rows more for them). At exit a warp writes, in place of the events and
 * records fields, the room it had left (i32: capacity minus the events it tried; below zero
 * when some were dropped) and the low word of its next record's address (the rows it wrote
 * end there). */
#define GWATCH_SASS_OVERFLOW_ROWS 5
#define GWATCH_SASS_SH_ROOM GWATCH_SH_EVENTS
#define GWATCH_SASS_SH_NEXT GWATCH_SH_RECORDS
_Static_assert(GWATCH_SASS_OVERFLOW_ROWS * GWATCH_READINGS_PER_RECORD < GWATCH_GROUP_MAX_EVENTS,
               "a run of sass records holds fewer events than a group may pass the capacity by");

/* The rewriter writes some fields with one vector store each (ptx_rewrite.c, the
 * prologue and a record): the fields each store covers must stay adjacent and aligned. */
_Static_assert(GWATCH_SH_CK_ENTRY == GWATCH_SH_GT_ENTRY + 8 && GWATCH_SH_GT_ENTRY % 16 == 0,
               "the entry anchors are one v2.u64 store");
_Static_assert(GWATCH_SH_CK_EXIT == GWATCH_SH_GT_EXIT + 8 && GWATCH_SH_GT_EXIT % 16 == 0,
               "the exit anchors are one v2.u64 store");
_Static_assert(GWATCH_SH_WARP == GWATCH_SH_MAGIC + 4 && GWATCH_SH_BLOCK_X == GWATCH_SH_MAGIC + 8 &&
                   GWATCH_SH_BLOCK_Y == GWATCH_SH_MAGIC + 12 && GWATCH_SH_MAGIC % 16 == 0,
               "magic, warp, block x and y are one v4.u32 store");
_Static_assert(GWATCH_SH_SM == GWATCH_SH_BLOCK_Z + 4 && GWATCH_SH_EVENTS == GWATCH_SH_BLOCK_Z + 8 &&
                   GWATCH_SH_RECORDS == GWATCH_SH_BLOCK_Z + 12 && GWATCH_SH_BLOCK_Z % 16 == 0,
               "block z, sm, events and records are one v4.u32 store");
_Static_assert(GWATCH_SH_RECORDS == GWATCH_SH_EVENTS + 4 && GWATCH_SH_EVENTS % 8 == 0,
               "the exit's events and records are one v2.u32 store");
_Static_assert(GWATCH_REC_CLOCKS == 0 && GWATCH_REC_SITE == 4 * GWATCH_READINGS_PER_RECORD &&
                   GWATCH_RECORD_BYTES == GWATCH_REC_SITE + 4 && GWATCH_RECORD_BYTES == 16,
               "the readings and the site of a record are one v4.b32 store");
_Static_assert(GWATCH_SLOT_HEADER_BYTES % 16 == 0 && GWATCH_GLOBAL_HEADER_BYTES % 16 == 0,
               "slots and headers keep the 16-byte alignment the vector stores need");

#endif
