/* wire.h: the broker's fixed binary protocol (same host, same build: native byte order).
 *
 * One request per connection. The unprivileged client sends struct sbx_wire_req with up to three
 * descriptors attached (SCM_RIGHTS: the work directory, the layer, then stdin, as flagged), then
 * strings_len bytes holding argc + envc NUL-terminated strings. The broker answers with
 * struct sbx_wire_res, then out_len + err_len bytes of output.
 *
 * wire.c is the only code that packs or unpacks these structures: client.c and sbxd.c call its
 * functions and never read a field the peer sent before sbx_wire_check_req / sbx_wire_check_res
 * has accepted it. Every length, count, flag and enum is checked against the bounds below before
 * anything is allocated; a refusal is a typed error (enum sbx_wire_err), never a guess. */
#ifndef SBX_WIRE_H
#define SBX_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#include "sandbox.h"

#define SBX_WIRE_MAGIC 0x31584253u /* "SBX1" */
/* RUN goes to the main socket (served by slots); PROBE and QUOTA go to "<socket>-health", served
 * by the main process so they never wait behind runs. QUOTA carries one descriptor (the session
 * directory) and its byte limit in limits.file_size_bytes. */
enum { SBX_OP_RUN = 1, SBX_OP_PROBE = 2, SBX_OP_QUOTA = 3 };
/* Contexts (sandbox.h), on "<socket>-health" too: the main process answers LIST and the refusals
 * itself and hands every other request, with its connection, to the context's holder, which
 * answers it. Each request header is followed at once by struct sbx_wire_ctx; CREATE carries
 * the session directory; CALL is followed by request_len bytes of kernel request. */
enum {
	SBX_OP_CTX_CREATE = 4,
	SBX_OP_CTX_CALL = 5,
	SBX_OP_CTX_INTERRUPT = 6,
	SBX_OP_CTX_RESTART = 7,
	SBX_OP_CTX_DELETE = 8,
	SBX_OP_CTX_LIST = 9,
};

/* Runs (sandbox.h, section "runs"). RUN_STREAM goes to the main socket like RUN (served by a
 * slot): its header is followed at once by struct sbx_wire_run, then the strings as for RUN; the
 * slot answers with frames (struct sbx_wire_frame) of kept output as it is read, then an END frame
 * followed by the usual run reply (struct sbx_wire_res, out, err). STDIN and SIGNAL go to
 * "<socket>-health": the main process finds the run's slot and hands the request, with its
 * connection, to it; header then struct sbx_wire_run, then data_len bytes (STDIN). */
enum { SBX_OP_RUN_STREAM = 10, SBX_OP_RUN_STDIN = 11, SBX_OP_RUN_SIGNAL = 12 };
/* Background runs, on "<socket>-health": header, struct sbx_wire_run, then (START) the strings as
 * for RUN, with the work directory and stdin attached as flagged. The main process answers LIST
 * and the refusals, forks a keeper for START, and hands STATUS, OUTPUT and KILL with their
 * connections to the run's keeper. Every reply is struct sbx_wire_bg_res. */
enum {
	SBX_OP_RUN_START = 13,
	SBX_OP_RUN_STATUS = 14,
	SBX_OP_RUN_OUTPUT = 15,
	SBX_OP_RUN_LIST = 16,
	SBX_OP_RUN_KILL = 17,
};

/* At most this many descriptors travel with a request (work directory, layer, stdin). */
#define SBX_WIRE_MAX_FDS 3
/* Largest output stream a reply may announce (the broker keeps at most 256 MiB per stream). */
#define SBX_WIRE_MAX_OUTPUT_BYTES (1ull << 30)

struct sbx_wire_req {
	uint32_t magic;
	uint32_t op;
	uint32_t argc, envc;
	uint32_t strings_len;
	uint32_t has_workdir, has_stdin;
	uint32_t reserved;  /* 0 */
	uint32_t has_layer; /* RUN, RUN_STREAM, RUN_START: a read-only layer (sbx_request) */
	uint32_t reserved2; /* 0 */
	struct sbx_limits limits;
};

struct sbx_wire_res {
	uint32_t magic;
	int32_t rc;
	int32_t status, limit, exit_code, signal;
	uint32_t out_truncated, err_truncated;
	uint64_t out_len, err_len;
	uint64_t wall_ms, cpu_ms, memory_kb;
	int32_t cgroup_version, usable; /* SBX_OP_PROBE */
	char message[512];		/* result message, or probe detail; NUL-terminated */
};

