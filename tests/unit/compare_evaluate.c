/* compare_evaluate.c: the evaluate handlers (fcgi/evaluate/evaluate.c) over a scripted broker, no
 * sockets: request checks, the job and limits the runner is given, and how the runner's answer
 * becomes the response (stdout compared, stop_on_first_failure, a runner that fails, the seed's
 * shape). */
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
	const char *text;
};

static void call(struct call *c, const char *path, const char *body)
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
	req.accept = "";
	req.body = body;
	req.body_len = strlen(body);
	req.body_total = -1;
	req.cfg = &cfg;
	route_serve(&req, path, c->buf, sizeof(c->buf), &c->resp, &c->rt);
	c->text = c->resp.json
		      ? json_object_to_json_string_ext(c->resp.json, JSON_C_TO_STRING_PLAIN)
		      : "";
}

/* The value at a dotted path ("cases.1.status") as text; "" when absent, "null" for null. */
static const char *at(struct call *c, const char *dotted)
{
	static char out[1024];
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

static bool is(struct call *c, const char *dotted, const char *want)
{
	return strcmp(at(c, dotted), want) == 0;
}

/* The broker's next run ends with status st and this runner answer on stdout. */
static void answer(enum sbx_status st, const char *out)
{
	memset(&fake_sbx_next, 0, sizeof(fake_sbx_next));
	fake_sbx_next.status = st;
	fake_sbx_next.out = (char *)out;
	fake_sbx_next.out_len = strlen(out);
	fake_sbx_next.err = (char *)"Traceback: boom\n";
	fake_sbx_next.err_len = 16;
	fake_sbx_next.wall_ms = 30;
	fake_sbx_next.cpu_ms = 20;
	fake_sbx_next.memory_kb = 9000;
	fake_sbx_rc = 0;
}

static void expect_400(const char *body, const char *code, const char *field, const char *desc)
{
	struct call c;
	int calls = fake_sbx_calls;

	call(&c, "/v1/evaluate", body);
	TAP_OK(c.resp.status == 400 && is(&c, "error.code", code) &&
		   (!field || is(&c, "error.field", field)) && fake_sbx_calls == calls,
	       "%s: 400 %s, nothing run", desc, code);
	if (c.resp.status != 400 || !is(&c, "error.code", code))
		TAP_DIAG("got %d %s", c.resp.status, c.text);
	api_resp_free(&c.resp);
}

static void test_requests(void)
{
	char *many;
	size_t i, off;

	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}],\"x\":1}",
		   "unknown_field", "x", "unknown field");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\"}", "invalid_request", NULL, "no cases");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}],"
		   "\"cases\":[{}]}",
		   "invalid_request", NULL, "io_cases and cases");
	expect_400("{\"code\":\"\",\"io_cases\":[{\"input\":\"1\"}]}", "missing_field",
		   "entry_point", "io_cases without entry_point");
	expect_400("{\"code\":\"\",\"test\":\"def check(c): pass\"}", "missing_field",
		   "entry_point", "test without entry_point");
	expect_400("{\"language\":\"c\",\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":"
		   "[{\"input\":\"1\"}]}",
		   "invalid_request", "language", "io_cases in C");
	expect_400("{\"language\":\"cobol\",\"code\":\"\",\"cases\":[{}]}", "unknown_language",
		   "language", "unknown language");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[]}", "invalid_value",
		   "io_cases", "empty io_cases");
	expect_400(
	    "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\",\"ouput\":1}]}",
	    "unknown_field", NULL, "typo in a case");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"output\":\"1\"}]}",
		   "missing_field", "io_cases[0]", "case without input");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":true}]}",
		   "invalid_type", "io_cases[0]", "boolean input");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[3]}", "invalid_type",
		   "io_cases[0]", "a case that is no object");
	expect_400("{\"code\":\"\",\"cases\":[{\"args\":[1]}]}", "invalid_type", "cases[0]",
		   "a number in args");
	expect_400("{\"code\":\"\",\"cases\":[{\"expected_stdout\":null}]}", "invalid_type",
		   "cases[0]", "null expected_stdout");
	expect_400("{\"code\":\"\",\"cases\":[{}],\"compare\":\"fuzzy\"}", "invalid_value",
		   "compare", "unknown compare mode");
	expect_400("{\"code\":\"\",\"cases\":[{}],\"compare\":{\"float_tolerance\":-1}}",
		   "invalid_value", "compare", "negative tolerance");
	expect_400("{\"code\":\"\",\"cases\":[{}],\"compare\":{\"float_tolerance\":1,\"x\":2}}",
		   "invalid_value", "compare", "tolerance object with more");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}],"
		   "\"compare\":\"exact\"}",
		   "invalid_request", "compare", "compare with io_cases");
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}],"
		   "\"limits\":{\"wall_ms\":999999999}}",
		   "limit_too_high", NULL, "limit too high");
	expect_400("{\"code\":1,\"cases\":[{}]}", "invalid_type", "code", "code not a string");

	many = malloc(64 + (cfg.max_cases + 1) * 16);
	off = (size_t)sprintf(many, "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[");
	for (i = 0; i <= cfg.max_cases; i++)
		off += (size_t)sprintf(many + off, "%s{\"input\":\"1\"}", i ? "," : "");
	sprintf(many + off, "]}");
	expect_400(many, "too_many_cases", "io_cases", "one case past max_cases");
	free(many);
}

