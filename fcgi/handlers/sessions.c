/* sessions.c: the /v1 session routes: create, list, info, delete, fork, and the ids new
 * sessions get. The store itself (layout, locking, expiry, caps) is store/session.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "handlers.h"
#include "packages.h"

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

static void sessions_create(const struct api_req *req, struct api_resp *resp)
{
	struct session s = {0};
	struct store_err e = {0};
	struct json_object *o;

	if (empty_body(req, resp) < 0)
		return;
	if (session_create(h_store(req->cfg), req->client, &s, &e) < 0) {
		h_store_error(resp, &e, NULL);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(s.id));
	h_json_time(o, "created_at", s.created_at);
	h_json_time(o, "expires_at", s.expires_at);
	api_json(resp, 201, o);
}

void h_sessions_list(const struct api_req *req, struct api_resp *resp)
{
	struct session_info *v = NULL;
	struct store_err e = {0};
	struct json_object *arr;
	size_t n = 0;

	if (session_list(h_store(req->cfg), req->client, &v, &n, &e) < 0) {
		h_store_error(resp, &e, NULL);
		return;
	}
	/* A plain array, like the file tree (and as the OpenAPI document says). */
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_string(v[i].id));
		h_json_time(o, "created_at", v[i].created_at);
		h_json_time(o, "last_used_at", v[i].last_used_at);
		h_json_time(o, "expires_at", v[i].expires_at);
		json_object_array_add(arr, o);
	}
	free(v);
	api_json(resp, 200, arr);
}

void h_session_get(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	struct json_object *o;
	uint64_t bytes = 0, files = 0;
	int e;

	if (!s)
		return;
	if ((e = fs_usage(s->root_fd, &bytes, &files)) < 0 && e != -EDQUOT) {
		h_errno(resp, e, NULL, "");
		goto out;
	}
	o = json_object_new_object();
	json_object_object_add(o, "id", json_object_new_string(s->id));
	h_json_time(o, "created_at", s->created_at);
	h_json_time(o, "last_used_at", s->last_used_at);
	h_json_time(o, "expires_at", s->expires_at);
	json_object_object_add(o, "bytes_used", json_object_new_int64((int64_t)bytes));
	json_object_object_add(o, "file_count", json_object_new_int64((int64_t)files));
	if (s->conf->quota_bytes)
		json_object_object_add(o, "quota_bytes",
				       json_object_new_int64((int64_t)s->conf->quota_bytes));
	pkg_session_list(s, o);
	api_json(resp, 200, o);
out:
	session_close(s);
}

void h_session_delete(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	struct store_err e = {0};

	if (!s)
		return;
	/* session_remove ends its contexts and background runs (the store's runs_end hook). */
	if (session_remove(s, &e) == 0)
		resp->status = 204;
	else
		h_store_error(resp, &e, &(struct h_where){.id = s->id});
	session_close(s);
}

static void session_fork_one(const struct api_req *req, struct api_resp *resp)
{
	struct session *s;
	struct store_err e = {0};
	struct json_object *o;
	char id[SESSION_ID_MAX + 1];

	if (empty_body(req, resp) < 0)
		return;
	if (!(s = h_session_open(req, req->params[0], resp)))
		return;
	if (session_fork(s, req->client, id, sizeof(id), &e) == 0) {
		o = json_object_new_object();
		json_object_object_add(o, "id", json_object_new_string(id));
		api_json(resp, 201, o);
	} else {
		h_store_error(resp, &e, &(struct h_where){.id = s->id});
	}
	session_close(s);
}

/* Creates are idempotent with an Idempotency-Key: a retried create makes one session. */
void h_sessions_create(const struct api_req *req, struct api_resp *resp)
{
	h_idempotent(req, resp, sessions_create);
}

void h_session_fork(const struct api_req *req, struct api_resp *resp)
{
	h_idempotent(req, resp, session_fork_one);
}
