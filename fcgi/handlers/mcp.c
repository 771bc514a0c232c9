/* mcp.c: POST /mcp, the Model Context Protocol over Streamable HTTP (JSON responses; SSE only
 * for a tools/call with a progressToken, see sse_start()).
 *
 * Two protocol generations are served on the one endpoint, chosen per request (the 2026-07-28
 * versioning page, "dual-era" server):
 *   modern (2026-07-28): params._meta["io.modelcontextprotocol/protocolVersion"] on every request,
 *     mirrored by the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers, which must match the
 *     body (else 400, -32020); server/discover; results carry resultType, lists ttlMs/cacheScope;
 *     no protocol session.
 *   legacy (2025-11-25, also 2025-06-18 and 2025-03-26): initialize negotiates the version.
 * The server keeps no state between requests in either era: it never issues an Mcp-Session-Id
 * (optional in 2025-11-25), so a legacy client's requests are independent too, and GET and
 * DELETE /mcp are 405 (no server-initiated stream, no session to end).
 * One JSON-RPC message per POST: both generations dropped batches, an array is -32600. The
 * Origin header, when present (browsers), must be this server's own origin, else 403: it stops a
 * page on another site from driving the endpoint (DNS rebinding); the bearer token is checked by
 * nginx before this runs. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "mcp.h"

#define MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define MCP_MODERN "2026-07-28"
#define MCP_LEGACY_LATEST "2025-11-25"

static const char *const modern_versions[] = {MCP_MODERN, NULL};
static const char *const legacy_versions[] = {MCP_LEGACY_LATEST, "2025-06-18", "2025-03-26", NULL};

static bool in_list(const char *v, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(v, *list) == 0)
			return true;
	return false;
}

/* The reply being built for one message. */
struct mcp_call {
	const struct api_req *req;
	struct json_object *id; /* borrowed from the message, NULL when none or invalid */
	bool modern;
	int http;		 /* HTTP status of the answer */
	struct json_object *out; /* the JSON-RPC response (owned), NULL for 202 */
	bool sse;		 /* headers and a progress event sent: out goes as the last event */
};

#define MCP_PROGRESS_SECS 2 /* between progress events while a call runs */

/* The thread that sends progress events while a streamed call runs. It is the only writer to the
 * connection between sse_start() and sse_finish(), which joins it before the last event. */
struct ticker {
	const struct mcp_call *c;
	struct json_object *token; /* borrowed from the request */
	char tool[101];
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, running;
	pthread_t th;
};

static void reply_error(struct mcp_call *c, int code, struct json_object *data, const char *fmt,
			...) __attribute__((format(printf, 4, 5)));

/* The error response for c (data owned, may be NULL). The HTTP status follows the transport
 * spec: a malformed message or header is 400, an unknown method 404 in the modern era (its
 * versioning relies on it), 200 otherwise (legacy clients read JSON-RPC errors from a 200). */
static void reply_error(struct mcp_call *c, int code, struct json_object *data, const char *fmt,
			...)
{
	struct json_object *o = json_object_new_object(), *e = json_object_new_object();
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	if (c->id)
		json_object_object_add(o, "id", json_object_get(c->id));
	json_object_object_add(e, "code", json_object_new_int(code));
	json_object_object_add(e, "message", json_object_new_string(msg));
	if (data)
		json_object_object_add(e, "data", data);
	json_object_object_add(o, "error", e);
	json_object_put(c->out);
	c->out = o;
	switch (code) {
	case MCP_PARSE_ERROR:
	case MCP_INVALID_REQUEST:
	case MCP_HEADER_MISMATCH:
	case MCP_UNSUPPORTED_VERSION:
		c->http = 400;
		break;
	case MCP_METHOD_NOT_FOUND:
		c->http = c->modern ? 404 : 200;
		break;
	default:
		c->http = 200;
	}
}

static struct json_object *server_info(void)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string("sbx"));
	json_object_object_add(o, "title", json_object_new_string("sbx code sandbox"));
	json_object_object_add(o, "version", json_object_new_string(SBX_VERSION));
	return o;
}

