/* internal.h: private interfaces between the sandbox library's files. Not installed. */
#ifndef SBX_INTERNAL_H
#define SBX_INTERNAL_H

#include <linux/filter.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

#include "sandbox.h"

/* Where the new root is assembled, inside the private mount ns. A directory of its own (made by
 * sbx_slot_open), so the tmpfs mounted there hides no bind source (e.g. anything under /tmp). */
#define SBX_STAGE "/run/sbx-stage"
/* How long a slot keeps its template root before building it again (slot.c). */
#define SBX_TEMPLATE_MAX_AGE_S 30.0

#define SBX_NICE 10	    /* programs run below the service's own processes */
#define SBX_SIGPENDING 1024 /* RLIMIT_SIGPENDING of a run (child.c) */
#define SBX_NPROC_SLACK 8   /* RLIMIT_NPROC = the run's task limit + this (child.c) */

/* ---- failures reported by the child over the close-on-exec error pipe ---- */
struct sbx_child_error {
	int err;	/* errno */
	char step[120]; /* what failed, e.g. "mount /usr" */
};

/* ---- a job: what one request adds to a prepared sandbox, sent over the control socket ---- */
struct sbx_job {
	struct sbx_limits limits;
	uint32_t argc, envc;
	uint32_t strings_len; /* argc + envc NUL-terminated strings follow the header */
	uint32_t has_tree;    /* descriptors attached: the work tree, then stdin, then ctl */
	uint32_t has_stdin;
	uint32_t has_ctl; /* a context's kernel: its control socket becomes fd 3, and no RLIMIT_CPU
			     backstop (the holder limits CPU per cell, the kernel lives on) */
	uint32_t has_layer; /* after the others: a read-only detached mount for SBX_LAYER_DIR */
};

/* ---- everything the child needs, prepared by the parent before clone (no allocation after) ----
 */
struct sbx_child_args {
	int ctl_fd;    /* control socket: the job arrives here once the sandbox is built */
	int sync_fd;   /* read end: the parent writes one byte once the id maps are in place */
	int err_fd;    /* write end of the error pipe (close-on-exec) */
	int status_fd; /* write end: init reports the main child's wait status */
	int out_fd, err_out_fd; /* write ends of the capture pipes */
	const struct sock_fprog *filter;
	const struct sock_fprog *ioctl_filter;
	const struct sbx_bind *binds;
	size_t nbinds;
	uint64_t tmp_bytes; /* size /tmp and /dev/shm were built with */
	/* warm.c: pre-start the interpreter with these options (and this hint), or not at all */
	bool warm;
	unsigned warm_opts;
	const char *warm_hint;
	const char *const *zyg_argv; /* zygote.c: the zygote's command line, made by the parent */
	char tmp_opts[96];	     /* tmpfs options for /tmp, formatted by the parent */
	char shm_opts[96];
};

/* ---- warm starts (warm.c) ---- */
#define SBX_WARM_PYTHON "/usr/bin/python3"
#define SBX_WARM_OPT_U 1u
#define SBX_WARM_OPT_S 2u
#define SBX_WARM_OPT_B 4u
#define SBX_WARM_NODE "/usr/bin/node"
#define SBX_WARM_OPT_NODE 8u /* a node run (no options): the stub is sandbox/warm_stub.js */
/* The environment the interpreter is pre-started with (run.c's base environment). */
extern const char *const sbx_warm_env[];
/* A job the pre-started interpreter can run: returns the index of the script (or of "-c") in
 * argv and fills opts, or -1 (then the job starts cold). Async-signal-safe. */
int sbx_warm_parse(char *const *argv, char *const *envp, unsigned *opts);
/* The pre-start command line into argv (room for 8 entries). */
void sbx_warm_argv(unsigned opts, const char *hint, const char **argv);

/* zygote.c: a slot keeps up to SBX_ZYGOTES zygotes (one per option set among -u -S -B), each
 * preloading up to SBX_ZYGOTE_HINTS hinted scripts. */
#define SBX_ZYGOTES 2
#define SBX_ZYGOTE_HINTS 4
/* zygote.c: the zygote's command line into argv (room for 8 + SBX_ZYGOTE_HINTS entries). */
void sbx_zygote_argv(unsigned opts, const char *const *hints, unsigned nhints, const char **argv);
/* zygote.c: a sealed memfd holding the zygote's per-run chain (zyg_spawn.c). fd or -errno. */
int sbx_zyg_spawn_memfd(void);
/* Runs in the child of the zygote's clone3 (zygote.c): becomes the zygote. Never returns. */
void sbx_zygote_main(const struct sbx_child_args *a) __attribute__((noreturn));

