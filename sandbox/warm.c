/* warm.c: Python and node runs that start from an interpreter already started.
 *
 * Design (the "pre-start" one of issue 15). Every run still gets a sandbox of its own, built
 * while the slot is idle (slot.c: fresh user, pid, mount, ipc, uts and cgroup namespaces, its
 * own /proc, /tmp and /dev/shm). When the slot's last Python run had a form we can honour, the
 * sandbox's init also forks the program's process ahead of time, through exactly the steps a
 * program gets (child.c: sbx_child_exec: setsid, stdio, rlimits, securebits, no capabilities,
 * no_new_privs, both seccomp filters, the inside uid) and execs
 *     /usr/bin/python3 [-u] [-S] [-B] -c <warm_stub.py> [hint]
 * The stub imports what the hinted read-only script (the evaluate runner) imports and compiles
 * it, reports ready on fd 3 and blocks there. Only then does the init tell the slot the sandbox
 * is ready, so nothing of the start is left to run once a job arrives. It never sees user input
 * before its job: it runs our stub and, for the hint, only our own read-only runner files
 * (never anything under /work).
 *
 * When the job arrives, the init attaches /work as for any run; if the job is a Python run of
 * the same form (sbx_warm_parse: /usr/bin/python3, the same options among -u -S -B, then a
 * script or -c, and an environment the interpreter's start does not read differently) it sets
 * the job's rlimits on the waiting process (prlimit), hands it argv, the environment and stdin,
 * and that process becomes the program: it runs the code as __main__ the way `python3 main.py`
 * does. Anything else: the waiting process is killed and the program is exec'd cold, as before.
 * The CPU the start used is not billed: the cgroup's counters are reset when the job is handed
 * over (cgroup.c), and the start was finished before. Set SBX_WARM=0 in the broker's (or the
 * CLI's) environment to turn it off.
 *
 * Node runs the same way (node's start is 2-3 x python3's CPU): `/usr/bin/node <script> [args]`
 * with no options and no NODE_* variable but a package layer's NODE_PATH pre-starts
 *     /usr/bin/node -e <warm_stub.js>
 * which removes what `node -e` adds (the globals module, exports, require, __filename,
 * __dirname and the builtin modules' getters, process._eval, execArgv), reports ready on fd 3,
 * reads argv and the environment there, applies NODE_PATH (Module._initPaths) and calls node's
 * own Module.runMain(), the entry `node main.js` takes: CommonJS or ESM, require.main, uncaught
 * exceptions and exit codes are node's. node cannot receive a descriptor, so it reopens the
 * job's stdin as fd 0 from /proc/<pid>/fd/<fd> of a holder the init forks for that moment
 * (child_warm.c: stdin_holder); a stdin the run's user may not open (a root-owned pipe, a 0600
 * file) makes the stub say so and the run start cold. What differs from a cold start: the stack
 * below node's loader frame (executeUserEntryPoint) shows the stub's [eval] frames instead of
 * node's run_main_module one; /proc/self/cmdline is the stub's; process.uptime() and
 * performance.now() count from the pre-start; the lowest free descriptor is 3; stdin is a new
 * open file description of the same file or pipe (read-only, at offset 0). The slot pre-starts
 * the language of its last run that could start warm (sbx_warm_note). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "warm_stub.inc"    /* sbx_warm_stub_py[]: sandbox/warm_stub.py, NUL-terminated */
#include "warm_stub_js.inc" /* sbx_warm_stub_js[]: sandbox/warm_stub.js, NUL-terminated */

const char *const sbx_warm_env[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
				    "HOME=" SBX_WORK_DIR,
				    "LANG=C.UTF-8",
				    "TMPDIR=/tmp",
				    "USER=user",
				    "MPLBACKEND=Agg",
				    "MPLCONFIGDIR=/tmp",
				    NULL};

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Node: `/usr/bin/node <script> [args]`, no options (they are read while node starts), and an
 * environment node's start does not read differently: no NODE_* (NODE_OPTIONS, NODE_DEBUG...)
 * but a package layer's NODE_PATH, which the stub applies as node would have, no UV_* (libuv),
 * no OpenSSL configuration, and the locale node was started with (ICU reads it at start). */
static int warm_parse_node(char *const *argv, char *const *envp, unsigned *opts)
{
	*opts = SBX_WARM_OPT_NODE;
	if (!argv[1] || argv[1][0] == '\0' || argv[1][0] == '-')
		return -1; /* -e, -p, --inspect, -r, -: cold */
	for (int k = 0; envp && envp[k]; k++) {
		if ((starts(envp[k], "NODE_") &&
		     strcmp(envp[k], "NODE_PATH=" SBX_LAYER_DIR "/node_modules") != 0) ||
		    starts(envp[k], "UV_") || starts(envp[k], "OPENSSL_") ||
		    starts(envp[k], "SSL_CERT_") || starts(envp[k], "LC_") ||
		    starts(envp[k], "TZ=") ||
		    (starts(envp[k], "LANG=") && strcmp(envp[k], "LANG=C.UTF-8") != 0))
			return -1;
	}
	return 1;
}

