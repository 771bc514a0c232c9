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

/* A keepalive goes out when nothing was written for this long (ticks come every
 * SBX_RUN_TICK_MS at most, so the gap stays under 5 s). */
#define RUNS_KEEPALIVE_MS 1500
/* The longest long-poll of a background run's output: it holds a FastCGI worker meanwhile. */
#define RUNS_MAX_WAIT_MS 10000

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

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

/* ---- streamed answers ---- */

/* How many bytes of buf (len) can go out now: for text, up to the last point where a UTF-8
 * decoder reading from the start stands between characters, keeping a possibly incomplete
 * character at the end (at most 3 bytes); for base64, whole 3-byte groups. */
static size_t cut_point(const unsigned char *b, size_t len, bool base64)
{
	size_t i, lead;

	if (base64)
		return len / 3 * 3;
	/* Look back at most 3 bytes for a lead byte whose sequence is not complete yet. */
	for (i = len; i > 0 && len - i < 3; i--) {
		unsigned c = b[i - 1];

		if ((c & 0xc0) == 0x80)
			continue; /* a continuation byte: keep looking for its lead */
		if (c < 0xc2 || c > 0xf4)
			return len; /* ASCII or never a lead: everything can go */
		lead = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
		return len - (i - 1) < lead ? i - 1 : len;
	}
	return len;
}

static int stream_send(struct run_stream *rs, int stream, const char *data, size_t len)
{
	struct json_object *ev = json_object_new_object();

	json_object_object_add(ev, "type",
			       json_object_new_string(stream == 1 ? "stdout" : "stderr"));
	json_object_object_add(ev, "data",
			       rs->base64 ? api_base64_string((const unsigned char *)data, len)
					  : api_utf8_string(data, len));
	if (rs->stage)
		json_object_object_add(ev, "stage", json_object_new_string(rs->stage));
	rs->sent[stream] += len;
	rs->last_ms = now_ms();
	return api_stream_event(rs->req, rs->resp, ev);
}

/* Bytes of one stream: with what waited from before, everything up to the cut goes out. */
static int stream_bytes(struct run_stream *rs, int stream, const char *data, size_t len)
{
	unsigned char *held = rs->held[stream];
	size_t n = rs->held_len[stream], cut;
	char *buf;
	int rc;

	if (n == 0) {
		cut = cut_point((const unsigned char *)data, len, rs->base64);
		rc = cut ? stream_send(rs, stream, data, cut) : 0;
		rs->held_len[stream] = len - cut;
		memcpy(held, data + cut, len - cut);
		return rc;
	}
	buf = malloc(n + len);
	if (!buf)
		return -1;
	memcpy(buf, held, n);
	memcpy(buf + n, data, len);
	cut = cut_point((unsigned char *)buf, n + len, rs->base64);
	rc = cut ? stream_send(rs, stream, buf, cut) : 0;
	rs->held_len[stream] = n + len - cut;
	memcpy(held, buf + cut, n + len - cut);
	free(buf);
	return rc;
}

/* Has the client gone? The connection to nginx turns readable (EOF) when it gives up. */
static bool client_gone(const struct run_stream *rs)
{
	struct pollfd p;

	if (rs->resp->gone)
		return true;
	if (!rs->req->conn_watch || rs->req->conn_fd < 0)
		return false;
	p = (struct pollfd){.fd = rs->req->conn_fd, .events = POLLIN};
	return poll(&p, 1, 0) > 0;
}

int run_stream_output(void *arg, int stream, const char *data, size_t len)
{
	struct run_stream *rs = arg;

	if (client_gone(rs))
		return -1;
	if (stream == 1 || stream == 2)
		return stream_bytes(rs, stream, data, len) < 0 ? -1 : 0;
	if (now_ms() - rs->last_ms >= RUNS_KEEPALIVE_MS) {
		struct json_object *ev = json_object_new_object();

		json_object_object_add(ev, "type", json_object_new_string("keepalive"));
		rs->last_ms = now_ms();
		return api_stream_event(rs->req, rs->resp, ev) < 0 ? -1 : 0;
	}
	return 0;
}

