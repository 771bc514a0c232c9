/* sandbox.h: run one untrusted command under full isolation and hard limits.
 *
 * The library knows nothing of HTTP or JSON. Two ways to run:
 *   - in-process, privileged (root): open a slot with sbx_slot_open() once, then sbx_run() many
 *     times on it, one run at a time per slot. Used by the broker (sbxd) and the sbx CLI.
 *   - through the broker, unprivileged: sbx_client_run() sends the same request over the broker's
 *     Unix socket and gets the same result back. Used by the FastCGI handlers, which never run as
 *     root.
 * A run either happens (any program outcome: status ok..output_limit, return 0) or the sandbox
 * failed (status SBX_INTERNAL_ERROR, message names the failed step, return negative). There is no
 * unconfined fallback. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sbx_status {
	SBX_OK = 0,	    /* exited 0 */
	SBX_ERROR,	    /* exited non-zero */
	SBX_SIGNAL,	    /* killed by a signal it caused itself (SIGSEGV...) */
	SBX_TIMEOUT,	    /* wall or CPU limit hit; see sbx_result.limit */
	SBX_MEMORY_LIMIT,   /* the memory cgroup limit killed something */
	SBX_OUTPUT_LIMIT,   /* a stream passed output_hard_bytes; run killed */
	SBX_INTERNAL_ERROR, /* the sandbox itself failed; see sbx_result.message */
};

enum sbx_limit_kind { SBX_LIMIT_NONE = 0, SBX_LIMIT_WALL, SBX_LIMIT_CPU };

/* Every field is a hard limit for one run. 0 means "use the library default" (SBX_DEFAULT_*). */
struct sbx_limits {
	uint64_t wall_ms;	    /* wall-clock time from start, milliseconds */
	uint64_t cpu_ms;	    /* CPU time of the whole process tree, milliseconds */
	uint64_t memory_bytes;	    /* cgroup memory limit (RAM, no swap), bytes */
	uint32_t processes;	    /* tasks (processes + threads) alive at once */
	uint64_t output_bytes;	    /* per stream, bytes kept; the rest is dropped and flagged */
	uint64_t output_hard_bytes; /* per stream, bytes written after which the run is killed */
	uint64_t file_size_bytes;   /* largest file the program may write (RLIMIT_FSIZE), bytes */
	uint32_t open_files;	    /* RLIMIT_NOFILE */
	uint64_t tmp_bytes;	    /* size of the private /tmp (and /dev/shm) tmpfs, bytes */
};

#define SBX_DEFAULT_WALL_MS 10000
#define SBX_DEFAULT_CPU_MS 5000
#define SBX_DEFAULT_MEMORY_BYTES (256ull << 20)
#define SBX_DEFAULT_PROCESSES 64
#define SBX_DEFAULT_OUTPUT_BYTES (64ull << 10)
#define SBX_DEFAULT_OUTPUT_HARD_BYTES (16ull << 20)
#define SBX_DEFAULT_FILE_SIZE_BYTES (16ull << 20)
#define SBX_DEFAULT_OPEN_FILES 256
#define SBX_DEFAULT_TMP_BYTES (64ull << 20)

#define SBX_MAX_ARGS 256		/* argv and env entries, each */
#define SBX_MAX_ARGS_BYTES (256u << 10) /* all argv and env strings together */

/* Inside the sandbox: the work directory is mounted read-write at SBX_WORK_DIR and is the current
 * directory and $HOME; the program runs as uid/gid SBX_INSIDE_UID ("user"). */
#define SBX_WORK_DIR "/work"
#define SBX_INSIDE_UID 1000

struct sbx_request {
	const char *const
	    *argv; /* NULL-terminated; argv[0] is an absolute path inside the sandbox */
	const char *const *env; /* NULL-terminated "KEY=VALUE" added to the base environment
				   (PATH, HOME, LANG, TMPDIR); may be NULL */
	int workdir_fd;		/* directory mounted read-write at /work (an O_PATH fd is enough),
				   or -1 for an empty private tmpfs; never followed by path */
	int stdin_fd;		/* regular file or memfd whose contents become stdin (read from
				   offset 0), or -1 for /dev/null */
	int cancel_fd;		/* -1, or a descriptor that turns readable (a client socket at EOF)
				   when the caller gives up: the run is then killed and reported
				   as internal_error. Not sent by sbx_client_run(). */
	struct sbx_limits limits;
};

