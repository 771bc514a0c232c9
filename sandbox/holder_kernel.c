/* holder_kernel.c: a context's kernel in its sandbox, for the holder (holder.c): built as a run's
 * (sbx_slot_prewarm), the kernel handed to its init as the program with its control socket as
 * fd 3 and the context's life limits set once in its cgroup, then waited for until it says ready;
 * and killed with everything of it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holder.h"

/* ---- the kernel: started in a fresh sandbox, killed with it ---- */

void sbx_holder_kernel_kill(struct holder *H)
{
	struct sbx_cg_stats st;

	if (H->slot->w.pidfd >= 0)
		ep_del(H, H->slot->w.pidfd);
	if (H->slot->w.ready || H->slot->w.pidfd >= 0) {
		sbx_warm_discard(H->slot);
		sbx_cg_finish(H->slot->cg, &st, NULL, 0);
	}
	sbx_close_fd(&H->ctl);
	H->up = false;
	H->generation++;
	H->st->execution_count = 0;
	H->st->memory_kb = 0;
}

/* The session directory as a detached idmapped mount, as for runs (run.c: attach_files). */
static int work_tree(struct holder *H, char *err, size_t errlen)
{
	struct mount_attr attr;
	int tree = (int)syscall(SYS_open_tree, H->workdir, "",
				OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);

	if (tree < 0) {
		sbx_set_error(err, errlen, "clone work directory mount: %s", strerror(errno));
		return -1;
	}
	memset(&attr, 0, sizeof attr);
	attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
	attr.userns_fd = (uint64_t)H->slot->idmap_userns;
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) {
		sbx_set_error(err, errlen, "idmap work directory: %s", strerror(errno));
		close(tree);
		return -1;
	}
	return tree;
}

/* The kernel exited before it was ready: say so, with the start of what it wrote on stderr (a
 * missing kernel file, a broken install), for the operator. */
static void kernel_said(struct holder *H, char *err, size_t errlen)
{
	char buf[160];
	ssize_t n;
	size_t i;

	fcntl(H->slot->w.errout_r, F_SETFL, O_NONBLOCK);
	n = read(H->slot->w.errout_r, buf, sizeof buf - 1);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	for (i = 0; i < (size_t)n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == '"' || buf[i] == 0x7f)
			buf[i] = ' ';
	sbx_set_error(err, errlen, "the kernel exited before it was ready%s%s", n ? ": " : "", buf);
}

/* Wait for the kernel's first line ({"op":"ready"}) on ctl, or the init's death or error report.
 */