/* Why a message was refused. */
enum sbx_wire_err {
	SBX_WIRE_OK = 0,
	SBX_WIRE_IO,	      /* the socket failed, or the peer closed it mid-message */
	SBX_WIRE_TRUNCATED,   /* fewer bytes than the format or the header says */
	SBX_WIRE_BAD_MAGIC,   /* not this protocol, or not this version of it */
	SBX_WIRE_BAD_OP,      /* an operation this side does not know */
	SBX_WIRE_BAD_COUNT,   /* argc or envc: no argv[0], past SBX_MAX_ARGS, or not 0 for an op
				 that carries no strings */
	SBX_WIRE_TOO_LONG,    /* strings_len or an output length past its bound */
	SBX_WIRE_BAD_FLAG,    /* a boolean other than 0 or 1, or reserved not 0 */
	SBX_WIRE_BAD_FDS,     /* the descriptors attached do not match what the header says */
	SBX_WIRE_BAD_STRINGS, /* a string without its NUL, bytes past the last string, or an
				 environment entry that is not KEY=VALUE */
	SBX_WIRE_BAD_ENUM,    /* status or limit kind out of range */
	SBX_WIRE_BAD_RC,      /* rc positive, or disagreeing with the status */
	SBX_WIRE_NOMEM,
};

/* A short name for logs: "truncated", "bad_fds"... */
const char *sbx_wire_strerror(enum sbx_wire_err e);

/* ---- requests ---- */

/* Pack a run request: the header, a malloc'ed buffer of the strings (*strings, caller frees, at
 * least one byte) and the descriptors to attach (fds[], *nfds). Refuses what the broker would
 * refuse: no argv[0], too many or too long strings, an env entry that is not KEY=VALUE. */
enum sbx_wire_err sbx_wire_encode_run(const struct sbx_request *req, struct sbx_wire_req *h,
				      char **strings, int fds[SBX_WIRE_MAX_FDS], int *nfds);
void sbx_wire_encode_probe(struct sbx_wire_req *h);
/* One descriptor (the session directory) goes with it. */
void sbx_wire_encode_quota(struct sbx_wire_req *h, uint64_t bytes);

/* Validate a received header and the number of descriptors that came with it, for every op. */
enum sbx_wire_err sbx_wire_check_req(const struct sbx_wire_req *h, int nfds);
/* The descriptors of a checked request as sbx_run takes them: workdir_fd, layer_fd and stdin_fd
 * of req set from fds (as received, in wire order), -1 for those not sent. */
void sbx_wire_req_fds(const struct sbx_wire_req *h, const int *fds, int nfds,
		      struct sbx_request *req);
/* Split the strings of a checked run request (len == h->strings_len bytes at s) into argv and
 * envp (each SBX_MAX_ARGS + 1 entries, NULL-terminated; they point into s). */
enum sbx_wire_err sbx_wire_decode_strings(const struct sbx_wire_req *h, char *s, size_t len,
					  const char **argv, const char **envp);

/* ---- replies ---- */

/* A zeroed reply with its magic. */
void sbx_wire_res_init(struct sbx_wire_res *r);
/* A run's reply header from what sbx_run returned (its output follows: out_len + err_len). */
void sbx_wire_encode_result(struct sbx_wire_res *r, int rc, const struct sbx_result *res);
/* Validate a received reply to a request of operation op. */
enum sbx_wire_err sbx_wire_check_res(const struct sbx_wire_res *r, uint32_t op);
/* Copy a checked run reply into res (everything but out and err); returns its rc. */
int sbx_wire_decode_result(const struct sbx_wire_res *r, struct sbx_result *res);

/* ---- on a socket (blocking; wire.c is the only code that reads or writes these) ---- */

/* Send a request: the header with its descriptors, then h->strings_len bytes of strings. */
enum sbx_wire_err sbx_wire_send_req(int sock, const struct sbx_wire_req *h, const int *fds,
				    int nfds, const char *strings);
/* Receive a header and its descriptors (close-on-exec), and check them. The kept descriptors
 * (*nfds of them, at most SBX_WIRE_MAX_FDS) are the caller's to close whatever the result; any
 * beyond are closed here and make the request BAD_FDS. */
enum sbx_wire_err sbx_wire_recv_req(int sock, struct sbx_wire_req *h, int fds[SBX_WIRE_MAX_FDS],
				    int *nfds);