struct sbx_result {
	enum sbx_status status;
	enum sbx_limit_kind limit; /* with SBX_TIMEOUT: which limit */
	int exit_code;		   /* with SBX_OK / SBX_ERROR */
	int signal;		   /* with SBX_SIGNAL (and kills): the signal number, else 0 */
	char *out; /* captured stdout, owned by the result; never NULL after a run */
	size_t out_len;
	bool out_truncated;
	char *err; /* captured stderr, likewise */
	size_t err_len;
	bool err_truncated;
	uint64_t wall_ms;   /* wall time of the run */
	uint64_t cpu_ms;    /* CPU time of the whole tree, from the cgroup */
	uint64_t memory_kb; /* peak memory of the whole tree, from the cgroup */
	char message[256];  /* SBX_INTERNAL_ERROR: the step that failed and why */
};

/* Host-side configuration of a slot pool. Strings are borrowed for the slot's lifetime. */
struct sbx_bind {
	const char *host;   /* absolute host path, bound read-only, nosuid, nodev */
	const char *inside; /* absolute path inside the sandbox */
};

struct sbx_config {
	uint32_t uid_base;  /* slot i runs as host uid/gid uid_base + i; never 0 */
	uint32_t files_uid; /* host uid/gid that owns work directories on disk; the program's
			       writes to /work are stored as this id (idmapped mount) */
	uint32_t files_gid;
	const char *cgroup_name;      /* our subtree under each controller, e.g. "sbx" */
	const struct sbx_bind *binds; /* extra read-only binds, may be NULL */
	size_t nbinds;
};

struct sbx_slot;

/* Open slot `index` (0-based) of the pool described by cfg: create its cgroups, precompile the
 * seccomp filter, prepare the idmapping. Must run as root. On v1 the calling process moves into
 * the slot's cgroups, so one process holds one slot. Returns NULL and fills err on failure. The
 * caller owns the slot and frees it with sbx_slot_close(). */
struct sbx_slot *sbx_slot_open(const struct sbx_config *cfg, unsigned index, char *err,
			       size_t errlen);

/* Build the slot's next sandbox ahead of time (namespaces, root filesystem, an init waiting for
 * its job), so the next sbx_run() only attaches /work and execs. sbx_run() does it itself when
 * needed; a server calls this while idle, after answering. Returns 0, or -1 with err filled. */
int sbx_slot_prewarm(struct sbx_slot *slot, char *err, size_t errlen);

/* Release the slot; removes its cgroups where possible. NULL-safe. */
void sbx_slot_close(struct sbx_slot *slot);

/* Run req in slot. Fills res (which the caller then frees with sbx_result_free()). Returns 0 when
 * the run happened, whatever the program did; negative with res->status = SBX_INTERNAL_ERROR and
 * res->message set when the sandbox failed. Every process of the run is dead on return. */
int sbx_run(struct sbx_slot *slot, const struct sbx_request *req, struct sbx_result *res);

/* Same contract as sbx_run(), through the broker listening on socket_path. Safe to call from an
 * unprivileged process. Passes workdir_fd and stdin_fd over the socket. Returns -EAGAIN (message
 * "all sandbox slots are busy") at once when every slot is taken and the queue is full: answer
 * 503 with Retry-After. Other negative values: the broker is unreachable or the run failed. */
int sbx_client_run(const char *socket_path, const struct sbx_request *req, struct sbx_result *res);

/* Free what a result owns and zero it. NULL-safe. */
void sbx_result_free(struct sbx_result *res);

/* "ok", "error", "signal", "timeout", "memory_limit", "output_limit", "internal_error". */
const char *sbx_status_name(enum sbx_status status);

/* "wall", "cpu" or NULL. */
const char *sbx_limit_name(enum sbx_limit_kind kind);

/* "SIGSEGV" etc., or NULL for 0 / unknown. */
const char *sbx_signal_name(int sig);

/* What the host can do. Filled by sbx_probe(); also asked of the broker by sbx_client_probe(). */
struct sbx_probe {
	int cgroup_version; /* 1 or 2; 0 when neither is usable */
	bool usable;	    /* every step a run needs is available */
	char detail[512];   /* human-readable: what is usable, and why not if not */
};

