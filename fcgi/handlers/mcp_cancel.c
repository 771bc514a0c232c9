/* mcp_cancel.c: cancelling a tools/call. Two signals end a call early: its client goes away (the
 * connection to nginx turns readable, as for the API's own routes), or the client sends
 * notifications/cancelled naming the call's request id, in another POST that another worker
 * receives. The routes a tool calls already stop when their request's conn_fd turns readable
 * (a streamed run is killed, a context cell interrupted), so a call watches one descriptor made
 * for it: an epoll set holding the real connection and a FIFO named after the call, readable as
 * soon as either is. The worker that receives the notification writes a byte into that FIFO.
 *
 * The FIFO lives in <state_dir>/mcp-calls/ (0700, the pool's own: made by the stack and the
 * unit, as the state dir itself is root's), named by the hex of the client
 * name (from nginx's token map), the Mcp-Session-Id header (when the client sends one) and the
 * request id's JSON: a client can only ever name its own calls. Request ids are chosen by the
 * client and unique only per MCP session; two calls of one client with the same id at once (two
 * agents sharing a token without protocol sessions) cannot be told apart, so the second is not
 * registered and can then be cancelled only by closing its connection. Behind the multi-host
 * front a notification reaches whichever host the front picks: it cancels only calls running
 * there (closing the stream works everywhere). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp.h"

/* The longest id, session header and client name that still make a file name (hex doubles). */
#define MCP_CANCEL_PART_MAX 80

static void hex(char *out, const char *s, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		*out++ = digits[(unsigned char)s[i] >> 4];
		*out++ = digits[(unsigned char)s[i] & 15];
	}
	*out = '\0';
}

/* The FIFO's path for (req's client, its Mcp-Session-Id, id). 0, or -1 when a part is too long
 * or the directory cannot be made (the call is then not cancellable by notification). */
static int fifo_path(const struct api_req *req, struct json_object *id, char *out, size_t outlen)
{
	const char *sid = mcp_header(req, "HTTP_MCP_SESSION_ID"), *idj;
	const char *client = req->client ? req->client : "";
	char hc[2 * MCP_CANCEL_PART_MAX + 1], hs[2 * MCP_CANCEL_PART_MAX + 1],
	    hi[2 * MCP_CANCEL_PART_MAX + 1];
	size_t idlen = 0;
	int n;

	if (!id || !req->cfg || !req->cfg->state_dir)
		return -1;
	idj = json_object_to_json_string_length(id, JSON_C_TO_STRING_PLAIN, &idlen);
	if (!sid)
		sid = "";
	if (!client[0] || strlen(client) > MCP_CANCEL_PART_MAX ||
	    strlen(sid) > MCP_CANCEL_PART_MAX || idlen > MCP_CANCEL_PART_MAX)
		return -1;
	hex(hc, client, strlen(client));
	hex(hs, sid, strlen(sid));
	hex(hi, idj, idlen);
	n = snprintf(out, outlen, "%s/mcp-calls/%s.%s.%s", req->cfg->state_dir, hc, hs, hi);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Make and open the call's FIFO: the fd, or -1. A FIFO left by a worker that died (no reader)
 * is replaced; one a live call holds is left to it. */
static int fifo_open(const char *path)
{
	int fd, tries;

	for (tries = 0; tries < 2; tries++) {
		if (mkfifo(path, 0600) == 0)
			/* Read and write: a FIFO with a writer never reports a hangup, only data.
			 */
			return open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (errno != EEXIST)
			return -1;
		fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			close(fd);
			return -1; /* a live call has this id */
		}
		if (errno != ENXIO || unlink(path) < 0)
			return -1;
	}
	return -1;
}

void mcp_cancel_begin(struct mcp_cancel *mc, const struct api_req *req, struct json_object *id,
		      struct api_req *inner)
{
	struct epoll_event ev = {.events = EPOLLIN};

	mc->ep = mc->fifo = -1;
	mc->path[0] = '\0';
	*inner = *req;
	if (fifo_path(req, id, mc->path, sizeof(mc->path)) == 0) {
		mc->fifo = fifo_open(mc->path);
		if (mc->fifo < 0)
			mc->path[0] = '\0';
	}
	if (mc->fifo < 0)
		return; /* the connection alone, as for any route */
	mc->ep = epoll_create1(EPOLL_CLOEXEC);
	if (mc->ep < 0 || epoll_ctl(mc->ep, EPOLL_CTL_ADD, mc->fifo, &ev) < 0 ||
	    (req->conn_watch && req->conn_fd >= 0 &&
	     epoll_ctl(mc->ep, EPOLL_CTL_ADD, req->conn_fd, &ev) < 0)) {
		mcp_cancel_end(mc);
		return;
	}
	inner->conn_watch = true;
	inner->conn_fd = mc->ep;
}

bool mcp_cancel_notified(const struct mcp_cancel *mc)
{
	struct pollfd p = {.fd = mc->fifo, .events = POLLIN};

	return mc->fifo >= 0 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

void mcp_cancel_end(struct mcp_cancel *mc)
{
	if (mc->path[0])
		unlink(mc->path);
	if (mc->ep >= 0)
		close(mc->ep);
	if (mc->fifo >= 0)
		close(mc->fifo);
	mc->ep = mc->fifo = -1;
	mc->path[0] = '\0';
}

void mcp_cancel_notify(const struct api_req *req, struct json_object *params)
{
	struct json_object *id = NULL;
	char path[PATH_MAX];
	int fd;

	if (!params || !json_object_object_get_ex(params, "requestId", &id) ||
	    !(json_object_is_type(id, json_type_string) ||
	      json_object_is_type(id, json_type_int)) ||
	    fifo_path(req, id, path, sizeof(path)) < 0)
		return;
	/* No reader (ENXIO): the call has ended or never was; the spec says to ignore it. */
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	if (write(fd, "c", 1) < 0) {
		/* A full FIFO has been told already. */
	}
	close(fd);
}
