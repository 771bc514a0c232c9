/* runs.c: runs with an id (API.md "Runs"): streamed answers ("stream": true: NDJSON events as
 * output arrives), stdin and signals to a running run, and a session's background runs.
 *
 * A streamed answer is written by run_stream_*: a start event with the run id, stdout/stderr
 * events as the broker hands output over, a keepalive when nothing was sent for a while, and the
 * end event: the whole usual response. Output events never split a UTF-8 character (a partial
 * one waits for its next bytes) and, with output_encoding base64, carry whole 3-byte groups, so
 * the events' data put together is exactly the end event's stdout/stderr (which the broker
 * guarantees to extend what it delivered: caps hold, nothing is contradicted). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "handlers.h"

/* The longest long-poll of a background run's output: it holds a FastCGI worker meanwhile. */
#define RUNS_MAX_WAIT_MS 10000

int runs_new_id(char out[SBX_RUN_ID_LEN + 1])
{
	unsigned char b[SBX_RUN_ID_LEN / 2];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* Is id 32 lowercase hex (anything else is no run of ours)? */
static bool id_ok(const char *id)
{
	return id && strlen(id) == SBX_RUN_ID_LEN &&
	       strspn(id, "0123456789abcdef") == SBX_RUN_ID_LEN;
}

void runs_session_key(const char *id, char out[64])
{
	size_t n = strlen(id);
	uint64_t h = 1469598103934665603ull;

	if (n < 64) {
		memcpy(out, id, n + 1);
		return;
	}
	/* sbx_run_spec.session holds 63 bytes; a session id may have 64: a longer one is kept as
	 * a prefix and a hash of the whole, the same each time. */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)id[i]) * 1099511628211ull;
	snprintf(out, 64, "%.46s~%016llx", id, (unsigned long long)h);
}

/* ---- stdin and signals: /v1/runs/{run_id}/... ---- */

static void run_missing(struct api_resp *resp, int rc, const char *id)
{
	if (rc == -ENOENT)
		api_error(resp, 404, "run_not_found", NULL,
			  "No running run \"%.40s\" of yours (it may never have existed, or "
			  "belongs to another client).",
			  id);
	else if (rc == -EPIPE)
		api_error(resp, 409, "run_ended", NULL,
			  "Run \"%.40s\" has ended, or its stdin is closed or not interactive.",
			  id);
	else if (rc == -EAGAIN) {
		api_error(resp, 429, "stdin_full", NULL,
			  "The program has not read the stdin it was given yet; retry shortly.");
		api_header(resp, "Retry-After: 1");
	} else if (rc == -EINVAL)
		api_error(resp, 400, "invalid_value", NULL, "The broker refused the request.");
	else
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
}

/* ?name=value from the query string: 1 when present (value copied, maybe ""), 0 when not. */
static int query_get(const char *q, const char *name, char *out, size_t outlen)
{
	size_t n = strlen(name);

	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (len >= n && strncmp(q, name, n) == 0 && (len == n || q[n] == '=')) {
			size_t vlen = len > n ? len - n - 1 : 0;

			if (vlen >= outlen)
				vlen = outlen - 1;
			memcpy(out, q + n + (len > n), vlen);
			out[vlen] = '\0';
			return 1;
		}
		q = end ? end + 1 : NULL;
	}
	out[0] = '\0';
	return 0;
}

