/* log.c: one key=value line per request or event on stderr (collected by the pool's supervisor).
 * Values that came from a request are quoted and escaped so a client cannot forge a line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

/* Append " key=value" to line, quoting value when it holds anything but [A-Za-z0-9_./:-]. */
static void put(char *line, size_t size, const char *key, const char *val)
{
	size_t n = strlen(line);
	const char *p;
	bool plain = val && val[0];

	if (!val)
		val = "-";
	for (p = val; plain && *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:-{}",
			    *p))
			plain = false;
	if (plain || strcmp(val, "-") == 0) {
		snprintf(line + n, size - n, " %s=%.200s", key, val);
		return;
	}
	snprintf(line + n, size - n, " %s=\"", key);
	n = strlen(line);
	for (p = val; *p && n + 6 < size && p - val < 200; p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == '"' || c == '\\' || c >= 0x7f)
			n += (size_t)snprintf(line + n, size - n, "\\x%02x", c);
		else
			line[n++] = (char)c;
	}
	snprintf(line + n, size - n, "\"");
}

static void stamp(char *line, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(line, size, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ pid=%d", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
		 (int)getpid());
}

void log_request(const struct log_fields *f)
{
	char line[1024];
	size_t n;

	stamp(line, sizeof(line));
	put(line, sizeof(line), "req", f->request_id);
	put(line, sizeof(line), "client", f->client && f->client[0] ? f->client : NULL);
	put(line, sizeof(line), "method", f->method);
	put(line, sizeof(line), "route", f->route);
	n = strlen(line);
	snprintf(line + n, sizeof(line) - n, " status=%d ms=%.1f in=%llu out=%llu", f->status,
		 f->ms, (unsigned long long)f->in_bytes, (unsigned long long)f->out_bytes);
	if (f->runs) {
		n = strlen(line);
		snprintf(line + n, sizeof(line) - n, " runs=%u sandbox_ms=%.1f", f->runs,
			 f->sandbox_ms);
	}
	if (f->error_code)
		put(line, sizeof(line), "error", f->error_code);
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

void log_event(const char *event, const char *fmt, ...)
{
	char line[1024], tail[700];
	va_list ap;
	size_t n;

	stamp(line, sizeof(line));
	va_start(ap, fmt);
	vsnprintf(tail, sizeof(tail), fmt, ap);
	va_end(ap);
	n = strlen(line);
	snprintf(line + n, sizeof(line) - n, " event=%s %s", event, tail);
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
}
