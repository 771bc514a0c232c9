/* context.c: contexts in sbxd's main process: the table, admission, routing to holders (see the
 * theory of operation in context.h). Nothing here waits for a holder or a kernel: a request is
 * answered from the table, or handed over with its connection in one non-blocking send. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "context.h"

static struct sbx_ctx_config conf;
static struct sbx_ctx_state *table; /* conf.max entries, shared with the holders */

int sbx_ctx_init(const struct sbx_ctx_config *cc, char *err, size_t errlen)
{
	unsigned i;

	conf = *cc;
	if (conf.max == 0)
		return 0;
	table = mmap(NULL, conf.max * sizeof *table, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (table == MAP_FAILED) {
		table = NULL;
		sbx_set_error(err, errlen, "contexts table: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < conf.max; i++)
		table[i].sock = -1;
	return sbx_cg_make_parent(conf.cgroup_name, conf.memory_bytes, err, errlen);
}

static void reply(int conn, int rc, const char *message)
{
	struct sbx_wire_ctx_res r;

	sbx_wire_ctx_res_init(&r, rc, message);
	(void)sbx_wire_send_ctx_res(conn, &r, NULL, NULL);
}

/* The live context with this id. One that is ending (deleted, idle, stopping) no longer counts:
 * its holder may still be cleaning up, and a caller that was told ENOENT recreates the context at
 * once, under another index; the old entry still counts against the caps until it is reaped. */
static struct sbx_ctx_state *find(const char *id)
{
	unsigned i;

	for (i = 0; table && i < conf.max; i++)
		if (table[i].in_use && !table[i].closing && !table[i].ended &&
		    strcmp(table[i].id, id) == 0)
			return &table[i];
	return NULL;
}

static void list(int conn, const struct sbx_wire_ctx *c)
{
	struct sbx_ctx_info *info = NULL;
	struct sbx_wire_ctx_res r;
	unsigned i, n = 0;

	if (conf.max)
		info = calloc(conf.max, sizeof *info);
	if (conf.max && !info) {
		reply(conn, -ENOMEM, "out of memory");
		return;
	}
	for (i = 0; i < conf.max; i++) {
		struct sbx_ctx_state *s = &table[i];

		if (!s->in_use || s->closing || s->ended || s->holder <= 0 ||
		    (c->owner[0] && strcmp(s->owner, c->owner) != 0))
			continue;
		memcpy(info[n].id, s->id, sizeof info[n].id);
		memcpy(info[n].owner, s->owner, sizeof info[n].owner);
		info[n].language = (enum sbx_ctx_lang)s->language;
		info[n].busy = s->busy != 0;
		info[n].memory_kb = s->memory_kb;
		info[n].created_ms = s->created_ms;
		info[n].last_used_ms = s->last_used_ms;
		info[n].execution_count = s->execution_count;
		n++;
	}
	sbx_wire_ctx_res_init(&r, 0, NULL);
	r.count = n;
	{
		const void *parts[3] = {info, NULL, NULL};
		uint64_t len[3] = {(uint64_t)n * sizeof *info, 0, 0};

		(void)sbx_wire_send_ctx_res(conn, &r, parts, len);
	}
	free(info);
}

/* Admission, atomically here (one process decides): id free, the owner's cap, machine cap,
 * memory budget. Then a holder is forked; it answers the create itself. */
static void create(int conn, const struct sbx_wire_req *h, const struct sbx_wire_ctx *c, int dir)
{
	struct sbx_limits lim = h->limits;
	uint64_t mem = 0;
	unsigned i, owned = 0, used = 0, slot = conf.max;
	int pair[2] = {-1, -1};
	pid_t pid;

	sbx_limits_defaults(&lim);
	if (find(c->id)) {
		reply(conn, -EEXIST, "a context with this id exists");
		return;
	}
	for (i = 0; i < conf.max; i++) {
		if (!table[i].in_use) {
			if (slot == conf.max)
				slot = i;
			continue;
		}
		used++;
		mem += table[i].memory_kb << 10;
		/* the owner's cap is policy: only live contexts count (one ending is already gone
		 * for its owner); the machine's caps count every sandbox that still exists */
		if (!table[i].closing && !table[i].ended && strcmp(table[i].owner, c->owner) == 0)
			owned++;
	}
	if (c->max_per_owner && owned >= c->max_per_owner) {
		reply(conn, -EDQUOT, "this client has as many contexts as it may");
		return;
	}
	if (slot == conf.max || used >= conf.max) {
		reply(conn, -EAGAIN, "every context of this machine is taken");
		return;
	}
	/* The budget is what contexts hold (as of their last call), not their limits: idle ones
	 * are small, and the parent group's limit holds them all together whatever they do. A new
	 * one needs room to start. */
	if (mem + SBX_CTX_START_BYTES > conf.memory_bytes) {
		reply(conn, -EAGAIN, "the contexts' memory budget is full");
		return;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
		reply(conn, -errno, "socketpair failed");
		return;
	}
	{
		struct sbx_ctx_state *s = &table[slot];

		memset((void *)s, 0, sizeof *s);
		memcpy(s->id, c->id, SBX_CTX_ID_LEN);
		snprintf(s->owner, sizeof s->owner, "%s", c->owner);
		s->language = (int)c->language;
		s->memory_bytes = lim.memory_bytes;
		s->created_ms = s->last_used_ms = sbx_realtime_ms();
		s->sock = -1;
		s->in_use = 1;
	}
	pid = fork();
	if (pid == 0) {
		const pid_t parent = getppid();
		int keep[4] = {conn, dir, pair[1], 2}, k;

		/* Dies with the broker (SIGTERM: it cleans up). */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) < 0 || getppid() != parent)
			_exit(0);
		/* Nothing of the main process but what this context needs: move the three to
		 * 3, 4, 5 (above any of them), then close everything above. */
		for (k = 0; k < 3; k++)
			keep[k] = fcntl(keep[k], F_DUPFD_CLOEXEC, 64);
		for (k = 0; k < 3; k++)
			if (keep[k] < 0 || dup3(keep[k], 3 + k, O_CLOEXEC) < 0)
				_exit(1);
		syscall(SYS_close_range, 6, ~0U, 0);
		sbx_holder_main(&conf, slot, &table[slot], h, c, 3, 4, 5);
	}
	close(pair[1]);
	if (pid < 0) {
		table[slot].in_use = 0;
		close(pair[0]);
		reply(conn, -errno, "fork failed");
		return;
	}
	table[slot].holder = pid;
	table[slot].sock = pair[0];
	sbx_log("event=context_create context=%.8s owner=%s holder=%d index=%u", c->id, c->owner,
		(int)pid, slot);
}

/* Hand conn to the holder with the request; never waits (the pair's queue is the holder's). */
static void forward(int conn, struct sbx_ctx_state *s, const struct sbx_wire_req *h,
		    const struct sbx_wire_ctx *c)
{
	struct sbx_ctx_fwd f;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&f, sizeof f};
	struct msghdr msg;
	struct cmsghdr *cm;

	memset(&f, 0, sizeof f);
	f.h = *h;
	f.c = *c;
	memset(&msg, 0, sizeof msg);
	memset(cbuf, 0, sizeof cbuf);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof cbuf;
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &conn, sizeof conn);
	if (sendmsg(s->sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof f) {
		if (errno == EAGAIN)
			reply(conn, -EBUSY, "the context is busy");
		else
			reply(conn, -ENOENT, "no such context");
		return;
	}
	if (h->op == SBX_OP_CTX_DELETE)
		s->closing = 1;
}

