/* runs_bg.c: background runs on the broker's side (sandbox.h, section "runs").
 *
 * The main process owns the table of background runs (memory shared with their keepers, so that
 * listing never waits for one) and admits each START there, atomically: the id is free, the
 * owner's and the session's caps, the machine's cap (--background-runs: as many background slots
 * as that, of their own, so background runs never take the slots, or the pre-started interpreters,
 * of other clients' runs). It forks a keeper per run. The keeper connects, while still root, to
 * the background slots' socket (root's alone: nothing but a keeper reaches those slots), drops to
 * the client uid and runs the request there as a streamed run with the run's id (so the run holds
 * a background slot for its life, and stdin and signals reach it like any run with an id), keeps
 * the delivered output in memory (at most output_bytes per stream: the slot never delivers more),
 * and answers STATUS, OUTPUT (long-poll) and KILL requests handed to it with their connections.
 * It runs as the service's client uid (the sockets' group), not root. It stays keep_s after the
 * end, then exits; its entry is freed when it is reaped. A KILL (or the TTL) marks the entry gone
 * first, so that the main process answers "no such run" from then on; the keeper answers every
 * request already handed to it before it exits, so no caller ever sees a half answer. A broker stop
 * kills every keeper; their connections close, so their slots kill the runs (as for any client that
 * leaves) and the slots themselves stop: nothing is left. */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runs.h"

#define DEFAULT_KEEP_S 600
#define MAX_HANDLERS 32 /* requests a keeper serves at once (long-polls) */
#define KEEPER_NICE 19	/* keepers take the CPU last (nice 19: weight 15 against 1024) */

struct bg {
	/* written by the main process */
	volatile int in_use;
	/* forgotten (by a KILL the main process accepted, or by the keeper leaving at its TTL): the
	 * main process answers "no such run" itself from then on and hands nothing more over, so
	 * no request ever reaches a keeper that is on its way out */
	volatile int gone;
	pid_t keeper;
	int sock; /* main's end of the keeper's pair */
	char id[SBX_RUN_ID_LEN + 1];
	char owner[64];
	char session[64];
	/* written by the keeper */
	volatile int state; /* 0 starting, SBX_RUN_RUNNING, SBX_RUN_ENDED */
	volatile uint64_t started_ms, ended_ms, out_len, err_len;
	volatile int out_truncated, err_truncated, status, interactive;
};

static struct bg *table;
static unsigned table_max, machine_cap;
static const char *bg_socket;
static char unavailable[200]; /* sbx_bg_unavailable */
static uid_t keeper_uid;
static gid_t keeper_gid;

static void bg_reply(int conn, int rc, const char *message)
{
	struct sbx_wire_bg_res r;

	memset(&r, 0, sizeof r);
	r.magic = SBX_WIRE_MAGIC;
	r.rc = rc;
	sbx_wire_res_init(&r.result);
	if (message)
		memcpy(r.message, message, strnlen(message, sizeof r.message - 1));
	(void)sbx_write_all(conn, &r, sizeof r);
}

