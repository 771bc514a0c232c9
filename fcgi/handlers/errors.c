/* errors.c: the one place where a store failure becomes what the client is told. The store
 * returns -errno with a reason (struct store_err); the table below maps (errno, reason) to the
 * HTTP status, the error code of API.md, whether the request field is named, Retry-After, and
 * the message. The first row that matches wins; a reason of STORE_WHY_NONE in a row matches
 * any reason. Messages may hold {path}, {id}, {left}, {limit}, {msg} and {errno}. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "handlers.h"

struct err_row {
	int err;
	int why; /* enum store_why or enum h_why */
	int status;
	const char *code;
	bool field;		/* the envelope names the request field the path came from */
	unsigned retry_after_s; /* 0: no Retry-After */
	const char *msg;
};

#define STR_(x) #x
#define STR(x) STR_(x)
#define PATH_RULES                                                                                 \
	"The path must be relative, without \"..\", \".\" or empty segments, at most " STR(        \
	    SESSION_PATH_MAX) " bytes (" STR(SESSION_NAME_MAX) " per segment); names beginning "   \
							       "\"" FS_UPLOAD_PREFIX               \
							       "\" are reserved for uploads in "   \
							       "flight."

static const struct err_row err_table[] = {
    {EINVAL, STORE_WHY_ID, 400, "invalid_id", true, 0,
     "A session id is 1 to 64 of A-Z, a-z, 0-9, \"_\" and \"-\"."},
    {EINVAL, STORE_WHY_INTO_SELF, 400, "invalid_move", true, 0,
     "A directory cannot be moved into itself."},
    {EINVAL, STORE_WHY_NONE, 400, "malformed_path", true, 0, PATH_RULES},
    {ENAMETOOLONG, STORE_WHY_NONE, 400, "malformed_path", true, 0, PATH_RULES},
    {EIO, STORE_WHY_SOURCE, 400, "body_read_failed", false, 0,
     "The request body could not be read completely."},
    {EACCES, STORE_WHY_CLIENT, 401, "unauthorized", false, 0,
     "This route needs an authenticated client."},
    {ENOENT, STORE_WHY_SESSION, 404, "session_not_found", false, 0,
     "No session \"{id}\" (it may have expired or been deleted)."},
    {ENXIO, STORE_WHY_NONE, 404, "not_found", true, 0,
     "\"{path}\" is a special file (a socket, FIFO or device), not a regular file: it can be "
     "listed, moved and deleted, not read."},
    {ENOENT, STORE_WHY_NONE, 404, "not_found", true, 0,
     "No file \"{path}\" in this session (symlinks are not followed)."},
    {ELOOP, STORE_WHY_DEPTH, 409, "tree_too_deep", false, 0,
     "The session's directory tree is deeper than " STR(SESSION_WALK_MAX_DEPTH) " levels."},
    {ELOOP, STORE_WHY_NONE, 404, "not_found", true, 0,
     "No file \"{path}\" in this session (symlinks are not followed)."},
    {EXDEV, STORE_WHY_NONE, 404, "not_found", true, 0,
     "No file \"{path}\" in this session (symlinks are not followed)."},
    {ENOTDIR, STORE_WHY_NONE, 404, "not_found", true, 0,
     "No file \"{path}\" in this session (symlinks are not followed)."},
    {EISDIR, STORE_WHY_NONE, 409, "is_a_directory", true, 0, "\"{path}\" is a directory."},
    {EEXIST, STORE_WHY_NONE, 409, "already_exists", true, 0,
     "\"{path}\" already exists; pass \"overwrite\": true to replace it."},
    {ENOTEMPTY, STORE_WHY_NONE, 409, "directory_not_empty", true, 0,
     "\"{path}\" is a directory that is not empty."},
    {EUSERS, STORE_WHY_SESSIONS, 409, "too_many_sessions", false, 0,
     "This client already has {limit} sessions, the maximum (sessions.per_client, and its "
     "share of the disk at full quota); delete one first."},
    {EACCES, STORE_WHY_NONE, 403, "permission_denied", true, 0,
     "\"{path}\" is not accessible (its permissions were changed)."},
    {EPERM, STORE_WHY_NONE, 403, "permission_denied", true, 0,
     "\"{path}\" is not accessible (its permissions were changed)."},
    {EDQUOT, STORE_WHY_QUOTA, 507, "quota_exceeded", false, 0,
     "This write does not fit: {left} bytes are left of the session's {limit}-byte quota; "
     "delete files first."},
    {EDQUOT, STORE_WHY_NONE, 507, "quota_exceeded", false, 0,
     "The session's disk quota is exhausted; delete files first."},
    {EFBIG, STORE_WHY_NONE, 507, "quota_exceeded", false, 0,
     "The session's disk quota is exhausted; delete files first."},
    /* The server's disk, not this session's quota: nothing was written, and the caller's own
     * deletions may not help. */
    {ENOSPC, STORE_WHY_RESERVE, 507, "insufficient_storage", false, 30,
     "The server's disk is at its reserve ({left} bytes free, {limit} kept free); nothing was "
     "written. Retry later."},
    {ENOSPC, STORE_WHY_NONE, 507, "insufficient_storage", false, 30,
     "The server is out of disk space; nothing was written. Retry later."},
    /* The run path and admission. */
    /* Retry-After: when the client's first run must end (routes.c, admit_retry_after_s). */
    {EUSERS, H_WHY_ADMIT_CLIENT, 429, "too_many_runs", false, 0,
     "You have {limit} runs in progress, the most allowed; retry when one ends."},
    {EBUSY, H_WHY_ADMIT_MACHINE, 503, "busy", false, 2,
     "The service is running as much code as it can; retry shortly."},
    {EAGAIN, H_WHY_SLOTS, 503, "busy", false, 2,
     "Every sandbox slot stayed busy for {limit} ms; retry shortly."},
    /* Contexts. */
    {EDQUOT, H_WHY_CTX_CLIENT, 429, "too_many_contexts", false, 5,
     "You have {limit} live contexts, the most allowed (contexts.per_client); delete one, or "
     "retry when an idle one has been stopped."},
    {EAGAIN, H_WHY_CTX_MACHINE, 503, "busy", false, 5,
     "The machine holds as many contexts as it may (their number or their memory); retry "
     "later."},
    {EBUSY, H_WHY_CTX_BUSY, 409, "context_busy", false, 1,
     "Another call kept this context busy for {limit} ms; retry when its cell ends, or "
     "interrupt it."},
    {ENOENT, H_WHY_CTX_MISSING, 404, "context_not_found", false, 0,
     "No context \"{msg}\" in this session (it may have been deleted)."},
    {EUSERS, H_WHY_CTX_MANY, 409, "too_many_contexts", false, 0,
     "This session has {limit} contexts, the most it may record; delete one first."},
    /* Background runs. */
    {EDQUOT, H_WHY_RUN_CAP, 429, "too_many_runs", false, 5,
     "You have {limit} background runs live here, the most allowed (runs.background_per_client "
     "/ runs.background_per_session); kill one, or retry when one ends."},
    {EAGAIN, H_WHY_RUN_MACHINE, 503, "busy", false, 5,
     "The machine holds as many background runs as it may; retry later."},
    {0, H_WHY_SANDBOX, 500, "internal_error", false, 0, "The sandbox failed: {msg}"},
    {0, H_WHY_STDIN, 500, "internal_error", false, 0, "Cannot hold stdin: {errno}."},
    {0, STORE_WHY_VOLUME, 500, "internal_error", false, 0,
     "The disk quota of the run's directory could not be set: {msg}"},
    {0, STORE_WHY_NONE, 500, "internal_error", false, 0, "File operation failed: {errno}."},
};

