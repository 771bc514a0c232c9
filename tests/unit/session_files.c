/* session_files.c: unit tests of the file routes (/v1 and seed): path tricks, symlinks made
 * inside the session (to a file, to a parent dir), quota, atomic writes, tree, delete, move, and
 * the seed shapes. No sockets; a temp state dir. */
#include <errno.h>
#include <time.h>

#include "session_test.h"

static char outside[300]; /* a directory outside the session the tricks aim at */

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, len - 1) : -1;

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static void test_put_get(const char *id)
{
	struct api_resp r;
	char buf[256];

	api_resp_init(&r);
	TAP_OK(t_put("alice", id, "a.txt", "hello", 5, &r) == 201, "PUT a new file is 201");
	TAP_OK(t_get("alice", id, "a.txt", buf, sizeof(buf), &r) == 200 && !strcmp(buf, "hello"),
	       "GET returns its bytes");
	TAP_OK(r.content_type && !strcmp(r.content_type, "application/octet-stream") &&
		   r.file_len == 5,
	       "as application/octet-stream with its length");
	TAP_OK(t_put("alice", id, "a.txt", "bye", 3, &r) == 200, "PUT over it is 200");
	TAP_OK(t_get("alice", id, "a.txt", buf, sizeof(buf), &r) == 200 && !strcmp(buf, "bye"),
	       "and replaces it");
	TAP_OK(t_put("alice", id, "x/y/z.bin", "\0\1\2", 3, &r) == 201, "PUT makes the parents");
	TAP_OK(t_get("alice", id, "x/y/z.bin", buf, sizeof(buf), &r) == 200 && buf[1] == 1 &&
		   r.file_len == 3,
	       "binary bytes come back as they went");
	TAP_OK(t_put("alice", id, "empty", "", 0, &r) == 201, "an empty file is fine");
	TAP_OK(t_get("alice", id, "x", buf, sizeof(buf), &r) == 409 &&
		   !strcmp(t_code(&r), "is_a_directory"),
	       "GET a directory is 409 is_a_directory");
	TAP_OK(t_put("alice", id, "x/y", "no", 2, &r) == 409, "PUT over a directory is 409");
	TAP_OK(t_put("alice", id, "a.txt/sub", "no", 2, &r) == 404,
	       "PUT beneath a file is 404 (does not resolve)");
	TAP_OK(t_get("alice", id, "nope", buf, sizeof(buf), &r) == 404 &&
		   !strcmp(t_code(&r), "not_found"),
	       "GET a missing file is 404 not_found");
	api_resp_free(&r);
}

static void test_malformed(const char *id)
{
	static const char *const bad[] = {"../x", "/etc/passwd", "a/../b", "a//b", "a/", ".",
					  "",	  "./a",	 "..",	   "a/./b"};
	struct api_resp r;
	char buf[8], *longp = malloc(5000), *longseg = malloc(300);
	int all = 1;

	api_resp_init(&r);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int g = t_get("alice", id, bad[i], buf, sizeof(buf), &r);
		bool gc = !strcmp(t_code(&r), "malformed_path");
		int p = t_put("alice", id, bad[i], "x", 1, &r);
		int d = t_call(h_file_delete, "alice", id, bad[i], NULL, &r);

		if (g != 400 || !gc || p != 400 || d != 400) {
			all = 0;
			printf("# %s: GET %d PUT %d DELETE %d\n", bad[i], g, p, d);
		}
	}
	TAP_OK(all,
	       "\"..\", absolute, empty and dot segments: 400 malformed_path on GET/PUT/DELETE");
	memset(longp, 'a', 4999);
	longp[4999] = '\0';
	for (int i = 100; i < 4999; i += 100)
		longp[i] = '/';
	TAP_OK(t_put("alice", id, longp, "x", 1, &r) == 400, "a path over 4096 bytes is 400");
	memset(longseg, 'b', 299);
	longseg[299] = '\0';
	TAP_OK(t_put("alice", id, longseg, "x", 1, &r) == 400, "a segment over 255 bytes is 400");
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\"s1\",\"rel_path\":\"a\\u0000b\",\"content\":\"x\"}", &r) == 400 &&
		   !strcmp(t_code(&r), "malformed_path"),
	       "a NUL byte in a path is 400 malformed_path");
	free(longp);
	free(longseg);
	api_resp_free(&r);
}