void h_run_stdin(const struct api_req *req, struct api_resp *resp)
{
	const char *id = req->params[0];
	char eofv[8], *buf = NULL;
	size_t len = 0;
	bool eof = false;
	int rc;

	if (query_get(req->query, "eof", eofv, sizeof(eofv)))
		eof = strcmp(eofv, "0") != 0 && strcmp(eofv, "false") != 0;
	if (req->body_total > (int64_t)SBX_RUN_MAX_STDIN) {
		api_error(resp, 413, "body_too_large", NULL,
			  "One stdin write carries at most %u bytes.", SBX_RUN_MAX_STDIN);
		return;
	}
	buf = malloc(SBX_RUN_MAX_STDIN + 1);
	if (!buf) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory.");
		return;
	}
	while (req->read_body && len <= SBX_RUN_MAX_STDIN) {
		ssize_t n = req->read_body(req->read_ctx, buf + len, SBX_RUN_MAX_STDIN + 1 - len);

		if (n < 0) {
			api_error(resp, 400, "body_read_failed", NULL,
				  "The request body could not be read completely.");
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > SBX_RUN_MAX_STDIN) {
		api_error(resp, 413, "body_too_large", NULL,
			  "One stdin write carries at most %u bytes.", SBX_RUN_MAX_STDIN);
		goto out;
	}
	if (!id_ok(id)) {
		run_missing(resp, -ENOENT, id);
		goto out;
	}
	rc = sbx_client_run_stdin(req->cfg->broker_socket, id, req->client, buf, len, eof);
	if (rc < 0) {
		run_missing(resp, rc, id);
		goto out;
	}
	{
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "run_id", json_object_new_string(id));
		json_object_object_add(o, "bytes", json_object_new_uint64(len));
		json_object_object_add(o, "eof", json_object_new_boolean(eof));
		api_json(resp, 200, o);
	}
out:
	free(buf);
}

void h_run_signal(const struct api_req *req, struct api_resp *resp)
{
	static const char *const fields[] = {"signal", NULL};
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"SIGINT", SIGINT}, {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}};
	struct json_object *body = api_body_object(req, resp);
	const char *name = NULL, *id = req->params[0];
	int sig = 0, rc;

	if (!body)
		return;
	if (api_only_fields(body, fields, resp) < 0 ||
	    api_get_string(body, "signal", true, &name, NULL, resp) < 0)
		goto out;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcmp(name, sigs[i].name) == 0 || strcmp(name, sigs[i].name + 3) == 0)
			sig = sigs[i].sig;
	if (!sig) {
		api_error(resp, 400, "invalid_value", "signal",
			  "signal must be \"SIGINT\", \"SIGTERM\" or \"SIGKILL\".");
		goto out;
	}
	rc = id_ok(id) ? sbx_client_run_signal(req->cfg->broker_socket, id, req->client, sig)
		       : -ENOENT;
	if (rc < 0) {
		run_missing(resp, rc, id);
		goto out;
	}
	{
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "run_id", json_object_new_string(id));
		json_object_object_add(o, "signal", json_object_new_string(sbx_signal_name(sig)));
		api_json(resp, 200, o);
	}
out:
	json_object_put(body);
}

/* ---- background runs: /v1/sessions/{id}/runs ---- */

/* A memfd holding len bytes (the broker reads stdin from offset 0), or -1 with resp filled. */
static int stdin_memfd(const char *buf, size_t len, struct api_resp *resp)
{
	int fd = memfd_create("sbx-stdin", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0) {
		h_fail(resp, errno, H_WHY_STDIN, 0, NULL);
		return -1;
	}
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			h_fail(resp, n < 0 ? errno : EIO, H_WHY_STDIN, 0, NULL);
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	return fd;
}

static struct json_object *info_json(const struct sbx_run_info *in)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "run_id", json_object_new_string(in->id));
	json_object_object_add(
	    o, "state", json_object_new_string(in->state == SBX_RUN_ENDED ? "ended" : "running"));
	json_object_object_add(o, "interactive", json_object_new_boolean(in->interactive));
	h_json_time(o, "started_at", (int64_t)(in->started_ms / 1000));
	if (in->ended_ms)
		h_json_time(o, "ended_at", (int64_t)(in->ended_ms / 1000));
	else
		json_object_object_add(o, "ended_at", NULL);
	json_object_object_add(o, "stdout_bytes", json_object_new_uint64(in->out_len));
	json_object_object_add(o, "stderr_bytes", json_object_new_uint64(in->err_len));
	json_object_object_add(o, "stdout_truncated", json_object_new_boolean(in->out_truncated));
	json_object_object_add(o, "stderr_truncated", json_object_new_boolean(in->err_truncated));
	if (in->state == SBX_RUN_ENDED)
		json_object_object_add(o, "status",
				       json_object_new_string(sbx_status_name(in->status)));
	return o;
}

static void bg_missing(struct api_resp *resp, const char *id)
{
	api_error(resp, 404, "run_not_found", NULL,
		  "No background run \"%.40s\" in this session (it may have been killed, or its "
		  "output's keep time passed).",
		  id);
}

