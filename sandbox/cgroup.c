/* cgroup.c: memory, pids and CPU accounting for one slot, on cgroup v1 or v2 (detected).
 *
 * v2: each run gets a fresh child group "run" of the slot, entered at clone time with
 * CLONE_INTO_CGROUP (no migration), killed with cgroup.kill and removed afterwards.
 * v1: moving a task into a v1 controller waits for an RCU grace period (0.5 ms median, 13-21 ms
 * spikes), so the slot's own process joins its groups once, at open, and every run is forked from
 * there and inherits them. Counters are reset before each run; the slot process's own small
 * footprint is measured before the run and subtracted. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

enum { V1_MEMORY, V1_PIDS, V1_CPUACCT, V1_COUNT };
static const char *const v1_names[V1_COUNT] = {"memory", "pids", "cpuacct"};

struct sbx_cgroup {
	int version;
	/* v1 */
	char v1_mnt[V1_COUNT][256];
	int v1_dir[V1_COUNT]; /* the slot's directory in each controller */
	char v1_path[V1_COUNT][1024];
	bool memsw;
	uint64_t base_usage;
	uint64_t base_oom;
	uint64_t base_anon; /* v1: what the group held besides page cache before the run */
	/* v2 */
	char v2_slot[512]; /* path of the slot's group */
	int v2_slot_fd;
	int v2_run_fd; /* the current run's group */
	uint64_t mem_limit;
	uint64_t cpu_base_ns; /* v2: what the prepared sandbox used before the job */
	int v2_peak_fd;	      /* v2: memory.peak, reset at job start (per-open-file reset) */
};

static int find_mounts(char v1[V1_COUNT][256], char *v2, size_t v2len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024];

	if (!f)
		return -errno;
	while (fgets(line, sizeof line, f)) {
		char mnt[256], fstype[64], opts[512];
		char *sep = strstr(line, " - ");
		int i;

		if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		if (strcmp(fstype, "cgroup2") == 0 && v2 && !v2[0])
			snprintf(v2, v2len, "%s", mnt);
		if (strcmp(fstype, "cgroup") != 0)
			continue;
		for (i = 0; i < V1_COUNT; i++) {
			char *tok, *save = NULL, copy[512];

			snprintf(copy, sizeof copy, "%s", opts);
			for (tok = strtok_r(copy, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save))
				if (strcmp(tok, v1_names[i]) == 0 && !v1[i][0])
					snprintf(v1[i], 256, "%s", mnt);
		}
	}
	fclose(f);
	return 0;
}

bool sbx_cg_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || p[-1] == ' ' || p[-1] == '\n') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
		p += n;
	}
	return false;
}

static bool v2_usable(const char *mnt)
{
	char path[512], buf[512];

	if (!mnt[0])
		return false;
	snprintf(path, sizeof path, "%s/cgroup.controllers", mnt);
	if (sbx_read_fileat(AT_FDCWD, path, buf, sizeof buf) < 0)
		return false;
	return sbx_cg_has_word(buf, "memory") && sbx_cg_has_word(buf, "pids");
}

/* On v1, nest under the group we were started in, per controller, as a delegated subtree
 * (systemd's Delegate=, or a supervisor's own limits) expects: never escape it to the root. */
static void nest_v1(char v1[V1_COUNT][256])
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[512];

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char *list = strchr(line, ':'), *path;
		int i;

		if (!list || !(path = strchr(list + 1, ':')))
			continue;
		*path++ = '\0';
		list++;
		path[strcspn(path, "\n")] = '\0';
		if (strcmp(path, "/") == 0 || path[0] != '/')
			continue;
		for (i = 0; i < V1_COUNT; i++) {
			char *tok, *save = NULL, copy[256], joined[256];

			snprintf(copy, sizeof copy, "%s", list);
			for (tok = strtok_r(copy, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				int n;

				if (strcmp(tok, v1_names[i]) != 0 || !v1[i][0])
					continue;
				n = snprintf(joined, sizeof joined, "%s%s", v1[i], path);
				if (n > 0 && (size_t)n < sizeof joined)
					memcpy(v1[i], joined, (size_t)n + 1);
			}
		}
	}
	fclose(f);
}