static void test_symlinks(const char *id)
{
	struct api_resp r;
	char root[512], p[800], buf[400];

	api_resp_init(&r);
	t_disk(root, sizeof(root), "alice", id, true);
	/* What a program in the session could leave: links to a file and to a dir outside. */
	snprintf(p, sizeof(p), "%s/secret", outside);
	{
		FILE *f = fopen(p, "w");

		fputs("SECRET", f);
		fclose(f);
	}
	snprintf(p, sizeof(p), "%s/flink", root);
	snprintf(buf, sizeof(buf), "%s/secret", outside);
	TAP_OK(symlink(buf, p) == 0, "(a symlink to a file outside)");
	snprintf(p, sizeof(p), "%s/dlink", root);
	TAP_OK(symlink(outside, p) == 0, "(a symlink to a dir outside)");

	TAP_OK(t_get("alice", id, "flink", buf, sizeof(buf), &r) == 404 && !strstr(buf, "SECRET"),
	       "GET through a symlink to a file is 404");
	TAP_OK(t_get("alice", id, "dlink/secret", buf, sizeof(buf), &r) == 404,
	       "GET through a symlinked parent dir is 404");
	TAP_OK(t_put("alice", id, "dlink/new", "x", 1, &r) == 404,
	       "PUT into a symlinked dir is 404");
	snprintf(p, sizeof(p), "%s/new", outside);
	TAP_OK(!exists(p), "and writes nothing outside");
	TAP_OK(t_call(h_file_delete, "alice", id, "dlink/secret", NULL, &r) == 404,
	       "DELETE through a symlinked dir is 404");
	TAP_OK(t_call(h_session_move, "alice", id, NULL,
		      "{\"from\":\"dlink/secret\",\"to\":\"stolen\"}", &r) == 404,
	       "move out of a symlinked dir is 404");
	TAP_OK(t_call(h_session_move, "alice", id, NULL, "{\"from\":\"a.txt\",\"to\":\"dlink/a\"}",
		      &r) == 404,
	       "move into a symlinked dir is 404");
	TAP_OK(t_put("alice", id, "flink", "overwritten", 11, &r) == 200,
	       "PUT onto the symlink's own name replaces the link");
	snprintf(p, sizeof(p), "%s/secret", outside);
	slurp(p, buf, sizeof(buf));
	TAP_OK(!strcmp(buf, "SECRET"), "not the file it pointed to");
	TAP_OK(t_call(h_file_delete, "alice", id, "dlink", NULL, &r) == 204,
	       "DELETE of a symlink to a dir removes the link");
	TAP_OK(exists(p), "and nothing it pointed to");
	snprintf(p, sizeof(p), "%s/fifo", root);
	mkfifo(p, 0600);
	TAP_OK(t_get("alice", id, "fifo", buf, sizeof(buf), &r) == 404,
	       "GET a FIFO is 404 (and does not hang)");
	api_resp_free(&r);
}

