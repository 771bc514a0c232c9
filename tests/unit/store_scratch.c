/* store_scratch.c: the scratch directories of stateless runs, on the store alone: made under
 * state_dir/scratch, removed whole (unreadable directories too) without following a symlink,
 * never outside scratch/, and swept when a dead worker left one behind. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../fcgi/store/store.h"
#include "../../sandbox/sandbox.h"
#include "../lib/tap.h"

static char state[256];
static struct store_conf conf;

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void test_scratch(void)
{
	char path[512], p[700];
	int fd;

	fd = scratch_create(&conf, path, sizeof(path), NULL);
	TAP_OK(fd >= 0 && !strncmp(path, state, strlen(state)), "scratch_create: %s", path);
	snprintf(p, sizeof(p), "%s/d/e", path);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/d", path);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/d/e", path);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/d/e/f", path);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof(p), "%s/d/e", path);
	chmod(p, 0);
	snprintf(p, sizeof(p), "%s/l", path);
	TAP_OK(symlink("/etc", p) == 0, "(a symlink to /etc in scratch)");
	scratch_destroy(&conf, fd, path);
	TAP_OK(!exists(path), "scratch_destroy removes the tree (unreadable dirs too)");
	TAP_OK(exists("/etc/passwd"), "without following a symlink in it");
	scratch_destroy(&conf, -1, "/etc/../etc/passwd");
	TAP_OK(exists("/etc/passwd"), "a path that is not a scratch name is ignored");
	{
		/* A worker that died mid-run leaves its scratch dir; the sweep removes it when
		 * stale. */
		char fresh[512], sweep[512];
		int f2 = scratch_create(&conf, fresh, sizeof(fresh), NULL);
		time_t now = time(NULL);
		struct timespec old[2] = {{now - 7200, 0}, {now - 7200, 0}};

		fd = scratch_create(&conf, path, sizeof(path), NULL);
		utimensat(AT_FDCWD, path, old, 0);
		snprintf(sweep, sizeof(sweep), "%s/sessions/.sweep", state);
		utimensat(AT_FDCWD, sweep, old, 0);
		session_sweep(&conf);
		TAP_OK(!exists(path) && exists(fresh),
		       "the sweep removes a stale scratch dir and keeps a fresh one");
		close(fd);
		scratch_destroy(&conf, f2, fresh);
	}
}

int main(void)
{
	char cmd[512];

	snprintf(state, sizeof(state), "/tmp/sbx-scratch-test-XXXXXX");
	if (!mkdtemp(state)) {
		printf("Bail out! mkdtemp failed\n");
		return 1;
	}
	conf = (struct store_conf){.state_dir = state, .quota_bytes = 1u << 20};
	test_scratch();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", state);
	/* Forks join the broker's reserve group by its id: the two headers must name the same one.
	 */
	TAP_OK(STORE_RESERVE_QGROUP == SBX_QUOTA_PARENT,
	       "the store's reserve group is the broker's (qgroup 1/4242)");
	return tap_done();
}