int sbx_bg_init(unsigned max, unsigned cap, const char *socket_path, uid_t uid, gid_t gid)
{
	keeper_uid = uid;
	keeper_gid = gid;
	table_max = max;
	machine_cap = cap;
	bg_socket = socket_path;
	if (!max)
		return 0;
	table = mmap(NULL, max * sizeof *table, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (table == MAP_FAILED) {
		table = NULL;
		return -1;
	}
	return 0;
}

void sbx_bg_unavailable(const char *why)
{
	snprintf(unavailable, sizeof unavailable, "%s", why ? why : "");
}

static void fill_info(const struct bg *b, struct sbx_run_info *i)
{
	memset(i, 0, sizeof *i);
	memcpy(i->id, b->id, sizeof i->id);
	memcpy(i->owner, b->owner, sizeof i->owner);
	memcpy(i->session, b->session, sizeof i->session);
	i->state = b->state == SBX_RUN_ENDED ? SBX_RUN_ENDED : SBX_RUN_RUNNING;
	i->interactive = b->interactive;
	i->started_ms = b->started_ms;
	i->ended_ms = b->ended_ms;
	i->out_len = b->out_len;
	i->err_len = b->err_len;
	i->out_truncated = b->out_truncated;
	i->err_truncated = b->err_truncated;
	i->status = (enum sbx_status)b->status;
}

/* ---- the keeper ---- */

struct keeper {
	struct bg *b;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *buf[2];
	size_t len[2], cap[2];
	bool ended;
	struct sbx_result res;
	int cancel[2]; /* a pipe: written to cancel the run (KILL) */
	int handlers;
	int sock; /* the keeper's end of its pair (the shared entry holds the main's) */
};

static int keep_output(void *arg, int stream, const char *data, size_t len)
{
	struct keeper *k = arg;
	int s = stream - 1;

	if (stream == 0)
		return 0;
	pthread_mutex_lock(&k->mu);
	if (k->len[s] + len > k->cap[s]) {
		size_t cap = k->cap[s] ? k->cap[s] : 4096;
		char *p;

		while (cap < k->len[s] + len)
			cap *= 2;
		p = realloc(k->buf[s], cap);
		if (!p) {
			pthread_mutex_unlock(&k->mu);
			return 1; /* cannot keep it: the run is cancelled, not silently cut */
		}
		k->buf[s] = p;
		k->cap[s] = cap;
	}
	memcpy(k->buf[s] + k->len[s], data, len);
	k->len[s] += len;
	if (s == 0)
		k->b->out_len = k->len[s];
	else
		k->b->err_len = k->len[s];
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
	return 0;
}

struct handler_arg {
	struct keeper *k;
	int conn;
	struct sbx_wire_req h;
	struct sbx_wire_run w;
};

static void *handle(void *p)
{
	struct handler_arg *a = p;
	struct keeper *k = a->k;
	struct sbx_wire_bg_res r;
	int conn = a->conn;

	memset(&r, 0, sizeof r);
	r.magic = SBX_WIRE_MAGIC;
	sbx_wire_res_init(&r.result);
	if (a->h.op == SBX_OP_RUN_KILL) {
		pthread_mutex_lock(&k->mu);
		if (write(k->cancel[1], "k", 1) < 0) {
			/* the pipe is there for the keeper's life */
		}
		while (!k->ended)
			pthread_cond_wait(&k->cv, &k->mu);
		/* requests handed over before the KILL (long-polls woken by the end) answer first
		 */
		while (k->handlers > 1)
			pthread_cond_wait(&k->cv, &k->mu);
		pthread_mutex_unlock(&k->mu);
		(void)sbx_write_all(conn, &r, sizeof r);
		/* forgotten: the keeper leaves once this answer is out */
		_exit(0);
	}
	if (a->h.op == SBX_OP_RUN_STATUS) {
		pthread_mutex_lock(&k->mu);
		fill_info(k->b, &r.info);
		if (k->ended) {
			r.has_result = 1;
			sbx_wire_encode_result(
			    &r.result, k->res.status == SBX_INTERNAL_ERROR ? -1 : 0, &k->res);
			if (r.result.rc < 0)
				r.result.rc = -EIO;
		}
		pthread_mutex_unlock(&k->mu);
		/* an ended run's buffers never change again */
		if (sbx_write_all(conn, &r, sizeof r) == 0 && r.has_result &&
		    (!k->len[0] || sbx_write_all(conn, k->buf[0], k->len[0]) == 0) && k->len[1])
			(void)sbx_write_all(conn, k->buf[1], k->len[1]);
		goto out;
	}
	/* OUTPUT */
	{
		int s = (int)a->w.stream - 1;
		uint32_t wait_ms =
		    a->w.wait_ms > SBX_RUN_MAX_WAIT_MS ? SBX_RUN_MAX_WAIT_MS : a->w.wait_ms;
		struct timespec until;
		char *copy = NULL;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&k->mu);
		if (a->w.cursor > k->len[s]) {
			pthread_mutex_unlock(&k->mu);
			bg_reply(conn, -EINVAL, "cursor past the kept output");
			goto out;
		}
		while (!k->ended && a->w.cursor == k->len[s] && wait_ms &&
		       pthread_cond_timedwait(&k->cv, &k->mu, &until) == 0)
			;
		r.data_len = a->w.cursor <= k->len[s] ? k->len[s] - a->w.cursor : 0;
		if (r.data_len > SBX_RUN_MAX_CHUNK)
			r.data_len = SBX_RUN_MAX_CHUNK;
		r.next = a->w.cursor + r.data_len;
		r.ended = k->ended;
		r.truncated = s == 0 ? k->b->out_truncated : k->b->err_truncated;
		fill_info(k->b, &r.info);
		if (r.data_len) {
			copy = malloc(r.data_len);
			if (copy)
				memcpy(copy, k->buf[s] + a->w.cursor, r.data_len);
			else
				r.data_len = 0, r.next = a->w.cursor;
		}
		pthread_mutex_unlock(&k->mu);
		if (sbx_write_all(conn, &r, sizeof r) == 0 && r.data_len)
			(void)sbx_write_all(conn, copy, r.data_len);
		free(copy);
	}
out:
	close(conn);
	pthread_mutex_lock(&k->mu);
	k->handlers--;
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
	free(a);
	return NULL;
}

