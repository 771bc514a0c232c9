/* session_special.c: what a run can leave in a session, seen through the file routes: a Unix
 * socket or a FIFO (listed as "other", never opened: 404, never 500), a file name that is not
 * UTF-8 (the listing stays valid JSON: U+FFFD and "path_lossy"); and the disk reserve (507
 * insufficient_storage with Retry-After before anything new is written). */
#include <sys/socket.h>
#include <sys/un.h>

#include "session_test.h"

/* A Unix socket bound at dir/name, as a server a run started would leave it. 0 or -1. */
static int make_socket(const char *dir, const char *name)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;

	if (fd < 0 || chdir(dir) < 0)
		return -1;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", name);
	rc = bind(fd, (struct sockaddr *)&un, sizeof(un));
	close(fd);
	return chdir("/") < 0 ? -1 : rc;
}

/* The tree entry of path in a listing, or NULL. */
static struct json_object *entry(struct json_object *arr, const char *path)
{
	for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i), *p = NULL;

		if (json_object_object_get_ex(o, "path", &p) &&
		    !strcmp(json_object_get_string(p), path))
			return o;
	}
	return NULL;
}

static const char *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/* True when s is valid UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF). */
static bool utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s, n = c < 0x80	      ? 0
				     : (c >> 5) == 6  ? 1
				     : (c >> 4) == 14 ? 2
				     : (c >> 3) == 30 ? 3
						      : 9;
		unsigned cp = n == 0 ? c : n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;

		if (n == 9)
			return false;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

static void test_special_files(void)
{
	struct api_resp r;
	char id[64], root[512], p[700], buf[64];

	api_resp_init(&r);
	TAP_OK(t_new_session("alice", id, &r) == 201, "a session");
	t_disk(root, sizeof(root), "alice", id, true);
	TAP_OK(make_socket(root, "sock") == 0, "(a run leaves a Unix socket in it)");
	snprintf(p, sizeof(p), "%s/fifo", root);
	TAP_OK(mkfifo(p, 0600) == 0, "(and a FIFO)");

	TAP_OK(t_call(h_files_tree, "alice", id, NULL, NULL, &r) == 200 &&
		   !strcmp(member(entry(r.json, "sock"), "type"), "other") &&
		   !strcmp(member(entry(r.json, "fifo"), "type"), "other"),
	       "the tree lists the socket and the FIFO as \"other\"");
	TAP_OK(
	    t_get("alice", id, "sock", buf, sizeof(buf), &r) == 404 &&
		!strcmp(t_code(&r), "not_found") &&
		strstr(member(json_object_object_get(r.json, "error"), "message"), "special file"),
	    "GET of the socket is 404 not_found naming it a special file (it was 500)");
	TAP_OK(t_get("alice", id, "fifo", buf, sizeof(buf), &r) == 404,
	       "GET of the FIFO is 404, without blocking");
	snprintf(p, sizeof(p), "id=%s&rel_path=sock", id);
	{
		struct api_req q;

		api_resp_free(&r);
		api_resp_init(&r);
		t_req(&q, "alice", NULL, NULL, NULL);
		q.method = "GET";
		q.query = p;
		h_seed_read_file(&q, &r);
		TAP_OK(r.status == 404, "the seed's /read_file of the socket: 404 (%d)", r.status);
	}
	TAP_OK(t_call(h_session_fork, "alice", id, NULL, NULL, &r) == 201,
	       "fork with the socket and the FIFO in the session: 201");
	TAP_OK(t_call(h_session_move, "alice", id, NULL, "{\"from\":\"sock\",\"to\":\"d/sock\"}",
		      &r) == 200,
	       "move of the socket: 200");
	TAP_OK(t_call(h_file_delete, "alice", id, "d/sock", NULL, &r) == 204 &&
		   t_call(h_file_delete, "alice", id, "fifo", NULL, &r) == 204,
	       "delete of the socket and the FIFO: 204");
	api_resp_free(&r);
}

static void test_names(void)
{
	struct api_resp r;
	char id[64], root[512], p[700];
	const char *text;
	struct json_object *e;

	api_resp_init(&r);
	t_new_session("alice", id, &r);
	t_disk(root, sizeof(root), "alice", id, true);
	snprintf(p, sizeof(p), "%s/bad\xff\xfe.txt", root);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	snprintf(p, sizeof(p), "%s/caf\xc3\xa9", root);
	close(open(p, O_CREAT | O_WRONLY, 0600));
	TAP_OK(t_call(h_files_tree, "alice", id, NULL, NULL, &r) == 200,
	       "tree with a non-UTF-8 name");
	text = r.json ? json_object_to_json_string_ext(r.json, JSON_C_TO_STRING_PLAIN) : "";
	TAP_OK(utf8_valid((const unsigned char *)text), "the listing is valid UTF-8 JSON");
	e = entry(r.json, "bad\xef\xbf\xbd\xef\xbf\xbd.txt");
	TAP_OK(e && json_object_get_boolean(json_object_object_get(e, "path_lossy")),
	       "invalid bytes become U+FFFD and the entry says path_lossy");
	e = entry(r.json, "caf\xc3\xa9");
	TAP_OK(e && !json_object_object_get(e, "path_lossy"), "a valid UTF-8 name is as is");
	api_resp_free(&r);
}

static void test_reserve(void)
{
	struct api_resp r;
	char id[64];

	api_resp_init(&r);
	t_new_session("bob", id, &r);
	t_cfg.disk_reserve_mb = INT64_MAX >> 21; /* more than any disk: below the reserve */
	TAP_OK(
	    t_call(h_sessions_create, "bob", NULL, NULL, NULL, &r) == 507 &&
		!strcmp(t_code(&r), "insufficient_storage") && strstr(r.headers, "Retry-After:"),
	    "below the disk reserve: POST /v1/sessions is 507 insufficient_storage, Retry-After");
	TAP_OK(t_put("bob", id, "f", "x", 1, &r) == 507 &&
		   !strcmp(t_code(&r), "insufficient_storage"),
	       "an upload too");
	TAP_OK(t_call(h_session_fork, "bob", id, NULL, NULL, &r) == 507, "a fork too");
	TAP_OK(t_call(h_seed_write_file, "bob", NULL, NULL,
		      "{\"id\":\"seed-new\",\"rel_path\":\"a\",\"content\":\"x\"}", &r) == 507,
	       "a seed write that would create its session too");
	TAP_OK(t_call(h_files_tree, "bob", id, NULL, NULL, &r) == 200 &&
		   t_call(h_file_delete, "bob", id, "nothing", NULL, &r) == 404,
	       "reading and deleting still work");
	t_cfg.disk_reserve_mb = 0;
	TAP_OK(t_put("bob", id, "f", "x", 1, &r) == 201,
	       "without a reserve the upload goes through");
	api_resp_free(&r);
}

int main(void)
{
	t_setup();
	test_special_files();
	test_names();
	test_reserve();
	t_teardown();
	return tap_done();
}