static int detect(char v1[V1_COUNT][256], char *v2, size_t v2len)
{
	int i;

	memset(v1, 0, V1_COUNT * 256);
	v2[0] = '\0';
	if (find_mounts(v1, v2, v2len) < 0)
		return 0;
	nest_v1(v1);
	if (v2_usable(v2))
		return 2;
	for (i = 0; i < V1_COUNT; i++)
		if (!v1[i][0])
			return 0;
	return 1;
}

int sbx_cg_detect(char *v2, size_t v2len)
{
	char v1[V1_COUNT][256];

	return detect(v1, v2, v2len);
}

int sbx_cg_probe(char *detail, size_t len)
{
	char v1[V1_COUNT][256], v2[256];
	int version = detect(v1, v2, sizeof v2);

	if (version == 2)
		snprintf(detail, len, "cgroup v2 at %s (memory, pids, cpu)", v2);
	else if (version == 1)
		snprintf(detail, len, "cgroup v1 (memory at %s, pids at %s, cpuacct at %s)", v1[0],
			 v1[1], v1[2]);
	else
		snprintf(detail, len,
			 "no usable cgroup: need v2 with memory+pids controllers, or v1 "
			 "memory, pids and cpuacct hierarchies");
	return version;
}

int sbx_cg_mkdir2(const char *a, const char *b, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", a, b);

	if (n < 0 || (size_t)n >= outlen)
		return -ENAMETOOLONG;
	if (mkdir(out, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int write_u64at(int dirfd, const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof buf, "%" PRIu64, v);
	return sbx_write_fileat(dirfd, name, buf);
}

static int read_u64at(int dirfd, const char *name, uint64_t *v)
{
	char buf[64];
	int n = sbx_read_fileat(dirfd, name, buf, sizeof buf);

	if (n < 0)
		return n;
	*v = strtoull(buf, NULL, 10);
	return 0;
}

/* "key value" lines, e.g. memory.stat or cpu.stat. */
static int read_keyat(int dirfd, const char *file, const char *key, uint64_t *v)
{
	char buf[8192], *p;
	size_t klen = strlen(key);
	int n = sbx_read_fileat(dirfd, file, buf, sizeof buf);

	if (n < 0)
		return n;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			*v = strtoull(p + klen + 1, NULL, 10);
			return 0;
		}
	}
	return -ENOENT;
}