/* The success response for c (result owned); modern results carry resultType and serverInfo. */
static void reply_result(struct mcp_call *c, struct json_object *result)
{
	struct json_object *o = json_object_new_object();

	if (c->modern) {
		struct json_object *meta = json_object_new_object();

		json_object_object_add(result, "resultType", json_object_new_string("complete"));
		json_object_object_add(meta, "io.modelcontextprotocol/serverInfo", server_info());
		json_object_object_add(result, "_meta", meta);
	}
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "id", json_object_get(c->id));
	json_object_object_add(o, "result", result);
	json_object_put(c->out);
	c->out = o;
	c->http = 200;
}

static struct json_object *version_list(void)
{
	struct json_object *a = json_object_new_array();
	const char *const *v;

	for (v = modern_versions; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	for (v = legacy_versions; *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

static void unsupported_version(struct mcp_call *c, const char *requested)
{
	struct json_object *data = json_object_new_object();

	json_object_object_add(data, "supported", version_list());
	json_object_object_add(data, "requested", json_object_new_string(requested));
	reply_error(c, MCP_UNSUPPORTED_VERSION, data, "Unsupported protocol version");
}

static const char INSTRUCTIONS[] =
    "Runs code in isolated sandboxes without network access. Use execute for one-off programs in "
    "any installed language. For work that spans several calls, keep files in a session: "
    "write_file or run_command without a session_id create one and return its id; pass it to "
    "later calls (run_command, list_files, read_file, execute, evaluate). Use evaluate to test "
    "code against cases.";

/* ---- the methods ---- */

static void m_initialize(struct mcp_call *c, struct json_object *params)
{
	struct json_object *v = NULL, *res, *caps, *tools;
	const char *asked;

	if (!json_object_object_get_ex(params, "protocolVersion", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		reply_error(c, MCP_INVALID_PARAMS, NULL,
			    "initialize needs params.protocolVersion (a string)");
		return;
	}
	/* A version we speak is echoed; otherwise we offer our latest and the client decides. */
	asked = json_object_get_string(v);
	res = json_object_new_object();
	json_object_object_add(
	    res, "protocolVersion",
	    json_object_new_string(in_list(asked, legacy_versions) ? asked : MCP_LEGACY_LATEST));
	caps = json_object_new_object();
	tools = json_object_new_object();
	json_object_object_add(tools, "listChanged", json_object_new_boolean(false));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(res, "capabilities", caps);
	json_object_object_add(res, "serverInfo", server_info());
	json_object_object_add(res, "instructions", json_object_new_string(INSTRUCTIONS));
	reply_result(c, res);
}

static void m_discover(struct mcp_call *c)
{
	struct json_object *res = json_object_new_object(), *caps = json_object_new_object();

	json_object_object_add(res, "supportedVersions", version_list());
	json_object_object_add(caps, "tools", json_object_new_object());
	json_object_object_add(res, "capabilities", caps);
	json_object_object_add(res, "instructions", json_object_new_string(INSTRUCTIONS));
	json_object_object_add(res, "ttlMs", json_object_new_int(3600000));
	json_object_object_add(res, "cacheScope", json_object_new_string("public"));
	reply_result(c, res);
}

static void m_tools_list(struct mcp_call *c, struct json_object *params)
{
	struct json_object *tools = mcp_tools_list(c->req->cfg), *res;

	if (json_object_object_get_ex(params, "cursor", NULL)) {
		reply_error(c, MCP_INVALID_PARAMS, NULL,
			    "Invalid cursor: this server lists every tool on one page");
		return;
	}
	if (!tools) {
		reply_error(c, MCP_INTERNAL_ERROR, NULL, "The tool list could not be built");
		return;
	}
	res = json_object_new_object();
	json_object_object_add(res, "tools", json_object_get(tools));
	/* The same list for every client, changed only by a configuration reload. */
	if (c->modern) {
		json_object_object_add(res, "ttlMs", json_object_new_int(300000));
		json_object_object_add(res, "cacheScope", json_object_new_string("public"));
	}
	reply_result(c, res);
}

/* One SSE event carrying a JSON-RPC message. 0, or -1 when the connection failed. */
static int sse_event(const struct mcp_call *c, struct json_object *msg)
{
	size_t n;
	const char *s = json_object_to_json_string_length(
	    msg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	char *ev = malloc(n + 32);
	int rc;

	if (!ev)
		return -1;
	/* A plain JSON string holds no newline, so it is one data line. */
	rc = snprintf(ev, n + 32, "event: message\ndata: %s\n\n", s);
	rc = c->req->out->write(c->req->out->ctx, ev, (size_t)rc);
	free(ev);
	return rc;
}

static void progress_event(const struct mcp_call *c, struct json_object *token, int n,
			   const char *msg)
{
	struct json_object *o = json_object_new_object(), *p = json_object_new_object();

	json_object_object_add(p, "progressToken", json_object_get(token));
	json_object_object_add(p, "progress", json_object_new_int(n));
	json_object_object_add(p, "message", json_object_new_string(msg));
	json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(o, "method", json_object_new_string("notifications/progress"));
	json_object_object_add(o, "params", p);
	sse_event(c, o);
	json_object_put(o);
}

static void *tick(void *arg)
{
	struct ticker *t = arg;
	struct timespec at;
	char msg[160];
	int n = 0;

	pthread_mutex_lock(&t->mu);
	clock_gettime(CLOCK_MONOTONIC, &at);
	while (!t->stop) {
		at.tv_sec += MCP_PROGRESS_SECS;
		while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &at) != ETIMEDOUT)
			;
		if (t->stop)
			break;
		n++;
		snprintf(msg, sizeof(msg), "%s running, %d s", t->tool, n * MCP_PROGRESS_SECS);
		progress_event(t->c, t->token, n, msg);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* A long call with params._meta.progressToken, from a client that accepts text/event-stream, is
 * answered as an event stream: a notifications/progress event now, one every MCP_PROGRESS_SECS
 * from a ticker thread while the run blocks this worker, and the response when the call ends
 * (h_mcp, after sse_stop()). Otherwise the answer stays one JSON body. */
static void sse_start(struct mcp_call *c, struct json_object *params, const char *tool,
		      struct ticker *t)
{
	struct json_object *meta = NULL, *token = NULL;
	const char *accept = c->req->accept;
	pthread_condattr_t ca;
	char msg[160];

	if (!c->req->out || !accept || !strstr(accept, "text/event-stream") ||
	    !json_object_object_get_ex(params, "_meta", &meta) ||
	    !json_object_is_type(meta, json_type_object) ||
	    !json_object_object_get_ex(meta, "progressToken", &token) ||
	    !(json_object_is_type(token, json_type_string) ||
	      json_object_is_type(token, json_type_int)))
		return;
	c->sse = true; /* from here on the answer is the stream, even if the client is gone */
	if (c->req->out->begin(c->req->out->ctx, 200, "text/event-stream",
			       "X-Accel-Buffering: no\r\n") < 0)
		return;
	snprintf(msg, sizeof(msg), "%.100s started", tool);
	progress_event(c, token, 0, msg);
	/* Periodic events from a thread; without one (it could not start), start and end only. */
	t->c = c;
	t->token = token;
	snprintf(t->tool, sizeof(t->tool), "%s", tool);
	t->stop = false;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	t->running = pthread_create(&t->th, NULL, tick, t) == 0;
	if (!t->running) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->mu);
	}
}

/* Stops the ticker, if any, before the last event is written. */
static void sse_stop(struct ticker *t)
{
	if (!t->running)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->th, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	t->running = false;
}

static void m_tools_call(struct mcp_call *c, struct json_object *params)
{
	struct json_object *name = NULL, *args = NULL, *res;
	struct mcp_err err = {0, "", NULL};
	struct ticker t = {.running = false};
	struct mcp_cancel mc;
	struct api_req inner;
	bool cancelled;

	if (!json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		reply_error(c, MCP_INVALID_PARAMS, NULL, "tools/call needs params.name (a string)");
		return;
	}
	json_object_object_get_ex(params, "arguments", &args);
	if (args && !json_object_is_type(args, json_type_object)) {
		reply_error(c, MCP_INVALID_PARAMS, NULL,
			    "Invalid arguments for tool %s: arguments must be an object",
			    json_object_get_string(name));
		return;
	}
	/* The tool's routes watch inner's connection, which also fires on notifications/cancelled.
	 */
	mcp_cancel_begin(&mc, c->req, c->id, &inner);
	sse_start(c, params, json_object_get_string(name), &t);
	res = mcp_tools_call(&inner, json_object_get_string(name), args, &err);
	sse_stop(&t);
	cancelled = mcp_cancel_notified(&mc);
	mcp_cancel_end(&mc);
	if (cancelled) {
		/* No response for a cancelled request (the spec): a stream just ends; a plain POST
		 * still needs a body, an error its client has stopped waiting for. */
		json_object_put(res);
		json_object_put(err.data);
		reply_error(c, MCP_REQUEST_CANCELLED, NULL, "Request cancelled");
		if (c->sse) {
			json_object_put(c->out);
			c->out = NULL;
		}
	} else if (res)
		reply_result(c, res);
	else
		reply_error(c, err.code, err.data, "%s", err.message);
}

/* Mcp-Name as sent: plain, or "=?base64?...?=" decoded. Caller frees; NULL when malformed. */
static char *decode_name(const char *h)
{
	size_t n = strlen(h), outlen;
	unsigned char *out = NULL;

	if (n >= 11 && strncmp(h, "=?base64?", 9) == 0 && strcmp(h + n - 2, "?=") == 0) {
		if (mcp_b64_decode(h + 9, n - 11, &out, &outlen) < 0)
			return NULL;
		if (memchr(out, 0, outlen)) {
			free(out);
			return NULL;
		}
		out[outlen] = '\0';
		return (char *)out;
	}
	return strdup(h);
}

/* The methods both protocol versions answer alike (tools/list, tools/call, ping), and the error
 * for a method neither knows. */
static void m_common(struct mcp_call *c, const char *method, struct json_object *params)
{
	if (strcmp(method, "tools/list") == 0)
		m_tools_list(c, params);
	else if (strcmp(method, "tools/call") == 0)
		m_tools_call(c, params);
	else if (strcmp(method, "ping") == 0)
		reply_result(c, json_object_new_object());
	else
		reply_error(c, MCP_METHOD_NOT_FOUND, NULL, "Method not found: %s", method);
}

/* The modern era's header checks (transport spec, "Server Validation"). 0, or -1 replied. */
static int check_headers(struct mcp_call *c, const char *method, const char *version,
			 struct json_object *params)
{
	const char *hv = mcp_header(c->req, "HTTP_MCP_PROTOCOL_VERSION");
	const char *hm = mcp_header(c->req, "HTTP_MCP_METHOD");
	const char *hn = mcp_header(c->req, "HTTP_MCP_NAME");
	struct json_object *name;
	char *decoded;
	bool same;

	if (!hv || strcmp(hv, version) != 0) {
		reply_error(
		    c, MCP_HEADER_MISMATCH, NULL,
		    "Header mismatch: MCP-Protocol-Version header value '%s' does not match "
		    "body value '%s'",
		    hv ? hv : "(missing)", version);
		return -1;
	}
	if (!hm || strcmp(hm, method) != 0) {
		reply_error(c, MCP_HEADER_MISMATCH, NULL,
			    "Header mismatch: Mcp-Method header value '%s' does not match body "
			    "value '%s'",
			    hm ? hm : "(missing)", method);
		return -1;
	}
	if (strcmp(method, "tools/call") != 0)
		return 0;
	if (!json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return 0; /* m_tools_call answers -32602 */
	decoded = hn ? decode_name(hn) : NULL;
	same = decoded && strcmp(decoded, json_object_get_string(name)) == 0;
	free(decoded);
	if (!same) {
		reply_error(c, MCP_HEADER_MISMATCH, NULL,
			    "Header mismatch: Mcp-Name header value '%s' does not match body value "
			    "'%s'",
			    hn ? hn : "(missing)", json_object_get_string(name));
		return -1;
	}
	return 0;
}

/* A notification: accepted (202). notifications/cancelled stops the call it names, if it runs
 * (mcp_cancel.c); the others (notifications/initialized, ...) need nothing. */
static void notification(struct mcp_call *c, const char *method, struct json_object *params)
{
	if (strcmp(method, "notifications/cancelled") == 0)
		mcp_cancel_notify(c->req, params);
	c->http = 202;
}

/* One JSON-RPC message (an object). Fills c->out and c->http, or leaves out NULL for 202. */
static void handle_message(struct mcp_call *c, struct json_object *msg)
{
	struct json_object *v = NULL, *params = NULL, *meta = NULL, *mv = NULL;
	const char *method, *hv = mcp_header(c->req, "HTTP_MCP_PROTOCOL_VERSION");
	bool has_id = json_object_object_get_ex(msg, "id", &v);

	if (has_id &&
	    (json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int)))
		c->id = v;
	if (!json_object_object_get_ex(msg, "jsonrpc", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), "2.0") != 0) {
		reply_error(c, MCP_INVALID_REQUEST, NULL,
			    "Invalid Request: jsonrpc must be \"2.0\"");
		return;
	}
	if (has_id && !c->id) {
		reply_error(c, MCP_INVALID_REQUEST, NULL,
			    "Invalid Request: id must be a string or an integer");
		return;
	}
	if (!json_object_object_get_ex(msg, "method", &v)) {
		/* A response to a server request: this server sends none, nothing to do. */
		if (json_object_object_get_ex(msg, "result", NULL) ||
		    json_object_object_get_ex(msg, "error", NULL)) {
			c->http = 202;
			return;
		}
		reply_error(c, MCP_INVALID_REQUEST, NULL, "Invalid Request: no method");
		return;
	}
	if (!json_object_is_type(v, json_type_string)) {
		reply_error(c, MCP_INVALID_REQUEST, NULL,
			    "Invalid Request: method must be a string");
		return;
	}
	method = json_object_get_string(v);
	if (json_object_object_get_ex(msg, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object)) {
		reply_error(c, MCP_INVALID_PARAMS, NULL, "params must be an object");
		return;
	}
	if (params && json_object_object_get_ex(params, "_meta", &meta) &&
	    json_object_is_type(meta, json_type_object))
		json_object_object_get_ex(meta, MCP_META_VERSION, &mv);

	if (mv) {
		c->modern = true;
		if (!json_object_is_type(mv, json_type_string) ||
		    !in_list(json_object_get_string(mv), modern_versions)) {
			unsupported_version(c, json_object_get_string(mv));
			return;
		}
		if (check_headers(c, method, json_object_get_string(mv), params) < 0)
			return;
		if (!c->id) {
			notification(c, method, params);
			return;
		}
		if (strcmp(method, "server/discover") == 0)
			m_discover(c);
		else
			m_common(c, method, params);
		return;
	}
	/* Legacy: no per-request version in the body. */
	if (hv && !in_list(hv, legacy_versions)) {
		if (in_list(hv, modern_versions))
			reply_error(
			    c, MCP_HEADER_MISMATCH, NULL,
			    "Header mismatch: MCP-Protocol-Version header value '%s' but the "
			    "body has no params._meta[\"" MCP_META_VERSION "\"]",
			    hv);
		else
			unsupported_version(c, hv);
		return;
	}
	if (!c->id) {
		notification(c, method, params);
		return;
	}
	if (strcmp(method, "initialize") == 0)
		m_initialize(c, params);
	else
		m_common(c, method, params);
}

/* Origin, when sent, must be this server's: https://<Host>, where Host names this server (its
 * server_name or a loopback address). Host alone is not enough: a DNS-rebinding page sends its own
 * name as both Host and Origin. */
static bool origin_ok(const struct api_req *req, const char *origin)
{
	static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]", NULL};
	const char *host = mcp_header(req, "HTTP_HOST"), *server = mcp_header(req, "SERVER_NAME");
	size_t hlen;
	const char *const *l;

	if (!host || !host[0] || strncasecmp(origin, "https://", 8) != 0 ||
	    strcasecmp(origin + 8, host) != 0)
		return false;
	/* The name without the port ("[::1]:8443" -> "[::1]"). */
	hlen = host[0] == '[' ? (size_t)(strchr(host, ']') ? strchr(host, ']') - host + 1 : 0)
			      : strcspn(host, ":");
	if (server && server[0] && strlen(server) == hlen && strncasecmp(host, server, hlen) == 0)
		return true;
	for (l = loopback; *l; l++)
		if (strlen(*l) == hlen && strncasecmp(host, *l, hlen) == 0)
			return true;
	return false;
}

size_t mcp_foreign_shard(const struct api_req *req, struct json_object *args)
{
	static const char shard_chars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	const struct config *cfg = req->cfg;
	struct json_object *s;
	const char *sid, *dash;
	size_t n;

	if (!cfg || !cfg->shard || mcp_header(req, "SBX_MCP_ROUTED") || !args ||
	    !json_object_object_get_ex(args, "session_id", &s) ||
	    !json_object_is_type(s, json_type_string))
		return 0;
	sid = json_object_get_string(s);
	dash = strchr(sid, '-');
	n = dash ? (size_t)(dash - sid) : 0;
	if (n == 0 || n > CONFIG_SHARD_MAX || strspn(sid, shard_chars) != n ||
	    strlen(dash + 1) != 36 || (strlen(cfg->shard) == n && strncmp(sid, cfg->shard, n) == 0))
		return 0;
	return n;
}

/* In a cluster, a tools/call whose arguments name a session of another host is answered 421
 * with "X-Sbx-Shard: <shard>" (mcp_foreign_shard). True when answered. */
static bool misdirected(struct mcp_call *c, struct json_object *msg, struct api_resp *resp)
{
	struct json_object *m, *p, *a = NULL;
	const char *sid;
	size_t n;

	if (!json_object_object_get_ex(msg, "method", &m) ||
	    !json_object_is_type(m, json_type_string) ||
	    strcmp(json_object_get_string(m), "tools/call") != 0 ||
	    !json_object_object_get_ex(msg, "params", &p) ||
	    !json_object_object_get_ex(p, "arguments", &a) || !(n = mcp_foreign_shard(c->req, a)))
		return false;
	sid = json_object_get_string(json_object_object_get(a, "session_id"));
	if (json_object_object_get_ex(msg, "id", &m) &&
	    (json_object_is_type(m, json_type_string) || json_object_is_type(m, json_type_int)))
		c->id = m;
	api_header(resp, "X-Sbx-Shard: %.*s", (int)n, sid);
	reply_error(c, MCP_INVALID_PARAMS, NULL,
		    "Misdirected: session %.80s is held by host %.*s, which this front should have "
		    "passed the call to",
		    sid, (int)n, sid);
	c->http = 421;
	return true;
}

void h_mcp(const struct api_req *req, struct api_resp *resp)
{
	struct mcp_call c = {req, NULL, false, 200, NULL, false};
	struct json_object *msg = NULL;
	const char *origin = mcp_header(req, "HTTP_ORIGIN"), *b = req->body;
	struct api_resp scratch;

	api_resp_init(&scratch);
	if (origin && !origin_ok(req, origin)) {
		reply_error(&c, MCP_INVALID_REQUEST, NULL,
			    "Forbidden: Origin %.200s is not allowed on this endpoint", origin);
		c.http = 403;
		goto out;
	}
	while (b && (*b == ' ' || *b == '\t' || *b == '\r' || *b == '\n'))
		b++;
	if (b && *b == '[') {
		reply_error(&c, MCP_INVALID_REQUEST, NULL,
			    "Invalid Request: batches are not supported (protocol 2025-11-25 and "
			    "later): send one JSON-RPC message per POST");
		goto out;
	}
	msg = api_body_object(req, &scratch);
	if (!msg) {
		/* Valid JSON that is not an object is a bad request, anything else a parse error.
		 */
		struct json_object *any = req->body ? json_tokener_parse(req->body) : NULL;

		if (any)
			reply_error(&c, MCP_INVALID_REQUEST, NULL,
				    "Invalid Request: the body must be one JSON-RPC object");
		else
			reply_error(&c, MCP_PARSE_ERROR, NULL, "Parse error: Invalid JSON");
		json_object_put(any);
		goto out;
	}
	if (!misdirected(&c, msg, resp))
		handle_message(&c, msg);
out:
	api_resp_free(&scratch);
	if (c.sse) {
		if (c.out)
			sse_event(&c, c.out);
		json_object_put(c.out);
		resp->status = 200;
		resp->sent = true;
	} else if (c.out)
		api_json(resp, c.http, c.out);
	else
		resp->status = c.http;
	json_object_put(msg);
}
