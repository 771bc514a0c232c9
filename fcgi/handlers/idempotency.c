/* idempotency.c: Idempotency-Key on the POSTs that create things (POST /v1/sessions, fork).
 *
 * A client that retries a create after a lost answer must not get two sessions. With the header
 * Idempotency-Key, the first answer that succeeded (2xx) is kept for IDEM_TTL_S under
 * state_dir/idempotency/<client>/<hash of the key>, with the key and a fingerprint of the
 * request (method, path, body). The same key again from the same client: the same status and
 * body, created nothing (Idempotent-Replayed: true). The same key with another request: 422
 * idempotency_key_reused. Keys are per client: the directory is the client's, so bob's key never
 * finds alice's record. A record's file is locked (flock) from the lookup until the answer is
 * stored, so two racing retries create one thing. Failures are not kept: a retry tries again.
 * Bounded: expired records go when a client stores a new one, and past IDEM_MAX_PER_CLIENT the
 * oldest goes too. The sandbox never sees state_dir; still, nothing here follows a symlink. */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "handlers.h"

#define IDEM_TTL_S (24 * 3600)
#define IDEM_MAX_PER_CLIENT 1024
#define IDEM_KEY_MAX 255
#define IDEM_RECORD_MAX (1u << 20)

static uint64_t fnv_add(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* The request header name (HTTP_...) from the FastCGI params, or NULL. Borrowed. */
static const char *req_header(const struct api_req *req, const char *name)
{
	size_t n = strlen(name);

	for (char **e = req->env; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* The client's record directory, made on first use; -1 on failure. */
static int client_dir(const char *state_dir, const char *client)
{
	int top = -1, dir = -1, cd = -1;

	top = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		goto out;
	if (mkdirat(top, "idempotency", 0700) < 0 && errno != EEXIST)
		goto out;
	dir = openat(top, "idempotency", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		goto out;
	if (mkdirat(dir, client, 0700) < 0 && errno != EEXIST)
		goto out;
	cd = openat(dir, client, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
out:
	if (top >= 0)
		close(top);
	if (dir >= 0)
		close(dir);
	return cd;
}

/* The record in fd, or NULL (empty, unreadable, too big). Caller owns it. */
static struct json_object *record_read(int fd)
{
	struct stat st;
	char *buf;
	struct json_object *o = NULL;

	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > IDEM_RECORD_MAX)
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size) {
		buf[st.st_size] = '\0';
		o = json_tokener_parse(buf);
	}
	free(buf);
	return o;
}

static void record_write(int fd, struct json_object *rec)
{
	size_t len = 0;
	const char *s = json_object_to_json_string_length(rec, JSON_C_TO_STRING_PLAIN, &len);

	if (ftruncate(fd, 0) < 0 || pwrite(fd, s, len, 0) == (ssize_t)len)
		return;
	/* A torn record would only be unreadable; make it empty (no record) if that works. */
	if (ftruncate(fd, 0) < 0)
		return;
}

/* Drop expired records of the client's directory, and the oldest past the cap. */
static void prune(int cd, time_t now)
{
	DIR *d;
	struct dirent *de;
	char oldest[NAME_MAX + 1] = "";
	time_t oldest_t = 0;
	size_t n = 0;
	int fd = dup(cd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.' || fstatat(cd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (now - st.st_mtime >= IDEM_TTL_S) {
			unlinkat(cd, de->d_name, 0);
			continue;
		}
		n++;
		if (!oldest[0] || st.st_mtime < oldest_t) {
			snprintf(oldest, sizeof(oldest), "%s", de->d_name);
			oldest_t = st.st_mtime;
		}
	}
	closedir(d);
	if (n > IDEM_MAX_PER_CLIENT && oldest[0])
		unlinkat(cd, oldest, 0);
}

static bool key_valid(const char *k)
{
	size_t n = strlen(k);

	if (n < 1 || n > IDEM_KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] > 0x7e)
			return false;
	return true;
}

void h_idempotent(const struct api_req *req, struct api_resp *resp, api_handler fn)
{
	const char *key = req_header(req, "HTTP_IDEMPOTENCY_KEY");
	struct json_object *rec = NULL, *v;
	char name[20], fp[20];
	int cd = -1, fd = -1;
	uint64_t h;
	time_t now = time(NULL);

	if (!key || !req->cfg || !req->cfg->state_dir) {
		fn(req, resp);
		return;
	}
	if (!key_valid(key)) {
		api_error(resp, 400, "invalid_value", "Idempotency-Key",
			  "Idempotency-Key must be 1 to %d printable ASCII characters.",
			  IDEM_KEY_MAX);
		return;
	}
	h = fnv_add(1469598103934665603ull, req->method, strlen(req->method) + 1);
	h = fnv_add(h, req->path, strlen(req->path) + 1);
	h = fnv_add(h, req->body ? req->body : "", req->body ? req->body_len : 0);
	snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)h);
	snprintf(name, sizeof(name), "%016llx",
		 (unsigned long long)fnv_add(1469598103934665603ull, key, strlen(key)));
	cd = client_dir(req->cfg->state_dir, req->client);
	if (cd >= 0)
		fd = openat(cd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX) < 0) {
		api_error(resp, 500, "internal_error", NULL,
			  "The Idempotency-Key record could not be opened (state_dir/idempotency "
			  "must be the service user's).");
		goto out;
	}
	rec = record_read(fd);
	if (rec && json_object_object_get_ex(rec, "created", &v) &&
	    now - (time_t)json_object_get_int64(v) < IDEM_TTL_S &&
	    json_object_object_get_ex(rec, "key", &v) &&
	    strcmp(json_object_get_string(v), key) == 0) {
		struct json_object *body = NULL, *st = NULL;

		if (json_object_object_get_ex(rec, "fingerprint", &v) &&
		    strcmp(json_object_get_string(v), fp) != 0) {
			api_error(resp, 422, "idempotency_key_reused", "Idempotency-Key",
				  "This Idempotency-Key was used within 24 h for another request "
				  "(another path or body); use a new key for a new request.");
			goto out;
		}
		json_object_object_get_ex(rec, "status", &st);
		json_object_object_get_ex(rec, "body", &body);
		api_json(resp, st ? json_object_get_int(st) : 200, json_object_get(body));
		api_header(resp, "Idempotent-Replayed: true");
		goto out;
	}
	fn(req, resp);
	if (resp->status >= 200 && resp->status < 300 && resp->json) {
		json_object_put(rec);
		rec = json_object_new_object();
		json_object_object_add(rec, "key", json_object_new_string(key));
		json_object_object_add(rec, "fingerprint", json_object_new_string(fp));
		json_object_object_add(rec, "created", json_object_new_int64((int64_t)now));
		json_object_object_add(rec, "status", json_object_new_int(resp->status));
		json_object_object_add(rec, "body", json_object_get(resp->json));
		record_write(fd, rec);
		prune(cd, now);
	}
out:
	json_object_put(rec);
	if (fd >= 0)
		close(fd);
	if (cd >= 0)
		close(cd);
}
