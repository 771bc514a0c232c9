/* config.c: load fcgi/sbx.conf.json (limits' defaults and maxima, sessions, runs, languages). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include <json-c/json.h>

extern char **environ;

char config_dir[4096] = ".";

const char *config_repo_dir(void)
{
	static char dir[PATH_MAX];
	char probe[PATH_MAX + 32];
	ssize_t n;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n <= 0) {
		strcpy(dir, ".");
		return dir;
	}
	dir[n] = '\0';
	/* The binary lives in build/ or build/tests/: walk up to the directory holding the default
	 * config, so a worker finds it whatever its current directory. */
	for (;;) {
		char *slash = strrchr(dir, '/');

		if (!slash || slash == dir) {
			/* A binary outside the repo (a sanitizer build): the current directory. */
			if (!getcwd(dir, sizeof(dir)))
				strcpy(dir, ".");
			break;
		}
		*slash = '\0';
		snprintf(probe, sizeof(probe), "%s/fcgi/sbx.conf.json", dir);
		if (access(probe, R_OK) == 0)
			break;
	}
	return dir;
}

/* Absolute path of p (relative ones are relative to the repo). Caller frees. */
static char *abs_path(const char *p)
{
	char *out = NULL;

	if (p[0] == '/')
		return strdup(p);
	if (asprintf(&out, "%s/%s", config_repo_dir(), p) < 0)
		return NULL;
	return out;
}

/* A NULL-terminated copy of a JSON array of strings, owned by the caller (str_array_free());
 * NULL (with err) on a non-string. */
static char **str_array(struct json_object *arr, const char *what, char *err, size_t errlen)
{
	size_t i, n;
	char **v;

	if (!json_object_is_type(arr, json_type_array)) {
		snprintf(err, errlen, "%s must be an array of strings", what);
		return NULL;
	}
	n = json_object_array_length(arr);
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (i = 0; i < n; i++) {
		struct json_object *s = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(s, json_type_string) ||
		    !(v[i] = strdup(json_object_get_string(s)))) {
			snprintf(err, errlen, "%s[%zu] must be a string", what, i);
			goto fail;
		}
	}
	return v;
fail:
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
	return NULL;
}

static void str_array_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static uint64_t get_u64(struct json_object *o, const char *key, uint64_t dflt)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return dflt;
	return json_object_get_int64(v) < 0 ? dflt : json_object_get_uint64(v);
}

/* Limits in the request's units (memory_mb, file_size_mb, tmp_mb) into bytes. */
static void parse_limits(struct json_object *o, struct sbx_limits *l)
{
	l->wall_ms = get_u64(o, "wall_ms", l->wall_ms);
	l->cpu_ms = get_u64(o, "cpu_ms", l->cpu_ms);
	l->memory_bytes = get_u64(o, "memory_mb", l->memory_bytes >> 20) << 20;
	l->processes = (uint32_t)get_u64(o, "processes", l->processes);
	l->output_bytes = get_u64(o, "output_bytes", l->output_bytes);
	l->output_hard_bytes = get_u64(o, "output_hard_bytes", l->output_hard_bytes);
	l->file_size_bytes = get_u64(o, "file_size_mb", l->file_size_bytes >> 20) << 20;
	l->open_files = (uint32_t)get_u64(o, "open_files", l->open_files);
	l->tmp_bytes = get_u64(o, "tmp_mb", l->tmp_bytes >> 20) << 20;
}

/* "Python 3.11.2" -> "3.11.2": the first run of digits and dots in the command's output. Runs
 * once at start-up on the host, with a fixed argv from the config file. Caller frees. */
