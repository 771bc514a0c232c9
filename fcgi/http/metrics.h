/* metrics.h: counters shared by every worker of a stack, for GET /v1/metrics (metrics.c). */
#ifndef SBX_FCGI_METRICS_H
#define SBX_FCGI_METRICS_H

#include <stdio.h>

#include "api.h"

enum metric_event {
	METRIC_ADMITTED,	  /* a run admitted */
	METRIC_REJECT_PER_CLIENT, /* 429 too_many_runs: the client's share is taken */
	METRIC_REJECT_MACHINE,	  /* 503 busy: every machine slot it may take is taken */
	METRIC_EVENTS
};

/* Count one event for client (NULL or "" counts in the totals only). Never fails the request: a
 * counter that cannot be written is skipped. */
void metrics_count(const struct http_conf *cfg, const char *client, enum metric_event ev);

/* Write the Prometheus text exposition (version 0.0.4) of the counters, the slots held right now
 * (from /proc/net/unix) and the caps in force to out. Returns 0 or -1. What is on disk (the
 * volume, sessions, nginx's refusals) is the store's: the handler adds it. */
int metrics_write(const struct http_conf *cfg, FILE *out);

/* The shared counters' file of this state dir: /dev/shm/sbx-metrics-<hash>. */
void metrics_path(const struct http_conf *cfg, char *buf, size_t len);

/* Machine run slots held right now (all clients), read from admission's names. */
uint64_t metrics_machine_in_use(const struct http_conf *cfg);

#endif
