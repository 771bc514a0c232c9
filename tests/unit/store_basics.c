/* store_basics.c: the session store on its own (fcgi/store/, linked with nothing else of fcgi/,
 * no json-c, no broker client): its calls return 0 or -errno and say why in struct store_err.
 * Sessions, metadata, the per-client cap, fork, special files a run leaves (sockets, FIFOs),
 * the disk reserve. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../fcgi/store/store.h"
#include "../lib/tap.h"

static char state[256];
static struct store_conf conf;

static void setup(void)
{
	snprintf(state, sizeof(state), "/tmp/sbx-store-test-XXXXXX");
	if (!mkdtemp(state)) {
		printf("Bail out! mkdtemp failed\n");
		exit(1);
	}
	conf = (struct store_conf){.state_dir = state,
				   .ttl_s = 3600,
				   .max_lifetime_s = 86400,
				   .quota_bytes = 1u << 20,
				   .sessions_per_client = 3};
}

static void teardown(void)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", state);
}

static int put(struct session *s, const char *path, const char *data, struct store_err *e)
{
	struct fs_mem m = {data, strlen(data), 0};
	struct fs_source src = FS_MEM_SOURCE(m);
	bool created;

	return fs_write_atomic(s, path, strlen(path), &src, &created, NULL, e);
}

/* A Unix socket bound at root/name, as a run's server would leave it. 0 or -1. */
static int make_socket(int root, const char *name)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	/* sun_path is short: bind a relative name from inside the directory. */
	if (fd < 0 || fchdir(root) < 0)
		return -1;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", name);
	rc = bind(fd, (struct sockaddr *)&un, sizeof(un));
	close(fd);
	if (chdir("/") < 0)
		return -1;
	return rc;
}

static void test_sessions(void)
{
	struct store_err e = {0};
	struct session a = {0}, *s = NULL, *s2 = NULL;
	struct session_info *list = NULL;
	char fork_id[SESSION_ID_MAX + 1];
	const char *odd = "o\"dd\\ \x01name";
	size_t n = 0;
	int rc;

	TAP_OK(session_create(&conf, "alice", &a, &e) == 0 && session_id_valid(a.id, strlen(a.id)),
	       "session_create: %s", a.id);
	TAP_OK(session_open(&conf, "alice", a.id, false, &s, &e) == 0 && s, "session_open");
	TAP_OK(session_open(&conf, "bob", a.id, false, &(struct session *){NULL}, &e) == -ENOENT &&
		   e.why == STORE_WHY_SESSION,
	       "another client's session is -ENOENT (SESSION)");
	TAP_OK(session_open(&conf, "alice", "../x", false, &(struct session *){NULL}, &e) ==
		   -ENOENT,
	       "a malformed id is -ENOENT when opening");
	TAP_OK(session_open(&conf, "alice", "../x", true, &(struct session *){NULL}, &e) ==
		       -EINVAL &&
		   e.why == STORE_WHY_ID,
	       "and -EINVAL (ID) when creating");
	TAP_OK(put(s, "d/f.txt", "hello", &e) == 0, "fs_write_atomic");
	TAP_OK(session_fork(s, "alice", fork_id, sizeof(fork_id), &e) == 0, "session_fork: %s",
	       fork_id);
	TAP_OK(session_list(&conf, "alice", &list, &n, &e) == 0 && n == 2, "session_list: %zu", n);
	free(list);
	rc = session_create(&conf, "alice", &(struct session){0}, &e);
	TAP_OK(rc == 0, "a third session");
	rc = session_create(&conf, "alice", &(struct session){0}, &e);
	TAP_OK(rc == -EUSERS && e.why == STORE_WHY_SESSIONS && e.limit == 3,
	       "past the cap: -EUSERS (SESSIONS, limit 3)");
	TAP_OK(session_open(&conf, "alice", a.id, false, &s2, &e) == 0, "opened a second time");
	TAP_OK(session_remove(s, &e) == 0, "session_remove");
	session_close(s);
	TAP_OK(session_open(&conf, "alice", a.id, false, &s, &e) == -ENOENT, "then it is gone");
	/* A delete that opened the session before another removed its directory: gone, not a
	 * store failure (three racing DELETEs answer 204, 404, 404; never 500). */
	TAP_OK(session_remove(s2, &e) == -ENOENT && e.why == STORE_WHY_SESSION,
	       "removing it again through an older open: -ENOENT (SESSION)");
	rc = put(s2, "late.txt", "x", &e);
	TAP_OK(rc == -ENOENT && e.why == STORE_WHY_SESSION,
	       "and writing into it: -ENOENT (SESSION)");
	session_close(s2);

	/* meta.json is written and read by the store itself: an owner with quotes, a backslash and
	 * a control byte survives the round trip. */
	TAP_OK(session_create(&conf, odd, &a, &e) == 0 &&
		   session_open(&conf, odd, a.id, false, &s, &e) == 0,
	       "an owner name needing escapes opens its session again");
	session_close(s);
	TAP_OK(session_list(&conf, odd, &list, &n, &e) == 0 && n == 1, "and lists it");
	free(list);
	{
		/* As Python's json.dump writes it: spaces after ':' and ','. */
		char p[600];
		FILE *f;

		snprintf(p, sizeof(p), "%s/sessions/u-alice/%s/meta.json", state, fork_id);
		f = fopen(p, "w");
		if (f) {
			fprintf(
			    f,
			    "{\"owner\": \"alice\", \"created_at\": %lld, \"last_used_at\": %lld, "
			    "\"expires_at\": 0}\n",
			    (long long)time(NULL), (long long)time(NULL));
			fclose(f);
		}
		TAP_OK(session_open(&conf, "alice", fork_id, false, &s, &e) == 0,
		       "meta.json with whitespace (edited by hand) is read");
		session_close(s);
	}
	TAP_OK(session_list(&conf, "nobody", &list, &n, &e) == 0 && n == 0,
	       "a client without sessions has an empty list");
}

