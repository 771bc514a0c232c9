/* mcp_tools.c: the MCP tools. Each tool call is made of ordinary requests to the service's own
 * routes (POST /v1/execute, PUT .../files/{path}, ...), built here and passed through the route
 * table with the caller's client name: authentication, admission control (per-client run caps),
 * session ownership and every input check apply exactly as for the HTTP API, and the handlers
 * stay black boxes. Status and JSON of those answers become MCP results:
 *   2xx                 -> structuredContent + the same JSON as a text block; isError when the
 *                          program failed (run status not "ok", evaluate not passed)
 *   400                 -> JSON-RPC -32602 (bad arguments), the API's error object as data
 *   other 4xx, 429, 503 -> a result with isError and the API's message (the model can act on it:
 *                          an unknown session, a full quota, a busy machine)
 *   500 and the rest    -> JSON-RPC -32603 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"

/* read_file returns at most this many bytes of a file (the rest is flagged "truncated"). */
#define MCP_READ_MAX (1u << 20)

/* ---- results ---- */

static void set_err(struct mcp_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(struct mcp_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

/* A CallToolResult: structuredContent (owned, may be NULL), its JSON as a text block (or text
 * when given), isError. */
static struct json_object *tool_result(struct json_object *structured, const char *text,
				       bool is_error)
{
	struct json_object *res = json_object_new_object(), *content = json_object_new_array();
	struct json_object *block = json_object_new_object();

	if (!text)
		text = json_object_to_json_string_ext(
		    structured, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	json_object_object_add(block, "type", json_object_new_string("text"));
	json_object_object_add(block, "text", json_object_new_string(text));
	json_object_array_add(content, block);
	json_object_object_add(res, "content", content);
	if (structured)
		json_object_object_add(res, "structuredContent", structured);
	json_object_object_add(res, "isError", json_object_new_boolean(is_error));
	return res;
}

/* The API's answer in resp as an MCP outcome when it is not a success: NULL and err (-32602,
 * -32603) or an isError result. Returns NULL with err->code 0 when resp is a success. */
static struct json_object *api_failure(const struct api_resp *resp, struct mcp_err *err)
{
	struct json_object *e = NULL, *code = NULL, *msg = NULL;
	char text[700];

	err->code = 0;
	if (resp->status >= 200 && resp->status < 300)
		return NULL;
	if (resp->json && json_object_object_get_ex(resp->json, "error", &e)) {
		json_object_object_get_ex(e, "code", &code);
		json_object_object_get_ex(e, "message", &msg);
	}
	if (resp->status == 400) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: %s",
			msg ? json_object_get_string(msg) : "rejected");
		if (e && json_object_deep_copy(e, &err->data, NULL) != 0)
			err->data = NULL;
		return NULL;
	}
	if ((resp->status > 400 && resp->status < 500) || resp->status == 503 ||
	    resp->status == 507) {
		snprintf(text, sizeof(text), "%s: %s%s",
			 code ? json_object_get_string(code) : "error",
			 msg ? json_object_get_string(msg) : "the request failed",
			 resp->status == 429 || resp->status == 503 ? " Retry in a moment." : "");
		return tool_result(NULL, text, true);
	}
	set_err(err, MCP_INTERNAL_ERROR, "The service failed: %s",
		msg ? json_object_get_string(msg) : "internal error");
	return NULL;
}

/* Take the JSON of a successful answer out of resp (owned by the caller). */
static struct json_object *take_json(struct api_resp *resp)
{
	struct json_object *j = resp->json;

	resp->json = NULL;
	return j ? j : json_object_new_object();
}

static bool run_failed(struct json_object *run)
{
	struct json_object *st;

	return !json_object_object_get_ex(run, "status", &st) ||
	       strcmp(json_object_get_string(st), "ok") != 0;
}

/* ---- arguments ---- */

/* Check args against the tool's inputSchema: an object, no member outside properties, the
 * required ones present. Types are checked by the routes themselves (400 -> -32602). */
static int check_args(struct json_object *tool, struct json_object *args, struct mcp_err *err)
{
	struct json_object *schema, *props, *req;
	const char *name = json_object_get_string(json_object_object_get(tool, "name"));
	size_t i;

	json_object_object_get_ex(tool, "inputSchema", &schema);
	json_object_object_get_ex(schema, "properties", &props);
	if (!json_object_is_type(args, json_type_object)) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments for tool %s: %s", name,
			"arguments must be an object");
		return -1;
	}
	json_object_object_foreach(args, key, val)
	{
		(void)val;
		if (!json_object_object_get_ex(props, key, NULL)) {
			set_err(err, MCP_INVALID_PARAMS,
				"Invalid arguments for tool %s: unknown "
				"argument '%s'",
				name, key);
			return -1;
		}
	}
	if (json_object_object_get_ex(schema, "required", &req))
		for (i = 0; i < json_object_array_length(req); i++) {
			const char *k = json_object_get_string(json_object_array_get_idx(req, i));
			struct json_object *v;

			if (!json_object_object_get_ex(args, k, &v) || !v) {
				set_err(
				    err, MCP_INVALID_PARAMS,
				    "Invalid arguments for tool %s: missing required argument '%s'",
				    name, k);
				return -1;
			}
		}
	return 0;
}

