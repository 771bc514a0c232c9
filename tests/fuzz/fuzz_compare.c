/* fuzz_compare.c: libFuzzer driver for the evaluate route's stdout comparison
 * (fcgi/evaluate/compare.c).
 *
 * Input layout: byte 0 picks the mode and the hint buffer size, byte 1 the tolerance, the rest is
 * "got" and "expected" split at the first 0xff byte. Beyond the sanitizers it checks properties
 * every mode must keep: a text always matches itself, the hint is NUL-terminated inside its
 * buffer and empty on a match, and exact, lines and tokens are symmetric. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../fcgi/evaluate/compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const double tolerances[] = {0.0, 1e-9, 1e-6, 0.5, 1.0, 1e300};
static const size_t hint_sizes[] = {0, 1, 7, 8, 16, 64, 300};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cmp_spec spec;
	const uint8_t *sep;
	char *got = NULL, *exp = NULL, *hint = NULL;
	size_t got_len, exp_len, hintlen;
	bool same, back;

	if (size < 2)
		return 0;
	spec.mode = (enum cmp_mode)(data[0] % 4);
	hintlen = hint_sizes[(data[0] >> 2) % (sizeof(hint_sizes) / sizeof(hint_sizes[0]))];
	spec.tolerance = tolerances[data[1] % (sizeof(tolerances) / sizeof(tolerances[0]))];
	data += 2, size -= 2;
	sep = memchr(data, 0xff, size);
	got_len = sep ? (size_t)(sep - data) : size;
	exp_len = sep ? size - got_len - 1 : 0;
	/* Exact-size heap copies, so ASan sees any read past either end. */
	got = malloc(got_len ? got_len : 1);
	exp = malloc(exp_len ? exp_len : 1);
	hint = hintlen ? malloc(hintlen) : NULL;
	if (!got || !exp || (hintlen && !hint))
		goto out;
	memcpy(got, data, got_len);
	if (exp_len)
		memcpy(exp, sep + 1, exp_len);

	if (hint)
		memset(hint, 'X', hintlen);
	same = cmp_outputs(&spec, got, got_len, exp, exp_len, hint, hintlen);
	if (hint && !same && !memchr(hint, '\0', hintlen))
		abort(); /* a hint must always be a terminated string inside its buffer */
	if (hint && same && hint[0] != '\0')
		abort(); /* a match leaves an empty hint (callers may print it unconditionally) */
	if (spec.mode != CMP_FLOAT) {
		back = cmp_outputs(&spec, exp, exp_len, got, got_len, NULL, 0);
		if (back != same)
			abort(); /* exact, lines and tokens are symmetric */
	}
	if (!cmp_outputs(&spec, got, got_len, got, got_len, NULL, 0))
		abort(); /* anything matches itself, in every mode */
	if (spec.mode != CMP_EXACT && same == false &&
	    cmp_outputs(&(struct cmp_spec){CMP_EXACT, 0}, got, got_len, exp, exp_len, NULL, 0))
		abort(); /* byte-identical outputs match under every looser mode */
out:
	free(got);
	free(exp);
	free(hint);
	return 0;
}
