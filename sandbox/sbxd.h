/* sbxd.h: the broker's command line (sbxd_opts.c parses it for sbxd.c). */
#ifndef SBXD_H
#define SBXD_H

#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

#define MAX_SLOTS 256
#define MAX_BINDS 16

struct opts {
	const char *socket;
	unsigned slots;
	uid_t client_uid;
	struct sbx_config cfg;
	struct sbx_bind binds[MAX_BINDS];
	unsigned contexts;	  /* --contexts: the machine's cap (0: no contexts) */
	uint64_t contexts_memory; /* --contexts-memory-mb, bytes */
	int background;		  /* --background-runs: running at once, and as many background
				     slots (-1: slots/2) */
	char bg_cgroup[128];	  /* the background slots' cgroup name: <cgroup-name>-bg */
};

/* o filled from the command line and checked (usage and exit 64, or 2, on anything wrong). */
void sbxd_parse(int argc, char **argv, struct opts *o);

#endif
