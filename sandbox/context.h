/* context.h: contexts on the broker's side, between sbxd's main process (context.c) and the
 * holders it forks (holder.c). Private to sbxd; clients use sandbox.h.
 *
 * Processes. sbxd's main process owns the table of contexts (one entry per context index, in
 * memory shared with the holders so that listing never waits for one) and decides every
 * admission there, atomically: the id is free, the owner's cap, the machine cap (--contexts),
 * the contexts' memory budget (--contexts-memory-mb: the limit of their parent cgroup; a new one
 * is admitted while what they hold, as of their last calls, leaves SBX_CTX_START_BYTES free). For a
 * create it forks a holder, which inherits the client's connection and the session directory and
 * answers the create itself once the kernel is ready. Every later request for that context (call,
 * interrupt, restart, delete) is handed to its holder with its connection attached (SCM_RIGHTS over
 * a SOCK_SEQPACKET pair, never blocking), and the holder answers it: the main process never waits
 * behind a cell.
 *
 * A holder is root on the host, like a slot process: it opens a slot (slot.c) with the context's
 * own host uid (after the run slots' uids) and cgroup (<cgroup-name>-ctx/slotN, limits set once
 * for the context's life), builds the sandbox exactly as for a run and runs the kernel in it as
 * the program, with the kernel's control socket as fd 3. It dies with the broker (PDEATHSIG), and
 * its sandbox with it (the init's own PDEATHSIG). */
#ifndef SBX_CONTEXT_H
#define SBX_CONTEXT_H

#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "wire.h"

#define SBX_CTX_MAX 1024 /* the largest --contexts */
/* Room a new context needs in the contexts' memory budget to be admitted (a kernel starting). */
#define SBX_CTX_START_BYTES (64ull << 20)

/* The kernel, inside the sandbox (bound read-only there by sbxd's --bind-ro). */
#define SBX_CTX_KERNEL_DIR "/opt/sbx-kernel"
#define SBX_CTX_KERNEL SBX_CTX_KERNEL_DIR "/sbx_kernel.py"
#define SBX_CTX_PYTHON_BIN "/usr/bin/python3"

/* One context, shared between the main process and its holder. */
struct sbx_ctx_state {
	/* written by the main process */
	volatile int in_use;  /* from admission until the holder is reaped */
	volatile int closing; /* a delete was handed over: nothing more goes to the holder */
	pid_t holder;
	int sock; /* the main process's end of the holder's pair */
	char id[SBX_CTX_ID_LEN + 1];
	char owner[64];
	int language;
	uint64_t memory_bytes; /* its memory limit for life */
	uint64_t created_ms;   /* CLOCK_REALTIME */
	/* written by the holder */
	volatile int ended; /* it takes no more requests (idle TTL, failure, stop) */
	volatile int busy;
	volatile uint64_t memory_kb, last_used_ms;
	volatile uint32_t execution_count;
};

/* A request handed to a holder: what the client sent, with its connection attached. */
struct sbx_ctx_fwd {
	struct sbx_wire_req h;
	struct sbx_wire_ctx c;
};

/* The broker's context settings (sbxd flags). */
struct sbx_ctx_config {
	const struct sbx_config *cfg; /* the run slots' configuration (binds, files uid...) */
	unsigned slots;		      /* run slots: contexts' uids start at uid_base + slots */
	unsigned max;		      /* --contexts (0: contexts disabled) */
	uint64_t memory_bytes;	      /* --contexts-memory-mb, bytes */
	char cgroup_name[128];	      /* "<cgroup-name>-ctx" */
	uid_t client_uid;
};

/* ---- the main process (context.c) ---- */

/* Set up the shared table and the parent cgroup (stale groups removed). 0 or -1, err filled. */
int sbx_ctx_init(const struct sbx_ctx_config *cc, char *err, size_t errlen);
/* Serve one context request whose header h was received (and checked) on conn with its fds.
 * Reads what follows the header (bounded by conn's receive timeout), then answers or hands
 * conn to the holder. Never waits for a holder. Closes nothing of the caller's. */