/* A string argument: 0 found, 1 absent (or null), -1 wrong type (err filled). */
static int str_arg(struct json_object *args, const char *key, const char **out, struct mcp_err *err)
{
	struct json_object *v;

	*out = NULL;
	if (!json_object_object_get_ex(args, key, &v) || !v)
		return 1;
	if (!json_object_is_type(v, json_type_string)) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: '%s' must be a string", key);
		return -1;
	}
	*out = json_object_get_string(v);
	/* A NUL inside would silently cut the value short (a path "a\u0000b" would become "a"). */
	if (strlen(*out) != (size_t)json_object_get_string_len(v) && strcmp(key, "content") != 0) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: '%s' contains a NUL character",
			key);
		return -1;
	}
	return 0;
}

/* A copy of args without session_id (the routes take the session in the path). Owned. */
static struct json_object *body_without_session(struct json_object *args)
{
	struct json_object *body = json_object_new_object();

	json_object_object_foreach(args, key, val)
	{
		if (strcmp(key, "session_id") != 0 && val)
			json_object_object_add(body, key, json_object_get(val));
	}
	return body;
}

/* session_id from args, or a new session made for the caller (its id copied into id). Returns 0,
 * or -1 with the failure as *result / err. */
static int session_for(const struct api_req *req, struct json_object *args, bool create, char *id,
		       size_t idlen, struct json_object **result, struct mcp_err *err)
{
	struct api_resp r;
	const char *given;
	struct json_object *o;
	int rc = str_arg(args, "session_id", &given, err);

	if (rc < 0)
		return -1;
	if (rc == 0) {
		if (!given[0] || strlen(given) >= idlen) {
			set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: %s",
				"session_id is not a session id");
			return -1;
		}
		strcpy(id, given);
		return 0;
	}
	if (!create) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: %s", "session_id is required");
		return -1;
	}
	api_resp_init(&r);
	mcp_call_route(req, "POST", NULL, "/v1/sessions", NULL, "{}", 2, &r);
	*result = api_failure(&r, err);
	rc = -1;
	if (!*result && err->code == 0 && r.json && json_object_object_get_ex(r.json, "id", &o) &&
	    strlen(json_object_get_string(o)) < idlen) {
		strcpy(id, json_object_get_string(o));
		rc = 0;
	} else if (!*result && err->code == 0) {
		set_err(err, MCP_INTERNAL_ERROR, "%s", "Creating a session failed.");
	}
	api_resp_free(&r);
	return rc;
}

/* ---- the tools ---- */

#define MCP_ID_MAX 128

/* execute, evaluate and run_command: the run routes, with or without a session. */
static struct json_object *tool_run(const struct api_req *req, const char *tool,
				    struct json_object *args, struct mcp_err *err)
{
	bool is_run = strcmp(tool, "run_command") == 0, is_eval = strcmp(tool, "evaluate") == 0;
	char id[MCP_ID_MAX] = "";
	struct json_object *result = NULL, *body = NULL, *out = NULL, *sid = NULL;
	struct api_resp r;

