/* zyg_share.c: forms shared between a broker's slots (zygote.c starts and stops the zygotes).
 *
 * Slots take connections from one listening socket, so a request lands on any idle slot: in a
 * mixed workload (execute, the evaluate runner, a checker) a slot that never served a form gets
 * a run of it, and since a zygote only starts after the slot has itself served its form (and
 * only while idle), that run starts cold: /v1/execute print(1) took 76-114 ms there against
 * 11.7 ms with one form only (tests/bench/evaluate_checker, 2026-11-25). So each foreground slot
 * publishes the forms it serves (options, hints, when) in a record the broker shares with its
 * slots (mmap'ed before they are forked), and an idle slot starts a zygote for a form another
 * slot served within the last zshare_age_ms (SBX_ZYG_SHARE_AGE_S; an idle service stops
 * starting them, and stops the ones it learned, once no slot has seen their form for that long).
 *
 * Rules. Only while idle: the slot looks at the record before it waits and each
 * SBX_ZYG_SHARE_POLL_MS while it waits, and stops as soon as a connection is pending (at most one
 * zygote start, as the idle prewarm's own, delays it; another idle slot can take it meanwhile).
 * SBX_ZYGOTES per slot: a learned form takes a free entry, or one whose form no slot (this one
 * included) has served within the age; it never replaces a recent form nor the zygote the
 * prepared sandbox came from, and its entry is the first the slot's own LRU replaces (last 0).
 * Its hints are the most recent SBX_ZYGOTE_HINTS of what the slots saw with its options; once
 * started it follows zygote_ensure's rules (restart on template refresh, interpreter change,
 * SBX_ZYGOTE_MAX_RUNS, a new hint when its form comes). A failed start waits 10 s.
 *
 * Concurrency and trust: each slot writes only its own entry (a sequence count odd while it
 * writes; a slot killed mid-write leaves it odd, skipped until its successor rewrites it), the
 * others copy it and use the copy only if the count was even and unchanged. Only broker
 * processes (root) write the record; still, what is read is bounded: known option bits, hint
 * counts, NUL-terminated hints that name a path outside /work (the zygote itself refuses a hint
 * not on a read-only mount), times within the age.
 *
 * Who takes part: the foreground slots (execute, evaluate, checkers). Background slots
 * (--background-runs) neither publish nor learn: their runs are long and rare, run at a low CPU
 * weight, and a zygote held there for the foreground's forms would be memory for runs that seldom
 * come (they keep their own per-slot zygotes as before). Context holders build one sandbox for a
 * long-lived kernel and start no zygote: they never join. The one-run CLI has no record. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#define SBX_ZYG_SHARE_AGE_S 120
#define SBX_ZYG_SHARE_POLL_MS 250
#define SBX_ZYG_SHARE_RETRY_MS 10000
#define ZS_OPTS (SBX_WARM_OPT_U | SBX_WARM_OPT_S | SBX_WARM_OPT_B)

struct zs_form {
	uint32_t used, opts, nhints;
	int64_t seen_ms; /* CLOCK_MONOTONIC, ms: the last run of these options */
	int64_t hint_ms[SBX_ZYGOTE_HINTS];
	char hints[SBX_ZYGOTE_HINTS][256];
};
struct zs_entry {
	uint32_t seq; /* odd while its slot writes it */
	struct zs_form f[SBX_ZYGOTES];
};
static struct zs_entry *zshare;
static unsigned zshare_n;

