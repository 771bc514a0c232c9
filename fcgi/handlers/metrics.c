/* metrics.c (handlers): GET /v1/metrics, the Prometheus text exposition for operators. Only the
 * clients named in the config's "metrics": {"clients": [...]} may read it (403 for the others):
 * it shows every client's name and load. The counters are in http/metrics.c. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "handlers.h"
#include "../http/metrics.h"

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
	int fd;

	if (!metrics_reader(req->cfg, req->client)) {
		api_error(resp, 403, "forbidden", NULL,
			  "Only the operators named in the config's metrics.clients may read the "
			  "metrics.");
		return;
	}
	http_conf(req, &hc);
	fd = memfd_create("sbx-metrics", MFD_CLOEXEC);
	out = fd >= 0 ? fdopen(dup(fd), "w+") : NULL;
	if (!out || metrics_write(&hc, out) < 0 || fflush(out) != 0) {
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
