/* wire_runs.c: unit tests of the runs part of sandbox/wire.c (sandbox.h, section "runs"): the
 * run spec as it travels, the refusals of sbx_wire_check_run for every op, stream frames, and the
 * background replies. No socket, no broker. */
#include <signal.h>
#include <string.h>

#include "../../sandbox/wire.h"
#include "../lib/tap.h"

#define ID "0123456789abcdef0123456789abcdef"

static struct sbx_wire_req hdr(uint32_t op)
{
	struct sbx_wire_req h;
	struct sbx_wire_run w;

	sbx_wire_encode_run_op(op, &h, &w);
	if (op == SBX_OP_RUN_STREAM || op == SBX_OP_RUN_START)
		h.argc = 1, h.strings_len = 2;
	return h;
}

static struct sbx_wire_run run(const char *id, const char *owner)
{
	struct sbx_wire_run w;

	memset(&w, 0, sizeof w);
	memcpy(w.id, id, strlen(id));
	memcpy(w.owner, owner, strlen(owner));
	return w;
}

static void test_spec(void)
{
	struct sbx_run_spec spec;
	struct sbx_wire_run w;
	struct sbx_wire_req h = hdr(SBX_OP_RUN_STREAM);

	TAP_OK(sbx_wire_spec_to_run(NULL, &w) == SBX_WIRE_OK && w.id[0] == '\0' &&
		   sbx_wire_check_run(&h, &w) == SBX_WIRE_OK,
	       "no spec: a plain streamed run");
	memset(&spec, 0, sizeof spec);
	memcpy(spec.id, ID, 32);
	memcpy(spec.owner, "alice", 5);
	spec.interactive = true;
	TAP_OK(sbx_wire_spec_to_run(&spec, &w) == SBX_WIRE_OK &&
		   sbx_wire_check_run(&h, &w) == SBX_WIRE_OK,
	       "an interactive run with id and owner");
	h.has_stdin = 1;
	spec.stdin_eof = true;
	TAP_OK(sbx_wire_spec_to_run(&spec, &w) == SBX_WIRE_OK && w.eof == 1 &&
		   sbx_wire_check_run(&h, &w) == SBX_WIRE_OK,
	       "interactive with the stdin held during its compile, and its eof");
	h = hdr(SBX_OP_RUN_START);
	h.has_stdin = 1;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG,
	       "a background interactive run with a stdin file: refused");
	h = hdr(SBX_OP_RUN_STREAM);
	spec.stdin_eof = false;
	spec.interactive = false;
	TAP_OK(sbx_wire_spec_to_run(&spec, &w) == SBX_WIRE_OK, "a stream spec");
	w.eof = 1;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG,
	       "a stdin eof on a run that is not interactive: refused");
	spec.compile = true;
	TAP_OK(sbx_wire_spec_to_run(&spec, &w) == SBX_WIRE_OK && w.stage == 1 &&
		   sbx_wire_check_run(&h, &w) == SBX_WIRE_OK,
	       "a compile step with the run's id");
	h.has_stdin = 1;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG,
	       "a compile step with a stdin file: refused");
	h.has_stdin = 0;
	memset(w.id, 0, sizeof w.id);
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG,
	       "a compile step without an id: refused");
	h = hdr(SBX_OP_RUN_STDIN);
	w = run(ID, "a");
	w.stage = 1;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG,
	       "a stage on a stdin write: refused");
	h = hdr(SBX_OP_RUN_STREAM);
	spec.compile = false;
	spec.interactive = true;
	(void)sbx_wire_spec_to_run(&spec, &w);
	w.id[0] = '\0';
	memset(w.id, 0, sizeof w.id);
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG,
	       "interactive without an id: refused");
	w = run(ID, "");
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS, "an id without owner: refused");
	w = run("0123456789ABCDEF0123456789abcdef", "a");
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS, "an id in upper case: refused");
	w = run("0123", "a");
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS, "a short id: refused");
	w = run(ID, "a\nb");
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS,
	       "a control byte in the owner: refused");
	w = run(ID, "a");
	memset(w.session, 'x', sizeof w.session);
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS,
	       "a session without its NUL: refused");
	w = run(ID, "a");
	w.stage = 2;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG, "stage 2: refused");
	w = run(ID, "a");
	w.sig = SIGINT;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG, "a stream with a signal: refused");
}