int run_stream_begin(struct run_stream *rs, const struct api_req *req, struct api_resp *resp,
		     bool base64, const char *run_id)
{
	struct json_object *ev;

	memset(rs, 0, sizeof(*rs));
	rs->req = req;
	rs->resp = resp;
	rs->base64 = base64;
	rs->last_ms = now_ms();
	if (api_stream_begin(req, resp) < 0)
		return -1;
	ev = json_object_new_object();
	json_object_object_add(ev, "type", json_object_new_string("start"));
	json_object_object_add(ev, "run_id", run_id[0] ? json_object_new_string(run_id) : NULL);
	api_stream_event(req, resp, ev);
	return 0;
}

void run_stream_settle(struct run_stream *rs, const struct sbx_result *res)
{
	/* What the broker kept past what was delivered (it never delivers less than it keeps at
	 * the end), then the held partial characters: the events now add up to the result. */
	for (int s = 1; s <= 2; s++) {
		const char *all = s == 1 ? res->out : res->err;
		size_t len = s == 1 ? res->out_len : res->err_len;
		uint64_t have = rs->sent[s] + rs->held_len[s];

		if (all && len > have)
			stream_bytes(rs, s, all + have, len - have);
		if (rs->held_len[s]) {
			size_t n = rs->held_len[s];

			rs->held_len[s] = 0;
			stream_send(rs, s, (const char *)rs->held[s], n);
		}
		rs->sent[s] = 0;
	}
}

void run_stream_end(struct run_stream *rs, struct api_resp *answer)
{
	struct json_object *ev = json_object_new_object();

	/* "type" first, so a reader that peeks at the start of a line sees it at once. */
	json_object_object_add(ev, "type", json_object_new_string("end"));
	if (answer->json && json_object_is_type(answer->json, json_type_object)) {
		json_object_object_foreach(answer->json, k, v)
		    json_object_object_add(ev, k, json_object_get(v));
	}
	/* An error after the start: the status it would have had, beside its envelope. */
	if (answer->status != 200)
		json_object_object_add(ev, "http_status", json_object_new_int(answer->status));
	api_stream_event(rs->req, rs->resp, ev);
	/* The log line tells what the run came to. */
	rs->resp->error_code = answer->error_code;
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

void h_session_run_output(const struct api_req *req, struct api_resp *resp)
{
	struct sbx_run_info info;
	struct sbx_run_chunk ch;
	struct session *s;
	char v[32], *end;
	uint64_t cursor = 0, wait = 0;
	int stream = 1, rc, fd;

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
		if (!v[0] || *end || errno || v[0] == '-') {
			api_error(resp, 400, "invalid_value", "cursor",
				  "cursor must be a byte offset (a number from Sbx-Cursor).");
			return;
		}
	}
	if (query_get(req->query, "wait_ms", v, sizeof(v))) {
		errno = 0;
		wait = strtoull(v, &end, 10);
		if (!v[0] || *end || errno || v[0] == '-' || wait > RUNS_MAX_WAIT_MS) {
			api_error(resp, 400, "invalid_value", "wait_ms", "wait_ms must be 0 to %u.",
				  RUNS_MAX_WAIT_MS);
			return;
		}
	}
	if (!(s = bg_open(req, &info, NULL, resp)))
		return;
	rc = sbx_client_run_output(req->cfg->broker_socket, req->params[1], req->client, stream,
				   cursor, (uint32_t)wait, &ch);
	if (rc == -ENOENT) {
		bg_missing(resp, req->params[1]);
		goto out;
	}
	if (rc == -EINVAL) {
		api_error(resp, 400, "invalid_value", "cursor",
			  "cursor %llu is past the output kept.", (unsigned long long)cursor);
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
	else if (rc < 0)
		h_fail(resp, EIO, H_WHY_SANDBOX, 0, strerror(-rc));
	else
		resp->status = 204;
	session_close(s);
}

void runs_session_end(const struct config *cfg, const char *client, const char *session)
{
	struct sbx_run_info *runs = NULL;
	char key[64];
	size_t n = 0;

	runs_session_key(session, key);
	if (sbx_client_run_list(cfg->broker_socket, client, key, &runs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		(void)sbx_client_run_kill(cfg->broker_socket, runs[i].id, client);
	free(runs);
}

__attribute__((constructor)) static void runs_install(void)
{
	h_runs_end = runs_session_end;
}