void sbx_ctx_serve(int conn, const struct sbx_wire_req *h, const int *fds, int nfds)
{
	struct sbx_wire_ctx c;
	struct sbx_ctx_state *s;
	enum sbx_wire_err e = sbx_wire_recv_ctx(conn, h, &c);

	if (e != SBX_WIRE_OK) {
		sbx_log("event=reject socket=control reason=bad_context_request error=%s",
			sbx_wire_strerror(e));
		reply(conn, -EINVAL, "malformed context request");
		return;
	}
	if (!table) {
		reply(conn, -EAGAIN, "contexts are disabled on this broker (--contexts 0)");
		return;
	}
	switch (h->op) {
	case SBX_OP_CTX_LIST:
		list(conn, &c);
		return;
	case SBX_OP_CTX_CREATE:
		if (nfds != 1) {
			reply(conn, -EINVAL, "no work directory");
			return;
		}
		create(conn, h, &c, fds[0]);
		return;
	default:
		s = find(c.id);
		if (!s || s->sock < 0) {
			reply(conn, -ENOENT, "no such context");
			return;
		}
		forward(conn, s, h, &c);
	}
}

bool sbx_ctx_reaped(pid_t pid, int status)
{
	unsigned i;

	for (i = 0; table && i < conf.max; i++) {
		if (!table[i].in_use || table[i].holder != pid)
			continue;
		sbx_log("event=context_end context=%.8s holder=%d status=%d", table[i].id, (int)pid,
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		if (table[i].sock >= 0)
			close(table[i].sock);
		table[i].sock = -1;
		table[i].holder = 0;
		table[i].in_use = 0;
		return true;
	}
	return false;
}

void sbx_ctx_stop_all(void)
{
	unsigned i;

	for (i = 0; table && i < conf.max; i++)
		if (table[i].in_use && table[i].holder > 0)
			kill(table[i].holder, SIGTERM);
	for (i = 0; table && i < conf.max; i++) {
		int status;

		if (!table[i].in_use || table[i].holder <= 0)
			continue;
		if (waitpid(table[i].holder, &status, 0) == table[i].holder)
			sbx_ctx_reaped(table[i].holder, status);
	}
	if (conf.max)
		sbx_cg_remove_tree(conf.cgroup_name);
}