static void test_quota(const char *id)
{
	struct api_resp r;
	char root[512], *big = calloc(1, 700 << 10);
	uint64_t left;
	struct session *s;
	struct api_req q;

	api_resp_init(&r);
	t_disk(root, sizeof(root), "alice", id, true);
	TAP_OK(t_put("alice", id, "big1", big, 600 << 10, &r) == 201, "600 KiB fits a 1 MiB quota");
	TAP_OK(t_put("alice", id, "big2", big, 600 << 10, &r) == 507 &&
		   !strcmp(t_code(&r), "quota_exceeded"),
	       "another 600 KiB is 507 quota_exceeded");
	TAP_OK(t_call(h_file_get, "alice", id, "big2", NULL, &r) == 404 &&
		   t_count_prefix(root, ".sbx-tmp-") == 0,
	       "and leaves no temp file behind");
	TAP_OK(t_put("alice", id, "big1", big, 700 << 10, &r) == 200,
	       "replacing a file counts only the difference");
	{
		struct t_body b = {big, 100, 0, -1};

		api_resp_free(&r);
		api_resp_init(&r);
		t_req(&q, "alice", id, "liar", NULL);
		q.read_body = t_read;
		q.read_ctx = &b;
		q.body_total = 2 << 20; /* announces more than fits: refused before reading */
		h_file_put(&q, &r);
		TAP_OK(r.status == 507 && b.off == 0,
		       "an announced length over the quota is refused "
		       "before the body is read");
	}
	{
		struct t_body b = {big, 400 << 10, 0, -1};

		api_resp_free(&r);
		api_resp_init(&r);
		t_req(&q, "alice", id, "stream", NULL);
		q.read_body = t_read;
		q.read_ctx = &b;
		q.body_total = -1; /* no length announced: the cut happens while streaming */
		h_file_put(&q, &r);
		TAP_OK(r.status == 507 && !strcmp(t_code(&r), "quota_exceeded") &&
			   strstr(t_str(&r, "error"), "left of the session"),
		       "an unannounced body that outgrows the quota is 507 with what was left");
		TAP_OK(t_count_prefix(root, ".sbx-tmp-") == 0 &&
			   t_call(h_file_get, "alice", id, "stream", NULL, &r) == 404,
		       "and leaves nothing behind");
	}
	t_req(&q, "alice", id, NULL, NULL);
	s = h_session_open(&q, id, &r);
	left = s ? session_quota_left(s) : 0;
	TAP_OK(s && left < (400 << 10) && left > (250 << 10), "session_quota_left: %llu",
	       (unsigned long long)left);
	session_close(s);
	TAP_OK(t_call(h_file_delete, "alice", id, "big1", NULL, &r) == 204, "delete frees it");
	free(big);
	api_resp_free(&r);
}

/* Which 507: the session's quota, or the server's disk (ENOSPC from the filesystem). */
static void test_disk_errors(void)
{
	struct api_resp r;

	api_resp_init(&r);
	h_errno(&r, EDQUOT, "path", "a");
	TAP_OK(r.status == 507 && !strcmp(t_code(&r), "quota_exceeded"),
	       "EDQUOT is 507 quota_exceeded");
	api_resp_free(&r);
	api_resp_init(&r);
	h_errno(&r, ENOSPC, "path", "a");
	TAP_OK(r.status == 507 && !strcmp(t_code(&r), "insufficient_storage") &&
		   strstr(r.headers, "Retry-After:"),
	       "ENOSPC (the server's disk) is 507 insufficient_storage with Retry-After");
	api_resp_free(&r);
}

static void test_atomic(const char *id)
{
	struct api_resp r;
	struct api_req q;
	char root[512], buf[256], *data = malloc(200 << 10);
	struct t_body b = {NULL, 200 << 10, 0, 150 << 10};

	api_resp_init(&r);
	memset(data, 'z', 200 << 10);
	b.buf = data;
	t_disk(root, sizeof(root), "alice", id, true);
	t_put("alice", id, "keep.txt", "original", 8, &r);
	api_resp_free(&r);
	api_resp_init(&r);
	t_req(&q, "alice", id, "keep.txt", NULL);
	q.read_body = t_read;
	q.read_ctx = &b;
	q.body_total = 200 << 10;
	h_file_put(&q, &r);
	TAP_OK(r.status == 400 && !strcmp(t_code(&r), "body_read_failed"),
	       "an upload cut half-way is 400 body_read_failed");
	TAP_OK(t_get("alice", id, "keep.txt", buf, sizeof(buf), &r) == 200 &&
		   !strcmp(buf, "original"),
	       "the old contents are intact");
	TAP_OK(t_count_prefix(root, ".sbx-tmp-") == 0, "no temp file is left");
	free(data);
	api_resp_free(&r);
}

