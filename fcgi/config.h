/* config.h: the service's configuration (config.c): one JSON file, defaults and maxima of every
 * limit, sessions, runs, disk, languages. Shared by main.c and the handlers; http/ sees it only
 * as an opaque pointer, the store through struct store_conf. */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../sandbox/sandbox.h"

struct lang {
	char *id;		 /* "python" */
	char *version;		 /* "3.11.2" */
	char **aliases;		 /* NULL-terminated: "py", "python3" */
	char *source_file;	 /* "main.py": the file the code is written to */
	char **compile;		 /* NULL-terminated argv, or NULL when interpreted */
	char **run;		 /* NULL-terminated argv; "{file}" is replaced by source_file,
				    "{args}" expands to the request's args */
	struct sbx_limits extra; /* non-zero fields override the defaults for this language */
};

#define CONFIG_SHARD_MAX 16 /* a shard name, bytes: "<shard>-<uuid>" fits a 64-byte session id */

struct config {
	char *state_dir;     /* sessions/, scratch/ live here */
	char *broker_socket; /* sbxd's Unix socket */
	char *pool_listen;   /* health pool only: the main pool's socket path or HOST:PORT */
	char *shard;	     /* this host's name in a cluster (1-16 of [a-z0-9]), prefixed to
				the ids of the sessions it makes; NULL on a single host */
	struct sbx_limits defaults;
	struct sbx_limits maxima;
	uint64_t max_body_bytes; /* JSON bodies; raw uploads are bounded by the quota */
	uint64_t session_ttl_s;	 /* idle TTL */
	uint64_t session_max_lifetime_s;
	uint64_t session_quota_bytes;
	uint32_t sessions_per_client;
	int64_t disk_reserve_mb;  /* disk.reserve_mb: free space the state volume keeps; new
				     sessions, forks, uploads and runs are refused (507) below it
				     and health turns 503. -1 (absent): 5% of the volume, at most
				     512 MiB. 0: no reserve */
	uint32_t disk_share_pct;  /* disk.client_share_percent: most of the sessions volume one
				     client's sessions may be promised (their quotas together);
				     0: no share (sessions.per_client alone) */
	uint32_t runs_per_client; /* concurrent runs per client; past it: 429 */
	uint32_t runs_machine;	  /* runs in flight on the machine, all workers together; past it
				     (after queue_wait_ms): 503 busy. 0: no machine cap */
	uint32_t runs_share_pct;  /* most of the machine's runs one client may hold, in percent */
	uint32_t runs_reserve;	  /* machine slots only a client with no run in flight may take */
	uint32_t pool_workers;	  /* FastCGI workers of the pool (SBX_POOL_WORKERS); 0: unknown.
				     Runs hold a worker each: runs_machine is capped by it */
	uint64_t ccache_bytes;	  /* compile_cache.max_mb: per client; 0: no compile cache */
	uint32_t bg_per_client;	  /* runs.background_per_client: live background runs (429) */
	uint32_t bg_per_session;  /* runs.background_per_session: the same per session (429) */
	uint32_t bg_keep_s; /* runs.background_keep_s: an ended one's output is kept this long */
	uint32_t long_polls_per_client; /* runs.long_polls_per_client: output long-polls one client
					   may hold at once (429 too_many_waits); 0: no cap */
	char **metrics_clients;	   /* clients that may read GET /v1/metrics (NULL-terminated) */
	uint32_t queue_wait_ms;	   /* how long a run waits for a free sandbox slot before 503 */
	uint32_t max_cases;	   /* evaluate: cases per request */
	uint64_t evaluate_wall_ms; /* evaluate: the whole request's wall time */
	/* contexts (API.md "Contexts") */
	uint32_t ctx_per_client;   /* contexts.per_client: live contexts per client (429) */
	uint32_t ctx_machine;	   /* contexts.machine: the broker's cap (503), for reference */
	uint32_t ctx_idle_ttl_s;   /* contexts.idle_ttl_s: idle contexts end after this; 0 never */
	uint64_t ctx_memory_bytes; /* contexts.memory_mb: a context's memory unless it asks */
	uint64_t ctx_total_memory_mb; /* contexts.total_memory_mb: the broker's budget, reference */
	uint32_t ctx_wait_ms;	      /* contexts.wait_ms: a busy context is waited for this long */
	uint64_t ctx_results_bytes;   /* contexts.results_bytes: a cell's display data, at most */
	uint64_t mcp_result_bytes;    /* mcp.result_bytes: an MCP tool result keeps at most this
					 much of each output (head and tail), bytes */
	uint32_t mcp_result_cases;    /* mcp.result_cases: evaluate cases an MCP result details */
	char *packages_dir;    /* packages.dir: python/ and node/ of the operator's allow-list
				  (default state_dir/packages) */
	uint64_t layers_bytes; /* packages.layers_max_mb: stateless layers kept, all together */
	struct lang *langs;
	size_t nlangs;
};

/* Load path into cfg. Returns 0, or -1 with a message in err. cfg is owned by the caller and
 * released with config_free(). */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);
void config_free(struct config *cfg);
/* Find a language by id or alias; borrowed pointer or NULL. */
const struct lang *config_lang(const struct config *cfg, const char *name);

/* The repo root, for relative config paths: the nearest ancestor of the binary holding
 * fcgi/sbx.conf.json, else the current directory. A static buffer, valid for the process. */
const char *config_repo_dir(void);
/* Directory of the config file last loaded: fcgi/openapi.json sits next to the default one. */
extern char config_dir[4096];

#endif
