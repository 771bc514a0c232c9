/* fcgi_handlers.c: routing, strict JSON, the error envelope, limits and the run-result shape,
 * driven through route_serve() without sockets; the broker is scripted (fcgi_fake_sbx.c). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../fcgi/handlers/handlers.h"
#include "../../fcgi/http/metrics.h"
#include "../lib/tap.h"
#include "fcgi_fake_sbx.h"

static struct config cfg;

struct call {
	struct api_resp resp;
	const struct route *rt;
	char buf[4096];
	const char *text; /* serialized body */
};

static void call(struct call *c, const char *method, const char *path, const char *client,
		 const char *body)
{
	struct api_req req;

	memset(&req, 0, sizeof(req));
	memset(c, 0, sizeof(*c));
	api_resp_init(&c->resp);
	req.method = method;
	req.query = "";
	req.client = client ? client : "";
	req.request_id = "t";
	req.content_type = "application/json";
	req.accept = "";
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.body_total = -1;
	req.cfg = &cfg;
	route_serve(&req, path, c->buf, sizeof(c->buf), &c->resp, &c->rt);
	c->text = c->resp.json
		      ? json_object_to_json_string_ext(c->resp.json, JSON_C_TO_STRING_PLAIN)
		      : "";
}

static void done_call(struct call *c)
{
	api_resp_free(&c->resp);
}