/* ---- between clone and execve (child.c, child_template.c, child_warm.c, zygote.c) ----
 * Async-signal-safe only: no malloc, no stdio. A failure is reported over a->err_fd. */
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif
/* Runs in the child of clone3 (PID 1 of the new namespaces). Never returns. */
void sbx_child_main(const struct sbx_child_args *a) __attribute__((noreturn));
/* Runs in a forked helper (root): builds the slot's template root in a new mount namespace,
 * writes 'r' to ctl_fd, then waits for EOF there and exits. Failures go to err_fd
 * (child_template.c). */
void sbx_template_main(const struct sbx_child_args *a) __attribute__((noreturn));
/* child.c: src into dst (len bytes, always NUL-terminated; NULL copies as ""). */
void sbx_child_copy_str(char *dst, size_t len, const char *src);
/* child.c: report "step detail" and errno as a struct sbx_child_error on a->err_fd, _exit(127). */
void sbx_child_die(const struct sbx_child_args *a, const char *step, const char *detail)
    __attribute__((noreturn));
/* child.c: close every descriptor but a's own pipes and sockets. */
void sbx_child_close_others(const struct sbx_child_args *a);
/* child.c: a clone3 child's first steps in its user namespace: no signal blocked, wait for the
 * parent's byte on a->sync_fd (the id maps are written; _exit(127) if it never comes), then the
 * inside uid with the namespace's capabilities effective (and inheritable if asked). */
void sbx_child_become_inside(const struct sbx_child_args *a, bool inheritable);
/* child.c: nice ourselves to SBX_NICE (never less nice than now); dies on failure. */
void sbx_child_yield_cpu(const struct sbx_child_args *a);
/* child.c: the job's rlimits on process pid (0: ourselves), RLIMIT_CPU only if cpu. NULL, or the
 * name of the one that failed (errno set). */
const char *sbx_child_job_rlimits(pid_t pid, const struct sbx_limits *l, bool cpu);
/* child.c: become the program (stdio, limits, credentials, seccomp, execve). l is NULL for a
 * pre-started interpreter; ctl >= 0 becomes fd 3. Never returns. */
void sbx_child_exec(const struct sbx_child_args *a, const struct sbx_limits *l, int in, int ctl,
		    char *const *argv, char *const *envp) __attribute__((noreturn));
/* child_warm.c: fork the pre-started program (a->warm_opts); its pid with *sock its control
 * socket, or -1 (the job starts cold). */
pid_t sbx_child_warm_prestart(const struct sbx_child_args *a, int *sock);
/* child_warm.c: hand the received job (header, its strings, argv and envp pointing into them)
 * and stdin `in` to the pre-started program pid over sock. 0, or -1 (start cold instead). */
int sbx_child_warm_handover(const struct sbx_child_args *a, pid_t pid, int sock, int in,
			    const struct sbx_job *job, const char *strings, char *const *argv,
			    char *const *envp);

/* ---- seccomp (seccomp.c) ---- */
/* Build the filter once; returns 0 or -1 with err filled. prog->filter is malloc'ed. */
int sbx_seccomp_build(struct sock_fprog *prog, char *err, size_t errlen);
/* The second filter: refused ioctl requests (allow-by-default, stacked on the first). */
int sbx_seccomp_build_ioctl(struct sock_fprog *prog, char *err, size_t errlen);

/* ---- cgroups (cgroup.c) ---- */
struct sbx_cgroup;
struct sbx_cg_stats {
	uint64_t cpu_ns;
	uint64_t peak_bytes;
	uint64_t oom_kills;
};
/* Detect v1/v2 and create slot `index` under `name`. On v1 moves the caller into the slot. */
struct sbx_cgroup *sbx_cg_open(const char *name, unsigned index, char *err, size_t errlen);
void sbx_cg_close(struct sbx_cgroup *cg);
int sbx_cg_version(const struct sbx_cgroup *cg);
/* Before a sandbox is built: the fd to clone into (v2), -1 (v1: the slot process is already in
 * its groups), or -2 on failure with err filled. */
