/* sbx_ctx.c: "sbx ctx ...": the contexts client API from the command line, one JSON object out.
 * For the sandbox tests and for debugging a broker; the service calls the API directly. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "sandbox.h"

static void ctx_usage(void)
{
	fprintf(stderr,
		"usage: sbx ctx --broker SOCKET create ID --owner NAME --workdir DIR\n"
		"               [--language python|bash] [--memory-mb N] [--processes N]\n"
		"               [--idle-ttl-s N] [--max-per-owner N]\n"
		"       sbx ctx --broker SOCKET call ID [--wall-ms N] [--cpu-ms N] [--wait-ms N]\n"
		"               [--output-bytes N] [--output-hard-bytes N] [--cancel-after-ms N]\n"
		"               REQUEST_JSON\n"
		"       sbx ctx --broker SOCKET interrupt|restart|delete ID\n"
		"       sbx ctx --broker SOCKET list [--owner NAME]\n"
		"       sbx ctx --broker SOCKET bench ID [--count N]   (p50 of {\"op\":\"execute\","
		"\"code\":\"1+1\"}, us)\n");
	exit(64);
}

static void print_rc(int rc)
{
	printf("{\"rc\": %d, \"error\": ", rc);
	if (rc < 0 && strerrorname_np(-rc))
		printf("\"%s\"", strerrorname_np(-rc));
	else
		printf("null");
}

static void print_cell(int rc, const struct sbx_cell_result *r)
{
	print_rc(rc);
	printf(", \"status\": \"%s\", \"limit\": ", sbx_status_name(r->status));
	if (r->status == SBX_TIMEOUT && sbx_limit_name(r->limit))
		printf("\"%s\"", sbx_limit_name(r->limit));
	else
		printf("null");
	printf(", \"lost\": %s, \"stdout\": ", r->lost ? "true" : "false");
	sbx_cli_json_str(stdout, r->out ? r->out : "", r->out_len);
	printf(", \"stderr\": ");
	sbx_cli_json_str(stdout, r->err ? r->err : "", r->err_len);
	printf(", \"stdout_truncated\": %s, \"stderr_truncated\": %s, \"reply\": ",
	       r->out_truncated ? "true" : "false", r->err_truncated ? "true" : "false");
	if (r->reply)
		sbx_cli_json_str(stdout, r->reply, r->reply_len);
	else
		printf("null");
	printf(", \"wall_ms\": %llu, \"cpu_ms\": %llu, \"memory_kb\": %llu, \"message\": ",
	       (unsigned long long)r->wall_ms, (unsigned long long)r->cpu_ms,
	       (unsigned long long)r->memory_kb);
	sbx_cli_json_str(stdout, r->message, strlen(r->message));
	printf("}\n");
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int sbx_ctx_cli(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"broker", 1, 0, 'b'},
	    {"owner", 1, 0, 'u'},
	    {"workdir", 1, 0, 'd'},
	    {"language", 1, 0, 'L'},
	    {"memory-mb", 1, 0, 'm'},
	    {"processes", 1, 0, 'p'},
	    {"idle-ttl-s", 1, 0, 'T'},
	    {"max-per-owner", 1, 0, 'x'},
	    {"wall-ms", 1, 0, 'w'},
	    {"cpu-ms", 1, 0, 'c'},
	    {"wait-ms", 1, 0, 'W'},
	    {"output-bytes", 1, 0, 'o'},
	    {"output-hard-bytes", 1, 0, 'O'},
	    {"cancel-after-ms", 1, 0, 'C'},
	    {"count", 1, 0, 'n'},
	    {0, 0, 0, 0},
	};
	struct sbx_ctx_spec spec;
	struct sbx_cell cell;
	const char *broker = NULL, *workdir = NULL, *owner = NULL, *cmd, *id = NULL;
	unsigned long long cancel_ms = 0, count = 100;
	char err[256];
	int c, rc;

	memset(&spec, 0, sizeof spec);
	memset(&cell, 0, sizeof cell);
	spec.language = SBX_CTX_PYTHON;
	spec.workdir_fd = -1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		unsigned long long v = optarg ? strtoull(optarg, NULL, 10) : 0;

		switch (c) {
		case 'b':
			broker = optarg;
			break;
		case 'u':
			owner = optarg;
			break;
		case 'd':
			workdir = optarg;
			break;
		case 'L':
			spec.language = strcmp(optarg, "bash") == 0 ? SBX_CTX_BASH : SBX_CTX_PYTHON;
			break;
		case 'm':
			spec.limits.memory_bytes = v << 20;
			break;
		case 'p':
			spec.limits.processes = (uint32_t)v;
			break;
		case 'T':
			spec.idle_ttl_s = (uint32_t)v;
			break;
		case 'x':
			spec.max_per_owner = (uint32_t)v;
			break;
		case 'w':
			cell.limits.wall_ms = v;
			break;
		case 'c':
			cell.limits.cpu_ms = v;
			break;
		case 'W':
			cell.wait_ms = (uint32_t)v;
			break;
		case 'o':
			cell.limits.output_bytes = v;
			break;
		case 'O':
			cell.limits.output_hard_bytes = v;
			break;
		case 'C':
			cancel_ms = v;
			break;
		case 'n':
			count = v ? v : 1;
			break;
		default:
			ctx_usage();
		}
	}
	if (!broker || optind >= argc)
		ctx_usage();
	cmd = argv[optind++];
	if (strcmp(cmd, "list") != 0) {
		if (optind >= argc)
			ctx_usage();
		id = argv[optind++];
	}
	if (strcmp(cmd, "create") == 0) {
		if (!owner || !workdir || strlen(id) != SBX_CTX_ID_LEN)
			ctx_usage();
		memcpy(spec.id, id, SBX_CTX_ID_LEN);
		snprintf(spec.owner, sizeof spec.owner, "%s", owner);
		spec.workdir_fd = open(workdir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (spec.workdir_fd < 0) {
			fprintf(stderr, "sbx: %s: %s\n", workdir, strerror(errno));
			return 64;
		}
		err[0] = '\0';
		rc = sbx_client_ctx_create(broker, &spec, err, sizeof err);
		print_rc(rc);
		printf(", \"message\": ");
		sbx_cli_json_str(stdout, err, strlen(err));
		printf("}\n");
		close(spec.workdir_fd);
		return rc == 0 ? 0 : 1;
	}
	if (strcmp(cmd, "call") == 0) {
		struct sbx_cell_result res;
		int cancel = -1;

		if (optind >= argc)
			ctx_usage();
		cell.request = argv[optind];
		cell.request_len = strlen(argv[optind]);
		if (cancel_ms) {
			/* A timer that turns readable plays a caller that goes away. */
			struct itimerspec its;

			memset(&its, 0, sizeof its);
			its.it_value.tv_sec = (time_t)(cancel_ms / 1000);
			its.it_value.tv_nsec = (long)(cancel_ms % 1000) * 1000000;
			cancel = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
			if (cancel < 0 || timerfd_settime(cancel, 0, &its, NULL) < 0)
				return 2;
		}
		rc = sbx_client_ctx_call(broker, id, &cell, cancel, &res);
		print_cell(rc, &res);
		sbx_cell_result_free(&res);
		return rc == 0 ? 0 : 1;
	}
	if (strcmp(cmd, "bench") == 0) {
		static const char req[] = "{\"op\":\"execute\",\"code\":\"1+1\"}";
		uint64_t *t = calloc(count, sizeof *t);
		unsigned long long i;

		if (!t)
			return 2;
		cell.request = req;
		cell.request_len = sizeof req - 1;
		for (i = 0; i < count; i++) {
			struct sbx_cell_result res;
			uint64_t t0 = now_us();

			rc = sbx_client_ctx_call(broker, id, &cell, -1, &res);
			t[i] = now_us() - t0;
			if (rc < 0 || res.status != SBX_OK) {
				print_cell(rc, &res);
				sbx_cell_result_free(&res);
				free(t);
				return 1;
			}
			sbx_cell_result_free(&res);
		}
		qsort(t, count, sizeof *t, cmp_u64);
		printf("{\"rc\": 0, \"count\": %llu, \"p50_us\": %llu, \"p90_us\": %llu, "
		       "\"min_us\": %llu}\n",
		       count, (unsigned long long)t[count / 2],
		       (unsigned long long)t[count * 9 / 10], (unsigned long long)t[0]);
		free(t);
		return 0;
	}
	if (strcmp(cmd, "list") == 0) {
		struct sbx_ctx_info *info = NULL;
		size_t n = 0, i;

		rc = sbx_client_ctx_list(broker, owner, &info, &n);
		print_rc(rc);
		printf(", \"contexts\": [");
		for (i = 0; i < n; i++)
			printf("%s{\"id\": \"%s\", \"owner\": \"%s\", \"language\": \"%s\", "
			       "\"busy\": %s, \"memory_kb\": %llu, \"created_ms\": %llu, "
			       "\"last_used_ms\": %llu, \"execution_count\": %u}",
			       i ? ", " : "", info[i].id, info[i].owner,
			       sbx_ctx_lang_name(info[i].language), info[i].busy ? "true" : "false",
			       (unsigned long long)info[i].memory_kb,
			       (unsigned long long)info[i].created_ms,
			       (unsigned long long)info[i].last_used_ms, info[i].execution_count);
		printf("]}\n");
		free(info);
		return rc == 0 ? 0 : 1;
	}
	if (strcmp(cmd, "interrupt") == 0)
		rc = sbx_client_ctx_interrupt(broker, id);
	else if (strcmp(cmd, "restart") == 0)
		rc = sbx_client_ctx_restart(broker, id);
	else if (strcmp(cmd, "delete") == 0)
		rc = sbx_client_ctx_delete(broker, id);
	else
		ctx_usage();
	print_rc(rc);
	printf("}\n");
	return rc == 0 ? 0 : 1;
}