/* Receive and split a checked run request's strings. *strings is malloc'ed (caller frees, also
 * on error); argv and envp point into it. */
enum sbx_wire_err sbx_wire_recv_strings(int sock, const struct sbx_wire_req *h, char **strings,
					const char **argv, const char **envp);
/* Send a reply, then r->out_len bytes of out and r->err_len bytes of err (NULL when 0). */
enum sbx_wire_err sbx_wire_send_res(int sock, const struct sbx_wire_res *r, const char *out,
				    const char *err);
/* Receive a reply header and check it against op. */
enum sbx_wire_err sbx_wire_recv_res(int sock, uint32_t op, struct sbx_wire_res *r);
/* Receive a run reply in full into res (out and err malloc'ed and NUL-terminated, left NULL on
 * error) and set *rc to the run's return value. */
enum sbx_wire_err sbx_wire_recv_result(int sock, struct sbx_result *res, int *rc);

/* ---- runs ---- */

struct sbx_wire_run {
	char id[40];	/* "" or SBX_RUN_ID_LEN lowercase hex digits (required for STDIN, SIGNAL) */
	char owner[64]; /* not empty with an id */
	char session[64]; /* "" or the session's id */
	uint32_t interactive;
	uint32_t keep_s, max_per_owner, max_per_session;
	uint32_t data_len; /* STDIN: 0..SBX_RUN_MAX_STDIN bytes follow; others 0 */
	uint32_t eof;	 /* STDIN: close the program's stdin after the data. RUN_STREAM interactive:
			    close it after the stdin that came with the request */
	uint32_t sig;	 /* SIGNAL: SIGINT, SIGTERM or SIGKILL; others 0 */
	uint32_t stage;	 /* RUN_STREAM: 1 = the compile step of run id (spec->compile), else 0 */
	uint64_t cursor; /* OUTPUT: from this byte */
	uint32_t stream; /* OUTPUT: 1 or 2 */
	uint32_t wait_ms; /* OUTPUT: long-poll, at most SBX_RUN_MAX_WAIT_MS */
};

/* The reply to a background run request. OUTPUT: data_len bytes follow; STATUS with has_result:
 * result.out_len + result.err_len bytes follow; LIST: count struct sbx_run_info follow. */
struct sbx_wire_bg_res {
	uint32_t magic;
	int32_t rc;
	char message[256];
	struct sbx_run_info info;
	uint32_t has_result, ended, truncated, reserved;
	uint64_t data_len, next, count;
	struct sbx_wire_res result;
};
#define SBX_WIRE_MAX_RUNS 4096

/* A frame of a RUN_STREAM answer: stream 1 or 2 with 1..SBX_WIRE_MAX_FRAME bytes of kept output
 * following, or SBX_WIRE_FRAME_END (len 0) followed by the run reply. */
struct sbx_wire_frame {
	uint32_t magic;
	uint32_t stream;
	uint64_t len;
};
#define SBX_WIRE_FRAME_END 3
/* The compile step of a run (stage 1) hands back the stdin sent meanwhile, before its end frame:
 * frames of 1..SBX_WIRE_MAX_FRAME bytes, then one of len 0 when it ended with eof. */
#define SBX_WIRE_FRAME_STDIN 5
#define SBX_WIRE_FRAME_STDIN_EOF 6
#define SBX_WIRE_MAX_FRAME (64u << 10)

void sbx_wire_encode_run_op(uint32_t op, struct sbx_wire_req *h, struct sbx_wire_run *w);
/* A run spec as it travels (id, owner, session checked as the broker checks them). */
enum sbx_wire_err sbx_wire_spec_to_run(const struct sbx_run_spec *spec, struct sbx_wire_run *w);
/* Validate the run part of a checked request header h. */
enum sbx_wire_err sbx_wire_check_run(const struct sbx_wire_req *h, const struct sbx_wire_run *w);
/* Receive the struct sbx_wire_run that follows a received header, and check it. */
enum sbx_wire_err sbx_wire_recv_run(int sock, const struct sbx_wire_req *h, struct sbx_wire_run *w);
/* Validate a received frame header. */
enum sbx_wire_err sbx_wire_check_frame(const struct sbx_wire_frame *f);
/* Validate a background reply to op. */
enum sbx_wire_err sbx_wire_check_bg_res(const struct sbx_wire_bg_res *r, uint32_t op);
bool sbx_wire_is_bg_op(uint32_t op);
/* True for RUN, RUN_STREAM and RUN_START (the ops that carry argv and env). */
bool sbx_wire_carries_strings(uint32_t op);

