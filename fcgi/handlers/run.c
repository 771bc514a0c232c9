/* run.c: limits from a request, one sandboxed run through the broker, and the run-result JSON
 * every route that runs something returns. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "handlers.h"

double run_sandbox_ms;
unsigned run_count;

static const char *const limit_fields[] = {"wall_ms",	   "cpu_ms",	   "memory_mb", "processes",
					   "output_bytes", "file_size_mb", NULL};

/* One requested limit: 0 when absent or accepted (into *dst in the internal unit), -1 with a 400.
 * scale converts the request's unit (MiB) to bytes. */
static int one_limit(struct json_object *limits, const char *key, uint64_t max_internal,
		     uint64_t scale, uint64_t *dst, struct api_resp *resp)
{
	uint64_t v = 0, max = max_internal / scale;
	char field[40];
	int rc;

	snprintf(field, sizeof(field), "limits.%s", key);
	rc = api_get_u64(limits, key, &v, resp);
	if (rc < 0) {
		api_error(resp, 400, "invalid_limit", field, "%s must be a positive integer.",
			  field);
		return -1;
	}
	if (rc == 1)
		return 0;
	if (v == 0) {
		api_error(resp, 400, "invalid_limit", field, "%s must be at least 1.", field);
		return -1;
	}
	if (v > max) {
		api_error(resp, 400, "limit_too_high", field,
			  "%s is %llu, above the maximum of %llu.", field, (unsigned long long)v,
			  (unsigned long long)max);
		return -1;
	}
	*dst = v * scale;
	return 0;
}

int run_parse_limits(const struct config *cfg, const struct lang *lang, struct json_object *limits,
		     struct sbx_limits *out, struct api_resp *resp)
{
	const struct sbx_limits *mx = &cfg->maxima;
	uint64_t procs;

	*out = cfg->defaults;
	if (lang) {
		const struct sbx_limits *x = &lang->extra;

		if (x->wall_ms)
			out->wall_ms = x->wall_ms;
		if (x->cpu_ms)
			out->cpu_ms = x->cpu_ms;
		if (x->memory_bytes)
			out->memory_bytes = x->memory_bytes;
		if (x->processes)
			out->processes = x->processes;
		if (x->output_bytes)
			out->output_bytes = x->output_bytes;
		if (x->file_size_bytes)
			out->file_size_bytes = x->file_size_bytes;
	}
	if (!limits)
		return 0;
	if (!json_object_is_type(limits, json_type_object)) {
		api_error(resp, 400, "invalid_type", "limits",
			  "Field \"limits\" must be an object.");
		return -1;
	}
	if (api_only_fields(limits, limit_fields, resp) < 0) {
		/* Name the field with its parent so the message points at the right object. */
		const char *bad = NULL;
		struct json_object *f;

		if (json_object_object_get_ex(resp->json, "error", &f) &&
		    json_object_object_get_ex(f, "field", &f))
			bad = json_object_get_string(f);
		api_error(resp, 400, "unknown_field", "limits",
			  "Unknown limit \"%.64s\"; known: wall_ms, cpu_ms, memory_mb, processes, "
			  "output_bytes, file_size_mb.",
			  bad ? bad : "?");
		return -1;
	}
	procs = out->processes;
	if (one_limit(limits, "wall_ms", mx->wall_ms, 1, &out->wall_ms, resp) < 0 ||
	    one_limit(limits, "cpu_ms", mx->cpu_ms, 1, &out->cpu_ms, resp) < 0 ||
	    one_limit(limits, "memory_mb", mx->memory_bytes, 1u << 20, &out->memory_bytes, resp) <
		0 ||
	    one_limit(limits, "processes", mx->processes, 1, &procs, resp) < 0 ||
	    one_limit(limits, "output_bytes", mx->output_bytes, 1, &out->output_bytes, resp) < 0 ||
	    one_limit(limits, "file_size_mb", mx->file_size_bytes, 1u << 20, &out->file_size_bytes,
		      resp) < 0)
		return -1;
	out->processes = (uint32_t)procs;
	/* The hard cap kills a flood; it must stay above what we promise to keep. */
	if (out->output_hard_bytes < out->output_bytes)
		out->output_hard_bytes = out->output_bytes;
	return 0;
}

/* sbx_client_run, waiting a bounded time for a slot. The broker's accept queue is only as deep
 * as its slots, and a connect to a full queue fails at once with EAGAIN rather than blocking; we
 * retry with a short backoff (2 ms doubling to 20 ms) for up to runs.queue_wait_ms, then give up
 * with -EAGAIN (503). So a burst waits briefly for a slot, but a saturated machine answers 503
 * instead of piling up requests. */
static int call_broker(const struct config *cfg, const struct sbx_request *req, sbx_output_fn out,
		       void *out_arg, const struct sbx_run_spec *spec, struct sbx_result *res)
{
	struct timespec start, now, pause;
	long delay_ms = 2, waited_ms;
	int brc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		if (out || spec)
			brc =
			    sbx_client_run_stream(cfg->broker_socket, req, spec, out, out_arg, res);
		else
			brc = sbx_client_run(cfg->broker_socket, req, res);
		if (brc != -EAGAIN)
			return brc;
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited_ms =
		    (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
		if (waited_ms + delay_ms > (long)cfg->queue_wait_ms)
			return -EAGAIN;
		sbx_result_free(res);
		pause = (struct timespec){0, delay_ms * 1000000L};
		while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
			;
		delay_ms = delay_ms * 2 > 20 ? 20 : delay_ms * 2;
	}
}

