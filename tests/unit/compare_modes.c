/* compare_modes.c: unit tests of fcgi/evaluate/compare.c, the evaluate route's stdout comparison
 * modes. */
#include <math.h>
#include <string.h>

#include "../../fcgi/evaluate/compare.h"
#include "../lib/tap.h"

static bool cmp(enum cmp_mode mode, double tol, const char *got, const char *exp, char *hint,
		size_t hintlen)
{
	struct cmp_spec spec = {mode, tol};

	return cmp_outputs(&spec, got, strlen(got), exp, strlen(exp), hint, hintlen);
}

static bool match(enum cmp_mode mode, double tol, const char *got, const char *exp)
{
	char hint[256];

	return cmp(mode, tol, got, exp, hint, sizeof(hint));
}

int main(void)
{
	char hint[256];
	enum cmp_mode m;
	struct cmp_spec spec = {CMP_EXACT, 0};

	/* names */
	TAP_OK(cmp_mode_from_name("exact", &m) == 0 && m == CMP_EXACT, "exact by name");
	TAP_OK(cmp_mode_from_name("lines", &m) == 0 && m == CMP_LINES, "lines by name");
	TAP_OK(cmp_mode_from_name("tokens", &m) == 0 && m == CMP_TOKENS, "tokens by name");
	TAP_OK(cmp_mode_from_name("Lines", &m) < 0, "names are case-sensitive");
	TAP_OK(cmp_mode_from_name("float_tolerance", &m) < 0, "float is an object, not a name");
	TAP_OK(strcmp(cmp_mode_name(CMP_FLOAT), "float_tolerance") == 0, "float mode name");

	/* exact */
	TAP_OK(match(CMP_EXACT, 0, "a\nb\n", "a\nb\n"), "exact: equal");
	TAP_OK(!match(CMP_EXACT, 0, "a\nb", "a\nb\n"), "exact: a missing final newline differs");
	TAP_OK(!match(CMP_EXACT, 0, "a \n", "a\n"), "exact: trailing space differs");
	TAP_OK(match(CMP_EXACT, 0, "", ""), "exact: both empty");
	TAP_OK(!cmp(CMP_EXACT, 0, "ab\ncX\n", "ab\ncd\n", hint, sizeof(hint)), "exact: differs");
	TAP_OK(strstr(hint, "line 2, column 2") && strstr(hint, "\"cd\\n\"") &&
		   strstr(hint, "\"cX\\n\""),
	       "exact: hint names line, column and both sides: %s", hint);
	TAP_OK(!cmp(CMP_EXACT, 0, "ab", "abc", hint, sizeof(hint)) && strstr(hint, "output ended"),
	       "exact: short output says it ended: %s", hint);
	{
		const char g[] = "a\0b", e[] = "a\0c";

		TAP_OK(!cmp_outputs(&spec, g, 3, e, 3, hint, sizeof(hint)) && strstr(hint, "\\x00"),
		       "exact: NUL bytes compared and escaped in the hint: %s", hint);
		TAP_OK(cmp_outputs(&spec, g, 3, g, 3, NULL, 0),
		       "exact: equal with NUL, no hint buffer");
	}

	/* lines (the default) */
	TAP_OK(match(CMP_LINES, 0, "1 2  \n3\t\n\n\n", "1 2\n3"), "lines: trailing blanks ignored");
	TAP_OK(match(CMP_LINES, 0, "x\r\ny\r\n", "x\ny\n"), "lines: CRLF equals LF");
	TAP_OK(!match(CMP_LINES, 0, " x\n", "x\n"), "lines: leading space matters");
	TAP_OK(!match(CMP_LINES, 0, "\nx\n", "x\n"), "lines: a leading blank line matters");
	TAP_OK(!match(CMP_LINES, 0, "a\n\nb\n", "a\nb\n"), "lines: an inner blank line matters");
	TAP_OK(match(CMP_LINES, 0, "", "\n\n"), "lines: empty equals blank lines");
	TAP_OK(!cmp(CMP_LINES, 0, "1\n2\n4\n", "1\n2\n3\n", hint, sizeof(hint)) &&
		   strcmp(hint, "line 3: expected \"3\", got \"4\"") == 0,
	       "lines: hint: %s", hint);
	TAP_OK(!cmp(CMP_LINES, 0, "1\n", "1\n2\n", hint, sizeof(hint)) &&
		   strstr(hint, "line 2: output ended"),
	       "lines: missing line: %s", hint);
	TAP_OK(!cmp(CMP_LINES, 0, "1\n2\n", "1\n", hint, sizeof(hint)) &&
		   strstr(hint, "line 2: extra output"),
	       "lines: extra line: %s", hint);

	/* tokens */
	TAP_OK(match(CMP_TOKENS, 0, "1   2\n\n3 ", "1 2 3\n"), "tokens: any whitespace");
	TAP_OK(!match(CMP_TOKENS, 0, "1 2", "12"), "tokens: split differs");
	TAP_OK(!match(CMP_TOKENS, 0, "1.0", "1"), "tokens: numbers compared as text");
	TAP_OK(!cmp(CMP_TOKENS, 0, "a b c", "a b d", hint, sizeof(hint)) &&
		   strcmp(hint, "token 3: expected \"d\", got \"c\"") == 0,
	       "tokens: hint: %s", hint);
	TAP_OK(!cmp(CMP_TOKENS, 0, "a", "a b", hint, sizeof(hint)) && strstr(hint, "output ended"),
	       "tokens: too few: %s", hint);

	/* float tolerance */
	TAP_OK(match(CMP_FLOAT, 1e-6, "0.3333333", "0.333333333"), "float: within absolute");
	TAP_OK(!match(CMP_FLOAT, 1e-6, "0.3334", "0.3333"), "float: outside");
	TAP_OK(match(CMP_FLOAT, 1e-6, "1000000.5", "1000000"), "float: within relative");
	TAP_OK(match(CMP_FLOAT, 1e-6, "1 2.0000000001 x", "1.0 2 x"), "float: mixed tokens");
	TAP_OK(!match(CMP_FLOAT, 1e-6, "1 y", "1 x"), "float: words still exact");
	TAP_OK(!match(CMP_FLOAT, 1e-6, "nan", "1"), "float: nan is no number");
	TAP_OK(match(CMP_FLOAT, 1e-6, "inf", "inf"), "float: equal text matches");
	TAP_OK(!match(CMP_FLOAT, 1e-6, "inf", "1e308"), "float: infinity is far");
	TAP_OK(!match(CMP_FLOAT, 1e-6, "0x10", "16"), "float: hex is not a number here");
	TAP_OK(!match(CMP_FLOAT, 0, "1.5", "1.25"), "float: zero tolerance");
	TAP_OK(!cmp(CMP_FLOAT, 1e-6, "1.5", "1.25", hint, sizeof(hint)) &&
		   strstr(hint, "difference 0.25 > tolerance 1e-06"),
	       "float: hint: %s", hint);

	/* hints are bounded and one line */
	{
		char big[500], tiny[16];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		TAP_OK(!cmp(CMP_LINES, 0, big, "y", hint, sizeof(hint)) && strlen(hint) < 200 &&
			   strstr(hint, "...") && !strchr(hint, '\n'),
		       "long lines are cut: %s", hint);
		TAP_OK(!cmp(CMP_LINES, 0, big, "y", tiny, sizeof(tiny)) &&
			   strlen(tiny) < sizeof(tiny),
		       "a small hint buffer is respected");
	}
	TAP_OK(cmp_outputs(&(struct cmp_spec){CMP_LINES, 0}, NULL, 0, "", 0, NULL, 0),
	       "NULL got is empty");
	return tap_done();
}