/* Requests handed over by the main process, each served in its own thread (long-polls). */
static void *serve_pair(void *p)
{
	struct keeper *k = p;
	int sock = k->sock;

	for (;;) {
		struct handler_arg *a = calloc(1, sizeof *a);
		struct {
			struct sbx_wire_req h;
			struct sbx_wire_run w;
		} m;
		struct iovec iov = {&m, sizeof m};
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof cbuf};
		struct cmsghdr *c;
		pthread_t t;
		ssize_t n;
		int conn = -1;
		bool go;

		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
		if (n == 0 || (n < 0 && errno != EINTR))
			_exit(0); /* the broker is gone */
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
			    c->cmsg_len == CMSG_LEN(sizeof(int)))
				memcpy(&conn, CMSG_DATA(c), sizeof conn);
		if (conn < 0 || !a || n != (ssize_t)sizeof m) {
			if (conn >= 0)
				close(conn);
			free(a);
			continue;
		}
		a->k = k;
		a->conn = conn;
		a->h = m.h;
		a->w = m.w;
		pthread_mutex_lock(&k->mu);
		go = k->handlers < MAX_HANDLERS;
		if (go)
			k->handlers++;
		pthread_mutex_unlock(&k->mu);
		if (!go || pthread_create(&t, NULL, handle, a) != 0) {
			if (go) {
				pthread_mutex_lock(&k->mu);
				k->handlers--;
				pthread_mutex_unlock(&k->mu);
			}
			bg_reply(conn, -EAGAIN, "too many requests for this run at once");
			close(conn);
			free(a);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

static void __attribute__((noreturn))
keeper_main(struct bg *b, int sock, int conn, int slot_conn, const struct sbx_wire_req *h,
	    const struct sbx_wire_run *w, char *strings, int *fds, int nfds)
{
	const char *argv[SBX_MAX_ARGS + 1], *envp[SBX_MAX_ARGS + 1];
	struct sbx_run_spec spec;
	struct sbx_request req;
	struct keeper k;
	pthread_t t;
	uint32_t keep_s = w->keep_s ? w->keep_s : DEFAULT_KEEP_S;
	struct sbx_wire_req hh = *h;

	memset(&k, 0, sizeof k);
	k.b = b;
	k.sock = sock;
	pthread_mutex_init(&k.mu, NULL);
	pthread_cond_init(&k.cv, NULL);
	if (keep_s > SBX_RUN_MAX_KEEP_S)
		keep_s = SBX_RUN_MAX_KEEP_S;
	if (pipe2(k.cancel, O_CLOEXEC) < 0 ||
	    sbx_wire_decode_strings(&hh, strings, h->strings_len, argv, envp) != SBX_WIRE_OK) {
		bg_reply(conn, -EIO, "keeper setup failed");
		_exit(1);
	}
	memset(&spec, 0, sizeof spec);
	memcpy(spec.id, w->id, SBX_RUN_ID_LEN);
	memcpy(spec.owner, w->owner, strnlen(w->owner, sizeof spec.owner - 1));
	memcpy(spec.session, w->session, strnlen(w->session, sizeof spec.session - 1));
	spec.interactive = w->interactive;
	memset(&req, 0, sizeof req);
	req.argv = argv;
	req.env = envp;
	sbx_wire_req_fds(h, fds, nfds, &req);
	req.cancel_fd = k.cancel[0];
	req.limits = h->limits;
	b->interactive = w->interactive;
	b->started_ms = sbx_realtime_ms();
	b->state = SBX_RUN_RUNNING;
	if (pthread_create(&t, NULL, serve_pair, &k) != 0) {
		bg_reply(conn, -EIO, "keeper thread failed");
		_exit(1);
	}
	/* Started: the answer goes now, the run takes its slot next (or fails, kept as its result).
	 */
	bg_reply(conn, 0, NULL);
	close(conn);
	{
		struct sbx_result res;

		/* The connection waits in the background slots' queue until one is free (there are
		 * as many as the machine's cap, so that is at most a slot's cleanup away); a KILL
		 * ends the wait like the run. */
		(void)sbx_client_run_stream_on(slot_conn, &req, &spec, keep_output, &k, &res);
		pthread_mutex_lock(&k.mu);
		/* What a result holds is what was delivered plus the rest of its streams: keep the
		 * result's own copy of the output. A failed call's result holds less (nothing: the
		 * broker hung up, say), and output readers may already hold cursors past that: then
		 * what was delivered stays, and the result says so. Kept output never shrinks. */
		if (res.out && res.err && res.out_len >= k.len[0] && res.err_len >= k.len[1]) {
			free(k.buf[0]);
			free(k.buf[1]);
			k.buf[0] = res.out;
			k.buf[1] = res.err;
			k.len[0] = res.out_len;
			k.len[1] = res.err_len;
		} else {
			free(res.out);
			free(res.err);
			res.out = res.err = NULL;
			res.out_len = k.len[0];
			res.err_len = k.len[1];
		}
		k.res = res;
		b->out_len = k.len[0];
		b->err_len = k.len[1];
		b->out_truncated = res.out_truncated;
		b->err_truncated = res.err_truncated;
		b->status = res.status;
		b->ended_ms = sbx_realtime_ms();
		b->state = SBX_RUN_ENDED;
		k.ended = true;
		pthread_cond_broadcast(&k.cv);
		pthread_mutex_unlock(&k.mu);
	}
	while (keep_s-- > 0)
		sleep(1);
	/* TTL: forgotten first, then every request already handed over is answered */
	b->gone = 1;
	__sync_synchronize();
	pthread_mutex_lock(&k.mu);
	while (k.handlers > 0)
		pthread_cond_wait(&k.cv, &k.mu);
	pthread_mutex_unlock(&k.mu);
	_exit(0);
}

/* ---- the main process ---- */

/* A new keeper closes every descriptor of the main process's (listening sockets, slots' pairs)
 * but conn, pair and the request's fds: a few close_range calls over the gaps between them,
 * rather than a close() for every possible number. */
static void close_span(unsigned from, unsigned to)
{
	unsigned fd;

	if (syscall(SYS_close_range, from, to, 0u) == 0)
		return;
	for (fd = from; fd <= to && fd < 4096; fd++) /* a kernel without close_range */
		close((int)fd);
}

static void keep_only_fds(int conn, int pair, const int *fds, int nfds)
{
	int keep[2 + SBX_WIRE_MAX_FDS], n = 0, i, j;
	unsigned from = 3;

	keep[n++] = conn;
	keep[n++] = pair;
	for (i = 0; i < nfds && i < SBX_WIRE_MAX_FDS; i++)
		if (fds[i] >= 0)
			keep[n++] = fds[i];
	for (i = 1; i < n; i++) /* insertion sort: a handful */
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from)
			close_span(from, (unsigned)keep[i] - 1);
		from = (unsigned)keep[i] + 1;
	}
	close_span(from, ~0u);
}

