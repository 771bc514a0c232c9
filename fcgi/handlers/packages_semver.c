/* packages_semver.c: npm's version ranges for node package specs ("name@^1.2"), the subset a
 * package directory needs: exact ("1.2.3", "=1.2.3", "v1.2.3"), caret ("^1.2.3", "^0.2", "^1"),
 * tilde ("~1.2.3", "~1.2", "~1") and x-ranges ("1.x", "1.2.*", "1", "*", ""). The highest
 * version of the directory that satisfies the range wins. Pre-release versions ("1.0.0-rc.1")
 * match only an exact range naming them, as in npm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packages_int.h"

struct semver {
	unsigned long v[3];
	bool pre; /* a "-pre" or "+build" part follows (build alone counts as release) */
};

/* "1.2.3" (with an optional leading "v" or "=", and -pre/+build) into s: 0, or -1. */
static int semver_parse(const char *str, struct semver *s)
{
	const char *p = str;
	char *end;

	memset(s, 0, sizeof(*s));
	if (*p == '=' || *p == 'v')
		p++;
	for (int i = 0; i < 3; i++) {
		if (*p < '0' || *p > '9')
			return -1;
		s->v[i] = strtoul(p, &end, 10);
		p = end;
		if (i < 2 && *p++ != '.')
			return -1;
	}
	if (*p == '-')
		s->pre = true;
	else if (*p != '\0' && *p != '+')
		return -1;
	return 0;
}

static int semver_cmp(const struct semver *a, const struct semver *b)
{
	for (int i = 0; i < 3; i++)
		if (a->v[i] != b->v[i])
			return a->v[i] < b->v[i] ? -1 : 1;
	return 0;
}

/* A range as [lo, hi) over release versions (hi.v[0] == ULONG_MAX: no upper bound); exact
 * ranges set *exact instead. 0, or -1 for a range outside the subset. */
static int range_parse(const char *r, struct semver *lo, struct semver *hi, const char **exact)
{
	char op = 0;
	unsigned long n[3] = {0, 0, 0};
	int given = 0;
	const char *p = r;
	char *end;

	*exact = NULL;
	memset(lo, 0, sizeof(*lo));
	memset(hi, 0, sizeof(*hi));
	hi->v[0] = (unsigned long)-1;
	if (*p == '^' || *p == '~')
		op = *p++;
	else if (*p == '=' || *p == 'v')
		p++;
	while (given < 3 && *p) {
		if ((*p == 'x' || *p == 'X' || *p == '*') && (p[1] == '\0' || p[1] == '.')) {
			p++;
			if (*p == '.')
				p++;
			/* anything after a wildcard must be wildcards too */
			for (; *p; p++)
				if (!strchr("xX*.", *p))
					return -1;
			break;
		}
		if (*p < '0' || *p > '9')
			return -1;
		n[given++] = strtoul(p, &end, 10);
		p = end;
		if (*p == '.' && p[1])
			p++;
		else if (*p != '\0')
			break;
	}
	if (*p != '\0') {
		/* "1.2.3-rc.1" and build metadata: only as an exact version */
		struct semver s;

		if (op || given != 3 ||
		    semver_parse(r[0] == '=' || r[0] == 'v' ? r + 1 : r, &s) < 0)
			return -1;
		*exact = r[0] == '=' || r[0] == 'v' ? r + 1 : r;
		return 0;
	}
	if (!op && given == 3) {
		*exact = r[0] == '=' || r[0] == 'v' ? r + 1 : r;
		return 0;
	}
	memcpy(lo->v, n, sizeof(n));
	if (given == 0)
		return 0;
	if (op == '^') {
		if (n[0] > 0 || given == 1)
			hi->v[0] = n[0] + 1, hi->v[1] = hi->v[2] = 0;
		else if (n[1] > 0 || given == 2)
			hi->v[0] = 0, hi->v[1] = n[1] + 1, hi->v[2] = 0;
		else
			hi->v[0] = 0, hi->v[1] = 0, hi->v[2] = n[2] + 1;
	} else if (given == 1) { /* "1", "1.x", "~1" */
		hi->v[0] = n[0] + 1, hi->v[1] = hi->v[2] = 0;
	} else { /* "1.2", "1.2.x", "~1.2", "~1.2.3" */
		hi->v[0] = n[0], hi->v[1] = n[1] + 1, hi->v[2] = 0;
	}
	return 0;
}

int pkg_semver_best(const struct pkg_set *set, const char *name, const char *range, char *ver,
		    size_t verlen)
{
	struct semver lo, hi, best, s;
	const char *exact;
	bool found = false;

	if (range_parse(range, &lo, &hi, &exact) < 0)
		return -EINVAL;
	for (size_t k = 0; k < set->n; k++) {
		if (strcmp(set->e[k].name, name) != 0 || semver_parse(set->e[k].version, &s) < 0)
			continue;
		if (exact) {
			struct semver want;

			if (semver_parse(exact, &want) < 0 || semver_cmp(&s, &want) != 0 ||
			    s.pre != want.pre || (s.pre && strcmp(set->e[k].version, exact) != 0))
				continue;
		} else if (s.pre || semver_cmp(&s, &lo) < 0 ||
			   (hi.v[0] != (unsigned long)-1 && semver_cmp(&s, &hi) >= 0)) {
			continue;
		}
		if (!found || semver_cmp(&s, &best) > 0) {
			best = s;
			found = true;
			snprintf(ver, verlen, "%s", set->e[k].version);
		}
	}
	return found ? 0 : -ENOENT;
}
