/* cgroup_cpu.c: the slots' cpu groups (sbx_cg_join_cpu), apart from the run cgroups of
 * cgroup.c: a background slot's low weight (fail closed), a foreground slot's one share each. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The v1 cpu hierarchy (mounted alone, or with cpuacct), nested under the group we were started
 * in as nest_v1 does: 0, or -ENOENT when there is none. */
int sbx_cg_v1_cpu_root(char *out, size_t outlen)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024], mnt[256] = "";

	if (!f)
		return -errno;
	while (!mnt[0] && fgets(line, sizeof line, f)) {
		char m[256], fstype[64], opts[512], *tok, *save = NULL;
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", m) != 1 ||
		    sscanf(sep + 3, "%63s %*s %511s", fstype, opts) != 2 ||
		    strcmp(fstype, "cgroup") != 0)
			continue;
		for (tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "cpu") == 0)
				snprintf(mnt, sizeof mnt, "%s", m);
	}
	fclose(f);
	if (!mnt[0])
		return -ENOENT;
	snprintf(out, outlen, "%s", mnt);
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f)) {
		char *list = strchr(line, ':'), *path, *tok, *save = NULL;

		if (!list || !(path = strchr(list + 1, ':')))
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		for (tok = strtok_r(list + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (strcmp(tok, "cpu") == 0 && path[0] == '/' && strcmp(path, "/") != 0)
				snprintf(out, outlen, "%s%s", mnt, path);
	}
	fclose(f);
	return 0;
}

static int join_cpu_v1(const char *name, unsigned index, unsigned shares, char *err, size_t errlen)
{
	char root[256], group[600], slot[700], path[800], buf[32];
	int rc;

	if (sbx_cg_v1_cpu_root(root, sizeof root) < 0) {
		sbx_set_error(err, errlen,
			      "cpu weight needs the cgroup v1 cpu controller (cpu.shares): no cpu "
			      "hierarchy is mounted");
		return -1;
	}
	if ((rc = sbx_cg_mkdir2(root, name, group, sizeof group)) < 0) {
		snprintf(path, sizeof path, "%s/%s", root, name);
		goto fail;
	}
	snprintf(path, sizeof path, "%s/cpu.shares", group);
	snprintf(buf, sizeof buf, "%u", shares);
	if ((rc = sbx_write_file(path, buf)) < 0)
		goto fail;
	snprintf(buf, sizeof buf, "slot%u", index);
	if ((rc = sbx_cg_mkdir2(group, buf, slot, sizeof slot)) < 0) {
		snprintf(path, sizeof path, "%s", slot);
		goto fail;
	}
	/* every sandbox this slot forks from now on is born in it */
	snprintf(path, sizeof path, "%s/cgroup.procs", slot);
	snprintf(buf, sizeof buf, "%d", (int)getpid());
	if ((rc = sbx_write_file(path, buf)) < 0)
		goto fail;
	return 0;
fail:
	sbx_set_error(err, errlen, "cpu group %s: %s", path, strerror(-rc));
	return -1;
}

static int join_cpu_v2(const char *mnt, const char *name, unsigned weight, char *err, size_t errlen)
{
	char root[1100], path[1400], buf[512];
	int rc;

	if (sbx_cg_v2_service_root(mnt, false, root, sizeof root, err, errlen) < 0)
		return -1;
	/* sbx_cg_open enabled cpu where it could; here it is required */
	snprintf(path, sizeof path, "%s/cgroup.subtree_control", root);
	sbx_write_file(path, "+cpu");
	if ((rc = sbx_read_fileat(AT_FDCWD, path, buf, sizeof buf)) < 0 ||
	    !sbx_cg_has_word(buf, "cpu")) {
		sbx_set_error(
		    err, errlen,
		    "cpu weight needs the cgroup v2 cpu controller (cpu.weight): it cannot "
		    "be enabled in %s",
		    path);
		return -1;
	}
	snprintf(path, sizeof path, "%s/%s/cpu.weight", root, name);
	snprintf(buf, sizeof buf, "%u", weight);
	if ((rc = sbx_write_file(path, buf)) < 0) {
		sbx_set_error(err, errlen, "cpu group %s: %s", path, strerror(-rc));
		return -1;
	}
	return 0;
}

int sbx_cg_join_cpu(const char *name, unsigned index, unsigned v1_shares, unsigned v2_weight,
		    char *err, size_t errlen)
{
	char v2[256];
	int version = sbx_cg_detect(v2, sizeof v2);

	if (version == 1)
		return join_cpu_v1(name, index, v1_shares, err, errlen);
	if (version == 2)
		return join_cpu_v2(v2, name, v2_weight, err, errlen);
	sbx_cg_probe(err, errlen);
	return -1;
}
