/* util.c: small file and time helpers shared by the library's files. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
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

uint64_t sbx_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sbx_logv(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];
	struct timespec ts;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, sizeof buf, "ts=%lld.%03ld prog=sbxd pid=%d %s", (long long)ts.tv_sec,
		     ts.tv_nsec / 1000000, (int)getpid(), prefix ? prefix : "");
	if (n < 0 || (size_t)n >= sizeof buf)
		n = 0;
	vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	fprintf(stderr, "%s\n", buf);
}

void sbx_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sbx_logv(NULL, fmt, ap);
	va_end(ap);
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

int sbx_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		/* send() where it can: MSG_NOSIGNAL keeps a vanished peer from killing us */
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbx_read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sbx_send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {(void *)buf, len};
	struct msghdr msg;
	ssize_t n;

	if (nfds < 0 || nfds > 4)
		return -1;
	memset(&msg, 0, sizeof msg);
	memset(cbuf, 0, sizeof cbuf);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds > 0) {
		struct cmsghdr *c;

		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	/* The descriptors travel with the first byte; the rest, if any, follows plainly. */
	if (n <= 0)
		return -1;
	return sbx_write_all(sock, (const char *)buf + n, len - (size_t)n);
}