/* The value at a dotted path ("error.code") as a string, or "" when absent. */
static const char *at(struct call *c, const char *dotted)
{
	static char out[512];
	char key[128], *save = NULL, *tok;
	struct json_object *o = c->resp.json;

	snprintf(key, sizeof(key), "%s", dotted);
	for (tok = strtok_r(key, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(tok));
		else if (!json_object_object_get_ex(o, tok, &o))
			return "";
	}
	if (!o)
		return "null";
	snprintf(out, sizeof(out), "%s",
		 json_object_is_type(o, json_type_string)
		     ? json_object_get_string(o)
		     : json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	return out;
}

static void expect_error(const char *method, const char *path, const char *client, const char *body,
			 int status, const char *code, const char *field, const char *desc)
{
	struct call c;

	call(&c, method, path, client, body);
	TAP_OK(c.resp.status == status && strcmp(at(&c, "error.code"), code) == 0 &&
		   (!field || strcmp(at(&c, "error.field"), field) == 0),
	       "%s: %d %s%s%s", desc, status, code, field ? " field=" : "", field ? field : "");
	if (c.resp.status != status || strcmp(at(&c, "error.code"), code) != 0)
		TAP_DIAG("got %d %s", c.resp.status, c.text);
	done_call(&c);
}

static void fake_result(enum sbx_status st, int code, int sig, const char *out, size_t out_len)
{
	memset(&fake_sbx_next, 0, sizeof(fake_sbx_next));
	fake_sbx_next.status = st;
	fake_sbx_next.exit_code = code;
	fake_sbx_next.signal = sig;
	fake_sbx_next.out = (char *)out;
	fake_sbx_next.out_len = out_len;
	fake_sbx_next.err = (char *)"warn\n";
	fake_sbx_next.err_len = 5;
	fake_sbx_next.wall_ms = 12;
	fake_sbx_next.cpu_ms = 9;
	fake_sbx_next.memory_kb = 4000;
	fake_sbx_rc = 0;
}

static void test_routing(void)
{
	struct call c;
	struct route_match m;
	struct api_resp r;
	char buf[512];
	const struct route *rt;

	call(&c, "GET", "/", NULL, NULL);
	TAP_OK(c.resp.status == 200 && strcmp(c.text, "\"ping\"") == 0,
	       "GET / is the JSON string ping");
	done_call(&c);
	expect_error("GET", "/nope", "alice", NULL, 404, "not_found", NULL, "unknown path");
	expect_error("GET", "/v1/health/", NULL, NULL, 404, "not_found", NULL,
		     "trailing slash is another path");
	call(&c, "GET", "/v1/execute", "alice", NULL);
	TAP_OK(c.resp.status == 405 && strstr(c.resp.headers, "Allow: POST\r\n"),
	       "wrong method: 405 with Allow");
	TAP_OK(strcmp(at(&c, "error.code"), "method_not_allowed") == 0, "405 is in the envelope");
	done_call(&c);
	call(&c, "PATCH", "/v1/sessions/abc", "alice", NULL);
	TAP_OK(c.resp.status == 405 && strstr(c.resp.headers, "Allow: GET, DELETE\r\n"),
	       "Allow lists every method of the path");
	done_call(&c);
	call(&c, "HEAD", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 200 && c.rt && c.rt->handler == h_health,
	       "HEAD is routed like GET");
	done_call(&c);
	expect_error("GET", "/v1/sessions/a%00b", "alice", NULL, 400, "malformed_path", NULL,
		     "encoded NUL");
	expect_error("GET", "/v1/sessions/a%zzb", "alice", NULL, 400, "malformed_path", NULL,
		     "malformed escape");
	expect_error("GET", "/v1/sessions/a%2", "alice", NULL, 400, "malformed_path", NULL,
		     "truncated escape");
	expect_error("GET", "/v1/sessions/a%2Fb", "alice", NULL, 404, "not_found", NULL,
		     "encoded / inside {id}");

	api_resp_init(&r);
	rt =
	    route_find("GET", "/v1/sessions/s-1/files/dir/a%20b%2Fc.txt", &m, buf, sizeof(buf), &r);
	TAP_OK(rt && rt->handler == h_file_get && strcmp(m.params[0], "s-1") == 0 &&
		   strcmp(m.params[1], "dir/a b/c.txt") == 0,
	       "{id} and {path...} captures are decoded");
	rt = route_find("GET", "/v1/sessions/s-1/files", &m, buf, sizeof(buf), &r);
	TAP_OK(rt && rt->handler == h_files_tree, "files tree is not a file path");
	rt = route_find("PUT", "/v1/sessions/s-1/files/x", &m, buf, sizeof(buf), &r);
	TAP_OK(rt && (rt->flags & ROUTE_STREAM_IN) && !(rt->flags & ROUTE_JSON),
	       "PUT file streams its body");
	rt = route_find("GET", "/v1/%73essions", &m, buf, sizeof(buf), &r);
	TAP_OK(rt && rt->handler == h_sessions_list, "literal segments compare decoded");
	api_resp_free(&r);

	expect_error("GET", "/v1/languages", NULL, NULL, 401, "unauthorized", NULL,
		     "no client name");
	call(&c, "GET", "/v1/languages", NULL, NULL);
	TAP_OK(strstr(c.resp.headers, "WWW-Authenticate: Bearer\r\n") != NULL,
	       "401 carries WWW-Authenticate");
	done_call(&c);
}

/* A listening socket for the health pool's check of the main pool: Unix at path, or TCP on
 * 127.0.0.1 (its port into *port). */
static int listener(const char *path, unsigned *port)
{
	int fd = socket(path ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(in);

	if (path) {
		snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&un, sizeof(un)) < 0 || listen(fd, 4) < 0)
			return -1;
		return fd;
	}
	if (bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&in, &len) < 0)
		return -1;
	*port = ntohs(in.sin_port);
	return fd;
}

/* Health answered by the health pool (cfg.pool_listen set) reports whether the main pool listens.
 */
