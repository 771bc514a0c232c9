/* admit.c: admission control for requests that run code, fair between clients.
 *
 * Theory of operation. Workers are separate processes (a spawn-fcgi/multiwatch pool), so the
 * counts must be shared, and a worker that crashes mid-run must not leak its slot. Each slot is a
 * name in the abstract Unix-socket namespace: holding a slot is holding a socket bound to that
 * name; bind() fails with EADDRINUSE while another process holds it, and the kernel frees it when
 * the holder closes the fd or dies. No files, no cleanup, no lock directory the service user
 * would need to write.
 *   - machine: runs.machine slots for all clients, never more than the pool's workers
 *     (SBX_POOL_WORKERS: a run holds its worker until it ends, so more runs than workers would
 *     only queue in nginx, where nobody is fair). runs.reserve of them (the "r" names) are kept
 *     for clients with no run in flight; the others ("m") are shared. None free -> 503 with
 *     Retry-After instead of queueing without bound. Past admission, a run waits at most
 *     runs.queue_wait_ms for a free broker slot (run.c), then 503 too.
 *   - per client: runs.per_client slots named after the client, at most
 *     runs.client_share_percent of the machine's (half by default); none free -> 429 with
 *     Retry-After. So one client never holds the whole pool, and a client that has nothing in
 *     flight always finds a slot (the reserve) as soon as fewer than that many newcomers run:
 *     max-min fairness in its simplest form. Whether the client has another run is read from
 *     its own slot names after taking one: of two of its requests racing, the later to bind
 *     sees the earlier, so a client never holds more than one reserved slot at a time.
 * Each rejection and admission is counted for GET /v1/metrics by the caller (routes.c); metrics.c
 * reads the names held right now from /proc/net/unix: that is why a client's names carry it.
 * Deadlines: besides its slot, each admitted run holds a third name, "d/#<client hash>/<slot>/
 * <unix ms>", the latest time its current sandbox run can end (rebound by admit_deadline when the
 * run's own wall limit is known). A 429 reads the client's deadlines back from /proc/net/unix
 * and says in Retry-After when its first run must have ended, instead of a blind 1 s.
 * Waits: a request that holds its worker only to wait (a long-poll of a background run's output)
 * holds a name "w/#<client hash>/<i>" (at most runs.long_polls_per_client) and one of the pool's
 * "W" names (at most half the workers) while it waits: so one client opening many long-polls
 * never takes the workers every other client needs (admit_wait).
 * Names carry a hash of the state directory so two stacks on one host (tests) do not share
 * counts. Programs in the sandbox live in their own network namespace and cannot see or squat
 * these names. Cost: one socket() + at most N bind() calls, microseconds. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

/* FNV-1a: spreads names, not a security boundary. */
static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* Client names come from the token file ([A-Za-z0-9_.-], 1-64): used as they are, so the
 * metrics can read them back. Anything else (never from nginx) is hashed. */
static bool plain_name(const char *s)
{
	size_t n = 0;

	for (; s && s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
		      (s[n] >= '0' && s[n] <= '9') || s[n] == '_' || s[n] == '.' || s[n] == '-'))
			return false;
	return n >= 1 && n <= 64;
}

int admit_prefix(const char *state_dir, char *buf, size_t len)
{
	return snprintf(buf, len, "sbx-admit/%016llx/", (unsigned long long)fnv(state_dir));
}

static socklen_t slot_addr(struct sockaddr_un *sa, const char *state_dir, char kind,
			   const char *key, uint32_t i)
{
	char prefix[64];
	int len;

	admit_prefix(state_dir, prefix, sizeof(prefix));
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (kind == 'c' && plain_name(key))
		len = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "%sc/%s/%u", prefix, key,
			       i);
	else
		len = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "%s%c/#%016llx/%u",
			       prefix, kind, (unsigned long long)fnv(key), i);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

/* Bind a socket to the first free slot of kind/key among n. Returns the fd (and the index in
 * *at), or -1 (errno EBUSY when all are taken). */
