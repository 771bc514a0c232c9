/* seed.c: the seed-compatible file routes (/write_file, /read_file, /delete_file,
 * /rename_file, /fork_session) with the shapes of the basic-code-exec API, on the same session
 * store as /v1 and its path rules once the seed's normalisation (seed_compat.c) is done. Unlike
 * /v1, unknown body fields are tolerated (that client sends exactly what it sends), but types are
 * checked; the client picks the session id and the first write creates the session. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handlers.h"
#include "seed_compat.h"

#define SEED_READ_MAX (32ull << 20) /* /read_file returns the file inside a JSON string */

/* The "id" member: present, a string, a valid id. 0 or -1 with a 400 filled. */
static int seed_id(struct json_object *obj, const char **id, struct api_resp *resp)
{
	size_t len = 0;

	if (api_get_string(obj, "id", true, id, &len, resp) < 0)
		return -1;
	if (!session_id_valid(*id, len)) {
		api_error(resp, 400, "invalid_id", "id",
			  "A session id is 1 to 64 of A-Z, a-z, 0-9, \"_\" and \"-\".");
		return -1;
	}
	return 0;
}

/* Answers 200 {"success": true, "id": id, key: path[, key2: path2]}, the seed's success shape;
 * key2 NULL leaves the second path out. */
static void seed_ok(struct api_resp *resp, const char *id, const char *key, const char *path,
		    const char *key2, const char *path2)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "success", json_object_new_boolean(1));
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, key, json_object_new_string(path));
	if (key2)
		json_object_object_add(o, key2, json_object_new_string(path2));
	api_json(resp, 200, o);
}

void h_seed_write_file(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *obj = api_body_object(req, resp);
	struct session *s = NULL;
	const char *id = NULL, *path = NULL, *content = NULL;
	size_t plen = 0, clen = 0, nlen = 0;
	bool created = false;
	struct store_err e = {0};
	char *norm = NULL;

	if (!obj)
		return;
	if (seed_id(obj, &id, resp) < 0 ||
	    api_get_string(obj, "rel_path", true, &path, &plen, resp) < 0 ||
	    api_get_string(obj, "content", true, &content, &clen, resp) < 0 ||
	    !(norm = seed_path(path, plen, "rel_path", &nlen, resp)))
		goto out;
	if (!(s = h_session_open_or_create(req, id, resp)))
		goto out;
	{
		struct fs_mem m = {content, clen, 0};
		struct fs_source src = FS_MEM_SOURCE(m);

		if (fs_write_atomic(s, norm, nlen, &src, &created, NULL, &e) < 0) {
			h_store_error(resp, &e,
				      &(struct h_where){.field = "rel_path", .path = path});
			goto out;
		}
	}
	seed_ok(resp, id, "rel_path", path, NULL, NULL);
out:
	free(norm);
	session_close(s);
	json_object_put(obj);
}

/* The decoded value of key in a query string ("a=1&b=x%2Fy", '+' is a space). Returns a malloc'ed
 * string the caller frees, with its length in *len; NULL when absent, or (with *bad set) when
 * malformed or containing a NUL. */
static char *query_param(const char *query, const char *key, size_t *len, bool *bad)
{
	size_t klen = strlen(key);
	const char *p = query ? query : "";

	*bad = false;
	while (*p) {
		const char *end = strchr(p, '&');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			const char *v = p + klen + 1;
			size_t vn = n - klen - 1, o = 0;
			char *out = malloc(vn + 1);

			if (!out) {
				*bad = true;
				return NULL;
			}
			for (size_t i = 0; i < vn; i++) {
				if (v[i] == '%') {
					int h = i + 2 < vn ? route_hexval(v[i + 1]) : -1;
					int l = i + 2 < vn ? route_hexval(v[i + 2]) : -1;

					if (h < 0 || l < 0 || (h == 0 && l == 0)) {
						free(out);
						*bad = true;
						return NULL;
					}
					out[o++] = (char)(h * 16 + l);
					i += 2;
				} else {
					out[o++] = v[i] == '+' ? ' ' : v[i];
				}
			}
			out[o] = '\0';
			*len = o;
			return out;
		}
		p += n + (end ? 1 : 0);
	}
	return NULL;
}