static char *detect_version(char **argv)
{
	posix_spawn_file_actions_t fa;
	char buf[256] = "", *p, *e, *out = NULL;
	int pipefd[2] = {-1, -1}, status;
	pid_t pid = -1;
	ssize_t n, got = 0;

	if (!argv || !argv[0] || pipe2(pipefd, O_CLOEXEC) < 0)
		goto out;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	pipefd[1] = -1;
	if (pid < 0)
		goto out;
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(pipefd[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	p = strpbrk(buf, "0123456789");
	if (!p)
		goto out;
	for (e = p; (*e >= '0' && *e <= '9') || *e == '.'; e++)
		;
	while (e > p && e[-1] == '.')
		e--;
	out = strndup(p, (size_t)(e - p));
out:
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	return out;
}

static int parse_lang(struct json_object *o, struct lang *l, char *err, size_t errlen)
{
	struct json_object *v;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "id", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "each language needs a string id");
		return -1;
	}
	l->id = strdup(json_object_get_string(v));
	if (json_object_object_get_ex(o, "aliases", &v)) {
		if (!(l->aliases = str_array(v, "aliases", err, errlen)))
			return -1;
	} else {
		l->aliases = calloc(1, sizeof(char *));
	}
	if (!json_object_object_get_ex(o, "source_file", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "language %s needs a source_file", l->id);
		return -1;
	}
	l->source_file = strdup(json_object_get_string(v));
	if (json_object_object_get_ex(o, "compile", &v) &&
	    !(l->compile = str_array(v, "compile", err, errlen)))
		return -1;
	if (!json_object_object_get_ex(o, "run", &v) ||
	    !(l->run = str_array(v, "run", err, errlen)) || !l->run[0]) {
		if (!err[0])
			snprintf(err, errlen, "language %s needs a run argv", l->id);
		return -1;
	}
	if (json_object_object_get_ex(o, "limits", &v))
		parse_limits(v, &l->extra);
	if (json_object_object_get_ex(o, "version", &v) &&
	    json_object_is_type(v, json_type_string)) {
		l->version = strdup(json_object_get_string(v));
	} else if (json_object_object_get_ex(o, "version_cmd", &v)) {
		char **argv = str_array(v, "version_cmd", err, errlen);

		if (!argv)
			return -1;
		l->version = detect_version(argv);
		str_array_free(argv);
	}
	if (!l->version)
		l->version = strdup("unknown");
	return 0;
}

/* The host's shard name (env SBX_SHARD over the file's "shard"): nginx routes a session id
 * "<shard>-<uuid>" to the host named by its prefix, so the name must be short, unambiguous before
 * the first '-' and match nginx's map (case-insensitive keys, hence lower case only). Empty or
 * absent: a single host, ids stay plain UUIDs. 0, or -1 with err. */
/* "metrics": {"clients": [...]}: the client names (tokens' names) that may read GET /v1/metrics;
 * absent or empty: nobody. */
static int config_metrics_clients(struct json_object *root, struct config *cfg, char *err,
				  size_t errlen)
{
	struct json_object *sub, *v;

	if (!json_object_object_get_ex(root, "metrics", &sub) ||
	    !json_object_object_get_ex(sub, "clients", &v)) {
		cfg->metrics_clients = calloc(1, sizeof(char *));
		return cfg->metrics_clients ? 0 : -1;
	}
	cfg->metrics_clients = str_array(v, "metrics.clients", err, errlen);
	return cfg->metrics_clients ? 0 : -1;
}

static int load_shard(struct json_object *root, struct config *cfg, char *err, size_t errlen)
{
	struct json_object *v;
	const char *s = getenv("SBX_SHARD");
	size_t len;

	if (!s && json_object_object_get_ex(root, "shard", &v) &&
	    json_object_is_type(v, json_type_string))
		s = json_object_get_string(v);
	if (!s || !s[0])
		return 0;
	len = strlen(s);
	if (len > CONFIG_SHARD_MAX || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789") != len) {
		snprintf(err, errlen, "shard (SBX_SHARD) must be 1-%d of [a-z0-9], not '%.40s'",
			 CONFIG_SHARD_MAX, s);
		return -1;
	}
	cfg->shard = strdup(s);
	return cfg->shard ? 0 : -1;
}