static int take_slot(const char *state_dir, char kind, const char *key, uint32_t n, uint32_t *at)
{
	struct sockaddr_un sa;
	uint32_t i;
	int fd = -1;

	for (i = 0; i < n; i++) {
		socklen_t len = slot_addr(&sa, state_dir, kind, key, i);

		if (fd < 0)
			fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (bind(fd, (struct sockaddr *)&sa, len) == 0) {
			if (at)
				*at = i;
			return fd;
		}
		if (errno != EADDRINUSE) {
			close(fd);
			return -1;
		}
	}
	if (fd >= 0)
		close(fd);
	errno = EBUSY;
	return -1;
}

/* How many of the n slots of kind/key other than `mine` another process holds; with `first`,
 * stop at the first one found. */
static uint32_t others_held(const char *state_dir, char kind, const char *key, uint32_t n,
			    uint32_t mine, bool first)
{
	struct sockaddr_un sa;
	uint32_t held = 0;

	for (uint32_t i = 0; i < n && !(first && held); i++) {
		socklen_t len;
		int fd;

		if (i == mine)
			continue;
		len = slot_addr(&sa, state_dir, kind, key, i);
		fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return held + 1; /* cannot tell: the conservative answer */
		if (bind(fd, (struct sockaddr *)&sa, len) < 0 && errno == EADDRINUSE)
			held++;
		close(fd);
	}
	return held;
}

void admit_caps(const struct http_conf *cfg, struct admit_caps *c)
{
	c->machine = cfg->runs_machine;
	if (cfg->pool_workers && (!c->machine || c->machine > cfg->pool_workers))
		c->machine = cfg->pool_workers;
	c->reserve = c->machine > 1 ? cfg->runs_reserve : 0;
	if (c->reserve >= c->machine && c->machine)
		c->reserve = c->machine - 1;
	c->per_client = cfg->runs_per_client;
	if (c->machine) {
		uint32_t share = (uint32_t)((uint64_t)c->machine * cfg->runs_share_pct / 100);

		if (share < 1)
			share = 1;
		if (!c->per_client || c->per_client > share)
			c->per_client = share;
	}
}

int admit_acquire(const struct http_conf *cfg, const char *client, struct admit *a)
{
	struct admit_caps caps;
	uint32_t mine = 0;
	bool alone = true;
	int rc = -EUSERS;

	admit_caps(cfg, &caps);
	a->client_fd = a->machine_fd = a->deadline_fd = -1;
	a->state_dir = cfg->state_dir;
	a->client = client;
	a->per_client = caps.per_client;
	if (caps.per_client && cfg->state_dir) {
		a->client_fd = take_slot(cfg->state_dir, 'c', client, caps.per_client, &mine);
		if (a->client_fd < 0)
			goto out;
		a->slot = mine;
		alone = !others_held(cfg->state_dir, 'c', client, caps.per_client, mine, true);
	}
	rc = -EBUSY;
	if (caps.machine && cfg->state_dir) {
		a->machine_fd =
		    take_slot(cfg->state_dir, 'm', "", caps.machine - caps.reserve, NULL);
		if (a->machine_fd < 0 && alone && caps.reserve)
			a->machine_fd = take_slot(cfg->state_dir, 'r', "", caps.reserve, NULL);
		if (a->machine_fd < 0)
			goto out;
	}
	rc = 0;
out:
	if (rc < 0)
		admit_release(a);
	return rc;
}