static void test_health_pool_check(void)
{
	struct call c;
	char path[] = "/tmp/sbx-unit-pool.XXXXXX", sock[64], tcp[32];
	unsigned port = 0;
	int fd;

	TAP_OK(mkdtemp(path) != NULL, "a directory for a pool socket");
	snprintf(sock, sizeof(sock), "%s/fcgi.sock", path);
	usleep(300 * 1000); /* past the cache of the last good answer */
	cfg.pool_listen = sock;
	fd = listener(sock, NULL);
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(fd >= 0 && c.resp.status == 200 && strcmp(at(&c, "pool"), "listening") == 0,
	       "the main pool's Unix socket listens: 200, pool listening");
	done_call(&c);
	close(fd);
	usleep(300 * 1000);
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 503 && strcmp(at(&c, "pool"), "not_listening") == 0 &&
		   strcmp(at(&c, "error.code"), "pool_unavailable") == 0 &&
		   strcmp(at(&c, "status"), "unavailable") == 0 &&
		   strstr(c.resp.headers, "Retry-After:"),
	       "nothing listens there (the file is still there): 503 pool_unavailable");
	done_call(&c);
	fd = listener(NULL, &port);
	snprintf(tcp, sizeof(tcp), "127.0.0.1:%u", port);
	cfg.pool_listen = tcp;
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(fd >= 0 && c.resp.status == 200 && strcmp(at(&c, "pool"), "listening") == 0,
	       "a TCP pool (HOST:PORT) that listens: 200");
	done_call(&c);
	close(fd);
	usleep(300 * 1000);
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 503 && strcmp(at(&c, "error.code"), "pool_unavailable") == 0,
	       "and once it is closed: 503");
	done_call(&c);
	cfg.pool_listen = NULL;
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 200 && strcmp(at(&c, "pool"), "self") == 0,
	       "answered by the main pool itself (no SBX_POOL_LISTEN): pool self");
	done_call(&c);
	unlink(sock);
	rmdir(path);
}

static void test_info(void)
{
	struct call c;

	call(&c, "GET", "/v1/languages", "alice", NULL);
	TAP_OK(c.resp.status == 200 && json_object_array_length(c.resp.json) == 5,
	       "five languages");
	TAP_OK(
	    strcmp(at(&c, "0.id"), "python") == 0 && strcmp(at(&c, "0.compiled"), "false") == 0 &&
		strstr(at(&c, "0.aliases"), "\"py\"") && strncmp(at(&c, "0.version"), "3.", 2) == 0,
	    "python: id, aliases, version detected (%s)", at(&c, "0.version"));
	TAP_OK(strcmp(at(&c, "3.id"), "c") == 0 && strcmp(at(&c, "3.compiled"), "true") == 0,
	       "c is compiled");
	done_call(&c);

	fake_sbx_probe.usable = true;
	fake_sbx_probe_rc = 0;
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 200 && strcmp(at(&c, "status"), "ok") == 0 &&
		   strcmp(at(&c, "sandbox.usable"), "true") == 0 &&
		   strcmp(at(&c, "version"), SBX_VERSION) == 0,
	       "health without auth: ok, version, sandbox");
	{
		const char *body = json_object_to_json_string(c.resp.json);

		TAP_OK(!strstr(body, "cgroup_version") && !strstr(body, "detail"),
		       "... without the broker's detail or cgroup version: %s", body);
	}
	done_call(&c);
	call(&c, "GET", "/v1/health", "alice", NULL);
	TAP_OK(c.resp.status == 200 && strcmp(at(&c, "sandbox.cgroup_version"), "2") == 0,
	       "health with a client: the sandbox's detail too");
	done_call(&c);
	fake_sbx_probe.usable = false;
	fake_sbx_probe_rc = -1;
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 200, "a good probe is reused for a moment");
	done_call(&c);
	usleep(300 * 1000);
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 503 && strcmp(at(&c, "sandbox.usable"), "false") == 0 &&
		   strcmp(at(&c, "error.code"), "sandbox_unavailable") == 0,
	       "unusable sandbox: 503 with detail and envelope");
	done_call(&c);
	fake_sbx_probe.usable = true;
	fake_sbx_probe_rc = 0;
	call(&c, "GET", "/v1/health", NULL, NULL);
	TAP_OK(c.resp.status == 200, "a failed probe is never reused");
	done_call(&c);
	{
		int64_t saved = cfg.disk_reserve_mb;

		call(&c, "GET", "/v1/health", NULL, NULL);
		TAP_OK(atoll(at(&c, "disk_free_bytes")) > 0 && at(&c, "disk_reserve_bytes")[0],
		       "health reports disk_free_bytes (%s) and disk_reserve_bytes (%s)",
		       at(&c, "disk_free_bytes"), at(&c, "disk_reserve_bytes"));
		done_call(&c);
		cfg.disk_reserve_mb = INT64_MAX >> 21; /* more than the disk: below the reserve */
		call(&c, "GET", "/v1/health", NULL, NULL);
		TAP_OK(c.resp.status == 503 && strcmp(at(&c, "status"), "unavailable") == 0 &&
			   strcmp(at(&c, "error.code"), "insufficient_storage") == 0,
		       "below the disk reserve: health is 503 insufficient_storage");
		done_call(&c);
		call(&c, "POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\"}");
		TAP_OK(c.resp.status == 507 &&
			   strcmp(at(&c, "error.code"), "insufficient_storage") == 0 &&
			   strstr(c.resp.headers, "Retry-After:"),
		       "and a stateless run is 507 insufficient_storage with Retry-After");
		done_call(&c);
		cfg.disk_reserve_mb = saved;
	}
	test_health_pool_check();

	call(&c, "GET", "/v1/tools", "alice", NULL);
	TAP_OK(c.resp.status == 200 && strcmp(at(&c, "openai.0.type"), "function") == 0 &&
		   strcmp(at(&c, "openai.1.function.name"), "execute") == 0 &&
		   strcmp(at(&c, "anthropic.1.input_schema.type"), "object") == 0 &&
		   strstr(at(&c, "anthropic.1.input_schema.properties.language.enum"), "\"cpp\""),
	       "tools in OpenAI and Anthropic shapes with the language enum");
	TAP_OK(strcmp(at(&c, "anthropic.0.name"), "create_session") == 0 &&
		   strcmp(at(&c, "anthropic.2.name"), "run_command") == 0 &&
		   strcmp(at(&c, "anthropic.7.name"), "python") == 0 &&
		   strcmp(at(&c, "openai_responses.7.parameters.additionalProperties"), "false") ==
		       0,
	       "the MCP tools: create_session ... python, and the strict Responses form");
	done_call(&c);
}

