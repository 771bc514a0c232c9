/* fcgi_config.c: loading the config: the repo default, env overrides, units, language lookup,
 * and refusing a broken file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fcgi/handlers/handlers.h"
#include "../lib/tap.h"

static int load_text(const char *text, struct config *cfg, char *err, size_t errlen)
{
	char path[] = "/tmp/fcgi-config-XXXXXX";
	int fd = mkstemp(path), rc;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return -2;
	close(fd);
	rc = config_load(path, cfg, err, errlen);
	unlink(path);
	return rc;
}

/* The caps admission applies, from the config as the handlers hand it to http/. */
static void caps_of(struct config *c, struct admit_caps *caps)
{
	struct api_req r = {.cfg = c};
	struct http_conf hc;

	http_conf(&r, &hc);
	admit_caps(&hc, caps);
}

int main(void)
{
	struct config cfg;
	char path[4200], err[512];
	const struct lang *l;

	setenv("SBX_STATE_DIR", "/tmp/state-x", 1);
	unsetenv("SBX_BROKER_SOCKET");
	snprintf(path, sizeof(path), "%s/fcgi/sbx.conf.json", config_repo_dir());
	TAP_OK(config_load(path, &cfg, err, sizeof(err)) == 0, "the repo's config loads%s%s",
	       err[0] ? ": " : "", err);
	TAP_OK(strcmp(cfg.state_dir, "/tmp/state-x") == 0, "SBX_STATE_DIR overrides state_dir");
	TAP_OK(cfg.broker_socket[0] == '/' && strstr(cfg.broker_socket, "/state/run/sbxd.sock"),
	       "a relative broker_socket is made absolute against the repo: %s", cfg.broker_socket);
	TAP_OK(cfg.defaults.wall_ms == 10000 && cfg.defaults.cpu_ms == 5000 &&
		   cfg.defaults.memory_bytes == 256ull << 20 && cfg.defaults.processes == 64 &&
		   cfg.defaults.output_bytes == 65536 &&
		   cfg.defaults.file_size_bytes == 16ull << 20,
	       "defaults as API.md suggests, in internal units");
	TAP_OK(cfg.maxima.wall_ms == 60000 && cfg.maxima.memory_bytes == 1024ull << 20, "maxima");
	TAP_OK(cfg.session_ttl_s == 3600 && cfg.session_quota_bytes == 100ull << 20 &&
		   cfg.runs_per_client == 8,
	       "session ttl, quota, per-client runs");
	l = config_lang(&cfg, "JS");
	TAP_OK(l && strcmp(l->id, "node") == 0, "aliases match case-insensitively");
	l = config_lang(&cfg, "c++");
	TAP_OK(l && strcmp(l->id, "cpp") == 0 && l->compile && strcmp(l->run[0], "/work/main") == 0,
	       "cpp: compiled, runs /work/main");
	TAP_OK(config_lang(&cfg, "cobol") == NULL && config_lang(&cfg, NULL) == NULL,
	       "unknown language: NULL");
	config_free(&cfg);

	setenv("SBX_BROKER_SOCKET", "/run/b.sock", 1);
	TAP_OK(
	    load_text("{\"state_dir\":\"/"
		      "s\",\"broker_socket\":\"x\",\"languages\":[{\"id\":\"t\",\"version\":\"9\","
		      "\"source_file\":\"t\",\"run\":[\"/bin/true\"]}]}",
		      &cfg, err, sizeof(err)) == 0 &&
		strcmp(cfg.broker_socket, "/run/b.sock") == 0 && cfg.nlangs == 1 &&
		strcmp(cfg.langs[0].version, "9") == 0 &&
		cfg.defaults.wall_ms == SBX_DEFAULT_WALL_MS,
	    "a minimal file: library defaults, env socket, fixed version");
	config_free(&cfg);
	TAP_OK(load_text(
		   "{\"state_dir\":\"/"
		   "s\",\"broker_socket\":\"x\",\"languages\":[{\"id\":\"t\",\"source_file\":\"t\","
		   "\"run\":[\"/bin/true\"],\"version_cmd\":[\"/nonexistent\"]}]}",
		   &cfg, err, sizeof(err)) == 0 &&
		   strcmp(cfg.langs[0].version, "unknown") == 0,
	       "a version that cannot be detected is \"unknown\"");
	config_free(&cfg);
	TAP_OK(load_text("{\"state_dir\":\"/"
			 "s\",\"languages\":[{\"id\":\"t\",\"source_file\":\"t\",\"run\":[1]}]}",
			 &cfg, err, sizeof(err)) == -1 &&
		   strstr(err, "run"),
	       "a non-string argv is refused: %s", err);
	TAP_OK(load_text("{\"state_dir\":\"/"
			 "s\",\"languages\":[],\"limits\":{\"defaults\":{\"wall_ms\":5000},"
			 "\"maxima\":{\"wall_ms\":1000}}}",
			 &cfg, err, sizeof(err)) == -1 &&
		   strstr(err, "maximum"),
	       "a default above its maximum is refused: %s", err);
	TAP_OK(load_text("{nope", &cfg, err, sizeof(err)) == -1 && err[0],
	       "malformed JSON is refused: %s", err);

	/* Fair admission: the caps in force follow the pool's size (SBX_POOL_WORKERS). */
	{
		static const char *runs_cfg =
		    "{\"state_dir\":\"/s\",\"languages\":[],\"runs\":{\"per_client\":8,"
		    "\"machine\":16}}";
		struct admit_caps caps;

		setenv("SBX_POOL_WORKERS", "8", 1);
		TAP_OK(load_text(runs_cfg, &cfg, err, sizeof(err)) == 0, "runs config loads: %s",
		       err);
		caps_of(&cfg, &caps);
		TAP_OK(caps.machine == 8 && caps.reserve == 2 && caps.per_client == 4,
		       "8 workers: 8 runs at once, 2 reserved, 4 per client (%u %u %u)",
		       caps.machine, caps.reserve, caps.per_client);
		config_free(&cfg);
		setenv("SBX_POOL_WORKERS", "2", 1);
		load_text(runs_cfg, &cfg, err, sizeof(err));
		caps_of(&cfg, &caps);
		TAP_OK(caps.machine == 2 && caps.reserve == 1 && caps.per_client == 1,
		       "2 workers: 2 runs, 1 reserved, 1 per client (%u %u %u)", caps.machine,
		       caps.reserve, caps.per_client);
		config_free(&cfg);
		unsetenv("SBX_POOL_WORKERS");
		load_text(runs_cfg, &cfg, err, sizeof(err));
		caps_of(&cfg, &caps);
		TAP_OK(caps.machine == 16 && caps.reserve == 2 && caps.per_client == 8,
		       "pool size unknown: the config's caps, per client at most half (%u %u %u)",
		       caps.machine, caps.reserve, caps.per_client);
		config_free(&cfg);
		TAP_OK(load_text("{\"state_dir\":\"/s\",\"languages\":[],\"runs\":{"
				 "\"client_share_percent\":0}}",
				 &cfg, err, sizeof(err)) == -1 &&
			   strstr(err, "client_share_percent"),
		       "a share of 0 %% is refused: %s", err);
		TAP_OK(load_text("{\"state_dir\":\"/s\",\"languages\":[],\"metrics\":{"
				 "\"clients\":[\"ops\"]}}",
				 &cfg, err, sizeof(err)) == 0 &&
			   cfg.metrics_clients[0] && !strcmp(cfg.metrics_clients[0], "ops") &&
			   !cfg.metrics_clients[1],
		       "metrics.clients is read");
		config_free(&cfg);
	}
	return tap_done();
}