int sbx_cg_prewarm(struct sbx_cgroup *cg, char *err, size_t errlen);
/* When the job starts: set its limits, reset the counters. 0 or -1 with err filled. */
int sbx_cg_prepare(struct sbx_cgroup *cg, const struct sbx_limits *lim, char *err, size_t errlen);
/* CPU time used so far by the run, ns. */
int sbx_cg_cpu(struct sbx_cgroup *cg, uint64_t *ns);
/* Anonymous memory the run holds now (not page cache), bytes. 0 or -errno. */
int sbx_cg_anon(struct sbx_cgroup *cg, uint64_t *bytes);
/* After the run's init is dead: kill leftovers, wait for empty, read the counters, clean up. */
int sbx_cg_finish(struct sbx_cgroup *cg, struct sbx_cg_stats *st, char *err, size_t errlen);
/* OOM kills counted in the run's group since sbx_cg_prepare. 0 or -errno. */
int sbx_cg_oom_kills(struct sbx_cgroup *cg, uint64_t *n);
/* The contexts' parent group `name` with a memory limit for all of them together; stale groups
 * of a previous broker under it removed first. 0 or -1 with err filled. */
int sbx_cg_make_parent(const char *name, uint64_t memory_bytes, char *err, size_t errlen);
/* Remove a stopped pool's groups named `name` from every hierarchy (best effort). */
void sbx_cg_remove_tree(const char *name);
/* cgroup v2 in a delegated subtree (systemd's Delegate=yes): move this process into
 * <own group>/supervisor, so the group itself can hold the slots' groups. The broker calls it
 * once before forking its slots. No-op on v1 or at the hierarchy's root. */
int sbx_cg_enter_supervisor(char *err, size_t errlen);
/* Probe: which version is usable, in words. */
int sbx_cg_probe(char *detail, size_t len);
/* CPU weight of a pool of slots: the group `name` (the pool's cgroup name) gets the weight
 * v1_shares (cgroup v1: cpu.shares in the cpu hierarchy) or v2_weight (v2: cpu.weight, the cpu
 * controller enabled for the service's subtree) against its siblings, and the calling slot process
 * joins <name>/slotN in it (v1: so every sandbox it forks inherits it; v2: its runs are born in
 * <name>/slotN/run already, sbx_cg_open), one share per slot inside: whatever a run setsid()s,
 * it is outside the kernel's autogroups. Call after sbx_cg_open. 0, or -1 with err filled (no cpu
 * controller, say). Background slots: the low weight below; foreground slots: one default share
 * per slot for the pool, so the service as a whole weighs what its runs did in autogroups. */
/* per background slot: the background pool as a whole weighs 1/16 of as many foreground slots
 * (16 background slots: one nice-0 task's share), low but never starved outright */
#define SBX_BG_CPU_SHARES 64 /* v1, per background slot; a nice-0 task's is 1024 */
#define SBX_BG_CPU_WEIGHT 6  /* v2, per background slot; the default is 100 */
int sbx_cg_join_cpu(const char *name, unsigned index, unsigned v1_shares, unsigned v2_weight,
		    char *err, size_t errlen);
/* cgroup.c, for cgroup_cpu.c: the host's cgroup version (0 none, 1, 2) with the v2 mount; a
 * directory b made under a (out filled; 0 or -errno); the v2 service root (entered or not; 0,
 * or -1 with err filled); whether a space-separated list holds word. cgroup_cpu.c, for
 * cgroup.c: the v1 cpu hierarchy nested under our own group (0, or -ENOENT / -errno). */
int sbx_cg_detect(char *v2, size_t v2len);
int sbx_cg_mkdir2(const char *a, const char *b, char *out, size_t outlen);
int sbx_cg_v2_service_root(const char *mnt, bool enter, char *root, size_t rootlen, char *err,
			   size_t errlen);
bool sbx_cg_has_word(const char *list, const char *word);
int sbx_cg_v1_cpu_root(char *out, size_t outlen);