static void test_json_input(void)
{
	char deep[200] = "{\"a\":";
	int i;

	expect_error("POST", "/v1/execute", "alice", "", 400, "invalid_json", NULL, "empty body");
	expect_error("POST", "/v1/execute", "alice", "{\"language\":", 400, "invalid_json", NULL,
		     "truncated JSON");
	expect_error("POST", "/v1/execute", "alice", "{\"language\":\"py\"} x", 400, "invalid_json",
		     NULL, "trailing garbage");
	expect_error("POST", "/v1/execute", "alice", "{\"language\":\"py\",}", 400, "invalid_json",
		     NULL, "trailing comma (strict)");
	expect_error("POST", "/v1/execute", "alice", "[1]", 400, "invalid_json", NULL,
		     "array body");
	expect_error("POST", "/v1/execute", "alice", "{'a':1}", 400, "invalid_json", NULL,
		     "single quotes");
	expect_error("POST", "/v1/execute", "alice", "{\"a\":NaN}", 400, "invalid_json", NULL,
		     "NaN");
	expect_error("POST", "/v1/execute", "alice", "{\"a\":-Infinity}", 400, "invalid_json", NULL,
		     "Infinity");
	expect_error("POST", "/v1/execute", "alice", "{\"a\":\"x\ty\"}", 400, "invalid_json", NULL,
		     "raw tab inside a string");
	expect_error("POST", "/v1/execute", "alice", "{\"code\":\"\xff\"}", 400, "invalid_json",
		     NULL, "invalid UTF-8 in the body");
	for (i = 0; i < 40; i++)
		strcat(deep, "[");
	expect_error("POST", "/v1/execute", "alice", deep, 400, "invalid_json", NULL,
		     "nesting deeper than 32");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"stdn\":\"\"}", 400, "unknown_field",
		     "stdn", "unknown field named");
	expect_error("POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":5}", 400,
		     "invalid_type", "code", "wrong type named");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"args\":\"x\"}", 400, "invalid_type",
		     "args", "args must be an array");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"args\":[1]}", 400, "invalid_type",
		     "args", "args items must be strings");
	expect_error("POST", "/v1/execute", "alice", "{\"code\":\"1\"}", 400, "missing_field",
		     "language", "language required");
	{
		static char big[300 << 10];
		size_t n;

		n = (size_t)snprintf(big, sizeof(big),
				     "{\"language\":\"python\",\"code\":\"1\",\"args\":[\"");
		memset(big + n, 'a', 260 << 10);
		strcpy(big + n + (260 << 10), "\"]}");
		expect_error("POST", "/v1/execute", "alice", big, 400, "invalid_value", "args",
			     "args larger than the sandbox takes: 400, not a sandbox failure");
	}
	expect_error("POST", "/v1/execute", "alice", "{\"language\":\"cobol\",\"code\":\"1\"}", 400,
		     "unsupported_language", "language", "unknown language");
	expect_error("POST", "/v1/execute", "alice", "{\"language\":\"python\"}", 400,
		     "missing_field", "code", "neither code nor files");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"files\":[{\"path\":\"a.py\","
		     "\"content\":\"\"}]}",
		     400, "missing_field", "code", "both code and files");
	expect_error(
	    "POST", "/v1/execute", "alice",
	    "{\"language\":\"python\",\"files\":[{\"path\":\"../a.py\",\"content\":\"\"}]}", 400,
	    "malformed_path", "files", "file path with ..");
	expect_error(
	    "POST", "/v1/execute", "alice",
	    "{\"language\":\"python\",\"files\":[{\"path\":\"/etc/a.py\",\"content\":\"\"}]}", 400,
	    "malformed_path", "files", "absolute file path");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"output_encoding\":\"hex\"}", 400,
		     "invalid_value", "output_encoding", "unknown output_encoding");
}