void h_session_runs_start(const struct api_req *req, struct api_resp *resp)
{
	static const char *const fields[] = {"cmd", "stdin", "limits", "interactive", NULL};
	struct json_object *body = api_body_object(req, resp), *limits = NULL, *o;
	const char *cmd = NULL, *in = NULL;
	size_t cmd_len = 0, in_len = 0;
	struct session *s = NULL;
	struct sbx_limits lim;
	struct sbx_run_spec spec;
	struct sbx_request r;
	char err[256] = "";
	int in_fd = -1, rc;
	uint64_t left;

	memset(&spec, 0, sizeof(spec));
	if (!body)
		return;
	if (api_only_fields(body, fields, resp) < 0 ||
	    api_get_string(body, "cmd", true, &cmd, &cmd_len, resp) < 0 ||
	    api_get_string(body, "stdin", false, &in, &in_len, resp) < 0 ||
	    api_get_object(body, "limits", &limits, resp) < 0 ||
	    api_get_bool(body, "interactive", &spec.interactive, resp) < 0)
		goto out;
	if (strlen(cmd) != cmd_len || cmd_len > SBX_MAX_ARGS_BYTES - 8192u) {
		api_error(resp, 400, "invalid_value", "cmd",
			  "cmd must be free of NUL bytes and at most %u bytes.",
			  SBX_MAX_ARGS_BYTES - 8192u);
		goto out;
	}
	if (spec.interactive && in) {
		api_error(resp, 400, "invalid_value", "stdin",
			  "With \"interactive\": true, send stdin through POST "
			  "/v1/runs/{run_id}/stdin.");
		goto out;
	}
	if (run_parse_limits(req->cfg, NULL, limits, &lim, resp) < 0 ||
	    h_reserve_check(req, resp) < 0)
		goto out;
	if (!(s = h_session_open(req, req->params[0], resp)))
		goto out;
	left = session_quota_left(s);
	if (left < lim.file_size_bytes)
		lim.file_size_bytes = left ? left : 1;
	if (in && in_len && (in_fd = stdin_memfd(in, in_len, resp)) < 0)
		goto out;
	if (runs_new_id(spec.id) < 0) {
		api_error(resp, 500, "internal_error", NULL, "No random run id.");
		goto out;
	}
	snprintf(spec.owner, sizeof(spec.owner), "%s", req->client);
	runs_session_key(s->id, spec.session);
	spec.keep_s = req->cfg->bg_keep_s;
	spec.max_per_owner = req->cfg->bg_per_client;
	spec.max_per_session = req->cfg->bg_per_session;
	memset(&r, 0, sizeof(r));
	r.argv = (const char *const[]){"/bin/sh", "-c", cmd, NULL};
	r.workdir_fd = s->root_fd;
	r.stdin_fd = in_fd;
	r.cancel_fd = -1;
	r.limits = lim;
	rc = sbx_client_run_start(req->cfg->broker_socket, &r, &spec, err, sizeof(err));
	if (rc == -EDQUOT)
		h_fail(resp, EDQUOT, H_WHY_RUN_CAP, req->cfg->bg_per_client, NULL);
	else if (rc == -EAGAIN)
		h_fail(resp, EAGAIN, H_WHY_RUN_MACHINE, 0, NULL);
	else if (rc < 0)
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, err[0] ? err : strerror(-rc));
	else {
		o = json_object_new_object();
		json_object_object_add(o, "run_id", json_object_new_string(spec.id));
		json_object_object_add(o, "state", json_object_new_string("running"));
		api_json(resp, 202, o);
		api_header(resp, "Location: /v1/sessions/%s/runs/%s", s->id, spec.id);
	}
out:
	if (in_fd >= 0)
		close(in_fd);
	if (s)
		session_close(s);
	json_object_put(body);
}

void h_session_runs_list(const struct api_req *req, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	struct sbx_run_info *runs = NULL;
	struct json_object *arr, *o;
	char key[64];
	size_t n = 0;
	int rc;

	if (!s)
		return;
	runs_session_key(s->id, key);
	rc = sbx_client_run_list(req->cfg->broker_socket, req->client, key, &runs, &n);
	if (rc < 0) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
		goto out;
	}
	arr = json_object_new_array();
	for (size_t i = 0; i < n; i++)
		json_object_array_add(arr, info_json(&runs[i]));
	o = json_object_new_object();
	json_object_object_add(o, "runs", arr);
	api_json(resp, 200, o);