int run_sandboxed(const struct config *cfg, int dirfd, const char *const *argv,
		  const char *const *env, const char *stdin_buf, size_t stdin_len,
		  const struct sbx_limits *limits, struct sbx_result *res, struct api_resp *resp)
{
	const struct run_call call = {.argv = argv, .env = env, .layer_fd = -1};

	return run_sandboxed_call(cfg, dirfd, &call, stdin_buf, stdin_len, limits, res, resp);
}

int run_sandboxed_stream(const struct config *cfg, int dirfd, int layer_fd, const char *const *argv,
			 const char *const *env, const char *stdin_buf, size_t stdin_len,
			 const struct sbx_limits *limits, struct run_stream *rs,
			 const struct sbx_run_spec *spec, struct sbx_result *res,
			 struct api_resp *resp)
{
	const struct run_call call = {.argv = argv,
				      .env = env,
				      .layer_fd = layer_fd,
				      .out = rs ? run_stream_output : NULL,
				      .out_arg = rs,
				      .spec = spec,
				      .watch = rs ? rs->req : NULL};

	return run_sandboxed_call(cfg, dirfd, &call, stdin_buf, stdin_len, limits, res, resp);
}

int run_sandboxed_call(const struct config *cfg, int dirfd, const struct run_call *call,
		       const char *stdin_buf, size_t stdin_len, const struct sbx_limits *limits,
		       struct sbx_result *res, struct api_resp *resp)
{
	struct sbx_request req;
	struct timespec t0, t1;
	int in_fd = -1, rc = -1, brc;

	memset(res, 0, sizeof(*res));
	if (stdin_buf && stdin_len) {
		size_t off = 0;

		/* The broker wants a file it can read from offset 0: a memfd never touches disk. */
		in_fd = memfd_create("sbx-stdin", MFD_CLOEXEC);
		if (in_fd < 0) {
			h_fail(resp, errno, H_WHY_STDIN, 0, NULL);
			goto out;
		}
		while (off < stdin_len) {
			ssize_t n = write(in_fd, stdin_buf + off, stdin_len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				h_fail(resp, n < 0 ? errno : EIO, H_WHY_STDIN, 0, NULL);
				goto out;
			}
			off += (size_t)n;
		}
	}
	memset(&req, 0, sizeof(req));
	req.argv = call->argv;
	req.env = call->env;
	req.workdir_fd = dirfd;
	req.layer_fd = call->layer_fd;
	req.stdin_fd = in_fd;
	/* A streamed run ends when its client goes: the connection to nginx turns readable. */
	req.cancel_fd = call->watch && call->watch->conn_watch ? call->watch->conn_fd : -1;
	req.limits = *limits;
	/* Queueing for a slot counts too: the deadline a 429's Retry-After is computed from. */
	route_run_deadline(limits->wall_ms + cfg->queue_wait_ms);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	brc = call_broker(cfg, &req, call->out, call->out_arg, call->spec, res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	run_sandbox_ms +=
	    (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	run_count++;
	if (brc == -EAGAIN) {
		h_fail(resp, EAGAIN, H_WHY_SLOTS, cfg->queue_wait_ms, NULL);
		sbx_result_free(res);
		goto out;
	}
	if (brc < 0 || res->status == SBX_INTERNAL_ERROR) {
		h_fail(resp, EIO, H_WHY_SANDBOX, 0,
		       brc == -ECANCELED ? "the client went away"
		       : res->message[0] ? res->message
					 : "no detail");
		sbx_result_free(res);
		goto out;
	}
	rc = 0;
out:
	if (in_fd >= 0)
		close(in_fd);
	return rc;
}

struct json_object *run_result_json(const struct sbx_result *res, bool base64)
{
	struct json_object *o = json_object_new_object();
	const char *sig = res->signal ? sbx_signal_name(res->signal) : NULL;
	bool exited = res->status == SBX_OK || res->status == SBX_ERROR;

	json_object_object_add(o, "status", json_object_new_string(sbx_status_name(res->status)));
	json_object_object_add(o, "exit_code", exited ? json_object_new_int(res->exit_code) : NULL);
	json_object_object_add(o, "signal", sig ? json_object_new_string(sig) : NULL);
	if (base64) {
		json_object_object_add(
		    o, "stdout", api_base64_string((const unsigned char *)res->out, res->out_len));
		json_object_object_add(
		    o, "stderr", api_base64_string((const unsigned char *)res->err, res->err_len));
	} else {
		json_object_object_add(o, "stdout", api_utf8_string(res->out, res->out_len));
		json_object_object_add(o, "stderr", api_utf8_string(res->err, res->err_len));
	}
	json_object_object_add(o, "stdout_truncated", json_object_new_boolean(res->out_truncated));
	json_object_object_add(o, "stderr_truncated", json_object_new_boolean(res->err_truncated));
	json_object_object_add(o, "wall_ms", json_object_new_uint64(res->wall_ms));
	json_object_object_add(o, "cpu_ms", json_object_new_uint64(res->cpu_ms));
	json_object_object_add(o, "memory_kb", json_object_new_uint64(res->memory_kb));
	if (res->status == SBX_TIMEOUT && sbx_limit_name(res->limit))
		json_object_object_add(o, "limit",
				       json_object_new_string(sbx_limit_name(res->limit)));
	return o;
}
