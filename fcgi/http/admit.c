/* admit.c: admission control for requests that run code.
 *
 * Theory of operation. Workers are separate processes (a spawn-fcgi/multiwatch pool), so the
 * counts must be shared, and a worker that crashes mid-run must not leak its slot. Each slot is a
 * name in the abstract Unix-socket namespace: holding a slot is holding a socket bound to that
 * name; bind() fails with EADDRINUSE while another process holds it, and the kernel frees it when
 * the holder closes the fd or dies. No files, no cleanup, no lock directory the service user
 * would need to write.
 *   - per client: runs.per_client slots named after the client (hashed); none free -> 429 with
 *     Retry-After, so one client cannot occupy the whole pool.
 *   - machine: runs.machine slots for all clients; none free -> 503 with Retry-After instead of
 *     queueing without bound behind the broker's slots. Past admission, a run waits at most
 *     runs.queue_wait_ms for a free broker slot (run.c), then 503 too.
 * Names carry a hash of the state directory so two stacks on one host (tests) do not share
 * counts. Programs in the sandbox live in their own network namespace and cannot see or squat
 * these names. Cost: one socket() + at most N bind() calls, microseconds. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* Bind a socket to the first free slot of kind/key among n. Returns the fd, or -1 (errno EBUSY
 * when all are taken). */
static int take_slot(const char *state_dir, char kind, const char *key, uint32_t n)
{
	struct sockaddr_un sa;
	uint32_t i;
	int fd = -1;

	for (i = 0; i < n; i++) {
		int len;

		if (fd < 0)
			fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		memset(&sa, 0, sizeof(sa));
		sa.sun_family = AF_UNIX;
		len = snprintf(
		    sa.sun_path + 1, sizeof(sa.sun_path) - 1, "sbx-admit/%016llx/%c/%016llx/%u",
		    (unsigned long long)fnv(state_dir), kind, (unsigned long long)fnv(key), i);
		if (bind(fd, (struct sockaddr *)&sa,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len)) ==
		    0)
			return fd;
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

int admit_acquire(const struct http_conf *cfg, const char *client, struct admit *a)
{
	int rc = -EUSERS;

	a->client_fd = a->machine_fd = -1;
	if (cfg->runs_per_client && cfg->state_dir) {
		a->client_fd = take_slot(cfg->state_dir, 'c', client, cfg->runs_per_client);
		if (a->client_fd < 0)
			goto out;
	}
	rc = -EBUSY;
	if (cfg->runs_machine && cfg->state_dir) {
		a->machine_fd = take_slot(cfg->state_dir, 'm', "", cfg->runs_machine);
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
	a->client_fd = a->machine_fd = -1;
}
