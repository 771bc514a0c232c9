/* metrics.c (handlers): GET /v1/metrics, the Prometheus text exposition for operators. Only the
 * clients named in the config's "metrics": {"clients": [...]} may read it (403 for the others):
 * it shows every client's name and load. The counters are in http/metrics.c; what is on disk
 * (the volume's free space, sessions, nginx's own refusals) comes from the store (counters.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "handlers.h"
#include "../http/metrics.h"
#include "../store/store.h"

/* nginx's refusals (nginx/nginx.conf.in, nginx/sbx-site.conf.in): the counter file of each reason
 * under state_dir/log. */
static const struct {
	const char *reason, *file;
} nginx_refusals[] = {
    {"rate", "nginx-429-rate.log"},	       /* 429: limit_req (per client, or per address) */
    {"in_flight", "nginx-429-conn.log"},       /* 429: limit_conn (requests in flight) */
    {"connections", "nginx-refused-conn.log"}, /* closed: per-address connection cap */
};

/* The store's part of the exposition: the sessions volume and nginx's refusals. */
static void write_store_metrics(const struct config *cfg, FILE *out)
{
	const struct store_conf *sc = h_store(cfg);
	uint64_t free_bytes, n;
	size_t i;

	if (store_disk_space(sc, &free_bytes, NULL) == 0)
		fprintf(out,
			"# HELP sbx_disk_free_bytes Free bytes of the sessions volume.\n"
			"# TYPE sbx_disk_free_bytes gauge\n"
			"sbx_disk_free_bytes %" PRIu64 "\n",
			free_bytes);
	if (store_session_count(sc, &n) == 0)
		fprintf(out,
			"# HELP sbx_sessions Sessions on disk (all clients).\n"
			"# TYPE sbx_sessions gauge\n"
			"sbx_sessions %" PRIu64 "\n",
			n);
	fprintf(out,
		"# HELP sbx_nginx_rejections_total Requests or connections nginx itself refused, "
		"by reason (rate: 429 limit_req; in_flight: 429 limit_conn; connections: closed "
		"past the per-address connection cap).\n"
		"# TYPE sbx_nginx_rejections_total counter\n");
	for (i = 0; i < sizeof(nginx_refusals) / sizeof(nginx_refusals[0]); i++)
		if (store_refusal_count(sc, nginx_refusals[i].file, &n) == 0)
			fprintf(out, "sbx_nginx_rejections_total{reason=\"%s\"} %" PRIu64 "\n",
				nginx_refusals[i].reason, n);
}

/* The broker's part: live contexts per client, how many are busy, the memory they hold (the
 * shared contexts budget, API.md "Contexts"). Nothing is written when the broker does not answer:
 * health says that. */
static void write_context_metrics(const struct config *cfg, FILE *out)
{
	struct sbx_ctx_info *ctx = NULL;
	size_t n = 0, i, j;
	uint64_t busy = 0, mem = 0;

	if (sbx_client_ctx_list(cfg->broker_socket, NULL, &ctx, &n) < 0)
		return;
	fprintf(out, "# HELP sbx_contexts Live contexts (persistent interpreters), by client.\n"
		     "# TYPE sbx_contexts gauge\n");
	for (i = 0; i < n; i++) {
		uint64_t count = 0, kb = 0;

		for (j = 0; j < i && strcmp(ctx[j].owner, ctx[i].owner) != 0; j++) {
		}
		if (j < i)
			continue; /* this client was written already */
		for (j = i; j < n; j++)
			if (strcmp(ctx[j].owner, ctx[i].owner) == 0) {
				count++;
				kb += ctx[j].memory_kb;
			}
		fprintf(out, "sbx_contexts{client=\"%s\"} %" PRIu64 "\n", ctx[i].owner, count);
		fprintf(out, "sbx_context_memory_bytes{client=\"%s\"} %" PRIu64 "\n", ctx[i].owner,
			kb << 10);
	}
	for (i = 0; i < n; i++) {
		busy += ctx[i].busy;
		mem += ctx[i].memory_kb;
	}
	fprintf(out,
		"# HELP sbx_contexts_busy Contexts running a cell now (all clients).\n"
		"# TYPE sbx_contexts_busy gauge\n"
		"sbx_contexts_busy %" PRIu64 "\n"
		"# HELP sbx_contexts_memory_bytes Memory all contexts hold (the contexts budget).\n"
		"# TYPE sbx_contexts_memory_bytes gauge\n"
		"sbx_contexts_memory_bytes %" PRIu64 "\n",
		busy, mem << 10);
	free(ctx);
}

static bool metrics_reader(const struct config *cfg, const char *client)
{
	for (char **c = cfg->metrics_clients; c && *c; c++)
		if (client && !strcmp(*c, client))
			return true;
	return false;
}

void h_metrics(const struct api_req *req, struct api_resp *resp)
{
	struct http_conf hc;
	FILE *out;
	int fd, rc;

	if (!metrics_reader(req->cfg, req->client)) {
		api_error(resp, 403, "forbidden", NULL,
			  "Only the operators named in the config's metrics.clients may read the "
			  "metrics.");
		return;
	}
	http_conf(req, &hc);
	fd = memfd_create("sbx-metrics", MFD_CLOEXEC);
	out = fd >= 0 ? fdopen(dup(fd), "w+") : NULL;
	rc = out ? metrics_write(&hc, out) : -1;
	if (rc == 0) {
		write_store_metrics(req->cfg, out);
		write_context_metrics(req->cfg, out);
	}
	if (rc < 0 || ferror(out) || fflush(out) != 0) {
		if (out)
			fclose(out);
		if (fd >= 0)
			close(fd);
		api_error(resp, 500, "internal_error", NULL, "The metrics could not be written.");
		return;
	}
	resp->file_len = ftello(out);
	fclose(out);
	lseek(fd, 0, SEEK_SET);
	resp->status = 200;
	resp->file_fd = fd;
	resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
}
