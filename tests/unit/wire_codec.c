/* wire_codec.c: unit tests of sandbox/wire.c's pure half: requests and replies encoded, checked
 * and decoded without a socket. Every refusal the broker or the client relies on has a row:
 * truncated, oversized lengths, counts past the arrays, bad enums and flags, missing NULs,
 * descriptors that do not match the header. */
#include <string.h>

#include "../../sandbox/wire.h"
#include "../lib/tap.h"

static const char *argv_buf[SBX_MAX_ARGS + 1], *envp_buf[SBX_MAX_ARGS + 1];

/* A valid run header for argc strings, envc of them KEY=VALUE, over len bytes. */
static struct sbx_wire_req run_hdr(uint32_t argc, uint32_t envc, uint32_t len)
{
	struct sbx_wire_req h;

	memset(&h, 0, sizeof h);
	h.magic = SBX_WIRE_MAGIC;
	h.op = SBX_OP_RUN;
	h.argc = argc;
	h.envc = envc;
	h.strings_len = len;
	return h;
}

static enum sbx_wire_err decode(uint32_t argc, uint32_t envc, const char *s, size_t len)
{
	static char buf[SBX_MAX_ARGS_BYTES + 1];
	struct sbx_wire_req h = run_hdr(argc, envc, (uint32_t)len);

	memcpy(buf, s, len);
	return sbx_wire_decode_strings(&h, buf, len, argv_buf, envp_buf);
}

static void test_request_round_trip(void)
{
	const char *argv[] = {"/usr/bin/python3", "-c", "", "print(1)", NULL};
	const char *env[] = {"A=1", "EMPTY=", "X=a=b", NULL};
	struct sbx_request req;
	struct sbx_wire_req h;
	char *s = NULL;
	int fds[SBX_WIRE_MAX_FDS], nfds = -1;
	enum sbx_wire_err e;

	memset(&req, 0, sizeof req);
	req.argv = argv;
	req.env = env;
	req.workdir_fd = 7;
	req.stdin_fd = 9;
	req.limits.wall_ms = 1234;
	req.limits.memory_bytes = 1u << 20;
	e = sbx_wire_encode_run(&req, &h, &s, fds, &nfds);
	TAP_OK(e == SBX_WIRE_OK && s, "encode a run: %s", sbx_wire_strerror(e));
	TAP_OK(h.magic == SBX_WIRE_MAGIC && h.op == SBX_OP_RUN && h.argc == 4 && h.envc == 3 &&
		   h.reserved == 0,
	       "encode: magic, op and counts");
	TAP_OK(nfds == 2 && fds[0] == 7 && fds[1] == 9 && h.has_workdir == 1 && h.has_stdin == 1,
	       "encode: work directory then stdin, flagged");
	TAP_OK(h.limits.wall_ms == 1234 && h.limits.memory_bytes == 1u << 20, "encode: limits");
	{
		struct sbx_wire_req hl;
		char *sl = NULL;
		int lf[SBX_WIRE_MAX_FDS], nl = -1;

		req.layer_fd = 8;
		e = sbx_wire_encode_run(&req, &hl, &sl, lf, &nl);
		TAP_OK(e == SBX_WIRE_OK && nl == 3 && lf[0] == 7 && lf[1] == 8 && lf[2] == 9 &&
			   hl.has_layer == 1 && sbx_wire_check_req(&hl, nl) == SBX_WIRE_OK,
		       "encode: a layer travels between the directory and stdin");
		free(sl);
		req.layer_fd = 0;
	}
	TAP_OK(sbx_wire_check_req(&h, nfds) == SBX_WIRE_OK, "an encoded run passes the check");
	e = sbx_wire_decode_strings(&h, s, h.strings_len, argv_buf, envp_buf);
	TAP_OK(e == SBX_WIRE_OK, "decode the strings back: %s", sbx_wire_strerror(e));
	TAP_OK(e == SBX_WIRE_OK && !strcmp(argv_buf[0], "/usr/bin/python3") &&
		   !strcmp(argv_buf[2], "") && !strcmp(argv_buf[3], "print(1)") && !argv_buf[4],
	       "argv survives, an empty argument included, NULL-terminated");
	TAP_OK(e == SBX_WIRE_OK && !strcmp(envp_buf[0], "A=1") && !strcmp(envp_buf[1], "EMPTY=") &&
		   !strcmp(envp_buf[2], "X=a=b") && !envp_buf[3],
	       "env survives, NULL-terminated");
	free(s);

	/* no descriptors, no env */
	req.env = NULL;
	req.workdir_fd = req.stdin_fd = -1;
	e = sbx_wire_encode_run(&req, &h, &s, fds, &nfds);
	TAP_OK(e == SBX_WIRE_OK && nfds == 0 && !h.has_workdir && !h.has_stdin && h.envc == 0 &&
		   sbx_wire_check_req(&h, 0) == SBX_WIRE_OK,
	       "a run without descriptors or env");
	free(s);
	req.stdin_fd = 5;
	e = sbx_wire_encode_run(&req, &h, &s, fds, &nfds);
	TAP_OK(e == SBX_WIRE_OK && nfds == 1 && fds[0] == 5 && !h.has_workdir && h.has_stdin,
	       "stdin alone is the first descriptor");
	free(s);
}

