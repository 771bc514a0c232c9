/* tools.c: GET /v1/tools: the MCP tools (mcp_tools.json, the one source) as function-calling
 * schemas for the vendors' APIs, with the route each tool maps to.
 *   ?format=openai            Chat Completions: [{type: function, function: {name, description,
 *                             parameters}}]
 *   ?format=openai-responses  Responses API: [{type: function, name, description, parameters,
 *                             strict: true}], parameters made strict-ready (below)
 *   ?format=anthropic         Messages API: [{name, description, input_schema}]
 *   no format                 {tools (neutral, with route), openai, openai_responses, anthropic}
 * POST /v1/tools/{name}: call one with the arguments a model produced (the body), as MCP's
 * tools/call does (the same code: mcp_tools_call), for function-calling glue that would rather
 * not call each route itself: the answer is the same CallToolResult (content, structuredContent,
 * isError), its outputs sized for a model (head and tail, the bytes omitted counted).
 * OpenAI's strict mode wants every object closed (additionalProperties false) with every property
 * required; an optional property is therefore made nullable (null meaning "omitted"; the routes
 * treat a JSON null as absent), and keywords strict mode does not take are dropped. */
#include <string.h>

#include "handlers.h"
#include "mcp.h"

/* The route each tool calls (the MCP tools call the same through the route table). */
static const char *const tool_routes[][2] = {
    {"create_session", "POST /v1/sessions"},
    {"list_files", "GET /v1/sessions/{session_id}/files"},
    {"read_file", "GET /v1/sessions/{session_id}/files/{path}"},
    {"write_file", "PUT /v1/sessions/{session_id}/files/{path}"},
    {"run_command", "POST /v1/sessions/{session_id}/run"},
    {"execute", "POST /v1/execute (with session_id: POST /v1/sessions/{session_id}/execute)"},
    {"evaluate", "POST /v1/evaluate (with session_id: POST /v1/sessions/{session_id}/evaluate)"},
    {"python", "POST /v1/sessions/{session_id}/repl (with context_id: POST "
	       "/v1/sessions/{session_id}/contexts/{context_id}/execute)"},
};

/* Schema keywords OpenAI's strict mode accepts; the rest are dropped from strict copies. */
static bool strict_keyword(const char *k)
{
	static const char *const ok[] = {"type",
					 "properties",
					 "required",
					 "additionalProperties",
					 "enum",
					 "anyOf",
					 "items",
					 "description",
					 "const",
					 "pattern",
					 "format",
					 "minimum",
					 "maximum",
					 "exclusiveMinimum",
					 "exclusiveMaximum",
					 "minItems",
					 "maxItems",
					 "multipleOf",
					 NULL};

	for (size_t i = 0; ok[i]; i++)
		if (strcmp(ok[i], k) == 0)
			return true;
	return false;
}

static struct json_object *strict_copy(struct json_object *schema);

/* prop made nullable: null added to its type (and enum), or anyOf [prop, null]. Takes prop. */
static struct json_object *nullable(struct json_object *prop)
{
	struct json_object *t = NULL, *e = NULL, *any, *null;

	if (json_object_object_get_ex(prop, "enum", &e) && json_object_is_type(e, json_type_array))
		json_object_array_add(e, NULL);
	if (json_object_object_get_ex(prop, "type", &t) &&
	    json_object_is_type(t, json_type_string)) {
		struct json_object *arr = json_object_new_array();

		json_object_array_add(arr, json_object_get(t));
		json_object_array_add(arr, json_object_new_string("null"));
		json_object_object_add(prop, "type", arr);
		return prop;
	}
	if (t && json_object_is_type(t, json_type_array)) {
		json_object_array_add(t, json_object_new_string("null"));
		return prop;
	}
	any = json_object_new_array();
	null = json_object_new_object();
	json_object_object_add(null, "type", json_object_new_string("null"));
	json_object_array_add(any, prop);
	json_object_array_add(any, null);
	prop = json_object_new_object();
	json_object_object_add(prop, "anyOf", any);
	return prop;
}

