/* holder.h: what holder.c (requests), holder_call.c (calls), holder_kernel.c (the kernel's
 * sandbox) and holder_stream.c (streamed calls) share: the holder's state. Private to sbxd. */
#ifndef SBX_HOLDER_H
#define SBX_HOLDER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

#include "context.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define MAX_WAITERS 32	       /* callers queued behind the running cell */
#define MAX_REPLY (64u << 20)  /* a kernel reply longer than this kills the cell */
#define START_TIMEOUT_MS 60000 /* the kernel's "ready" (a loaded machine is slow) */
#define CARRY_MAX (64u << 10)  /* output after a marker kept for the next cell */

struct waiter {
	int conn;
	struct sbx_ctx_fwd f;
	uint64_t deadline; /* monotonic ms */
};

enum why { WHY_NONE = 0, WHY_WALL, WHY_CPU, WHY_INTERRUPT, WHY_CANCEL };

struct call {
	bool active;
	int conn;
	struct sbx_limits lim;
	char marker[SBX_CTX_MARK_LEN];
	char *line; /* the request line, being written */
	size_t line_len, line_off;
	struct sbx_ctx_stream out, err;
	char *reply;
	size_t reply_len, reply_cap;
	uint64_t start, cpu0, oom0;
	enum why why;	    /* what interrupted it first */
	bool cancelled;	    /* the caller is gone: nobody reads the result */
	bool output_killed; /* a stream passed output_hard_bytes */
	bool lost_before;   /* the kernel died since the last call: this one says lost */
	bool have_reply;    /* reply[] starts with the kernel's reply line */
	size_t scan;	    /* bytes of reply[] known to hold no newline */
	/* a streamed call (SBX_WIRE_CTX_STREAM): frames to the caller as the cell runs */
	bool stream;
	char *disp; /* display lines not yet forwarded: each a uint64_t length, then the line */
	size_t disp_len, disp_off, disp_cap;
	size_t fwd[2]; /* bytes of out.buf and err.buf forwarded */
	bool pend_active, want_out;
	struct {
		struct sbx_wire_frame h;
		int src;	  /* 1 out.buf, 2 err.buf, 4 disp */
		size_t off, done; /* where its data starts in src; bytes of h + data written */
	} pend;
};

struct holder {
	const struct sbx_ctx_config *cc;
	unsigned index;
	struct sbx_ctx_state *st;
	struct sbx_slot *slot;
	struct sbx_limits life; /* the context's limits, defaults applied */
	enum sbx_ctx_lang lang;
	uint32_t idle_ttl_s;
	int workdir, sock, sigfd;
	int ep, wall_t, cpu_t, grace_t, idle_t, wait_t;
	/* the kernel */
	bool up;
	int ctl;	     /* our end of its control socket */
	bool lost_since;     /* it died while idle: the next call says lost */
	uint64_t oom_seen;   /* the cgroup's OOM kills counted by the end of the last call */
	unsigned generation; /* counts sandboxes: events of a killed one are stale */
	struct call cur;
	struct waiter waiters[MAX_WAITERS];
	unsigned nwaiters;
	bool stopping;
	char carry_out[CARRY_MAX], carry_err[CARRY_MAX];
	size_t carry_out_len, carry_err_len;
};

static inline void ep_add(struct holder *H, int fd, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.fd = fd};

	if (epoll_ctl(H->ep, EPOLL_CTL_ADD, fd, &ev) < 0 && errno == EEXIST)
		epoll_ctl(H->ep, EPOLL_CTL_MOD, fd, &ev);
}

static inline void ep_del(struct holder *H, int fd)
{
	if (fd >= 0)
		epoll_ctl(H->ep, EPOLL_CTL_DEL, fd, NULL);
}

/* ---- the kernel's sandbox (holder_kernel.c) ---- */

/* A fresh sandbox with the kernel running in it (any previous one killed first): 0, or -1 with
 * err filled and nothing left. Stops early (H->stopping) when the holder is told to stop. */
int sbx_holder_kernel_start(struct holder *H, char *err, size_t errlen);
/* Kill the sandbox, reap it, empty and clean its cgroup, close its descriptors. */
void sbx_holder_kernel_kill(struct holder *H);
/* Kill the sandbox and wait until every process of it is gone, its descriptors left open (what
 * it wrote can still be read). sbx_holder_kernel_kill then reaps and closes. */
void sbx_holder_sandbox_stop(struct holder *H);
/* Anonymous memory the context holds now, KiB (0 when no kernel runs). */
uint64_t sbx_holder_memory_kb(struct holder *H);

/* ---- shared by holder.c and holder_call.c (holder.c) ---- */

/* One log line, "context=<id> " then fmt. */
void sbx_holder_log(const struct holder *H, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Arm timerfd tfd to fire once in ms (0: disarm). timerfd_settime's result. */
int sbx_holder_arm_ms(int tfd, uint64_t ms);
/* A short reply (no output) on a client's connection, then the connection closed (*conn -1). */
void sbx_holder_answer(int *conn, int rc, const char *message);

/* ---- a call: one cell run by the kernel (holder_call.c) ---- */

/* Take the call on conn (f: the request forwarded by the main process): read its request, write
 * it to the kernel, start the clocks. */
void sbx_holder_call_start(struct holder *H, int conn, const struct sbx_ctx_fwd *f);
/* Interrupt the running cell (SIGINT to the kernel through its init), first reason kept; the
 * grace timer armed. Nothing without a call or when already interrupted. */
void sbx_holder_interrupt(struct holder *H, enum why why);
/* Send the result to the caller (unless it left) and end the call. */
void sbx_holder_call_reply(struct holder *H, struct sbx_wire_ctx_res *r);
/* The call's wall and CPU time and the context's memory now into r (and into H->st). */
void sbx_holder_timing(struct holder *H, struct sbx_wire_ctx_res *r);
/* Read whatever of the kernel's output is left after its death (every writer is gone). */
void sbx_holder_drain_dead(struct holder *H);
/* The sandbox goes (or went) during the call: report it lost, and start a fresh kernel. */
void sbx_holder_call_lost(struct holder *H, int wstatus_known, const char *why_msg);
/* Events of the call: output on a stream, the kernel's control socket, the CPU timer, and the
 * caller's connection at EOF (it left: its cell is interrupted, its result dropped). */
void sbx_holder_on_stream(struct holder *H, struct sbx_ctx_stream *s);
void sbx_holder_on_ctl(struct holder *H, uint32_t events);
void sbx_holder_on_cpu_timer(struct holder *H);
void sbx_holder_on_caller(struct holder *H);

/* ---- a streamed call (holder_stream.c) ---- */

/* Forward to the caller what it has not got yet: kept output and queued display lines. Without
 * wait, as far as its connection takes them at once (the rest when it turns writable: EPOLLOUT
 * on the call's conn); with wait, all of it. 0, or -1 when the caller is gone (c->cancelled set,
 * its conn out of the loop). Nothing for a call that does not stream. */
int sbx_holder_pump(struct holder *H, bool wait);
/* Queue one display line of the kernel. 0, or -1 past SBX_WIRE_CTX_MAX_RESULT waiting (or out
 * of memory): the caller treats it as output past the hard limit. */
int sbx_holder_disp_push(struct holder *H, const char *line, size_t len);
/* Before the reply of a streamed call: everything forwarded, then the END frame. 0 or -1. */
int sbx_holder_stream_end(struct holder *H);

#endif