/* The row for (err, why): an exact reason first, then a row of any reason; err 0 matches any. */
static const struct err_row *err_find(int err, int why)
{
	size_t n = sizeof(err_table) / sizeof(err_table[0]);

	for (size_t i = 0; i < n; i++)
		if ((err_table[i].err == err || !err_table[i].err) && err_table[i].why == why &&
		    why != STORE_WHY_NONE)
			return &err_table[i];
	for (size_t i = 0; i < n; i++)
		if ((err_table[i].err == err || !err_table[i].err) &&
		    err_table[i].why == STORE_WHY_NONE)
			return &err_table[i];
	return &err_table[n - 1];
}

/* Expand the row's message into out. */
static void err_text(char *out, size_t outlen, const char *msg, const struct store_err *e,
		     const char *id, const char *path)
{
	size_t o = 0;

	out[0] = '\0';
	for (const char *p = msg; *p && o + 1 < outlen;) {
		char val[256];
		const char *v = NULL;
		size_t klen = 0;

		if (*p == '{') {
			static const char *const keys[] = {"{path}",  "{id}",  "{left}",
							   "{limit}", "{msg}", "{errno}"};

			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]) && !v; k++) {
				if (strncmp(p, keys[k], strlen(keys[k])))
					continue;
				klen = strlen(keys[k]);
				switch (k) {
				case 0:
					snprintf(val, sizeof(val), "%.200s", path ? path : "");
					break;
				case 1:
					snprintf(val, sizeof(val), "%.64s", id ? id : "");
					break;
				case 2:
					snprintf(val, sizeof(val), "%llu",
						 (unsigned long long)e->left);
					break;
				case 3:
					snprintf(val, sizeof(val), "%llu",
						 (unsigned long long)e->limit);
					break;
				case 4:
					snprintf(val, sizeof(val), "%.200s", e->msg);
					break;
				default:
					snprintf(val, sizeof(val), "%s", strerror(e->err));
					break;
				}
				v = val;
			}
		}
		if (v) {
			o += (size_t)snprintf(out + o, outlen - o, "%s", v);
			p += klen;
		} else {
			out[o++] = *p++;
			out[o] = '\0';
		}
		if (o >= outlen)
			o = outlen - 1;
	}
}