void sbx_ctx_serve(int conn, const struct sbx_wire_req *h, const int *fds, int nfds);
/* A child exited: if it was a holder, free its context. True when it was one. */
bool sbx_ctx_reaped(pid_t pid, int status);
/* Stop every holder (SIGTERM, then wait), then remove the contexts' cgroups. */
void sbx_ctx_stop_all(void);

/* ---- a holder (holder.c) ---- */

/* The holder of context index `index`: conn is the create request's connection, workdir the
 * session directory, sock its end of the pair with the main process, st its shared entry.
 * Answers the create, then serves until delete, idle TTL or stop. Never returns. */
void sbx_holder_main(const struct sbx_ctx_config *cc, unsigned index, struct sbx_ctx_state *st,
		     const struct sbx_wire_req *h, const struct sbx_wire_ctx *c, int conn,
		     int workdir, int sock) __attribute__((noreturn));

/* ---- the kernel protocol's pure parts (ctx_proto.c; tests/unit/ctx_proto.c) ---- */

/* The marker that ends a cell's output on stdout and stderr: "\0" + 32 hex digits + "\0". */
#define SBX_CTX_MARK_LEN 34
/* Bytes fed to a stream at once (sbx_ctx_stream_feed consumes at most this many). */
#define SBX_CTX_FEED_MAX 16384

/* One output stream of a cell, read until its marker. */
struct sbx_ctx_stream {
	int fd;
	char *buf; /* kept output, cap bytes (an anonymous mapping) */
	size_t len, cap;
	uint64_t total; /* every byte before the marker, kept or not */
	bool truncated, marked;
	char win[SBX_CTX_MARK_LEN]; /* bytes held back: they may begin the marker */
	size_t win_len;
};

/* A stream keeping up to cap bytes. false when out of memory. */
bool sbx_ctx_stream_init(struct sbx_ctx_stream *s, int fd, size_t cap);
void sbx_ctx_stream_free(struct sbx_ctx_stream *s);
/* Count n bytes as output, keeping what fits. */
void sbx_ctx_stream_commit(struct sbx_ctx_stream *s, const char *p, size_t n);
/* Feed up to SBX_CTX_FEED_MAX bytes; returns how many were consumed: all of them, or those up
 * to the end of the marker (s->marked; the rest is not this cell's). Bytes that may begin the
 * marker are held back until the next feed shows whether they do. */
size_t sbx_ctx_stream_feed(struct sbx_ctx_stream *s, const char *marker, const char *data,
			   size_t n);
void sbx_ctx_stream_feed_all(struct sbx_ctx_stream *s, const char *marker, const char *data,
			     size_t n);

/* The kernel line for a caller's request: "{"marker":"<marker>"," (with stream,
 * "{"marker":"<marker>","stream":true,") + the rest of the object + "\n". NULL when req is not
 * one JSON object on one line. Malloc'ed; *len its length. */
char *sbx_ctx_request_line(const char *req, size_t req_len, const char *marker, bool stream,
			   size_t *len);

/* What a line the kernel's control socket gave is. The kernel starts each of its lines with
 * this call's marker: {"marker":"<hex>","op":"display",...} is display data sent while a
 * streamed cell runs, any other {"marker":"<hex>",...} is its reply. A line without the marker
 * (a cell writing to the kernel's socket: it cannot know the marker of the call in progress
 * unless it reads the kernel's memory) is foreign, and ignored. */
enum sbx_ctx_line { SBX_CTX_LINE_FOREIGN = 0, SBX_CTX_LINE_RESULT = 1, SBX_CTX_LINE_REPLY = 2 };
enum sbx_ctx_line sbx_ctx_line_kind(const char *line, size_t len, const char *hex);
/* The value of top-level-looking key `key` in a kernel reply: a pointer just past its colon, or
 * NULL. Only used for the status and the execution count (the caller parses the reply). */
const char *sbx_ctx_reply_key(const char *reply, size_t len, const char *key);

#endif
