/* json.c: the one module that parses request JSON and builds responses and the error envelope. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

void (*http_conf_of)(const struct config *cfg, struct http_conf *out);

void http_conf(const struct api_req *req, struct http_conf *out)
{
	*out = (struct http_conf){.max_body_bytes = 1u << 20};
	if (http_conf_of && req->cfg)
		http_conf_of(req->cfg, out);
}

void api_resp_init(struct api_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->status = 0;
	resp->file_fd = -1;
}

void api_resp_free(struct api_resp *resp)
{
	if (resp->json)
		json_object_put(resp->json);
	if (resp->file_fd >= 0)
		close(resp->file_fd);
	resp->json = NULL;
	resp->file_fd = -1;
}

void api_json(struct api_resp *resp, int status, struct json_object *body)
{
	if (resp->json)
		json_object_put(resp->json);
	resp->json = body;
	resp->status = status;
}

void api_error(struct api_resp *resp, int status, const char *code, const char *field,
	       const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	struct json_object *err = json_object_new_object();
	struct json_object *env = json_object_new_object();

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(err, "code", json_object_new_string(code));
	json_object_object_add(err, "message", json_object_new_string(msg));
	if (field)
		json_object_object_add(err, "field", json_object_new_string(field));
	json_object_object_add(env, "error", err);
	api_json(resp, status, env);
	resp->error_code = code;
}

int api_stream_begin(const struct api_req *req, struct api_resp *resp)
{
	char headers[sizeof(resp->headers) + 64];

	if (!req->out || resp->sent)
		return -1;
	snprintf(headers, sizeof(headers), "X-Accel-Buffering: no\r\n%s", resp->headers);
	resp->sent = true;
	resp->status = 200;
	if (req->out->begin(req->out->ctx, 200, "application/x-ndjson", headers) < 0)
		resp->gone = true;
	return 0;
}

int api_stream_event(const struct api_req *req, struct api_resp *resp, struct json_object *obj)
{
	const char *line;
	size_t len = 0;
	char *buf;

	if (!obj)
		return resp->gone ? -1 : 0;
	if (resp->gone || !resp->sent || !req->out) {
		json_object_put(obj);
		return -1;
	}
	line = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	buf = malloc(len + 1);
	if (!buf) {
		json_object_put(obj);
		return -1;
	}
	memcpy(buf, line, len);
	buf[len] = '\n';
	if (req->out->write(req->out->ctx, buf, len + 1) < 0)
		resp->gone = true;
	free(buf);
	json_object_put(obj);
	return resp->gone ? -1 : 0;
}

void api_header(struct api_resp *resp, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;
	size_t have = strlen(resp->headers);

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* A header line must not smuggle another one in. */
	if (n < 0 || (size_t)n >= sizeof(line) || strpbrk(line, "\r\n"))
		return;
	if (have + (size_t)n + 2 >= sizeof(resp->headers))
		return;
	memcpy(resp->headers + have, line, (size_t)n);
	memcpy(resp->headers + have + n, "\r\n", 3);
}

/* json-c's strict mode still takes single quotes, NaN, Infinity and raw control characters in
 * strings. One lexical pass rejects them: outside strings only structure, numbers and the three
 * literals may appear. Returns the offending offset, or -1 when the text is clean. */
static long lex_check(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"') {
			for (i++; i < n && s[i] != '"'; i++) {
				if ((unsigned char)s[i] < 0x20)
					return (long)i;
				if (s[i] == '\\')
					i++;
			}
			i++;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			size_t j = i;

			while (j < n &&
			       ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z')))
				j++;
			/* 'e'/'E' of an exponent is a one-letter run right after a digit or '.'. */
			if (!((j - i == 4 &&
			       (memcmp(s + i, "true", 4) == 0 || memcmp(s + i, "null", 4) == 0)) ||
			      (j - i == 5 && memcmp(s + i, "false", 5) == 0) ||
			      (j - i == 1 && (c == 'e' || c == 'E') && i > 0 &&
			       ((s[i - 1] >= '0' && s[i - 1] <= '9') || s[i - 1] == '.'))))
				return (long)i;
			i = j;
		} else if (strchr("{}[],:-+.0123456789 \t\r\n", c)) {
			i++;
		} else {
			return (long)i;
		}
	}
	return -1;
}

struct json_object *api_body_object(const struct api_req *req, struct api_resp *resp)
{
	struct json_tokener *tok = NULL;
	struct json_object *obj = NULL;
	enum json_tokener_error jerr;
	size_t end;
	long bad;
	struct http_conf hc;
	uint64_t max;

	http_conf(req, &hc);
	max = hc.max_body_bytes ? hc.max_body_bytes : 1u << 20;