static void test_limits(void)
{
	struct call c;

	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"wall_ms\":60001}}", 400,
		     "limit_too_high", "limits.wall_ms", "wall_ms above the maximum");
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"memory_mb\":4096}}");
	TAP_OK(c.resp.status == 400 && strstr(at(&c, "error.message"), "maximum of 1024"),
	       "the message names the maximum: %s", at(&c, "error.message"));
	done_call(&c);
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"wall\":1}}", 400,
		     "unknown_field", "limits", "unknown limit");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"cpu_ms\":-5}}", 400,
		     "invalid_limit", "limits.cpu_ms", "negative limit");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"cpu_ms\":1.5}}", 400,
		     "invalid_limit", "limits.cpu_ms", "fractional limit");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"processes\":0}}", 400,
		     "invalid_limit", "limits.processes", "zero limit");
	expect_error("POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"1\",\"limits\":[1]}", 400, "invalid_type",
		     "limits", "limits must be an object");

	fake_result(SBX_OK, 0, 0, "1\n", 2);
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"python\",\"code\":\"1\",\"limits\":{\"wall_ms\":2000,\"memory_mb\":"
	     "64,\"output_bytes\":100}}");
	TAP_OK(c.resp.status == 200 && fake_sbx_limits.wall_ms == 2000 &&
		   fake_sbx_limits.memory_bytes == 64ull << 20 &&
		   fake_sbx_limits.output_bytes == 100 && fake_sbx_limits.cpu_ms == 5000 &&
		   fake_sbx_limits.processes == 64,
	       "request limits merged over the config defaults");
	done_call(&c);
}

