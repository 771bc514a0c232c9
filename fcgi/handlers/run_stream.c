/* run_stream.c: a streamed answer ("stream": true, API.md "Runs"): NDJSON events written as the
 * broker hands output over. A start event with the run id, stdout/stderr events, a keepalive when
 * nothing was sent for a while, and the end event: the whole usual response. Output events never
 * split a UTF-8 character (a partial one waits for its next bytes) and, with output_encoding
 * base64, carry whole 3-byte groups, so the events' data put together is exactly the end event's
 * stdout/stderr (which the broker guarantees to extend what it delivered). Kept apart from runs.c
 * (the routes of runs with ids), which calls run.c, while run.c calls this. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handlers.h"

/* A keepalive goes out when nothing was written for this long (ticks come every
 * SBX_RUN_TICK_MS at most, so the gap stays under 5 s). */
#define RUNS_KEEPALIVE_MS 1500

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
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
	rs->start_held = false; /* flushed with this event */
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
	/* The first tick: the held start goes out now (an empty write flushes it). */
	if (rs->start_held) {
		rs->start_held = false;
		if (rs->req->out->write(rs->req->out->ctx, "", 0) < 0) {
			rs->resp->gone = true;
			return -1;
		}
	}
	if (now_ms() - rs->last_ms >= RUNS_KEEPALIVE_MS) {
		struct json_object *ev = json_object_new_object();

		json_object_object_add(ev, "type", json_object_new_string("keepalive"));
		rs->last_ms = now_ms();
		return api_stream_event(rs->req, rs->resp, ev) < 0 ? -1 : 0;
	}
	return 0;
}

/* With hold, the headers and the start event stay in the FastCGI buffer (resp->hold is set
 * around these two writes only): any later event flushes them along with itself. */
static int begin(struct run_stream *rs, const struct api_req *req, struct api_resp *resp,
		 bool base64, const char *run_id, bool hold)
{
	struct json_object *ev;
	int rc;

	memset(rs, 0, sizeof(*rs));
	rs->req = req;
	rs->resp = resp;
	rs->base64 = base64;
	rs->last_ms = now_ms();
	resp->hold = hold;
	rc = api_stream_begin(req, resp);
	if (rc == 0) {
		ev = json_object_new_object();
		json_object_object_add(ev, "type", json_object_new_string("start"));
		json_object_object_add(ev, "run_id",
				       run_id[0] ? json_object_new_string(run_id) : NULL);
		api_stream_event(req, resp, ev);
		rs->start_held = hold;
	}
	resp->hold = false;
	return rc;
}

int run_stream_begin(struct run_stream *rs, const struct api_req *req, struct api_resp *resp,
		     bool base64, const char *run_id)
{
	return begin(rs, req, resp, base64, run_id, false);
}

int run_stream_begin_held(struct run_stream *rs, const struct api_req *req, struct api_resp *resp,
			  bool base64, const char *run_id)
{
	return begin(rs, req, resp, base64, run_id, true);
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
	/* Not flushed: the request's end (FCGX_Finish) writes it with FCGI_END_REQUEST, so nginx
	 * sends it and the closing chunk in one go, instead of waking the client twice. */
	rs->resp->hold = true;
	api_stream_event(rs->req, rs->resp, ev);
	rs->resp->hold = false;
	rs->start_held = false;
	/* The log line tells what the run came to. */
	rs->resp->error_code = answer->error_code;
}
