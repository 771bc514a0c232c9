/* route_table.c: the static route table: method, pattern, handler, flags, summary. The matching
 * and the per-route checks live in http/routes.c. */
#include <errno.h>

#include "handlers.h"
#include "mcp.h"

#define A ROUTE_AUTH
#define J ROUTE_JSON
#define S ROUTE_STREAM_IN
#define R ROUTE_RUNS
#define D ROUTE_SEED

const struct route route_table[] = {
    {"GET", "/", h_root, 0, "Liveness: the JSON string \"ping\""},
    {"GET", "/v1/health", h_health, 0, "Service and sandbox health"},
    {"GET", "/v1/metrics", h_metrics, A, "Prometheus metrics (operators only)"},
    {"GET", "/v1/languages", h_languages, A, "Installed languages"},
    {"GET", "/v1/tools", h_tools, A, "Function-calling tool schemas (OpenAI and Anthropic)"},
    {"POST", "/v1/tools/{name}", h_tool_call, A | J | R,
     "Call a tool with a model's arguments: its result sized for a model"},
    {"GET", "/v1/openapi.json", h_openapi, A, "This OpenAPI document"},
    {"GET", "/v1/packages", h_packages_list, A, "Packages the operator allows"},
    {"POST", "/v1/execute", h_execute, A | J | R, "Run code statelessly"},
    {"POST", "/v1/evaluate", h_evaluate, A | J | R, "Run code against test cases"},
    {"POST", "/v1/sessions", h_sessions_create, A | J, "Create a session"},
    {"GET", "/v1/sessions", h_sessions_list, A, "The caller's sessions"},
    {"GET", "/v1/sessions/{id}", h_session_get, A, "One session"},
    {"DELETE", "/v1/sessions/{id}", h_session_delete, A, "Delete a session and its files"},
    {"POST", "/v1/sessions/{id}/fork", h_session_fork, A | J, "Copy a session"},
    {"GET", "/v1/sessions/{id}/files", h_files_tree, A, "The session's file tree"},
    {"GET", "/v1/sessions/{id}/files/{path...}", h_file_get, A, "Read a file"},
    {"PUT", "/v1/sessions/{id}/files/{path...}", h_file_put, A | S, "Write a file"},
    {"DELETE", "/v1/sessions/{id}/files/{path...}", h_file_delete, A, "Delete a file"},
    {"POST", "/v1/sessions/{id}/move", h_session_move, A | J, "Move or rename a file"},
    {"POST", "/v1/sessions/{id}/run", h_session_run, A | J | R, "Run a shell command"},
    {"POST", "/v1/sessions/{id}/execute", h_session_execute, A | J | R, "Run code in the session"},
    {"POST", "/v1/sessions/{id}/evaluate", h_session_evaluate, A | J | R,
     "Evaluate code in the session"},
    {"POST", "/v1/sessions/{id}/contexts", h_contexts_create, A | J, "Create a context"},
    {"GET", "/v1/sessions/{id}/contexts", h_contexts_list, A, "The session's contexts"},
    {"DELETE", "/v1/sessions/{id}/contexts/{cid}", h_context_delete, A, "Delete a context"},
    {"POST", "/v1/sessions/{id}/contexts/{cid}/execute", h_context_execute, A | J | R,
     "Run a cell in a context"},
    {"GET", "/v1/sessions/{id}/contexts/{cid}/variables", h_context_variables, A | R,
     "A context's variables"},
    {"PUT", "/v1/sessions/{id}/contexts/{cid}/variables/{name}", h_context_variable_put, A | J | R,
     "Set a variable in a context"},
    {"POST", "/v1/sessions/{id}/contexts/{cid}/interrupt", h_context_interrupt, A | J,
     "Interrupt a context's cell"},
    {"POST", "/v1/sessions/{id}/contexts/{cid}/restart", h_context_restart, A | J,
     "Restart a context's interpreter"},
    {"POST", "/v1/sessions/{id}/repl", h_session_repl, A | J | R,
     "Run a cell in the session's default context"},
    {"POST", "/v1/sessions/{id}/runs", h_session_runs_start, A | J, "Start a background command"},
    {"GET", "/v1/sessions/{id}/runs", h_session_runs_list, A, "The session's background runs"},
    {"GET", "/v1/sessions/{id}/runs/{run_id}", h_session_run_get, A, "A background run's state"},
    {"GET", "/v1/sessions/{id}/runs/{run_id}/output", h_session_run_output, A,
     "A background run's output from a cursor (long-poll)"},
    {"DELETE", "/v1/sessions/{id}/runs/{run_id}", h_session_run_delete, A, "Kill a background run"},
    {"POST", "/v1/runs/{run_id}/stdin", h_run_stdin, A | S, "Feed stdin to a running run"},
    {"POST", "/v1/runs/{run_id}/signal", h_run_signal, A | J, "Send a signal to a running run"},
    {"POST", "/v1/sessions/{id}/packages", h_session_packages, A | J | R,
     "Install packages into the session"},
    {"POST", "/mcp", h_mcp, A | J, "Model Context Protocol (Streamable HTTP, JSON-RPC)"},
    /* Piston compatibility (piston.c); runs are admitted by the /v1/execute they call. */
    {"POST", "/api/v2/execute", h_piston_execute, A | J, "Piston: run code"},
    {"GET", "/api/v2/runtimes", h_piston_runtimes, A, "Piston: installed runtimes"},
    {"POST", "/write_file", h_seed_write_file, A | J | D, "Seed: write a file"},
    {"GET", "/read_file", h_seed_read_file, A | D, "Seed: read a file"},
    {"POST", "/delete_file", h_seed_delete_file, A | J | D, "Seed: delete a file"},
    {"POST", "/rename_file", h_seed_rename_file, A | J | D, "Seed: rename a file"},
    {"POST", "/fork_session", h_seed_fork_session, A | J | D, "Seed: fork a session"},
    {"POST", "/run", h_seed_run, A | J | R | D, "Seed: run a shell command"},
    {"POST", "/evaluate_code", h_seed_evaluate_code, A | J | R | D, "Seed: evaluate a function"},
};
const size_t route_count = sizeof(route_table) / sizeof(route_table[0]);

#undef A
#undef J
#undef S
#undef R
#undef D

/* What http/ needs of the configuration (body size, admission caps), per request. */
static void conf_of(const struct config *cfg, struct http_conf *out)
{
	out->max_body_bytes = cfg->max_body_bytes;
	out->state_dir = cfg->state_dir;
	out->runs_per_client = cfg->runs_per_client;
	out->runs_machine = cfg->runs_machine;
	out->queue_wait_ms = cfg->queue_wait_ms;
	out->runs_share_pct = cfg->runs_share_pct;
	out->runs_reserve = cfg->runs_reserve;
	out->pool_workers = cfg->pool_workers;
	out->run_wall_ms = cfg->defaults.wall_ms;
}

/* A run refused by admission: through the error table like every other failure. */
static void refused(struct api_resp *resp, int err, const struct http_conf *hc)
{
	struct admit_caps caps;

	admit_caps(hc, &caps);
	if (err == -EUSERS)
		h_fail(resp, err, H_WHY_ADMIT_CLIENT, caps.per_client, NULL);
	else
		h_fail(resp, err, H_WHY_ADMIT_MACHINE, caps.machine, NULL);
}

/* Linking the handlers installs them: http/ never names a handler. */
__attribute__((constructor)) static void route_table_install(void)
{
	route_install(route_table, route_count);
	http_conf_of = conf_of;
	route_refused = refused;
}
