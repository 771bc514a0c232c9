/* mcp.h: the Model Context Protocol endpoint. mcp.c: transport and JSON-RPC; mcp_list.c: the
 * tool list (mcp_tools.json); mcp_tools.c: the tools, which call the service's own routes as
 * black boxes (mcp_route.c); mcp_size.c: results sized for a model; mcp_cancel.c: cancelling a
 * call. */
#ifndef SBX_MCP_H
#define SBX_MCP_H

#include "handlers.h"

/* POST /mcp (route table). */
void h_mcp(const struct api_req *req, struct api_resp *resp);

/* JSON-RPC error codes used by both files. */
#define MCP_PARSE_ERROR -32700
#define MCP_INVALID_REQUEST -32600
#define MCP_METHOD_NOT_FOUND -32601
#define MCP_INVALID_PARAMS -32602
#define MCP_INTERNAL_ERROR -32603
#define MCP_HEADER_MISMATCH -32020
#define MCP_UNSUPPORTED_VERSION -32022

/* A JSON-RPC error to send instead of a result: code, a sentence, optional data (owned). */
struct mcp_err {
	int code;
	char message[512];
	struct json_object *data;
};

/* The tool list (an array of Tool objects). Borrowed: built once per process from cfg, valid for
 * the process's life. NULL when out of memory. */
struct json_object *mcp_tools_list(const struct config *cfg);

/* ---- calling the service's routes (mcp_route.c) ---- */

/* Append s percent-encoded to out (at least 3 * strlen(s) + 1 free); '/' kept when keep_slash.
 * Returns the new end of out. */
char *mcp_pct_append(char *out, const char *s, bool keep_slash);
/* One request to the service's own route table as outer's client: method on
 * ["/v1/sessions/" pct(id)] tail [pct(path)] (id and path may be NULL), body raw (borrowed).
 * The answer fills resp (initialised by the caller, freed by it). */
void mcp_call_route(const struct api_req *outer, const char *method, const char *id,
		    const char *tail, const char *path, const char *body, size_t body_len,
		    struct api_resp *resp);
/* mcp_call_route with a JSON object body (borrowed). */
void mcp_call_json(const struct api_req *outer, const char *method, const char *id,
		   const char *tail, struct json_object *body, struct api_resp *resp);

/* A run route (POST ["/v1/sessions/" pct(id)] tail: execute, run) called streamed, so that it
 * stops when outer's conn_fd turns readable (a cancelled call): adds "stream": true to body
 * (borrowed) and fills resp with the end event as an ordinary answer (status and JSON). */
void mcp_call_run(const struct api_req *outer, const char *id, const char *tail,
		  struct json_object *body, struct api_resp *resp);

/* Run tool name with arguments (borrowed; NULL counts as {}) on behalf of req's client. Returns a
 * CallToolResult object (owned by the caller), or NULL with err filled (-32602 for an unknown tool
 * or bad arguments, -32603 when the service failed). */
struct json_object *mcp_tools_call(const struct api_req *req, const char *name,
				   struct json_object *args, struct mcp_err *err);

/* In a cluster (cfg->shard set), tool arguments whose session_id names a session of another
 * host ("<shard>-<uuid>"): the length of that shard name, else 0. nginx cannot read a body to
 * route on it, so the call is answered 421 with "X-Sbx-Shard: <shard>" and the front
 * (sbx-cluster.conf.in, @tool_shard) passes the same request on to that host, marked
 * SBX_MCP_ROUTED so that it is never bounced twice (POST /mcp and POST /v1/tools/{name}). */
size_t mcp_foreign_shard(const struct api_req *req, struct json_object *args);

/* A request header ("HTTP_MCP_METHOD") from the FastCGI params, or NULL. Borrowed
 * (mcp_route.c). */
const char *mcp_header(const struct api_req *req, const char *name);

/* ---- cancellation (mcp_cancel.c) ---- */

#define MCP_REQUEST_CANCELLED -32800

/* One tools/call being watched for cancellation. */
struct mcp_cancel {
	int ep;	  /* epoll set: the connection and the FIFO; -1 when only the connection */
	int fifo; /* the call's FIFO (read and write), -1 when not registered */
	char path[4096];
};

/* Prepare the call id of req (borrowed, may be NULL) for cancellation: *inner becomes a copy of
 * req whose conn_fd turns readable when the client goes or notifications/cancelled names the
 * call. Never fails: without a registration inner watches the connection alone. Pair with
 * mcp_cancel_end(). */
void mcp_cancel_begin(struct mcp_cancel *mc, const struct api_req *req, struct json_object *id,
		      struct api_req *inner);
/* Whether a notifications/cancelled arrived for the call. */
bool mcp_cancel_notified(const struct mcp_cancel *mc);
void mcp_cancel_end(struct mcp_cancel *mc);
/* notifications/cancelled from req's client: params.requestId's call, if running, is told. */
void mcp_cancel_notify(const struct api_req *req, struct json_object *params);

/* ---- results sized for a model (mcp_size.c) ---- */

/* s (len bytes of UTF-8) cut to at most cap bytes: its head and tail around a marker naming the
 * bytes left out, never splitting a character. Returns the bytes left out with the new string in
 * *out (caller frees), or 0 and *out NULL when s fits (or memory ran out). */
size_t mcp_size_text(const char *s, size_t len, size_t cap, char **out);
/* A run or cell result (execute, run_command, python): stdout and stderr sized to
 * cfg->mcp_result_bytes with stdout_omitted_bytes / stderr_omitted_bytes set (0 when whole);
 * base64: the outputs are base64 text (head only). The compile step and display data too. */
void mcp_size_run(struct json_object *out, const struct config *cfg, bool base64);
/* An evaluate result: at most cfg->mcp_result_cases cases (failures first, cases_omitted set),
 * each case's long strings shortened to a share of mcp_result_bytes. */
void mcp_size_evaluate(struct json_object *out, const struct config *cfg);

/* Decode strict base64 (api_base64_decode) into *out (caller frees). 0 or -1. */
int mcp_b64_decode(const char *s, size_t n, unsigned char **out, size_t *outlen);

#endif
