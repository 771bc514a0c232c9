/* sbxd.c: the privileged broker. The only part of the service that runs as root.
 *
 * It accepts nothing but the fixed request of wire.h, from nothing but the service's uid (checked
 * with SO_PEERCRED), on a Unix socket only that group can reach. A pool of slot processes, each
 * holding one sandbox slot (sbx_slot_open), accept on the same listening socket and run one
 * request at a time; the kernel hands each connection to an idle slot. The main process answers
 * health probes on a second socket (so they never wait behind runs), replaces dead slots, and on
 * SIGTERM/SIGINT stops them all. A slot's runs die with it (their init has PDEATHSIG).
 *
 * Background runs (runs_bg.c) have slots of their own, --background-runs of them (the machine's
 * cap of background runs at once): they accept only on a third socket, <socket>-bg, root's alone
 * (mode 0600), which only the keepers reach (they connect before they drop root). So a background
 * run never takes a foreground slot, nor the interpreter a foreground slot pre-started (warm.c
 * keeps each slot's own history), and the foreground slots' count is what other clients get.
 * Background slots, and every sandbox they fork, sit in a cgroup of their own, <cgroup-name>-bg,
 * whose CPU weight is low (sbx_cg_join_cpu): a busy background keeps the CPU it finds idle and
 * yields it to foreground runs. Being in a non-root cpu group also takes their processes out of
 * the kernel's autogroups, so a run's setsid() earns it no share of its own. Foreground slots
 * likewise get one share each (<cgroup-name>/slotN in the cpu controller), under a parent weighted
 * by their number, when the host has the cpu controller (best effort for them). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "runs.h"
#include "internal.h"
#include "sbxd.h"
#include "wire.h"

static volatile sig_atomic_t stopping;

/* What each slot tells the main process, in memory shared across fork: a slot that keeps failing
 * to open (say, its cgroup cannot be made) is forked again and again, so a live pid says nothing
 * (see slots_ready). The main process clears ready before it forks the slot; error stays until
 * the slot opens. */
struct slot_state {
	volatile int ready;
	char error[256]; /* why the last attempt to open this slot failed, or "" */
};
static struct slot_state *slot_states;
/* Each slot's run with an id (runs.h), shared likewise; and the control pairs the main process
 * hands STDIN and SIGNAL requests over (main's end non-blocking; -1 while the slot is down). */
static struct sbx_run_pub *run_pubs;
static int ctl_main[MAX_SLOTS], ctl_slot[MAX_SLOTS];
static volatile sig_atomic_t current_conn = -1; /* a slot's connection while it runs */

/* A holder or slot that ended wakes the main loop (poll returns EINTR), so its entry is freed at
 * once. */
static void on_child(int sig)
{
	(void)sig;
}

static void on_stop(int sig)
{
	(void)sig;
	stopping = 1;
	/* A stopping slot cancels its run: the connection reads EOF, which sbx_run watches. */
	if (current_conn >= 0)
		shutdown(current_conn, SHUT_RDWR);
}

static int listen_on(const char *path, gid_t gid, mode_t mode, int backlog)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || chown(path, 0, gid) < 0 ||
	    chmod(path, mode) < 0 || listen(fd, backlog) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static bool peer_allowed(int fd, uid_t client_uid)
{
	struct ucred cr;
	socklen_t len = sizeof cr;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	return cr.uid == client_uid || cr.uid == 0;
}

/* The handlers check limits against the configured maxima; the broker still refuses to be the
 * tool of a compromised handler that asks for absurd ones. */
static void clamp_limits(struct sbx_limits *l)
{
#define CLAMP(f, max)                                                                              \
	if (l->f > (max))                                                                          \
		l->f = (max);
	CLAMP(wall_ms, 15 * 60 * 1000ull)
	CLAMP(cpu_ms, 15 * 60 * 1000ull)
	CLAMP(memory_bytes, 16ull << 30)
	CLAMP(processes, 4096u)
	CLAMP(output_bytes, 256ull << 20)
	CLAMP(output_hard_bytes, 1ull << 30)
	CLAMP(file_size_bytes, 16ull << 30)
	CLAMP(open_files, 65536u)
	CLAMP(tmp_bytes, 4ull << 30)
#undef CLAMP
}

