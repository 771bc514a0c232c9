/* events.c: a streamed evaluation ("stream": true, API.md "Runs"): the NDJSON answer's events and
 * the runner's run with its answer read line by line.
 *
 * A streamed job makes the runner (runner/sbx_eval.py, "relay") write one line per finished case
 * ({"case": {...}}) and one for the compile step ({"compile": {...}}) on its stdout as they happen,
 * then the usual answer document as the last, unterminated line. The broker hands stdout over as
 * it comes (sbx_client_run_stream); whole lines go to the caller's line function, ticks become
 * keepalives, and a client that has gone cancels the run. Events may be sent from several threads
 * (checkers judged in parallel): every write takes the stream's lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "eval.h"

int eval_stream_begin(struct eval_stream *es, const struct api_req *req, struct api_resp *resp,
		      const char *session)
{
	memset(&es->spec, 0, sizeof(es->spec));
	es->line = NULL;
	es->line_len = es->line_cap = 0;
	es->on_line = NULL;
	es->arg = NULL;
	if (runs_new_id(es->spec.id) < 0) {
		api_error(resp, 500, "internal_error", NULL, "No random run id.");
		return -1;
	}
	snprintf(es->spec.owner, sizeof(es->spec.owner), "%s", req->client);
	runs_session_key(session ? session : "", es->spec.session);
	pthread_mutex_init(&es->lock, NULL);
	api_resp_init(&es->answer);
	if (run_stream_begin(&es->rs, req, resp, false, es->spec.id) < 0) {
		pthread_mutex_destroy(&es->lock);
		api_error(resp, 400, "invalid_value", "stream",
			  "This request cannot stream its answer.");
		return -1;
	}
	return 0;
}

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int eval_stream_event(struct eval_stream *es, const char *type, struct json_object *obj)
{
	struct json_object *ev = json_object_new_object();
	int rc;

	/* "type" first, so a reader that peeks at the start of a line sees it at once. */
	json_object_object_add(ev, "type", json_object_new_string(type));
	if (obj && json_object_is_type(obj, json_type_object)) {
		json_object_object_foreach(obj, k, v)
		    json_object_object_add(ev, k, json_object_get(v));
	}
	pthread_mutex_lock(&es->lock);
	rc = api_stream_event(es->rs.req, es->rs.resp, ev);
	es->rs.last_ms = mono_ms();
	pthread_mutex_unlock(&es->lock);
	return rc;
}

int eval_stream_tick(struct eval_stream *es)
{
	int rc;

	pthread_mutex_lock(&es->lock);
	rc = run_stream_output(&es->rs, 0, NULL, 0);
	pthread_mutex_unlock(&es->lock);
	return rc;
}

void eval_stream_end(struct eval_stream *es)
{
	run_stream_end(&es->rs, &es->answer);
	api_resp_free(&es->answer);
	free(es->line);
	es->line = NULL;
	pthread_mutex_destroy(&es->lock);
}

/* sbx_output_fn of the runner's run: whole stdout lines to on_line, ticks to keepalives. */
static int runner_output(void *arg, int stream, const char *data, size_t len)
{
	struct eval_stream *es = arg;
	size_t start = 0;

	if (stream == 0)
		return eval_stream_tick(es);
	if (stream != 1)
		return 0; /* the runner's stderr is /dev/null: nothing of the cases' */
	if (es->rs.resp->gone)
		return -1;
	for (size_t k = 0; k < len; k++) {
		if (data[k] != '\n')
			continue;
		if (es->line_len) { /* the line began in an earlier chunk */
			if (eval_stream_keep(es, data + start, k - start) < 0)
				return -1;
			if (es->on_line(es->arg, es->line, es->line_len) < 0)
				return -1;
			es->line_len = 0;
		} else if (es->on_line(es->arg, data + start, k - start) < 0) {
			return -1;
		}
		start = k + 1;
	}
	/* The rest waits for its newline (the answer, the last line, never gets one: it is read
	 * from the result). */
	return eval_stream_keep(es, data + start, len - start);
}

int eval_stream_keep(struct eval_stream *es, const char *data, size_t len)
{
	if (!len)
		return 0; /* nothing to keep (and no buffer yet: memcpy must not see NULL) */
	if (es->line_len + len > es->line_cap) {
		size_t cap = es->line_cap ? es->line_cap : 4096;
		char *p;

		while (cap < es->line_len + len)
			cap *= 2;
		if (cap > EVAL_ANSWER_BYTES + 1)
			return -1;
		p = realloc(es->line, cap);
		if (!p)
			return -1;
		es->line = p;
		es->line_cap = cap;
	}
	memcpy(es->line + es->line_len, data, len);
	es->line_len += len;
	return 0;
}

int eval_runner_run(const struct config *cfg, int dirfd, int layer_fd, const char *const *env,
		    const char *const *argv, const char *in, size_t in_len,
		    const struct sbx_limits *lim, struct eval_stream *es, struct sbx_result *res,
		    struct api_resp *resp)
{
	/* The client's connection: when it goes, the broker ends the run (every case with it). */
	const struct run_call call = {.argv = argv,
				      .env = env,
				      .layer_fd = layer_fd,
				      .out = runner_output,
				      .out_arg = es,
				      .spec = &es->spec,
				      .watch = es->rs.req};

	es->line_len = 0;
	return run_sandboxed_call(cfg, dirfd, &call, in, in_len, lim, res, resp);
}