int sbx_warm_parse(char *const *argv, char *const *envp, unsigned *opts)
{
	int i;

	*opts = 0;
	if (argv && argv[0] && strcmp(argv[0], SBX_WARM_NODE) == 0)
		return warm_parse_node(argv, envp, opts);
	if (!argv || !argv[0] || strcmp(argv[0], SBX_WARM_PYTHON) != 0)
		return -1;
	for (i = 1; argv[i]; i++) {
		if (strcmp(argv[i], "-u") == 0)
			*opts |= SBX_WARM_OPT_U;
		else if (strcmp(argv[i], "-S") == 0)
			*opts |= SBX_WARM_OPT_S;
		else if (strcmp(argv[i], "-B") == 0)
			*opts |= SBX_WARM_OPT_B;
		else
			break;
	}
	if (!argv[i] || argv[i][0] == '\0')
		return -1;
	if (strcmp(argv[i], "-c") == 0) {
		if (!argv[i + 1])
			return -1;
	} else if (argv[i][0] == '-') {
		return -1; /* -m, -X, -W, -I, -E, combined options...: cold */
	}
	/* The interpreter reads these while it starts: a job that sets them starts cold. But for
	 * a package layer's PYTHONPATH, which the stub applies as the interpreter would have. */
	for (int k = 0; envp && envp[k]; k++) {
		if ((starts(envp[k], "PYTHON") &&
		     strcmp(envp[k], "PYTHONPATH=" SBX_LAYER_DIR) != 0) ||
		    starts(envp[k], "LC_") ||
		    (starts(envp[k], "LANG=") && strcmp(envp[k], "LANG=C.UTF-8") != 0))
			return -1;
	}
	return i;
}

void sbx_warm_argv(unsigned opts, const char *hint, const char **argv)
{
	int n = 0;

	if (opts & SBX_WARM_OPT_NODE) {
		argv[n++] = SBX_WARM_NODE;
		argv[n++] = "-e";
		argv[n++] = sbx_warm_stub_js;
		argv[n] = NULL;
		return;
	}
	argv[n++] = SBX_WARM_PYTHON;
	if (opts & SBX_WARM_OPT_U)
		argv[n++] = "-u";
	if (opts & SBX_WARM_OPT_S)
		argv[n++] = "-S";
	if (opts & SBX_WARM_OPT_B)
		argv[n++] = "-B";
	argv[n++] = "-c";
	argv[n++] = sbx_warm_stub_py;
	argv[n++] = hint ? hint : "";
	argv[n] = NULL;
}

/* Remember the form of this Python or node run for the slot's next prepared sandbox: the slot
 * pre-starts the language of its last run that could have started warm. A hint (a script
 * to preload) is only a path outside /work: the stub then checks that it is on a read-only
 * mount, so it only ever reads the service's own files. */
void sbx_warm_note(struct sbx_slot *s, const char *const *argv, const char *const *env)
{
	unsigned opts;
	int idx;

	/* zygote.c: a sandbox forked from a zygote only takes Python runs of that zygote's options
	 * (with or without a package layer); for any other job it is dropped.
	 * A Python run of other options is then forked from the zygote of its own options if one
	 * runs (else it gets a child.c sandbox and the zygote starts once the slot is idle);
	 * anything else gets a child.c sandbox. */
	if (s->w.ready && !sbx_zygote_fits(s, argv, env)) {
		struct sbx_cg_stats st;

		sbx_warm_discard(s);
		sbx_cg_finish(s->cg, &st, NULL, 0);
		if (sbx_warm_parse((char *const *)argv, (char *const *)env, &opts) < 1 ||
		    (opts & SBX_WARM_OPT_NODE))
			s->zyg_skip = true;
	}
	/* A sandbox built now has a job waiting for it: it may fork from a zygote that is running,
	 * but no zygote is started for it (a CLI slot that serves one run never starts one). */
	s->zyg_waiting = !s->w.ready;
	if (!s->warm_on)
		return;
	idx = sbx_warm_parse((char *const *)argv, (char *const *)env, &opts);
	if (idx < 1)
		return;
	s->warm_known = true;
	s->warm_opts = opts;
	s->warm_hint[0] = '\0';
	if (!(opts & SBX_WARM_OPT_NODE) && argv[idx][0] == '/' &&
	    strncmp(argv[idx], SBX_WORK_DIR "/", strlen(SBX_WORK_DIR) + 1) &&
	    strlen(argv[idx]) < sizeof s->warm_hint)
		memcpy(s->warm_hint, argv[idx], strlen(argv[idx]) + 1);
}

/* What identifies the interpreters and their libraries on the host: a prepared sandbox whose
 * interpreter was started before any of these changed is not used (node links only libc and
 * libstdc++, in ld.so.cache; its own libraries are inside its binary). */
void sbx_warm_sig(char *buf, size_t len)
{
	static const char *const files[] = {SBX_WARM_PYTHON, "/etc/ld.so.cache",
					    "/usr/lib/python3/dist-packages", SBX_WARM_NODE};
	size_t off = 0, i;

	buf[0] = '\0';
	for (i = 0; i < sizeof files / sizeof *files && off < len; i++) {
		struct stat st;
		int n;

		memset(&st, 0, sizeof st);
		stat(files[i], &st);
		n = snprintf(buf + off, len - off, "%llx:%llx:%llx:%lld.%ld;",
			     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
			     (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec,
			     st.st_mtim.tv_nsec);
		if (n < 0)
			break;
		off += (size_t)n;
	}
}