/* limits.defaults and limits.maxima (a default above its maximum is an error). 0 or -1. */
static int load_limits(struct json_object *root, struct config *cfg, const char *path, char *err,
		       size_t errlen)
{
	struct json_object *v, *sub;

	cfg->defaults = (struct sbx_limits){
	    SBX_DEFAULT_WALL_MS,	 SBX_DEFAULT_CPU_MS,	   SBX_DEFAULT_MEMORY_BYTES,
	    SBX_DEFAULT_PROCESSES,	 SBX_DEFAULT_OUTPUT_BYTES, SBX_DEFAULT_OUTPUT_HARD_BYTES,
	    SBX_DEFAULT_FILE_SIZE_BYTES, SBX_DEFAULT_OPEN_FILES,   SBX_DEFAULT_TMP_BYTES};
	cfg->maxima = cfg->defaults;
	if (json_object_object_get_ex(root, "limits", &sub)) {
		if (json_object_object_get_ex(sub, "defaults", &v))
			parse_limits(v, &cfg->defaults);
		cfg->maxima = cfg->defaults;
		if (json_object_object_get_ex(sub, "maxima", &v))
			parse_limits(v, &cfg->maxima);
	}
	{
		const struct sbx_limits *d = &cfg->defaults, *m = &cfg->maxima;

		/* A default above its maximum would make the bare request one the server refuses.
		 */
		if (d->wall_ms > m->wall_ms || d->cpu_ms > m->cpu_ms ||
		    d->memory_bytes > m->memory_bytes || d->processes > m->processes ||
		    d->output_bytes > m->output_bytes || d->file_size_bytes > m->file_size_bytes) {
			snprintf(err, errlen, "a limit's default is above its maximum in %s", path);
			return -1;
		}
	}
	return 0;
}

