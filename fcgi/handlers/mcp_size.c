/* mcp_size.c: tool results sized for a model. A model's context is small and the HTTP API's
 * answers are not (an execute may return megabytes, an evaluate tens of them), so an MCP result
 * keeps, of every long output, its head and its tail around a marker that says how many bytes
 * were left out; the count is also a field ("stdout_omitted_bytes") a program can read. The head
 * shows how a run started, the tail how it ended (the traceback, the last answer), which is what
 * a model acts on. Cuts fall between UTF-8 characters. Sizes come from mcp.result_bytes (per
 * output) and mcp.result_cases (the evaluate cases detailed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

/* Fields that are never shortened: ids and names a later call must send back whole, and images
 * (already sent as image content, and useless cut). */
static bool keep_whole(const char *key)
{
	static const char *const whole[] = {"session_id", "context_id", "run_id", "png",
					    "svg",	  "jpeg",	"path",	  NULL};
	const char *const *w;

	for (w = whole; *w; w++)
		if (strcmp(key, *w) == 0)
			return true;
	return false;
}

size_t mcp_size_text(const char *s, size_t len, size_t cap, char **out)
{
	char marker[64];
	size_t mlen, head, tail, omitted;
	char *o;

	*out = NULL;
	if (len <= cap)
		return 0;
	/* The marker's own length comes out of the budget, so the whole string fits cap. */
	mlen = (size_t)snprintf(marker, sizeof(marker),
				"\n\xe2\x80\xa6[%zu bytes omitted]\xe2\x80\xa6\n", len);
	if (cap < mlen + 8)
		cap = mlen + 8;
	head = (cap - mlen) / 2;
	tail = cap - mlen - head;
	/* Between characters: the head ends before a continuation byte, the tail starts after. */
	while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80)
		head--;
	while (tail > 0 && ((unsigned char)s[len - tail] & 0xc0) == 0x80)
		tail--;
	omitted = len - head - tail;
	mlen = (size_t)snprintf(marker, sizeof(marker),
				"\n\xe2\x80\xa6[%zu bytes omitted]\xe2\x80\xa6\n", omitted);
	o = malloc(head + mlen + tail + 1);
	if (!o)
		return 0;
	memcpy(o, s, head);
	memcpy(o + head, marker, mlen);
	memcpy(o + head + mlen, s + len - tail, tail);
	o[head + mlen + tail] = '\0';
	*out = o;
	return omitted;
}

/* Base64 text (output_encoding "base64") cannot hold a marker: its head only, whole 4-character
 * groups, and the decoded bytes left out. */
static size_t size_base64(struct json_object *obj, const char *key, struct json_object *v,
			  size_t cap)
{
	size_t len = (size_t)json_object_get_string_len(v), keep = cap / 4 * 4, pad = 0;
	const char *s = json_object_get_string(v);
	size_t whole, kept;

	if (len <= cap)
		return 0;
	while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
		pad++;
	whole = len / 4 * 3 - pad;
	kept = keep / 4 * 3;
	json_object_object_add(obj, key, json_object_new_string_len(s, (int)keep));
	return whole - kept;
}

/* Shorten obj[key] when it is a string longer than cap; the count left out goes into
 * obj["<key>_omitted_bytes"] (always when always_count, else only when something was cut). */
static void size_field(struct json_object *obj, const char *key, size_t cap, bool base64,
		       bool always_count)
{
	struct json_object *v = NULL;
	size_t omitted = 0;
	char name[80];
	char *cut = NULL;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string)) {
		if (!always_count)
			return;
	} else if (base64) {
		omitted = size_base64(obj, key, v, cap);
	} else {
		omitted = mcp_size_text(json_object_get_string(v),
					(size_t)json_object_get_string_len(v), cap, &cut);
		if (cut)
			json_object_object_add(obj, key, json_object_new_string(cut));
		free(cut);
	}
	if (omitted || always_count) {
		snprintf(name, sizeof(name), "%s_omitted_bytes", key);
		json_object_object_add(obj, name, json_object_new_int64((int64_t)omitted));
	}
}

/* Every string below v longer than cap, shortened (with its _omitted_bytes sibling). */
static void size_all(struct json_object *v, size_t cap)
{
	if (json_object_is_type(v, json_type_array)) {
		size_t i;

		for (i = 0; i < json_object_array_length(v); i++)
			size_all(json_object_array_get_idx(v, i), cap);
		return;
	}
	if (!json_object_is_type(v, json_type_object))
		return;
	{
		/* Keys first: adding siblings while iterating would disturb the iteration. */
		char *keys[64];
		size_t n = 0, i;

		json_object_object_foreach(v, key, val)
		{
			if (json_object_is_type(val, json_type_string)) {
				if (n < 64 && !keep_whole(key) &&
				    (size_t)json_object_get_string_len(val) > cap)
					keys[n] = strdup(key), n += keys[n] != NULL;
			} else {
				size_all(val, cap);
			}
		}
		for (i = 0; i < n; i++) {
			size_field(v, keys[i], cap, false, false);
			free(keys[i]);
		}
	}
}

void mcp_size_run(struct json_object *out, const struct config *cfg, bool base64)
{
	size_t cap = (size_t)cfg->mcp_result_bytes;
	struct json_object *sub = NULL;

	size_field(out, "stdout", cap, base64, true);
	size_field(out, "stderr", cap, base64, true);
	/* The compile step's output and a cell's display data: the same cap, each field. */
	if (json_object_object_get_ex(out, "compile", &sub) &&
	    json_object_is_type(sub, json_type_object)) {
		size_field(sub, "stdout", cap, false, false);
		size_field(sub, "stderr", cap, false, false);
	}
	if (json_object_object_get_ex(out, "results", &sub))
		size_all(sub, cap);
	if (json_object_object_get_ex(out, "error", &sub))
		size_all(sub, cap);
}

static bool case_passed(struct json_object *c)
{
	struct json_object *p;

	return json_object_object_get_ex(c, "passed", &p) && json_object_get_boolean(p);
}

void mcp_size_evaluate(struct json_object *out, const struct config *cfg)
{
	size_t cap = (size_t)cfg->mcp_result_bytes, per_case = cap / 16 < 256 ? 256 : cap / 16;
	size_t max = cfg->mcp_result_cases, n, i, kept = 0;
	struct json_object *cases = NULL, *shown;
	bool *keep;

	json_object_object_foreach(out, key, val)
	{
		if (strcmp(key, "cases") != 0)
			size_all(val, cap);
	}
	if (!json_object_object_get_ex(out, "cases", &cases) ||
	    !json_object_is_type(cases, json_type_array))
		return;
	n = json_object_array_length(cases);
	if (n > max && (keep = calloc(n, sizeof(*keep)))) {
		/* The failures first (what a model has to fix), then passes, in the cases' order;
		 * every case keeps its "index", and cases_omitted says how many are left out. */
		for (i = 0; i < n && kept < max; i++)
			if (!case_passed(json_object_array_get_idx(cases, i)))
				keep[i] = true, kept++;
		for (i = 0; i < n && kept < max; i++)
			if (!keep[i])
				keep[i] = true, kept++;
		shown = json_object_new_array();
		for (i = 0; i < n; i++)
			if (keep[i])
				json_object_array_add(
				    shown, json_object_get(json_object_array_get_idx(cases, i)));
		free(keep);
		json_object_object_add(out, "cases", shown);
		json_object_object_add(out, "cases_omitted",
				       json_object_new_int64((int64_t)(n - max)));
		cases = shown;
	} else {
		json_object_object_add(out, "cases_omitted", json_object_new_int64(0));
	}
	size_all(cases, per_case);
}
