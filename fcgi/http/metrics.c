/* metrics.c: the counters behind GET /v1/metrics.
 *
 * The workers are separate processes (spawn-fcgi + multiwatch, and the health pool), so the
 * counters live in one small shared file, /dev/shm/sbx-metrics-<hash of the state dir> (mode
 * 0600, the service user's), mapped by every worker and updated under flock(): events are one
 * per run at most, a few microseconds each, and a worker that dies holding the lock releases it.
 * What is in flight right now is not counted at all but read from the admission slots that are
 * held (admit.c: abstract socket names, listed in /proc/net/unix), so it can never drift when a
 * worker is killed mid-run. Clients beyond the table's size are counted under "_other". */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "metrics.h"

#define METRICS_MAGIC 0x73627831u /* "sbx1" */
#define METRICS_CLIENTS 512

struct metrics_client {
	char name[72];
	uint64_t n[METRIC_EVENTS];
};

struct metrics_shm {
	uint32_t magic;
	uint32_t nclients;
	uint64_t total[METRIC_EVENTS];
	struct metrics_client c[METRICS_CLIENTS];
};

static const char *const event_names[METRIC_EVENTS] = {"admitted", "per_client", "machine"};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct metrics_shm *shm;
static int shm_fd = -1;

void metrics_path(const struct http_conf *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "/dev/shm/sbx-metrics-%016llx", (unsigned long long)fnv(cfg->state_dir));
}

static struct metrics_shm *metrics_map(const struct http_conf *cfg)
{
	char path[64];
	struct stat st;
	void *p;
	int fd;

	if (shm)
		return shm;
	if (!cfg->state_dir)
		return NULL;
	metrics_path(cfg, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	/* Ours only: a file someone else made (another user, a link) is not trusted. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_size != 0 && st.st_size != (off_t)sizeof(struct metrics_shm)) ||
	    (st.st_size == 0 && ftruncate(fd, sizeof(struct metrics_shm)) < 0)) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, sizeof(struct metrics_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	shm = p;
	shm_fd = fd;
	return shm;
}

static void metrics_lock(bool on)
{
	while (flock(shm_fd, on ? LOCK_EX : LOCK_UN) < 0 && errno == EINTR)
		;
}

void metrics_count(const struct http_conf *cfg, const char *client, enum metric_event ev)
{
	struct metrics_shm *m = metrics_map(cfg);
	uint32_t i;

	if (!m || ev >= METRIC_EVENTS)
		return;
	metrics_lock(true);
	if (m->magic != METRICS_MAGIC) {
		memset(m, 0, sizeof(*m));
		m->magic = METRICS_MAGIC;
	}
	m->total[ev]++;
	if (client && client[0]) {
		const char *name = strlen(client) < sizeof(m->c[0].name) ? client : "_other";

		for (i = 0; i < m->nclients && strcmp(m->c[i].name, name); i++)
			;
		if (i == m->nclients && m->nclients < METRICS_CLIENTS - 1)
			snprintf(m->c[m->nclients++].name, sizeof(m->c[0].name), "%s", name);
		else if (i == m->nclients) { /* full: the last entry is "_other" */
			i = METRICS_CLIENTS - 1;
			if (strcmp(m->c[i].name, "_other")) {
				memset(&m->c[i], 0, sizeof(m->c[i]));
				strcpy(m->c[i].name, "_other");
			}
		}
		m->c[i].n[ev]++;
	}
	metrics_lock(false);
}

/* Runs in flight per client and machine slots held, from the abstract names of admit.c. */
struct held {
	char name[72];
	uint64_t n;
};

static size_t read_held(const struct http_conf *cfg, struct held *h, size_t cap, uint64_t *machine)
{
	char prefix[64], *line = NULL;
	size_t plen, nh = 0, linecap = 0;
	FILE *fp = fopen("/proc/net/unix", "re");

	*machine = 0;
	if (!fp)
		return 0;
	admit_prefix(cfg->state_dir, prefix, sizeof(prefix));
	plen = strlen(prefix);
	while (getline(&line, &linecap, fp) > 0) {
		char *at = strstr(line, " @"), *p, *slash;
		size_t i;

		if (!at || strncmp(at + 2, prefix, plen))
			continue;
		p = at + 2 + plen;
		if (p[0] == 'm' || p[0] == 'r') {
			(*machine)++;
			continue;
		}
		if (p[0] != 'c' || p[1] != '/' || p[2] == '#')
			continue;
		p += 2;
		slash = strchr(p, '/');
		if (!slash || (size_t)(slash - p) >= sizeof(h[0].name))
			continue;
		*slash = '\0';
		for (i = 0; i < nh && strcmp(h[i].name, p); i++)
			;
		if (i == nh) {
			if (nh == cap)
				continue;
			snprintf(h[nh].name, sizeof(h[0].name), "%s", p);
			h[nh++].n = 0;
		}
		h[i].n++;
	}
	free(line);
	fclose(fp);
	return nh;
}