	api_resp_init(&r);
	json_object_object_get_ex(args, "session_id", &sid);
	if ((is_run || sid) && session_for(req, args, is_run, id, sizeof(id), &result, err) < 0)
		goto out;
	body = body_without_session(args);
	/* Every run goes streamed (only the end event is kept), which makes it stop with the call
	 * (mcp_cancel.c): a client that leaves or sends notifications/cancelled. */
	mcp_call_run(req, id[0] ? id : NULL,
		     is_run    ? "/run"
		     : is_eval ? (id[0] ? "/evaluate" : "/v1/evaluate")
		     : id[0]   ? "/execute"
			       : "/v1/execute",
		     body, &r);
	if ((result = api_failure(&r, err)) || err->code)
		goto out;
	out = take_json(&r);
	if (id[0])
		json_object_object_add(out, "session_id", json_object_new_string(id));
	if (is_eval) {
		struct json_object *p;
		bool passed =
		    json_object_object_get_ex(out, "passed", &p) && json_object_get_boolean(p);

		mcp_size_evaluate(out, req->cfg);
		result = tool_result(out, NULL, !passed);
	} else {
		struct json_object *enc = NULL;

		json_object_object_get_ex(args, "output_encoding", &enc);
		mcp_size_run(out, req->cfg,
			     enc && strcmp(json_object_get_string(enc), "base64") == 0);
		result = tool_result(out, NULL, run_failed(out));
	}
out:
	json_object_put(body);
	api_resp_free(&r);
	return result;
}

static struct json_object *tool_list_files(const struct api_req *req, struct json_object *args,
					   struct mcp_err *err)
{
	char id[MCP_ID_MAX];
	struct json_object *result = NULL, *out;
	struct api_resp r;

	api_resp_init(&r);
	if (session_for(req, args, false, id, sizeof(id), &result, err) < 0)
		goto out;
	mcp_call_route(req, "GET", id, "/files", NULL, NULL, 0, &r);
	if ((result = api_failure(&r, err)) || err->code)
		goto out;
	out = json_object_new_object();
	json_object_object_add(out, "session_id", json_object_new_string(id));
	json_object_object_add(out, "files", take_json(&r));
	json_object_object_add(
	    out, "truncated",
	    json_object_new_boolean(strstr(r.headers, "X-Tree-Truncated") != NULL));
	result = tool_result(out, NULL, false);
out:
	api_resp_free(&r);
	return result;
}

static struct json_object *tool_create_session(const struct api_req *req, struct mcp_err *err)
{
	struct json_object *result = NULL, *out, *v;
	struct api_resp r;

	api_resp_init(&r);
	mcp_call_route(req, "POST", NULL, "/v1/sessions", NULL, "{}", 2, &r);
	if ((result = api_failure(&r, err)) || err->code)
		goto out;
	out = json_object_new_object();
	if (r.json && json_object_object_get_ex(r.json, "id", &v))
		json_object_object_add(out, "session_id", json_object_get(v));
	if (r.json && json_object_object_get_ex(r.json, "expires_at", &v))
		json_object_object_add(out, "expires_at", json_object_get(v));
	result = tool_result(out, NULL, false);
out:
	api_resp_free(&r);
	return result;
}

/* python: a cell in the session's default Python context (POST .../repl), or in context_id
 * (POST .../contexts/{cid}/execute). Those routes come with contexts; without them the route
 * table answers 404, which comes back as the tool's error. */
/* A cell's PNG results (matplotlib figures, PIL images) also as MCP image content, so a model
 * sees the plot itself. */
static void add_plot_images(struct json_object *result, struct json_object *cell)
{
	struct json_object *results = NULL, *content = NULL;
	size_t i, n;

	if (!json_object_object_get_ex(cell, "results", &results) ||
	    !json_object_is_type(results, json_type_array) ||
	    !json_object_object_get_ex(result, "content", &content))
		return;
	n = json_object_array_length(results);
	for (i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(results, i), *png = NULL, *img;

		if (!json_object_object_get_ex(item, "png", &png) ||
		    !json_object_is_type(png, json_type_string))
			continue;
		img = json_object_new_object();
		json_object_object_add(img, "type", json_object_new_string("image"));
		json_object_object_add(img, "data", json_object_get(png));
		json_object_object_add(img, "mimeType", json_object_new_string("image/png"));
		json_object_array_add(content, img);
	}
}

