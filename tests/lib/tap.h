/* tap.h: the smallest TAP producer for C unit tests. One header, no state beyond a counter. */
#ifndef SBX_TAP_H
#define SBX_TAP_H
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

#define TAP_OK(cond, ...)                                                                          \
	do {                                                                                       \
		int tap_c_ = !!(cond);                                                             \
		printf("%sok %d - ", tap_c_ ? "" : "not ", ++tap_n);                               \
		printf(__VA_ARGS__);                                                               \
		printf("\n");                                                                      \
		if (!tap_c_) {                                                                     \
			tap_failed++;                                                              \
			printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);            \
		}                                                                                  \
		fflush(stdout);                                                                    \
	} while (0)

#define TAP_SKIP(why, ...)                                                                         \
	do {                                                                                       \
		printf("ok %d - ", ++tap_n);                                                       \
		printf(__VA_ARGS__);                                                               \
		printf(" # SKIP %s\n", why);                                                       \
	} while (0)

#define TAP_DIAG(...) (printf("# "), printf(__VA_ARGS__), printf("\n"))

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
#endif