out:
	free(runs);
	session_close(s);
}

/* The session (opened) and the run's info when run {params[1]} is of this client and session;
 * else NULL with resp filled. res, when not NULL, gets an ended run's result. */
static struct session *bg_open(const struct api_req *req, struct sbx_run_info *info,
			       struct sbx_result *res, struct api_resp *resp)
{
	struct session *s = h_session_open(req, req->params[0], resp);
	const char *id = req->params[1];
	char key[64];

	if (!s)
		return NULL;
	runs_session_key(s->id, key);
	if (!id_ok(id) ||
	    sbx_client_run_status(req->cfg->broker_socket, id, req->client, info, res) < 0 ||
	    strcmp(info->session, key) != 0) {
		if (res)
			sbx_result_free(res);
		bg_missing(resp, id);
		session_close(s);
		return NULL;
	}
	return s;
}

/* After a broker call to a background run failed other than by -ENOENT: true when the run is
 * gone now (killed by a concurrent DELETE, whose keeper hung up on this call mid-answer). */
static bool bg_gone(const struct api_req *req)
{
	struct sbx_run_info info;

	return sbx_client_run_status(req->cfg->broker_socket, req->params[1], req->client, &info,
				     NULL) == -ENOENT;
}

void h_session_run_get(const struct api_req *req, struct api_resp *resp)
{
	struct sbx_run_info info;
	struct sbx_result res;
	struct session *s;
	struct json_object *o;
	char enc[16];
	bool base64;

	memset(&res, 0, sizeof(res));
	query_get(req->query, "output_encoding", enc, sizeof(enc));
	base64 = strcmp(enc, "base64") == 0;
	if (!(s = bg_open(req, &info, &res, resp)))
		return;
	o = info_json(&info);
	if (info.state == SBX_RUN_ENDED) {
		struct json_object *r = run_result_json(&res, base64);

		json_object_object_foreach(r, k, v)
		    json_object_object_add(o, k, json_object_get(v));
		json_object_put(r);
	}
	api_json(resp, 200, o);
	sbx_result_free(&res);
	session_close(s);
}

/* A long-poll holds its worker while it waits: it may only when the client holds fewer than
 * runs.long_polls_per_client of them (else 429 too_many_waits) and the pool fewer than half its
 * workers (else 503 busy), so that long-polls never starve the pool (admit.c: waits). */
static bool wait_admitted(const struct api_req *req, struct api_resp *resp, int waits[2])
{
	uint32_t pool = req->cfg->pool_workers / 2;
	int rc;

	if (req->cfg->pool_workers && !pool)
		pool = 1;
	rc = admit_wait(req->cfg->state_dir, req->client, req->cfg->long_polls_per_client, pool,
			waits);
	if (rc == 0)
		return true;
	if (rc == -EUSERS) {
		api_error(resp, 429, "too_many_waits", "wait_ms",
			  "This client already holds %u long-polls (runs.long_polls_per_client): "
			  "retry, or poll with wait_ms=0.",
			  req->cfg->long_polls_per_client);
		api_header(resp, "Retry-After: 1");
	} else if (rc == -EBUSY) {
		api_error(resp, 503, "busy", "wait_ms",
			  "Too many long-polls are held right now: retry, or poll with wait_ms=0.");
		api_header(resp, "Retry-After: 2");
	} else {
		h_errno(resp, -rc, NULL, NULL);
	}
	return false;
}

/* Is v a plain decimal number ("0".."9" only: strtoull alone also takes "+5", " 5", "-1")? */
static bool digits(const char *v)
{
	return v[0] && strspn(v, "0123456789") == strlen(v);
}

