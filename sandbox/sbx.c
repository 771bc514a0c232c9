/* sbx.c: the command-line front end: run one command in a fresh sandbox and print the result as
 * one JSON object. For debugging and for the sandbox tests; the service uses the broker.
 * Exit status: 0 when the run happened (any program outcome), 2 on internal_error, 64 on usage;
 * with --probe, 0 when runs can work and 1 when not. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "sandbox.h"

#define CLI_SLOTS 64
#define CLI_UID_BASE 300000
#define NOBODY 65534

static void usage(void)
{
	fprintf(stderr,
		"usage: sbx [--wall-ms N] [--cpu-ms N] [--memory-mb N] [--processes N]\n"
		"           [--output-bytes N] [--output-hard-bytes N] [--file-size-mb N]\n"
		"           [--open-files N] [--tmp-mb N] [--workdir DIR] [--stdin FILE]\n"
		"           [--env K=V]... [--bind-ro HOST:INSIDE]... [--quota-mb N]\n"
		"           [--layer DIR]  (bound read-only at " SBX_LAYER_DIR ")\n"
		"           -- PROGRAM ARGS...\n"
		"           [--broker SOCKET]\n"
		"       sbx [--broker SOCKET] --probe\n"
		"       sbx ctx --broker SOCKET ...   (contexts: sbx ctx --help)\n"
		"Without --workdir, /work is a private tmpfs of the --tmp-mb size.\n"
		"--quota-mb sets a btrfs qgroup limit on --workdir (a subvolume root) first;\n"
		"--disk-reserve-mb N also puts it in the volume's group limited to size - N.\n"
		"--broker sends the run to a running sbxd instead (no root needed).\n"
		"--probe prints whether runs can work (here, or in the broker: its slots ready)\n"
		"and exits 0 when they can, 1 when not.\n");
	exit(64);
}

void sbx_cli_json_str(FILE *f, const char *s, size_t len)
{
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t n = c < 0x80	    ? 1
			   : (c >> 5) == 6  ? 2
			   : (c >> 4) == 14 ? 3
			   : (c >> 3) == 30 ? 4
					    : 0;
		size_t k;
		bool valid = n > 0 && i + n <= len;

		for (k = 1; valid && k < n; k++)
			valid = ((unsigned char)s[i + k] >> 6) == 2;
		if (valid && n == 2 && c < 0xc2)
			valid = false; /* overlong */
		if (valid && n == 3) {
			unsigned cp = ((c & 0xfu) << 12) |
				      (((unsigned char)s[i + 1] & 0x3fu) << 6) |
				      ((unsigned char)s[i + 2] & 0x3fu);
			valid = cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff);
		}
		if (valid && n == 4) {
			unsigned cp = ((c & 0x7u) << 18) |
				      (((unsigned char)s[i + 1] & 0x3fu) << 12) |
				      (((unsigned char)s[i + 2] & 0x3fu) << 6) |
				      ((unsigned char)s[i + 3] & 0x3fu);
			valid = cp >= 0x10000 && cp <= 0x10ffff;
		}
		if (!valid) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		if (n == 1) {
			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", f);
			else if (c == '\t')
				fputs("\\t", f);
			else if (c < 0x20 || c == 0x7f)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		} else {
			fwrite(s + i, 1, n, f);
		}
		i += n;
	}
	fputc('"', f);
}

