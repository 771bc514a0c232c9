/* session_store.c: unit tests of the session store through its handlers: create, list, info,
 * delete, ownership, cap, expiry (idle and lifetime), sweep, fork, client-name encoding and
 * concurrent workers (scratch directories: store_scratch.c). No sockets; a temp state dir. */
#include <errno.h>
#include <sys/wait.h>
#include <time.h>

#include "session_test.h"

/* Rewrite a session's meta.json with the given times (what a clock jump would do). */
static void set_times(const char *client, const char *id, long created, long used)
{
	char path[512];
	FILE *f;

	t_disk(path, sizeof(path), client, id, false);
	strcat(path, "/meta.json");
	f = fopen(path, "w");
	if (f) {
		fprintf(
		    f,
		    "{\"owner\":\"%s\",\"created_at\":%ld,\"last_used_at\":%ld,\"expires_at\":0}",
		    client, created, used);
		fclose(f);
	}
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void test_lifecycle(void)
{
	struct api_resp r;
	char id[64], id2[64], path[512];
	struct json_object *v = NULL;

	api_resp_init(&r);
	TAP_OK(t_new_session("alice", id, &r) == 201, "POST /v1/sessions is 201");
	TAP_OK(strlen(id) == 36 && id[14] == '4', "the id is a v4 UUID (%s)", id);
	TAP_OK(strlen(t_str(&r, "created_at")) == 20 && t_str(&r, "expires_at")[19] == 'Z',
	       "created_at and expires_at are ISO 8601 UTC");
	TAP_OK(t_call(h_session_get, "alice", id, NULL, NULL, &r) == 200, "GET the session is 200");
	TAP_OK(json_object_object_get_ex(r.json, "bytes_used", &v) && json_object_get_int(v) == 0,
	       "a new session uses 0 bytes");
	TAP_OK(json_object_object_get_ex(r.json, "file_count", &v) && json_object_get_int(v) == 0,
	       "and holds 0 files");
	TAP_OK(*t_str(&r, "last_used_at") && *t_str(&r, "expires_at"), "info has the times");
	t_put("alice", id, "a.txt", "12345", 5, &r);
	t_call(h_session_get, "alice", id, NULL, NULL, &r);
	TAP_OK(json_object_object_get_ex(r.json, "bytes_used", &v) && json_object_get_int(v) == 5,
	       "bytes_used counts a written file");

	TAP_OK(t_call(h_session_get, "bob", id, NULL, NULL, &r) == 404 &&
		   !strcmp(t_code(&r), "session_not_found"),
	       "bob gets 404 for alice's session");
	TAP_OK(t_call(h_session_get, "bob", "3b241101-e2bb-4255-8caf-4136c566a962", NULL, NULL,
		      &r) == 404 &&
		   !strcmp(t_code(&r), "session_not_found"),
	       "the same 404 as for a session that does not exist");
	TAP_OK(t_call(h_file_get, "bob", id, "a.txt", NULL, &r) == 404,
	       "bob cannot read alice's files");
	TAP_OK(t_call(h_session_delete, "bob", id, NULL, NULL, &r) == 404,
	       "bob cannot delete alice's session");
	TAP_OK(t_call(h_session_get, "alice", "../u-bob", NULL, NULL, &r) == 404,
	       "an id with path elements is 404");

	t_new_session("alice", id2, &r);
	TAP_OK(t_call(h_sessions_list, "alice", NULL, NULL, NULL, &r) == 200, "list is 200");
	TAP_OK(json_object_is_type(r.json, json_type_array) &&
		   json_object_array_length(r.json) == 2,
	       "alice lists her 2 sessions (a plain array)");
	t_call(h_sessions_list, "bob", NULL, NULL, NULL, &r);
	TAP_OK(json_object_is_type(r.json, json_type_array) &&
		   json_object_array_length(r.json) == 0,
	       "bob lists none");

	TAP_OK(t_call(h_sessions_create, "alice", NULL, NULL, "{\"ttl\":5}", &r) == 400 &&
		   !strcmp(t_code(&r), "unknown_field"),
	       "an unknown field in the create body is 400 unknown_field");
	TAP_OK(t_call(h_sessions_create, "alice", NULL, NULL, "{}", &r) == 201,
	       "an empty object body is fine");
	{
		char tmp[64];

		snprintf(tmp, sizeof(tmp), "%s", t_str(&r, "id"));
		t_call(h_session_delete, "alice", tmp, NULL, NULL, &r);
	}

	t_disk(path, sizeof(path), "alice", id, false);
	TAP_OK(t_call(h_session_delete, "alice", id, NULL, NULL, &r) == 204 && !r.json,
	       "DELETE is 204 without a body");
	TAP_OK(!exists(path), "the session's directory is gone");
	TAP_OK(t_call(h_session_get, "alice", id, NULL, NULL, &r) == 404,
	       "GET after DELETE is 404");
	TAP_OK(t_call(h_session_delete, "alice", id2, NULL, NULL, &r) == 204, "delete the second");
	api_resp_free(&r);
}

static void test_cap(void)
{
	struct api_resp r;
	char ids[8][64];
	int made = 0;

	api_resp_init(&r);
	for (int i = 0; i < 5; i++)
		made += t_new_session("carol", ids[i], &r) == 201;
	TAP_OK(made == 5, "carol makes 5 sessions (the cap)");
	TAP_OK(t_new_session("carol", ids[5], &r) == 409 &&
		   !strcmp(t_code(&r), "too_many_sessions"),
	       "the 6th is 409 too_many_sessions");
	TAP_OK(t_call(h_session_fork, "carol", ids[0], NULL, NULL, &r) == 409,
	       "a fork past the cap is 409 too");
	TAP_OK(t_new_session("dave", ids[6], &r) == 201, "another client is not affected");
	set_times("carol", ids[1], (long)time(NULL) - 10, (long)time(NULL) - 7200);
	TAP_OK(t_new_session("carol", ids[5], &r) == 201,
	       "an expired session does not count against the cap");
	api_resp_free(&r);
}

static void test_expiry(void)
{
	struct api_resp r;
	char id[64], id2[64], path[512];
	long now = (long)time(NULL);

	api_resp_init(&r);
	t_new_session("erin", id, &r);
	t_disk(path, sizeof(path), "erin", id, false);
	set_times("erin", id, now - 100, now - 3601);
	TAP_OK(t_call(h_session_get, "erin", id, NULL, NULL, &r) == 404,
	       "idle longer than the TTL: 404");
	TAP_OK(!exists(path), "and removed on access");

	t_new_session("erin", id, &r);
	set_times("erin", id, now - 86401, now);
	TAP_OK(t_call(h_file_get, "erin", id, "x", NULL, &r) == 404 &&
		   !strcmp(t_code(&r), "session_not_found"),
	       "past the max lifetime: 404 even when just used");

	t_new_session("erin", id, &r);
	set_times("erin", id, now - 100, now - 1800);
	TAP_OK(t_call(h_session_get, "erin", id, NULL, NULL, &r) == 200, "within the TTL: alive");
	t_call(h_session_get, "erin", id, NULL, NULL, &r);
	{
		char iso[32];

		h_iso_time(now, iso, sizeof(iso));
		TAP_OK(strcmp(t_str(&r, "last_used_at"), iso) >= 0, "access touches last_used_at");
	}

	/* The sweep: an expired session nobody touches, a leftover trash dir. */
	t_new_session("erin", id2, &r);
	set_times("erin", id2, now - 100, now - 4000);
	t_disk(path, sizeof(path), "erin", id2, false);
	{
		char trash[512], sweep[512];
		struct timespec old[2] = {{now - 3600, 0}, {now - 3600, 0}};

		snprintf(trash, sizeof(trash), "%s/sessions/u-erin/.trash-1234", t_state);
		mkdir(trash, 0700);
		strcat(trash, "/f");
		close(open(trash, O_CREAT | O_WRONLY, 0600));
		snprintf(sweep, sizeof(sweep), "%s/sessions/.sweep", t_state);
		utimensat(AT_FDCWD, sweep, old, 0);
		session_sweep(h_store(&t_cfg));
		TAP_OK(!exists(path), "the sweep removes an expired session");
		snprintf(trash, sizeof(trash), "%s/sessions/u-erin/.trash-1234", t_state);
		TAP_OK(!exists(trash), "and leftover trash");
		session_sweep(h_store(&t_cfg)); /* rate-limited: a no-op right after */
		TAP_OK(exists(sweep), "the sweep lock file stays");
	}
	api_resp_free(&r);
}

static void test_client_names(void)
{
	struct api_resp r;
	char id[64], path[512];

	api_resp_init(&r);
	TAP_OK(t_new_session("../evil/x", id, &r) == 201, "a client name with path elements works");
	snprintf(path, sizeof(path), "%s/sessions/h-2e2e2f6576696c2f78/%s", t_state, id);
	TAP_OK(exists(path), "stored under a hex-encoded name");
	snprintf(path, sizeof(path), "%s/evil", t_state);
	TAP_OK(!exists(path), "nothing outside sessions/");
	TAP_OK(t_call(h_session_get, "../evil/y", id, NULL, NULL, &r) == 404,
	       "a similar name is another client");
	TAP_OK(t_new_session("", id, &r) == 401, "no client name: 401");
	api_resp_free(&r);
}

static void test_fork(void)
{
	struct api_resp r;
	char id[64], nid[64], path[512], buf[256];
	struct stat st;

	api_resp_init(&r);
	t_new_session("frank", id, &r);
	t_put("frank", id, "a.txt", "alpha", 5, &r);
	t_put("frank", id, "d/e/b.txt", "beta", 4, &r);
	t_disk(path, sizeof(path), "frank", id, true);
	{
		char p[600];

		snprintf(p, sizeof(p), "%s/link", path);
		TAP_OK(symlink("/etc/passwd", p) == 0, "(a symlink to /etc/passwd in the session)");
		snprintf(p, sizeof(p), "%s/fifo", path);
		mkfifo(p, 0600);
		snprintf(p, sizeof(p), "%s/a.txt", path);
		chmod(p, 0750);
	}
	TAP_OK(t_call(h_session_fork, "frank", id, NULL, NULL, &r) == 201, "fork is 201");
	snprintf(nid, sizeof(nid), "%s", t_str(&r, "id"));
	TAP_OK(strlen(nid) == 36 && strcmp(nid, id), "with a new id");
	TAP_OK(t_get("frank", nid, "a.txt", buf, sizeof(buf), &r) == 200 && !strcmp(buf, "alpha"),
	       "the copy has a.txt");
	TAP_OK(t_get("frank", nid, "d/e/b.txt", buf, sizeof(buf), &r) == 200 &&
		   !strcmp(buf, "beta"),
	       "and d/e/b.txt");
	t_disk(path, sizeof(path), "frank", nid, true);
	{
		char p[600], target[64] = "";

		snprintf(p, sizeof(p), "%s/link", path);
		TAP_OK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode) &&
			   readlink(p, target, sizeof(target) - 1) > 0 &&
			   !strcmp(target, "/etc/passwd"),
		       "a symlink is copied as a symlink, not followed");
		snprintf(p, sizeof(p), "%s/fifo", path);
		TAP_OK(!exists(p), "a FIFO is skipped");
		snprintf(p, sizeof(p), "%s/a.txt", path);
		TAP_OK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0750, "file modes are kept");
	}
	t_put("frank", nid, "a.txt", "changed", 7, &r);
	TAP_OK(t_get("frank", id, "a.txt", buf, sizeof(buf), &r) == 200 && !strcmp(buf, "alpha"),
	       "the original is independent of the copy");
	TAP_OK(t_call(h_session_fork, "grace", id, NULL, NULL, &r) == 404,
	       "another client cannot fork it");

	/* Over quota (as a run could leave it): the fork refuses rather than copy past it. */
	t_disk(path, sizeof(path), "frank", id, true);
	{
		char p[600];
		int fd;

		snprintf(p, sizeof(p), "%s/big", path);
		fd = open(p, O_CREAT | O_WRONLY, 0600);
		TAP_OK(fd >= 0 && ftruncate(fd, (off_t)t_cfg.session_quota_bytes + 1) == 0,
		       "(a file bigger than the quota)");
		close(fd);
	}
	TAP_OK(t_call(h_session_fork, "frank", id, NULL, NULL, &r) == 507 &&
		   !strcmp(t_code(&r), "quota_exceeded"),
	       "a fork over the quota is 507 quota_exceeded");
	snprintf(path, sizeof(path), "%s/sessions/u-frank", t_state);
	TAP_OK(t_count_prefix(path, ".new-") == 0, "and leaves no partial copy");
	api_resp_free(&r);
}

