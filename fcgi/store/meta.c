/* meta.c: a session's meta.json, written and read without a JSON library: one flat object
 * {owner, created_at, last_used_at, expires_at} (epoch seconds), replaced atomically (temp +
 * rename). Written in exactly that shape; read in any member order and whitespace, as json-c
 * wrote it before and a hand edit may leave it. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"

#define SESSION_META_MAX 4096

/* The owner as a JSON string body (no quotes): '"', '\\' and control bytes escaped, the rest
 * (UTF-8 or not: it is only ever compared byte for byte) as is. 0, or -1 when it does not fit. */
static int meta_escape(const char *in, char *out, size_t outlen)
{
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)in; *p; p++) {
		int n;

		if (*p == '"' || *p == '\\')
			n = snprintf(out + o, outlen - o, "\\%c", *p);
		else if (*p < 0x20)
			n = snprintf(out + o, outlen - o, "\\u%04x", *p);
		else
			n = snprintf(out + o, outlen - o, "%c", *p);
		if (n < 0 || (size_t)n >= outlen - o)
			return -1;
		o += (size_t)n;
	}
	return 0;
}

static bool meta_num(const char **p, int64_t *out)
{
	char *end;
	long long v;

	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	v = strtoll(*p, &end, 10);
	if (errno || v < 0)
		return false;
	*out = (int64_t)v;
	*p = end;
	return true;
}

/* A JSON string at *p into out (escapes \" \\ \/ \b \f \n \r \t and \u00XX, which is all an
 * owner written by meta_write or by json-c before it can hold). */
static bool meta_str(const char **p, char *out, size_t outlen)
{
	const char *q = *p;
	size_t o = 0;

	if (*q++ != '"')
		return false;
	while (*q && *q != '"') {
		unsigned c = (unsigned char)*q++;

		if (c == '\\') {
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
			const char *f = *q ? strchr(from, *q) : NULL;

			if (f) {
				c = (unsigned char)to[f - from];
				q++;
			} else if (*q == 'u' && q[1] == '0' && q[2] == '0' &&
				   isxdigit((unsigned char)q[3]) && isxdigit((unsigned char)q[4])) {
				char hex[3] = {q[3], q[4], 0};

				c = (unsigned)strtoul(hex, NULL, 16);
				q += 5;
			} else {
				return false;
			}
		}
		if (c == 0 || o + 1 >= outlen)
			return false;
		out[o++] = (char)c;
	}
	if (*q != '"')
		return false;
	out[o] = '\0';
	*p = q + 1;
	return true;
}

static void meta_ws(const char **p)
{
	while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r')
		(*p)++;
}

int store_meta_read(int dir_fd, int64_t *created, int64_t *last_used, char *owner, size_t ownerlen)
{
	char buf[SESSION_META_MAX + 1], key[32];
	const char *p = buf;
	int64_t expires;
	unsigned seen = 0;
	ssize_t n;
	int fd = openat(dir_fd, "meta.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, SESSION_META_MAX);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	meta_ws(&p);
	if (*p++ != '{')
		return -1;
	for (;;) {
		bool ok;

		meta_ws(&p);
		if (!meta_str(&p, key, sizeof(key)))
			return -1;
		meta_ws(&p);
		if (*p++ != ':')
			return -1;
		meta_ws(&p);
		if (!strcmp(key, "owner"))
			ok = meta_str(&p, owner, ownerlen), seen |= 1;
		else if (!strcmp(key, "created_at"))
			ok = meta_num(&p, created), seen |= 2;
		else if (!strcmp(key, "last_used_at"))
			ok = meta_num(&p, last_used), seen |= 4;
		else if (!strcmp(key, "expires_at"))
			ok = meta_num(&p, &expires);
		else
			ok = false;
		if (!ok)
			return -1;
		meta_ws(&p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p++ != '}')
			return -1;
		break;
	}
	meta_ws(&p);
	return *p || seen != 7 ? -1 : 0;
}

int store_meta_write(int dir_fd, const char *owner, int64_t created, int64_t last_used,
		     int64_t expires)
{
	char tmp[64], esc[SESSION_META_MAX / 2], text[SESSION_META_MAX];
	int fd, len;

	if (meta_escape(owner, esc, sizeof(esc)) < 0)
		return -ENAMETOOLONG;
	len = snprintf(text, sizeof(text),
		       "{\"owner\":\"%s\",\"created_at\":%lld,\"last_used_at\":%lld,"
		       "\"expires_at\":%lld}",
		       esc, (long long)created, (long long)last_used, (long long)expires);
	if (len < 0 || (size_t)len >= sizeof(text))
		return -ENAMETOOLONG;
	fs_temp_name(tmp, sizeof(tmp), ".meta-");
	fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)len) != len || close(fd) < 0) {
		int err = errno ? errno : EIO;

		(void)unlinkat(dir_fd, tmp, 0);
		return -err;
	}
	if (renameat(dir_fd, tmp, dir_fd, "meta.json") < 0) {
		int err = errno;

		(void)unlinkat(dir_fd, tmp, 0);
		return -err;
	}
	return 0;
}