/* ---- a slot and its prepared sandbox (slot.c; run.c supervises its runs) ---- */
struct sbx_slot {
	struct sbx_config cfg;
	unsigned index;
	uid_t uid;
	gid_t gid;
	struct sbx_cgroup *cg;
	struct sock_fprog filter;
	struct sock_fprog ioctl_filter;
	int idmap_userns; /* user namespace mapping files_uid (on disk) -> the slot's uid */
	int netns;	  /* the slot's network namespace: runs are born in it (see make_netns) */
	int host_netns;	  /* ours, to return to after each clone3 */
	int tmpl_mnt;	  /* the template root's mount namespace: runs are born in copies of it */
	int host_mnt;	  /* our own mount namespace and working directory, to return to */
	int host_cwd;
	double tmpl_built;   /* when (monotonic s): rebuilt now and again to pick up host changes */
	bool tmpl_stale;     /* the host's interpreter or libraries changed: rebuild it first */
	double tmpl_max_age; /* SBX_TEMPLATE_MAX_AGE_S, or the environment's (tests) */
	/* warm.c: the form of the slot's last Python run, which the next sandbox pre-starts; the
	 * interpreter's identity when the prepared sandbox was built (a change discards it). */
	bool warm_on, warm_known;
	unsigned warm_opts;
	char warm_hint[256];
	char warm_sig[320];
	/* zygote.c: the slot's warm interpreters, one per interpreter option set it serves (least
	 * recently used replaced), each with the hints it preloads; which one the prepared sandbox
	 * below was forked from. */
	bool zyg_on;
	bool
	    zyg_eager; /* SBX_ZYGOTE=1: start one for a waiting job too (the one-run CLI's tests) */
	struct zygote {
		pid_t pid; /* 0: no process (the entry still remembers its form) */
		int pidfd, sock;
		bool used;  /* this entry holds a form */
		bool grown; /* a hint was added since the start: start again with the set */
		unsigned opts, runs;
		unsigned nhints; /* hints[0..nhints), least recently seen first */
		char hints[SBX_ZYGOTE_HINTS][256];
		char sig[320];
		double tmpl_built;
		uint64_t last; /* zyg_tick of its last use */
		bool learned;  /* started for a form other slots served, not yet this one */
	} z[SBX_ZYGOTES];
	/* zygote.c: this slot publishes the forms it serves to, and learns others' from, the
	 * broker's shared record (sbx_zyg_share_*): foreground slots only. */
	bool zshare;
	bool zshare_borrowed; /* warm_opts/warm_hint came from the record, not a run here */
	int64_t zshare_age_ms, zshare_retry_ms;
	uint64_t zyg_tick;
	unsigned zyg_starts; /* zygotes started by this slot (tests, SBX_ZYGOTE_DEBUG) */
	bool w_zygote;	     /* the prepared sandbox was forked from a zygote ... */
	unsigned w_zyg_opts; /* ... started with these options */
	bool zyg_skip;	  /* the next sandbox is a child.c one (the job did not fit the zygote's) */
	bool zyg_waiting; /* the next sandbox is for a job already waiting: start no zygote */
	long ncpu;
	/* The next sandbox, built ahead of time: namespaces, root, and an init waiting for a job.
	 */
	struct warm {
		bool ready;
		pid_t pid;
		int pidfd, ctl, err_r, status_r, out_r, errout_r;
	} w;
};
/* warm.c: remember a run's form for the next prepared sandbox; the interpreter's identity. */
void sbx_warm_note(struct sbx_slot *s, const char *const *argv, const char *const *env);
void sbx_warm_sig(char *buf, size_t len);

/* Drop the prepared sandbox (used or not): its init dies with its pid namespace. */
void sbx_warm_discard(struct sbx_slot *s);
/* slot.c, shared with zygote.c: a slot's steps around a clone3 into its namespaces. Back to our
 * own mount and network namespaces and working directory (aborts if that fails); euid of the
 * slot with capabilities effective for one clone3 (0 or -1), and back to root (aborts if that
 * fails); a clone3 child's uid/gid maps and per-namespace limits (the zygote's own namespace
 * holds its runs' namespaces: a few of those, not 0) (0 or -errno); a child's 'r' on ctl, else
 * its error report as "<what> failed: <step>: <error>" in err (0 or -1). */
void sbx_slot_return_home(const struct sbx_slot *slot);
int sbx_slot_own_as_slot(uid_t uid);
void sbx_slot_own_as_root(void);
int sbx_slot_write_maps(pid_t pid, uid_t uid, gid_t gid);
int sbx_slot_write_ns_limits(pid_t pid, bool zygote);
int sbx_slot_await_ready(int ctl, int err_r, const char *what, char *err, size_t errlen);
/* zygote.c: stop every zygote of the slot; prepare the slot's sandbox as a fork of the zygote
 * of its current form (slot->warm_opts; started if needed and may_start, i.e. no job waits: 0, or
 * -1 with err filled, and the caller prepares a child.c sandbox); whether the prepared sandbox can
 * take a job. */
void sbx_zygote_stop_all(struct sbx_slot *s);
int sbx_zygote_prewarm(struct sbx_slot *slot, bool may_start, char *err, size_t errlen);
bool sbx_zygote_fits(const struct sbx_slot *s, const char *const *argv, const char *const *env);
/* zygote.c: the forms (interpreter options and preload hints) a broker's slots served recently,
 * in memory shared across fork, so an idle slot starts zygotes for forms it has not served yet.
 * init: in the broker's main process before any slot is forked, for slots 0..slots (0 or -1
 * with errno); join: a slot takes part (foreground slots; SBX_ZYGOTE_SHARE=0: none); served:
 * after a run, its form published; idle: while the slot is idle, zygotes started or stopped
 * after the record (stops as soon as listen_fd is readable), returns how long the slot may wait
 * before it looks again (ms, -1: forever). */
