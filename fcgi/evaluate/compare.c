/* compare.c: the stdout comparison modes of the evaluate route (exact, lines, tokens, float). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

#define CMP_SNIPPET 40 /* bytes of each side quoted in a hint */

struct span {
	const char *p;
	size_t n;
};

int cmp_mode_from_name(const char *name, enum cmp_mode *out)
{
	static const struct {
		const char *name;
		enum cmp_mode mode;
	} names[] = {{"lines", CMP_LINES}, {"exact", CMP_EXACT}, {"tokens", CMP_TOKENS}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].mode;
			return 0;
		}
	}
	return -1;
}

const char *cmp_mode_name(enum cmp_mode mode)
{
	switch (mode) {
	case CMP_EXACT:
		return "exact";
	case CMP_TOKENS:
		return "tokens";
	case CMP_FLOAT:
		return "float_tolerance";
	case CMP_LINES:
		break;
	}
	return "lines";
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* A quoted, escaped, cut copy of s for a hint: control bytes are shown as escapes so a hint is
 * always one readable line. */
static void quote(struct span s, char *buf, size_t len)
{
	size_t o = 0, i;

	if (len < 8) {
		if (len)
			buf[0] = '\0';
		return;
	}
	buf[o++] = '"';
	for (i = 0; i < s.n && i < CMP_SNIPPET && o + 6 < len; i++) {
		unsigned char c = (unsigned char)s.p[i];

		if (c == '\n')
			o += (size_t)snprintf(buf + o, len - o, "\\n");
		else if (c == '\t')
			o += (size_t)snprintf(buf + o, len - o, "\\t");
		else if (c == '\r')
			o += (size_t)snprintf(buf + o, len - o, "\\r");
		else if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", c);
		else if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", c);
		else
			buf[o++] = (char)c;
	}
	if (i < s.n && o + 4 < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
}

static void hint_pair(char *hint, size_t hintlen, const char *where, struct span exp,
		      struct span got)
{
	char e[CMP_SNIPPET * 4 + 8], g[CMP_SNIPPET * 4 + 8];

	if (!hint || !hintlen)
		return;
	quote(exp, e, sizeof(e));
	quote(got, g, sizeof(g));
	snprintf(hint, hintlen, "%s: expected %s, got %s", where, e, g);
}

/* Next line of [*pos, end), without its '\n'; false at the end. */
static bool next_line(const char *buf, size_t len, size_t *pos, struct span *line)
{
	const char *nl;

	if (*pos >= len)
		return false;
	line->p = buf + *pos;
	nl = memchr(line->p, '\n', len - *pos);
	line->n = nl ? (size_t)(nl - line->p) : len - *pos;
	*pos += line->n + (nl ? 1 : 0);
	return true;
}

/* Length of buf once trailing whitespace lines are dropped: the comparison stops there. */
static size_t content_len(const char *buf, size_t len)
{
	while (len && is_space(buf[len - 1]))
		len--;
	return len;
}

static size_t rstrip(struct span s)
{
	while (s.n && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t' || s.p[s.n - 1] == '\r' ||
		       s.p[s.n - 1] == '\v' || s.p[s.n - 1] == '\f'))
		s.n--;
	return s.n;
}

static bool cmp_lines(const char *got, size_t got_len, const char *exp, size_t exp_len, char *hint,
		      size_t hintlen)
{
	size_t gp = 0, ep = 0, lineno = 0;
	struct span g, e;
	char where[48];

	got_len = content_len(got, got_len);
	exp_len = content_len(exp, exp_len);
	for (;;) {
		bool have_g = next_line(got, got_len, &gp, &g);
		bool have_e = next_line(exp, exp_len, &ep, &e);

		lineno++;
		if (!have_g && !have_e)
			return true;
		if (have_g && have_e) {
			g.n = rstrip(g);
			e.n = rstrip(e);
			if (g.n == e.n && memcmp(g.p, e.p, g.n) == 0)
				continue;
		}
		if (!have_g)
			g.p = "", g.n = 0;
		if (!have_e)
			e.p = "", e.n = 0;
		if (!have_g)
			snprintf(where, sizeof(where), "line %zu: output ended", lineno);
		else if (!have_e)
			snprintf(where, sizeof(where), "line %zu: extra output", lineno);
		else
			snprintf(where, sizeof(where), "line %zu", lineno);
		hint_pair(hint, hintlen, where, e, g);
		return false;
	}
}

static bool next_token(const char *buf, size_t len, size_t *pos, struct span *tok)
{
	while (*pos < len && is_space(buf[*pos]))
		(*pos)++;
	if (*pos >= len)
		return false;
	tok->p = buf + *pos;
	while (*pos < len && !is_space(buf[*pos]))
		(*pos)++;
	tok->n = (size_t)(buf + *pos - tok->p);
	return true;
}

/* The token as a finite or infinite number, when all of it is one. */
static bool token_number(struct span t, double *out)
{
	char tmp[64], *end;

	if (t.n == 0 || t.n >= sizeof(tmp))
		return false;
	memcpy(tmp, t.p, t.n);
	tmp[t.n] = '\0';
	/* strtod also reads hex floats; a judge compares decimal numbers only. */
	if (strpbrk(tmp, "xX"))
		return false;
	*out = strtod(tmp, &end);
	return *end == '\0' && !isnan(*out);
}

static bool tokens_match(struct span g, struct span e, const struct cmp_spec *spec)
{
	double a, b;

	if (g.n == e.n && memcmp(g.p, e.p, g.n) == 0)
		return true;
	if (spec->mode != CMP_FLOAT || !token_number(g, &a) || !token_number(e, &b))
		return false;
	if (a == b)
		return true;
	if (isinf(a) || isinf(b))
		return false;
	return fabs(a - b) <= spec->tolerance || fabs(a - b) <= spec->tolerance * fabs(b);
}

static bool cmp_tokens(const struct cmp_spec *spec, const char *got, size_t got_len,
		       const char *exp, size_t exp_len, char *hint, size_t hintlen)
{
	size_t gp = 0, ep = 0, n = 0;
	struct span g, e;
	char where[64];

	for (;;) {
		bool have_g = next_token(got, got_len, &gp, &g);
		bool have_e = next_token(exp, exp_len, &ep, &e);

		n++;
		if (!have_g && !have_e)
			return true;
		if (have_g && have_e && tokens_match(g, e, spec))
			continue;
		if (!have_g)
			g.p = "", g.n = 0;
		if (!have_e)
			e.p = "", e.n = 0;
		snprintf(where, sizeof(where), "token %zu%s", n,
			 !have_g   ? " (output ended)"
			 : !have_e ? " (extra output)"
				   : "");
		hint_pair(hint, hintlen, where, e, g);
		if (hint && hintlen && spec->mode == CMP_FLOAT && have_g && have_e) {
			double a, b;
			size_t used = strlen(hint);

			if (token_number(g, &a) && token_number(e, &b) && used + 1 < hintlen)
				snprintf(hint + used, hintlen - used,
					 " (difference %g > tolerance %g)", fabs(a - b),
					 spec->tolerance);
		}
		return false;
	}
}

static bool cmp_exact(const char *got, size_t got_len, const char *exp, size_t exp_len, char *hint,
		      size_t hintlen)
{
	size_t i = 0, line = 1, col = 1, start;
	char where[96];

	while (i < got_len && i < exp_len && got[i] == exp[i]) {
		if (got[i] == '\n')
			line++, col = 1;
		else
			col++;
		i++;
	}
	if (i == got_len && i == exp_len)
		return true;
	/* Quote from the start of the differing line so the hint has context. */
	start = i - (col - 1);
	snprintf(where, sizeof(where), "byte %zu (line %zu, column %zu)%s", i, line, col,
		 i == got_len	? ", output ended"
		 : i == exp_len ? ", extra output"
				: "");
	hint_pair(hint, hintlen, where, (struct span){exp + start, exp_len - start},
		  (struct span){got + start, got_len - start});
	return false;
}

bool cmp_outputs(const struct cmp_spec *spec, const char *got, size_t got_len, const char *expected,
		 size_t expected_len, char *hint, size_t hintlen)
{
	if (hint && hintlen)
		hint[0] = '\0';
	if (!got)
		got = "", got_len = 0;
	if (!expected)
		expected = "", expected_len = 0;
	switch (spec->mode) {
	case CMP_EXACT:
		return cmp_exact(got, got_len, expected, expected_len, hint, hintlen);
	case CMP_TOKENS:
	case CMP_FLOAT:
		return cmp_tokens(spec, got, got_len, expected, expected_len, hint, hintlen);
	case CMP_LINES:
		break;
	}
	return cmp_lines(got, got_len, expected, expected_len, hint, hintlen);
}