static void test_job(void)
{
	struct call c;

	answer(
	    SBX_OK,
	    "{\"load\":{\"status\":\"ok\"},\"compile\":null,\"cases\":[{\"index\":0,"
	    "\"status\":\"ok\",\"passed\":true,\"got\":[1,2],\"got_repr\":\"(1, 2)\","
	    "\"expected\":[1,2],\"expected_repr\":\"(1, 2)\",\"error\":null,\"stdout\":\"hi\\n\","
	    "\"stderr\":\"\",\"stdout_truncated\":false,\"stderr_truncated\":false,\"wall_ms\":3,"
	    "\"cpu_ms\":2,\"memory_kb\":100}]}");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"def f(x): return x\",\"entry_point\":\"f\","
	     "\"io_cases\":[{\"input\":\"(1, 2)\",\"output\":\"(1, "
	     "2)\"}],\"limits\":{\"wall_ms\":2000}}");
	TAP_OK(c.resp.status == 200, "io: 200 (%s)", c.text);
	TAP_OK(strcmp(fake_sbx_argv[0], "/usr/bin/python3") == 0 &&
		   strcmp(fake_sbx_argv[3], "/opt/sbx/evaluate.py") == 0,
	       "one run of the runner");
	TAP_OK(strstr(fake_sbx_stdin, "\"mode\":\"io\"") &&
		   strstr(fake_sbx_stdin, "\"entry_point\":\"f\"") &&
		   strstr(fake_sbx_stdin, "\"wall_ms\":2000") &&
		   strstr(fake_sbx_stdin, "\"deadline_ms\":"),
	       "the job on stdin carries mode, entry point, per-case limits, the deadline");
	/* One case of 2 s: one wave (2 s + 0.5 s) after loading (2 s + 1 s), plus the 5 s grace;
	 * not the server's whole evaluate budget (issue 16: a case that stops the runner). */
	TAP_OK(fake_sbx_limits.wall_ms == 5500 + 5000 &&
		   strstr(fake_sbx_stdin, "\"deadline_ms\":5500") &&
		   fake_sbx_limits.memory_bytes > cfg.defaults.memory_bytes,
	       "the run's wall limit comes from the request's own limits (%llu)",
	       (unsigned long long)fake_sbx_limits.wall_ms);
	TAP_OK(is(&c, "cases.0.verdict", "AC"), "verdict AC for a passed case");
	TAP_OK(is(&c, "passed", "true") && is(&c, "passed_count", "1") && is(&c, "total", "1") &&
		   is(&c, "cases.0.got", "[1,2]") && is(&c, "cases.0.got_repr", "(1, 2)") &&
		   is(&c, "cases.0.stdout", "hi\n") && is(&c, "compile", "null") &&
		   is(&c, "cpu_ms", "20"),
	       "io: the runner's case comes through");
	api_resp_free(&c.resp);
}

