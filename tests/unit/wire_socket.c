/* wire_socket.c: unit tests of sandbox/wire.c's socket half over socketpairs (no broker, no root):
 * descriptors travel and are counted, a peer that stops mid-message or sends the wrong number of
 * descriptors is refused with the right error, and nothing it sent is left open. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sandbox/internal.h"
#include "../../sandbox/wire.h"
#include "../lib/tap.h"

static const char *argv_buf[SBX_MAX_ARGS + 1], *envp_buf[SBX_MAX_ARGS + 1];

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

static int open_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void closeall(const int *fds, int n)
{
	int i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

static void test_run_request(void)
{
	const char *argv[] = {"/bin/echo", "hi", NULL}, *env[] = {"K=v", NULL};
	struct sbx_request req;
	struct sbx_wire_req h, got;
	char *s, *rs = NULL;
	int sv[2], fds[SBX_WIRE_MAX_FDS], nfds, rfds[SBX_WIRE_MAX_FDS], rn = -1;
	int dir = open("/", O_PATH | O_CLOEXEC), in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	enum sbx_wire_err e;

	memset(&req, 0, sizeof req);
	req.argv = argv;
	req.env = env;
	req.workdir_fd = dir;
	req.stdin_fd = in;
	pair(sv);
	TAP_OK(sbx_wire_encode_run(&req, &h, &s, fds, &nfds) == SBX_WIRE_OK &&
		   sbx_wire_send_req(sv[0], &h, fds, nfds, s) == SBX_WIRE_OK,
	       "send a run with two descriptors");
	e = sbx_wire_recv_req(sv[1], &got, rfds, &rn);
	TAP_OK(e == SBX_WIRE_OK && rn == 2 && got.argc == 2 && got.envc == 1,
	       "receive it: %s, %d fds", sbx_wire_strerror(e), rn);
	TAP_OK(rn == 2 && same_file(rfds[0], dir) && same_file(rfds[1], in) &&
		   (fcntl(rfds[0], F_GETFD) & FD_CLOEXEC),
	       "the directory then stdin arrive, close-on-exec");
	e = sbx_wire_recv_strings(sv[1], &got, &rs, argv_buf, envp_buf);
	TAP_OK(e == SBX_WIRE_OK && !strcmp(argv_buf[1], "hi") && !strcmp(envp_buf[0], "K=v"),
	       "its strings: %s", sbx_wire_strerror(e));
	free(s);
	free(rs);
	closeall(rfds, rn);
	closeall(sv, 2);
	close(dir);
	close(in);
}

/* Send raw: a header with nfds descriptors attached, then extra bytes, then hang up. */
static enum sbx_wire_err recv_raw(const struct sbx_wire_req *h, size_t hlen, int nfds,
				  const char *tail, size_t tlen, int *kept)
{
	int sv[2], fds[4], rfds[SBX_WIRE_MAX_FDS], i, before;
	struct sbx_wire_req got;
	enum sbx_wire_err e;

	pair(sv);
	for (i = 0; i < nfds; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sbx_send_fds(sv[0], h, hlen, fds, nfds);
	if (tlen)
		sbx_write_all(sv[0], tail, tlen);
	closeall(fds, nfds);
	shutdown(sv[0], SHUT_WR);
	before = open_fds();
	e = sbx_wire_recv_req(sv[1], &got, rfds, kept);
	if (e == SBX_WIRE_OK) {
		char *s = NULL;

		e = sbx_wire_recv_strings(sv[1], &got, &s, argv_buf, envp_buf);
		free(s);
	}
	/* the kept descriptors are the only new ones: extras were closed */
	if (open_fds() - before != *kept)
		e = (enum sbx_wire_err)999;
	closeall(rfds, *kept);
	closeall(sv, 2);
	return e;
}

static void test_malformed_requests(void)
{
	struct sbx_wire_req h;
	int kept;
	enum sbx_wire_err e;

	memset(&h, 0, sizeof h);
	h.magic = SBX_WIRE_MAGIC;
	h.op = SBX_OP_RUN;
	h.argc = 1;
	h.strings_len = 3;
	TAP_OK(recv_raw(&h, sizeof h, 0, "/x", 3, &kept) == SBX_WIRE_OK, "raw: a valid run");
	TAP_OK(recv_raw(&h, 0, 0, NULL, 0, &kept) == SBX_WIRE_IO, "raw: hang up at once");
	e = recv_raw(&h, sizeof h / 2, 0, NULL, 0, &kept);
	TAP_OK(e == SBX_WIRE_TRUNCATED, "raw: half a header: %s", sbx_wire_strerror(e));
	e = recv_raw(&h, sizeof h / 2, 1, NULL, 0, &kept);
	TAP_OK(e == SBX_WIRE_TRUNCATED && kept == 1,
	       "raw: half a header with an fd: %s, the fd handed back to close",
	       sbx_wire_strerror(e));
	e = recv_raw(&h, sizeof h, 0, "/x", 2, &kept);
	TAP_OK(e == SBX_WIRE_TRUNCATED, "raw: strings cut short: %s", sbx_wire_strerror(e));
	e = recv_raw(&h, sizeof h, 0, "/xy", 3, &kept);
	TAP_OK(e == SBX_WIRE_BAD_STRINGS, "raw: strings without their NUL: %s",
	       sbx_wire_strerror(e));
	e = recv_raw(&h, sizeof h, 1, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_BAD_FDS, "raw: an fd nobody flagged: %s", sbx_wire_strerror(e));
	h.has_workdir = 1;
	e = recv_raw(&h, sizeof h, 0, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_BAD_FDS, "raw: a flagged directory that never came: %s",
	       sbx_wire_strerror(e));
	h.has_stdin = 1;
	e = recv_raw(&h, sizeof h, 2, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_OK && kept == 2, "raw: two flagged, two came");
	e = recv_raw(&h, sizeof h, 3, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_BAD_FDS && kept == 3,
	       "raw: three descriptors for two flags: %s, all handed back to close",
	       sbx_wire_strerror(e));
	h.has_layer = 1;
	e = recv_raw(&h, sizeof h, 3, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_OK && kept == 3,
	       "raw: work directory, layer and stdin: all three came");
	e = recv_raw(&h, sizeof h, 4, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_BAD_FDS && kept == 3,
	       "raw: four descriptors (past the most): %s, the fourth closed",
	       sbx_wire_strerror(e));
	h.has_layer = 0;
	e = recv_raw(&h, sizeof h, 4, "/x", 3, &kept);
	TAP_OK(e == SBX_WIRE_BAD_FDS, "raw: four descriptors: %s", sbx_wire_strerror(e));
	h.has_workdir = h.has_stdin = 0;
	h.strings_len = SBX_MAX_ARGS_BYTES + 1;
	e = recv_raw(&h, sizeof h, 0, NULL, 0, &kept);
	TAP_OK(e == SBX_WIRE_TOO_LONG, "raw: oversized strings_len refused before any read: %s",
	       sbx_wire_strerror(e));
	h.strings_len = 3, h.magic = 0x31584254u;
	TAP_OK(recv_raw(&h, sizeof h, 0, "/x", 3, &kept) == SBX_WIRE_BAD_MAGIC, "raw: bad magic");
}

static void test_replies(void)
{
	struct sbx_result res, got;
	struct sbx_wire_res r;
	int sv[2], rc = 1;
	enum sbx_wire_err e;
	const char out[] = "o\0ut", err[] = "err";

	memset(&res, 0, sizeof res);
	res.status = SBX_ERROR;
	res.exit_code = 2;
	res.out = (char *)out;
	res.out_len = sizeof out - 1;
	res.err = (char *)err;
	res.err_len = 3;
	sbx_wire_encode_result(&r, 0, &res);
	pair(sv);
	TAP_OK(sbx_wire_send_res(sv[0], &r, out, err) == SBX_WIRE_OK, "send a result");
	memset(&got, 0, sizeof got);
	e = sbx_wire_recv_result(sv[1], &got, &rc);
	TAP_OK(e == SBX_WIRE_OK && rc == 0 && got.status == SBX_ERROR && got.exit_code == 2,
	       "receive it: %s", sbx_wire_strerror(e));
	TAP_OK(got.out_len == 4 && !memcmp(got.out, out, 4) && got.out[4] == '\0' &&
		   got.err_len == 3 && !strcmp(got.err, "err"),
	       "its output, NUL bytes included, terminated");
	free(got.out);
	free(got.err);
	memset(&got, 0, sizeof got);
	closeall(sv, 2);

	/* the header promises more than comes */
	r.out_len = 100;
	memset(&got, 0, sizeof got);
	pair(sv);
	sbx_write_all(sv[0], &r, sizeof r), sbx_write_all(sv[0], "short", 5);
	shutdown(sv[0], SHUT_WR);
	e = sbx_wire_recv_result(sv[1], &got, &rc);
	TAP_OK(e == SBX_WIRE_TRUNCATED && !got.out && !got.err,
	       "reply: output shorter than announced: %s, nothing left allocated",
	       sbx_wire_strerror(e));
	closeall(sv, 2);

	r.out_len = SBX_WIRE_MAX_OUTPUT_BYTES + 1;
	pair(sv);
	sbx_write_all(sv[0], &r, sizeof r), shutdown(sv[0], SHUT_WR);
	e = sbx_wire_recv_result(sv[1], &got, &rc);
	TAP_OK(e == SBX_WIRE_TOO_LONG && !got.out, "reply: oversized output refused unread: %s",
	       sbx_wire_strerror(e));
	closeall(sv, 2);

	pair(sv);
	sbx_write_all(sv[0], &r, sizeof r / 2), shutdown(sv[0], SHUT_WR);
	e = sbx_wire_recv_result(sv[1], &got, &rc);
	TAP_OK(e == SBX_WIRE_IO, "reply: half a header: %s", sbx_wire_strerror(e));
	closeall(sv, 2);

	sbx_wire_res_init(&r);
	r.cgroup_version = 2, r.usable = 1;
	pair(sv);
	sbx_wire_send_res(sv[0], &r, NULL, NULL);
	e = sbx_wire_recv_res(sv[1], SBX_OP_PROBE, &r);
	TAP_OK(e == SBX_WIRE_OK && r.usable == 1, "a probe reply over the socket");
	closeall(sv, 2);
}

int main(void)
{
	test_run_request();
	test_malformed_requests();
	test_replies();
	return tap_done();
}
