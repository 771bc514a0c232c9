/* contexts.c: the contexts a session has (contexts/ in API.md), recorded beside its metadata in
 * the session directory (never in files/, so nothing a program runs can change the list).
 *
 * One file, "contexts", one line per context: "<32 hex id> <language> <created_at> <flag>
 * <memory_mb> <processes>\n", flag "d" for the session's default context of that language
 * (POST .../repl), "-" otherwise; the limits it was made with (to make it again the same).
 * Rewritten atomically (temp + rename) under its own flock ("contexts.lock": this file calls
 * nothing of session.c, which calls it when a session goes). The broker holds the contexts
 * themselves; this list is what survives the broker losing one (idle eviction, restart), so the
 * next call can recreate it and say its state was lost. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

#define CTX_FILE "contexts"
#define CTX_LINE_MAX 128

bool store_ctx_id_valid(const char *id)
{
	size_t n = 0;

	if (!id)
		return false;
	for (; id[n]; n++)
		if (!((id[n] >= '0' && id[n] <= '9') || (id[n] >= 'a' && id[n] <= 'f')))
			return false;
	return n == STORE_CTX_ID_LEN;
}

static bool lang_valid(const char *l)
{
	return !strcmp(l, "python") || !strcmp(l, "bash");
}

/* Parse one line into c. 0, or -1 when it is not a line store_ctx_add wrote. */
static int parse_line(const char *line, struct store_ctx *c)
{
	char id[STORE_CTX_ID_LEN + 2], lang[16], flag[4];
	long long created;
	unsigned long mem, procs;

	if (sscanf(line, "%33s %15s %lld %3s %lu %lu", id, lang, &created, flag, &mem, &procs) != 6)
		return -1;
	if (!store_ctx_id_valid(id) || !lang_valid(lang) || created < 0 || mem > UINT32_MAX ||
	    procs > UINT32_MAX || (strcmp(flag, "d") && strcmp(flag, "-")))
		return -1;
	memset(c, 0, sizeof(*c));
	memcpy(c->id, id, STORE_CTX_ID_LEN + 1);
	snprintf(c->language, sizeof(c->language), "%.6s", lang);
	c->created_at = (int64_t)created;
	c->is_default = flag[0] == 'd';
	c->memory_mb = (uint32_t)mem;
	c->processes = (uint32_t)procs;
	return 0;
}

int store_ctx_list(int dir_fd, struct store_ctx *out, size_t max, size_t *n)
{
	char buf[STORE_CTX_MAX * CTX_LINE_MAX + 1], *line, *save = NULL;
	ssize_t len;
	size_t got = 0;
	int fd = openat(dir_fd, CTX_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	*n = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EIO;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -EIO;
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line && got < max;
	     line = strtok_r(NULL, "\n", &save)) {
		if (parse_line(line, &out[got]) == 0)
			got++;
	}
	*n = got;
	return 0;
}

int store_ctx_find(int dir_fd, const char *id, struct store_ctx *out)
{
	struct store_ctx v[STORE_CTX_MAX];
	size_t n = 0;
	int rc = store_ctx_list(dir_fd, v, STORE_CTX_MAX, &n);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id)) {
			*out = v[i];
			return 0;
		}
	return -ENOENT;
}

int store_ctx_default(int dir_fd, const char *language, struct store_ctx *out)
{
	struct store_ctx v[STORE_CTX_MAX];
	size_t n = 0;
	int rc = store_ctx_list(dir_fd, v, STORE_CTX_MAX, &n);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (v[i].is_default && !strcmp(v[i].language, language)) {
			*out = v[i];
			return 0;
		}
	return -ENOENT;
}

/* Exclusive flock on the session's contexts.lock: an fd to close, or -1. */
static int ctx_lock(const struct session *s)
{
	int fd =
	    openat(s->dir_fd, "contexts.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0)
		return -1;
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			close(fd);
			return -1;
		}
	return fd;
}

/* Replace the file with v[0..n) (atomically). 0 or -errno. */
static int write_all(int dir_fd, const struct store_ctx *v, size_t n)
{
	char tmp[64], text[STORE_CTX_MAX * CTX_LINE_MAX];
	size_t off = 0;
	int fd;

	for (size_t i = 0; i < n; i++)
		off +=
		    (size_t)snprintf(text + off, sizeof(text) - off, "%s %s %lld %s %u %u\n",
				     v[i].id, v[i].language, (long long)v[i].created_at,
				     v[i].is_default ? "d" : "-", v[i].memory_mb, v[i].processes);
	fs_temp_name(tmp, sizeof(tmp), ".ctx-");
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, off) != (ssize_t)off || close(fd) < 0) {
		int err = errno ? errno : EIO;

		(void)unlinkat(dir_fd, tmp, 0);
		return -err;
	}
	if (renameat(dir_fd, tmp, dir_fd, CTX_FILE) < 0) {
		int err = errno;

		(void)unlinkat(dir_fd, tmp, 0);
		return -err;
	}
	return 0;
}

int store_ctx_add(const struct session *s, const struct store_ctx *c)
{
	struct store_ctx v[STORE_CTX_MAX + 1];
	size_t n = 0;
	int lfd, rc;

	if (!store_ctx_id_valid(c->id) || !lang_valid(c->language))
		return -EINVAL;
	if ((lfd = ctx_lock(s)) < 0)
		return -EIO;
	if ((rc = store_ctx_list(s->dir_fd, v, STORE_CTX_MAX, &n)) < 0)
		goto out;
	rc = -EUSERS;
	if (n >= STORE_CTX_MAX)
		goto out;
	for (size_t i = 0; i < n; i++) {
		rc = -EEXIST;
		if (!strcmp(v[i].id, c->id) ||
		    (c->is_default && v[i].is_default && !strcmp(v[i].language, c->language)))
			goto out;
	}
	v[n++] = *c;
	rc = write_all(s->dir_fd, v, n);
out:
	close(lfd);
	return rc;
}

int store_ctx_remove(const struct session *s, const char *id)
{
	struct store_ctx v[STORE_CTX_MAX];
	size_t n = 0, k = 0;
	int lfd, rc;

	if ((lfd = ctx_lock(s)) < 0)
		return -EIO;
	if ((rc = store_ctx_list(s->dir_fd, v, STORE_CTX_MAX, &n)) < 0)
		goto out;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].id, id))
			v[k++] = v[i];
	rc = k == n ? -ENOENT : write_all(s->dir_fd, v, k);
out:
	close(lfd);
	return rc;
}

void store_ctx_end_all(const struct store_conf *conf, int dir_fd)
{
	struct store_ctx v[STORE_CTX_MAX];
	size_t n = 0;

	if (!conf->ctx_end || store_ctx_list(dir_fd, v, STORE_CTX_MAX, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		conf->ctx_end(conf->ctx_end_ctx, v[i].id);
}