static void test_stdout_cases(void)
{
	struct call c;
	const char *three =
	    "{\"compile\":{\"status\":\"ok\"},\"cases\":["
	    "{\"index\":0,\"status\":\"ok\",\"stdout\":\"3\\n\",\"exit_code\":0},"
	    "{\"index\":1,\"status\":\"ok\",\"stdout\":\"4 \\n\\n\",\"exit_code\":0},"
	    "{\"index\":2,\"status\":\"error\",\"stdout\":\"\",\"exit_code\":1,"
	    "\"error\":\"the program exited with code 1\"}]}";

	answer(SBX_OK, three);
	call(&c, "/v1/evaluate",
	     "{\"language\":\"c\",\"code\":\"int main(){}\",\"cases\":["
	     "{\"stdin\":\"1 2\",\"expected_stdout\":\"3\"},{\"expected_stdout\":\"5\"},"
	     "{\"expected_stdout\":\"\"}]}");
	TAP_OK(c.resp.status == 200 && strstr(fake_sbx_stdin, "\"mode\":\"stdout\"") &&
		   strstr(fake_sbx_stdin, "\"compile\":[\"\\/usr\\/bin\\/gcc\""),
	       "cases: C job carries the compile argv (%s)", fake_sbx_stdin);
	TAP_OK(is(&c, "cases.0.passed", "true") && is(&c, "cases.1.passed", "false") &&
		   is(&c, "cases.2.passed", "false") && is(&c, "passed_count", "1"),
	       "cases: compared in lines mode by default; a failed run never passes");
	TAP_OK(is(&c, "cases.1.error", "line 1: expected \"5\", got \"4\"") &&
		   is(&c, "cases.1.got", "4 \n\n") && is(&c, "cases.1.expected", "5"),
	       "cases: got, expected and the hint (%s)", at(&c, "cases.1.error"));
	TAP_OK(is(&c, "cases.2.error", "the program exited with code 1") &&
		   is(&c, "cases.2.exit_code", "1") && is(&c, "compile.status", "ok"),
	       "cases: the run's error and the compile result");
	TAP_OK(!strstr(fake_sbx_stdin, "expected_stdout") &&
		   strstr(fake_sbx_stdin, "\"stdin\":\"1 2\""),
	       "cases: expected_stdout never enters the sandbox, stdin does (%s)", fake_sbx_stdin);
	TAP_OK(is(&c, "cases.0.verdict", "AC") && is(&c, "cases.1.verdict", "WA") &&
		   is(&c, "cases.2.verdict", "RTE"),
	       "cases: verdicts AC, WA, RTE");
	TAP_OK(fake_sbx_limits.wall_ms == 30000 + 2 * (cfg.defaults.wall_ms + 500) + 5000,
	       "cases: a compiled language's budget: compile step plus waves of cases (%llu)",
	       (unsigned long long)fake_sbx_limits.wall_ms);
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"compile\":{\"status\":\"error\"},\"cases\":[{\"index\":0,"
		       "\"status\":\"error\"}]}");
	call(&c, "/v1/evaluate", "{\"language\":\"c\",\"code\":\"x\",\"cases\":[{}]}");
	TAP_OK(is(&c, "cases.0.verdict", "CE"), "cases: a failed compile is CE");
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"cases\":[{\"index\":0,\"status\":\"timeout\"},{\"index\":1,"
		       "\"status\":\"memory_limit\"},{\"index\":2,\"status\":\"output_limit\"},"
		       "{\"index\":3,\"status\":\"signal\"}]}");
	call(&c, "/v1/evaluate", "{\"language\":\"bash\",\"code\":\"x\",\"cases\":[{},{},{},{}]}");
	TAP_OK(is(&c, "cases.0.verdict", "TLE") && is(&c, "cases.1.verdict", "MLE") &&
		   is(&c, "cases.2.verdict", "OLE") && is(&c, "cases.3.verdict", "RTE"),
	       "cases: verdicts TLE, MLE, OLE, RTE");
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"load\":{\"status\":\"error\",\"error\":\"SyntaxError: bad\"},"
		       "\"cases\":[{\"index\":0,\"status\":\"error\"}]}");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"def\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(is(&c, "cases.0.verdict", "CE"), "io: Python that does not parse is CE");
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"cases\":[{\"index\":0,\"status\":\"ok\",\"passed\":true}]}");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"isolation\":\"namespace\","
	     "\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(c.resp.status == 200 && strstr(fake_sbx_stdin, "\"isolation\":\"namespace\""),
	       "isolation namespace reaches the runner");
	api_resp_free(&c.resp);
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(c.resp.status == 200 && !strstr(fake_sbx_stdin, "\"isolation\""),
	       "/v1: process isolation by default");
	api_resp_free(&c.resp);
	expect_400("{\"code\":\"\",\"entry_point\":\"f\",\"isolation\":\"thread\","
		   "\"io_cases\":[{\"input\":\"1\"}]}",
		   "invalid_value", "isolation", "an unknown isolation");
	expect_400("{\"language\":\"c\",\"code\":\"\",\"isolation\":\"namespace\","
		   "\"cases\":[{}]}",
		   "invalid_request", "isolation", "namespace with cases");

	answer(SBX_OK, three);
	call(&c, "/v1/evaluate",
	     "{\"language\":\"python\",\"code\":\"\",\"compare\":\"exact\","
	     "\"cases\":[{\"expected_stdout\":\"3\"},{\"expected_stdout\":\"4 \\n\\n\"},{}]}");
	TAP_OK(is(&c, "cases.0.passed", "false") && is(&c, "cases.1.passed", "true"),
	       "compare exact: the newline counts");
	TAP_OK(strstr(fake_sbx_stdin, "\"python_fork\":true") != NULL,
	       "python cases fork from a preloaded interpreter");
	api_resp_free(&c.resp);

	answer(SBX_OK, three);
	call(&c, "/v1/evaluate",
	     "{\"language\":\"bash\",\"code\":\"\",\"stop_on_first_failure\":true,"
	     "\"compare\":{\"float_tolerance\":1e-3},\"cases\":[{\"expected_stdout\":\"3.0001\"},"
	     "{\"expected_stdout\":\"5\"},{\"expected_stdout\":\"\"}]}");
	TAP_OK(is(&c, "cases.0.passed", "true") && is(&c, "cases.1.status", "ok") &&
		   is(&c, "cases.2.status", "skipped") && is(&c, "cases.2.stdout", "") &&
		   is(&c, "passed_count", "1") && is(&c, "passed", "false") &&
		   is(&c, "cases.2.verdict", "null"),
	       "stop_on_first_failure: after the first failure, skipped (no verdict)");
	api_resp_free(&c.resp);
}

