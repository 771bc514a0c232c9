/* fuzz_json.c: libFuzzer driver for the request parser (fcgi/http/json.c) and the getters every
 * handler uses on it, including the limits parser of run.c.
 *
 * The input is a request body. Beyond the sanitizers: a failure always leaves the error envelope
 * with a code and a status of 400 or 413; an accepted body is an object whose serialisation
 * parses back; strings returned by the getters have the length they claim; api_utf8_string
 * always yields valid UTF-8. */
#include "fuzz_setup.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	fuzz_config("fuzz_json");
	return 0;
}

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k;
		uint32_t cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			k = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			k = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			k = 3, cp = c & 0x07, min = 0x10000;
		else
			return false;
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += k + 1;
	}
	return true;
}

static void check_error(const struct api_resp *resp)
{
	struct json_object *e, *code;

	if (resp->status != 400 && resp->status != 413)
		abort();
	if (!json_object_object_get_ex(resp->json, "error", &e) ||
	    !json_object_object_get_ex(e, "code", &code) ||
	    !json_object_is_type(code, json_type_string))
		abort();
}

static void getters(struct json_object *obj)
{
	static const char *const allowed[] = {"language", "code",  "stdin",	      "args",
					      "limits",	  "files", "output_encoding", NULL};
	struct api_resp r;
	struct json_object *arr = NULL, *lim = NULL, *o;
	struct sbx_limits limits;
	const char *s;
	size_t len;
	uint64_t u;
	bool b;

	api_resp_init(&r);
	if (api_only_fields(obj, allowed, &r) < 0)
		check_error(&r);
	api_resp_free(&r);
	api_resp_init(&r);
	if (api_get_string(obj, "code", false, &s, &len, &r) == 0 && strlen(s) > len)
		abort();
	api_resp_free(&r);
	api_resp_init(&r);
	api_get_string(obj, "language", true, &s, &len, &r);
	api_get_bool(obj, "stdin", &b, &r);
	api_get_u64(obj, "args", &u, &r);
	api_get_array(obj, "files", &arr, &r);
	api_resp_free(&r);
	api_resp_init(&r);
	if (api_get_object(obj, "limits", &lim, &r) == 0)
		run_parse_limits(&cfg, config_lang(&cfg, "python"), lim, &limits, &r);
	api_resp_free(&r);
	if (arr && json_object_is_type(arr, json_type_array) && json_object_array_length(arr) > 0) {
		o = json_object_array_get_idx(arr, 0);
		if (json_object_is_type(o, json_type_object)) {
			api_resp_init(&r);
			api_get_string(o, "path", true, &s, &len, &r);
			api_get_string(o, "content", false, &s, &len, &r);
			api_resp_free(&r);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_req req = {0};
	struct api_resp resp;
	struct json_object *obj = NULL, *back = NULL, *u = NULL;
	char *body = malloc(size + 1);
	const char *text;

	if (!body)
		return 0;
	memcpy(body, data, size);
	body[size] = '\0';
	req.method = "POST";
	req.path = "/v1/execute";
	req.body = body;
	req.body_len = size;
	req.cfg = &cfg;
	api_resp_init(&resp);
	obj = api_body_object(&req, &resp);
	if (!obj) {
		check_error(&resp);
	} else {
		if (!json_object_is_type(obj, json_type_object) || resp.json)
			abort();
		getters(obj);
		text = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
		back = json_tokener_parse(text);
		if (!back || !json_object_is_type(back, json_type_object))
			abort(); /* what we accepted must serialise to JSON we accept again */
	}
	u = api_utf8_string(body, size);
	if (!u || !utf8_valid((const unsigned char *)json_object_get_string(u),
			      (size_t)json_object_get_string_len(u)))
		abort();
	json_object_put(u);
	json_object_put(back);
	json_object_put(obj);
	api_resp_free(&resp);
	free(body);
	return 0;
}