static void test_tree_delete_move(const char *id)
{
	struct api_resp r;
	char buf[64];
	struct json_object *arr, *e, *v;
	bool sorted = true, file_ok = false, dir_ok = false, other_ok = false;

	api_resp_init(&r);
	t_put("alice", id, "t/b.txt", "bb", 2, &r);
	t_put("alice", id, "t/a.txt", "a", 1, &r);
	TAP_OK(t_call(h_files_tree, "alice", id, NULL, NULL, &r) == 200 &&
		   json_object_is_type(r.json, json_type_array),
	       "the tree is a JSON array");
	arr = r.json;
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		const char *path, *type;

		e = json_object_array_get_idx(arr, i);
		json_object_object_get_ex(e, "path", &v);
		path = json_object_get_string(v);
		json_object_object_get_ex(e, "type", &v);
		type = json_object_get_string(v);
		if (i > 0) {
			struct json_object *pv;

			json_object_object_get_ex(json_object_array_get_idx(arr, i - 1), "path",
						  &pv);
			sorted &= strcmp(json_object_get_string(pv), path) < 0;
		}
		if (!strcmp(path, "t/b.txt")) {
			json_object_object_get_ex(e, "size", &v);
			file_ok = !strcmp(type, "file") && json_object_get_int(v) == 2 &&
				  json_object_object_get_ex(e, "mtime", &v) &&
				  strlen(json_object_get_string(v)) == 20;
		}
		if (!strcmp(path, "fifo"))
			other_ok = !strcmp(type, "other");
		if (!strcmp(path, "t"))
			dir_ok = !strcmp(type, "dir");
	}
	TAP_OK(sorted, "sorted by path");
	TAP_OK(file_ok, "a file entry carries type file, size and an ISO mtime");
	TAP_OK(dir_ok && other_ok, "directories are \"dir\", a FIFO is \"other\"");

	TAP_OK(t_call(h_session_move, "alice", id, NULL,
		      "{\"from\":\"t/a.txt\",\"to\":\"t/b.txt\"}", &r) == 409 &&
		   !strcmp(t_code(&r), "already_exists"),
	       "move onto an existing file without overwrite is 409 already_exists");
	TAP_OK(t_call(h_session_move, "alice", id, NULL,
		      "{\"from\":\"t/a.txt\",\"to\":\"t/b.txt\",\"overwrite\":true}", &r) == 200,
	       "with overwrite it replaces it");
	TAP_OK(t_get("alice", id, "t/b.txt", buf, sizeof(buf), &r) == 200 && !strcmp(buf, "a"),
	       "the moved contents are there");
	TAP_OK(t_call(h_session_move, "alice", id, NULL, "{\"from\":\"t\",\"to\":\"u/v/w\"}", &r) ==
		   200,
	       "a directory moves, parents of the target are made");
	TAP_OK(t_call(h_session_move, "alice", id, NULL, "{\"from\":\"u\",\"to\":\"u/v/w/x\"}",
		      &r) == 400,
	       "a directory cannot move into itself (400)");
	TAP_OK(t_call(h_session_move, "alice", id, NULL, "{\"from\":\"a\",\"to\":\"b\",\"x\":1}",
		      &r) == 400 &&
		   !strcmp(t_code(&r), "unknown_field"),
	       "unknown fields in the move body are 400");
	TAP_OK(t_call(h_session_move, "alice", id, NULL,
		      "{\"from\":\"a\",\"to\":\"b\",\"overwrite\":\"yes\"}", &r) == 400 &&
		   !strcmp(t_code(&r), "invalid_type"),
	       "a wrong type is 400");
	TAP_OK(t_call(h_session_move, "alice", id, NULL, "{\"from\":\"nope\",\"to\":\"b\"}", &r) ==
		   404,
	       "moving a missing file is 404");
	TAP_OK(t_call(h_file_delete, "alice", id, "u", NULL, &r) == 204,
	       "DELETE of a directory removes its tree");
	TAP_OK(t_get("alice", id, "u/v/w/b.txt", buf, sizeof(buf), &r) == 404, "it is gone");
	TAP_OK(t_call(h_file_delete, "alice", id, "u", NULL, &r) == 404, "DELETE again is 404");
	api_resp_free(&r);
}