static struct bg *find(const char *id, const char *owner)
{
	unsigned i;

	for (i = 0; table && i < table_max; i++)
		if (table[i].in_use && strcmp(table[i].id, id) == 0 &&
		    (!owner || strcmp(table[i].owner, owner) == 0))
			return &table[i];
	return NULL;
}

static void start(int conn, const struct sbx_wire_req *h, const struct sbx_wire_run *w, int *fds,
		  int nfds)
{
	const char *argv[SBX_MAX_ARGS + 1], *envp[SBX_MAX_ARGS + 1];
	char *strings = NULL;
	unsigned i, live = 0, owner_n = 0, owner_kept = 0, session_n = 0, share;
	struct bg *b = NULL;
	int pair[2], slot_conn;
	pid_t pid, parent = getpid();

	if (sbx_wire_recv_strings(conn, h, &strings, argv, envp) != SBX_WIRE_OK) {
		bg_reply(conn, -EINVAL, "malformed run request");
		goto out;
	}
	if (find(w->id, NULL)) {
		bg_reply(conn, -EEXIST, "run id in use");
		goto out;
	}
	for (i = 0; i < table_max; i++) {
		if (!table[i].in_use) {
			if (!b)
				b = &table[i];
			continue;
		}
		if (table[i].state == SBX_RUN_ENDED) {
			/* kept for its output: no slot, but an entry of the table and a keeper */
			owner_kept += !table[i].gone && strcmp(table[i].owner, w->owner) == 0;
			continue;
		}
		live++;
		owner_n += strcmp(table[i].owner, w->owner) == 0;
		session_n += w->session[0] && strcmp(table[i].session, w->session) == 0;
	}
	if (w->max_per_owner && owner_n >= w->max_per_owner) {
		bg_reply(conn, -EDQUOT, "too many background runs for this client");
		goto out;
	}
	/* Ended runs kept for their output count too (until deleted or their keep time ends):
	 * otherwise one client's finished runs fill the table every client shares. */
	if (w->max_per_owner && owner_n + owner_kept >= w->max_per_owner) {
		bg_reply(conn, -EDQUOT,
			 "too many background runs for this client, ended ones included: delete "
			 "the ended ones whose output you have read");
		goto out;
	}
	/* One client holds at most half of the machine's background runs (rounded up), so
	 * another client always finds one, whatever the per-client cap is configured to. */
	share = machine_cap > 1 ? (machine_cap + 1) / 2 : 1;
	if (owner_n >= share) {
		bg_reply(conn, -EDQUOT,
			 "this client holds its share (half) of the machine's background runs");
		goto out;
	}
	if (w->max_per_session && session_n >= w->max_per_session) {
		bg_reply(conn, -EDQUOT, "too many background runs in this session");
		goto out;
	}
	if (unavailable[0]) {
		char m[sizeof unavailable + 40];

		snprintf(m, sizeof m, "no background slot can be opened: %s", unavailable);
		sbx_log("event=bg_refused reason=\"%s\"", m);
		bg_reply(conn, -EAGAIN, m);
		goto out;
	}
	if (live >= machine_cap || !b) {
		bg_reply(conn, -EAGAIN, "the machine's background runs are all taken");
		goto out;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
		bg_reply(conn, -errno, "socketpair failed");
		goto out;
	}
	memset(b, 0, sizeof *b);
	memcpy(b->id, w->id, SBX_RUN_ID_LEN);
	memcpy(b->owner, w->owner, strnlen(w->owner, sizeof b->owner - 1));
	memcpy(b->session, w->session, strnlen(w->session, sizeof b->session - 1));
	b->sock = -1;
	b->in_use = 1;
	pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
			_exit(0);
		keep_only_fds(conn, pair[1], fds, nfds);
		/* A keeper serves one client's background run (its output, long-polls): the least
		 * of the machine's work, so it takes the CPU last, like the run's own slot (a low
		 * weight group): the pool's other clients never wait behind a keeper. */
		if (setpriority(PRIO_PROCESS, 0, KEEPER_NICE) < 0)
			_exit(1);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		/* The background slots' socket is root's alone (0600): the keeper connects before
		 * it drops root, so nothing else (not the pool's handlers, which share its uid) can
		 * reach those slots. */
		slot_conn = sbx_client_connect(bg_socket);
		if (slot_conn < 0) {
			bg_reply(conn, errno == EAGAIN ? -EAGAIN : -EIO,
				 "the background slots cannot be reached");
			_exit(1);
		}
		/* A keeper is only a client of the broker: it runs as the service's uid, like the
		 * callers it stands in for (fail closed: no keeper otherwise). Changing ids clears
		 * the parent-death signal: set it again. */
		if (setgroups(0, NULL) < 0 || setresgid(keeper_gid, keeper_gid, keeper_gid) < 0 ||
		    setresuid(keeper_uid, keeper_uid, keeper_uid) < 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent) {
			bg_reply(conn, -EPERM, "the keeper cannot drop its privileges");
			_exit(1);
		}
		keeper_main(b, pair[1], conn, slot_conn, h, w, strings, fds, nfds);
	}
	close(pair[1]);
	if (pid < 0) {
		close(pair[0]);
		b->in_use = 0;
		bg_reply(conn, -errno, "fork failed");
		goto out;
	}
	fcntl(pair[0], F_SETFL, O_NONBLOCK);
	b->sock = pair[0];
	b->keeper = pid;
	sbx_log("event=bg_start run=%.8s keeper=%d", b->id, (int)pid);