static void test_encode_refusals(void)
{
	static const char *many[SBX_MAX_ARGS + 2];
	static char big[SBX_MAX_ARGS_BYTES];
	const char *one[] = {"/bin/true", NULL}, *bad_env[] = {"NOEQUALS", NULL},
		   *eq_env[] = {"=x", NULL}, *empty[] = {NULL}, *huge[] = {big, NULL};
	struct sbx_request req;
	struct sbx_wire_req h;
	char *s = (char *)1;
	int fds[SBX_WIRE_MAX_FDS], nfds, i;

	memset(&req, 0, sizeof req);
	req.workdir_fd = req.stdin_fd = -1;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_BAD_COUNT && !s,
	       "encode: NULL argv refused, nothing allocated");
	req.argv = empty;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_BAD_COUNT,
	       "encode: empty argv refused");
	for (i = 0; i < SBX_MAX_ARGS + 1; i++)
		many[i] = "a";
	req.argv = many;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_BAD_COUNT,
	       "encode: %d arguments refused", SBX_MAX_ARGS + 1);
	many[SBX_MAX_ARGS] = NULL;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_OK &&
		   h.argc == SBX_MAX_ARGS,
	       "encode: exactly %d arguments accepted", SBX_MAX_ARGS);
	free(s);
	many[SBX_MAX_ARGS] = "a";
	req.argv = one;
	req.env = many;
	for (i = 0; i < SBX_MAX_ARGS + 1; i++)
		many[i] = "K=v";
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_BAD_COUNT,
	       "encode: %d env entries refused", SBX_MAX_ARGS + 1);
	req.env = bad_env;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_BAD_STRINGS,
	       "encode: env entry without '=' refused");
	req.env = eq_env;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_BAD_STRINGS,
	       "encode: env entry with an empty name refused");
	req.env = NULL;
	memset(big, 'x', sizeof big - 1); /* one byte short of the bound, plus its NUL: fits */
	req.argv = huge;
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_OK &&
		   h.strings_len == SBX_MAX_ARGS_BYTES,
	       "encode: strings of exactly %u bytes accepted", SBX_MAX_ARGS_BYTES);
	free(s);
	req.env = one;
	one[0] = "K=v";
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_TOO_LONG,
	       "encode: strings one entry past %u bytes refused", SBX_MAX_ARGS_BYTES);
}