/* sessions, disk, runs and evaluate: each value has its default. */
static void load_knobs(struct json_object *root, struct config *cfg)
{
	struct json_object *v, *sub;
	const char *env;

	sub = NULL;
	json_object_object_get_ex(root, "sessions", &sub);
	cfg->session_ttl_s = get_u64(sub, "ttl_s", 3600);
	cfg->session_max_lifetime_s = get_u64(sub, "max_lifetime_s", 86400);
	cfg->session_quota_bytes = get_u64(sub, "quota_mb", 100) << 20;
	cfg->sessions_per_client = (uint32_t)get_u64(sub, "per_client", 64);
	/* disk.reserve_mb: free space kept on the sessions volume (absent: automatic, config.h). */
	sub = NULL;
	cfg->disk_reserve_mb = -1;
	if (json_object_object_get_ex(root, "disk", &sub) &&
	    json_object_object_get_ex(sub, "reserve_mb", &v))
		cfg->disk_reserve_mb = (int64_t)get_u64(sub, "reserve_mb", 0);
	cfg->disk_share_pct = 25;
	if (sub && json_object_object_get_ex(sub, "client_share_percent", &v))
		cfg->disk_share_pct = (uint32_t)get_u64(sub, "client_share_percent", 25);
	env = getenv("SBX_DISK_RESERVE_MB"); /* for tests: a reserve above the free space */
	if (env && env[0])
		cfg->disk_reserve_mb = strtoll(env, NULL, 10);
	/* compile_cache.max_mb: each client's compiled binaries kept (store/ccache.c); 0: off. */
	sub = NULL;
	json_object_object_get_ex(root, "compile_cache", &sub);
	cfg->ccache_bytes = get_u64(sub, "max_mb", 64) << 20;
	sub = NULL;
	json_object_object_get_ex(root, "runs", &sub);
	cfg->runs_per_client = (uint32_t)get_u64(sub, "per_client", 8);
	cfg->runs_machine = (uint32_t)get_u64(sub, "machine", 64);
	cfg->queue_wait_ms = (uint32_t)get_u64(sub, "queue_wait_ms", 5000);
	cfg->runs_share_pct = (uint32_t)get_u64(sub, "client_share_percent", 50);
	cfg->runs_reserve = (uint32_t)get_u64(sub, "reserve", 2);
	cfg->bg_per_client = (uint32_t)get_u64(sub, "background_per_client", 8);
	cfg->bg_per_session = (uint32_t)get_u64(sub, "background_per_session", 4);
	cfg->bg_keep_s = (uint32_t)get_u64(sub, "background_keep_s", 600);
	if (cfg->bg_keep_s > SBX_RUN_MAX_KEEP_S)
		cfg->bg_keep_s = SBX_RUN_MAX_KEEP_S;
	cfg->long_polls_per_client = (uint32_t)get_u64(sub, "long_polls_per_client", 2);
	env = getenv("SBX_POOL_WORKERS"); /* the pool's size, from the stack or the unit */
	if (env && env[0])
		cfg->pool_workers = (uint32_t)strtoul(env, NULL, 10);
	sub = NULL;
	json_object_object_get_ex(root, "evaluate", &sub);
	cfg->max_cases = (uint32_t)get_u64(sub, "max_cases", 256);
	cfg->evaluate_wall_ms = get_u64(sub, "wall_ms", 120000);
	/* contexts: caps, idle TTL and memory (machine and total_memory_mb are the broker's, passed
	 * to sbxd as --contexts / --contexts-memory-mb by the stack; here for the docs and health).
	 */
	sub = NULL;
	json_object_object_get_ex(root, "contexts", &sub);
	cfg->ctx_per_client = (uint32_t)get_u64(sub, "per_client", 4);
	cfg->ctx_machine = (uint32_t)get_u64(sub, "machine", 16);
	cfg->ctx_idle_ttl_s = (uint32_t)get_u64(sub, "idle_ttl_s", 1800);
	cfg->ctx_memory_bytes = get_u64(sub, "memory_mb", 256) << 20;
	cfg->ctx_total_memory_mb = get_u64(sub, "total_memory_mb", 2048);
	cfg->ctx_wait_ms = (uint32_t)get_u64(sub, "wait_ms", 2000);
	cfg->ctx_results_bytes = get_u64(sub, "results_bytes", 8u << 20);
	/* mcp: how much of a tool's output reaches a model (handlers/mcp_size.c). */
	sub = NULL;
	json_object_object_get_ex(root, "mcp", &sub);
	cfg->mcp_result_bytes = get_u64(sub, "result_bytes", 16384);
	if (cfg->mcp_result_bytes < 256)
		cfg->mcp_result_bytes = 256;
	cfg->mcp_result_cases = (uint32_t)get_u64(sub, "result_cases", 50);
	if (cfg->mcp_result_cases < 1)
		cfg->mcp_result_cases = 1;
	/* packages.layers_max_mb: the stateless package layers kept (LRU past it). */
	sub = NULL;
	json_object_object_get_ex(root, "packages", &sub);
	cfg->layers_bytes = get_u64(sub, "layers_max_mb", 512) << 20;
	/* packages.layers_max_kb, when set, instead: a cap a test's tiny layers can pass. */
	if (sub && json_object_object_get_ex(sub, "layers_max_kb", &v))
		cfg->layers_bytes = get_u64(sub, "layers_max_kb", 0) << 10;
}

