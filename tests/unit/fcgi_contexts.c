/* fcgi_contexts.c: the context handlers over the store, with the scripted broker client
 * (fcgi_fake_sbx.c): the record in the session, ownership, error mapping, limits, and the
 * checks on the kernel's reply (untrusted: wrong types dropped, sizes capped, never a crash). */
#include <errno.h>

#include "fcgi_fake_sbx.h"
#include "session_test.h"

static char sid[64], cid[64];

static void reply(const char *r)
{
	fake_ctx_next.reply = (char *)r;
	fake_ctx_next.reply_len = r ? strlen(r) : 0;
}

static struct json_object *member(const struct api_resp *resp, const char *key)
{
	struct json_object *v = NULL;

	if (resp->json)
		json_object_object_get_ex(resp->json, key, &v);
	return v;
}

/* POST .../execute of code on cid; the status. */
static int execute(const char *body, struct api_resp *resp)
{
	struct api_req r;

	api_resp_free(resp);
	api_resp_init(resp);
	t_req(&r, "alice", sid, cid, body);
	h_context_execute(&r, resp);
	return resp->status;
}

int main(void)
{
	struct api_resp resp;
	struct json_object *v, *res0;
	char path[512], buf[512];
	FILE *f;
	int st;

	(void)t_get;
	(void)t_put;
	t_setup();
	t_cfg.defaults = (struct sbx_limits){.wall_ms = 10000,
					     .cpu_ms = 5000,
					     .memory_bytes = 256u << 20,
					     .processes = 64,
					     .output_bytes = 65536,
					     .file_size_bytes = 16u << 20};
	t_cfg.maxima = t_cfg.defaults;
	t_cfg.maxima.wall_ms = 60000;
	t_cfg.maxima.memory_bytes = 1024u << 20;
	t_cfg.ctx_memory_bytes = 128u << 20;
	t_cfg.ctx_per_client = 4;
	t_cfg.ctx_wait_ms = 100;
	t_cfg.ctx_results_bytes = 1000;
	api_resp_init(&resp);
	t_new_session("alice", sid, &resp);

	/* create: recorded in the session directory */
	st = t_call(h_contexts_create, "alice", sid, NULL, "{\"language\":\"python\"}", &resp);
	snprintf(cid, sizeof(cid), "%s", t_str(&resp, "id"));
	TAP_OK(st == 201 && store_ctx_id_valid(cid) && fake_ctx_creates == 1,
	       "create: 201, a 32-hex id, the broker asked once");
	TAP_OK(!strcmp(t_str(&resp, "language"), "python") &&
		   json_object_get_int(member(&resp, "memory_mb")) == 128,
	       "create: language, memory_mb from contexts.memory_mb");
	t_disk(path, sizeof(path), "alice", sid, false);
	strcat(path, "/contexts");
	f = fopen(path, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	TAP_OK(!strncmp(buf, cid, 32) && strstr(buf, " python "),
	       "create: the context is recorded in the session's directory");
	st = t_call(h_contexts_create, "alice", sid, NULL, "{\"language\":\"node\"}", &resp);
	TAP_OK(st == 400 && !strcmp(t_code(&resp), "invalid_language"),
	       "create: node is 400 invalid_language");
	st = t_call(h_contexts_create, "alice", sid, NULL,
		    "{\"language\":\"bash\",\"limits\":{\"wall_ms\":5}}", &resp);
	TAP_OK(st == 400 && !strcmp(t_code(&resp), "invalid_limit"),
	       "create: a per-cell limit is refused at creation");
	st = t_call(h_contexts_create, "alice", sid, NULL,
		    "{\"language\":\"bash\",\"limits\":{\"memory_mb\":4096}}", &resp);
	TAP_OK(st == 400 && !strcmp(t_code(&resp), "limit_too_high"),
	       "create: memory_mb above the maximum is 400 limit_too_high");
	fake_ctx_create_rc = -EDQUOT;
	st = t_call(h_contexts_create, "alice", sid, NULL, "{\"language\":\"bash\"}", &resp);
	TAP_OK(st == 429 && !strcmp(t_code(&resp), "too_many_contexts") &&
		   strstr(resp.headers, "Retry-After"),
	       "create: the broker's EDQUOT is 429 too_many_contexts + Retry-After");
	fake_ctx_create_rc = -EAGAIN;
	st = t_call(h_contexts_create, "alice", sid, NULL, "{\"language\":\"bash\"}", &resp);
	TAP_OK(st == 503 && !strcmp(t_code(&resp), "busy") && strstr(resp.headers, "Retry-After"),
	       "create: the broker's EAGAIN is 503 busy + Retry-After");
	fake_ctx_create_rc = 0;

	/* ownership */
	st = t_call(h_contexts_list, "bob", sid, NULL, NULL, &resp);
	TAP_OK(st == 404, "list: another client gets 404");
	st = t_call(h_context_execute, "alice", sid, "0123456789abcdef0123456789abcdef",
		    "{\"code\":\"1\"}", &resp);
	TAP_OK(st == 404 && !strcmp(t_code(&resp), "context_not_found"),
	       "execute: an id the session does not record is 404 context_not_found");
	st = t_call(h_context_execute, "alice", sid, "../x", "{\"code\":\"1\"}", &resp);
	TAP_OK(st == 404, "execute: a malformed id is 404");

	/* execute: the reply, checked */
	fake_ctx_next = (struct sbx_cell_result){.status = SBX_OK, .out = "hi\n", .out_len = 3};
	reply("{\"op\":\"execute\",\"status\":\"ok\",\"execution_count\":3,\"results\":[{\"is_"
	      "main_result\":true,\"text\":\"42\"},7,{\"text\":5,\"png\":\"iVBO\",\"json\":{\"a\":"
	      "[1]}}],\"error\":null,\"exit_code\":0}");
	st = execute("{\"code\":\"x\"}", &resp);
	v = member(&resp, "results");
	res0 = v ? json_object_array_get_idx(v, 0) : NULL;
	TAP_OK(st == 200 && json_object_get_int(member(&resp, "execution_count")) == 3 &&
		   !strcmp(t_str(&resp, "state"), "kept") &&
		   !strcmp(t_str(&resp, "stdout"), "hi\n"),
	       "execute: 200 with execution_count, state kept, stdout");
	TAP_OK(v && json_object_array_length(v) == 2 && res0 &&
		   !strcmp(json_object_to_json_string_ext(res0, JSON_C_TO_STRING_PLAIN),
			   "{\"is_main_result\":true,\"text\":\"42\"}"),
	       "execute: a non-object result is dropped, the main result kept");
	res0 = v ? json_object_array_get_idx(v, 1) : NULL;
	TAP_OK(res0 && !json_object_object_get_ex(res0, "text", NULL) &&
		   json_object_object_get_ex(res0, "png", NULL) &&
		   json_object_object_get_ex(res0, "json", NULL),
	       "execute: a wrongly typed member is dropped, the others kept");
	reply("{\"op\":\"execute\",\"results\":[{\"png\":\"<script>\"},{\"png\":\"iVBORw==\"}]}");
	st = execute("{\"code\":\"x\"}", &resp);
	v = member(&resp, "results");
	TAP_OK(st == 200 && v && json_object_array_length(v) == 2 &&
		   !json_object_object_get_ex(json_object_array_get_idx(v, 0), "png", NULL) &&
		   json_object_object_get_ex(json_object_array_get_idx(v, 1), "png", NULL),
	       "execute: a png that is not base64 is dropped");
	TAP_OK(strstr(fake_ctx_request, "\"op\":\"execute\"") &&
		   strstr(fake_ctx_request, "\"code\":\"x\""),
	       "execute: the kernel request carries op and code");

	/* display data past contexts.results_bytes: dropped and flagged */
	{
		static char big[4096];
		char *p = big;

		p += sprintf(p, "{\"op\":\"execute\",\"execution_count\":1,\"results\":[");
		for (int i = 0; i < 3; i++)
			p += sprintf(p, "%s{\"text\":\"%0400d\"}", i ? "," : "", 0);
		sprintf(p, "],\"error\":{\"name\":\"E\",\"value\":\"v\",\"traceback\":[\"a\",3]}}");
		reply(big);
		st = execute("{\"code\":\"x\"}", &resp);
		v = member(&resp, "results_truncated");
		TAP_OK(st == 200 && v && json_object_get_boolean(v),
		       "execute: results over results_bytes are cut and flagged");
		v = member(&resp, "error");
		TAP_OK(v && json_object_object_get_ex(v, "traceback", &res0) &&
			   json_object_array_length(res0) == 1,
		       "execute: the error's traceback keeps only strings");
	}

	/* a reply that is not JSON, nested too deep, or not an object: no crash, no results */
	reply(
	    "{\"op\":\"execute\",\"results\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]"
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]}");
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 200 && json_object_array_length(member(&resp, "results")) == 0 &&
		   member(&resp, "execution_count") == NULL,
	       "execute: a reply nested too deep is ignored");
	reply("not json");
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 200 && json_object_array_length(member(&resp, "results")) == 0,
	       "execute: a reply that is not JSON is ignored");
	reply(NULL);

	/* lost: the broker no longer has it: made again, state lost */
	fake_ctx_enoent = 1;
	fake_ctx_creates = 0;
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 200 && !strcmp(t_str(&resp, "state"), "lost") && fake_ctx_creates == 1,
	       "execute: a context the broker lost is made again; state lost");
	fake_ctx_next.lost = true;
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 200 && !strcmp(t_str(&resp, "state"), "lost"),
	       "execute: the broker's lost flag is state lost");
	fake_ctx_next.lost = false;
	fake_ctx_call_rc = -EBUSY;
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 409 && !strcmp(t_code(&resp), "context_busy"),
	       "execute: EBUSY is 409 context_busy");
	fake_ctx_call_rc = 0;
	fake_ctx_next.status = SBX_INTERNAL_ERROR;
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 500 && !strcmp(t_code(&resp), "internal_error"),
	       "execute: internal_error is a 500");
	fake_ctx_next.status = SBX_OK;
	st = execute("{\"code\":\"x\",\"limits\":{\"processes\":3}}", &resp);
	TAP_OK(st == 400 && !strcmp(t_code(&resp), "invalid_limit"),
	       "execute: processes is the context's: 400");
	st = execute("{\"code\":\"x\",\"stream\":true}", &resp);
	TAP_OK(st == 200 && member(&resp, "state"),
	       "execute: stream true where nothing can stream answers the whole result");
	st = execute("{\"code\":\"x\",\"stream\":1}", &resp);
	TAP_OK(st == 400, "execute: stream is a boolean");

	/* repl: one default per language */
	fake_ctx_creates = 0;
	t_call(h_session_repl, "alice", sid, NULL, "{\"code\":\"1\"}", &resp);
	snprintf(buf, sizeof(buf), "%s", t_str(&resp, "context_id"));
	st = t_call(h_session_repl, "alice", sid, NULL, "{\"code\":\"1\"}", &resp);
	TAP_OK(st == 200 && store_ctx_id_valid(buf) && !strcmp(buf, t_str(&resp, "context_id")) &&
		   fake_ctx_creates == 1,
	       "repl: the default context is made once");
	st = t_call(h_session_repl, "alice", sid, NULL, "{\"code\":\"1\",\"language\":\"bash\"}",
		    &resp);
	TAP_OK(st == 200 && strcmp(buf, t_str(&resp, "context_id")) && fake_ctx_creates == 2,
	       "repl: bash has its own default");

	/* variables */
	{
		struct api_req r;

		api_resp_free(&resp);
		api_resp_init(&resp);
		t_req(&r, "alice", sid, cid, "[1, {\"a\": null}]");
		r.params[2] = "my_var";
		reply("{\"op\":\"set_variable\",\"ok\":true}");
		h_context_variable_put(&r, &resp);
		TAP_OK(
		    resp.status == 200 &&
			strstr(fake_ctx_request, "\"name\":\"my_var\",\"value\":[1,{\"a\":null}]"),
		    "PUT variable: the JSON value goes to the kernel");
		api_resp_free(&resp);
		api_resp_init(&resp);
		r.params[2] = "no-dash";
		h_context_variable_put(&r, &resp);
		TAP_OK(resp.status == 400, "PUT variable: a bad name is 400");
		api_resp_free(&resp);
		api_resp_init(&resp);
		t_req(&r, "alice", sid, cid, NULL);
		reply("{\"op\":\"variables\",\"variables\":[{\"name\":\"x\",\"type\":\"int\","
		      "\"repr\":"
		      "\"1\"},{\"name\":2},\"junk\"]}");
		h_context_variables(&r, &resp);
		TAP_OK(resp.status == 200 && json_object_array_length(resp.json) == 1,
		       "GET variables: malformed entries are dropped");
		reply(NULL);
	}

	/* list, delete, and a session delete ends the rest */
	st = t_call(h_contexts_list, "alice", sid, NULL, NULL, &resp);
	TAP_OK(st == 200 && json_object_array_length(resp.json) == 3,
	       "list: the three contexts (one made, two defaults)");
	st = t_call(h_context_delete, "alice", sid, cid, NULL, &resp);
	TAP_OK(st == 204, "delete: 204");
	st = execute("{\"code\":\"x\"}", &resp);
	TAP_OK(st == 404, "delete: then 404");
	fake_ctx_deletes = 0;
	st = t_call(h_session_delete, "alice", sid, NULL, NULL, &resp);
	TAP_OK(st == 204 && fake_ctx_deletes == 2,
	       "session delete: both remaining contexts are ended");

	/* fork copies no contexts */
	t_new_session("alice", sid, &resp);
	t_call(h_contexts_create, "alice", sid, NULL, "{\"language\":\"python\"}", &resp);
	t_call(h_session_fork, "alice", sid, NULL, NULL, &resp);
	snprintf(buf, sizeof(buf), "%s", t_str(&resp, "id"));
	st = t_call(h_contexts_list, "alice", buf, NULL, NULL, &resp);
	TAP_OK(st == 200 && json_object_array_length(resp.json) == 0, "fork: no contexts follow");

	/* an expired session ends its contexts too (lazy expiry on the next open) */
	t_cfg.session_ttl_s = 1;
	t_new_session("alice", sid, &resp);
	t_call(h_contexts_create, "alice", sid, NULL, "{\"language\":\"bash\"}", &resp);
	fake_ctx_deletes = 0;
	sleep(3);
	st = t_call(h_session_get, "alice", sid, NULL, NULL, &resp);
	TAP_OK(st == 404 && fake_ctx_deletes == 1, "expiry: the session's context is ended");

	api_resp_free(&resp);
	t_teardown();
	return tap_done();
}
