/* util.c: small file and time helpers shared by the library's files. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int sbx_write_fileat(int dirfd, const char *name, const char *data)
{
	size_t len = strlen(data);
	int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, data, len) != (ssize_t)len)
		rc = -errno;
	close(fd);
	return rc ? rc : 0;
}

int sbx_write_file(const char *path, const char *data)
{
	return sbx_write_fileat(AT_FDCWD, path, data);
}

int sbx_read_fileat(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	return (int)n;
}

uint64_t sbx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sbx_set_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

uint64_t sbx_now_us(void);
uint64_t sbx_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