/* A strict-ready copy of schema (owned by the caller). */
static struct json_object *strict_copy(struct json_object *schema)
{
	struct json_object *out = json_object_new_object(), *props = NULL, *req = NULL, *v;

	if (!json_object_is_type(schema, json_type_object))
		return json_object_get(schema);
	json_object_object_foreach(schema, key, val)
	{
		if (!strict_keyword(key) || strcmp(key, "properties") == 0 ||
		    strcmp(key, "required") == 0 || strcmp(key, "additionalProperties") == 0)
			continue;
		if (strcmp(key, "items") == 0) {
			json_object_object_add(out, key, strict_copy(val));
		} else if (strcmp(key, "anyOf") == 0 && json_object_is_type(val, json_type_array)) {
			struct json_object *arr = json_object_new_array();

			for (size_t i = 0; i < json_object_array_length(val); i++)
				json_object_array_add(
				    arr, strict_copy(json_object_array_get_idx(val, i)));
			json_object_object_add(out, key, arr);
		} else {
			/* json_object_deep_copy wants an empty destination. */
			v = NULL;
			if (json_object_deep_copy(val, &v, NULL) == 0)
				json_object_object_add(out, key, v);
		}
	}
	if (json_object_object_get_ex(schema, "properties", &props) &&
	    json_object_is_type(props, json_type_object)) {
		struct json_object *nprops = json_object_new_object(),
				   *all = json_object_new_array();

		json_object_object_get_ex(schema, "required", &req);
		json_object_object_foreach(props, pname, pval)
		{
			struct json_object *p = strict_copy(pval);
			bool required = false;

			for (size_t i = 0; req && i < json_object_array_length(req); i++)
				if (strcmp(
					json_object_get_string(json_object_array_get_idx(req, i)),
					pname) == 0)
					required = true;
			json_object_object_add(nprops, pname, required ? p : nullable(p));
			json_object_array_add(all, json_object_new_string(pname));
		}
		json_object_object_add(out, "properties", nprops);
		json_object_object_add(out, "required", all);
	}
	v = NULL;
	json_object_object_get_ex(out, "type", &v);
	if (props || (v && json_object_is_type(v, json_type_string) &&
		      strcmp(json_object_get_string(v), "object") == 0))
		json_object_object_add(out, "additionalProperties", json_object_new_boolean(false));
	return out;
}

/* The tool's inputSchema with the configured languages as the enum of "language". Owned. */
static struct json_object *params_of(const struct config *cfg, struct json_object *tool)
{
	struct json_object *in = NULL, *copy = NULL, *props, *lang;

	if (!json_object_object_get_ex(tool, "inputSchema", &in) ||
	    json_object_deep_copy(in, &copy, NULL) != 0)
		return json_object_new_object();
	if (json_object_object_get_ex(copy, "properties", &props) &&
	    json_object_object_get_ex(props, "language", &lang)) {
		struct json_object *langs = json_object_new_array();

		for (size_t i = 0; i < cfg->nlangs; i++)
			json_object_array_add(langs, json_object_new_string(cfg->langs[i].id));
		json_object_object_add(lang, "enum", langs);
	}
	return copy;
}

static const char *route_of(const char *name)
{
	for (size_t i = 0; i < sizeof(tool_routes) / sizeof(tool_routes[0]); i++)
		if (strcmp(tool_routes[i][0], name) == 0)
			return tool_routes[i][1];
	return "POST /mcp (tools/call)";
}

/* ?format=... of query into out (at most outlen - 1 bytes); "" when absent. */
static void format_of(const char *query, char *out, size_t outlen)
{
	const char *q = query;

	out[0] = '\0';
	while (q && *q) {
		if (strncmp(q, "format=", 7) == 0) {
			size_t n = strcspn(q + 7, "&");

			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, q + 7, n);
			out[n] = '\0';
			return;
		}
		q = strchr(q, '&');
		q = q ? q + 1 : NULL;
	}
}