static int open_v1(struct sbx_cgroup *cg, const char *name, unsigned index, char *err,
		   size_t errlen)
{
	char path[1024], group[600];
	char pid[32];
	int i, rc;

	snprintf(pid, sizeof pid, "%d", (int)getpid());
	for (i = 0; i < V1_COUNT; i++) {
		char slotname[32];

		snprintf(slotname, sizeof slotname, "slot%u", index);
		if ((rc = sbx_cg_mkdir2(cg->v1_mnt[i], name, group, sizeof group)) < 0 ||
		    (rc = sbx_cg_mkdir2(group, slotname, path, sizeof path)) < 0) {
			sbx_set_error(err, errlen, "cgroup v1 mkdir in %s: %s", cg->v1_mnt[i],
				      strerror(-rc));
			return -1;
		}
		snprintf(cg->v1_path[i], sizeof cg->v1_path[i], "%s", path);
		cg->v1_dir[i] = open(path, O_DIRECTORY | O_PATH | O_CLOEXEC);
		if (cg->v1_dir[i] < 0) {
			sbx_set_error(err, errlen, "open %s: %s", path, strerror(errno));
			return -1;
		}
	}
	/* Never swap a run's memory: the limit is RAM. */
	sbx_write_fileat(cg->v1_dir[V1_MEMORY], "memory.swappiness", "0");
	cg->memsw = faccessat(cg->v1_dir[V1_MEMORY], "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
	for (i = 0; i < V1_COUNT; i++) {
		if ((rc = sbx_write_fileat(cg->v1_dir[i], "cgroup.procs", pid)) < 0) {
			sbx_set_error(err, errlen, "join cgroup v1 %s: %s", v1_names[i],
				      strerror(-rc));
			return -1;
		}
	}
	return 0;
}

/* Where this process's groups live on v2, in root: the hierarchy's root when we run at its top
 * (make run, a container), else the group we were started in (systemd's Delegate=yes gives a
 * service its own subtree). A domain group with processes cannot enable controllers for its
 * children ("no internal processes"), so the service's own processes live in
 * <service>/supervisor and the slots in <service>/<name>/slotN: with enter, a process not yet
 * there moves itself into <service>/supervisor. The broker does that once, before it forks its
 * slots, which then find themselves there already. */
int sbx_cg_v2_service_root(const char *mnt, bool enter, char *root, size_t rootlen, char *err,
			   size_t errlen)
{
	char own[512] = "", line[512], path[1400];
	FILE *f = fopen("/proc/self/cgroup", "re");
	size_t n;
	int rc;

	if (!f) {
		sbx_set_error(err, errlen, "read /proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "0::", 3) == 0)
			snprintf(own, sizeof own, "%s", line + 3);
	fclose(f);
	own[strcspn(own, "\n")] = '\0';
	if (strcmp(own, "/") == 0 || own[0] == '\0') {
		snprintf(root, rootlen, "%s", mnt);
		return 0;
	}
	n = strlen(own);
	if (n > 11 && strcmp(own + n - 11, "/supervisor") == 0) {
		own[n - 11] = '\0';
	} else if (enter) {
		char me[32];

		snprintf(path, sizeof path, "%s%s/supervisor", mnt, own);
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			sbx_set_error(err, errlen, "cgroup v2 %s: %s", path, strerror(errno));
			return -1;
		}
		snprintf(path, sizeof path, "%s%s/supervisor/cgroup.procs", mnt, own);
		snprintf(me, sizeof me, "%d", (int)getpid());
		if ((rc = sbx_write_file(path, me)) < 0) {
			sbx_set_error(err, errlen, "cgroup v2 %s: %s", path, strerror(-rc));
			return -1;
		}
	}
	snprintf(root, rootlen, "%s%s", mnt, own);
	return 0;
}

static int open_v2(struct sbx_cgroup *cg, const char *mnt, const char *name, unsigned index,
		   char *err, size_t errlen)
{
	char line[512], path[2048], group[1400], root[1100];
	int rc;

	if (sbx_cg_v2_service_root(mnt, true, root, sizeof root, err, errlen) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/cgroup.subtree_control", root);
	if ((rc = sbx_write_file(path, "+memory +pids")) < 0) {
		errno = -rc;
		goto fail_path;
	}
	sbx_write_file(path, "+cpu"); /* optional: cpu.stat usage exists without it */
	if ((rc = sbx_cg_mkdir2(root, name, group, sizeof group)) < 0) {
		errno = -rc;
		snprintf(path, sizeof path, "%s/%s", root, name);
		goto fail_path;
	}
	snprintf(path, sizeof path, "%s/cgroup.subtree_control", group);
	if ((rc = sbx_write_file(path, "+memory +pids")) < 0) {
		errno = -rc;
		goto fail_path;
	}
	sbx_write_file(path, "+cpu");
	snprintf(line, sizeof line, "slot%u", index);
	if ((rc = sbx_cg_mkdir2(group, line, cg->v2_slot, sizeof cg->v2_slot)) < 0) {
		errno = -rc;
		snprintf(path, sizeof path, "%s", cg->v2_slot);
		goto fail_path;
	}
	snprintf(path, sizeof path, "%s/cgroup.subtree_control", cg->v2_slot);
	if ((rc = sbx_write_file(path, "+memory +pids")) < 0) {
		errno = -rc;
		goto fail_path;
	}
	cg->v2_slot_fd = open(cg->v2_slot, O_DIRECTORY | O_CLOEXEC);
	if (cg->v2_slot_fd < 0)
		goto fail_path;
	/* A run group left by a crashed predecessor of this slot. */
	unlinkat(cg->v2_slot_fd, "run", AT_REMOVEDIR);
	return 0;
fail_path:
	sbx_set_error(err, errlen, "cgroup v2 %s: %s", path, strerror(errno));
	return -1;
}

struct sbx_cgroup *sbx_cg_open(const char *name, unsigned index, char *err, size_t errlen)
{
	struct sbx_cgroup *cg = calloc(1, sizeof *cg);
	char v2[256];
	int i;

	if (!cg) {
		sbx_set_error(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < V1_COUNT; i++)
		cg->v1_dir[i] = -1;
	cg->v2_slot_fd = cg->v2_run_fd = cg->v2_peak_fd = -1;
	cg->version = detect(cg->v1_mnt, v2, sizeof v2);
	if (cg->version == 0) {
		sbx_cg_probe(err, errlen);
		goto fail;
	}
	if (cg->version == 1 ? open_v1(cg, name, index, err, errlen) < 0
			     : open_v2(cg, v2, name, index, err, errlen) < 0)
		goto fail;
	return cg;
fail:
	sbx_cg_close(cg);
	return NULL;
}

void sbx_cg_close(struct sbx_cgroup *cg)
{
	int i;

	if (!cg)
		return;
	if (cg->version == 1) {
		char pid[32], path[300];

		/* Leave the slot's groups so they can be removed (the CLI opens one per call). */
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		for (i = 0; i < V1_COUNT; i++) {
			if (cg->v1_dir[i] < 0)
				continue;
			snprintf(path, sizeof path, "%s/cgroup.procs", cg->v1_mnt[i]);
			sbx_write_file(path, pid);
			rmdir(cg->v1_path[i]); /* fails harmlessly while another process uses it */
		}
	}
	for (i = 0; i < V1_COUNT; i++)
		if (cg->v1_dir[i] >= 0)
			close(cg->v1_dir[i]);
	if (cg->v2_run_fd >= 0)
		close(cg->v2_run_fd);
	if (cg->v2_peak_fd >= 0)
		close(cg->v2_peak_fd);
	if (cg->v2_slot_fd >= 0) {
		/* v2: runs are born in slotN/run and the slot process never joins, so the slot's
		 * groups can go (the CLI opens one per call); the parent goes once it is empty. */
		char *slash;

		unlinkat(cg->v2_slot_fd, "run", AT_REMOVEDIR);
		close(cg->v2_slot_fd);
		rmdir(cg->v2_slot);
		slash = strrchr(cg->v2_slot, '/');
		if (slash) {
			*slash = '\0';
			rmdir(cg->v2_slot); /* fails harmlessly while another slot uses it */
		}
	}
	free(cg);
}

int sbx_cg_version(const struct sbx_cgroup *cg)
{
	return cg->version;
}

static int prepare_v1(struct sbx_cgroup *cg, const struct sbx_limits *lim, char *err, size_t errlen)
{
	int mem = cg->v1_dir[V1_MEMORY];
	uint64_t usage = 0, cache = 0, limit;
	int rc;

	if ((rc = read_u64at(mem, "memory.usage_in_bytes", &usage)) < 0)
		goto fail;
	/* Page cache charged by earlier runs is reclaimable: only the rest is our own overhead. */
	if (read_keyat(mem, "memory.stat", "total_cache", &cache) < 0)
		cache = 0;
	cg->base_usage = usage;
	cg->base_anon = usage > cache ? usage - cache : 0;
	if (read_keyat(mem, "memory.oom_control", "oom_kill", &cg->base_oom) < 0)
		cg->base_oom = 0;
	limit = lim->memory_bytes + (usage > cache ? usage - cache : 0);
	/* memsw must stay >= limit at every step: lowering goes limit first, raising memsw first.
	 */
	if (cg->memsw && limit > cg->mem_limit) {
		if ((rc = write_u64at(mem, "memory.memsw.limit_in_bytes", limit)) < 0 &&
		    cg->mem_limit != 0)
			goto fail;
	}
	if ((rc = write_u64at(mem, "memory.limit_in_bytes", limit)) < 0)
		goto fail;
	if (cg->memsw && (rc = write_u64at(mem, "memory.memsw.limit_in_bytes", limit)) < 0)
		goto fail;
	cg->mem_limit = limit;
	if ((rc = sbx_write_fileat(mem, "memory.max_usage_in_bytes", "0")) < 0 ||
	    (rc = sbx_write_fileat(cg->v1_dir[V1_CPUACCT], "cpuacct.usage", "0")) < 0 ||
	    /* the slot process and init count too */
	    (rc = write_u64at(cg->v1_dir[V1_PIDS], "pids.max", (uint64_t)lim->processes + 2)) < 0)
		goto fail;
	return 0;
fail:
	sbx_set_error(err, errlen, "cgroup v1 limits: %s", strerror(-rc));
	return -1;
}

int sbx_cg_prewarm(struct sbx_cgroup *cg, char *err, size_t errlen)
{
	int fd;

	if (cg->version == 1)
		return -1;
	if (mkdirat(cg->v2_slot_fd, "run", 0755) < 0 && errno != EEXIST) {
		sbx_set_error(err, errlen, "cgroup v2 run group: %s", strerror(errno));
		return -2;
	}
	fd = openat(cg->v2_slot_fd, "run", O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		sbx_set_error(err, errlen, "cgroup v2 run group: %s", strerror(errno));
		return -2;
	}
	cg->v2_run_fd = fd;
	return fd;
}

static int prepare_v2(struct sbx_cgroup *cg, const struct sbx_limits *lim, char *err, size_t errlen)
{
	int rc, fd = cg->v2_run_fd;
	uint64_t usec = 0;

	if ((rc = write_u64at(fd, "memory.max", lim->memory_bytes)) < 0 ||
	    (rc = write_u64at(fd, "pids.max", (uint64_t)lim->processes + 1)) < 0) {
		sbx_set_error(err, errlen, "cgroup v2 limits: %s", strerror(-rc));
		return -1;
	}
	sbx_write_fileat(fd, "memory.swap.max", "0"); /* absent without swap accounting */
	if (read_keyat(fd, "cpu.stat", "usage_usec", &usec) == 0)
		cg->cpu_base_ns = usec * 1000;
	/* Since 6.12 a write resets the peak as seen through this open file. */
	cg->v2_peak_fd = openat(fd, "memory.peak", O_RDWR | O_CLOEXEC);
	if (cg->v2_peak_fd >= 0 && write(cg->v2_peak_fd, "reset", 5) < 0) {
		/* older kernel: the peak then includes the prepared sandbox's small footprint */
	}
	return 0;
}

int sbx_cg_prepare(struct sbx_cgroup *cg, const struct sbx_limits *lim, char *err, size_t errlen)
{
	return cg->version == 1 ? prepare_v1(cg, lim, err, errlen)
				: prepare_v2(cg, lim, err, errlen);
}

int sbx_cg_cpu(struct sbx_cgroup *cg, uint64_t *ns)
{
	uint64_t usec;
	int rc;

	if (cg->version == 1)
		return read_u64at(cg->v1_dir[V1_CPUACCT], "cpuacct.usage", ns);
	rc = read_keyat(cg->v2_run_fd, "cpu.stat", "usage_usec", &usec);
	if (rc == 0)
		*ns = usec * 1000 > cg->cpu_base_ns ? usec * 1000 - cg->cpu_base_ns : 0;
	return rc;
}

int sbx_cg_anon(struct sbx_cgroup *cg, uint64_t *bytes)
{
	/* v1: the slot's group holds this run and the slot's own process, whose share (taken at
	 * prepare) is left out; "rss" is anonymous memory. v2: the run's own group. */
	if (cg->version == 1) {
		int rc = read_keyat(cg->v1_dir[V1_MEMORY], "memory.stat", "rss", bytes);

		if (rc == 0)
			*bytes = *bytes > cg->base_anon ? *bytes - cg->base_anon : 0;
		return rc;
	}
	return read_keyat(cg->v2_run_fd, "memory.stat", "anon", bytes);
}

int sbx_cg_finish(struct sbx_cgroup *cg, struct sbx_cg_stats *st, char *err, size_t errlen)
{
	uint64_t v = 0;
	int i, rc;

	memset(st, 0, sizeof *st);
	if (cg->version == 1) {
		int mem = cg->v1_dir[V1_MEMORY];

		sbx_cg_cpu(cg, &st->cpu_ns);
		if (read_u64at(mem, "memory.max_usage_in_bytes", &v) == 0)
			st->peak_bytes = v > cg->base_usage ? v - cg->base_usage : 0;
		if (read_keyat(mem, "memory.oom_control", "oom_kill", &v) == 0)
			st->oom_kills = v - cg->base_oom;
		return 0;
	}
	if (cg->v2_run_fd < 0)
		return 0;
	sbx_cg_cpu(cg, &st->cpu_ns);
	if (cg->v2_peak_fd >= 0) {
		char buf[32];
		ssize_t n = pread(cg->v2_peak_fd, buf, sizeof buf - 1, 0);

		if (n > 0) {
			buf[n] = '\0';
			st->peak_bytes = strtoull(buf, NULL, 10);
		}
		close(cg->v2_peak_fd);
		cg->v2_peak_fd = -1;
	}
	if (read_keyat(cg->v2_run_fd, "memory.events", "oom_kill", &v) == 0)
		st->oom_kills = v;
	/* The namespace's init is dead, so this is belt and braces: nothing may outlive the run. */
	sbx_write_fileat(cg->v2_run_fd, "cgroup.kill", "1");
	for (i = 0; i < 200; i++) {
		if (read_keyat(cg->v2_run_fd, "cgroup.events", "populated", &v) == 0 && v == 0)
			break;
		poll(NULL, 0, 5);
	}
	close(cg->v2_run_fd);
	cg->v2_run_fd = -1;
	if (unlinkat(cg->v2_slot_fd, "run", AT_REMOVEDIR) < 0) {
		rc = errno;
		sbx_set_error(err, errlen, "remove cgroup v2 run group: %s", strerror(rc));
		return -1;
	}
	return 0;
}

/* Remove the subtree `name` (its slot groups, then itself) from every hierarchy: what a stopped
 * broker leaves must not accumulate. Groups still in use stay (rmdir fails on them). */
int sbx_cg_enter_supervisor(char *err, size_t errlen)
{
	char v1[V1_COUNT][256], v2[256], root[1100];

	if (detect(v1, v2, sizeof v2) != 2)
		return 0; /* v1: each slot joins its own groups at open */
	return sbx_cg_v2_service_root(v2, true, root, sizeof root, err, errlen);
}

void sbx_cg_remove_tree(const char *name)
{
	char v1[V1_COUNT][256], v2[256], v2root[1100], path[1400], cpu[256];
	int version = detect(v1, v2, sizeof v2), i, n = 1;
	const char *roots[V1_COUNT + 1];

	if (version == 1) {
		n = V1_COUNT;
		for (i = 0; i < V1_COUNT; i++)
			roots[i] = v1[i];
		/* the slots' cpu groups (sbx_cg_join_cpu) */
		if (sbx_cg_v1_cpu_root(cpu, sizeof cpu) == 0 && strcmp(cpu, v1[V1_CPUACCT]) != 0)
			roots[n++] = cpu;
	} else if (version == 2) {
		/* slots live under <service cgroup>/<name> (the hierarchy's root under make run) */
		if (sbx_cg_v2_service_root(v2, false, v2root, sizeof v2root, NULL, 0) < 0)
			return;
		roots[0] = v2root;
	} else {
		return;
	}
	for (i = 0; i < n; i++) {
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof path, "%s/%s", roots[i], name);
		d = opendir(path);
		if (!d)
			goto restore;
		while ((e = readdir(d))) {
			char sub[1700];

			if (strncmp(e->d_name, "slot", 4) != 0)
				continue;
			snprintf(sub, sizeof sub, "%s/%s/run", path, e->d_name);
			rmdir(sub);
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			rmdir(sub);
		}
		closedir(d);
		rmdir(path);
	restore:
		/* A delegated group is left as it was given: without the controllers open_v2
		 * enabled for its children, so the service manager can put the next start's process
		 * straight into it again (a group with controllers enabled for its children cannot
		 * take processes). Never at the hierarchy's root, which is not ours alone. */
		if (version == 2 && strcmp(v2root, v2) != 0) {
			snprintf(path, sizeof path, "%s/cgroup.subtree_control", v2root);
			sbx_write_file(path, "-cpu -memory -pids");
		}
	}
}

int sbx_cg_oom_kills(struct sbx_cgroup *cg, uint64_t *n)
{
	if (cg->version == 1) {
		int rc = read_keyat(cg->v1_dir[V1_MEMORY], "memory.oom_control", "oom_kill", n);

		if (rc == 0)
			*n = *n > cg->base_oom ? *n - cg->base_oom : 0;
		return rc;
	}
	return read_keyat(cg->v2_run_fd, "memory.events", "oom_kill", n);
}

/* The contexts' parent group `name` (their groups are its slotN children, made by sbx_cg_open):
 * every context's memory together is held under `memory_bytes`, so idle contexts can never take
 * the memory runs need. Stale children of a previous broker are removed first. */
int sbx_cg_make_parent(const char *name, uint64_t memory_bytes, char *err, size_t errlen)
{
	char v1[V1_COUNT][256], v2[256], root[1100], group[1400], path[1500];
	int version, rc, i;

	sbx_cg_remove_tree(name);
	version = detect(v1, v2, sizeof v2);
	if (version == 2) {
		if (sbx_cg_v2_service_root(v2, false, root, sizeof root, err, errlen) < 0)
			return -1;
		snprintf(path, sizeof path, "%s/cgroup.subtree_control", root);
		if ((rc = sbx_write_file(path, "+memory +pids")) < 0)
			goto fail;
		sbx_write_file(path, "+cpu");
		if ((rc = sbx_cg_mkdir2(root, name, group, sizeof group)) < 0) {
			snprintf(path, sizeof path, "%s/%s", root, name);
			goto fail;
		}
		snprintf(path, sizeof path, "%s/cgroup.subtree_control", group);
		if ((rc = sbx_write_file(path, "+memory +pids")) < 0)
			goto fail;
		sbx_write_file(path, "+cpu");
		snprintf(path, sizeof path, "%s/memory.max", group);
		snprintf(root, sizeof root, "%llu", (unsigned long long)memory_bytes);
		if ((rc = sbx_write_file(path, root)) < 0)
			goto fail;
		snprintf(path, sizeof path, "%s/memory.swap.max", group);
		sbx_write_file(path, "0");
		return 0;
	}
	if (version != 1) {
		sbx_cg_probe(err, errlen);
		return -1;
	}
	for (i = 0; i < V1_COUNT; i++) {
		if ((rc = sbx_cg_mkdir2(v1[i], name, group, sizeof group)) < 0) {
			snprintf(path, sizeof path, "%s/%s", v1[i], name);
			goto fail;
		}
	}
	snprintf(path, sizeof path, "%s/%s/memory.limit_in_bytes", v1[V1_MEMORY], name);
	snprintf(root, sizeof root, "%llu", (unsigned long long)memory_bytes);
	if ((rc = sbx_write_file(path, root)) < 0)
		goto fail;
	snprintf(path, sizeof path, "%s/%s/memory.swappiness", v1[V1_MEMORY], name);
	sbx_write_file(path, "0");
	return 0;
fail:
	sbx_set_error(err, errlen, "contexts' cgroup %s: %s", path, strerror(-rc));
	return -1;
}

/* Runs' signals (sbx_client_run_signal): every process of the run's group but its init and the
 * caller (on v1 the slot process shares the group). Pids are read from the group itself and
 * signalled at once; a pid could only be another process's after the run's one died and the pid
 * space wrapped in between. */
int sbx_cg_signal(struct sbx_cgroup *cg, int sig, pid_t except)
{
	int dir = cg->version == 1 ? cg->v1_dir[V1_PIDS] : cg->v2_run_fd, fd, sent = 0;
	pid_t self = getpid();
	FILE *f;
	long pid;

	if (dir < 0)
		return -ESRCH;
	fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 0 && pid != except && pid != self && kill((pid_t)pid, sig) == 0)
			sent++;
	fclose(f);
	return sent ? 0 : -ESRCH;
}

int sbx_cg_move(struct sbx_cgroup *cg, pid_t pid, bool into)
{
	char buf[32];
	int i, rc;

	if (cg->version != 1)
		return -ENOTSUP;
	snprintf(buf, sizeof buf, "%d", (int)pid);
	for (i = 0; i < V1_COUNT; i++) {
		int dir = into ? cg->v1_dir[i]
			       : openat(cg->v1_dir[i], "..", O_DIRECTORY | O_PATH | O_CLOEXEC);

		if (dir < 0)
			return -errno;
		rc = sbx_write_fileat(dir, "cgroup.procs", buf);
		if (!into)
			close(dir);
		if (rc < 0)
			return rc;
	}
	return 0;
}