/* A tree larger than the listing bound is cut, and says so in a header. */
static void test_tree_bound(void)
{
	struct api_resp r;
	char id[64], root[512], p[600];
	int ok = 1;

	api_resp_init(&r);
	t_new_session("alice", id, &r);
	t_disk(root, sizeof(root), "alice", id, true);
	for (int d = 0; d < 11 && ok; d++) {
		snprintf(p, sizeof(p), "%s/d%02d", root, d);
		ok = mkdir(p, 0755) == 0;
		for (int i = 0; i < 1000 && ok; i++) {
			int fd;

			snprintf(p, sizeof(p), "%s/d%02d/f%04d", root, d, i);
			fd = open(p, O_CREAT | O_WRONLY, 0644);
			ok = fd >= 0;
			close(fd);
		}
	}
	TAP_OK(ok, "(11011 entries on disk)");
	TAP_OK(t_call(h_files_tree, "alice", id, NULL, NULL, &r) == 200 &&
		   json_object_array_length(r.json) == SESSION_TREE_MAX_ENTRIES,
	       "the tree lists at most %d entries", SESSION_TREE_MAX_ENTRIES);
	TAP_OK(strstr(r.headers, "X-Tree-Truncated: ") != NULL, "and flags the cut in a header");
	TAP_OK(t_call(h_session_delete, "alice", id, NULL, NULL, &r) == 204, "(cleanup)");
	api_resp_free(&r);
}

