/* wire.h: the broker's fixed binary protocol (same host, same build: native byte order).
 *
 * One request per connection. The unprivileged client sends struct sbx_wire_req with up to two
 * descriptors attached (SCM_RIGHTS: the work directory, then stdin, as flagged), then
 * strings_len bytes holding argc + envc NUL-terminated strings. The broker answers with
 * struct sbx_wire_res, then out_len + err_len bytes of output. Every length is checked against
 * the SBX_MAX_* bounds before anything is allocated. */
#ifndef SBX_WIRE_H
#define SBX_WIRE_H

#include <stdint.h>

#include "sandbox.h"

#define SBX_WIRE_MAGIC 0x31584253u /* "SBX1" */
/* RUN goes to the main socket (served by slots); PROBE and QUOTA go to "<socket>-health", served
 * by the main process so they never wait behind runs. QUOTA carries one descriptor (the session
 * directory) and its byte limit in limits.file_size_bytes. */
enum { SBX_OP_RUN = 1, SBX_OP_PROBE = 2, SBX_OP_QUOTA = 3 };

struct sbx_wire_req {
	uint32_t magic;
	uint32_t op;
	uint32_t argc, envc;
	uint32_t strings_len;
	uint32_t has_workdir, has_stdin;
	uint32_t reserved;
	struct sbx_limits limits;
};

struct sbx_wire_res {
	uint32_t magic;
	int32_t rc;
	int32_t status, limit, exit_code, signal;
	uint32_t out_truncated, err_truncated;
	uint64_t out_len, err_len;
	uint64_t wall_ms, cpu_ms, memory_kb;
	int32_t cgroup_version, usable; /* SBX_OP_PROBE */
	char message[512];              /* result message, or probe detail */
};

#endif
