/* Which instructions an end marker's clock reading may be taken after: plain register
 * arithmetic that reads nothing the straight-line stretch computed before the marker (the
 * rewriter keeps that set of registers). ptxas never
 * moves work across a clock read, so a reading placed at the very end of a scope pins the
 * independent arithmetic that follows it (often the next loop step's addresses, which
 * ptxas would otherwise overlap with the scope's own long-latency work). */
#ifndef GWATCH_PTX_ARITHMETIC_H
#define GWATCH_PTX_ARITHMETIC_H

#include <stddef.h>

#include "slice_set.h"

/* The instruction in `code` (n bytes: optional labels and guard, then the opcode at
 * `opcode`, up to and including its ';'): is it register arithmetic (no memory,
 * synchronisation, special register or control flow) whose sources, guard included, are
 * all virtual registers absent from `computed`? */
int gw_is_independent_arithmetic(const char *code, size_t n, size_t opcode, const slice_set *computed);

/* Adds to `computed` the registers the instruction writes (those named in its first
 * operand; every register the text names when it is not one instruction). */
void gw_note_written(const char *code, size_t n, size_t opcode, slice_set *computed);

#endif
