/* fuzz_evaluate.c: libFuzzer driver for POST /v1/evaluate end to end inside one process: the
 * request's io_cases / cases / test / compare / limits checks (fcgi/evaluate/evaluate.c), the job
 * it builds, and above all the parsing of the in-sandbox runner's answer, which is data the
 * sandboxed program can shape. The broker is the unit tests' fake (tests/unit/fcgi_fake_sbx.c).
 *
 * Input: request body, a 0xff byte, the runner's stdout. Beyond the sanitizers: every answer is
 * 200 with passed/total/cases consistent, or an error envelope; never a crash or a 2xx without
 * JSON. */
#include "fuzz_setup.h"
#include "../unit/fcgi_fake_sbx.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_state("fuzz_evaluate");
	cfg.max_cases = 64;
	return 0;
}

static void check(const struct api_resp *resp)
{
	struct json_object *j = resp->json, *v, *cases;
	int64_t passed_count, total;

	if (!j)
		abort(); /* every answer of this route is JSON */
	if (resp->status != 200) {
		if (resp->status < 400 || !json_object_object_get_ex(j, "error", &v))
			abort();
		return;
	}
	if (!json_object_object_get_ex(j, "passed", &v) ||
	    !json_object_is_type(v, json_type_boolean))
		abort();
	if (!json_object_object_get_ex(j, "cases", &cases) ||
	    !json_object_is_type(cases, json_type_array))
		abort();
	if (!json_object_object_get_ex(j, "passed_count", &v))
		abort();
	passed_count = json_object_get_int64(v);
	if (!json_object_object_get_ex(j, "total", &v))
		abort();
	total = json_object_get_int64(v);
	if (passed_count < 0 || passed_count > total)
		abort();
	if (json_object_get_boolean(json_object_object_get(j, "passed")) && passed_count != total)
		abort();
	json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN); /* serialisable */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *sep = memchr(data, 0xff, size);
	size_t blen = sep ? (size_t)(sep - data) : size;
	size_t alen = sep ? size - blen - 1 : 0;
	char *body = malloc(blen + 1), *answer = malloc(alen + 1);
	char buf[256];
	struct api_req req;
	struct api_resp resp;
	const struct route *rt = NULL;

	if (!body || !answer)
		goto out;
	memcpy(body, data, blen);
	body[blen] = '\0';
	if (alen)
		memcpy(answer, sep + 1, alen);
	answer[alen] = '\0';
	memset(&fake_sbx_next, 0, sizeof(fake_sbx_next));
	fake_sbx_next.status = SBX_OK;
	fake_sbx_next.out = answer;
	fake_sbx_next.out_len = alen;
	fake_sbx_next.err = "";
	fake_sbx_rc = 0;

	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.query = "";
	req.client = "alice";
	req.request_id = "fuzz";
	req.content_type = "application/json";
	req.accept = "";
	req.body = body;
	req.body_len = blen;
	req.body_total = -1;
	req.cfg = &cfg;
	api_resp_init(&resp);
	route_serve(&req, "/v1/evaluate", buf, sizeof(buf), &resp, &rt);
	if (getenv("FUZZ_DEBUG")) /* to see what a corpus input does */
		fprintf(stderr, "%d %.300s\n", resp.status,
			resp.json
			    ? json_object_to_json_string_ext(resp.json, JSON_C_TO_STRING_PLAIN)
			    : "");
	check(&resp);
	api_resp_free(&resp);
out:
	free(body);
	free(answer);
	return 0;
}
