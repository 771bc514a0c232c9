/* fcgi_fake_sbx.h: the scripted broker client of the fcgi unit tests (fcgi_fake_sbx.c). */
#ifndef FCGI_FAKE_SBX_H
#define FCGI_FAKE_SBX_H
#include "../../sandbox/sandbox.h"

extern struct sbx_result fake_sbx_next; /* returned by the next sbx_client_run (out/err copied) */
extern int fake_sbx_rc;			/* its return value */
extern int fake_sbx_calls;
extern char fake_sbx_argv[16][256]; /* argv of the last call */
extern char fake_sbx_stdin[4096];   /* stdin of the last call */
extern struct sbx_limits fake_sbx_limits;
extern struct sbx_probe fake_sbx_probe;
extern int fake_sbx_probe_rc;
/* contexts */
extern int fake_ctx_create_rc, fake_ctx_call_rc, fake_ctx_creates, fake_ctx_calls, fake_ctx_deletes;
extern int fake_ctx_enoent; /* this many next calls answer -ENOENT (a lost context) */
extern struct sbx_cell_result fake_ctx_next; /* returned by the next call (strings copied) */
extern char fake_ctx_request[4096];	     /* the request of the last call */
#endif
