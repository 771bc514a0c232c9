/* sbxd_opts.c: the broker's command line, parsed and checked (sbxd.c runs the broker). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"
#include "sbxd.h"

static uint64_t parse_reserve(const char *arg)
{
	char *end = NULL;
	unsigned long long mb;

	if (strcmp(arg, "auto") == 0)
		return SBX_QUOTA_RESERVE_AUTO;
	errno = 0;
	mb = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || mb > (1ull << 40)) {
		fprintf(stderr, "sbxd: --disk-reserve-mb takes auto or a number of MiB\n");
		exit(2);
	}
	return (uint64_t)mb << 20;
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: sbxd --socket PATH --slots N --client-uid UID --files-uid UID --files-gid GID\n"
	    "            [--uid-base 200000] [--cgroup-name sbx] [--bind-ro HOST:INSIDE]...\n"
	    "            [--disk-reserve-mb 0|N|auto] [--contexts N] [--contexts-memory-mb M]\n"
	    "            [--background-runs N (background slots of their own; default slots/2)]\n");
	exit(64);
}

void sbxd_parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"socket", 1, 0, 's'},
	    {"slots", 1, 0, 'n'},
	    {"client-uid", 1, 0, 'c'},
	    {"files-uid", 1, 0, 'u'},
	    {"files-gid", 1, 0, 'g'},
	    {"uid-base", 1, 0, 'b'},
	    {"cgroup-name", 1, 0, 'C'},
	    {"bind-ro", 1, 0, 'B'},
	    {"disk-reserve-mb", 1, 0, 'R'},
	    {"contexts", 1, 0, 'X'},
	    {"contexts-memory-mb", 1, 0, 'M'},
	    {"background-runs", 1, 0, 'G'},
	    {0, 0, 0, 0},
	};
	int c;
	bool have_client = false;

	memset(o, 0, sizeof *o);
	o->slots = 4;
	o->cfg.uid_base = 200000;
	o->cfg.cgroup_name = "sbx";
	o->cfg.binds = o->binds;
	o->contexts_memory = 2048ull << 20;
	o->background = -1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o->socket = optarg;
			break;
		case 'n':
			o->slots = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'c':
			o->client_uid = (uid_t)strtoul(optarg, NULL, 10);
			have_client = true;
			break;
		case 'u':
			o->cfg.files_uid = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'g':
			o->cfg.files_gid = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'b':
			o->cfg.uid_base = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'C':
			o->cfg.cgroup_name = optarg;
			break;
		case 'R':
			sbx_quota_set_reserve(parse_reserve(optarg));
			break;
		case 'X':
			o->contexts = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'G':
			o->background = (int)strtol(optarg, NULL, 10);
			break;
		case 'M':
			o->contexts_memory = (uint64_t)strtoull(optarg, NULL, 10) << 20;
			break;
		case 'B': {
			char *colon = strchr(optarg, ':');

			if (!colon || o->cfg.nbinds >= MAX_BINDS || optarg[0] != '/' ||
			    colon[1] != '/')
				usage();
			*colon = '\0';
			o->binds[o->cfg.nbinds].host = optarg;
			o->binds[o->cfg.nbinds].inside = colon + 1;
			o->cfg.nbinds++;
			break;
		}
		default:
			usage();
		}
	}
	if (!o->socket || !have_client || o->slots == 0 || o->slots > MAX_SLOTS ||
	    o->contexts > SBX_CTX_MAX || (o->contexts && o->contexts_memory < (16ull << 20)) ||
	    !o->cfg.files_uid || !o->cfg.files_gid || !o->cfg.uid_base)
		usage();
	/* Background runs hold slots of their own for their life, as many as may run at once. */
	if (o->background < 0)
		o->background = (int)(o->slots / 2);
	if (o->slots + (unsigned)o->background > MAX_SLOTS) {
		fprintf(stderr, "sbxd: --slots plus --background-runs must be at most %d\n",
			MAX_SLOTS);
		exit(2);
	}
	snprintf(o->bg_cgroup, sizeof o->bg_cgroup, "%s-bg", o->cfg.cgroup_name);
}