void h_seed_read_file(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = NULL;
	struct json_object *o;
	char *id = NULL, *path = NULL, *buf = NULL, *norm;
	size_t idlen = 0, plen = 0, got = 0;
	bool bad_id = false, bad_path = false;
	struct store_err e = {0};
	struct stat st;
	int fd = -1;

	id = query_param(req->query, "id", &idlen, &bad_id);
	path = query_param(req->query, "rel_path", &plen, &bad_path);
	if (!id || !session_id_valid(id, idlen)) {
		if (!id && !bad_id)
			api_error(resp, 400, "missing_field", "id",
				  "Query parameter \"id\" is required.");
		else
			api_error(resp, 400, "invalid_id", "id",
				  "A session id is 1 to 64 of A-Z, a-z, 0-9, \"_\" and \"-\".");
		goto out;
	}
	if (!path) {
		if (bad_path)
			h_errno(resp, EINVAL, "rel_path", "");
		else
			api_error(resp, 400, "missing_field", "rel_path",
				  "Query parameter \"rel_path\" is required.");
		goto out;
	}
	/* The seed answers with the normalised path; so do we. */
	if (!(norm = seed_path(path, plen, "rel_path", &plen, resp)))
		goto out;
	free(path);
	path = norm;
	if (!(s = h_session_open(req, id, resp)))
		goto out;
	if ((fd = fs_open_file(s->root_fd, path, plen, &st, &e)) < 0) {
		h_store_error(resp, &e, &(struct h_where){.field = "rel_path", .path = path});
		goto out;
	}
	if ((uint64_t)st.st_size > SEED_READ_MAX) {
		api_error(resp, 413, "file_too_large", "rel_path",
			  "\"%.200s\" is larger than %llu bytes; read it with GET "
			  "/v1/sessions/{id}/files/{path}.",
			  path, SEED_READ_MAX);
		goto out;
	}
	/* The size is re-checked while reading: the file may grow under a running program. */
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		h_errno(resp, ENOMEM, "rel_path", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			h_errno(resp, errno, "rel_path", path);
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	o = json_object_new_object();
	json_object_object_add(o, "content", api_utf8_string(buf, got));
	json_object_object_add(o, "id", json_object_new_string(id));
	json_object_object_add(o, "rel_path", json_object_new_string(path));
	api_json(resp, 200, o);
out:
	if (fd >= 0)
		close(fd);
	session_close(s);
	free(buf);
	free(id);
	free(path);
}

void h_seed_delete_file(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *obj = api_body_object(req, resp);
	struct session *s = NULL;
	const char *id = NULL, *path = NULL;
	size_t plen = 0, nlen = 0;
	struct store_err e = {0};
	char *norm = NULL;

	if (!obj)
		return;
	if (seed_id(obj, &id, resp) < 0 ||
	    api_get_string(obj, "rel_path", true, &path, &plen, resp) < 0 ||
	    !(norm = seed_path(path, plen, "rel_path", &nlen, resp)))
		goto out;
	if (!(s = h_session_open(req, id, resp)))
		goto out;
	if (fs_delete(s, norm, nlen, &e) < 0) {
		h_store_error(resp, &e, &(struct h_where){.field = "rel_path", .path = path});
		goto out;
	}
	seed_ok(resp, id, "rel_path", path, NULL, NULL);
out:
	free(norm);
	session_close(s);
	json_object_put(obj);
}

void h_seed_rename_file(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *obj = api_body_object(req, resp);
	struct session *s = NULL;
	const char *id = NULL, *from = NULL, *to = NULL;
	size_t flen = 0, tlen = 0, nflen = 0, ntlen = 0;
	struct store_err e = {0};
	char *nfrom = NULL, *nto = NULL;

	if (!obj)
		return;
	if (seed_id(obj, &id, resp) < 0 ||
	    api_get_string(obj, "old_path", true, &from, &flen, resp) < 0 ||
	    api_get_string(obj, "new_path", true, &to, &tlen, resp) < 0 ||
	    !(nfrom = seed_path(from, flen, "old_path", &nflen, resp)) ||
	    !(nto = seed_path(to, tlen, "new_path", &ntlen, resp)))
		goto out;
	if (!(s = h_session_open(req, id, resp)))
		goto out;
	/* The seed service replaced an existing destination (os.rename); so do we. */
	if (fs_move(s, nfrom, nflen, nto, ntlen, true, &e) < 0) {
		h_store_error(
		    resp, &e,
		    &(struct h_where){
			.field = "old_path", .path = from, .field2 = "new_path", .path2 = to});
		goto out;
	}
	seed_ok(resp, id, "old_path", from, "new_path", to);
out:
	free(nfrom);
	free(nto);
	session_close(s);
	json_object_put(obj);
}

void h_seed_fork_session(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *obj = api_body_object(req, resp), *o;
	struct session *s = NULL;
	const char *id = NULL;
	char new_id[SESSION_ID_MAX + 1];
	struct store_err e = {0};

	if (!obj)
		return;
	if (seed_id(obj, &id, resp) < 0)
		goto out;
	if (!(s = h_session_open(req, id, resp)))
		goto out;
	if (session_fork(s, req->client, new_id, sizeof(new_id), &e) < 0) {
		h_store_error(resp, &e, &(struct h_where){.id = id});
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "new_id", json_object_new_string(new_id));
	api_json(resp, 200, o);
out:
	session_close(s);
	json_object_put(obj);
}
