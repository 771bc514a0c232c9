/* fuzz_wire.c: libFuzzer driver for the broker protocol's checks (sandbox/wire.c).
 *
 * Input layout: byte 0 is the number of descriptors said to have come, then a request header,
 * then its strings; the same bytes are also read as a reply to each op. Beyond the sanitizers:
 * a request the checks accept decodes into exactly argc + envc strings inside the input, and
 * encoding those again gives the same header counts and the same bytes. The context requests and
 * replies (wire.h "contexts"): whatever the checks accept has a terminated owner, an id that is
 * 32 lowercase hex digits (or none, for LIST), a request length within bounds, and replies whose
 * lengths and flags are in range. */
#include <stdlib.h>
#include <string.h>

#include "../../sandbox/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *argv[SBX_MAX_ARGS + 1], *envp[SBX_MAX_ARGS + 1];

static void check_request(const uint8_t *data, size_t size)
{
	struct sbx_wire_req h, again;
	struct sbx_request req;
	char *s, *out = NULL;
	int fds[SBX_WIRE_MAX_FDS], nfds;

	if (size < 1 + sizeof h)
		return;
	memcpy(&h, data + 1, sizeof h);
	if (sbx_wire_check_req(&h, data[0] % 5 - 1) != SBX_WIRE_OK || h.op != SBX_OP_RUN)
		return;
	size -= 1 + sizeof h;
	s = malloc(size + 1);
	memcpy(s, data + 1 + sizeof h, size);
	if (sbx_wire_decode_strings(&h, s, size, argv, envp) == SBX_WIRE_OK) {
		if (size != h.strings_len || argv[h.argc] || envp[h.envc])
			abort();
		memset(&req, 0, sizeof req);
		req.argv = argv;
		req.env = envp;
		req.workdir_fd = h.has_workdir ? 3 : -1;
		req.stdin_fd = h.has_stdin ? 4 : -1;
		req.layer_fd = h.has_layer ? 5 : -1;
		req.limits = h.limits;
		if (sbx_wire_encode_run(&req, &again, &out, fds, &nfds) != SBX_WIRE_OK ||
		    again.argc != h.argc || again.envc != h.envc || again.strings_len != size ||
		    memcmp(out, s, size) || memcmp(&again.limits, &h.limits, sizeof h.limits) ||
		    nfds != (int)(h.has_workdir + h.has_layer + h.has_stdin))
			abort();
		free(out);
	}
	free(s);
}

static void check_reply(const uint8_t *data, size_t size)
{
	struct sbx_wire_res r;
	struct sbx_result res;
	uint32_t op;

	if (size < sizeof r)
		return;
	memcpy(&r, data, sizeof r);
	for (op = 0; op <= SBX_OP_QUOTA + 1; op++) {
		if (sbx_wire_check_res(&r, op) != SBX_WIRE_OK || op != SBX_OP_RUN)
			continue;
		memset(&res, 0, sizeof res);
		if (sbx_wire_decode_result(&r, &res) > 0 || res.status > SBX_INTERNAL_ERROR ||
		    res.limit > SBX_LIMIT_CPU || !memchr(res.message, '\0', sizeof res.message) ||
		    r.out_len > SBX_WIRE_MAX_OUTPUT_BYTES)
			abort();
	}
}

static void check_contexts(const uint8_t *data, size_t size)
{
	struct sbx_wire_req h;
	struct sbx_wire_ctx c;
	struct sbx_wire_ctx_res r;
	struct sbx_ctx_info info;
	uint32_t op;
	size_t i;

	if (size >= sizeof h + sizeof c) {
		memcpy(&h, data, sizeof h);
		memcpy(&c, data + sizeof h, sizeof c);
		if (sbx_wire_check_ctx(&h, &c) == SBX_WIRE_OK) {
			if (!sbx_wire_is_ctx_op(h.op) || !memchr(c.owner, '\0', sizeof c.owner) ||
			    c.request_len > SBX_CTX_MAX_REQUEST ||
			    (h.op == SBX_OP_CTX_CALL) != (c.request_len > 0))
				abort();
			for (i = 0; h.op != SBX_OP_CTX_LIST && i < SBX_CTX_ID_LEN; i++)
				if (!strchr("0123456789abcdef", c.id[i]) || !c.id[i])
					abort();
		}
	}
	if (size >= sizeof r) {
		memcpy(&r, data, sizeof r);
		for (op = 0; op <= SBX_OP_CTX_LIST + 1; op++) {
			if (sbx_wire_check_ctx_res(&r, op) != SBX_WIRE_OK)
				continue;
			if (!sbx_wire_is_ctx_op(op) || r.rc > 0 || r.lost > 1 ||
			    r.out_len > SBX_WIRE_MAX_OUTPUT_BYTES ||
			    r.reply_len > SBX_WIRE_MAX_OUTPUT_BYTES ||
			    (op == SBX_OP_CTX_LIST ? r.count > SBX_WIRE_MAX_CONTEXTS
						   : r.count != 0) ||
			    !memchr(r.message, '\0', sizeof r.message))
				abort();
		}
	}
	if (size >= sizeof info) {
		memcpy(&info, data, sizeof info);
		if (sbx_wire_check_ctx_info(&info) == SBX_WIRE_OK &&
		    (!memchr(info.id, '\0', sizeof info.id) ||
		     !memchr(info.owner, '\0', sizeof info.owner) ||
		     (info.language != SBX_CTX_PYTHON && info.language != SBX_CTX_BASH)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_request(data, size);
	check_reply(data, size);
	check_contexts(data, size);
	return 0;
}