out:
	free(strings);
}

static void list(int conn, const struct sbx_wire_run *w)
{
	struct sbx_wire_bg_res r;
	struct sbx_run_info *infos = calloc(table_max ? table_max : 1, sizeof *infos);
	unsigned i, n = 0;

	if (!infos) {
		bg_reply(conn, -ENOMEM, "out of memory");
		return;
	}
	for (i = 0; i < table_max; i++) {
		if (!table[i].in_use || table[i].gone || strcmp(table[i].owner, w->owner) != 0 ||
		    (w->session[0] && strcmp(table[i].session, w->session) != 0))
			continue;
		fill_info(&table[i], &infos[n++]);
	}
	memset(&r, 0, sizeof r);
	r.magic = SBX_WIRE_MAGIC;
	sbx_wire_res_init(&r.result);
	r.count = n;
	if (sbx_write_all(conn, &r, sizeof r) == 0 && n)
		(void)sbx_write_all(conn, infos, n * sizeof *infos);
	free(infos);
}

void sbx_bg_serve(int conn, const struct sbx_wire_req *h, int *fds, int nfds)
{
	struct {
		struct sbx_wire_req h;
		struct sbx_wire_run w;
	} m;
	struct bg *b;

	if (sbx_wire_recv_run(conn, h, &m.w) != SBX_WIRE_OK) {
		bg_reply(conn, -EINVAL, "malformed run request");
		return;
	}
	if (!table) {
		bg_reply(conn, -EAGAIN, "background runs are disabled on this broker");
		return;
	}
	if (h->op == SBX_OP_RUN_START) {
		start(conn, h, &m.w, fds, nfds);
		return;
	}
	if (h->op == SBX_OP_RUN_LIST) {
		list(conn, &m.w);
		return;
	}
	b = find(m.w.id, m.w.owner);
	if (!b || b->gone || b->keeper <= 0 || b->sock < 0) {
		bg_reply(conn, -ENOENT, "no such run");
		return;
	}
	m.h = *h;
	/* a KILL forgets the run now: a second KILL, a status or a long-poll after it is "no such
	 * run" from here, never handed to a keeper that is leaving */
	if (h->op == SBX_OP_RUN_KILL)
		b->gone = 1;
	if (sbx_send_fds(b->sock, &m, sizeof m, &conn, 1) < 0) {
		b->gone = 0;
		bg_reply(conn, -EAGAIN, "the run's keeper is busy, retry");
	}
}

bool sbx_bg_reaped(pid_t pid)
{
	unsigned i;

	for (i = 0; table && i < table_max; i++) {
		if (!table[i].in_use || table[i].keeper != pid)
			continue;
		if (table[i].sock >= 0)
			close(table[i].sock);
		table[i].sock = -1;
		table[i].keeper = 0;
		table[i].in_use = 0;
		return true;
	}
	return false;
}

void sbx_bg_stop_all(void)
{
	unsigned i;

	for (i = 0; table && i < table_max; i++)
		if (table[i].in_use && table[i].keeper > 0)
			kill(table[i].keeper, SIGKILL);
	for (i = 0; table && i < table_max; i++)
		if (table[i].in_use && table[i].keeper > 0 &&
		    waitpid(table[i].keeper, NULL, 0) == table[i].keeper)
			sbx_bg_reaped(table[i].keeper);
}