void h_session_run_output(const struct api_req *req, struct api_resp *resp)
{
	struct sbx_run_info info;
	struct sbx_run_chunk ch;
	struct session *s;
	char v[32], *end;
	uint64_t cursor = 0, wait = 0;
	int stream = 1, rc, fd, waits[2] = {-1, -1};

	memset(&ch, 0, sizeof(ch));
	if (query_get(req->query, "stream", v, sizeof(v)) && strcmp(v, "stdout") != 0) {
		if (strcmp(v, "stderr") != 0) {
			api_error(resp, 400, "invalid_value", "stream",
				  "stream must be \"stdout\" or \"stderr\".");
			return;
		}
		stream = 2;
	}
	if (query_get(req->query, "cursor", v, sizeof(v))) {
		errno = 0;
		cursor = strtoull(v, &end, 10);
		if (!digits(v) || *end || errno) {
			api_error(resp, 400, "invalid_value", "cursor",
				  "cursor must be a byte offset (a number from Sbx-Cursor).");
			return;
		}
	}
	if (query_get(req->query, "wait_ms", v, sizeof(v))) {
		errno = 0;
		wait = strtoull(v, &end, 10);
		if (!digits(v) || *end || errno || wait > RUNS_MAX_WAIT_MS) {
			api_error(resp, 400, "invalid_value", "wait_ms", "wait_ms must be 0 to %u.",
				  RUNS_MAX_WAIT_MS);
			return;
		}
	}
	if (!(s = bg_open(req, &info, NULL, resp)))
		return;
	if (wait && !wait_admitted(req, resp, waits))
		goto out;
	rc = sbx_client_run_output(req->cfg->broker_socket, req->params[1], req->client, stream,
				   cursor, (uint32_t)wait, &ch);
	admit_wait_end(waits);
	if (rc == -ENOENT) {
		bg_missing(resp, req->params[1]);
		goto out;
	}
	if (rc == -EINVAL) {
		api_error(resp, 400, "invalid_value", "cursor",
			  "cursor %llu is past the output kept.", (unsigned long long)cursor);
		goto out;
	}
	if (rc < 0 && bg_gone(req)) {
		bg_missing(resp, req->params[1]);
		goto out;
	}
	if (rc < 0) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
		goto out;
	}
	if ((fd = stdin_memfd(ch.data, ch.len, resp)) < 0)
		goto out;
	resp->status = 200;
	resp->file_fd = fd;
	resp->file_len = (off_t)ch.len;
	resp->content_type = "application/octet-stream";
	lseek(fd, 0, SEEK_SET);
	api_header(resp, "Sbx-Cursor: %llu", (unsigned long long)ch.next);
	api_header(resp, "Sbx-Run-State: %s", ch.ended ? "ended" : "running");
	api_header(resp, "Sbx-Truncated: %s", ch.truncated ? "true" : "false");
out:
	free(ch.data);
	session_close(s);
}

void h_session_run_delete(const struct api_req *req, struct api_resp *resp)
{
	struct sbx_run_info info;
	struct session *s;
	int rc;

	if (!(s = bg_open(req, &info, NULL, resp)))
		return;
	rc = sbx_client_run_kill(req->cfg->broker_socket, req->params[1], req->client);
	if (rc == -ENOENT)
		bg_missing(resp, req->params[1]);
	else if (rc < 0 && !bg_gone(req))
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
	else
		resp->status = 204; /* killed (also when its keeper hung up as it went) */
	session_close(s);
}

/* The store's runs_end hook: kill the background runs of owner's session (it is being deleted
 * or has expired). ctx is the config. */
static void runs_store_end(void *ctx, const char *owner, const char *session_id)
{
	const struct config *cfg = ctx;
	struct sbx_run_info *runs = NULL;
	char key[64];
	size_t n = 0;

	runs_session_key(session_id, key);
	/* Nobody can name these runs once the session is gone: each call is tried again when the
	 * broker dropped it (it may, when one of its children ends at that moment:
	 * redteam_broker.t). */
	for (int i = 0; sbx_client_run_list(cfg->broker_socket, owner, key, &runs, &n) < 0; i++) {
		if (i == 2)
			return;
		usleep(20000u << i);
	}
	for (size_t k = 0; k < n; k++)
		for (int i = 0; i < 3; i++) {
			int rc = sbx_client_run_kill(cfg->broker_socket, runs[k].id, owner);

			if (rc == 0 || rc == -ENOENT)
				break;
			usleep(20000u << i);
		}
	free(runs);
}

__attribute__((constructor)) static void runs_install(void)
{
	h_store_runs_end = runs_store_end;
}