static void test_results(void)
{
	struct call c;
	int before;

	fake_result(SBX_OK, 0, 0, "hi\n", 3);
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"py\",\"code\":\"print('hi')\",\"stdin\":\"in "
	     "put\",\"args\":[\"a\",\"b c\"]}");
	TAP_OK(c.resp.status == 200, "execute: 200");
	TAP_OK(strcmp(at(&c, "status"), "ok") == 0 && strcmp(at(&c, "exit_code"), "0") == 0 &&
		   strcmp(at(&c, "signal"), "null") == 0 && strcmp(at(&c, "stdout"), "hi\n") == 0 &&
		   strcmp(at(&c, "stderr"), "warn\n") == 0 &&
		   strcmp(at(&c, "stdout_truncated"), "false") == 0 &&
		   strcmp(at(&c, "stderr_truncated"), "false") == 0 &&
		   strcmp(at(&c, "wall_ms"), "12") == 0 && strcmp(at(&c, "cpu_ms"), "9") == 0 &&
		   strcmp(at(&c, "memory_kb"), "4000") == 0,
	       "run result has every API.md field: %s", c.text);
	TAP_OK(strcmp(fake_sbx_argv[0], "/usr/bin/python3") == 0 &&
		   strcmp(fake_sbx_argv[2], "main.py") == 0 && strcmp(fake_sbx_argv[3], "a") == 0 &&
		   strcmp(fake_sbx_argv[4], "b c") == 0 && !fake_sbx_argv[5][0],
	       "argv: interpreter, source file, args");
	TAP_OK(strcmp(fake_sbx_stdin, "in put") == 0, "stdin reaches the run");
	done_call(&c);

	fake_result(SBX_OK, 0, 0,
		    "a\xff"
		    "b\xed\xa0\x80"
		    "c\xc0\xaf",
		    9);
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(strcmp(at(&c, "stdout"), "a\xef\xbf\xbd"
					"b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
					"c\xef\xbf\xbd\xef\xbf\xbd") == 0,
	       "invalid UTF-8 (stray byte, surrogate, overlong) becomes U+FFFD");
	done_call(&c);
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"python\",\"code\":\"x\",\"output_encoding\":\"base64\"}");
	TAP_OK(strcmp(at(&c, "stdout"), "Yf9i7aCAY8Cv") == 0 &&
		   strcmp(at(&c, "stderr"), "d2Fybgo=") == 0,
	       "output_encoding base64 returns the raw bytes");
	done_call(&c);

	fake_result(SBX_SIGNAL, 0, SIGSEGV, "", 0);
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(strcmp(at(&c, "status"), "signal") == 0 &&
		   strcmp(at(&c, "signal"), "SIGSEGV") == 0 &&
		   strcmp(at(&c, "exit_code"), "null") == 0,
	       "signal: name, exit_code null");
	done_call(&c);
	fake_result(SBX_TIMEOUT, 0, SIGKILL, "partial", 7);
	fake_sbx_next.limit = SBX_LIMIT_WALL;
	fake_sbx_next.out_truncated = true;
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(c.resp.status == 200 && strcmp(at(&c, "status"), "timeout") == 0 &&
		   strcmp(at(&c, "limit"), "wall") == 0 &&
		   strcmp(at(&c, "stdout"), "partial") == 0 &&
		   strcmp(at(&c, "stdout_truncated"), "true") == 0,
	       "timeout: limit named, partial output kept, truncation flagged");
	done_call(&c);
	fake_result(SBX_INTERNAL_ERROR, 0, 0, "", 0);
	fake_sbx_rc = -1;
	snprintf(fake_sbx_next.message, sizeof(fake_sbx_next.message), "clone3: EPERM");
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(c.resp.status == 500 && strcmp(at(&c, "error.code"), "internal_error") == 0 &&
		   strstr(at(&c, "error.message"), "clone3: EPERM"),
	       "sandbox failure: 500 internal_error with its message");
	done_call(&c);

	{
		uint32_t saved = cfg.queue_wait_ms;

		cfg.queue_wait_ms = 30;
		before = fake_sbx_calls;
		fake_result(SBX_INTERNAL_ERROR, 0, 0, "", 0);
		fake_sbx_rc = -EAGAIN;
		call(&c, "POST", "/v1/execute", "alice",
		     "{\"language\":\"python\",\"code\":\"x\"}");
		TAP_OK(c.resp.status == 503 && strcmp(at(&c, "error.code"), "busy") == 0 &&
			   strstr(c.resp.headers, "Retry-After: ") && fake_sbx_calls - before >= 3,
		       "every slot busy: retried for runs.queue_wait_ms (%d tries), then 503 busy",
		       fake_sbx_calls - before);
		done_call(&c);
		cfg.queue_wait_ms = saved;
	}
	before = fake_sbx_calls;
	fake_result(SBX_ERROR, 1, 0, "", 0);
	fake_sbx_next.err = (char *)"main.c:1: error";
	fake_sbx_next.err_len = 15;
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"c\",\"code\":\"int main(\"}");
	TAP_OK(c.resp.status == 200 && fake_sbx_calls == before + 1 &&
		   strcmp(at(&c, "stage"), "compile") == 0 &&
		   strcmp(at(&c, "compile.status"), "error") == 0 &&
		   strcmp(at(&c, "compile.stderr"), "main.c:1: error") == 0,
	       "compile error: compile result, the run skipped");
	TAP_OK(strcmp(fake_sbx_argv[0], "/usr/bin/gcc") == 0, "compiled with gcc");
	done_call(&c);
	before = fake_sbx_calls;
	fake_result(SBX_OK, 0, 0, "", 0);
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"c++\",\"code\":\"int main(){}\",\"args\":[\"z\"]}");
	TAP_OK(c.resp.status == 200 && fake_sbx_calls == before + 2 &&
		   strcmp(at(&c, "compile.status"), "ok") == 0 &&
		   strcmp(at(&c, "status"), "ok") == 0 &&
		   strcmp(fake_sbx_argv[0], "/work/main") == 0 &&
		   strcmp(fake_sbx_argv[1], "z") == 0,
	       "compiled language: compile then run /work/main with args");
	done_call(&c);
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"bash\",\"files\":[{\"path\":\"lib/"
	     "run.sh\",\"content\":\"ZWNobyBoaQ==\",\"encoding\":\"base64\"},{\"name\":\"x\","
	     "\"content\":\"\"}]}");
	TAP_OK(c.resp.status == 200 && strcmp(fake_sbx_argv[1], "lib/run.sh") == 0,
	       "files[]: first file is the entry, parents made");
	done_call(&c);
	call(&c, "POST", "/v1/execute", "alice",
	     "{\"language\":\"python\",\"files\":[{\"path\":\"-c\",\"content\":\"1\"}]}");
	TAP_OK(c.resp.status == 200 && strcmp(fake_sbx_argv[2], "./-c") == 0,
	       "an entry file named like an option is passed as ./-c");
	done_call(&c);
}