static void test_seed(void)
{
	struct api_resp r;
	struct api_req q;
	char nid[64];

	api_resp_init(&r);
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"rel_path\":\"placeholder.txt\",\"content\":\"\"}",
		      &r) == 200,
	       "/write_file to a new id creates the session");
	TAP_OK(json_object_get_boolean(json_object_object_get(r.json, "success")) &&
		   !strcmp(t_str(&r, "id"), "my-sess_1") &&
		   !strcmp(t_str(&r, "rel_path"), "placeholder.txt"),
	       "{success, id, rel_path}");
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"rel_path\":\"d/m.py\",\"content\":\"print(1)\\n\","
		      "\"extra\":1}",
		      &r) == 200,
	       "unknown fields are tolerated on seed routes");
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"rel_path\":\"x\",\"content\":5}", &r) == 400 &&
		   !strcmp(t_code(&r), "invalid_type"),
	       "but types are checked");
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\"\",\"rel_path\":\"x\",\"content\":\"\"}", &r) == 400 &&
		   !strcmp(t_code(&r), "invalid_id"),
	       "id \"\" is 400 invalid_id");
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\".\",\"rel_path\":\"x\",\"content\":\"\"}", &r) == 400,
	       "id \".\" is 400");
	TAP_OK(t_call(h_seed_write_file, "alice", NULL, NULL,
		      "{\"id\":\"../x\",\"rel_path\":\"x\",\"content\":\"\"}", &r) == 400,
	       "id \"../x\" is 400");

	t_req(&q, "alice", NULL, NULL, NULL);
	q.method = "GET";
	q.query = "id=my-sess_1&rel_path=d%2Fm.py";
	api_resp_free(&r);
	api_resp_init(&r);
	h_seed_read_file(&q, &r);
	TAP_OK(r.status == 200 && !strcmp(t_str(&r, "content"), "print(1)\n") &&
		   !strcmp(t_str(&r, "rel_path"), "d/m.py") &&
		   !strcmp(t_str(&r, "id"), "my-sess_1"),
	       "/read_file returns {content, id, rel_path} (query decoded)");
	q.query = "id=my-sess_1&rel_path=missing.txt";
	api_resp_free(&r);
	api_resp_init(&r);
	h_seed_read_file(&q, &r);
	TAP_OK(r.status == 404 && !strcmp(t_code(&r), "not_found"),
	       "a missing file is a 404 envelope, not 500");
	q.query = "id=&rel_path=x";
	api_resp_free(&r);
	api_resp_init(&r);
	h_seed_read_file(&q, &r);
	TAP_OK(r.status == 400, "/read_file with id \"\" is 400");
	q.query = "id=my-sess_1&rel_path=a%00b";
	api_resp_free(&r);
	api_resp_init(&r);
	h_seed_read_file(&q, &r);
	TAP_OK(r.status == 400, "/read_file with an encoded NUL is 400");
	q.query = "id=my-sess_1&rel_path=d/m.py";
	q.client = "bob";
	api_resp_free(&r);
	api_resp_init(&r);
	h_seed_read_file(&q, &r);
	TAP_OK(r.status == 404, "bob cannot read alice's seed session");

	TAP_OK(t_call(h_seed_rename_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"old_path\":\"d/m.py\",\"new_path\":\"n.py\"}",
		      &r) == 200 &&
		   !strcmp(t_str(&r, "old_path"), "d/m.py") &&
		   !strcmp(t_str(&r, "new_path"), "n.py"),
	       "/rename_file returns {success, id, old_path, new_path}");
	TAP_OK(t_call(h_seed_rename_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"old_path\":\"gone\",\"new_path\":\"n.py\"}",
		      &r) == 404,
	       "renaming a missing file is 404");
	TAP_OK(t_call(h_seed_fork_session, "alice", NULL, NULL, "{\"id\":\"my-sess_1\"}", &r) ==
		       200 &&
		   strlen(t_str(&r, "new_id")) == 36,
	       "/fork_session returns {new_id}");
	snprintf(nid, sizeof(nid), "%s", t_str(&r, "new_id"));
	{
		char query[128];

		snprintf(query, sizeof(query), "id=%s&rel_path=n.py", nid);
		q.client = "alice";
		q.query = query;
		api_resp_free(&r);
		api_resp_init(&r);
		h_seed_read_file(&q, &r);
		TAP_OK(r.status == 200 && !strcmp(t_str(&r, "content"), "print(1)\n"),
		       "the fork has the file");
	}
	TAP_OK(t_call(h_seed_fork_session, "alice", NULL, NULL, "{\"id\":\"never-made\"}", &r) ==
		   404,
	       "forking a missing session is 404");
	TAP_OK(t_call(h_seed_delete_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"rel_path\":\"n.py\"}", &r) == 200 &&
		   !strcmp(t_str(&r, "rel_path"), "n.py"),
	       "/delete_file returns {success, id, rel_path}");
	TAP_OK(t_call(h_seed_delete_file, "alice", NULL, NULL,
		      "{\"id\":\"my-sess_1\",\"rel_path\":\"n.py\"}", &r) == 404,
	       "deleting it again is 404");
	TAP_OK(t_call(h_seed_delete_file, "alice", NULL, NULL,
		      "{\"id\":\"nobody\",\"rel_path\":\"n.py\"}", &r) == 404,
	       "/delete_file does not create a session");
	api_resp_free(&r);
}

/* Uploads are written to FS_UPLOAD_PREFIX temp files beside their target. Such a file is not a
 * file of the session: the API cannot name it, listings, counts and forks leave it out, and one
 * abandoned by a dead worker goes at the next usage walk. */