/* zygote.c, for zyg_share.c: one zygote entry stopped (its prepared forks die with it),
 * started for the slot (0, or -1 with err filled), whether it is current (the host's signature
 * sig and the slot's template), and a hint noted as its most recent. */
void sbx_zygote_stop_one(struct zygote *z);
int sbx_zygote_start(struct sbx_slot *slot, struct zygote *z, char *err, size_t errlen);
bool sbx_zygote_current(const struct sbx_slot *slot, const struct zygote *z, const char *sig);
void sbx_zygote_note_hint(struct zygote *z, const char *hint);
int sbx_zyg_share_init(unsigned slots);
void sbx_zyg_share_join(struct sbx_slot *s);
void sbx_zyg_share_served(struct sbx_slot *s, const char *const *argv, const char *const *env);
int sbx_zyg_share_idle(struct sbx_slot *s, int listen_fd);
/* run.c, shared with the context holder: limits completed with the library's defaults, and a
 * job's argv and environment (the base environment of runs plus req->env) serialized into a
 * malloc'ed buffer (caller frees; NULL when too large or out of memory), job counts filled. */
void sbx_limits_defaults(struct sbx_limits *l);
char *sbx_job_serialize(const struct sbx_request *req, struct sbx_job *job);

/* Hooks into a run's supervision, for runs with live output, stdin and signals (runs.c). An
 * ordinary sbx_run() has none and pays nothing for them. */
struct run;
struct sbx_run_hooks {
	void *arg;
	int fds[3];	    /* descriptors the supervisor also watches (-1: none) */
	uint32_t events[3]; /* their first epoll events (0: not watched yet) */
	/* After output was read: the kept bytes of both streams so far (prefixes of the result). */
	void (*output)(void *arg, struct run *r, const char *out, size_t out_len, const char *err,
		       size_t err_len);
	/* fds[i] is ready with revents. */
	void (*ready)(void *arg, struct run *r, int i, uint32_t revents);
};
/* sbx_run() with hooks (NULL: exactly sbx_run()). */
int sbx_run_hooked(struct sbx_slot *slot, const struct sbx_request *req,
		   const struct sbx_run_hooks *hooks, struct sbx_result *res);
/* From a hook: watch hooks->fds[i] for events now (0: not at all). */
void sbx_run_watch(struct run *r, int i, uint32_t events);
/* From a hook: the kept bytes so far, as given to hooks->output. */
void sbx_run_kept(struct run *r, const char **out, size_t *out_len, const char **err,
		  size_t *err_len);
/* From a hook: send sig to every process of the run but its init (the program and what it
 * started). 0, or -ESRCH when the run has ended, other -errno on failure. */
int sbx_run_signal(struct run *r, int sig);
/* Send sig to every process of the slot's run group but `except` (cgroup.c). 0 or -errno. */
int sbx_cg_signal(struct sbx_cgroup *cg, int sig, pid_t except);
/* cgroup v1 (zygote.c): move pid into the slot's groups (into) or their parent's. 0 or -errno;
 * -ENOTSUP on v2. */
int sbx_cg_move(struct sbx_cgroup *cg, pid_t pid, bool into);

static inline void sbx_close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Connect to a broker socket without waiting in a full queue (EAGAIN then), blocking after
 * (client.c). The descriptor, or -1 with errno. */
int sbx_client_connect(const char *path);

/* ---- small helpers (util.c) ---- */
int sbx_write_file(const char *path, const char *data); /* 0 or -errno */
int sbx_write_fileat(int dirfd, const char *name, const char *data);
int sbx_read_fileat(int dirfd, const char *name, char *buf, size_t len); /* bytes or -errno */
/* Whole-buffer I/O, retrying short transfers and EINTR: 0, or -1 at EOF or error. */
int sbx_write_all(int fd, const void *buf, size_t len);
int sbx_read_all(int fd, void *buf, size_t len);
/* Send buf with up to 4 descriptors attached (SCM_RIGHTS). 0 or -1. */
int sbx_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds);
uint64_t sbx_now_ms(void);
uint64_t sbx_realtime_ms(void); /* wall clock, for what clients are shown */
/* One log line on stderr: "ts=... prog=sbxd pid=N <prefix><fmt>" (the broker's log format). */
void sbx_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sbx_logv(const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
uint64_t sbx_now_us(void);
void sbx_set_error(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