static void test_admission(void)
{
	struct admit held[16];
	struct api_resp r;
	struct call c;
	uint32_t i, n = cfg.runs_per_client;

	api_resp_init(&r);
	for (i = 0; i < n; i++)
		admit_acquire(&(struct http_conf){.state_dir = cfg.state_dir,
						  .runs_per_client = cfg.runs_per_client},
			      "alice", &held[i]);
	fake_result(SBX_OK, 0, 0, "", 0);
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(c.resp.status == 429 && strstr(c.resp.headers, "Retry-After: ") &&
		   strcmp(at(&c, "error.code"), "too_many_runs") == 0,
	       "per-client run cap: 429 with Retry-After");
	done_call(&c);
	call(&c, "POST", "/v1/execute", "bob", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(c.resp.status == 200, "another client still runs");
	done_call(&c);
	admit_release(&held[0]);
	call(&c, "POST", "/v1/execute", "alice", "{\"language\":\"python\",\"code\":\"x\"}");
	TAP_OK(c.resp.status == 200, "a released slot is free again");
	done_call(&c);
	for (i = 1; i < n; i++)
		admit_release(&held[i]);
	{
		uint32_t saved = cfg.runs_machine;

		cfg.runs_machine = 1;
		admit_acquire(&(struct http_conf){.state_dir = cfg.state_dir, .runs_machine = 1},
			      "carol", &held[0]);
		call(&c, "POST", "/v1/execute", "dave", "{\"language\":\"python\",\"code\":\"x\"}");
		TAP_OK(c.resp.status == 503 && strstr(c.resp.headers, "Retry-After: ") &&
			   strcmp(at(&c, "error.code"), "busy") == 0,
		       "machine saturated: 503 with Retry-After");
		done_call(&c);
		admit_release(&held[0]);
		cfg.runs_machine = saved;
	}
	api_resp_free(&r);
}

static void test_sessions(void)
{
	struct call c;
	char id[64], path[160];
	uint64_t saved = cfg.session_quota_bytes;

	call(&c, "POST", "/v1/sessions", "alice", "{}");
	snprintf(id, sizeof(id), "%s", at(&c, "id"));
	TAP_OK(c.resp.status == 201 && strlen(id) == 36, "a session to run in");
	done_call(&c);
	fake_result(SBX_OK, 0, 0, "", 0);
	snprintf(path, sizeof(path), "/v1/sessions/%s/execute", id);
	call(&c, "POST", path, "alice",
	     "{\"language\":\"python\",\"files\":[{\"path\":\"pkg/m.py\",\"content\":\"x = 1\"}]}");
	TAP_OK(c.resp.status == 200 && strcmp(fake_sbx_argv[2], "pkg/m.py") == 0,
	       "session execute runs the entry file");
	done_call(&c);
	snprintf(path, sizeof(path), "/v1/sessions/%s/files/pkg/m.py", id);
	call(&c, "GET", path, "alice", NULL);
	TAP_OK(c.resp.status == 200 && c.resp.file_fd >= 0 && c.resp.file_len == 5,
	       "its files stay in the session");
	done_call(&c);
	call(&c, "GET", path, "bob", NULL);
	TAP_OK(c.resp.status == 404, "another client cannot see them");
	done_call(&c);

	cfg.session_quota_bytes = 4096;
	snprintf(path, sizeof(path), "/v1/sessions/%s/run", id);
	call(&c, "POST", path, "alice", "{\"cmd\":\"dd if=/dev/zero of=big\"}");
	TAP_OK(c.resp.status == 200 && fake_sbx_limits.file_size_bytes <= 4096 - 5 &&
		   strcmp(fake_sbx_argv[0], "/bin/sh") == 0 &&
		   strcmp(fake_sbx_argv[2], "dd if=/dev/zero of=big") == 0,
	       "session run: /bin/sh -c cmd, file size capped to the quota left (%llu)",
	       (unsigned long long)fake_sbx_limits.file_size_bytes);
	done_call(&c);
	snprintf(path, sizeof(path), "/v1/sessions/%s/execute", id);
	{
		static char big[8192];
		size_t n =
		    (size_t)snprintf(big, sizeof(big), "{\"language\":\"python\",\"code\":\"");

		memset(big + n, '#', 5000);
		strcpy(big + n + 5000, "\"}");
		expect_error("POST", path, "alice", big, 507, "quota_exceeded", NULL,
			     "session execute past the quota");
	}
	cfg.session_quota_bytes = saved;
}

static void test_helpers(void)
{
	struct api_resp r;
	struct json_object *s;

	api_resp_init(&r);
	api_header(&r, "X-A: %s", "1\r\nX-Evil: 1");
	api_header(&r, "Retry-After: %d", 3);
	TAP_OK(strcmp(r.headers, "Retry-After: 3\r\n") == 0, "api_header drops a value with CR/LF");
	api_resp_free(&r);
	s = api_base64_string((const unsigned char *)"ab", 2);
	TAP_OK(strcmp(json_object_get_string(s), "YWI=") == 0, "base64 padding");
	json_object_put(s);
	s = api_utf8_string("\xf0\x9f\x98\x80\xf4\x90\x80\x80", 8);
	TAP_OK(strcmp(json_object_get_string(s),
		      "\xf0\x9f\x98\x80\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") == 0,
	       "4-byte UTF-8 kept, above U+10FFFF replaced");
	json_object_put(s);
}

int main(void)
{
	char dir[] = "/tmp/fcgi-unit-XXXXXX", path[4200], err[256], cmd[256];

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
	test_routing();
	test_info();
	test_json_input();
	test_limits();
	test_results();
	test_admission();
	test_sessions();
	test_helpers();
	{
		char cmd2[4300];

		snprintf(cmd2, sizeof(cmd2), "test -z \"$(ls -A '%s/scratch')\"", dir);
		TAP_OK(system(cmd2) == 0, "every scratch directory was removed after its request");
	}
	{
		char shm[64];
		struct api_req r = {.cfg = &cfg};
		struct http_conf hc;

		http_conf(&r, &hc);
		metrics_path(&hc, shm, sizeof(shm));
		unlink(shm); /* the runs' admission counters (http/metrics.c) */
	}
	config_free(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", dir);
	return tap_done();
}