static struct json_object *tool_python(const struct api_req *req, struct json_object *args,
				       struct mcp_err *err)
{
	char id[MCP_ID_MAX] = "", tail[3 * MCP_ID_MAX + 32];
	const char *cid = NULL;
	struct json_object *result = NULL, *body = NULL, *out;
	struct api_resp r;

	api_resp_init(&r);
	if (str_arg(args, "context_id", &cid, err) < 0)
		goto out;
	if (cid && (!cid[0] || strlen(cid) >= MCP_ID_MAX)) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: %s",
			"context_id is not a context id");
		goto out;
	}
	if (session_for(req, args, true, id, sizeof(id), &result, err) < 0)
		goto out;
	body = body_without_session(args);
	json_object_object_del(body, "context_id");
	if (cid) {
		mcp_pct_append(stpcpy(tail, "/contexts/"), cid, false);
		strcat(tail, "/execute");
	} else {
		json_object_object_add(body, "language", json_object_new_string("python"));
		strcpy(tail, "/repl");
	}
	mcp_call_json(req, "POST", id, tail, body, &r);
	if ((result = api_failure(&r, err)) || err->code)
		goto out;
	out = take_json(&r);
	json_object_object_add(out, "session_id", json_object_new_string(id));
	mcp_size_run(out, req->cfg, false);
	result = tool_result(out, NULL, run_failed(out));
	add_plot_images(result, out);
out:
	json_object_put(body);
	api_resp_free(&r);
	return result;
}

static bool valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t len = c < 0x80	      ? 1
			     : (c >> 5) == 6  ? 2
			     : (c >> 4) == 14 ? 3
			     : (c >> 3) == 30 ? 4
					      : 0;
		size_t k;

		if (!len || i + len > n || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4))
			return false;
		for (k = 1; k < len; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		if (len == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0)))
			return false;
		if (len == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90)))
			return false;
		i += len;
	}
	return true;
}

/* The image MIME type of buf by its magic bytes, or NULL. */
static const char *image_type(const unsigned char *b, size_t n)
{
	if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && memcmp(b, "\xff\xd8\xff", 3) == 0)
		return "image/jpeg";
	if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
		return "image/gif";
	if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
		return "image/webp";
	return NULL;
}

static struct json_object *tool_read_file(const struct api_req *req, struct json_object *args,
					  struct mcp_err *err)
{
	char id[MCP_ID_MAX];
	const char *path;
	struct json_object *result = NULL, *out;
	unsigned char *buf = NULL;
	size_t want, got = 0;
	const char *mime;
	bool text;
	struct api_resp r;

