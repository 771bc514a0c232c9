/* handlers.h: what the handlers share: the store's configuration drawn from the service's, the
 * session lookup every session route starts with, and the one table (errors.c) that turns a
 * store failure into an HTTP status, error code, message and Retry-After. */
#ifndef SBX_HANDLERS_H
#define SBX_HANDLERS_H

#include "../http/core.h"
#include "../store/store.h"

/* The store's view of cfg (a static copy refreshed at each call; set_quota is the broker's). */
const struct store_conf *h_store(const struct config *cfg);

/* Where a failed call was pointed: the session id, and its one or two paths with the request's
 * field names for them (any may be NULL). */
struct h_where {
	const char *id;
	const char *field, *path;   /* e->at == 0 */
	const char *field2, *path2; /* e->at == 1 */
};

/* Fill resp from e through the error table. */
void h_store_error(struct api_resp *resp, const struct store_err *e, const struct h_where *w);
/* The same for a bare errno about path (field names it; both may be NULL). */
void h_errno(struct api_resp *resp, int err, const char *field, const char *path);

/* session_open for req's client: the session, or NULL with resp filled. */
struct session *h_session_open(const struct api_req *req, const char *id, struct api_resp *resp);
/* Seed routes: as h_session_open, but the first use creates the session (id chosen by client). */
struct session *h_session_open_or_create(const struct api_req *req, const char *id,
					 struct api_resp *resp);

/* "2026-11-21T21:56:35Z" into out (at least 21 bytes). */
void h_iso_time(int64_t t, char *out, size_t outlen);
/* Add key: the ISO time of t to the object o. */
void h_json_time(struct json_object *o, const char *key, int64_t t);

/* 0 when the disk reserve allows a new run, session or write; else -1 with a 507 filled. */
int h_reserve_check(const struct api_req *req, struct api_resp *resp);

#endif