void h_tools(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *list = mcp_tools_list(req->cfg);
	struct json_object *neutral = json_object_new_array(), *chat = json_object_new_array(),
			   *responses = json_object_new_array(),
			   *anthropic = json_object_new_array();
	struct json_object *out = NULL;
	char format[32];

	format_of(req->query, format, sizeof(format));
	for (size_t i = 0; list && i < json_object_array_length(list); i++) {
		struct json_object *t = json_object_array_get_idx(list, i), *name = NULL,
				   *desc = NULL, *o, *fn;
		struct json_object *params = params_of(req->cfg, t);

		json_object_object_get_ex(t, "name", &name);
		json_object_object_get_ex(t, "description", &desc);
		o = json_object_new_object();
		json_object_object_add(o, "name", json_object_get(name));
		json_object_object_add(o, "description", json_object_get(desc));
		json_object_object_add(o, "parameters", json_object_get(params));
		json_object_object_add(
		    o, "route", json_object_new_string(route_of(json_object_get_string(name))));
		json_object_array_add(neutral, o);

		fn = json_object_new_object();
		json_object_object_add(fn, "name", json_object_get(name));
		json_object_object_add(fn, "description", json_object_get(desc));
		json_object_object_add(fn, "parameters", json_object_get(params));
		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string("function"));
		json_object_object_add(o, "function", fn);
		json_object_array_add(chat, o);

		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string("function"));
		json_object_object_add(o, "name", json_object_get(name));
		json_object_object_add(o, "description", json_object_get(desc));
		json_object_object_add(o, "parameters", strict_copy(params));
		json_object_object_add(o, "strict", json_object_new_boolean(true));
		json_object_array_add(responses, o);

		o = json_object_new_object();
		json_object_object_add(o, "name", json_object_get(name));
		json_object_object_add(o, "description", json_object_get(desc));
		json_object_object_add(o, "input_schema", json_object_get(params));
		json_object_array_add(anthropic, o);
		json_object_put(params);
	}
	if (!format[0]) {
		out = json_object_new_object();
		json_object_object_add(out, "tools", json_object_get(neutral));
		json_object_object_add(out, "openai", json_object_get(chat));
		json_object_object_add(out, "openai_responses", json_object_get(responses));
		json_object_object_add(out, "anthropic", json_object_get(anthropic));
		json_object_object_add(out, "mcp", json_object_new_string("POST /mcp"));
	} else if (strcmp(format, "openai") == 0) {
		out = json_object_get(chat);
	} else if (strcmp(format, "openai-responses") == 0) {
		out = json_object_get(responses);
	} else if (strcmp(format, "anthropic") == 0) {
		out = json_object_get(anthropic);
	}
	if (out)
		api_json(resp, 200, out);
	else
		api_error(resp, 400, "invalid_value", "format",
			  "format must be openai, openai-responses or anthropic (or absent for "
			  "all three).");
	json_object_put(neutral);
	json_object_put(chat);
	json_object_put(responses);
	json_object_put(anthropic);
}

void h_tool_call(const struct api_req *req, struct api_resp *resp)
{
	const char *name = req->params[0];
	struct json_object *args = api_body_object(req, resp), *res;
	struct mcp_err err = {0, "", NULL};
	size_t shard;

	if (!args)
		return;
	if ((shard = mcp_foreign_shard(req, args))) {
		const char *sid =
		    json_object_get_string(json_object_object_get(args, "session_id"));

		api_header(resp, "X-Sbx-Shard: %.*s", (int)shard, sid);
		api_error(resp, 421, "misdirected", "session_id",
			  "Session %.80s is held by host %.*s, which this front should have passed "
			  "the call to.",
			  sid, (int)shard, sid);
		json_object_put(args);
		return;
	}
	res = mcp_tools_call(req, name, args, &err);
	if (res) {
		api_json(resp, 200, res);
	} else if (err.code == MCP_INVALID_PARAMS &&
		   strncmp(err.message, "Unknown tool", 12) == 0) {
		api_error(resp, 404, "tool_not_found", NULL,
			  "No tool is called \"%.64s\": GET /v1/tools lists them.", name);
	} else if (err.code == MCP_INVALID_PARAMS) {
		api_error(resp, 400, "invalid_arguments", NULL, "%s", err.message);
	} else {
		api_error(resp, 500, "internal_error", NULL, "%s", err.message);
	}
	json_object_put(err.data);
	json_object_put(args);
}
