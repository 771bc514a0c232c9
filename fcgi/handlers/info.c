/* info.c: the routes that describe the service: GET /, health, languages, tool schemas, OpenAPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "handlers.h"
#include "../http/metrics.h"

void h_root(const struct api_req *req, struct api_resp *resp)
{
	(void)req;
	/* nginx sends browsers asking for text/html to the playground; whatever reaches us gets the
	 * seed's answer. */
	api_json(resp, 200, json_object_new_string("ping"));
}

/* A good answer (a usable broker probe, a listening pool) is reused for INFO_PROBE_CACHE_MS:
 * monitors polling health at a high rate then cost one check per worker per interval. A failure
 * is never reused, so an outage shows at once (a broker that died shows within 0.2 s). */
#define INFO_PROBE_CACHE_MS 200

static bool still_fresh(const struct timespec *at, const struct timespec *now)
{
	return at->tv_sec &&
	       (now->tv_sec - at->tv_sec) * 1000 + (now->tv_nsec - at->tv_nsec) / 1000000 <
		   INFO_PROBE_CACHE_MS;
}

static bool probe_broker(const char *socket_path, struct sbx_probe *probe)
{
	static struct sbx_probe cached;
	static struct timespec at;
	struct timespec now;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (still_fresh(&at, &now)) {
		*probe = cached;
		return true;
	}
	memset(probe, 0, sizeof(*probe));
	ok = sbx_client_probe(socket_path, probe) == 0 && probe->usable;
	at = ok ? now : (struct timespec){0, 0};
	if (ok)
		cached = *probe;
	return ok;
}

/* Does a socket listen at `listen`: a Unix socket path ("/..."), or "[HOST]:PORT" of a TCP one?
 * Read from /proc/net, so no connection is made: no worker of the pool is woken, and the health
 * pool needs no right to connect to the main pool's socket. */
static bool listening_now(const char *listen)
{
	const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	bool unix_path = listen[0] == '/', found = false;
	const char *colon = strrchr(listen, ':');
	unsigned long want_port = colon ? strtoul(colon + 1, NULL, 10) : 0;
	char *line = NULL;
	size_t cap = 0;

	for (size_t f = 0; f < (unix_path ? 1 : 2) && !found; f++) {
		FILE *fp = fopen(unix_path ? "/proc/net/unix" : files[f], "re");

		if (!fp)
			continue;
		while (!found && getline(&line, &cap, fp) > 0) {
			unsigned flags, st, port;
			int at = -1;

			line[strcspn(line, "\n")] = '\0';
			if (unix_path) {
				/* Num RefCount Protocol Flags Type St Inode Path; a listener has
				 * __SO_ACCEPTCON (0x10000) in Flags and state 01 (unconnected). */
				if (sscanf(line, "%*s %*x %*x %x %*x %x %*u %n", &flags, &st,
					   &at) == 2 &&
				    at > 0 && (flags & 0x10000) && st == 1 &&
				    !strcmp(line + at, listen))
					found = true;
			} else if (sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x",
					  &port, &st) == 2 &&
				   st == 0x0A /* TCP_LISTEN */ && port == want_port) {
				found = true;
			}
		}
		fclose(fp);
	}
	free(line);
	return found;
}

static bool pool_listening(const char *listen)
{
	static struct timespec at;
	struct timespec now;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (still_fresh(&at, &now))
		return true;
	ok = listening_now(listen);
	at = ok ? now : (struct timespec){0, 0};
	return ok;
}

static void health_error(struct json_object *o, struct api_resp *resp, const char *code,
			 const char *message)
{
	/* Still the health document, plus the envelope every failure carries. */
	struct json_object *e = json_object_new_object();

	json_object_object_add(e, "code", json_object_new_string(code));
	json_object_object_add(e, "message", json_object_new_string(message));
	json_object_object_add(o, "error", e);
	resp->error_code = code;
	api_header(resp, "Retry-After: 5");
}

/* "runs": machine slots in use and in all (admission's, http/admit.c); "saturated" when none is
 * free: a busy host, not a down one (the status stays "ok"), that new runs get 503 busy. */
static void health_runs(const struct api_req *req, struct json_object *o)
{
	struct json_object *r = json_object_new_object();
	struct admit_caps caps;
	struct http_conf hc;
	uint64_t used;

	http_conf(req, &hc);
	used = metrics_machine_in_use(&hc);
	admit_caps(&hc, &caps);
	json_object_object_add(r, "in_flight", json_object_new_int64((int64_t)used));
	json_object_object_add(r, "slots", json_object_new_int64(caps.machine));
	json_object_object_add(r, "saturated",
			       json_object_new_boolean(caps.machine && used >= caps.machine));
	json_object_object_add(o, "runs", r);
}