static void serve_one(struct sbx_slot *slot, unsigned index, int conn, uid_t client_uid)
{
	struct sbx_wire_req h;
	struct sbx_wire_res r;
	struct sbx_result res;
	struct sbx_request req;
	const char *argv[SBX_MAX_ARGS + 1], *envp[SBX_MAX_ARGS + 1];
	char *strings = NULL;
	int fds[SBX_WIRE_MAX_FDS] = {-1, -1}, nfds = 0, k;
	struct stat st;
	enum sbx_wire_err e;

	memset(&res, 0, sizeof res);
	if (!peer_allowed(conn, client_uid)) {
		sbx_log("event=reject slot=%u reason=peer_uid", index);
		goto out;
	}
	e = sbx_wire_recv_req(conn, &h, fds, &nfds);
	if (e == SBX_WIRE_OK && h.op == SBX_OP_RUN_STREAM) {
		clamp_limits(&h.limits);
		sbx_runs_serve_stream(slot, index, conn, &h, fds, nfds, ctl_slot[index], run_pubs,
				      MAX_SLOTS);
		goto out;
	}
	if (e == SBX_WIRE_OK && h.op != SBX_OP_RUN)
		e = SBX_WIRE_BAD_OP;
	if (e != SBX_WIRE_OK) {
		sbx_log("event=reject slot=%u reason=bad_request error=%s", index,
			sbx_wire_strerror(e));
		goto out;
	}
	clamp_limits(&h.limits);
	e = sbx_wire_recv_strings(conn, &h, &strings, argv, envp);
	if (e != SBX_WIRE_OK) {
		sbx_log("event=reject slot=%u reason=bad_strings error=%s", index,
			sbx_wire_strerror(e));
		goto out;
	}
	memset(&req, 0, sizeof req);
	req.argv = argv;
	req.env = envp;
	sbx_wire_req_fds(&h, fds, nfds, &req);
	/* The request is read in full: anything readable now is the client hanging up. */
	req.cancel_fd = conn;
	req.limits = h.limits;
	/* stdin must be data, not a channel to somewhere. */
	if (req.stdin_fd >= 0 && (fstat(req.stdin_fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		sbx_log("event=reject slot=%u reason=stdin_not_regular", index);
		goto out;
	}
	sbx_wire_encode_result(&r, sbx_run(slot, &req, &res), &res);
	sbx_zyg_share_served(slot, argv, envp); /* for the other slots */
	sbx_log("event=run slot=%u status=%s wall_ms=%llu cpu_ms=%llu memory_kb=%llu out_bytes=%zu "
		"err_bytes=%zu%s%s",
		index, sbx_status_name(res.status), (unsigned long long)res.wall_ms,
		(unsigned long long)res.cpu_ms, (unsigned long long)res.memory_kb, res.out_len,
		res.err_len, res.status == SBX_INTERNAL_ERROR ? " message=" : "",
		res.status == SBX_INTERNAL_ERROR ? res.message : "");
	if (sbx_wire_send_res(conn, &r, res.out, res.err) != SBX_WIRE_OK)
		sbx_log("event=reply_failed slot=%u", index);
out:
	sbx_result_free(&res);
	free(strings);
	for (k = 0; k < nfds; k++)
		close(fds[k]);
}

static void __attribute__((noreturn))
slot_main(const struct opts *o, unsigned index, int lfd, int other_lfd, int hfd)
{
	char err[256];
	struct sbx_slot *slot;
	struct sigaction sa;
	sigset_t stop_sigs;
	struct sbx_config cfg = o->cfg;
	const bool background = index >= o->slots;

	close(hfd);
	if (other_lfd >= 0)
		close(other_lfd);
	{
		unsigned k;

		for (k = 0; k < MAX_SLOTS; k++) {
			if (ctl_main[k] >= 0)
				close(ctl_main[k]);
			if (k != index && ctl_slot[k] >= 0)
				close(ctl_slot[k]);
		}
	}
	signal(SIGCHLD, SIG_DFL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop; /* no SA_RESTART: accept() returns EINTR and we leave cleanly */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (background)
		cfg.cgroup_name = o->bg_cgroup;
	slot = sbx_slot_open(&cfg, index, err, sizeof err);
	/* A background slot runs with a low CPU weight, or not at all (fail closed). */
	if (slot && background &&
	    sbx_cg_join_cpu(o->bg_cgroup, index, SBX_BG_CPU_SHARES * (unsigned)o->background,
			    SBX_BG_CPU_WEIGHT * (unsigned)o->background > 10000
				? 10000
				: SBX_BG_CPU_WEIGHT * (unsigned)o->background,
			    err, sizeof err) < 0) {
		sbx_slot_close(slot);
		slot = NULL;
	}
	/* A foreground slot's runs share one CPU share per slot, whatever they setsid(), under a
	 * parent weighted by the slot count (so the pool weighs what its runs did as autogroups).
	 * Best effort: a host without the cpu controller still runs them, as before. */
	if (slot && !background &&
	    sbx_cg_join_cpu(o->cfg.cgroup_name, index, 1024 * o->slots,
			    o->slots * 100 > 10000 ? 10000 : o->slots * 100, err, sizeof err) < 0)
		sbx_log("event=cpu_group_failed slot=%u error=\"%s\"", index, err);
	if (!slot) {
		sbx_log("event=slot_failed slot=%u error=\"%s\"", index, err);
		snprintf(slot_states[index].error, sizeof slot_states[index].error, "%s", err);
		_exit(3);
	}
	slot_states[index].error[0] = '\0';
	slot_states[index].ready = 1;
	sbx_zyg_share_join(slot); /* zygote.c: foreground slots only (indices below o->slots) */
	sigemptyset(&stop_sigs);
	sigaddset(&stop_sigs, SIGTERM);
	sigaddset(&stop_sigs, SIGINT);
	while (!stopping) {
		struct pollfd pf[2] = {{lfd, POLLIN, 0}, {ctl_slot[index], POLLIN, 0}};
		sigset_t waiting;
		int conn;

		/* Idle time builds the next sandbox, so a request only attaches /work and execs. A
		 * failure here is retried by the next run, which reports it as internal_error. */
		if (sbx_slot_prewarm(slot, err, sizeof err) < 0)
			sbx_log("event=prewarm_failed slot=%u error=\"%s\"", index, err);
		/* ... and zygotes for the forms other slots served (zygote.c); looked at again */
		int ms = sbx_zyg_share_idle(slot, lfd);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		/* A stop that arrives while the sandbox is being built must not be lost before a
		 * blocking wait: the stop signals are unblocked only inside ppoll, atomically. The
		 * listening socket is non-blocking (another slot may take the connection first). */
		sigprocmask(SIG_BLOCK, &stop_sigs, &waiting);
		if (!stopping)
			(void)ppoll(pf, ctl_slot[index] >= 0 ? 2 : 1, ms >= 0 ? &ts : NULL,
				    &waiting);
		sigprocmask(SIG_SETMASK, &waiting, NULL);
		if (stopping)
			break;
		/* a request for a run of ours that has ended */
		if (pf[1].revents & POLLIN)
			sbx_runs_answer_idle(ctl_slot[index], &run_pubs[index]);
		if (!(pf[0].revents & POLLIN))
			continue;
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		current_conn = conn;
		serve_one(slot, index, conn, o->client_uid);
		current_conn = -1;
		close(conn);
	}
	sbx_slot_close(slot);
	_exit(0);
}

/* The control socket: probes and quota settings, answered by the main process at once. */
/* How many slots can take runs: open, or still opening with no failure to open behind them (a
 * slot that failed keeps its error until it opens, so a crash-looping one never counts, while a
 * broker that has just started does). why gets the last open failure, or "". */
static unsigned slots_ready(const pid_t *pids, unsigned first, unsigned n,
			    char why[sizeof slot_states->error])
{
	unsigned ready = 0, i;

	why[0] = '\0';
	for (i = first; i < first + n; i++) {
		ready += pids[i] > 0 && (slot_states[i].ready || !slot_states[i].error[0]);
		if (slot_states[i].error[0]) {
			/* a slot may be writing it: copy, bounded */
			memcpy(why, slot_states[i].error, sizeof slot_states->error - 1);
			why[sizeof slot_states->error - 1] = '\0';
		}
	}
	return ready;
}

/* Wait up to ms for conn to become readable. A child that ends (SIGCHLD: a context's holder, a
 * background run's keeper) interrupts poll() even under SA_RESTART; the wait goes on with the
 * time left, so a request is never dropped for it. 1 when readable, 0 otherwise. */
static int wait_request(int conn, int ms)
{
	struct pollfd pf = {conn, POLLIN, 0};
	struct timespec t0, t;
	int n, left = ms;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = poll(&pf, 1, left);
		if (n >= 0 || errno != EINTR)
			return n == 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		left =
		    ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return 0;
	}
}

static void answer_control(int hfd, const struct opts *o, const pid_t *pids)
{
	struct sbx_wire_res r;
	struct sbx_wire_req h;
	int conn = accept4(hfd, NULL, NULL, SOCK_CLOEXEC), fds[SBX_WIRE_MAX_FDS] = {-1, -1},
	    nfds = 0, k;
	enum sbx_wire_err e = SBX_WIRE_IO;

	if (conn < 0)
		return;
	sbx_wire_res_init(&r);
	/* Requests here are tiny; a silent peer must not hold the main loop. */
	if (!peer_allowed(conn, o->client_uid) || !wait_request(conn, 200) ||
	    (e = sbx_wire_recv_req(conn, &h, fds, &nfds)) != SBX_WIRE_OK) {
		sbx_log("event=reject socket=control reason=bad_request error=%s",
			sbx_wire_strerror(e));
		goto out;
	}
	if (sbx_wire_is_bg_op(h.op)) {
		struct timeval tv = {0, 200000};

		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		clamp_limits(&h.limits);
		sbx_bg_serve(conn, &h, fds, nfds);
		goto out;
	}
	if (h.op == SBX_OP_RUN_STDIN || h.op == SBX_OP_RUN_SIGNAL) {
		struct timeval tv = {0, 200000};

		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		sbx_runs_route(conn, &h, run_pubs, ctl_main, o->slots + (unsigned)o->background);
		goto out;
	}
	if (sbx_wire_is_ctx_op(h.op)) {
		/* What follows the header was sent with it: a peer that stalls is dropped. */
		struct timeval tv = {0, 200000};

		setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		clamp_limits(&h.limits);
		sbx_ctx_serve(conn, &h, fds, nfds);
		goto out;
	}
	if (h.op == SBX_OP_PROBE) {
		struct sbx_probe p;
		char why[sizeof slot_states->error], bg_why[sizeof slot_states->error],
		    bg[200] = "";
		unsigned ready = slots_ready(pids, 0, o->slots, why), bg_ready;

		/* Foreground slots decide usable (they are what /v1/execute gets); the background
		 * ones are counted after them, with their own failure. */
		bg_ready = slots_ready(pids, o->slots, (unsigned)o->background, bg_why);
		if (o->background > 0)
			snprintf(bg, sizeof bg, "; %u of %d background slots ready%s%.100s",
				 bg_ready, o->background,
				 bg_why[0] ? "; a background slot failed to open: " : "", bg_why);
		sbx_probe(&p);
		r.cgroup_version = p.cgroup_version;
		r.usable = p.usable && ready > 0;
		snprintf(r.message, sizeof r.message, "%.220s; %u of %u slots ready%s%.120s%s",
			 p.detail, ready, o->slots, why[0] ? "; a slot failed to open: " : "", why,
			 bg);
	} else if (h.op == SBX_OP_QUOTA) { /* checked: exactly the directory came with it */
		struct stat st;

		/* Only the service's own session directories, never an arbitrary subvolume. */
		if (fstat(fds[0], &st) < 0 || st.st_uid != o->cfg.files_uid) {
			r.rc = -EPERM;
			snprintf(r.message, sizeof r.message, "quota: not a session directory");
		} else {
			r.rc = sbx_quota_set(fds[0], h.limits.file_size_bytes, r.message,
					     sizeof r.message);
		}
		sbx_log("event=quota bytes=%llu rc=%d",
			(unsigned long long)h.limits.file_size_bytes, r.rc);
	} else {
		sbx_log("event=reject socket=control reason=bad_op");
		goto out;
	}
	(void)sbx_wire_send_res(conn, &r, NULL, NULL);
out:
	for (k = 0; k < nfds; k++)
		close(fds[k]);
	close(conn);
}

/* No slot can open (its cgroup cannot be made, say): the main process answers runs itself,
 * internal_error with the slot's reason, instead of leaving clients in the listen queue until
 * their own timeouts. Fail closed and say why. */
static void answer_unavailable(int lfd, const struct opts *o, const char *what, const char *why)
{
	struct sbx_wire_res r;
	struct sbx_wire_req h;
	struct sbx_wire_run w;
	struct sbx_wire_frame end;
	const char *argv[SBX_MAX_ARGS + 1], *envp[SBX_MAX_ARGS + 1];
	char *strings = NULL;
	int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), fds[SBX_WIRE_MAX_FDS] = {-1, -1},
	    nfds = 0, k;
	enum sbx_wire_err e = SBX_WIRE_IO;

	if (conn < 0)
		return; /* a slot that just opened took it */
	/* Read the request first (a silent peer must not hold the main loop), so the reply is
	 * never lost to a reset over unread data. */
	if (!peer_allowed(conn, o->client_uid) || !wait_request(conn, 200) ||
	    (e = sbx_wire_recv_req(conn, &h, fds, &nfds)) != SBX_WIRE_OK ||
	    (h.op == SBX_OP_RUN_STREAM && (e = sbx_wire_recv_run(conn, &h, &w)) != SBX_WIRE_OK) ||
	    (e = sbx_wire_recv_strings(conn, &h, &strings, argv, envp)) != SBX_WIRE_OK) {
		sbx_log("event=reject socket=main reason=bad_request error=%s",
			sbx_wire_strerror(e));
		goto out;
	}
	sbx_wire_res_init(&r);
	r.rc = -EAGAIN;
	r.status = SBX_INTERNAL_ERROR;
	snprintf(r.message, sizeof r.message, "no %s can be opened: %s", what, why);
	sbx_log("event=run status=internal_error message=\"%s\"", r.message);
	/* a streamed run's answer is its end frame, then the result */
	memset(&end, 0, sizeof end);
	end.magic = SBX_WIRE_MAGIC;
	end.stream = SBX_WIRE_FRAME_END;
	if ((h.op == SBX_OP_RUN_STREAM && sbx_write_all(conn, &end, sizeof end) < 0) ||
	    sbx_wire_send_res(conn, &r, NULL, NULL) != SBX_WIRE_OK)
		sbx_log("event=reply_failed socket=main");
out:
	free(strings);
	for (k = 0; k < nfds; k++)
		close(fds[k]);
	close(conn);
}

/* --disk-reserve-mb: "auto" (5% of the volume, at most 512 MiB: the service's own default), or
 * MiB; 0 keeps no reserve group. Anything else stops the start (a typo must not drop a limit). */
int main(int argc, char **argv)
{
	struct opts o;
	pid_t pids[MAX_SLOTS];
	time_t respawn_at[MAX_SLOTS] = {0};
	char hpath[256], bpath[256];
	struct sbx_probe probe;
	struct sigaction sa;
	int lfd, hfd, bfd = -1;
	unsigned i, total;
	const pid_t me = getpid();

	sbxd_parse(argc, argv, &o);
	total = o.slots + (unsigned)o.background;
	if (sbx_probe(&probe) < 0) {
		sbx_log("event=start_failed error=\"%s\"", probe.detail);
		return 1;
	}
	{
		char err[512];

		/* Before any slot exists: on a delegated cgroup v2 subtree the broker's own group
		 * must be left empty for the slots' groups. */
		if (sbx_cg_enter_supervisor(err, sizeof err) < 0) {
			sbx_log("event=start_failed error=\"%s\"", err);
			return 1;
		}
	}
	/* Backlog of one per slot: past it, clients get EAGAIN and answer 503. */
	lfd = listen_on(o.socket, o.cfg.files_gid, 0660, (int)o.slots);
	snprintf(hpath, sizeof hpath, "%s-health", o.socket);
	hfd = listen_on(hpath, o.cfg.files_gid, 0660, 64);
	/* The background slots' socket: root's alone (keepers connect before they drop root). Its
	 * queue holds every admitted run's connection (at most the cap running, plus those of runs
	 * killed before a slot took them), so a keeper never finds it full. */
	snprintf(bpath, sizeof bpath, "%s-bg", o.socket);
	if (o.background > 0)
		bfd = listen_on(bpath, 0, 0600, 1024);
	/* Non-blocking: every slot waits in ppoll, and the one that loses the race to accept a
	 * connection gets EAGAIN instead of sleeping in accept (see slot_main). */
	if (lfd >= 0)
		fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
	if (bfd >= 0)
		fcntl(bfd, F_SETFL, fcntl(bfd, F_GETFL) | O_NONBLOCK);
	if (lfd < 0 || hfd < 0 || (o.background > 0 && bfd < 0)) {
		sbx_log("event=start_failed error=\"listen %s: %s\"", o.socket, strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	{
		struct sbx_ctx_config cc;
		char err[512];

		memset(&cc, 0, sizeof cc);
		cc.cfg = &o.cfg;
		cc.slots = total; /* contexts' uids come after every run slot's */
		cc.max = o.contexts;
		cc.memory_bytes = o.contexts_memory;
		cc.client_uid = o.client_uid;
		snprintf(cc.cgroup_name, sizeof cc.cgroup_name, "%s-ctx", o.cfg.cgroup_name);
		if (sbx_ctx_init(&cc, err, sizeof err) < 0) {
			sbx_log("event=start_failed error=\"%s\"", err);
			return 1;
		}
	}
	if (sbx_bg_init(1024, (unsigned)o.background, bpath, o.client_uid, o.cfg.files_gid) < 0) {
		sbx_log("event=start_failed error=\"mmap: %s\"", strerror(errno));
		return 1;
	}
	sbx_log("event=start socket=%s slots=%u background_runs=%d contexts=%u "
		"contexts_memory_mb=%llu cgroup=v%d "
		"detail=\"%s\"",
		o.socket, o.slots, o.background, o.contexts,
		(unsigned long long)(o.contexts_memory >> 20), probe.cgroup_version, probe.detail);
	slot_states = mmap(NULL, MAX_SLOTS * sizeof *slot_states, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slot_states == MAP_FAILED) {
		sbx_log("event=start_failed error=\"mmap: %s\"", strerror(errno));
		return 1;
	}
	run_pubs = mmap(NULL, MAX_SLOTS * sizeof *run_pubs, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (run_pubs == MAP_FAILED || sbx_zyg_share_init(o.slots) < 0) {
		sbx_log("event=start_failed error=\"mmap: %s\"", strerror(errno));
		return 1;
	}
	for (i = 0; i < MAX_SLOTS; i++)
		ctl_main[i] = ctl_slot[i] = -1;
	for (i = 0; i < total; i++)
		pids[i] = 0;
	while (!stopping) {
		struct pollfd pf[3] = {{hfd, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
		char why[sizeof slot_states->error], bg_why[sizeof slot_states->error];
		unsigned ready = slots_ready(pids, 0, o.slots, why),
			 bg_ready = slots_ready(pids, o.slots, (unsigned)o.background, bg_why);
		pid_t dead;
		int status;

		for (i = 0; i < total && !stopping; i++) {
			if (pids[i] > 0 || time(NULL) < respawn_at[i])
				continue;
			slot_states[i].ready = 0;
			memset(&run_pubs[i], 0, sizeof run_pubs[i]);
			{
				int pair[2];

				if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) ==
				    0) {
					fcntl(pair[0], F_SETFL, O_NONBLOCK);
					ctl_main[i] = pair[0];
					ctl_slot[i] = pair[1];
				}
			}
			pids[i] = fork();
			if (pids[i] == 0) {
				/* A broker that is killed outright takes its slots along: an orphan
				 * slot would keep its prepared sandbox and the old socket forever.
				 */
				if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 ||
				    getppid() != me)
					_exit(0);
				if (i < o.slots)
					slot_main(&o, i, lfd, bfd, hfd);
				slot_main(&o, i, bfd, lfd, hfd);
			}
			if (ctl_slot[i] >= 0)
				close(ctl_slot[i]);
			ctl_slot[i] = -1;
			if (pids[i] < 0) {
				pids[i] = 0;
				if (ctl_main[i] >= 0)
					close(ctl_main[i]);
				ctl_main[i] = -1;
			}
		}
		/* Runs are the slots' business, unless none is ready because they fail to open
		 * (poll skips the negative fds). */
		if (ready == 0 && why[0])
			pf[1].fd = lfd;
		if (bfd >= 0 && bg_ready == 0 && bg_why[0])
			pf[2].fd = bfd;
		sbx_bg_unavailable(pf[2].fd >= 0 ? bg_why : NULL);
		if (poll(pf, 3, 500) > 0) {
			if (pf[0].revents & POLLIN)
				answer_control(hfd, &o, pids);
			if (pf[1].fd >= 0 && (pf[1].revents & POLLIN))
				answer_unavailable(lfd, &o, "sandbox slot", why);
			if (pf[2].fd >= 0 && (pf[2].revents & POLLIN))
				answer_unavailable(bfd, &o, "background slot", bg_why);
		}
		while ((dead = waitpid(-1, &status, WNOHANG)) > 0) {
			if (sbx_ctx_reaped(dead, status) || sbx_bg_reaped(dead))
				continue;
			for (i = 0; i < total; i++) {
				if (pids[i] != dead)
					continue;
				pids[i] = 0;
				if (ctl_main[i] >= 0)
					close(ctl_main[i]);
				ctl_main[i] = -1;
				memset(&run_pubs[i], 0, sizeof run_pubs[i]);
				sbx_log("event=slot_exit slot=%u status=%d", i,
					WIFEXITED(status) ? WEXITSTATUS(status)
							  : 128 + WTERMSIG(status));
				/* A slot that cannot open would respin forever: slow down (without
				 * blocking this loop, which answers probes and, then, runs). */
				if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
					respawn_at[i] = time(NULL) + 1;
			}
		}
	}
	sbx_bg_stop_all();
	sbx_ctx_stop_all();
	for (i = 0; i < total; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	for (i = 0; i < total; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	unlink(o.socket);
	unlink(hpath);
	if (bfd >= 0)
		unlink(bpath);
	/* the background groups first: on v2 the service's own group is restored last */
	sbx_cg_remove_tree(o.bg_cgroup);
	sbx_cg_remove_tree(o.cfg.cgroup_name);
	sbx_log("event=stop");
	return 0;
}