void admit_release(struct admit *a)
{
	if (a->client_fd >= 0)
		close(a->client_fd);
	if (a->machine_fd >= 0)
		close(a->machine_fd);
	if (a->deadline_fd >= 0)
		close(a->deadline_fd);
	a->client_fd = a->machine_fd = a->deadline_fd = -1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "<prefix>d/#<client hash>/" into buf; its length. */
static int deadline_prefix(const char *state_dir, const char *client, char *buf, size_t len)
{
	int n = admit_prefix(state_dir, buf, len);

	return n + snprintf(buf + n, len - (size_t)n, "d/#%016llx/",
			    (unsigned long long)fnv(client ? client : ""));
}

void admit_deadline(struct admit *a, uint64_t wall_ms)
{
	struct sockaddr_un sa;
	int n, fd;

	if (a->client_fd < 0 || !a->state_dir)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	n = deadline_prefix(a->state_dir, a->client, sa.sun_path + 1, sizeof(sa.sun_path) - 1);
	n += snprintf(sa.sun_path + 1 + n, sizeof(sa.sun_path) - 1 - (size_t)n, "%u/%llu", a->slot,
		      (unsigned long long)(now_ms() + wall_ms));
	if (a->deadline_fd >= 0)
		close(a->deadline_fd);
	a->deadline_fd = fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* Best effort: a name that cannot be bound only makes a later Retry-After a guess. */
	if (fd >= 0 &&
	    bind(fd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) < 0) {
		close(fd);
		a->deadline_fd = -1;
	}
}

uint32_t admit_in_flight(const struct admit *a)
{
	if (a->client_fd < 0 || !a->state_dir)
		return 0;
	return others_held(a->state_dir, 'c', a->client, a->per_client, a->slot, false);
}

/* What one client's last scan found, kept for ADMIT_SCAN_TTL_MS: the scan reads the whole of
 * /proc/net/unix (0.25 ms with 45 sockets on the host, 16 ms with 4,000), and a client that
 * retries every refusal at once must not make each refusal cost that. A run that ended since
 * only makes the answer a little early, which Retry-After allows. */
#define ADMIT_SCAN_TTL_MS 200
#define ADMIT_SCAN_CACHE 8
static struct {
	char client[64];
	uint64_t first, at;
} scan_cache[ADMIT_SCAN_CACHE];

static uint32_t retry_after_from(uint64_t first, uint64_t now)
{
	/* Nothing found (the runs ended meanwhile) or already past: retry at once, i.e. in 1 s. */
	if (!first || first <= now)
		return 1;
	return (uint32_t)((first - now + 999) / 1000);
}

uint32_t admit_retry_after_s(const struct http_conf *cfg, const char *client)
{
	char prefix[128], *line = NULL;
	size_t cap = 0;
	int plen;
	uint64_t first = 0, now = now_ms();
	unsigned k, slot = 0;
	FILE *fp;

	if (!cfg->state_dir)
		return 1;
	for (k = 0; k < ADMIT_SCAN_CACHE; k++) {
		if (strcmp(scan_cache[k].client, client) == 0 &&
		    now - scan_cache[k].at < ADMIT_SCAN_TTL_MS)
			return retry_after_from(scan_cache[k].first, now);
		if (scan_cache[k].at < scan_cache[slot].at)
			slot = k; /* the oldest entry is the one to replace */
	}
	if (!(fp = fopen("/proc/net/unix", "re")))
		return 1;
	plen = deadline_prefix(cfg->state_dir, client, prefix, sizeof(prefix));
	while (getline(&line, &cap, fp) > 0) {
		char *at = strstr(line, " @"), *ms;
		unsigned long long d;

		if (!at || strncmp(at + 2, prefix, (size_t)plen) ||
		    !(ms = strchr(at + 2 + plen, '/')))
			continue;
		d = strtoull(ms + 1, NULL, 10);
		if (d && (!first || d < first))
			first = d;
	}
	free(line);
	fclose(fp);
	if (strlen(client) < sizeof scan_cache[slot].client) {
		strcpy(scan_cache[slot].client, client);
		scan_cache[slot].first = first;
		scan_cache[slot].at = now;
	}
	return retry_after_from(first, now);
}

int admit_wait(const char *state_dir, const char *client, uint32_t per_client, uint32_t pool,
	       int fds[2])
{
	fds[0] = fds[1] = -1;
	if (!state_dir)
		return 0;
	if (per_client && (fds[0] = take_slot(state_dir, 'w', client, per_client, NULL)) < 0)
		return errno == EBUSY ? -EUSERS : -errno;
	if (pool && (fds[1] = take_slot(state_dir, 'W', "", pool, NULL)) < 0) {
		int err = errno == EBUSY ? -EBUSY : -errno;

		admit_wait_end(fds);
		return err;
	}
	return 0;
}

void admit_wait_end(int fds[2])
{
	for (int i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}