/* ---- contexts ---- */

/* What follows the header of a context request. Strings are NUL-terminated and zero-padded. */
struct sbx_wire_ctx {
	char id[40];	/* SBX_CTX_ID_LEN lowercase hex digits; "" only for LIST */
	char owner[64]; /* CREATE: the owner (not empty); LIST: the owner, or "" for all */
	uint32_t language;
	uint32_t idle_ttl_s, max_per_owner, wait_ms;
	uint32_t request_len; /* CALL: 1..SBX_CTX_MAX_REQUEST; others 0 */
	uint32_t flags;	      /* CALL: SBX_WIRE_CTX_STREAM or 0; others 0 */
};

/* A streamed CALL (flags SBX_WIRE_CTX_STREAM): the holder answers with frames (struct
 * sbx_wire_frame, magic SBX_WIRE_CTX_FRAME_MAGIC) as the cell runs: stream 1 or 2 with the next
 * 1..SBX_WIRE_MAX_FRAME bytes of kept output, SBX_WIRE_CTX_FRAME_RESULT with one display line of
 * the kernel (1..SBX_WIRE_CTX_MAX_RESULT bytes), then SBX_WIRE_FRAME_END (len 0) followed by the
 * usual reply. A refusal (no such context, busy...) is the usual reply without frames: a reader
 * tells them apart by the magic. */
#define SBX_WIRE_CTX_STREAM 1u
#define SBX_WIRE_CTX_FRAME_MAGIC 0x46584253u /* "SBXF" */
#define SBX_WIRE_CTX_FRAME_RESULT 4
#define SBX_WIRE_CTX_MAX_RESULT (64u << 20)

/* The reply to a context request. CALL: out_len + err_len + reply_len bytes follow; LIST: count
 * struct sbx_ctx_info. */
struct sbx_wire_ctx_res {
	uint32_t magic;
	int32_t rc;
	int32_t status, limit;
	uint32_t lost, out_truncated, err_truncated, has_reply;
	uint64_t out_len, err_len, reply_len, count;
	uint64_t wall_ms, cpu_ms, memory_kb;
	char message[256]; /* NUL-terminated */
};

/* Most contexts a LIST reply may announce. */
#define SBX_WIRE_MAX_CONTEXTS 4096

/* Headers of a context request of operation op, zeroed, with magic and op. */
void sbx_wire_encode_ctx(uint32_t op, struct sbx_wire_req *h, struct sbx_wire_ctx *c);
/* Validate the context part of a checked request header h: id, owner, language, lengths. */
enum sbx_wire_err sbx_wire_check_ctx(const struct sbx_wire_req *h, const struct sbx_wire_ctx *c);
/* True for the operations of this section. */
bool sbx_wire_is_ctx_op(uint32_t op);
void sbx_wire_ctx_res_init(struct sbx_wire_ctx_res *r, int rc, const char *message);
/* Validate a context reply to a request of operation op. */
enum sbx_wire_err sbx_wire_check_ctx_res(const struct sbx_wire_ctx_res *r, uint32_t op);
/* A listed context as received: strings terminated, language known. */
enum sbx_wire_err sbx_wire_check_ctx_info(const struct sbx_ctx_info *i);

/* Send header h and c in one message with fds attached, then the request_len bytes of request. */
enum sbx_wire_err sbx_wire_send_ctx_req(int sock, const struct sbx_wire_req *h,
					const struct sbx_wire_ctx *c, const int *fds, int nfds,
					const char *request);
/* Receive the struct sbx_wire_ctx that follows a received header, and check it. */
enum sbx_wire_err sbx_wire_recv_ctx(int sock, const struct sbx_wire_req *h, struct sbx_wire_ctx *c);
/* Send a reply and what follows it (parts[i] of len[i] bytes, NULL when 0). */
enum sbx_wire_err sbx_wire_send_ctx_res(int sock, const struct sbx_wire_ctx_res *r,
					const void *const parts[3], const uint64_t len[3]);
/* Receive a context reply header and check it against op. */
enum sbx_wire_err sbx_wire_recv_ctx_res(int sock, uint32_t op, struct sbx_wire_ctx_res *r);

#endif
