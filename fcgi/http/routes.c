/* routes.c: path matching with captures, and the per-route checks (auth, admission control)
 * every handler gets before it runs. The table itself: handlers/routes.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "metrics.h"

static const struct route *route_table;
static size_t route_count;

void route_install(const struct route *table, size_t count)
{
	route_table = table;
	route_count = count;
}

void (*route_refused)(struct api_resp *resp, int err, const struct http_conf *hc);
bool route_defer_enabled;
static void (*deferred_fn)(void *ctx);
static void *deferred_ctx;

void route_defer(void (*fn)(void *ctx), void *ctx)
{
	if (deferred_fn)
		fn(ctx);
	else {
		deferred_fn = fn;
		deferred_ctx = ctx;
	}
}

void route_run_deferred(void)
{
	void (*fn)(void *ctx) = deferred_fn;

	deferred_fn = NULL;
	if (fn)
		fn(deferred_ctx);
}

/* Percent-decode raw[0..n) into out (NUL-terminated). Returns the decoded length, -1 for a
 * malformed escape, -2 for an encoded NUL. *slash is set when an encoded '/' was decoded. */
static long decode(const char *raw, size_t n, char *out, bool *slash)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (raw[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -1;
			hi = route_hexval(raw[i + 1]);
			lo = route_hexval(raw[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			out[o] = (char)(hi << 4 | lo);
			if (out[o] == '\0')
				return -2;
			if (out[o] == '/' && slash)
				*slash = true;
			o++;
			i += 2;
		} else {
			out[o++] = raw[i];
		}
	}
	out[o] = '\0';
	return (long)o;
}

void route_decode_path(const char *raw_path, char *out)
{
	if (decode(raw_path, strlen(raw_path), out, NULL) < 0)
		out[0] = '\0';
}

/* Does pattern match raw_path? Captures are decoded into buf. Returns 1 match, 0 no match. */
static int match_pattern(const char *pattern, const char *raw_path, struct route_match *m,
			 char *buf, size_t buflen)
{
	const char *p = pattern, *r = raw_path;
	size_t used = 0;
	int nparam = 0;

	if (strcmp(pattern, "/") == 0)
		return strcmp(raw_path, "/") == 0;
	while (*p == '/' && *r == '/') {
		const char *pe, *re;
		size_t plen, rlen;
		bool slash = false;
		long dlen;

		p++;
		r++;
		pe = strchr(p, '/');
		plen = pe ? (size_t)(pe - p) : strlen(p);
		if (plen > 5 && strncmp(p + plen - 4, "...}", 4) == 0) {
			/* {path...}: the rest of the path, slashes included. */
			rlen = strlen(r);
			if (rlen == 0 || nparam >= API_MAX_PARAMS || used + rlen + 1 > buflen)
				return 0;
			dlen = decode(r, rlen, buf + used, NULL);
			if (dlen <= 0)
				return 0;
			m->params[nparam++] = buf + used;
			return 1;
		}
		re = strchr(r, '/');
		rlen = re ? (size_t)(re - r) : strlen(r);
		if (used + rlen + 1 > buflen)
			return 0;
		dlen = decode(r, rlen, buf + used, &slash);
		if (dlen < 0 || slash)
			return 0;
		if (p[0] == '{') {
			if (dlen == 0 || nparam >= API_MAX_PARAMS)
				return 0;
			m->params[nparam++] = buf + used;
			used += (size_t)dlen + 1;
		} else if ((size_t)dlen != plen || memcmp(buf + used, p, plen) != 0) {
			return 0;
		}
		p += plen;
		r += rlen;
	}
	return *p == '\0' && *r == '\0';
}

const struct route *route_find(const char *method, const char *raw_path, struct route_match *m,
			       char *buf, size_t buflen, struct api_resp *resp)
{
	const struct route *found = NULL;
	size_t i, n = strlen(raw_path);
	bool slash;
	long rc;

	memset(m, 0, sizeof(*m));
	/* Validate the whole encoding first so a bad escape is a 400 wherever it is. */
	if (buflen < n + 1) {
		api_error(resp, 414, "uri_too_long", NULL, "The request path is too long.");
		return NULL;
	}
	rc = decode(raw_path, n, buf, &slash);
	if (rc == -2) {
		api_error(resp, 400, "malformed_path", NULL,
			  "The path contains an encoded NUL byte.");
		return NULL;
	}
	if (rc < 0 || raw_path[0] != '/') {
		api_error(resp, 400, "malformed_path", NULL, "The path has a malformed %%-escape.");
		return NULL;
	}
	for (i = 0; i < route_count; i++) {
		struct route_match tmp;

		memset(&tmp, 0, sizeof(tmp));
		if (!match_pattern(route_table[i].pattern, raw_path, &tmp, buf, buflen))
			continue;
		/* HEAD is GET without the body (main.c drops it), for monitors that probe with it.
		 */
		if (strcmp(route_table[i].method, method) == 0 ||
		    (strcmp(method, "HEAD") == 0 && strcmp(route_table[i].method, "GET") == 0)) {
			memcpy(m->params, tmp.params, sizeof(m->params));
			found = &route_table[i];
			break;
		}
		if (!strstr(m->allow, route_table[i].method)) {
			size_t l = strlen(m->allow);

			snprintf(m->allow + l, sizeof(m->allow) - l, "%s%s", l ? ", " : "",
				 route_table[i].method);
		}
	}
	if (found)
		return found;
	if (m->allow[0]) {
		api_error(resp, 405, "method_not_allowed", NULL, "%s is not allowed here; use %s.",
			  method, m->allow);
		api_header(resp, "Allow: %s", m->allow);
	} else {
		api_error(resp, 404, "not_found", NULL, "No such route; see GET /v1/openapi.json.");
	}
	return NULL;
}

/* The admission of the request being served (a worker serves one at a time), for
 * route_run_deadline. */
static struct admit *route_admitted;

void route_run_deadline(uint64_t wall_ms)
{
	if (route_admitted)
		admit_deadline(route_admitted, wall_ms);
}

/* IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers) for the per-client in-flight
 * cap: the policy's quota, and what is left of it now (remaining runs the client may start). */
static void ratelimit_headers(struct api_resp *resp, uint32_t quota, uint32_t in_flight)
{
	api_header(resp, "RateLimit-Policy: \"inflight\";q=%u", quota);
	api_header(resp, "RateLimit: \"inflight\";r=%u", in_flight < quota ? quota - in_flight : 0);
}

void route_call(const struct route *rt, const struct api_req *req, struct api_resp *resp)
{
	struct admit adm = {-1, -1, -1, 0, 0, NULL, NULL};
	bool admitted = false;

	/* nginx authenticates; this is the second lock on the door should a config ever let an
	 * unauthenticated request through. */
	if ((rt->flags & ROUTE_AUTH) && (!req->client || !req->client[0])) {
		api_error(resp, 401, "unauthorized", NULL,
			  "Send Authorization: Bearer <token> with a valid token.");
		api_header(resp, "WWW-Authenticate: Bearer");
		goto out;
	}
	if (rt->flags & ROUTE_RUNS) {
		struct http_conf hc;

		http_conf(req, &hc);
		int e = admit_acquire(&hc, req->client, &adm);

		/* Counted here, not in admit.c: metrics.c reads admission's slots (no circle). */
		metrics_count(&hc, req->client,
			      e == 0	     ? METRIC_ADMITTED
			      : e == -EUSERS ? METRIC_REJECT_PER_CLIENT
					     : METRIC_REJECT_MACHINE);
		if (e < 0) {
			if (route_refused)
				route_refused(resp, e, &hc);
			else
				api_error(resp, 503, "busy", NULL, "Retry shortly.");
			if (e == -EUSERS) {
				struct admit_caps caps;

				admit_caps(&hc, &caps);
				api_header(resp, "Retry-After: %u",
					   admit_retry_after_s(&hc, req->client));
				ratelimit_headers(resp, caps.per_client, caps.per_client);
			}
			goto out;
		}
		admitted = true;
		route_admitted = &adm;
		admit_deadline(&adm, hc.run_wall_ms);
	}
	rt->handler(req, resp);
	if (resp->status == 0 && !resp->json && resp->file_fd < 0)
		api_error(resp, 500, "internal_error", NULL, "The handler produced no response.");
	if (admitted && adm.per_client)
		ratelimit_headers(resp, adm.per_client, admit_in_flight(&adm));
out:
	route_admitted = NULL;
	if (admitted)
		admit_release(&adm);
	if (!route_defer_enabled)
		route_run_deferred();
}

void route_serve(struct api_req *req, const char *raw_path, char *buf, size_t buflen,
		 struct api_resp *resp, const struct route **rt_out)
{
	struct route_match m;
	size_t half = buflen / 2;
	const struct route *rt;

	/* First half: the decoded path; second half: the captures. */
	rt = route_find(req->method, raw_path, &m, buf + half, buflen - half, resp);
	*rt_out = rt;
	if (!rt)
		return;
	route_decode_path(raw_path, buf);
	req->path = buf;
	memcpy(req->params, m.params, sizeof(req->params));
	route_call(rt, req, resp);
}