/* Client names are [A-Za-z0-9_.-] (nginx/token): nothing to escape in a label. Anything else is
 * left out rather than risk breaking the exposition. */
static bool label_safe(const char *s)
{
	return s[0] && !strpbrk(s, "\"\\\n");
}

uint64_t metrics_machine_in_use(const struct http_conf *cfg)
{
	uint64_t machine = 0;

	read_held(cfg, NULL, 0, &machine);
	return machine;
}

int metrics_write(const struct http_conf *cfg, FILE *out)
{
	struct metrics_shm *m = metrics_map(cfg), copy;
	struct admit_caps caps;
	struct held *held = calloc(METRICS_CLIENTS, sizeof(*held));
	uint64_t machine = 0;
	size_t nh, i;
	int e;

	if (!held)
		return -1;
	memset(&copy, 0, sizeof(copy));
	if (m) {
		metrics_lock(true);
		if (m->magic == METRICS_MAGIC)
			copy = *m;
		metrics_lock(false);
	}
	admit_caps(cfg, &caps);
	nh = read_held(cfg, held, METRICS_CLIENTS, &machine);

	fprintf(out, "# HELP sbx_runs_in_flight Runs admitted and not yet finished, per client.\n"
		     "# TYPE sbx_runs_in_flight gauge\n");
	for (i = 0; i < nh; i++)
		fprintf(out, "sbx_runs_in_flight{client=\"%s\"} %" PRIu64 "\n", held[i].name,
			held[i].n);
	fprintf(out,
		"# HELP sbx_machine_slots_in_use Machine run slots held (all clients).\n"
		"# TYPE sbx_machine_slots_in_use gauge\n"
		"sbx_machine_slots_in_use %" PRIu64 "\n",
		machine);
	fprintf(out,
		"# HELP sbx_machine_slots Machine run slots (runs at once; 0: no cap).\n"
		"# TYPE sbx_machine_slots gauge\nsbx_machine_slots %u\n"
		"# HELP sbx_machine_slots_reserved Of those, kept for clients with no run in "
		"flight.\n"
		"# TYPE sbx_machine_slots_reserved gauge\nsbx_machine_slots_reserved %u\n"
		"# HELP sbx_client_slots The most runs one client may have at once.\n"
		"# TYPE sbx_client_slots gauge\nsbx_client_slots %u\n",
		caps.machine, caps.reserve, caps.per_client);
	fprintf(out,
		"# HELP sbx_pool_workers FastCGI workers of the main pool (0: unknown).\n"
		"# TYPE sbx_pool_workers gauge\nsbx_pool_workers %u\n",
		cfg->pool_workers);
	fprintf(out,
		"# HELP sbx_runs_admitted_total Runs admitted (all clients).\n"
		"# TYPE sbx_runs_admitted_total counter\n"
		"sbx_runs_admitted_total %" PRIu64 "\n",
		copy.total[METRIC_ADMITTED]);
	fprintf(out, "# HELP sbx_rejections_total Runs refused by admission, by reason "
		     "(per_client: 429 too_many_runs; machine: 503 busy).\n"
		     "# TYPE sbx_rejections_total counter\n");
	for (e = METRIC_REJECT_PER_CLIENT; e < METRIC_EVENTS; e++)
		fprintf(out, "sbx_rejections_total{reason=\"%s\"} %" PRIu64 "\n", event_names[e],
			copy.total[e]);
	fprintf(out, "# HELP sbx_client_runs_admitted_total Runs admitted, per client.\n"
		     "# TYPE sbx_client_runs_admitted_total counter\n");
	for (i = 0; i < copy.nclients && i < METRICS_CLIENTS; i++)
		if (label_safe(copy.c[i].name))
			fprintf(out, "sbx_client_runs_admitted_total{client=\"%s\"} %" PRIu64 "\n",
				copy.c[i].name, copy.c[i].n[METRIC_ADMITTED]);
	fprintf(out, "# HELP sbx_client_rejections_total Runs refused by admission, per client "
		     "and reason.\n"
		     "# TYPE sbx_client_rejections_total counter\n");
	for (e = METRIC_REJECT_PER_CLIENT; e < METRIC_EVENTS; e++)
		for (i = 0; i < copy.nclients && i < METRICS_CLIENTS; i++)
			if (copy.c[i].n[e] && label_safe(copy.c[i].name))
				fprintf(out,
					"sbx_client_rejections_total{client=\"%s\",reason=\"%s\"} "
					"%" PRIu64 "\n",
					copy.c[i].name, event_names[e], copy.c[i].n[e]);
	free(held);
	return ferror(out) ? -1 : 0;
}
