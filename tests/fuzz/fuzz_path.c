/* fuzz_path.c: libFuzzer driver for the path resolver: the route matcher's %-decoding and
 * captures (fcgi/http/routes.c route_find) feeding the session file layer's path check and openat2
 * resolution (fcgi/store/fs.c fs_path_check, fs_open, fs_parent).
 *
 * The input is the tail of a request path. A fixture tree holds the traps code in a session can
 * leave: symlinks to /etc/passwd, to "/", to "..", to a sibling directory. The oracle is the one
 * that matters: whatever fs_open or fs_parent hands back resolves inside the session root, and
 * fs_path_check agrees with an independent reading of API.md's path rules. */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../fcgi/handlers/handlers.h"
#include "../../fcgi/store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char top[64], root[128], mkroot[128];
static int root_fd = -1, mk_fd = -1;

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p) < 0 ? 0 : 0;
}

static void cleanup(void)
{
	if (top[0])
		nftw(top, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void fixture_links(int dfd)
{
	symlinkat("/etc/passwd", dfd, "ln_out");
	symlinkat("/", dfd, "abs");
	symlinkat("../outside", dfd, "ln_sib");
	symlinkat("..", dfd, "ln_up");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char p[256];
	int fd;

	(void)argc, (void)argv;
	snprintf(top, sizeof(top), "/tmp/fuzz_path.XXXXXX");
	if (!mkdtemp(top))
		abort();
	atexit(cleanup);
	snprintf(root, sizeof(root), "%s/root", top);
	snprintf(mkroot, sizeof(mkroot), "%s/mk", top);
	snprintf(p, sizeof(p), "%s/outside", top);
	if (mkdir(root, 0700) < 0 || mkdir(mkroot, 0700) < 0 || mkdir(p, 0700) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/outside/secret", top);
	close(open(p, O_WRONLY | O_CREAT, 0600));
	root_fd = open(root, O_PATH | O_DIRECTORY);
	mk_fd = open(mkroot, O_PATH | O_DIRECTORY);
	if (root_fd < 0 || mk_fd < 0)
		abort();
	fd = openat(root_fd, "a", O_WRONLY | O_CREAT, 0600);
	close(fd);
	mkdirat(root_fd, "d", 0700);
	fd = openat(root_fd, "d/b", O_WRONLY | O_CREAT, 0600);
	close(fd);
	fixture_links(root_fd);
	snprintf(p, sizeof(p), "%s/d", root);
	fd = open(p, O_PATH | O_DIRECTORY);
	fixture_links(fd);
	close(fd);
	fixture_links(mk_fd);
	return 0;
}

/* The fd must name root itself or something beneath it. */
static void must_be_inside(int fd, const char *base)
{
	char link[64], target[4096];
	ssize_t n;
	size_t bl = strlen(base);

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		abort();
	target[n] = '\0';
	if (strncmp(target, base, bl) != 0 || (target[bl] != '\0' && target[bl] != '/')) {
		fprintf(stderr, "escaped the root: %s\n", target);
		abort();
	}
}

/* API.md's rule, read independently: relative, no NUL, no empty, "." or ".." segment; and the
 * README's: no segment beginning ".sbx-tmp-" (an upload in flight). */
static bool path_ok(const char *p, size_t n)
{
	size_t seg = 0;

	if (n == 0 || n > SESSION_PATH_MAX || p[0] == '/' || memchr(p, 0, n))
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && p[i] != '/')
			continue;
		if (i == seg || i - seg > SESSION_NAME_MAX || (i - seg == 1 && p[seg] == '.') ||
		    (i - seg == 2 && p[seg] == '.' && p[seg + 1] == '.') ||
		    (i - seg >= 9 && !memcmp(p + seg, ".sbx-tmp-", 9)))
			return false;
		seg = i + 1;
	}
	return true;
}

static void resolve(const char *path, size_t n, bool create)
{
	const char *base = NULL;
	int fd;

	if ((fs_path_check(path, n) == 0) != path_ok(path, n))
		abort();
	if (fs_path_check(path, n) < 0)
		return;
	fd = fs_open(root_fd, path, O_PATH, 0);
	if (fd >= 0) {
		must_be_inside(fd, root);
		close(fd);
	}
	fd = fs_parent(root_fd, path, false, &base);
	if (fd >= 0) {
		must_be_inside(fd, root);
		if (base < path || base > path + n || strchr(base, '/'))
			abort();
		close(fd);
	}
	if (!create)
		return;
	/* create: the segments are made under mkroot, checked, then removed again. */
	fd = fs_parent(mk_fd, path, true, &base);
	if (fd >= 0) {
		must_be_inside(fd, mkroot);
		close(fd);
	}
	if (strchr(path, '/')) {
		char first[SESSION_NAME_MAX + 1];
		size_t l = (size_t)(strchr(path, '/') - path);

		memcpy(first, path, l);
		first[l] = '\0';
		fs_rm_tree(mk_fd, first);
		fixture_links(mk_fd);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const prefixes[] = {"/v1/sessions/abc/files/", "/v1/sessions/", "/"};
	const char *prefix = prefixes[size ? data[0] % 3 : 0];
	size_t plen = strlen(prefix), tail = size ? size - 1 : 0;
	const uint8_t *t = size ? data + 1 : data;
	char *raw = NULL, *buf = NULL;
	const struct route *rt;
	struct route_match m;
	struct api_resp resp;

	/* The raw bytes straight into the file layer: it must hold on its own. */
	raw = malloc(tail + 1);
	if (!raw)
		return 0;
	memcpy(raw, t, tail);
	raw[tail] = '\0';
	resolve(raw, tail, false);
	free(raw);

	/* As a request path: nginx hands the worker a NUL-free path; the matcher decodes it. */
	tail = strnlen((const char *)t, tail);
	raw = malloc(plen + tail + 1);
	buf = malloc(plen + tail + 2);
	if (!raw || !buf)
		goto out;
	memcpy(raw, prefix, plen);
	memcpy(raw + plen, t, tail);
	raw[plen + tail] = '\0';
	api_resp_init(&resp);
	rt =
	    route_find(size && (data[0] & 4) ? "PUT" : "GET", raw, &m, buf, plen + tail + 2, &resp);
	if (!rt && (!resp.json || resp.status < 400))
		abort(); /* no route is always an error answer */
	if (rt && m.params[0] && m.params[1] &&
	    (m.params[0][0] == '\0' || strchr(m.params[0], '/')))
		abort(); /* {id} is one non-empty segment, even when %2F-encoded */
	if (rt && m.params[1])
		resolve(m.params[1], strlen(m.params[1]), size && (data[0] & 8));
	api_resp_free(&resp);
out:
	free(raw);
	free(buf);
	return 0;
}