static void test_check_req(void)
{
	struct sbx_wire_req h, g = run_hdr(1, 0, 2);

	TAP_OK(sbx_wire_check_req(&g, 0) == SBX_WIRE_OK, "check: a minimal run");
	h = g, h.magic ^= 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_MAGIC, "check: bad magic");
	h = g, h.op = 0;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_OP, "check: op 0");
	h = g, h.op = SBX_OP_RUN_KILL + 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_OP, "check: op past the last");
	h = g, h.op = 0xffffffffu;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_OP, "check: op all ones");
	h = g, h.argc = 0;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_COUNT, "check: a run without argv[0]");
	h = g, h.argc = SBX_MAX_ARGS + 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_COUNT, "check: argc past the array");
	h = g, h.argc = 0xffffffffu;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_COUNT, "check: argc all ones");
	h = g, h.envc = SBX_MAX_ARGS + 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_COUNT, "check: envc past the array");
	h = g, h.argc = SBX_MAX_ARGS, h.envc = SBX_MAX_ARGS, h.strings_len = 2 * SBX_MAX_ARGS;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_OK, "check: both arrays full");
	h = g, h.strings_len = SBX_MAX_ARGS_BYTES + 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_TOO_LONG, "check: strings_len past its bound");
	h = g, h.strings_len = 0xffffffffu;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_TOO_LONG, "check: strings_len all ones");
	h = g, h.argc = 3, h.strings_len = 2;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_TRUNCATED,
	       "check: fewer bytes than one NUL per string");
	h = g, h.has_workdir = 2;
	TAP_OK(sbx_wire_check_req(&h, 2) == SBX_WIRE_BAD_FLAG, "check: has_workdir 2");
	h = g, h.has_stdin = 0x80000000u;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FLAG, "check: has_stdin huge");
	h = g, h.reserved = 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_FLAG, "check: reserved not 0");
	h = g, h.has_workdir = 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_FDS, "check: flagged directory, no fd");
	h = g;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS, "check: an fd nobody flagged");
	h = g, h.has_workdir = h.has_stdin = 1;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS, "check: two flagged, one came");
	TAP_OK(sbx_wire_check_req(&h, 2) == SBX_WIRE_OK, "check: two flagged, two came");
	TAP_OK(sbx_wire_check_req(&h, 3) == SBX_WIRE_BAD_FDS, "check: more fds than the array");
	TAP_OK(sbx_wire_check_req(&h, -1) == SBX_WIRE_BAD_FDS, "check: negative fd count");

	h = g, h.reserved2 = 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_FLAG, "check: reserved2 not 0");
	h = g, h.has_layer = 2;
	TAP_OK(sbx_wire_check_req(&h, 2) == SBX_WIRE_BAD_FLAG, "check: has_layer 2");
	h = g, h.has_workdir = h.has_layer = h.has_stdin = 1;
	TAP_OK(sbx_wire_check_req(&h, 3) == SBX_WIRE_OK, "check: directory, layer, stdin");
	TAP_OK(sbx_wire_check_req(&h, 2) == SBX_WIRE_BAD_FDS, "check: three flagged, two came");
	{
		struct sbx_request r;
		int got[3] = {11, 12, 13};

		memset(&r, 0, sizeof r);
		sbx_wire_req_fds(&h, got, 3, &r);
		TAP_OK(r.workdir_fd == 11 && r.layer_fd == 12 && r.stdin_fd == 13,
		       "req_fds: directory, layer, stdin in wire order");
		h.has_workdir = 0;
		sbx_wire_req_fds(&h, got, 2, &r);
		TAP_OK(r.workdir_fd == -1 && r.layer_fd == 11 && r.stdin_fd == 12,
		       "req_fds: a layer without a directory");
	}

	sbx_wire_encode_probe(&h);
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_OK, "check: a probe");
	h.has_layer = 1;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS,
	       "check: a layer only goes with what runs a program");
	h.has_layer = 0;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS, "check: a probe with an fd");
	h.has_workdir = 1;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS,
	       "check: a probe flagging a directory");
	sbx_wire_encode_probe(&h), h.argc = 1;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_COUNT, "check: a probe with strings");
	sbx_wire_encode_probe(&h), h.strings_len = 4;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_TOO_LONG, "check: a probe with bytes after");
	sbx_wire_encode_quota(&h, 1 << 20);
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_OK && h.limits.file_size_bytes == 1 << 20,
	       "check: a quota with its directory");
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_FDS, "check: a quota without its fd");
	h.has_workdir = 0;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_FDS, "check: a quota flagging nothing");
	sbx_wire_encode_quota(&h, 1), h.has_stdin = 1;
	TAP_OK(sbx_wire_check_req(&h, 2) == SBX_WIRE_BAD_FDS, "check: a quota with stdin too");
}

