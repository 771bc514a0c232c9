/* fcgi_mcp.c: POST /mcp driven through route_serve() without sockets: era selection, the header
 * checks of 2026-07-28, JSON-RPC errors and their HTTP statuses, Origin, notifications, and a
 * tools/call that reaches the scripted broker (fcgi_fake_sbx.c) through the execute route. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../fcgi/handlers/handlers.h"
#include "../lib/tap.h"
#include "fcgi_fake_sbx.h"

static struct config cfg;

struct call {
	struct api_resp resp;
	const struct route *rt;
	char buf[4096];
};

/* POST body to /mcp as client alice with env (NULL-terminated "NAME=value" list, may be NULL). */
static void mcp(struct call *c, const char *body, char **env)
{
	struct api_req req;

	memset(&req, 0, sizeof(req));
	memset(c, 0, sizeof(*c));
	api_resp_init(&c->resp);
	req.method = "POST";
	req.query = "";
	req.client = "alice";
	req.request_id = "t";
	req.content_type = "application/json";
	req.accept = "application/json, text/event-stream";
	req.body = body;
	req.body_len = strlen(body);
	req.body_total = -1;
	req.cfg = &cfg;
	req.env = env;
	route_serve(&req, "/mcp", c->buf, sizeof(c->buf), &c->resp, &c->rt);
}

/* error.code of the answer, or 0. */
static int rpc_code(struct call *c)
{
	struct json_object *e, *code;

	if (!c->resp.json || !json_object_object_get_ex(c->resp.json, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &code))
		return 0;
	return json_object_get_int(code);
}

static struct json_object *result(struct call *c)
{
	struct json_object *r = NULL;

	if (c->resp.json)
		json_object_object_get_ex(c->resp.json, "result", &r);
	return r;
}

#define META "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}"

static void test_legacy(void)
{
	struct call c;
	struct json_object *r, *v;

	mcp(&c,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
	    "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\","
	    "\"version\":\"1\"}}}",
	    NULL);
	r = result(&c);
	TAP_OK(c.resp.status == 200 && r && json_object_object_get_ex(r, "protocolVersion", &v) &&
		   strcmp(json_object_get_string(v), "2025-06-18") == 0,
	       "initialize echoes a legacy version it speaks");
	TAP_OK(!strstr(c.resp.headers, "Mcp-Session-Id"), "no Mcp-Session-Id is issued");
	api_resp_free(&c.resp);

	mcp(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL);
	TAP_OK(c.resp.status == 202 && !c.resp.json, "a notification: 202, no body");
	api_resp_free(&c.resp);

	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"nope\"}", NULL);
	TAP_OK(c.resp.status == 200 && rpc_code(&c) == -32601,
	       "legacy unknown method: -32601 in a 200");
	api_resp_free(&c.resp);

	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}", NULL);
	TAP_OK(rpc_code(&c) == -32602, "initialize without protocolVersion: -32602");
	api_resp_free(&c.resp);
}

static void test_modern(void)
{
	struct call c;
	struct json_object *r, *v;
	char *ok_env[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=tools/list",
			  NULL};
	char *bad_method[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=ping", NULL};
	char *no_version[] = {"HTTP_MCP_METHOD=tools/list", NULL};
	char *call_env[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=tools/call",
			    "HTTP_MCP_NAME=execute", NULL};
	char *wrong_name[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=tools/call",
			      "HTTP_MCP_NAME=read_file", NULL};
	char *b64_name[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28", "HTTP_MCP_METHOD=tools/call",
			    "HTTP_MCP_NAME==?base64?ZXhlY3V0ZQ==?=", NULL};
	char *unknown_env[] = {"HTTP_MCP_PROTOCOL_VERSION=2026-07-28",
			       "HTTP_MCP_METHOD=prompts/list", NULL};
	const char *call_body =
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{" META
	    ",\"name\":\"execute\",\"arguments\":{\"language\":\"python\",\"code\":\"print(1)\"}}}";

	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}",
	    ok_env);
	r = result(&c);
	TAP_OK(c.resp.status == 200 && r && json_object_object_get_ex(r, "ttlMs", NULL) &&
		   json_object_object_get_ex(r, "resultType", NULL) &&
		   json_object_object_get_ex(r, "tools", &v) && json_object_array_length(v) == 8,
	       "2026-07-28 tools/list: eight tools, ttlMs, resultType");
	api_resp_free(&c.resp);

	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}",
	    bad_method);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32020, "Mcp-Method mismatch: 400 -32020");
	api_resp_free(&c.resp);
	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}",
	    no_version);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32020,
	       "MCP-Protocol-Version missing: 400 -32020");
	api_resp_free(&c.resp);
	mcp(&c, call_body, wrong_name);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32020, "Mcp-Name mismatch: 400 -32020");
	api_resp_free(&c.resp);
	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/list\",\"params\":{" META "}}",
	    unknown_env);
	TAP_OK(c.resp.status == 404 && rpc_code(&c) == -32601, "modern unknown method: 404 -32601");
	api_resp_free(&c.resp);
	mcp(&c,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
	    "\"io.modelcontextprotocol/protocolVersion\":\"2099-01-01\"}}}",
	    ok_env);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32022, "unsupported version: 400 -32022");
	api_resp_free(&c.resp);

	fake_sbx_next = (struct sbx_result){0};
	fake_sbx_next.status = SBX_OK;
	fake_sbx_next.out = (char *)"1\n";
	fake_sbx_next.out_len = 2;
	fake_sbx_rc = 0;
	fake_sbx_calls = 0;
	mcp(&c, call_body, call_env);
	r = result(&c);
	TAP_OK(c.resp.status == 200 && r && json_object_object_get_ex(r, "structuredContent", &v) &&
		   json_object_object_get_ex(v, "stdout", &v) &&
		   strcmp(json_object_get_string(v), "1\n") == 0 && fake_sbx_calls == 1,
	       "tools/call execute reaches the broker through the execute route");
	TAP_OK(r && json_object_object_get_ex(r, "isError", &v) && !json_object_get_boolean(v),
	       "a program that exits 0: isError false");
	api_resp_free(&c.resp);

	fake_sbx_next.status = SBX_ERROR;
	fake_sbx_next.exit_code = 2;
	mcp(&c, call_body, b64_name);
	r = result(&c);
	TAP_OK(c.resp.status == 200 && r && json_object_object_get_ex(r, "isError", &v) &&
		   json_object_get_boolean(v),
	       "a base64 Mcp-Name is decoded; a failing program is isError true");
	api_resp_free(&c.resp);
}