static void test_upload_temps(void)
{
	static const char *const reserved[] = {".sbx-tmp-x", "d/.sbx-tmp-x", ".sbx-tmp-/y"};
	struct api_resp r;
	char id[64], nid[64], root[512], p[700], buf[64];
	struct json_object *v = NULL;
	struct timespec old[2] = {{time(NULL) - SESSION_STALE_S - 60, 0},
				  {time(NULL) - SESSION_STALE_S - 60, 0}};
	bool all = true, listed = false;
	int fd;

	api_resp_init(&r);
	t_new_session("alice", id, &r);
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		int put = t_put("alice", id, reserved[i], "x", 1, &r);
		struct json_object *e = NULL, *m = NULL;
		bool code = !strcmp(t_code(&r), "malformed_path") &&
			    json_object_object_get_ex(r.json, "error", &e) &&
			    json_object_object_get_ex(e, "message", &m) &&
			    strstr(json_object_get_string(m), "reserved") != NULL;

		if (put != 400 || !code ||
		    t_get("alice", id, reserved[i], buf, sizeof(buf), &r) != 400)
			all = false;
	}
	TAP_OK(all, "a path segment beginning .sbx-tmp- is reserved: 400 malformed_path");
	TAP_OK(t_put("alice", id, ".sbx-tmp", "x", 1, &r) == 201 &&
		   t_put("alice", id, "a.sbx-tmp-b", "x", 1, &r) == 201,
	       "only that prefix is: .sbx-tmp and a.sbx-tmp-b are ordinary names");

	t_put("alice", id, "d/keep.txt", "12345", 5, &r);
	t_disk(root, sizeof(root), "alice", id, true);
	snprintf(p, sizeof(p), "%s/.sbx-tmp-live", root);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	TAP_OK(fd >= 0 && write(fd, "0123456789", 10) == 10, "(an upload in flight: 10 bytes)");
	close(fd);
	snprintf(p, sizeof(p), "%s/d/.sbx-tmp-dead", root);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	TAP_OK(fd >= 0 && write(fd, "abc", 3) == 3 && futimens(fd, old) == 0,
	       "(an upload its worker left over an hour ago: 3 bytes)");
	close(fd);

	TAP_OK(t_call(h_files_tree, "alice", id, NULL, NULL, &r) == 200, "the tree is 200");
	for (size_t i = 0; r.json && i < json_object_array_length(r.json); i++) {
		json_object_object_get_ex(json_object_array_get_idx(r.json, i), "path", &v);
		listed |= !strncmp(json_object_get_string(v), ".sbx-tmp-", 9) ||
			  strstr(json_object_get_string(v), "/.sbx-tmp-") != NULL;
	}
	TAP_OK(!listed, "and lists no upload temp file");
	t_call(h_session_get, "alice", id, NULL, NULL, &r);
	TAP_OK(json_object_object_get_ex(r.json, "file_count", &v) && json_object_get_int(v) == 3,
	       "file_count counts .sbx-tmp, a.sbx-tmp-b and d/keep.txt only");
	TAP_OK(json_object_object_get_ex(r.json, "bytes_used", &v) &&
		   json_object_get_int(v) == 1 + 1 + 5 + 10,
	       "bytes_used counts the upload in flight (it takes disk), not the abandoned one");
	snprintf(p, sizeof(p), "%s/d/.sbx-tmp-dead", root);
	TAP_OK(!exists(p), "the abandoned temp file was removed by that walk");
	snprintf(p, sizeof(p), "%s/.sbx-tmp-live", root);
	TAP_OK(exists(p), "the one in flight was not");

	TAP_OK(t_call(h_session_fork, "alice", id, NULL, NULL, &r) == 201, "a fork is 201");
	snprintf(nid, sizeof(nid), "%s", t_str(&r, "id"));
	t_disk(root, sizeof(root), "alice", nid, true);
	snprintf(p, sizeof(p), "%s/d/keep.txt", root);
	TAP_OK(exists(p), "the fork has the files");
	TAP_OK(t_count_prefix(root, ".sbx-tmp-") == 0, "but not the upload in flight");
	t_call(h_session_delete, "alice", nid, NULL, NULL, &r);
	t_call(h_session_delete, "alice", id, NULL, NULL, &r);
	api_resp_free(&r);
}

int main(void)
{
	struct api_resp r;
	char id[64];

	t_setup();
	snprintf(outside, sizeof(outside), "%s/outside", t_state);
	mkdir(outside, 0700);
	api_resp_init(&r);
	TAP_OK(t_new_session("alice", id, &r) == 201, "a session to work in");
	test_put_get(id);
	test_malformed(id);
	test_symlinks(id);
	test_quota(id);
	test_disk_errors();
	test_atomic(id);
	test_tree_delete_move(id);
	test_tree_bound();
	test_upload_temps();
	test_seed();
	api_resp_free(&r);
	t_teardown();
	return tap_done();
}
