/* compare.h: does a program's stdout match the expected stdout? The evaluate route's four modes.
 *
 * Pure functions over byte buffers: no JSON, no HTTP, no allocation, so they are unit-tested
 * alone (tests/unit/compare_*.c). */
#ifndef SBX_COMPARE_H
#define SBX_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

enum cmp_mode {
	CMP_LINES = 0, /* default: trailing whitespace per line and trailing blank lines ignored */
	CMP_EXACT,     /* byte for byte */
	CMP_TOKENS,    /* whitespace-separated tokens, any amount or kind of whitespace between */
	CMP_FLOAT,     /* tokens; two numbers match within the tolerance, others exactly */
};

struct cmp_spec {
	enum cmp_mode mode;
	double tolerance; /* CMP_FLOAT: |got - expected| <= tolerance, absolute or relative */
};

/* Read a mode by name ("exact", "lines", "tokens"). Returns 0, or -1 for an unknown name. */
int cmp_mode_from_name(const char *name, enum cmp_mode *out);

/* "exact", "lines", "tokens" or "float_tolerance". Static string. */
const char *cmp_mode_name(enum cmp_mode mode);

/* Compare got with expected under spec. Returns true when they match. When they do not and hint
 * is not NULL, hint receives a short NUL-terminated description of the first difference, e.g.
 * `line 3: expected "5", got "4"` (cut to hintlen - 1 bytes). */
bool cmp_outputs(const struct cmp_spec *spec, const char *got, size_t got_len, const char *expected,
		 size_t expected_len, char *hint, size_t hintlen);

#endif
