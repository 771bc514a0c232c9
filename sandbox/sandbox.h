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
/* A request's read-only layer (sbx_request.layer_fd) is mounted here: the same directory, the
 * same inodes, for every run that names it, and never writable from inside. */
#define SBX_LAYER_DIR "/opt/sbx-packages"

struct sbx_request {
	const char *const
	    *argv; /* NULL-terminated; argv[0] is an absolute path inside the sandbox */
	const char *const *env; /* NULL-terminated "KEY=VALUE" added to the base environment
				   (PATH, HOME, LANG, TMPDIR); may be NULL */
	int workdir_fd;		/* directory mounted read-write at /work (an O_PATH fd is enough),
				   or -1 for an empty private tmpfs; never followed by path */
	int stdin_fd;		/* regular file or memfd whose contents become stdin (read from
				   offset 0), or -1 for /dev/null */
	int layer_fd;		/* a directory (O_PATH is enough) bound read-only, nosuid, nodev
				   at SBX_LAYER_DIR, or <= 0 for none: a request zeroed with
				   memset has no layer (descriptor 0 is never one). If it cannot
				   be mounted the run is internal_error, never run without it */
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
 * unprivileged process. Passes workdir_fd, layer_fd and stdin_fd over the socket. Returns -EAGAIN
 * (message "all sandbox slots are busy") at once when every slot is taken and the queue is full:
 * answer 503 with Retry-After. Other negative values: the broker is unreachable or the run failed.
 */
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
/* sbx_client_ctx_call() with live output (on_output not NULL; the type is the runs' below):
 * on_output(arg, 1 or 2, data, len) with the next bytes of the cell's stdout or stderr as the
 * holder reads them (always a prefix of the final res->out / res->err: after the result, the
 * rest is delivered too, so the pieces add up to it), on_output(arg, SBX_CTX_STREAM_RESULT, line,
 * len) with one display line of the kernel as the cell makes it ({"marker":..,"op":"display",
 * "result":{...}}, untrusted JSON: the kernel then leaves those results out of its reply), and
 * on_output(arg, 0, NULL, 0) at least every SBX_RUN_TICK_MS while nothing arrives. A nonzero
 * return interrupts the cell as a closed connection does: -ECANCELED. */
#define SBX_CTX_STREAM_RESULT 4
typedef int (*sbx_output_fn)(void *arg, int stream, const char *data, size_t len);
int sbx_client_ctx_call_stream(const char *socket_path, const char *id, const struct sbx_cell *cell,
			       int cancel_fd, sbx_output_fn on_output, void *arg,
			       struct sbx_cell_result *res);
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

/* ---- runs: live output, run ids, interactive stdin, signals, background runs (runs.c) ----
 *
 * A run with an id (spec->id not empty) is registered in the broker's table while it runs, under
 * its owner: stdin and signals reach it by id, and only for the same owner (another owner's id
 * and an unknown id both answer -ENOENT). A run without an id is an ordinary run that streams.
 * Background runs are held by the broker (a keeper process, never the caller) and keep their
 * output, capped per stream, until keep_s after they end. A broker stop ends every run: nothing
 * survives it (processes, cgroups, mounts). */

#define SBX_RUN_ID_LEN 32 /* lowercase hex; chosen by the caller (fcgi), unique per machine */
/* Ticks: on_output(arg, 0, NULL, 0) at least this often while no output arrives, ms. */
#define SBX_RUN_TICK_MS 2000
/* Largest stdin write one sbx_client_run_stdin call may carry, bytes. */
#define SBX_RUN_MAX_STDIN (1u << 20)
/* Most bytes one sbx_client_run_output call returns. */
#define SBX_RUN_MAX_CHUNK (1u << 20)
/* Longest long-poll of sbx_client_run_output, ms (longer waits are cut to this). */
#define SBX_RUN_MAX_WAIT_MS 30000
/* Longest keep_s (an ended background run's output is kept this long at most), s. */
#define SBX_RUN_MAX_KEEP_S 86400

struct sbx_run_spec {
	char id[SBX_RUN_ID_LEN + 1]; /* "" = no id: not registered, no stdin or signals */
	char owner[64];		     /* the client name (REMOTE_USER); required with an id */
	char session[64];	     /* the session's id, or "" (listing, per-session cap) */
	bool interactive; /* stdin is a pipe, fed by sbx_client_run_stdin, closed at its eof or
			     when the run ends. Needs an id. A req->stdin_fd then (the stdin sent
			     during the compile step) is written to the pipe first, and the pipe
			     closed after it with stdin_eof. */
	bool stdin_eof;
	/* The compile step of run id (sbx_client_run_stream): the id is registered while it runs.
	 * stdin sent meanwhile (to an interactive run: the interactive flag says what follows) is
	 * held and handed back into *held (data malloc'ed, the caller frees it) for the run;
	 * a signal cancels the compile. A successful compile leaves the id "starting": stdin
	 * and signals then wait (briefly) for the run with the same id. */
	bool compile;
	struct sbx_run_held {
		char *data;
		size_t len;
		bool eof;
	} * held;
	/* background runs only (sbx_client_run_start) */
	uint32_t keep_s;	  /* output and result kept this long after the end (0 = 600) */
	uint32_t max_per_owner;	  /* the owner's live background runs, checked atomically
				     (0 = no cap) */
	uint32_t max_per_session; /* the session's live background runs (0 = no cap) */
};

/* Called as output arrives. stream 1 = stdout, 2 = stderr: data is the next len bytes of what
 * the final result's out/err will hold (what is delivered is always a prefix of them; bytes past
 * output_bytes are never delivered, the result flags them). stream 0, data NULL, len 0: a tick,
 * at least every SBX_RUN_TICK_MS while nothing arrives (turn it into a keepalive). Return 0 to go
 * on; anything else cancels the run (the caller's client left): sbx_client_run_stream then
 * returns -ECANCELED with status internal_error. */
typedef int (*sbx_output_fn)(void *arg, int stream, const char *data, size_t len);

/* sbx_client_run() with live output and, with spec->id, registration for stdin and signals.
 * spec may be NULL (no id). The result and return value are sbx_client_run()'s; -EEXIST when the
 * id is in use; -EINVAL for a bad spec (id not 32 lowercase hex, interactive without an id or with
 * a stdin_fd, an id without owner). req->cancel_fd, when >= 0, is watched as by sbx_run(). */
int sbx_client_run_stream(const char *socket_path, const struct sbx_request *req,
			  const struct sbx_run_spec *spec, sbx_output_fn on_output, void *arg,
			  struct sbx_result *res);
/* The same over a connection to the broker already made (fd >= 0, taken over and closed): the
 * broker's keepers connect to the background slots' socket before they drop root. */
int sbx_client_run_stream_on(int fd, const struct sbx_request *req, const struct sbx_run_spec *spec,
			     sbx_output_fn on_output, void *arg, struct sbx_result *res);

/* Feed len bytes (at most SBX_RUN_MAX_STDIN; 0 is fine with eof) to the stdin of the running,
 * interactive run id of owner, then close it when eof. 0 when all of it was accepted; -ENOENT
 * unknown run or another owner's; -EPIPE the run ended, its stdin is closed, or it is not
 * interactive; -EAGAIN the program has not read what it was given before (its pipe is full:
 * nothing of this call was taken, retry later, HTTP 429 or 503); -EINVAL bad arguments. */
int sbx_client_run_stdin(const char *socket_path, const char *id, const char *owner,
			 const void *data, size_t len, bool eof);

/* Send sig (SIGINT, SIGTERM or SIGKILL; anything else -EINVAL) to every process of the running
 * run id of owner (like a terminal's ^C to its foreground group). 0; -ENOENT unknown or another
 * owner's; -EPIPE the run has ended. */
int sbx_client_run_signal(const char *socket_path, const char *id, const char *owner, int sig);

/* ---- background runs ---- */

/* Start req in the background and return at once (the run may still be waiting for its sandbox).
 * spec->id and spec->owner required, interactive allowed (then stdin_fd must be -1). req's
 * workdir_fd and stdin_fd are passed to the broker (the caller may close them on return). 0;
 * -EEXIST id in use; -EDQUOT the owner's or the session's cap (HTTP 429); -EAGAIN the machine's
 * cap of background runs (sbxd --background-runs; HTTP 503 + Retry-After); -EINVAL bad request;
 * other -errno internal. err says why. */
int sbx_client_run_start(const char *socket_path, const struct sbx_request *req,
			 const struct sbx_run_spec *spec, char *err, size_t errlen);

enum sbx_run_state { SBX_RUN_RUNNING = 1, SBX_RUN_ENDED = 2 };

struct sbx_run_info {
	char id[SBX_RUN_ID_LEN + 1];
	char owner[64];
	char session[64];
	enum sbx_run_state state;
	bool interactive;
	uint64_t started_ms, ended_ms;	   /* CLOCK_REALTIME, ms; ended_ms 0 while running */
	uint64_t out_len, err_len;	   /* bytes kept so far: the end cursor of each stream */
	bool out_truncated, err_truncated; /* output past output_bytes was dropped */
	enum sbx_status status;		   /* with SBX_RUN_ENDED: the run's status */
};

/* One background run of owner. info filled; with SBX_RUN_ENDED and res not NULL, res gets the
 * whole result as sbx_client_run would have returned it (out and err: everything kept; the caller
 * frees it with sbx_result_free). 0; -ENOENT unknown, another owner's, or past keep_s. */
int sbx_client_run_status(const char *socket_path, const char *id, const char *owner,
			  struct sbx_run_info *info, struct sbx_result *res);

/* A piece of one stream of a background run, read by cursor. */
struct sbx_run_chunk {
	char *data; /* malloc'ed (caller frees), NUL-terminated, never NULL after a 0 return */
	size_t len;
	uint64_t next;	/* the cursor to ask for next: cursor + len */
	bool ended;	/* the run has ended: no byte will ever follow next's end of stream */
	bool truncated; /* the stream passed output_bytes: what is kept stops at the cap */
};

/* Bytes of stream (1 stdout, 2 stderr) from cursor (at most SBX_RUN_MAX_CHUNK). When there is
 * nothing past cursor yet and the run is running, waits up to wait_ms (at most
 * SBX_RUN_MAX_WAIT_MS) for some: long-poll; returns with len 0 when none came. 0; -ENOENT
 * unknown, another owner's or gone; -EINVAL bad stream, or cursor past what was kept. */
int sbx_client_run_output(const char *socket_path, const char *id, const char *owner, int stream,
			  uint64_t cursor, uint32_t wait_ms, struct sbx_run_chunk *out);

/* The owner's background runs (session NULL or "" = all of them, else that session's), running
 * and kept; *out malloc'ed (caller frees, also when *n is 0: may be NULL then). 0 or -errno. */
int sbx_client_run_list(const char *socket_path, const char *owner, const char *session,
			struct sbx_run_info **out, size_t *n);

/* Kill a background run of owner (every process, mount and cgroup of it gone on return) and
 * forget it: its output and result are gone too. An ended one is just forgotten. 0; -ENOENT.
 * (To stop one and keep its output, sbx_client_run_signal(SIGKILL) works on background runs.) */
int sbx_client_run_kill(const char *socket_path, const char *id, const char *owner);

#endif
