/* ctx_proto.c: the holder's side of the kernel protocol that needs no system call beyond memory:
 * the request line with its marker, a key of the reply, the output streams read up to the marker.
 * Kept apart from holder.c so that tests/unit/ctx_proto.c checks them without root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "context.h"

char *sbx_ctx_request_line(const char *req, size_t req_len, const char *marker, bool stream,
			   size_t *len)
{
	size_t a = 0, b = req_len, i, n;
	bool empty;
	char *line;

	while (a < b && (req[a] == ' ' || req[a] == '\t' || req[a] == '\r'))
		a++;
	while (b > a && (req[b - 1] == ' ' || req[b - 1] == '\t' || req[b - 1] == '\r'))
		b--;
	if (b - a < 2 || req[a] != '{' || req[b - 1] != '}')
		return NULL;
	for (i = a; i < b; i++)
		if (req[i] == '\n' || req[i] == '\0')
			return NULL; /* one line: a newline would end the request early */
	for (i = a + 1; i < b - 1 && (req[i] == ' ' || req[i] == '\t' || req[i] == '\r'); i++) {
	}
	empty = i == b - 1;
	/* {"marker":"<32>"[,"stream":true], + rest after '{' + \n */
	n = 12 + SBX_CTX_ID_LEN + 1 + (stream ? 14 : 0) + (empty ? 0 : 1) + (b - a - 1) + 1;
	line = malloc(n + 1);
	if (!line)
		return NULL;
	memcpy(line, "{\"marker\":\"", 11);
	memcpy(line + 11, marker, SBX_CTX_ID_LEN);
	i = 11 + SBX_CTX_ID_LEN;
	line[i++] = '"';
	if (stream) {
		memcpy(line + i, ",\"stream\":true", 14);
		i += 14;
	}
	if (!empty)
		line[i++] = ',';
	memcpy(line + i, req + a + 1, b - a - 1);
	i += b - a - 1;
	line[i++] = '\n';
	line[i] = '\0';
	*len = i;
	return line;
}

const char *sbx_ctx_reply_key(const char *reply, size_t len, const char *key)
{
	char pat[64];
	const char *p;
	int n = snprintf(pat, sizeof pat, "\"%s\"", key);

	if (n < 0 || (size_t)n >= sizeof pat)
		return NULL;
	p = memmem(reply, len, pat, (size_t)n);
	if (!p)
		return NULL;
	p += n;
	while (p < reply + len && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= reply + len || *p != ':')
		return NULL;
	p++;
	while (p < reply + len && (*p == ' ' || *p == '\t'))
		p++;
	return p < reply + len ? p : NULL;
}

enum sbx_ctx_line sbx_ctx_line_kind(const char *line, size_t len, const char *hex)
{
	static const char disp[] = "\"op\":\"display\"";
	size_t p = 11 + SBX_CTX_ID_LEN;

	if (len < p + 2 || memcmp(line, "{\"marker\":\"", 11) != 0 ||
	    memcmp(line + 11, hex, SBX_CTX_ID_LEN) != 0 || memcmp(line + p, "\",", 2) != 0)
		return SBX_CTX_LINE_FOREIGN;
	p += 2;
	if (len - p >= sizeof disp - 1 && memcmp(line + p, disp, sizeof disp - 1) == 0)
		return SBX_CTX_LINE_RESULT;
	return SBX_CTX_LINE_REPLY;
}

/* ---- output streams, read until the marker ---- */

void sbx_ctx_stream_commit(struct sbx_ctx_stream *s, const char *p, size_t n)
{
	size_t room = s->cap - s->len, k = n < room ? n : room;

	s->total += n;
	if (k) {
		memcpy(s->buf + s->len, p, k);
		s->len += k;
	}
	if (k < n)
		s->truncated = true;
}

/* Feed n bytes; returns how many of them were consumed (all, or up to the end of the marker). */
size_t sbx_ctx_stream_feed(struct sbx_ctx_stream *s, const char *marker, const char *data, size_t n)
{
	char tmp[SBX_CTX_MARK_LEN + SBX_CTX_FEED_MAX];
	size_t m, keep;
	const char *p;

	if (n > SBX_CTX_FEED_MAX)
		n = SBX_CTX_FEED_MAX;
	memcpy(tmp, s->win, s->win_len);
	memcpy(tmp + s->win_len, data, n);
	m = s->win_len + n;
	p = memmem(tmp, m, marker, SBX_CTX_MARK_LEN);
	if (p) {
		size_t used = (size_t)(p - tmp) + SBX_CTX_MARK_LEN - s->win_len;

		sbx_ctx_stream_commit(s, tmp, (size_t)(p - tmp));
		s->marked = true;
		s->win_len = 0;
		return used;
	}
	/* Hold back only the longest tail that begins the marker (it starts with a NUL): output
	 * without one goes on at once, as a streamed caller sees it. */
	keep = m < SBX_CTX_MARK_LEN - 1 ? m : SBX_CTX_MARK_LEN - 1;
	while (keep > 0 && memcmp(tmp + m - keep, marker, keep) != 0)
		keep--;
	sbx_ctx_stream_commit(s, tmp, m - keep);
	memmove(s->win, tmp + m - keep, keep);
	s->win_len = keep;
	return n;
}

void sbx_ctx_stream_feed_all(struct sbx_ctx_stream *s, const char *marker, const char *data,
			     size_t n)
{
	size_t off = 0;

	while (off < n && !s->marked)
		off += sbx_ctx_stream_feed(s, marker, data + off, n - off);
}

bool sbx_ctx_stream_init(struct sbx_ctx_stream *s, int fd, size_t cap)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->cap = cap;
	s->buf = mmap(NULL, cap + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED) {
		s->buf = NULL;
		return false;
	}
	return true;
}

void sbx_ctx_stream_free(struct sbx_ctx_stream *s)
{
	if (s->buf)
		munmap(s->buf, s->cap + 1);
	s->buf = NULL;
}
