/* fuzz_setup.h: what the route-level fuzz drivers share: the libFuzzer entry points' prototypes,
 * the checkout's config, and (fuzz_state) a private state directory removed at exit. Header only:
 * each driver is one translation unit (tests/build.mk links it with the fcgi code it fuzzes). */
#ifndef SBX_FUZZ_SETUP_H
#define SBX_FUZZ_SETUP_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fcgi/handlers/handlers.h"

#ifndef FUZZ_REPO
#define FUZZ_REPO "."
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct config cfg;
static char fuzz_state_dir[64] __attribute__((unused));

/* The checkout's fcgi/sbx.conf.json into cfg; aborts (naming the driver) when it cannot. */
static inline void fuzz_config(const char *name)
{
	char err[256];

	if (config_load(FUZZ_REPO "/fcgi/sbx.conf.json", &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", name, err);
		abort();
	}
}

static inline int fuzz_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	remove(p);
	return 0;
}

static inline void fuzz_state_cleanup(void)
{
	if (fuzz_state_dir[0])
		nftw(fuzz_state_dir, fuzz_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* fuzz_config, then cfg.state_dir is a fresh /tmp/<name>.XXXXXX, removed at exit. */
static inline void fuzz_state(const char *name)
{
	fuzz_config(name);
	snprintf(fuzz_state_dir, sizeof(fuzz_state_dir), "/tmp/%s.XXXXXX", name);
	if (!mkdtemp(fuzz_state_dir))
		abort();
	atexit(fuzz_state_cleanup);
	free(cfg.state_dir);
	cfg.state_dir = strdup(fuzz_state_dir);
}

#endif