/* Deep trees (deeper than the fds the remover holds) still go. */
static void test_deep_delete(void)
{
	struct api_resp r;
	char id[64], path[512];
	int fd, ok = 1;

	api_resp_init(&r);
	t_new_session("heidi", id, &r);
	t_disk(path, sizeof(path), "heidi", id, true);
	fd = open(path, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 300 && ok; i++) {
		int next;

		ok = mkdirat(fd, "d", 0700) == 0 && (next = openat(fd, "d", O_RDONLY)) >= 0;
		close(fd);
		fd = ok ? next : -1;
	}
	if (fd >= 0)
		close(fd);
	TAP_OK(ok, "(a tree 300 directories deep)");
	t_disk(path, sizeof(path), "heidi", id, false);
	TAP_OK(t_call(h_session_delete, "heidi", id, NULL, NULL, &r) == 204 && !exists(path),
	       "DELETE removes a very deep tree");
	snprintf(path, sizeof(path), "%s/sessions/u-heidi", t_state);
	TAP_OK(t_count_prefix(path, ".trash-") == 0, "no trash left");
	api_resp_free(&r);
}

/* Several worker processes on one session: metadata stays valid, every write lands. */
static void test_concurrency(void)
{
	struct api_resp r;
	char id[64];
	int ok = 1;
	pid_t kids[6];
	struct json_object *v = NULL;

	api_resp_init(&r);
	t_cfg.sessions_per_client = 0;
	t_new_session("ivan", id, &r);
	for (int k = 0; k < 6; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			struct api_resp kr;
			int bad = 0;
			char name[32], seed[160];

			api_resp_init(&kr);
			for (int i = 0; i < 20; i++) {
				snprintf(name, sizeof(name), "k%d/f%d", k, i);
				bad |= t_put("ivan", id, name, "x", 1, &kr) != 201;
				bad |= t_call(h_session_get, "ivan", id, NULL, NULL, &kr) != 200;
				snprintf(
				    seed, sizeof(seed),
				    "{\"id\":\"shared\",\"rel_path\":\"k%d_%d\",\"content\":\"y\"}",
				    k, i);
				bad |=
				    t_call(h_seed_write_file, "ivan", NULL, NULL, seed, &kr) != 200;
			}
			api_resp_free(&kr);
			_exit(bad);
		}
	}
	for (int k = 0; k < 6; k++) {
		int st = 1;

		waitpid(kids[k], &st, 0);
		ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	TAP_OK(ok, "6 processes x 20 writes, reads and seed creates: all succeed");
	t_call(h_session_get, "ivan", id, NULL, NULL, &r);
	TAP_OK(json_object_object_get_ex(r.json, "file_count", &v) && json_object_get_int(v) == 120,
	       "all 120 files are there");
	t_call(h_session_get, "ivan", "shared", NULL, NULL, &r);
	TAP_OK(json_object_object_get_ex(r.json, "file_count", &v) && json_object_get_int(v) == 120,
	       "racing first writes created one seed session with all 120 files");
	t_cfg.sessions_per_client = 5;

	/* Racing creates of one client: the per-client lock keeps the cap exact. */
	for (int k = 0; k < 6; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			struct api_resp kr;
			int made = 0;

			api_resp_init(&kr);
			for (int i = 0; i < 3; i++)
				made +=
				    t_call(h_sessions_create, "judy", NULL, NULL, NULL, &kr) == 201;
			api_resp_free(&kr);
			_exit(made);
		}
	}
	{
		int total = 0;

		for (int k = 0; k < 6; k++) {
			int st = 0;

			waitpid(kids[k], &st, 0);
			total += WIFEXITED(st) ? WEXITSTATUS(st) : 100;
		}
		TAP_OK(total == 5, "18 racing creates against a cap of 5: exactly 5 succeed (%d)",
		       total);
	}
	api_resp_free(&r);
}

int main(void)
{
	t_setup();
	test_lifecycle();
	test_cap();
	test_expiry();
	test_client_names();
	test_fork();
	test_deep_delete();
	test_concurrency();
	t_teardown();
	return tap_done();
}
