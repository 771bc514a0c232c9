/* compile.h: evaluate's compile steps through the client's compile cache (compile.c). Private to
 * fcgi/evaluate/. */
#ifndef SBX_FCGI_EVAL_COMPILE_H
#define SBX_FCGI_EVAL_COMPILE_H

#include "eval.h"

/* All len bytes of buf to fd (retried on EINTR and short writes). 0 or -errno. */
int eval_write_all(int fd, const char *buf, size_t len);

/* Write len bytes as a new file name in dirfd (made by the service, seen by no program yet),
 * never following a link or replacing a file. 0 or -errno. */
int eval_put_file(int dirfd, const char *name, const char *buf, size_t len, mode_t mode);

/* Compile lang's source (already in dirfd as lang->source_file, alone but for what the caller
 * wrote there) with argv in a sandbox run of its own, through the client's compile cache
 * (handlers/compile_cache.h, the keying of POST /v1/execute): on a hit the kept binary is placed
 * in dirfd and nothing runs; on a miss the compile runs and, when it succeeded, its binary is
 * kept. res: the compile's run (a hit: status ok, no output; the caller frees it); *compile: the
 * answer's `compile` object with `cached` (the caller puts it). 0, or -1 with a 500/503 in resp
 * (the sandbox failed). */
int eval_compile(const struct api_req *req, int dirfd, const struct lang *lang,
		 const char *const *argv, const struct sbx_limits *lim, struct sbx_result *res,
		 struct json_object **compile, struct api_resp *resp);

/* POST /v1/evaluate with a compiled solution (cases mode): when the client's compile cache can
 * take this compile, compile (or find) it here into dirfd, the run's empty /work, and set
 * r->compiled to the compile object (owned by the caller once set: json_object_put), so that
 * the runner runs the binary it finds there instead of compiling (the job's `compiled`). When
 * the cache cannot be used (off, no client, packages) r->compiled stays NULL and the runner
 * compiles as before. 0, or -1 with an error in resp. */
int eval_compile_solution(const struct api_req *req, struct eval_req *r, int dirfd,
			  struct api_resp *resp);

/* The job's members for r->compiled: `compiled` (the compile object) and `binary` (its file
 * name in the work dir). Nothing when r->compiled is NULL. */
void eval_compile_job(const struct eval_req *r, struct json_object *job);

/* A compile that ran here (not a hit) is part of what the request cost: add its wall_ms and
 * cpu_ms to the answer out's. */
void eval_compile_account(const struct eval_req *r, struct json_object *out);

#endif