	if (!req->body || req->body_len == 0) {
		api_error(resp, 400, "invalid_json", NULL,
			  "The request body must be a JSON object.");
		goto out;
	}
	if (req->body_len > max) {
		api_error(resp, 413, "body_too_large", NULL,
			  "The request body is larger than %llu bytes.", (unsigned long long)max);
		goto out;
	}
	/* json-c stops at a NUL byte; a body with one inside is not the JSON we would have parsed.
	 */
	if (memchr(req->body, 0, req->body_len)) {
		api_error(resp, 400, "invalid_json", NULL, "The request body contains a NUL byte.");
		goto out;
	}
	if ((bad = lex_check(req->body, req->body_len)) >= 0) {
		api_error(resp, 400, "invalid_json", NULL,
			  "The body is not valid JSON (at byte %ld).", bad);
		goto out;
	}
	tok = json_tokener_new_ex(API_JSON_MAX_DEPTH);
	if (!tok) {
		api_error(resp, 500, "internal_error", NULL, "Out of memory parsing the body.");
		goto out;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, req->body, (int)req->body_len);
	jerr = json_tokener_get_error(tok);
	if (!obj || jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			api_error(resp, 400, "invalid_json", NULL, "The JSON body ends early.");
		else if (jerr == json_tokener_error_depth)
			api_error(resp, 400, "invalid_json", NULL,
				  "The JSON body nests deeper than %d levels.", API_JSON_MAX_DEPTH);
		else
			api_error(resp, 400, "invalid_json", NULL,
				  "The body is not valid JSON: %s.", json_tokener_error_desc(jerr));
		json_object_put(obj);
		obj = NULL;
		goto out;
	}
	end = json_tokener_get_parse_end(tok);
	while (end < req->body_len && strchr(" \t\r\n", req->body[end]))
		end++;
	if (end != req->body_len) {
		api_error(resp, 400, "invalid_json", NULL,
			  "The JSON body has trailing data after the object (at byte %zu).", end);
		json_object_put(obj);
		obj = NULL;
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		api_error(resp, 400, "invalid_json", NULL,
			  "The request body must be a JSON object.");
		json_object_put(obj);
		obj = NULL;
		goto out;
	}
out:
	if (tok)
		json_tokener_free(tok);
	return obj;
}

int api_only_fields(struct json_object *obj, const char *const *allowed, struct api_resp *resp)
{
	json_object_object_foreach(obj, key, val)
	{
		const char *const *a;

		(void)val;
		for (a = allowed; *a; a++)
			if (strcmp(*a, key) == 0)
				break;
		if (!*a) {
			api_error(resp, 400, "unknown_field", key,
				  "Unknown field \"%.64s\": check the spelling against the API "
				  "reference.",
				  key);
			return -1;
		}
	}
	return 0;
}

/* "a string", "an array"...: a static string naming a JSON type for messages. */
static const char *type_word(json_type t)
{
	switch (t) {
	case json_type_null:
		return "null";
	case json_type_boolean:
		return "a boolean";
	case json_type_double:
		return "a number";
	case json_type_int:
		return "an integer";
	case json_type_object:
		return "an object";
	case json_type_array:
		return "an array";
	case json_type_string:
		return "a string";
	}
	return "something else";
}

/* Shared lookup: 1 absent (or null), 0 present with the right type, -1 wrong type (400 filled). */
static int get_typed(struct json_object *obj, const char *key, json_type want, const char *what,
		     struct json_object **out, struct api_resp *resp)
{
	struct json_object *v = NULL;

	if (!json_object_object_get_ex(obj, key, &v) || !v)
		return 1;
	if (!json_object_is_type(v, want)) {
		api_error(resp, 400, "invalid_type", key, "Field \"%s\" must be %s, not %s.", key,
			  what, type_word(json_object_get_type(v)));
		return -1;
	}
	*out = v;
	return 0;
}

int api_get_string(struct json_object *obj, const char *key, bool required, const char **out,
		   size_t *len, struct api_resp *resp)
{
	struct json_object *v = NULL;
	int rc = get_typed(obj, key, json_type_string, "a string", &v, resp);

	if (rc == 1 && required) {
		api_error(resp, 400, "missing_field", key, "Field \"%s\" is required.", key);
		return -1;
	}
	if (rc != 0)
		return rc;
	*out = json_object_get_string(v);
	if (len)
		*len = (size_t)json_object_get_string_len(v);
	return 0;
}

int api_get_bool(struct json_object *obj, const char *key, bool *out, struct api_resp *resp)
{
	struct json_object *v = NULL;
	int rc = get_typed(obj, key, json_type_boolean, "true or false", &v, resp);

	if (rc == 0)
		*out = json_object_get_boolean(v);
	return rc;
}

int api_get_u64(struct json_object *obj, const char *key, uint64_t *out, struct api_resp *resp)
{
	struct json_object *v = NULL;
	int rc = get_typed(obj, key, json_type_int, "a non-negative integer", &v, resp);

	if (rc != 0)
		return rc;
	/* json-c keeps integers as int64 or uint64; negative ones are refused, not wrapped. */
	if (json_object_get_int64(v) < 0) {
		api_error(resp, 400, "invalid_value", key, "Field \"%s\" must not be negative.",
			  key);
		return -1;
	}
	*out = json_object_get_uint64(v);
	return 0;
}

int api_get_array(struct json_object *obj, const char *key, struct json_object **out,
		  struct api_resp *resp)
{
	return get_typed(obj, key, json_type_array, "an array", out, resp);
}

int api_get_object(struct json_object *obj, const char *key, struct json_object **out,
		   struct api_resp *resp)
{
	return get_typed(obj, key, json_type_object, "an object", out, resp);
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

struct json_object *api_utf8_string(const char *buf, size_t len)
{
	const unsigned char *s = (const unsigned char *)buf;
	struct json_object *str;
	char *out;
	size_t i = 0, o = 0;

	if (!buf)
		return json_object_new_string("");
	/* Worst case every byte becomes the 3-byte U+FFFD. */
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	while (i < len) {
		size_t k = utf8_seq(s + i, len - i);

		if (k == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		}
	}
	out[o] = '\0';
	str = json_object_new_string_len(out, (int)o);
	free(out);
	return str;
}

struct json_object *api_base64_string(const unsigned char *buf, size_t len)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct json_object *str;
	char *out;
	size_t i, o = 0;

	out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		unsigned v = (unsigned)buf[i] << 16 | (unsigned)buf[i + 1] << 8 | buf[i + 2];

		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = tab[v >> 6 & 63];
		out[o++] = tab[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned)buf[i] << 16 | (i + 1 < len ? (unsigned)buf[i + 1] << 8 : 0);

		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < len ? tab[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	str = json_object_new_string_len(out, (int)o);
	free(out);
	return str;
}

int api_base64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}