static void test_failures(void)
{
	struct call c;

	answer(SBX_ERROR, "not json");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"},"
	     "{\"input\":\"2\"}]}");
	TAP_OK(c.resp.status == 200 && is(&c, "passed", "false") &&
		   is(&c, "cases.1.status", "error") &&
		   strstr(at(&c, "cases.1.error"), "runner failed") &&
		   strstr(at(&c, "error"), "Traceback: boom"),
	       "a runner without an answer: every case fails, why is said");
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"cases\":\"2\",\"compile\":7}");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(c.resp.status == 200 && is(&c, "cases.0.status", "error") &&
		   strstr(at(&c, "cases.0.error"), "runner failed"),
	       "an answer whose cases is no array is a runner failure");
	api_resp_free(&c.resp);

	answer(SBX_TIMEOUT, "");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(c.resp.status == 200 && strstr(at(&c, "cases.0.error"), "ran out of time") &&
		   is(&c, "cases.0.verdict", "TLE"),
	       "the whole run timing out is said");
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"cases\":[{\"index\":0,\"status\":\"ok\",\"passed\":true}]}");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"},"
	     "{\"input\":\"2\"}]}");
	TAP_OK(is(&c, "cases.0.passed", "true") && is(&c, "cases.1.passed", "false") &&
		   strstr(at(&c, "cases.1.error"), "no result"),
	       "a case the runner left out fails");
	api_resp_free(&c.resp);

	answer(SBX_OK, "{\"cases\":[{\"index\":0,\"status\":\"weird\",\"passed\":true}]}");
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(is(&c, "cases.0.passed", "false") && is(&c, "cases.0.status", "error"),
	       "an unknown status from the runner is an error, never a pass");
	api_resp_free(&c.resp);

	answer(SBX_INTERNAL_ERROR, "");
	fake_sbx_rc = -1;
	call(&c, "/v1/evaluate",
	     "{\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[{\"input\":\"1\"}]}");
	TAP_OK(c.resp.status == 500 && is(&c, "error.code", "internal_error"),
	       "the sandbox failing is a 500");
	api_resp_free(&c.resp);
	fake_sbx_rc = 0;
}