static void test_decode_strings(void)
{
	struct sbx_wire_req h;
	char s[8] = "a\0b\0";

	TAP_OK(decode(1, 1, "/x\0K=v", 7) == SBX_WIRE_OK && !strcmp(argv_buf[0], "/x") &&
		   !strcmp(envp_buf[0], "K=v") && !argv_buf[1] && !envp_buf[1],
	       "decode: one of each");
	TAP_OK(decode(1, 0, "/x", 2) == SBX_WIRE_BAD_STRINGS,
	       "decode: last string without its NUL");
	TAP_OK(decode(2, 0, "/x\0y", 4) == SBX_WIRE_BAD_STRINGS,
	       "decode: second string without its NUL");
	TAP_OK(decode(3, 0, "a\0b\0", 4) == SBX_WIRE_BAD_STRINGS,
	       "decode: fewer strings than argc");
	TAP_OK(decode(1, 1, "a\0", 2) == SBX_WIRE_BAD_STRINGS, "decode: fewer strings than envc");
	TAP_OK(decode(1, 0, "a\0b\0", 4) == SBX_WIRE_BAD_STRINGS,
	       "decode: bytes past the last counted string");
	TAP_OK(decode(1, 0, "a\0\0", 3) == SBX_WIRE_BAD_STRINGS,
	       "decode: a stray NUL past the end");
	TAP_OK(decode(1, 1, "a\0KV\0", 5) == SBX_WIRE_BAD_STRINGS, "decode: env entry without '='");
	TAP_OK(decode(1, 1, "a\0=v\0", 5) == SBX_WIRE_BAD_STRINGS, "decode: env entry named ''");
	TAP_OK(decode(1, 1, "a\0K=\0", 5) == SBX_WIRE_OK, "decode: an empty value is fine");
	TAP_OK(decode(2, 0, "\0\0", 2) == SBX_WIRE_OK && !strcmp(argv_buf[0], ""),
	       "decode: empty arguments are fine (run.c wants an absolute argv[0])");
	h = run_hdr(2, 0, 6);
	TAP_OK(sbx_wire_decode_strings(&h, s, 4, argv_buf, envp_buf) == SBX_WIRE_TRUNCATED,
	       "decode: fewer bytes than strings_len");
	h = run_hdr(SBX_MAX_ARGS + 1, 0, 4);
	TAP_OK(sbx_wire_decode_strings(&h, s, 4, argv_buf, envp_buf) == SBX_WIRE_BAD_COUNT,
	       "decode: an unchecked argc past the array is still refused");
	h = run_hdr(1, SBX_MAX_ARGS + 1, 4);
	TAP_OK(sbx_wire_decode_strings(&h, s, 4, argv_buf, envp_buf) == SBX_WIRE_BAD_COUNT,
	       "decode: an unchecked envc past the array is still refused");
	h = run_hdr(1, 0, 4), h.op = SBX_OP_PROBE;
	TAP_OK(sbx_wire_decode_strings(&h, s, 4, argv_buf, envp_buf) == SBX_WIRE_BAD_COUNT,
	       "decode: only runs carry strings");
}

static struct sbx_wire_res run_res(void)
{
	struct sbx_wire_res r;

	sbx_wire_res_init(&r);
	r.status = SBX_OK;
	return r;
}

