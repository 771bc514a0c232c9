/* runs.h: runs with live output, ids, stdin and signals on the broker's side (runs.c). Private to
 * sbxd; clients use sandbox.h.
 *
 * A RUN_STREAM request is served by a slot like a RUN, with hooks into the run's supervision
 * (run.c): the kept output goes to the client in frames as it is read, straight from the capture
 * buffers, with non-blocking writes, so a slow reader costs no memory beyond the caps and never
 * holds up the supervisor (its limits, its timers). A run with an id is published in the slot's
 * entry of the broker's table (memory shared with the main process), which hands STDIN and SIGNAL
 * requests for it, with their connections, to the slot over the slot's control pair. */
#ifndef SBX_RUNS_H
#define SBX_RUNS_H

#include <stdint.h>
#include <sys/types.h>

#include "internal.h"
#include "wire.h"

/* A slot's run, as the main process sees it (in the slot's shared entry). */
struct sbx_run_pub {
	volatile uint32_t seq; /* odd while the slot writes the entry */
	volatile int state;    /* 0 none, SBX_RUN_RUNNING, SBX_RUN_ENDED (the last one, kept),
				  SBX_RUN_PUB_STARTING */
	char id[SBX_RUN_ID_LEN + 1];
	char owner[64];
	volatile uint64_t starting_until; /* SBX_RUN_PUB_STARTING: until then (sbx_now_ms) */
};
/* A compile step that succeeded: the run with its id is being started (in some slot). stdin and
 * signals for it are answered -EINPROGRESS (send again) for SBX_RUN_STARTING_MS at most, then as
 * for a run that has ended (its program never started: its client left, or no slot came). */
#define SBX_RUN_PUB_STARTING 3
#define SBX_RUN_STARTING_MS 20000

/* Serve a RUN_STREAM whose header h (and descriptors) were received on conn, in slot. ctl is the
 * slot's end of its control pair (STDIN/SIGNAL requests handed over by the main process); pubs
 * the table (npubs entries, this slot's is pubs[index]): an id running elsewhere is refused. Logs
 * under slot `index`. */
void sbx_runs_serve_stream(struct sbx_slot *slot, unsigned index, int conn,
			   const struct sbx_wire_req *h, int *fds, int nfds, int ctl,
			   struct sbx_run_pub *pubs, unsigned npubs);
/* The slot is idle (between runs): answer a handed-over request for a run that has ended. */
void sbx_runs_answer_idle(int ctl, struct sbx_run_pub *pub);
/* Main process: a STDIN or SIGNAL request (header h received on conn): find the run in
 * pubs[0..n) and hand conn to its slot's control pair ctls[i], or answer -ENOENT / -EPIPE. */
void sbx_runs_route(int conn, const struct sbx_wire_req *h, struct sbx_run_pub *pubs,
		    const int *ctls, unsigned n);

/* ---- background runs (runs_bg.c), in the main process ---- */
/* Room for max runs (running and kept), at most cap running at once; keepers connect to
 * socket_path as uid/gid (the service's client uid and the sockets' group). 0 or -1. */
int sbx_bg_init(unsigned max, unsigned cap, const char *socket_path, uid_t uid, gid_t gid);
/* Main process: why no background slot can open now (every one failed to), or NULL when they
 * can: a START is then refused at once with that reason (fail closed, and said). */
void sbx_bg_unavailable(const char *why);
/* A background request (header h received on conn, fds with it): answered or handed over. */
void sbx_bg_serve(int conn, const struct sbx_wire_req *h, int *fds, int nfds);
/* A child was reaped: true when it was a keeper (its entry is freed). */
bool sbx_bg_reaped(pid_t pid);
/* Broker stop: every keeper killed and reaped (their runs die with their connections). */
void sbx_bg_stop_all(void);

#endif