/* Check, without running anything, whether runs can work on this host (root required for the
 * cgroup part). Returns 0 when usable, negative otherwise; detail says why. */
int sbx_probe(struct sbx_probe *out);

/* Ask the broker at socket_path for its probe (served on socket_path + "-health" so it never
 * waits behind runs). Returns 0 when the broker answered and is usable. */
int sbx_client_probe(const char *socket_path, struct sbx_probe *out);

/* ---- per-session disk quotas (btrfs qgroups; see quota.c) ---- */

/* 0 when dirfd is the root of a btrfs subvolume (so a quota can hold inside runs), else a
 * negative errno: -EOPNOTSUPP when not on btrfs. Needs no privilege. */
int sbx_quota_capable(int dirfd);

/* Limit the subvolume rooted at dirfd to `bytes` (referenced data). Root only. 0 or -errno. */
int sbx_quota_set(int dirfd, uint64_t bytes, char *err, size_t errlen);

/* The disk reserve: with `bytes` > 0, sbx_quota_set() also puts each fresh subvolume in one
 * level-1 qgroup (SBX_QUOTA_PARENT) limited to the volume's size less `bytes`, so runs of all
 * sessions together stop that far before the volume is full. Set once at start (the broker's
 * --disk-reserve-mb; the stack passes auto); 0, the library's default, leaves it off. Forks must be
 * snapshots made with the group inherited (BTRFS_SUBVOL_QGROUP_INHERIT listing SBX_QUOTA_PARENT, as
 * fcgi/store/scratch.c makes them): a snapshot of a member made without it makes btrfs mark every
 * qgroup of the volume inconsistent until a rescan, and the per-session limits stop holding. */
#define SBX_QUOTA_PARENT ((1ull << 48) | 4242) /* qgroup "1/4242" */
/* `bytes` = SBX_QUOTA_RESERVE_AUTO: 5% of the volume, at most 512 MiB, computed from the volume's
 * size each time (the service's own default for disk.reserve_mb, fcgi/config.h). */
#define SBX_QUOTA_RESERVE_AUTO UINT64_MAX
void sbx_quota_set_reserve(uint64_t bytes);

/* The same through the broker (its control socket, never behind runs), for unprivileged callers.
 * The broker accepts only directories owned by the service's files uid. 0 or -errno. */
int sbx_client_set_quota(const char *socket_path, int dirfd, uint64_t bytes, char *err,
			 size_t errlen);

/* ---- contexts: long-lived sandboxed interpreters, through the broker (context.c, holder.c) ----
 *
 * A context is a sandbox built exactly as for a run (same namespaces, template root, seccomp,
 * rlimits, the session directory at /work, uid 1000 inside), with its own host uid and its own
 * cgroup whose memory and process limits hold for the context's whole life. Its program is the
 * kernel (/opt/sbx-kernel/sbx_kernel.py), which keeps the interpreter's state between calls. The
 * broker holds each context in a privileged holder process that enforces per-cell wall and CPU
 * limits (CPU: the cgroup's usage delta), output caps, interrupts, kills and restarts. A broker
 * stop ends every context; nothing survives it. The kernel protocol is in CONTEXTS.md. */

#define SBX_CTX_ID_LEN 32 /* lowercase hex; chosen by the caller (fcgi), unique per machine */
/* Largest kernel request a call may carry, bytes (the code of one cell, JSON-encoded). */
#define SBX_CTX_MAX_REQUEST (8u << 20)
/* How long the holder waits for an interrupted cell before it kills the sandbox, ms. */
#define SBX_CTX_GRACE_MS 2000

enum sbx_ctx_lang { SBX_CTX_PYTHON = 1, SBX_CTX_BASH = 2 };

struct sbx_ctx_spec {
	char id[SBX_CTX_ID_LEN + 1];
	char owner[64]; /* the client name (REMOTE_USER): per-client cap, listing */
	enum sbx_ctx_lang language;
	int workdir_fd;		  /* the session's directory (O_PATH ok), mounted at /work */
	struct sbx_limits limits; /* memory_bytes, processes, open_files, file_size_bytes,
				     tmp_bytes: for the context's whole life (0 = default) */
	uint32_t idle_ttl_s;	  /* the holder ends the context after this long idle (0 = never) */
	uint32_t max_per_owner;	  /* per-client cap, checked by the broker atomically (0 = none) */
};