static int64_t zs_now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A hint a run may preload (warm.c's rule): an absolute path outside /work. */
static bool zs_hint_ok(const char *h, size_t cap)
{
	size_t n = strnlen(h, cap);

	return n > 0 && n < cap && h[0] == '/' &&
	       strncmp(h, SBX_WORK_DIR "/", strlen(SBX_WORK_DIR) + 1) != 0;
}

int sbx_zyg_share_init(unsigned slots)
{
	void *p;

	if (slots == 0)
		return 0;
	p = mmap(NULL, slots * sizeof *zshare, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return -1;
	zshare = p; /* zero-filled: every form unused, every count even */
	zshare_n = slots;
	return 0;
}

void sbx_zyg_share_join(struct sbx_slot *s)
{
	const char *age = getenv("SBX_ZYG_SHARE_AGE_S"); /* tests */

	s->zshare = zshare && s->index < zshare_n && s->zyg_on &&
		    !(getenv("SBX_ZYGOTE_SHARE") && strcmp(getenv("SBX_ZYGOTE_SHARE"), "0") == 0);
	s->zshare_age_ms = (int64_t)SBX_ZYG_SHARE_AGE_S * 1000;
	if (age && atof(age) > 0)
		s->zshare_age_ms = (int64_t)(atof(age) * 1000);
}

void sbx_zyg_share_served(struct sbx_slot *s, const char *const *argv, const char *const *env)
{
	struct zs_entry *e;
	struct zs_form *f = NULL;
	unsigned opts, k;
	int64_t now = zs_now_ms();
	int idx;

	if (!s->zshare)
		return;
	idx = sbx_warm_parse((char *const *)argv, (char *const *)env, &opts);
	if (idx < 1 || (opts & ~ZS_OPTS))
		return;
	/* this slot has served the form now: its zygote is its own, not learned */
	for (k = 0; k < SBX_ZYGOTES; k++)
		if (s->z[k].used && s->z[k].opts == opts)
			s->z[k].learned = false;
	s->zshare_borrowed = false;
	e = &zshare[s->index];
	__atomic_store_n(&e->seq, (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) + 1) | 1,
			 __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (k = 0; k < SBX_ZYGOTES && !f; k++)
		if (e->f[k].used && e->f[k].opts == opts)
			f = &e->f[k];
	for (k = 0; k < SBX_ZYGOTES && !f; k++)
		if (!e->f[k].used)
			f = &e->f[k];
	if (!f) {
		f = &e->f[0];
		for (k = 1; k < SBX_ZYGOTES; k++)
			if (e->f[k].seen_ms < f->seen_ms)
				f = &e->f[k];
		memset(f, 0, sizeof *f);
	}
	f->used = 1;
	f->opts = opts;
	f->seen_ms = now;
	if (zs_hint_ok(argv[idx], sizeof f->hints[0])) {
		for (k = 0; k < f->nhints && strcmp(f->hints[k], argv[idx]) != 0; k++) {
		}
		if (k == f->nhints && f->nhints == SBX_ZYGOTE_HINTS) {
			unsigned o = 0; /* a full set: the least recently seen hint goes */

			for (k = 1; k < SBX_ZYGOTE_HINTS; k++)
				if (f->hint_ms[k] < f->hint_ms[o])
					o = k;
			k = o;
		} else if (k == f->nhints) {
			f->nhints++;
		}
		snprintf(f->hints[k], sizeof f->hints[k], "%s", argv[idx]);
		f->hint_ms[k] = now;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
}

/* Every form some slot served within the age, merged by options: the latest time, and the
 * SBX_ZYGOTE_HINTS most recently seen hints. How many in rec (at most 8: three option bits). */
static unsigned zs_recent(const struct sbx_slot *s, int64_t now, struct zs_form rec[8])
{
	unsigned n = 0, j, k, h, m;

	for (j = 0; j < zshare_n; j++) {
		struct zs_entry c;
		uint32_t a = __atomic_load_n(&zshare[j].seq, __ATOMIC_ACQUIRE);

		if (a & 1)
			continue;
		memcpy(&c, &zshare[j], sizeof c);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&zshare[j].seq, __ATOMIC_RELAXED) != a)
			continue; /* written meanwhile: the next look reads it */
		for (k = 0; k < SBX_ZYGOTES; k++) {
			struct zs_form *f = &c.f[k], *r = NULL;

			if (!f->used || (f->opts & ~ZS_OPTS) || f->nhints > SBX_ZYGOTE_HINTS ||
			    f->seen_ms > now + 1000 || now - f->seen_ms > s->zshare_age_ms)
				continue;
			for (m = 0; m < n && !r; m++)
				if (rec[m].opts == f->opts)
					r = &rec[m];
			if (!r) {
				r = &rec[n++];
				memset(r, 0, sizeof *r);
				r->used = 1;
				r->opts = f->opts;
			}
			if (f->seen_ms > r->seen_ms)
				r->seen_ms = f->seen_ms;
			for (h = 0; h < f->nhints; h++) {
				unsigned o = 0;

				if (!zs_hint_ok(f->hints[h], sizeof f->hints[h]) ||
				    now - f->hint_ms[h] > s->zshare_age_ms)
					continue;
				for (m = 0; m < r->nhints && strcmp(r->hints[m], f->hints[h]);
				     m++) {
				}
				if (m == r->nhints && r->nhints < SBX_ZYGOTE_HINTS) {
					r->nhints++;
				} else if (m == r->nhints) { /* full: replace the oldest if older */
					for (m = 1; m < SBX_ZYGOTE_HINTS; m++)
						if (r->hint_ms[m] < r->hint_ms[o])
							o = m;
					m = o;
					if (r->hint_ms[m] >= f->hint_ms[h])
						continue;
				} else if (r->hint_ms[m] >= f->hint_ms[h]) {
					continue;
				}
				memcpy(r->hints[m], f->hints[h], sizeof r->hints[m]);
				r->hint_ms[m] = f->hint_ms[h];
			}
		}
	}
	return n;
}

static const struct zs_form *zs_find(const struct zs_form *rec, unsigned n, unsigned opts)
{
	for (unsigned m = 0; m < n; m++)
		if (rec[m].opts == opts)
			return &rec[m];
	return NULL;
}

/* The prepared sandbox was forked from z: stopping z kills it. */
static bool zs_prepared_from(const struct sbx_slot *s, const struct zygote *z)
{
	return s->w.ready && s->w_zygote && s->w_zyg_opts == z->opts;
}

static bool zs_pending(int fd)
{
	struct pollfd pf = {fd, POLLIN, 0};

	return fd >= 0 && poll(&pf, 1, 0) > 0;
}

/* The prepared sandbox dropped (a later prewarm builds the next), as warm.c drops one. */
static void zs_discard_prepared(struct sbx_slot *s)
{
	struct sbx_cg_stats st;

	sbx_warm_discard(s);
	sbx_cg_finish(s->cg, &st, NULL, 0);
}

int sbx_zyg_share_idle(struct sbx_slot *s, int listen_fd)
{
	struct zs_form rec[8];
	char sig[sizeof s->z[0].sig], err[256];
	int64_t now = zs_now_ms();
	unsigned n, k, m, started = 0, first_opts = 0;
	bool have_sig = false;

	/* zygotes need cgroup v1 so far (sbx_slot_prewarm): elsewhere the slot never wakes */
	if (!s->zshare || !s->warm_on || sbx_cg_version(s->cg) != 1)
		return -1;
	if (s->tmpl_mnt < 0)
		return SBX_ZYG_SHARE_POLL_MS;
	n = zs_recent(s, now, rec);
	/* Learned zygotes whose form no slot has served within the age go (an idle service does
	 * not hold them); a slot whose form was only ever learned forgets it. */
	for (k = 0; k < SBX_ZYGOTES; k++) {
		struct zygote *z = &s->z[k];

		if (!z->used || !z->learned || zs_find(rec, n, z->opts))
			continue;
		if (zs_prepared_from(s, z))
			zs_discard_prepared(s);
		if (s->zshare_borrowed && s->warm_opts == z->opts) {
			s->warm_known = false;
			s->zshare_borrowed = false;
		}
		sbx_zygote_stop_one(z);
		z->used = false;
		z->learned = false;
	}
	if (now < s->zshare_retry_ms)
		goto out;
	/* the most recently seen forms first */
	for (k = 1; k < n; k++)
		for (m = k; m > 0 && rec[m].seen_ms > rec[m - 1].seen_ms; m--) {
			struct zs_form t = rec[m];

			rec[m] = rec[m - 1];
			rec[m - 1] = t;
		}
	for (m = 0; m < n; m++) {
		struct zygote *z = NULL;

		if (zs_pending(listen_fd))
			return 0;
		for (k = 0; k < SBX_ZYGOTES && !z; k++)
			if (s->z[k].used && s->z[k].opts == rec[m].opts)
				z = &s->z[k];
		if (z && z->pid > 0) {
			struct pollfd pf = {z->pidfd, POLLIN, 0};

			if (!have_sig)
				sbx_warm_sig(sig, sizeof sig);
			have_sig = true;
			if (poll(&pf, 1, 0) == 0 && sbx_zygote_current(s, z, sig))
				continue; /* running and current */
			if (zs_prepared_from(s, z))
				continue; /* the next prewarm replaces it (zygote_ensure) */
			sbx_zygote_stop_one(z);
		}
		/* a free entry, else one whose form nobody served within the age */
		for (k = 0; k < SBX_ZYGOTES && !z; k++)
			if (!s->z[k].used)
				z = &s->z[k];
		for (k = 0; k < SBX_ZYGOTES && !z; k++)
			if (!zs_find(rec, n, s->z[k].opts) && !zs_prepared_from(s, &s->z[k]))
				z = &s->z[k];
		if (!z)
			continue;
		if (!z->used || z->opts != rec[m].opts) {
			sbx_zygote_stop_one(z);
			z->used = true;
			z->learned = true;
			z->opts = rec[m].opts;
			z->nhints = 0;
			z->last = 0; /* the first the slot's own forms replace */
		}
		/* the record's hints, least recently seen first (zygote_note_hint's order) */
		{
			int64_t hm[SBX_ZYGOTE_HINTS];
			unsigned h, o;

			memcpy(hm, rec[m].hint_ms, sizeof hm);
			for (;;) {
				for (h = 0, o = SBX_ZYGOTE_HINTS; h < rec[m].nhints; h++)
					if (hm[h] >= 0 && (o == SBX_ZYGOTE_HINTS || hm[h] < hm[o]))
						o = h;
				if (o == SBX_ZYGOTE_HINTS)
					break;
				sbx_zygote_note_hint(z, rec[m].hints[o]);
				hm[o] = -1;
			}
		}
		if (sbx_zygote_start(s, z, err, sizeof err) < 0) {
			s->zshare_retry_ms = now + SBX_ZYG_SHARE_RETRY_MS;
			if (getenv("SBX_ZYGOTE_DEBUG"))
				fprintf(stderr, "sbx: zygote: learned form: %s\n", err);
			break;
		}
		if (!started++)
			first_opts = rec[m].opts;
	}
	/* A slot that has served no Python run yet prepares a plain sandbox: it now prepares one
	 * forked from the zygote it learned first, so a run of that form forks from it at once. */
	if (started && !s->warm_known && s->w.ready && !s->w_zygote) {
		const struct zs_form *f = zs_find(rec, n, first_opts);
		unsigned h, o = 0;

		s->warm_known = true;
		s->zshare_borrowed = true;
		s->warm_opts = first_opts;
		s->warm_hint[0] = '\0';
		for (h = 1; f && h < f->nhints; h++)
			if (f->hint_ms[h] > f->hint_ms[o])
				o = h;
		if (f && f->nhints)
			snprintf(s->warm_hint, sizeof s->warm_hint, "%s", f->hints[o]);
		zs_discard_prepared(s);
	}
out:
	if (!s->w.ready && sbx_slot_prewarm(s, err, sizeof err) < 0 && getenv("SBX_ZYGOTE_DEBUG"))
		fprintf(stderr, "sbx: prewarm after a learned form: %s\n", err);
	return SBX_ZYG_SHARE_POLL_MS;
}