static void test_seed(void)
{
	struct call c;

	answer(SBX_OK,
	       "{\"cases\":[{\"index\":0,\"status\":\"ok\",\"passed\":true,\"got\":3,"
	       "\"expected\":3,\"error\":null},{\"index\":1,\"status\":\"error\",\"passed\":false,"
	       "\"got\":null,\"error\":\"ValueError: x\\nTraceback...\"}]}");
	call(&c, "/evaluate_code",
	     "{\"id\":\"seed-unit-1\",\"code\":\"def add(a, b): return a+b\","
	     "\"entry_point\":\"add\",\"io_cases\":[{\"input\":\"a=1, b=2\",\"output\":\"3\"},"
	     "{\"input\":\"a=1\",\"output\":\"2\"}],\"extra\":\"ignored\"}");
	TAP_OK(c.resp.status == 200 && is(&c, "passed", "false") && is(&c, "error", "null"),
	       "seed: 200, passed false, error null (%s)", c.text);
	TAP_OK(strstr(fake_sbx_stdin, "\"isolation\":\"namespace\"") != NULL,
	       "seed: namespace isolation (the seed's own semantics) by default");
	TAP_OK(json_object_object_length(json_object_array_get_idx(
		   json_object_object_get(c.resp.json, "case_results"), 0)) == 6 &&
		   is(&c, "case_results.0.passed", "true") && is(&c, "case_results.0.got", "3") &&
		   is(&c, "case_results.0.case", "0") && is(&c, "case_results.0.input", "a=1, b=2"),
	       "seed: a case result has exactly passed, got, expected, error, case, input");
	TAP_OK(is(&c, "case_results.1.expected", "2") &&
		   strncmp(at(&c, "case_results.1.error"), "ValueError: x", 13) == 0,
	       "seed: a failed case echoes the raw output and the error");
	api_resp_free(&c.resp);

	call(&c, "/evaluate_code", "{\"id\":\"seed-unit-1\",\"code\":\"\",\"entry_point\":\"f\"}");
	TAP_OK(c.resp.status == 400 && is(&c, "error.field", "io_cases"),
	       "seed: io_cases required");
	api_resp_free(&c.resp);
	call(&c, "/evaluate_code",
	     "{\"id\":\"..\",\"code\":\"\",\"entry_point\":\"f\",\"io_cases\":[]}");
	TAP_OK(c.resp.status == 400, "seed: a bad id is 400");
	api_resp_free(&c.resp);
}

int main(void)
{
	char dir[] = "/tmp/evaluate-unit-XXXXXX", path[4200], err[256], cmd[4300];

	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	setenv("SBX_STATE_DIR", dir, 1);
	setenv("SBX_BROKER_SOCKET", "/nonexistent/sbxd.sock", 1);
	snprintf(path, sizeof(path), "%s/scratch", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/sessions", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/fcgi/sbx.conf.json", config_repo_dir());
	if (config_load(path, &cfg, err, sizeof(err)) < 0) {
		printf("Bail out! config: %s\n", err);
		return 1;
	}
	test_requests();
	test_job();
	test_stdout_cases();
	test_failures();
	test_seed();
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/scratch')\"", dir);
	TAP_OK(system(cmd) == 0, "every scratch directory was removed after its request");
	config_free(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		TAP_DIAG("could not remove %s", dir);
	return tap_done();
}
