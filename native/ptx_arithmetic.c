#include "ptx_arithmetic.h"

#include <string.h>

/* Opcodes (before their first '.') that only compute on registers and immediates. */
static const char *const ARITHMETIC[] = {
    "abs", "add", "addc", "and", "bfe", "bfi", "bfind", "brev", "clz", "cnot", "copysign", "cos", "cvt",
    "cvta", "div", "dp2a", "dp4a", "ex2", "fma", "fns", "lg2", "lop3", "mad", "mad24", "madc", "max", "min",
    "mov", "mul", "mul24", "neg", "not", "or", "popc", "prmt", "rcp", "rem", "rsqrt", "sad", "selp", "set",
    "setp", "shf", "shl", "shr", "sin", "slct", "sqrt", "sub", "subc", "tanh", "testp", "xor", NULL};

static int is_register_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '$';
}

/* A virtual register as LLVM names them: '%', one to three lower-case letters, digits
 * (%r12, %rd3, %fd1, %p2). Special registers (%tid.x, %clock) and the rewriter's own
 * (%gwatch_n) do not match. */
static int is_virtual_register(const char *s, size_t n) {
    size_t i = 1, letters = 0;
    while (i < n && s[i] >= 'a' && s[i] <= 'z') i++, letters++;
    if (letters < 1 || letters > 3 || i == n) return 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    return i == n;
}

/* Calls visit for each %name in s[from, to); stops early when visit returns 0. */
static int each_register(const char *s, size_t from, size_t to, int (*visit)(const char *, size_t, void *),
                         void *context) {
    for (size_t i = from; i < to; i++) {
        if (s[i] != '%') continue;
        size_t j = i + 1;
        while (j < to && is_register_char(s[j])) j++;
        if (!visit(s + i, j - i, context)) return 0;
        i = j - 1;
    }
    return 1;
}

/* Where the first operand ends (its top-level ',') and where the operands end (the ';',
 * which must be the instruction's last character). 0 when the text is not one
 * instruction. */
static int operands(const char *s, size_t n, size_t opcode, size_t *first_end, size_t *end) {
    size_t i = opcode;
    while (i < n && s[i] != ' ' && s[i] != '\t') i++;
    int braces = 0;
    *first_end = 0;
    for (; i < n; i++) {
        if (s[i] == '{') braces++;
        else if (s[i] == '}') braces--;
        else if (s[i] == ',' && braces == 0 && !*first_end) *first_end = i;
        else if (s[i] == ';') break;
    }
    if (i >= n) return 0;
    *end = i;
    for (size_t j = i + 1; j < n; j++)
        if (s[j] != ' ' && s[j] != '\t' && s[j] != '\r') return 0;
    if (!*first_end) *first_end = i;
    return 1;
}

static int is_arithmetic_opcode(const char *s, size_t n) {
    size_t w = 0;
    while (w < n && s[w] != '.' && s[w] != ' ' && s[w] != '\t' && s[w] != ';') w++;
    for (const char *const *op = ARITHMETIC; *op; op++)
        if (strlen(*op) == w && memcmp(*op, s, w) == 0) return 1;
    return 0;
}

static int is_free_source(const char *name, size_t n, void *computed) {
    return is_virtual_register(name, n) && !slice_set_has(computed, name, n);
}

static int is_plain_destination(const char *name, size_t n, void *unused) {
    (void)unused;
    return is_virtual_register(name, n);
}

int gw_is_independent_arithmetic(const char *code, size_t n, size_t opcode, const slice_set *computed) {
    size_t first_end, end;
    if (opcode >= n || !is_arithmetic_opcode(code + opcode, n - opcode)) return 0;
    if (!operands(code, n, opcode, &first_end, &end)) return 0;
    void *set = (void *)computed;
    return each_register(code, 0, opcode, is_free_source, set) &&               /* the guard */
           each_register(code, opcode, first_end, is_plain_destination, NULL) &&
           each_register(code, first_end, end, is_free_source, set);
}

static int add_written(const char *name, size_t n, void *computed) {
    slice_set_add(computed, name, n);
    return 1;
}

void gw_note_written(const char *code, size_t n, size_t opcode, slice_set *computed) {
    size_t first_end, end;
    if (opcode < n && operands(code, n, opcode, &first_end, &end))
        each_register(code, opcode, first_end, add_written, computed);
    else /* not one instruction: count every register it names as written */
        each_register(code, 0, n, add_written, computed);
}