static void test_replies(void)
{
	struct sbx_result res, back;
	struct sbx_wire_res r, g = run_res();
	int rc;

	memset(&res, 0, sizeof res);
	res.status = SBX_TIMEOUT;
	res.limit = SBX_LIMIT_CPU;
	res.signal = 9;
	res.exit_code = 3;
	res.out_len = 10;
	res.err_len = 0;
	res.out_truncated = true;
	res.wall_ms = 11, res.cpu_ms = 22, res.memory_kb = 33;
	snprintf(res.message, sizeof res.message, "hello");
	sbx_wire_encode_result(&r, 0, &res);
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_OK, "an encoded result passes");
	memset(&back, 0, sizeof back);
	rc = sbx_wire_decode_result(&r, &back);
	TAP_OK(rc == 0 && back.status == SBX_TIMEOUT && back.limit == SBX_LIMIT_CPU &&
		   back.signal == 9 && back.exit_code == 3 && back.out_truncated &&
		   !back.err_truncated && back.wall_ms == 11 && back.cpu_ms == 22 &&
		   back.memory_kb == 33 && !strcmp(back.message, "hello"),
	       "a result round-trips");
	memset(res.message, 'm', sizeof res.message - 1);
	res.status = SBX_INTERNAL_ERROR;
	sbx_wire_encode_result(&r, -11, &res);
	rc = sbx_wire_decode_result(&r, &back);
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_OK && rc == -11 &&
		   strlen(back.message) == sizeof back.message - 1,
	       "a failed run keeps its rc and a full-length message");

	r = g, r.magic = 0;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_MAGIC, "reply: bad magic");
	r = g, memset(r.message, 'x', sizeof r.message);
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_STRINGS,
	       "reply: message without its NUL");
	r = g, r.status = -1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_ENUM, "reply: status -1");
	r = g, r.status = SBX_INTERNAL_ERROR + 1, r.rc = -1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_ENUM,
	       "reply: status past the last");
	r = g, r.limit = SBX_LIMIT_CPU + 1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_ENUM,
	       "reply: limit past the last");
	r = g, r.limit = -1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_ENUM, "reply: limit -1");
	r = g, r.rc = 1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_RC, "reply: positive rc");
	r = g, r.rc = -1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_RC, "reply: failed, yet ok");
	r = g, r.status = SBX_INTERNAL_ERROR;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_RC,
	       "reply: internal_error, yet rc 0");
	r = g, r.out_truncated = 2;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_FLAG, "reply: out_truncated 2");
	r = g, r.err_truncated = 0xffffffffu;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_BAD_FLAG,
	       "reply: err_truncated huge");
	r = g, r.out_len = SBX_WIRE_MAX_OUTPUT_BYTES;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_OK, "reply: out_len at its bound");
	r = g, r.out_len = SBX_WIRE_MAX_OUTPUT_BYTES + 1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_TOO_LONG, "reply: out_len past it");
	r = g, r.err_len = UINT64_MAX;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_RUN) == SBX_WIRE_TOO_LONG, "reply: err_len all ones");
	r = g;
	TAP_OK(sbx_wire_check_res(&r, 0) == SBX_WIRE_BAD_OP, "reply: to an unknown op");

	r = g, r.cgroup_version = 2, r.usable = 1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_PROBE) == SBX_WIRE_OK, "probe reply");
	r.cgroup_version = 3;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_PROBE) == SBX_WIRE_BAD_ENUM, "probe: cgroup v3");
	r.cgroup_version = 1, r.usable = 2;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_PROBE) == SBX_WIRE_BAD_FLAG, "probe: usable 2");
	r.usable = 0, r.out_len = 1;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_PROBE) == SBX_WIRE_TOO_LONG,
	       "probe: announces output");
	r = g, r.rc = -28;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_QUOTA) == SBX_WIRE_OK, "quota reply with -errno");
	r.rc = 5;
	TAP_OK(sbx_wire_check_res(&r, SBX_OP_QUOTA) == SBX_WIRE_BAD_RC, "quota: positive rc");
	TAP_OK(!strcmp(sbx_wire_strerror(SBX_WIRE_BAD_FDS), "bad_fds") &&
		   !strcmp(sbx_wire_strerror((enum sbx_wire_err)999), "unknown"),
	       "error names");
}

