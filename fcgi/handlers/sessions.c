/* sessions.c: the /v1 session routes: create, list, info, delete, fork, and the ids new
 * sessions get. The store itself (layout, locking, expiry, caps) is session.c. */
#include <errno.h>
#include <stdio.h>

#include "../store/store.h"

/* A new server-made session id into out (at least SESSION_ID_MAX + 1 bytes): a UUID, prefixed
 * with "<shard>-" when this host has a shard name, so nginx can route every later request on
 * the session to this host (nginx/sbx-cluster.conf.in). 0, or -1 when getrandom fails. */
int session_new_id(const struct config *cfg, char *out, size_t outlen)
{
	char uuid[40];

	if (session_uuid(uuid, sizeof(uuid)) < 0)
		return -1;
	if (!cfg->shard || !cfg->shard[0])
		return snprintf(out, outlen, "%s", uuid) < (int)outlen ? 0 : -1;
	return snprintf(out, outlen, "%s-%s", cfg->shard, uuid) < (int)outlen ? 0 : -1;
}

/* An optional empty JSON object body: anything in it is an unknown field. 0 or -1 (400). */
static int empty_body(const struct api_req *req, struct api_resp *resp)
{
	static const char *const none[] = {NULL};
	struct json_object *obj;
	int rc;

	if (!req->body || req->body_len == 0)
		return 0;
	if (!(obj = api_body_object(req, resp)))
		return -1;
	rc = api_only_fields(obj, none, resp);
	json_object_put(obj);
	return rc;
}

void h_sessions_create(const struct api_req *req, struct api_resp *resp)
{
	struct session s = {.cfg = req->cfg};
	struct json_object *o;
	char id[SESSION_ID_MAX + 1];

	if (empty_body(req, resp) < 0 || session_create(req, &s, id, sizeof(id), resp) < 0)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(id));
	session_json_time(o, "created_at", s.created_at);
	session_json_time(o, "expires_at", s.expires_at);
	api_json(resp, 201, o);
}

void h_sessions_list(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *arr = session_list(req, resp);

	/* A plain array, like the file tree (and as the OpenAPI document says). */
	if (arr)
		api_json(resp, 200, arr);
}

void h_session_get(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = session_open(req, req->params[0], resp);
	struct json_object *o;
	uint64_t bytes = 0, files = 0;
	int e;

	if (!s)
		return;
	if ((e = fs_usage(s->root_fd, &bytes, &files)) < 0 && e != -EDQUOT) {
		fs_error(resp, -e, NULL, "");
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(s->id));
	session_json_time(o, "created_at", s->created_at);
	session_json_time(o, "last_used_at", s->last_used_at);
	session_json_time(o, "expires_at", s->expires_at);
	json_object_object_add(o, "bytes_used", json_object_new_int64((int64_t)bytes));
	json_object_object_add(o, "file_count", json_object_new_int64((int64_t)files));
	if (s->cfg->session_quota_bytes)
		json_object_object_add(o, "quota_bytes",
				       json_object_new_int64((int64_t)s->cfg->session_quota_bytes));
	api_json(resp, 200, o);
out:
	session_close(s);
}

void h_session_delete(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = session_open(req, req->params[0], resp);

	if (!s)
		return;
	if (session_remove(s, resp) == 0)
		resp->status = 204;
	session_close(s);
}

void h_session_fork(const struct api_req *req, struct api_resp *resp)
{
	struct session *s;
	struct json_object *o;
	char id[SESSION_ID_MAX + 1];

	if (empty_body(req, resp) < 0)
		return;
	if (!(s = session_open(req, req->params[0], resp)))
		return;
	if (session_fork(req, s, id, sizeof(id), resp) == 0) {
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_string(id));
		api_json(resp, 201, o);
	}
	session_close(s);
}
