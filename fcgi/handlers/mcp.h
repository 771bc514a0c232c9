/* mcp.h: the Model Context Protocol endpoint (mcp.c: transport and JSON-RPC; mcp_tools.c: the
 * tools, which call the service's own routes as black boxes). */
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

/* Run tool name with arguments (borrowed; NULL counts as {}) on behalf of req's client. Returns a
 * CallToolResult object (owned by the caller), or NULL with err filled (-32602 for an unknown tool
 * or bad arguments, -32603 when the service failed). */
struct json_object *mcp_tools_call(const struct api_req *req, const char *name,
				   struct json_object *args, struct mcp_err *err);

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
