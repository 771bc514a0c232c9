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

void api_error_request_id(struct api_resp *resp, const char *request_id)
{
	struct json_object *err = NULL, *code = NULL;

	/* Only our envelope: a JSON-RPC error (MCP) has a numeric code and no room for it. */
	if (!resp->json || !request_id || !request_id[0] ||
	    !json_object_object_get_ex(resp->json, "error", &err) ||
	    !json_object_is_type(err, json_type_object) ||
	    !json_object_object_get_ex(err, "code", &code) ||
	    !json_object_is_type(code, json_type_string))
		return;
	json_object_object_add(err, "request_id", json_object_new_string(request_id));
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

/* The key of the string token at s[0..n) (quotes included), decoded; NULL on failure. The caller
 * owns the result (json_object_put). */
static struct json_object *key_of(const char *s, size_t n)
{
	char *text;
	struct json_object *k;

	if (!memchr(s, '\\', n))
		return json_object_new_string_len(s + 1, (int)n - 2);
	if (!(text = strndup(s, n)))
		return NULL;
	k = json_tokener_parse(text);
	free(text);
	return k;
}

/* json-c keeps the last of two members with the same name, so {"limits":{},"limits":{...}} would
 * be read as the second while a proxy or a validator in front reads the first. RFC 8259 leaves
 * duplicates undefined; we refuse them. s is text json-c has just parsed (valid JSON, at most
 * API_JSON_MAX_DEPTH deep). Returns 1 with the first duplicate's name in dup (caller
 * json_object_put), 0 when every object's names are distinct, -1 out of memory. */
static int dup_key_find(const char *s, size_t n, struct json_object **dup)
{
	/* One name set per open container; NULL for arrays. */
	struct json_object *sets[API_JSON_MAX_DEPTH + 2] = {NULL};
	int depth = -1, rc = 0;
	bool want_key = false;
	size_t i = 0;

	*dup = NULL;
	while (i < n && rc == 0) {
		char c = s[i];

		if (c == '{' || c == '[') {
			if (depth + 1 >= (int)(sizeof(sets) / sizeof(sets[0]))) {
				rc = -1;
				break;
			}
			sets[++depth] = c == '{' ? json_object_new_object() : NULL;
			if (c == '{' && !sets[depth])
				rc = -1;
			want_key = c == '{';
			i++;
		} else if (c == '}' || c == ']') {
			if (depth >= 0)
				json_object_put(sets[depth--]);
			want_key = false;
			i++;
		} else if (c == ',') {
			want_key = depth >= 0 && sets[depth];
			i++;
		} else if (c == '"') {
			size_t j = i + 1;

			while (j < n && s[j] != '"')
				j += s[j] == '\\' ? 2 : 1;
			if (want_key) {
				struct json_object *k = key_of(s + i, j + 1 - i);
				const char *name = k ? json_object_get_string(k) : NULL;

				if (!name)
					rc = -1;
				else if (json_object_object_get_ex(sets[depth], name, NULL)) {
					*dup = k;
					k = NULL;
					rc = 1;
				} else if (json_object_object_add(sets[depth], name, NULL) < 0)
					rc = -1;
				json_object_put(k);
				want_key = false;
			}
			i = j + 1;
		} else {
			i++;
		}
	}
	while (depth >= 0)
		json_object_put(sets[depth--]);
	return rc;
}

/* Parse the body as one JSON value (an object when want_object). Returns 0 with *out set (NULL
 * for the JSON null), or -1 with resp filled. */
static int body_value(const struct api_req *req, struct api_resp *resp, bool want_object,
		      struct json_object **out)
{
	struct json_tokener *tok = NULL;
	struct json_object *obj = NULL;
	enum json_tokener_error jerr;
	size_t end;
	long bad;
	struct http_conf hc;
	uint64_t max;
	int rc = -1;

	*out = NULL;
	http_conf(req, &hc);
	max = hc.max_body_bytes ? hc.max_body_bytes : 1u << 20;

	if (!req->body || req->body_len == 0) {
		api_error(resp, 400, "invalid_json", NULL,
			  want_object ? "The request body must be a JSON object."
				      : "The request body must be a JSON value.");
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
	end = json_tokener_get_parse_end(tok);
	/* A bare number or literal (1, true, null) is complete only once json-c sees what follows
	 * it: hand it the terminating NUL (then the whole body was read). What was cut short is
	 * still "ends early". */
	if (!want_object && jerr == json_tokener_continue) {
		obj = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (jerr == json_tokener_error_parse_eof)
			jerr = json_tokener_continue;
		end = req->body_len;
	}
	if (jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			api_error(resp, 400, "invalid_json", NULL, "The JSON body ends early.");
		else if (jerr == json_tokener_error_depth)
			api_error(resp, 400, "invalid_json", NULL,
				  "The JSON body nests deeper than %d levels.", API_JSON_MAX_DEPTH);
		else
			api_error(resp, 400, "invalid_json", NULL,
				  "The body is not valid JSON: %s.", json_tokener_error_desc(jerr));
		goto out;
	}
	while (end < req->body_len && strchr(" \t\r\n", req->body[end]))
		end++;
	if (end != req->body_len) {
		api_error(resp, 400, "invalid_json", NULL,
			  "The JSON body has trailing data after the %s (at byte %zu).",
			  want_object ? "object" : "value", end);
		goto out;
	}
	if (want_object && !json_object_is_type(obj, json_type_object)) {
		api_error(resp, 400, "invalid_json", NULL,
			  "The request body must be a JSON object.");
		goto out;
	}
	{
		struct json_object *dup = NULL;
		int d = dup_key_find(req->body, req->body_len, &dup);

		if (d != 0) {
			if (d > 0)
				api_error(resp, 400, "duplicate_key", json_object_get_string(dup),
					  "The JSON body has the member \"%.64s\" twice in one "
					  "object; send it once.",
					  json_object_get_string(dup));
			else
				api_error(resp, 500, "internal_error", NULL,
					  "Out of memory checking the body.");
			json_object_put(dup);
			goto out;
		}
	}
	*out = obj;
	obj = NULL;
	rc = 0;
out:
	json_object_put(obj);
	if (tok)
		json_tokener_free(tok);
	return rc;
}

struct json_object *api_body_object(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *obj = NULL;

	return body_value(req, resp, true, &obj) < 0 ? NULL : obj;
}

int api_body_value(const struct api_req *req, struct api_resp *resp, struct json_object **out)
{
	return body_value(req, resp, false, out);
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
	else if (strlen(*out) != (size_t)json_object_get_string_len(v)) {
		/* A caller without len reads a C string: "python\u0000x" would be read as "python",
		 * a value the client never sent (and a validator in front never saw). */
		api_error(resp, 400, "invalid_value", key,
			  "Field \"%s\" must not contain NUL bytes.", key);
		return -1;
	}
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

/* RFC 4648 section 3.3 asks decoders to reject what is not in the alphabet; a lenient decoder
 * turned "cHJpbnQoMSk=!!!" into print(1), so whatever a client sends is either exactly one
 * encoding of its bytes or refused: one alphabet (standard or URL), padding absent or exactly
 * right, no whitespace, no bits in the last digit that encode nothing. */
int api_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen, char *why,
		      size_t whylen)
{
	unsigned char *o = NULL;
	size_t i, n = len, pad = 0, k = 0;
	unsigned acc = 0;
	int bits = 0, alphabet = 0; /* 1 standard (+/), 2 URL (-_) */

	*out = NULL;
	*outlen = 0;
	while (n > 0 && in[n - 1] == '=' && pad < 3) {
		n--;
		pad++;
	}
	if (pad && (len % 4 != 0 || pad > 2 || n % 4 + pad != 4)) {
		snprintf(why, whylen, "%s", "its = padding is wrong");
		return -1;
	}
	o = malloc(n / 4 * 3 + 3);
	if (!o) {
		snprintf(why, whylen, "%s", "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)in[i];
		int v = api_base64_value(c);
		int a = c == '+' || c == '/' ? 1 : c == '-' || c == '_' ? 2 : 0;

		if (c == '=') {
			snprintf(why, whylen, "byte %zu is = padding before the end", i);
			goto bad;
		}
		if (v < 0) {
			snprintf(why, whylen,
				 c >= 0x21 && c < 0x7f ? "byte %zu ('%c') is not a base64 digit"
						       : "byte %zu (0x%02x) is not a base64 digit",
				 i, c);
			goto bad;
		}
		if (a && alphabet && a != alphabet) {
			snprintf(why, whylen, "%s",
				 "it mixes the standard (+/) and URL (-_) alphabets");
			goto bad;
		}
		if (a)
			alphabet = a;
		acc = (acc << 6 | (unsigned)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[k++] = (unsigned char)(acc >> bits);
		}
	}
	if (n % 4 == 1) {
		snprintf(why, whylen, "%s", "its length is not that of any base64 text");
		goto bad;
	}
	if (acc & ((1u << bits) - 1)) {
		snprintf(why, whylen, "%s", "its last digit has bits set that encode nothing");
		goto bad;
	}
	*out = o;
	*outlen = k;
	return 0;
bad:
	free(o);
	return -1;
}
