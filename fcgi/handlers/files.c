/* files.c: the /v1 file routes of a session: tree, raw read, raw atomic write, delete, move.
 * The path rules and the never-follow-a-symlink resolution live in store/fs.c.
 *
 * Deleting a directory removes its whole tree (renamed away first, so it disappears at once; the
 * removal never follows a symlink). Move creates the destination's parents. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handlers.h"

/* "other": a socket, FIFO or device a run left. Listed, moved, deleted, never opened. */
static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	if (S_ISLNK(m))
		return "symlink";
	return "other";
}

static int tree_cb(void *ctx, const char *path, const struct stat *st)
{
	struct json_object *arr = ctx, *o, *name;
	size_t len = strlen(path);
	char mtime[32];

	if (S_ISREG(st->st_mode) && fs_upload_temp_path(path))
		return 0; /* an upload in flight is not a file of the session yet */
	o = json_object_new_object();
	h_iso_time((int64_t)st->st_mtime, mtime, sizeof(mtime));
	/* A run may name files with any bytes; JSON strings are UTF-8. Invalid bytes become U+FFFD
	 * and "path_lossy": true says the path shown is not the name on disk (such a file can be
	 * reached from a run, not by this path through the API). */
	name = api_utf8_string(path, len);
	if (json_object_get_string_len(name) != (int)len ||
	    memcmp(json_object_get_string(name), path, len))
		json_object_object_add(o, "path_lossy", json_object_new_boolean(true));
	json_object_object_add(o, "path", name);
	json_object_object_add(o, "type", json_object_new_string(type_name(st->st_mode)));
	json_object_object_add(
	    o, "size", json_object_new_int64(S_ISDIR(st->st_mode) ? 0 : (int64_t)st->st_size));
	json_object_object_add(o, "mtime", json_object_new_string(mtime));
	json_object_array_add(arr, o);
	return 0;
}

void h_files_tree(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	struct json_object *arr = NULL;
	int fd = -1, rc;

	if (!s)
		return;
	if ((fd = fs_open(s->root_fd, ".", O_RDONLY | O_DIRECTORY, 0)) < 0) {
		h_errno(resp, fd, NULL, ".");
		goto out;
	}
	arr = json_object_new_array();
	rc = fs_walk(fd, SESSION_TREE_MAX_ENTRIES, tree_cb, arr);
	if (rc < 0) {
		h_errno(resp, rc, NULL, ".");
		goto out;
	}
	/* The body stays the plain array of API.md; a cut listing says so in a header. */
	if (rc == 1)
		api_header(resp, "X-Tree-Truncated: %d", SESSION_TREE_MAX_ENTRIES);
	api_json(resp, 200, arr);
	arr = NULL;
out:
	json_object_put(arr);
	if (fd >= 0)
		close(fd);
	session_close(s);
}

void h_file_get(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	const char *path = req->params[1] ? req->params[1] : "";
	struct store_err e = {0};
	struct stat st;
	int fd;

	if (!s)
		return;
	if ((fd = fs_open_file(s->root_fd, path, strlen(path), &st, &e)) < 0) {
		if (e.err == EISDIR)
			api_error(resp, 409, "is_a_directory", "path",
				  "\"%.200s\" is a directory; GET .../files lists the tree.", path);
		else
			h_store_error(resp, &e, &(struct h_where){.field = "path", .path = path});
	} else {
		resp->status = 200;
		resp->file_fd = fd;
		resp->file_len = st.st_size;
		resp->content_type = "application/octet-stream";
	}
	session_close(s);
}

void h_file_put(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	const char *path = req->params[1] ? req->params[1] : "";
	struct fs_mem m = {req->body, req->body ? req->body_len : 0, 0};
	struct fs_source src = FS_MEM_SOURCE(m);
	struct store_err e = {0};
	struct json_object *o;
	bool created = false;
	uint64_t size = 0;

	if (!s)
		return;
	if (req->read_body) {
		src.read = req->read_body;
		src.ctx = req->read_ctx;
		src.total = req->body_total;
	}
	if (fs_write_atomic(s, path, strlen(path), &src, &created, &size, &e) == 0) {
		o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)size));
		api_json(resp, created ? 201 : 200, o);
	} else {
		h_store_error(resp, &e, &(struct h_where){.field = "path", .path = path});
	}
	session_close(s);
}

void h_file_delete(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	const char *path = req->params[1] ? req->params[1] : "";
	struct store_err e = {0};

	if (!s)
		return;
	if (fs_delete(s, path, strlen(path), &e) == 0)
		resp->status = 204;
	else
		h_store_error(resp, &e, &(struct h_where){.field = "path", .path = path});
	session_close(s);
}

void h_session_move(const struct api_req *req, struct api_resp *resp)
{
	static const char *const allowed[] = {"from", "to", "overwrite", NULL};
	struct json_object *obj = api_body_object(req, resp), *o;
	struct session *s = NULL;
	struct store_err e = {0};
	const char *from = NULL, *to = NULL;
	size_t flen = 0, tlen = 0;
	bool overwrite = false;

	if (!obj)
		return;
	if (api_only_fields(obj, allowed, resp) < 0 ||
	    api_get_string(obj, "from", true, &from, &flen, resp) < 0 ||
	    api_get_string(obj, "to", true, &to, &tlen, resp) < 0 ||
	    api_get_bool(obj, "overwrite", &overwrite, resp) < 0)
		goto out;
	if (!(s = h_session_open(req, req->params[0], resp)))
		goto out;
	if (fs_move(s, from, flen, to, tlen, overwrite, &e) == 0) {
		o = json_object_new_object();
		json_object_object_add(o, "from", json_object_new_string(from));
		json_object_object_add(o, "to", json_object_new_string(to));
		api_json(resp, 200, o);
	} else {
		h_store_error(
		    resp, &e,
		    &(struct h_where){.field = "from", .path = from, .field2 = "to", .path2 = to});
	}
out:
	session_close(s);
	json_object_put(obj);
}