/* Context requests: the header's rules per op, then the part that follows it. */
static void test_contexts(void)
{
	struct sbx_wire_req h;
	struct sbx_wire_ctx c, g;
	struct sbx_wire_ctx_res r;
	struct sbx_ctx_info info;

	sbx_wire_encode_ctx(SBX_OP_CTX_CREATE, &h, &g);
	memcpy(g.id, "0123456789abcdef0123456789abcdef", 32);
	memcpy(g.owner, "alice", 5);
	g.language = SBX_CTX_PYTHON;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_OK &&
		   sbx_wire_check_ctx(&h, &g) == SBX_WIRE_OK,
	       "ctx create: the session directory attached, id, owner, language");
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_FDS, "ctx create: no directory");
	h.op = SBX_OP_CTX_CALL, h.has_workdir = 0;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_OK, "ctx call: nothing attached");
	h.has_workdir = 1;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS, "ctx call: a descriptor attached");
	h.has_workdir = 0, h.strings_len = 4;
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_TOO_LONG, "ctx call: strings");
	h.strings_len = 0, h.op = SBX_OP_CTX_CREATE, h.has_workdir = 1;
	c = g, c.id[3] = 'A';
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx: an upper-case id");
	c = g, c.id[31] = '\0';
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx: a short id");
	c = g, c.id[32] = '0';
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx: a long id");
	c = g, memset(c.owner, 'a', sizeof c.owner);
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx: an owner without its NUL");
	c = g, c.owner[0] = '\0';
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx create: no owner");
	c = g, c.owner[1] = '\n';
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx: a control byte in owner");
	c = g, c.language = 3;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_ENUM, "ctx create: language 3");
	c = g, c.flags = SBX_WIRE_CTX_STREAM;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_FLAG,
	       "ctx create: stream only on a call");
	c = g, c.flags = 2;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_FLAG, "ctx: an unknown flag");
	c = g, c.request_len = 1;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_TOO_LONG, "ctx create: a request follows");
	h.op = SBX_OP_CTX_CALL, h.has_workdir = 0;
	c = g, c.request_len = 0;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_TRUNCATED, "ctx call: no request");
	c.request_len = SBX_CTX_MAX_REQUEST + 1;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_TOO_LONG, "ctx call: request too long");
	c.request_len = SBX_CTX_MAX_REQUEST;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_OK, "ctx call: the largest request");
	c.flags = SBX_WIRE_CTX_STREAM;
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_OK, "ctx call: streamed");
	h.op = SBX_OP_CTX_LIST;
	c = g, c.id[0] = '\0', c.owner[0] = '\0'; /* bytes after a NUL */
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_BAD_STRINGS, "ctx list: a stray id");
	memset(c.id, 0, sizeof c.id);
	TAP_OK(sbx_wire_check_ctx(&h, &c) == SBX_WIRE_OK, "ctx list: every owner");

	sbx_wire_ctx_res_init(&r, 0, NULL);
	r.out_len = 3, r.has_reply = 1, r.reply_len = 2;
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_CALL) == SBX_WIRE_OK, "ctx reply: a cell");
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_DELETE) == SBX_WIRE_TOO_LONG,
	       "ctx reply: output after a delete's reply");
	r.has_reply = 0;
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_CALL) == SBX_WIRE_BAD_FLAG,
	       "ctx reply: reply bytes without has_reply");
	sbx_wire_ctx_res_init(&r, 0, NULL);
	r.lost = 2;
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_CALL) == SBX_WIRE_BAD_FLAG,
	       "ctx reply: lost 2");
	sbx_wire_ctx_res_init(&r, 0, NULL);
	r.count = SBX_WIRE_MAX_CONTEXTS + 1;
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_LIST) == SBX_WIRE_TOO_LONG,
	       "ctx reply: too many contexts listed");
	r.count = 1;
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_CALL) == SBX_WIRE_TOO_LONG,
	       "ctx reply: a count for a call");
	sbx_wire_ctx_res_init(&r, -16, "busy");
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_CALL) == SBX_WIRE_OK &&
		   r.status == SBX_INTERNAL_ERROR,
	       "ctx reply: a refusal");
	r.rc = 1;
	TAP_OK(sbx_wire_check_ctx_res(&r, SBX_OP_CTX_CALL) == SBX_WIRE_BAD_RC, "ctx reply: rc 1");
	memset(&info, 0, sizeof info);
	memcpy(info.owner, "bob", 3);
	info.language = SBX_CTX_BASH;
	TAP_OK(sbx_wire_check_ctx_info(&info) == SBX_WIRE_OK, "ctx info: valid");
	memset(info.id, 'a', sizeof info.id);
	TAP_OK(sbx_wire_check_ctx_info(&info) == SBX_WIRE_BAD_STRINGS, "ctx info: id without NUL");
}

int main(void)
{
	test_request_round_trip();
	test_encode_refusals();
	test_check_req();
	test_decode_strings();
	test_replies();
	test_contexts();
	return tap_done();
}