static int await_kernel(struct holder *H, char *err, size_t errlen)
{
	struct warm *w = &H->slot->w;
	uint64_t end = sbx_now_ms() + START_TIMEOUT_MS;
	char line[256];
	size_t len = 0;

	for (;;) {
		struct pollfd pf[4] = {{H->ctl, POLLIN, 0},
				       {w->pidfd, POLLIN, 0},
				       {w->err_r, POLLIN, 0},
				       {H->sigfd, POLLIN, 0}};
		uint64_t now = sbx_now_ms();
		int n;

		if (now >= end) {
			sbx_set_error(err, errlen, "the kernel did not start within %u s",
				      START_TIMEOUT_MS / 1000);
			return -1;
		}
		n = poll(pf, 4, (int)(end - now));
		if (n < 0 && errno != EINTR) {
			sbx_set_error(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		if (n <= 0)
			continue;
		if (pf[3].revents & POLLIN) {
			/* a stop must not wait for a kernel that is slow to start */
			H->stopping = true;
			sbx_set_error(err, errlen, "the broker is stopping");
			return -1;
		}
		if (pf[2].revents & POLLIN) {
			struct sbx_child_error ce;

			if (read(w->err_r, &ce, sizeof ce) == (ssize_t)sizeof ce) {
				ce.step[sizeof ce.step - 1] = '\0';
				sbx_set_error(err, errlen, "sandbox setup failed: %s: %s", ce.step,
					      strerror(ce.err));
				return -1;
			}
		}
		if (pf[0].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(H->ctl, line + len, sizeof line - 1 - len);

			if (k > 0) {
				len += (size_t)k;
				line[len] = '\0';
				if (memchr(line, '\n', len)) {
					if (strstr(line, "\"ready\""))
						return 0;
					sbx_set_error(err, errlen, "the kernel did not say ready");
					return -1;
				}
				if (len == sizeof line - 1) {
					sbx_set_error(err, errlen,
						      "the kernel's first line is too long");
					return -1;
				}
				continue;
			}
			if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
				kernel_said(H, err, errlen);
				return -1;
			}
		}
		if (pf[1].revents & POLLIN) {
			kernel_said(H, err, errlen);
			return -1;
		}
	}
}

/* A fresh sandbox with the kernel running in it: 0, or -1 with err filled (nothing left). */
int sbx_holder_kernel_start(struct holder *H, char *err, size_t errlen)
{
	static const char *const langs[] = {NULL, "python", "bash"};
	const char *argv[] = {SBX_CTX_PYTHON_BIN, SBX_CTX_KERNEL, langs[H->lang], NULL};
	struct sbx_request req;
	struct sbx_job job;
	struct warm *w = &H->slot->w;
	char *strings = NULL;
	int pair[2] = {-1, -1}, tree = -1, rc = -1;

	sbx_holder_kernel_kill(H);
	if (sbx_slot_prewarm(H->slot, err, errlen) < 0)
		goto out;
	/* The holder is never the OOM killer's choice (sbx_holder_main); its sandbox must be, or a
	 * cell at its memory limit would stall instead of being killed. Fail closed. */
	{
		char path[64];
		int e;

		snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)w->pid);
		if ((e = sbx_write_file(path, "0")) < 0) {
			sbx_set_error(err, errlen, "oom_score_adj of the sandbox: %s",
				      strerror(-e));
			goto out;
		}
	}
	memset(&req, 0, sizeof req);
	memset(&job, 0, sizeof job);
	req.argv = argv;
	job.limits = H->life;
	strings = sbx_job_serialize(&req, &job);
	if (!strings) {
		sbx_set_error(err, errlen, "out of memory");
		goto out;
	}
	if ((tree = work_tree(H, err, errlen)) < 0)
		goto out;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) {
		sbx_set_error(err, errlen, "control socket: %s", strerror(errno));
		goto out;
	}
	job.has_tree = 1;
	job.has_ctl = 1;
	/* The limits hold for the kernel's whole life: set once, here. */
	if (sbx_cg_prepare(H->slot->cg, &H->life, err, errlen) < 0)
		goto out;
	{
		int fds[2] = {tree, pair[1]};

		if (sbx_send_fds(w->ctl, &job, sizeof job, fds, 2) < 0 ||
		    sbx_write_all(w->ctl, strings, job.strings_len) < 0) {
			sbx_set_error(err, errlen, "hand the kernel to the sandbox: %s",
				      strerror(errno));
			goto out;
		}
	}
	sbx_close_fd(&w->ctl);
	sbx_close_fd(&pair[1]);
	H->ctl = pair[0];
	pair[0] = -1;
	if (await_kernel(H, err, errlen) < 0)
		goto out;
	fcntl(H->ctl, F_SETFL, O_NONBLOCK);
	fcntl(w->out_r, F_SETFL, O_NONBLOCK);
	fcntl(w->errout_r, F_SETFL, O_NONBLOCK);
	/* What the kernel printed while it started is no cell's output. */
	{
		char junk[4096];

		while (read(w->out_r, junk, sizeof junk) > 0) {
		}
		while (read(w->errout_r, junk, sizeof junk) > 0) {
		}
	}
	H->carry_out_len = H->carry_err_len = 0;
	ep_add(H, w->pidfd, EPOLLIN);
	H->up = true;
	H->oom_seen = 0; /* counted from sbx_cg_prepare (v1) or in a fresh group (v2) */
	H->st->execution_count = 0;
	rc = 0;
out:
	free(strings);
	sbx_close_fd(&tree);
	sbx_close_fd(&pair[0]);
	sbx_close_fd(&pair[1]);
	if (rc < 0)
		sbx_holder_kernel_kill(H);
	return rc;
}

uint64_t sbx_holder_memory_kb(struct holder *H)
{
	uint64_t b = 0;

	if (!H->up || sbx_cg_anon(H->slot->cg, &b) < 0)
		return 0;
	return b / 1024;
}

/* Kill the sandbox and wait until its init is gone (not reaped: kernel_kill does that). The init's
 * exit waits for every process of its pid namespace, so no writer of the pipes is left. */
void sbx_holder_sandbox_stop(struct holder *H)
{
	siginfo_t si;

	if (H->slot->w.pidfd < 0)
		return;
	syscall(SYS_pidfd_send_signal, H->slot->w.pidfd, SIGKILL, NULL, 0);
	while (syscall(SYS_waitid, P_PIDFD, H->slot->w.pidfd, &si, WEXITED | WNOWAIT, NULL) < 0 &&
	       errno == EINTR) {
	}
}