struct sbx_cell {
	const char *request;	  /* one kernel request (JSON object, CONTEXTS.md section 2), no
				     newline; the holder adds the "marker" member */
	size_t request_len;	  /* bytes, at most SBX_CTX_MAX_REQUEST */
	struct sbx_limits limits; /* wall_ms, cpu_ms, output_bytes, output_hard_bytes per cell
				     (0 = default) */
	uint32_t wait_ms;	  /* how long to wait for a busy context before -EBUSY */
};

struct sbx_cell_result {
	enum sbx_status status;	   /* ok/error from the kernel's reply, or timeout, memory_limit,
				      output_limit, internal_error decided by the holder */
	enum sbx_limit_kind limit; /* with SBX_TIMEOUT */
	bool lost;		   /* the interpreter died or was killed and restarted during this
				      call (or since the last one): every variable is gone (fresh
				      execution_count) */
	char *out;		   /* this cell's stdout, malloc'ed, NUL-terminated, never NULL
				      after a call that returned 0 */
	size_t out_len;
	bool out_truncated;
	char *err; /* this cell's stderr, likewise */
	size_t err_len;
	bool err_truncated;
	char *reply; /* the kernel's reply line (JSON, no newline), malloc'ed, NUL-terminated;
			NULL when lost/killed before it replied */
	size_t reply_len;
	uint64_t wall_ms, cpu_ms, memory_kb; /* cpu: this cell only; memory: context now */
	char message[256];		     /* why, for internal_error, a kill or a loss */
};

struct sbx_ctx_info {
	char id[SBX_CTX_ID_LEN + 1];
	char owner[64];
	enum sbx_ctx_lang language;
	bool busy;
	uint64_t memory_kb;
	uint64_t created_ms, last_used_ms; /* CLOCK_REALTIME, ms */
	uint32_t execution_count;
};

/* Create a context and start its kernel; returns once the kernel is ready. 0; -EEXIST id in use;
 * -EDQUOT owner at max_per_owner (HTTP 429); -EAGAIN machine cap or contexts' memory budget full
 * (HTTP 503 + Retry-After); -EINVAL bad spec; other -errno = internal_error. err says why. */
int sbx_client_ctx_create(const char *socket_path, const struct sbx_ctx_spec *spec, char *err,
			  size_t errlen);
/* Run one kernel request. 0 when it ran (any outcome, res filled; the caller frees it with
 * sbx_cell_result_free); -ENOENT no such context (evicted, deleted, restarted broker: the caller
 * recreates it and answers state "lost"); -EBUSY another call holds it past wait_ms (HTTP 409
 * context_busy); -ECANCELED cancel_fd turned readable (the cell was interrupted); other -errno
 * internal (res->message says why). If the caller closes its connection (cancel_fd readable / EOF
 * on the broker socket), the cell is interrupted. A context deleted during the call answers 0,
 * lost, status error, message "context deleted". cancel_fd may be -1. */
int sbx_client_ctx_call(const char *socket_path, const char *id, const struct sbx_cell *cell,
			int cancel_fd, struct sbx_cell_result *res);
/* Interrupt the running cell (SIGINT to the kernel; killed after SBX_CTX_GRACE_MS): 0, -ENOENT. */
int sbx_client_ctx_interrupt(const char *socket_path, const char *id);
/* A fresh interpreter (state gone); returns once it is ready: 0, -ENOENT. */
int sbx_client_ctx_restart(const char *socket_path, const char *id);
/* End the context: every process, mount and cgroup of it is gone on return. 0, -ENOENT. */
int sbx_client_ctx_delete(const char *socket_path, const char *id);
/* Every live context (owner NULL) or one owner's; *out malloc'ed (caller frees, also when *n is
 * 0: may be NULL then). 0 or -errno. */
int sbx_client_ctx_list(const char *socket_path, const char *owner, struct sbx_ctx_info **out,
			size_t *n);
/* Free what a cell result owns and zero it. NULL-safe. */
void sbx_cell_result_free(struct sbx_cell_result *res);
/* "python", "bash" or NULL. */
const char *sbx_ctx_lang_name(enum sbx_ctx_lang lang);

#endif
