/* base.c: what every other store file uses: the error detail, session ids, unique names, the
 * top directories of the state dir. Calls nothing else of the store. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

void fs_temp_name(char *out, size_t outlen, const char *prefix)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint64_t)getpid() << 32 ^ (uint64_t)(uintptr_t)out;
	snprintf(out, outlen, "%s%016llx", prefix, (unsigned long long)r);
}

int store_fail(struct store_err *e, int err, enum store_why why, int at)
{
	if (err < 0)
		err = -err;
	if (err == 0)
		err = EIO;
	if (e) {
		e->err = err;
		e->why = why;
		e->at = at;
	}
	return -err;
}

bool session_id_valid(const char *id, size_t len)
{
	if (!id || len == 0 || len > SESSION_ID_MAX || strlen(id) != len)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = id[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* A random (version 4) UUID into out (at least 37 bytes). 0, or -1 when getrandom fails. */
int session_uuid(char *out, size_t outlen)
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return -1;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(out, outlen,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
		 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
		 b[15]);
	return 0;
}

/* O_PATH fd of state_dir/<sub>, made (0700) if missing. Returns the fd or -1. */
int session_top_fd(const struct store_conf *conf, const char *sub)
{
	char path[4096];

	if (!conf || !conf->state_dir ||
	    snprintf(path, sizeof(path), "%s/%s", conf->state_dir, sub) >= (int)sizeof(path))
		return -1;
	(void)mkdir(path, 0700);
	return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}