void h_health(const struct api_req *req, struct api_resp *resp)
{
	struct sbx_probe probe;
	struct json_object *o = json_object_new_object(), *sb = json_object_new_object();
	const char *pool_listen = req->cfg->pool_listen;
	const struct store_conf *conf = h_store(req->cfg);
	uint64_t disk_free = 0;
	bool sandbox_ok, pool_ok, disk_ok;

	sandbox_ok = probe_broker(req->cfg->broker_socket, &probe);
	/* Answered by the health pool: is the main pool there to serve the other routes? Answered
	 * by the main pool itself (no SBX_POOL_LISTEN): this answer is the proof. */
	pool_ok = !pool_listen || pool_listening(pool_listen);
	/* Below the reserve nothing new can start (507): the host is not healthy. A volume whose
	 * space cannot be read says so too. */
	disk_ok = store_disk_space(conf, &disk_free, NULL) == 0 && disk_free > conf->reserve_bytes;
	if (!probe.detail[0])
		snprintf(probe.detail, sizeof(probe.detail), "the sandbox broker did not answer");
	json_object_object_add(
	    o, "status",
	    json_object_new_string(sandbox_ok && pool_ok && disk_ok ? "ok" : "unavailable"));
	json_object_object_add(o, "version", json_object_new_string(SBX_VERSION));
	/* The broker's detail names cgroup paths, and on some hosts the container's id: only an
	 * authenticated caller (a token) gets it and the cgroup version; a load balancer's
	 * anonymous probe learns whether the service works, nothing about the host. */
	if (req->client && req->client[0]) {
		json_object_object_add(sb, "cgroup_version",
				       json_object_new_int(probe.cgroup_version));
		json_object_object_add(sb, "detail", json_object_new_string(probe.detail));
	}
	json_object_object_add(sb, "usable", json_object_new_boolean(sandbox_ok));
	/* Whether a session's disk quota also holds inside runs (btrfs qgroups), or only on the
	 * file API's own writes. */
	json_object_object_add(sb, "quota_in_runs",
			       json_object_new_boolean(session_quota_in_runs(conf)));
	json_object_object_add(o, "sandbox", sb);
	json_object_object_add(o, "pool",
			       json_object_new_string(!pool_listen ? "self"
						      : pool_ok	   ? "listening"
								   : "not_listening"));
	json_object_object_add(o, "languages", json_object_new_int((int)req->cfg->nlangs));
	json_object_object_add(o, "disk_free_bytes", json_object_new_int64((int64_t)disk_free));
	json_object_object_add(o, "disk_reserve_bytes",
			       json_object_new_int64((int64_t)conf->reserve_bytes));
	health_runs(req, o);
	if (!sandbox_ok)
		health_error(o, resp, "sandbox_unavailable",
			     "The sandbox cannot start runs on this host; sandbox.detail (to "
			     "authenticated callers) says why.");
	else if (!pool_ok)
		health_error(o, resp, "pool_unavailable",
			     "The worker pool of this host is not accepting requests.");
	else if (!disk_ok)
		health_error(o, resp, "insufficient_storage",
			     "The state volume is below its disk reserve (disk_free_bytes, "
			     "disk_reserve_bytes): no new session, upload or run can start.");
	api_json(resp, sandbox_ok && pool_ok && disk_ok ? 200 : 503, o);
}

/* A new JSON array of the strings of v (NULL-terminated); the caller owns it. */
static struct json_object *str_list(char *const *v)
{
	struct json_object *a = json_object_new_array();

	for (; v && *v; v++)
		json_object_array_add(a, json_object_new_string(*v));
	return a;
}

void h_languages(const struct api_req *req, struct api_resp *resp)
{
	struct json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < req->cfg->nlangs; i++) {
		const struct lang *l = &req->cfg->langs[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "id", json_object_new_string(l->id));
		json_object_object_add(o, "version", json_object_new_string(l->version));
		json_object_object_add(o, "aliases", str_list(l->aliases));
		json_object_object_add(o, "compiled", json_object_new_boolean(l->compile != NULL));
		json_object_object_add(o, "source_file", json_object_new_string(l->source_file));
		json_object_array_add(a, o);
	}
	api_json(resp, 200, a);
}

struct json_object *info_openapi_load(char *err, size_t errlen)
{
	char path[4200];
	struct json_object *doc;

	/* Next to the config file (a deployed layout), else in the repo the binary came from. */
	snprintf(path, sizeof(path), "%s/openapi.json", config_dir);
	doc = json_object_from_file(path);
	if (!doc) {
		snprintf(path, sizeof(path), "%s/fcgi/openapi.json", config_repo_dir());
		doc = json_object_from_file(path);
	}
	if (!doc)
		snprintf(err, errlen, "cannot read %s: %s", path, json_util_get_last_err());
	return doc;
}

void h_openapi(const struct api_req *req, struct api_resp *resp)
{
	/* Read once per worker: the file only changes with a deploy, which restarts workers. */
	static struct json_object *doc;
	char err[512];

	(void)req;
	if (!doc)
		doc = info_openapi_load(err, sizeof(err));
	if (!doc) {
		api_error(resp, 500, "internal_error", NULL, "The OpenAPI document is missing: %s",
			  err);
		return;
	}
	api_json(resp, 200, json_object_get(doc));
}