void h_store_error(struct api_resp *resp, const struct store_err *e, const struct h_where *w)
{
	static const struct h_where none;
	const struct err_row *row;
	const char *field, *path;
	char text[768];

	if (!w)
		w = &none;
	row = err_find(e->err, e->why);
	field = e->at ? w->field2 : w->field;
	path = e->at ? w->path2 : w->path;
	/* A session id a seed route took from its body: the "id" field is the one to fix. */
	if (e->why == STORE_WHY_ID)
		field = "id";
	err_text(text, sizeof(text), row->msg, e, w->id, path);
	api_error(resp, row->status, row->code, row->field ? field : NULL, "%s", text);
	if (row->retry_after_s)
		api_header(resp, "Retry-After: %u", row->retry_after_s);
}

void h_fail(struct api_resp *resp, int err, int why, uint64_t limit, const char *msg)
{
	struct store_err e = {.err = err < 0 ? -err : err, .limit = limit};
	const struct err_row *row = err_find(e.err, why);
	char text[768];

	snprintf(e.msg, sizeof(e.msg), "%s", msg ? msg : "");
	err_text(text, sizeof(text), row->msg, &e, NULL, NULL);
	api_error(resp, row->status, row->code, NULL, "%s", text);
	if (row->retry_after_s)
		api_header(resp, "Retry-After: %u", row->retry_after_s);
}

void h_errno(struct api_resp *resp, int err, const char *field, const char *path)
{
	struct store_err e = {.err = err < 0 ? -err : err};

	h_store_error(resp, &e, &(struct h_where){.field = field, .path = path});
}