/* Take a free CLI slot: concurrent sbx invocations must not share a uid or a cgroup. */
static int take_slot(int *lock_fd)
{
	char path[64];
	int i;

	mkdir("/run/sbx-cli", 0700);
	for (i = 0; i < CLI_SLOTS; i++) {
		int fd;

		snprintf(path, sizeof path, "/run/sbx-cli/slot%d.lock", i);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*lock_fd = fd;
			return i;
		}
		close(fd);
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"wall-ms", 1, 0, 'w'},
	    {"cpu-ms", 1, 0, 'c'},
	    {"memory-mb", 1, 0, 'm'},
	    {"processes", 1, 0, 'p'},
	    {"output-bytes", 1, 0, 'o'},
	    {"output-hard-bytes", 1, 0, 'O'},
	    {"file-size-mb", 1, 0, 'f'},
	    {"open-files", 1, 0, 'n'},
	    {"tmp-mb", 1, 0, 't'},
	    {"workdir", 1, 0, 'd'},
	    {"stdin", 1, 0, 'i'},
	    {"env", 1, 0, 'e'},
	    {"bind-ro", 1, 0, 'B'},
	    {"quota-mb", 1, 0, 'q'},
	    {"broker", 1, 0, 'b'},
	    {"probe", 0, 0, 'P'},
	    {"disk-reserve-mb", 1, 0, 'R'},
	    {"layer", 1, 0, 'L'},
	    {0, 0, 0, 0},
	};
	struct sbx_request req;
	struct sbx_result res;
	struct sbx_config cfg;
	struct sbx_bind binds[16];
	const char *envs[64];
	size_t nenv = 0;
	const char *workdir = NULL, *broker = NULL;
	char err[256];
	struct sbx_slot *slot = NULL;
	struct stat st;
	int c, lock_fd = -1, index, rc = 2;
	bool probe = false;
	unsigned long long quota_mb = 0;

	if (argc > 1 && strcmp(argv[1], "ctx") == 0)
		return sbx_ctx_cli(argc - 1, argv + 1);
	memset(&req, 0, sizeof req);
	memset(&res, 0, sizeof res);
	memset(&cfg, 0, sizeof cfg);
	req.workdir_fd = req.stdin_fd = req.cancel_fd = -1;
	cfg.binds = binds;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned long long v = 0;

		if (c != 'd' && c != 'i' && c != 'e' && c != 'B' && c != 'b' && c != 'L' &&
		    optarg) {
			char *end = NULL;

			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || !end || *end || end == optarg || optarg[0] == '-') {
				fprintf(stderr, "sbx: limits take whole numbers, not '%s'\n",
					optarg);
				return 64;
			}
		}

		switch (c) {
		case 'w':
			req.limits.wall_ms = v;
			break;
		case 'c':
			req.limits.cpu_ms = v;
			break;
		case 'm':
			req.limits.memory_bytes = v << 20;
			break;
		case 'p':
			req.limits.processes = (uint32_t)v;
			break;
		case 'o':
			req.limits.output_bytes = v;
			break;
		case 'O':
			req.limits.output_hard_bytes = v;
			break;
		case 'f':
			req.limits.file_size_bytes = v << 20;
			break;
		case 'n':
			req.limits.open_files = (uint32_t)v;
			break;
		case 't':
			req.limits.tmp_bytes = v << 20;
			break;
		case 'd':
			workdir = optarg;
			break;
		case 'L':
			/* Not O_DIRECTORY: the library itself must refuse what is not one. */
			if (req.layer_fd > 0)
				close(req.layer_fd);
			req.layer_fd = open(optarg, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			if (req.layer_fd < 0) {
				fprintf(stderr, "sbx: --layer %s: %s\n", optarg, strerror(errno));
				return 64;
			}
			break;
		case 'q':
			quota_mb = v;
			break;
		case 'R':
			sbx_quota_set_reserve(v << 20);
			break;
		case 'b':
			broker = optarg;
			break;
		case 'P':
			probe = true;
			break;
		case 'i':
			req.stdin_fd = open(optarg, O_RDONLY | O_CLOEXEC);
			if (req.stdin_fd < 0) {
				fprintf(stderr, "sbx: %s: %s\n", optarg, strerror(errno));
				return 64;
			}
			break;
		case 'e':
			if (nenv + 1 >= sizeof envs / sizeof *envs || !strchr(optarg, '='))
				usage();
			envs[nenv++] = optarg;
			break;
		case 'B': {
			char *colon = strchr(optarg, ':');

			if (!colon || cfg.nbinds >= 16)
				usage();
			*colon = '\0';
			binds[cfg.nbinds].host = optarg;
			binds[cfg.nbinds].inside = colon + 1;
			cfg.nbinds++;
			break;
		}
		default:
			usage();
		}
	}
	if (probe) {
		struct sbx_probe p;
		int ok = broker ? sbx_client_probe(broker, &p) : sbx_probe(&p);

		printf("{\"usable\": %s, \"cgroup_version\": %d, \"detail\": ",
		       ok == 0 && p.usable ? "true" : "false", p.cgroup_version);
		sbx_cli_json_str(stdout, p.detail, strlen(p.detail));
		printf("}\n");
		return ok == 0 && p.usable ? 0 : 1;
	}
	if (optind >= argc)
		usage();
	envs[nenv] = NULL;
	req.argv = (const char *const *)argv + optind;
	req.env = envs;
	/* Without --workdir, /work is a private tmpfs of the /tmp size: bounded, and gone with the
	 * run, so nothing is left on the host to clean up. */
	cfg.files_uid = cfg.files_gid = NOBODY;
	if (workdir) {
		/* Never through a final symlink: a run can leave one where a directory was. */
		req.workdir_fd = open(workdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (req.workdir_fd < 0 || fstat(req.workdir_fd, &st) < 0) {
			fprintf(stderr, "sbx: %s: %s\n", workdir, strerror(errno));
			rc = 64;
			goto out;
		}
		if (!broker && (st.st_uid == 0 || st.st_gid == 0)) {
			fprintf(stderr,
				"sbx: %s is owned by root; the program's files are stored as "
				"the directory's owner, so chown it to an unprivileged user "
				"first\n",
				workdir);
			rc = 64;
			goto out;
		}
		cfg.files_uid = st.st_uid;
		cfg.files_gid = st.st_gid;
	}
	if (quota_mb) {
		int qfd =
		    workdir ? open(workdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;

		if (qfd < 0 || sbx_quota_set(qfd, quota_mb << 20, err, sizeof err) < 0) {
			fprintf(stderr, "sbx: --quota-mb: %s\n",
				qfd < 0 ? "needs --workdir naming a btrfs subvolume" : err);
			if (qfd >= 0)
				close(qfd);
			rc = 64;
			goto out;
		}
		close(qfd);
	}
	cfg.uid_base = CLI_UID_BASE;
	cfg.cgroup_name = "sbx-cli";
	if (broker) {
		sbx_client_run(broker, &req, &res);
	} else {
		index = take_slot(&lock_fd);
		if (index < 0) {
			fprintf(stderr, "sbx: no free CLI slot\n");
			goto out;
		}
		slot = sbx_slot_open(&cfg, (unsigned)index, err, sizeof err);
		if (!slot) {
			res.status = SBX_INTERNAL_ERROR;
			snprintf(res.message, sizeof res.message, "%s", err);
		} else {
			sbx_run(slot, &req, &res);
		}
	}
	printf("{\"status\": \"%s\"", sbx_status_name(res.status));
	if (res.status == SBX_TIMEOUT)
		printf(", \"limit\": \"%s\"", sbx_limit_name(res.limit));
	printf(", \"exit_code\": %d, \"signal\": ", res.exit_code);
	if (res.status == SBX_SIGNAL && sbx_signal_name(res.signal))
		printf("\"%s\"", sbx_signal_name(res.signal));
	else
		printf("null");
	printf(", \"stdout\": ");
	sbx_cli_json_str(stdout, res.out ? res.out : "", res.out_len);
	printf(", \"stderr\": ");
	sbx_cli_json_str(stdout, res.err ? res.err : "", res.err_len);
	printf(", \"stdout_truncated\": %s, \"stderr_truncated\": %s",
	       res.out_truncated ? "true" : "false", res.err_truncated ? "true" : "false");
	printf(", \"wall_ms\": %llu, \"cpu_ms\": %llu, \"memory_kb\": %llu",
	       (unsigned long long)res.wall_ms, (unsigned long long)res.cpu_ms,
	       (unsigned long long)res.memory_kb);
	if (res.status == SBX_INTERNAL_ERROR) {
		printf(", \"message\": ");
		sbx_cli_json_str(stdout, res.message, strlen(res.message));
	}
	printf("}\n");
	rc = res.status == SBX_INTERNAL_ERROR ? 2 : 0;
out:
	sbx_slot_close(slot);
	sbx_result_free(&res);
	if (req.workdir_fd >= 0)
		close(req.workdir_fd);
	if (req.layer_fd > 0)
		close(req.layer_fd);
	if (lock_fd >= 0)
		close(lock_fd);
	return rc;
}