static void test_control_ops(void)
{
	struct sbx_wire_req h = hdr(SBX_OP_RUN_SIGNAL);
	struct sbx_wire_run w = run(ID, "alice");
	int ok_sigs[] = {SIGINT, SIGTERM, SIGKILL}, bad_sigs[] = {0, SIGHUP, SIGSTOP, SIGUSR1, 65};
	size_t i;

	for (i = 0; i < 3; i++) {
		w.sig = (uint32_t)ok_sigs[i];
		TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_OK, "signal %d accepted", ok_sigs[i]);
	}
	for (i = 0; i < 5; i++) {
		w.sig = (uint32_t)bad_sigs[i];
		TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_ENUM, "signal %d refused",
		       bad_sigs[i]);
	}
	w = run("", "alice");
	w.sig = SIGINT;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS,
	       "a signal without an id: refused");
	h = hdr(SBX_OP_RUN_STDIN);
	w = run(ID, "alice");
	w.data_len = SBX_RUN_MAX_STDIN;
	w.eof = 1;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_OK, "stdin at its largest, with eof");
	w.data_len = SBX_RUN_MAX_STDIN + 1;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_TOO_LONG, "stdin past its bound: refused");
	w.data_len = 1;
	w.eof = 2;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG, "eof 2: refused");
	h.has_workdir = 1;
	TAP_OK(sbx_wire_check_req(&h, 1) == SBX_WIRE_BAD_FDS,
	       "stdin request with a descriptor: refused");
}

static void test_background_ops(void)
{
	struct sbx_wire_req h = hdr(SBX_OP_RUN_START);
	struct sbx_wire_run w = run(ID, "alice");
	struct sbx_wire_bg_res r;

	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_OK &&
		   sbx_wire_check_run(&h, &w) == SBX_WIRE_OK,
	       "a start with id and owner");
	w = run("", "alice");
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_STRINGS,
	       "a start without an id: refused");
	h = hdr(SBX_OP_RUN_OUTPUT);
	w = run(ID, "alice");
	w.stream = 3;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_ENUM, "output of stream 3: refused");
	w.stream = 2;
	w.cursor = 1ull << 40;
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_OK, "output of stream 2 at any cursor");
	h = hdr(SBX_OP_RUN_STATUS);
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG, "a cursor on status: refused");
	h = hdr(SBX_OP_RUN_LIST);
	w = run(ID, "alice");
	TAP_OK(sbx_wire_check_run(&h, &w) == SBX_WIRE_BAD_FLAG, "a list with an id: refused");
	h = hdr(SBX_OP_RUN_KILL + 1);
	TAP_OK(sbx_wire_check_req(&h, 0) == SBX_WIRE_BAD_OP, "an op past the last: refused");

	memset(&r, 0, sizeof r);
	r.magic = SBX_WIRE_MAGIC;
	sbx_wire_res_init(&r.result);
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_OUTPUT) == SBX_WIRE_OK,
	       "an empty output reply");
	r.data_len = SBX_RUN_MAX_CHUNK + 1;
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_OUTPUT) == SBX_WIRE_TOO_LONG,
	       "output past the chunk bound: refused");
	r.data_len = 1;
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_STATUS) == SBX_WIRE_TOO_LONG,
	       "data with a status reply: refused");
	r.data_len = 0;
	r.count = SBX_WIRE_MAX_RUNS + 1;
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_LIST) == SBX_WIRE_TOO_LONG,
	       "a list past its bound: refused");
	r.count = 0;
	r.has_result = 1;
	r.result.status = 99;
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_STATUS) == SBX_WIRE_BAD_ENUM,
	       "a status whose result has a bad status: refused");
	r.result.status = SBX_OK;
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_OUTPUT) == SBX_WIRE_BAD_FLAG,
	       "a result with an output reply: refused");
	r.has_result = 0;
	memset(r.info.id, 'a', sizeof r.info.id);
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_STATUS) == SBX_WIRE_BAD_STRINGS,
	       "an info id without its NUL: refused");
	memset(&r.info, 0, sizeof r.info);
	r.rc = 1;
	TAP_OK(sbx_wire_check_bg_res(&r, SBX_OP_RUN_KILL) == SBX_WIRE_BAD_RC, "rc 1: refused");
}

static void test_frames(void)
{
	struct sbx_wire_frame f = {SBX_WIRE_MAGIC, 1, 1};

	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_OK, "a one-byte stdout frame");
	f.stream = 2, f.len = SBX_WIRE_MAX_FRAME;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_OK, "a stderr frame at its largest");
	f.len = SBX_WIRE_MAX_FRAME + 1;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_TOO_LONG, "a frame past its bound: refused");
	f.len = 0;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_TOO_LONG, "an empty data frame: refused");
	f.stream = 0, f.len = 1;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_BAD_ENUM, "stream 0: refused");
	f.stream = SBX_WIRE_FRAME_END, f.len = 0;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_OK, "the end frame");
	f.len = 5;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_TOO_LONG,
	       "an end frame with a length: refused");
	f.stream = SBX_WIRE_FRAME_STDIN, f.len = 3;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_OK, "a held stdin frame");
	f.len = 0;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_TOO_LONG, "an empty held stdin frame: refused");
	f.stream = SBX_WIRE_FRAME_STDIN_EOF;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_OK, "the held stdin's eof");
	f.len = 1;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_TOO_LONG, "an eof frame with bytes: refused");
	f.magic ^= 1, f.len = 0;
	TAP_OK(sbx_wire_check_frame(&f) == SBX_WIRE_BAD_MAGIC, "bad magic: refused");
}

int main(void)
{
	test_spec();
	test_control_ops();
	test_background_ops();
	test_frames();
	return tap_done();
}