static int h_set_quota(void *ctx, int dirfd, uint64_t bytes, char *err, size_t errlen)
{
	const struct config *cfg = ctx;

	return sbx_client_set_quota(cfg->broker_socket, dirfd, bytes, err, errlen);
}

void h_ctx_end(void *ctx, const char *id)
{
	const struct config *cfg = ctx;

	/* A going session's context must go with it: nobody can name it afterwards. The broker
	 * may drop a request when one of its children ends at that moment (its poll for the
	 * request returns EINTR: redteam_broker.t), so a failure is tried again, briefly. */
	for (int i = 0; i < 3; i++) {
		int rc = sbx_client_ctx_delete(cfg->broker_socket, id);

		if (rc == 0 || rc == -ENOENT)
			return;
		usleep(20000u << i);
	}
}

/* A going session's background runs: installed by runs.c (NULL without it: unit tests). */
void (*h_store_runs_end)(void *ctx, const char *owner, const char *session_id);

/* disk.reserve_mb in bytes; automatic: 5% of the volume, at most 512 MiB (the volume's size is
 * read once per state dir). */
static uint64_t reserve_bytes(const struct config *cfg)
{
	static char dir[4096];
	static uint64_t total;
	struct store_conf c = {.state_dir = cfg->state_dir};
	uint64_t r;

	if (cfg->disk_reserve_mb >= 0)
		return (uint64_t)cfg->disk_reserve_mb << 20;
	if (!cfg->state_dir)
		return 0;
	if (strcmp(dir, cfg->state_dir) || !total) {
		snprintf(dir, sizeof(dir), "%s", cfg->state_dir);
		if (store_disk_space(&c, NULL, &total) < 0)
			total = 0;
	}
	r = total / 20;
	return r < (512ull << 20) ? r : 512ull << 20;
}

const struct store_conf *h_store(const struct config *cfg)
{
	static struct store_conf conf;

	conf = (struct store_conf){
	    .state_dir = cfg->state_dir,
	    .shard = cfg->shard,
	    .ttl_s = cfg->session_ttl_s,
	    .max_lifetime_s = cfg->session_max_lifetime_s,
	    .quota_bytes = cfg->session_quota_bytes,
	    .sessions_per_client = cfg->sessions_per_client,
	    .client_share_pct = cfg->disk_share_pct,
	    .reserve_bytes = reserve_bytes(cfg),
	    .set_quota = h_set_quota,
	    .set_quota_ctx = (void *)cfg,
	    .ctx_end = h_ctx_end,
	    .ctx_end_ctx = (void *)cfg,
	    .runs_end = h_store_runs_end,
	    .runs_end_ctx = (void *)cfg,
	};
	return &conf;
}

static struct session *open_as(const struct api_req *req, const char *id, bool create,
			       struct api_resp *resp)
{
	struct store_err e = {0};
	struct session *s = NULL;

	if (session_open(h_store(req->cfg), req->client, id, create, &s, &e) < 0)
		h_store_error(resp, &e, &(struct h_where){.id = id});
	return s;
}

struct session *h_session_open(const struct api_req *req, const char *id, struct api_resp *resp)
{
	return open_as(req, id, false, resp);
}

struct session *h_session_open_or_create(const struct api_req *req, const char *id,
					 struct api_resp *resp)
{
	return open_as(req, id, true, resp);
}

int h_reserve_check(const struct api_req *req, struct api_resp *resp)
{
	struct store_err e = {0};

	if (store_reserve_check(h_store(req->cfg), 0, &e) == 0)
		return 0;
	h_store_error(resp, &e, NULL);
	return -1;
}

void h_iso_time(int64_t t, char *out, size_t outlen)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "1970-01-01T00:00:00Z");
}

void h_json_time(struct json_object *o, const char *key, int64_t t)
{
	char buf[32];

	h_iso_time(t, buf, sizeof(buf));
	json_object_object_add(o, key, json_object_new_string(buf));
}