	api_resp_init(&r);
	if (session_for(req, args, false, id, sizeof(id), &result, err) < 0 ||
	    str_arg(args, "path", &path, err) != 0)
		goto out;
	mcp_call_route(req, "GET", id, "/files/", path, NULL, 0, &r);
	if ((result = api_failure(&r, err)) || err->code)
		goto out;
	if (r.file_fd < 0) {
		set_err(err, MCP_INTERNAL_ERROR, "%s", "The file route answered no file.");
		goto out;
	}
	want = r.file_len > (off_t)MCP_READ_MAX ? MCP_READ_MAX : (size_t)r.file_len;
	buf = malloc(want + 1);
	while (buf && got < want) {
		ssize_t n = read(r.file_fd, buf + got, want - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (!buf || got != want) {
		set_err(err, MCP_INTERNAL_ERROR, "%s", "Reading the file failed.");
		goto out;
	}
	text = valid_utf8(buf, got);
	out = json_object_new_object();
	json_object_object_add(out, "session_id", json_object_new_string(id));
	json_object_object_add(out, "path", json_object_new_string(path));
	json_object_object_add(out, "size", json_object_new_int64((int64_t)r.file_len));
	json_object_object_add(out, "encoding", json_object_new_string(text ? "utf8" : "base64"));
	json_object_object_add(out, "content",
			       text ? json_object_new_string_len((const char *)buf, (int)got)
				    : api_base64_string(buf, got));
	json_object_object_add(out, "truncated",
			       json_object_new_boolean(r.file_len > (off_t)MCP_READ_MAX));
	result = tool_result(out, NULL, false);
	mime = got == (size_t)r.file_len ? image_type(buf, got) : NULL;
	if (mime) {
		struct json_object *img = json_object_new_object(), *content;

		json_object_object_get_ex(result, "content", &content);
		json_object_object_add(img, "type", json_object_new_string("image"));
		json_object_object_add(img, "data", api_base64_string(buf, got));
		json_object_object_add(img, "mimeType", json_object_new_string(mime));
		json_object_array_add(content, img);
	}
out:
	free(buf);
	api_resp_free(&r);
	return result;
}

int mcp_b64_decode(const char *s, size_t n, unsigned char **out, size_t *outlen)
{
	char why[80];

	return api_base64_decode(s, n, out, outlen, why, sizeof(why));
}

static struct json_object *tool_write_file(const struct api_req *req, struct json_object *args,
					   struct mcp_err *err)
{
	char id[MCP_ID_MAX];
	const char *path, *content, *enc;
	unsigned char *raw = NULL;
	size_t rawlen;
	struct json_object *result = NULL, *out, *size = NULL;
	struct api_resp r;

	api_resp_init(&r);
	if (str_arg(args, "path", &path, err) != 0 ||
	    str_arg(args, "content", &content, err) != 0 ||
	    str_arg(args, "encoding", &enc, err) < 0)
		goto out;
	if (enc && strcmp(enc, "utf8") != 0 && strcmp(enc, "base64") != 0) {
		set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: %s",
			"encoding must be \"utf8\" or \"base64\"");
		goto out;
	}
	if (enc && strcmp(enc, "base64") == 0) {
		if (mcp_b64_decode(
			content,
			json_object_get_string_len(json_object_object_get(args, "content")), &raw,
			&rawlen) < 0) {
			set_err(err, MCP_INVALID_PARAMS, "Invalid arguments: %s",
				"content is not base64");
			goto out;
		}
	} else {
		rawlen = json_object_get_string_len(json_object_object_get(args, "content"));
	}
	/* The session last: a bad argument must not leave an empty session behind. */
	if (session_for(req, args, true, id, sizeof(id), &result, err) < 0)
		goto out;
	mcp_call_route(req, "PUT", id, "/files/", path, raw ? (const char *)raw : content, rawlen,
		       &r);
	if ((result = api_failure(&r, err)) || err->code)
		goto out;
	out = json_object_new_object();
	json_object_object_add(out, "session_id", json_object_new_string(id));
	json_object_object_add(out, "path", json_object_new_string(path));
	if (!r.json || !json_object_object_get_ex(r.json, "size", &size))
		size = NULL;
	json_object_object_add(
	    out, "size", size ? json_object_get(size) : json_object_new_int64((int64_t)rawlen));
	json_object_object_add(out, "created", json_object_new_boolean(r.status == 201));
	result = tool_result(out, NULL, false);
out:
	free(raw);
	api_resp_free(&r);
	return result;
}

struct json_object *mcp_tools_call(const struct api_req *req, const char *name,
				   struct json_object *args, struct mcp_err *err)
{
	struct json_object *tools = mcp_tools_list(req->cfg), *tool = NULL, *empty = NULL;
	struct json_object *result = NULL;
	size_t i;

	err->code = 0;
	err->data = NULL;
	for (i = 0; tools && i < json_object_array_length(tools); i++) {
		struct json_object *t = json_object_array_get_idx(tools, i);

		if (strcmp(json_object_get_string(json_object_object_get(t, "name")), name) == 0)
			tool = t;
	}
	if (!tool) {
		set_err(err, MCP_INVALID_PARAMS, "Unknown tool: %s", name);
		return NULL;
	}
	if (!args)
		args = empty = json_object_new_object();
	if (check_args(tool, args, err) < 0)
		goto out;
	if (strcmp(name, "create_session") == 0)
		result = tool_create_session(req, err);
	else if (strcmp(name, "python") == 0)
		result = tool_python(req, args, err);
	else if (strcmp(name, "list_files") == 0)
		result = tool_list_files(req, args, err);
	else if (strcmp(name, "read_file") == 0)
		result = tool_read_file(req, args, err);
	else if (strcmp(name, "write_file") == 0)
		result = tool_write_file(req, args, err);
	else
		result = tool_run(req, name, args, err);
	if (!result && err->code == 0)
		set_err(err, MCP_INTERNAL_ERROR, "%s", "The tool produced no result.");
out:
	json_object_put(empty);
	return result;
}