static void test_files(void)
{
	struct store_err e = {0};
	struct session a = {0}, *s = NULL;
	struct stat st;
	char fork_id[SESSION_ID_MAX + 1], p[600];
	int fd;

	session_create(&conf, "carol", &a, &e);
	if (session_open(&conf, "carol", a.id, false, &s, &e) < 0) {
		TAP_OK(0, "session_open");
		return;
	}
	put(s, "f", "data", &e);
	memset(&e, 0, sizeof(e));
	TAP_OK(fs_open_file(s->root_fd, "../f", 4, &st, &e) == -EINVAL && e.why == STORE_WHY_PATH,
	       "fs_open_file: a malformed path is -EINVAL (PATH)");
	fd = fs_open_file(s->root_fd, "f", 1, &st, &e);
	TAP_OK(fd >= 0 && st.st_size == 4, "fs_open_file reads a regular file");
	if (fd >= 0)
		close(fd);
	TAP_OK(fs_open_file(s->root_fd, "nope", 4, &st, &e) == -ENOENT, "a missing one: -ENOENT");

	/* Special files a run leaves behind: listed, moved, deleted, forked past; never opened. */
	TAP_OK(make_socket(s->root_fd, "sock") == 0, "(a Unix socket in the session)");
	snprintf(p, sizeof(p), "%s/sessions/u-carol/%s/files/fifo", state, a.id);
	TAP_OK(mkfifo(p, 0600) == 0, "(a FIFO in the session)");
	memset(&e, 0, sizeof(e));
	TAP_OK(fs_open_file(s->root_fd, "sock", 4, &st, &e) == -ENXIO && e.why == STORE_WHY_SPECIAL,
	       "fs_open_file on a socket: -ENXIO (SPECIAL), not an I/O error");
	memset(&e, 0, sizeof(e));
	TAP_OK(fs_open_file(s->root_fd, "fifo", 4, &st, &e) == -ENXIO && e.why == STORE_WHY_SPECIAL,
	       "on a FIFO: the same, without blocking");
	TAP_OK(fs_move(s, "sock", 4, "d/sock2", 7, false, &e) == 0, "fs_move moves a socket");
	TAP_OK(session_fork(s, "carol", fork_id, sizeof(fork_id), &e) == 0,
	       "session_fork with a socket and a FIFO in it");
	TAP_OK(fs_delete(s, "d/sock2", 7, &e) == 0 && fs_delete(s, "fifo", 4, &e) == 0,
	       "fs_delete removes both");

	/* The quota, by the store's own count. */
	{
		char *big = malloc((1u << 20) + 2);

		memset(big, 'x', (1u << 20) + 1);
		big[(1u << 20) + 1] = '\0';
		memset(&e, 0, sizeof(e));
		TAP_OK(put(s, "big", big, &e) == -EDQUOT && e.why == STORE_WHY_QUOTA &&
			   e.limit == (1u << 20),
		       "a write past the quota: -EDQUOT (QUOTA) with the quota in limit");
		free(big);
	}
	memset(&e, 0, sizeof(e));
	TAP_OK(fs_move(s, "f", 1, "../g", 4, false, &e) == -EINVAL && e.why == STORE_WHY_PATH &&
		   e.at == 1,
	       "fs_move: a malformed destination is about path 1");
	session_close(s);
}

static void test_reserve(void)
{
	struct store_err e = {0};
	struct session a = {0}, *s = NULL;
	uint64_t avail = 0, total = 0;
	char path[4096];

	TAP_OK(store_disk_space(&conf, &avail, &total) == 0 && avail > 0 && total >= avail,
	       "store_disk_space: %llu of %llu bytes free", (unsigned long long)avail,
	       (unsigned long long)total);
	session_create(&conf, "dave", &a, &e);
	session_open(&conf, "dave", a.id, false, &s, &e);
	conf.reserve_bytes = UINT64_MAX / 2; /* more than any disk has: below the reserve */
	memset(&e, 0, sizeof(e));
	TAP_OK(store_reserve_check(&conf, 0, &e) == -ENOSPC && e.why == STORE_WHY_RESERVE &&
		   e.left > 0 && e.limit == conf.reserve_bytes,
	       "store_reserve_check: -ENOSPC (RESERVE) with the free bytes and the reserve");
	TAP_OK(session_create(&conf, "dave", &(struct session){0}, &e) == -ENOSPC &&
		   e.why == STORE_WHY_RESERVE,
	       "session_create below the reserve: -ENOSPC (RESERVE)");
	TAP_OK(s && put(s, "x", "1", &e) == -ENOSPC && e.why == STORE_WHY_RESERVE,
	       "fs_write_atomic too");
	TAP_OK(s && session_fork(s, "dave", path, sizeof(path), &e) == -ENOSPC, "session_fork too");
	TAP_OK(scratch_create(&conf, path, sizeof(path), &e) == -ENOSPC, "scratch_create too");
	conf.reserve_bytes = 0;
	TAP_OK(s && put(s, "x", "1", &e) == 0, "without a reserve the write goes through");
	session_close(s);
}

int main(void)
{
	setup();
	test_sessions();
	test_files();
	test_reserve();
	teardown();
	return tap_done();
}
