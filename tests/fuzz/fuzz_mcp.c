/* fuzz_mcp.c: libFuzzer driver for POST /mcp (fcgi/handlers/mcp.c and the argument checks of
 * mcp_tools.c), driven through route_serve() with the scripted broker.
 *
 * The input's first byte picks the request headers (none, 2026-07-28 mirrors of tools/call, a
 * foreign Origin); the rest is the body. Beyond the sanitizers: the status is one /mcp may answer
 * (200, 202, 400, 403, 404), a 202 has no body, and any other answer is a JSON-RPC 2.0 response
 * with exactly one of result and error, an error having an integer code. */
#include "fuzz_setup.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_state("fuzz_mcp");
	return 0;
}

static char *none[] = {NULL};
static char *modern[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=tools/call",
			 "HTTP_MCP_NAME=execute", NULL};
static char *encoded[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=tools/call",
			  "HTTP_MCP_NAME==?base64?bGlzdF9maWxlcw?=", NULL};
static char *origin[] = {"HTTP_HOST=127.0.0.1", "HTTP_ORIGIN=https://127.0.0.1", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char **envs[] = {none, modern, encoded, origin};
	struct api_req req = {0};
	struct api_resp resp;
	const struct route *rt = NULL;
	struct json_object *v;
	char buf[64], *body;
	int s;

	if (size < 1)
		return 0;
	body = malloc(size);
	if (!body)
		return 0;
	memcpy(body, data + 1, size - 1);
	body[size - 1] = '\0';
	req.method = "POST";
	req.query = "";
	req.client = "alice";
	req.request_id = "f";
	req.content_type = "application/json";
	req.accept = "";
	req.body = body;
	req.body_len = size - 1;
	req.body_total = -1;
	req.cfg = &cfg;
	req.env = envs[data[0] % 4];
	api_resp_init(&resp);
	route_serve(&req, "/mcp", buf, sizeof(buf), &resp, &rt);
	s = resp.status;
	if (s != 200 && s != 202 && s != 400 && s != 403 && s != 404)
		abort();
	if (s == 202 && resp.json)
		abort();
	if (s != 202) {
		bool has_result, has_error;

		if (!resp.json || !json_object_object_get_ex(resp.json, "jsonrpc", &v) ||
		    strcmp(json_object_get_string(v), "2.0") != 0)
			abort();
		has_result = json_object_object_get_ex(resp.json, "result", NULL);
		has_error = json_object_object_get_ex(resp.json, "error", &v);
		if (has_result == has_error)
			abort();
		if (has_error && (!json_object_object_get_ex(v, "code", &v) ||
				  !json_object_is_type(v, json_type_int)))
			abort();
	}
	api_resp_free(&resp);
	free(body);
	return 0;
}