int config_load(const char *path, struct config *cfg, char *err, size_t errlen)
{
	struct json_object *root = NULL, *v;
	const char *env;
	int rc = -1;
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	err[0] = '\0';
	{
		const char *slash = strrchr(path, '/');

		snprintf(config_dir, sizeof(config_dir), "%.*s", slash ? (int)(slash - path) : 1,
			 slash ? path : ".");
	}
	root = json_object_from_file(path);
	if (!root || !json_object_is_type(root, json_type_object)) {
		snprintf(err, errlen, "cannot read %s as a JSON object: %s", path,
			 json_util_get_last_err());
		goto out;
	}
	env = getenv("SBX_STATE_DIR");
	if (env && env[0])
		cfg->state_dir = abs_path(env);
	else if (json_object_object_get_ex(root, "state_dir", &v) &&
		 json_object_is_type(v, json_type_string))
		cfg->state_dir = abs_path(json_object_get_string(v));
	env = getenv("SBX_BROKER_SOCKET");
	if (env && env[0])
		cfg->broker_socket = abs_path(env);
	else if (json_object_object_get_ex(root, "broker_socket", &v) &&
		 json_object_is_type(v, json_type_string))
		cfg->broker_socket = abs_path(json_object_get_string(v));
	if (!cfg->state_dir || !cfg->broker_socket) {
		snprintf(err, errlen, "state_dir and broker_socket are required");
		goto out;
	}
	/* packages.dir: the operator's allow-list; state_dir/packages unless set. */
	{
		struct json_object *pk = NULL;

		if (json_object_object_get_ex(root, "packages", &pk) &&
		    json_object_object_get_ex(pk, "dir", &v) &&
		    json_object_is_type(v, json_type_string))
			cfg->packages_dir = abs_path(json_object_get_string(v));
		else if (asprintf(&cfg->packages_dir, "%s/packages", cfg->state_dir) < 0)
			cfg->packages_dir = NULL;
		if (!cfg->packages_dir) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	/* Set for the health pool only: the main pool's listening address, which health checks. */
	env = getenv("SBX_POOL_LISTEN");
	if (env && env[0]) {
		if (env[0] != '/' && !strchr(env, ':')) {
			snprintf(err, errlen, "SBX_POOL_LISTEN must be a socket path or HOST:PORT");
			goto out;
		}
		cfg->pool_listen = strdup(env);
	}
	if (load_shard(root, cfg, err, errlen) < 0)
		goto out;
	cfg->max_body_bytes = get_u64(root, "max_body_bytes", 10u << 20);

	if (load_limits(root, cfg, path, err, errlen) < 0)
		goto out;
	load_knobs(root, cfg);
	if (cfg->disk_share_pct > 100) {
		snprintf(err, errlen, "disk.client_share_percent must be 0 to 100 in %s", path);
		goto out;
	}
	if (!cfg->runs_share_pct || cfg->runs_share_pct > 100) {
		snprintf(err, errlen, "runs.client_share_percent must be 1 to 100 in %s", path);
		goto out;
	}
	if (config_metrics_clients(root, cfg, err, errlen) < 0)
		goto out;

	if (!json_object_object_get_ex(root, "languages", &v) ||
	    !json_object_is_type(v, json_type_array)) {
		snprintf(err, errlen, "languages must be an array");
		goto out;
	}
	cfg->nlangs = json_object_array_length(v);
	cfg->langs = calloc(cfg->nlangs ? cfg->nlangs : 1, sizeof(*cfg->langs));
	if (!cfg->langs)
		goto out;
	for (i = 0; i < cfg->nlangs; i++)
		if (parse_lang(json_object_array_get_idx(v, i), &cfg->langs[i], err, errlen) < 0)
			goto out;
	rc = 0;
out:
	if (root)
		json_object_put(root);
	if (rc < 0) {
		if (!err[0])
			snprintf(err, errlen, "out of memory loading %s", path);
		err[strcspn(err, "\n")] = '\0'; /* json-c's messages end in a newline */
		config_free(cfg);
	}
	return rc;
}

void config_free(struct config *cfg)
{
	size_t i;

	for (i = 0; cfg->langs && i < cfg->nlangs; i++) {
		struct lang *l = &cfg->langs[i];

		free(l->id);
		free(l->version);
		str_array_free(l->aliases);
		free(l->source_file);
		str_array_free(l->compile);
		str_array_free(l->run);
	}
	free(cfg->langs);
	free(cfg->state_dir);
	free(cfg->packages_dir);
	free(cfg->broker_socket);
	free(cfg->pool_listen);
	free(cfg->shard);
	str_array_free(cfg->metrics_clients);
	memset(cfg, 0, sizeof(*cfg));
}

const struct lang *config_lang(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; name && i < cfg->nlangs; i++) {
		const struct lang *l = &cfg->langs[i];

		if (strcasecmp(l->id, name) == 0)
			return l;
		for (char **a = l->aliases; a && *a; a++)
			if (strcasecmp(*a, name) == 0)
				return l;
	}
	return NULL;
}