static void test_errors(void)
{
	struct call c;
	char *evil[] = {"HTTP_HOST=127.0.0.1:8443", "HTTP_ORIGIN=https://evil.example", NULL};
	char *own[] = {"HTTP_HOST=127.0.0.1:8443", "HTTP_ORIGIN=https://127.0.0.1:8443", NULL};
	char *rebind[] = {"HTTP_HOST=rebind.example", "HTTP_ORIGIN=https://rebind.example",
			  "SERVER_NAME=localhost", NULL};
	char *named[] = {"HTTP_HOST=sbx.example.org", "HTTP_ORIGIN=https://sbx.example.org",
			 "SERVER_NAME=sbx.example.org", NULL};
	const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";

	mcp(&c, "{\"jsonrpc\":", NULL);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32700, "truncated JSON: 400 -32700");
	api_resp_free(&c.resp);
	mcp(&c, " [{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", NULL);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32600, "batch: 400 -32600");
	api_resp_free(&c.resp);
	mcp(&c, "\"ping\"", NULL);
	TAP_OK(c.resp.status == 400 && rpc_code(&c) == -32600, "a JSON string: 400 -32600");
	api_resp_free(&c.resp);
	mcp(&c, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", NULL);
	TAP_OK(rpc_code(&c) == -32600, "a null id: -32600");
	api_resp_free(&c.resp);
	mcp(&c,
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
	    "\"read_file\",\"arguments\":{\"session_id\":\"s\",\"path\":\"a\\u0000b\"}}}",
	    NULL);
	TAP_OK(rpc_code(&c) == -32602, "a NUL inside a path argument: -32602");
	api_resp_free(&c.resp);
	mcp(&c, ping, evil);
	TAP_OK(c.resp.status == 403 && rpc_code(&c) != 0, "a foreign Origin: 403");
	api_resp_free(&c.resp);
	mcp(&c, ping, rebind);
	TAP_OK(c.resp.status == 403, "Origin equal to a Host that is not this server: 403");
	api_resp_free(&c.resp);
	mcp(&c, ping, own);
	TAP_OK(c.resp.status == 200, "the server's own (loopback) Origin: 200");
	api_resp_free(&c.resp);
	mcp(&c, ping, named);
	TAP_OK(c.resp.status == 200, "the server_name's Origin: 200");
	api_resp_free(&c.resp);
}

/* The per-client run cap holds for tool calls as for the API: alice at her cap gets a result the
 * model can read (isError, too_many_runs), and the run never reaches the broker. */
static void test_admission(void)
{
	struct admit held[64];
	struct api_resp r;
	struct call c;
	struct json_object *res, *v;
	uint32_t i, n = cfg.runs_per_client < 64 ? cfg.runs_per_client : 64;
	const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
			   "\"name\":\"execute\",\"arguments\":{\"language\":\"python\","
			   "\"code\":\"print(1)\"}}}";

	api_resp_init(&r);
	for (i = 0; i < n; i++)
		admit_acquire(&(struct http_conf){.state_dir = cfg.state_dir,
						  .runs_per_client = cfg.runs_per_client},
			      "alice", &held[i]);
	fake_sbx_calls = 0;
	mcp(&c, body, NULL);
	res = result(&c);
	TAP_OK(c.resp.status == 200 && res && json_object_object_get_ex(res, "isError", &v) &&
		   json_object_get_boolean(v) &&
		   strstr(json_object_to_json_string(res), "too_many_runs") && fake_sbx_calls == 0,
	       "tools/call at the client's run cap: isError too_many_runs, nothing ran");
	api_resp_free(&c.resp);
	for (i = 0; i < n; i++)
		admit_release(&held[i]);
	api_resp_free(&r);
}

int main(void)
{
	char dir[] = "/tmp/fcgi-mcp-XXXXXX", path[4200], err[256], cmd[256];

	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	setenv("SBX_STATE_DIR", dir, 1);
	setenv("SBX_BROKER_SOCKET", "/nonexistent/sbxd.sock", 1);
	snprintf(path, sizeof(path), "%s/scratch", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/fcgi/sbx.conf.json", config_repo_dir());
	if (config_load(path, &cfg, err, sizeof(err)) < 0) {
		printf("Bail out! config: %s\n", err);
		return 1;
	}
	test_legacy();
	test_modern();
	test_errors();
	test_admission();
	config_free(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", dir);
	return tap_done();
}
