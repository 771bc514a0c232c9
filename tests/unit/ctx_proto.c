/* ctx_proto.c: unit tests of sandbox/ctx_proto.c, the holder's pure half of the kernel protocol:
 * the request line gets its marker and stays one JSON line (or is refused), the reply's keys are
 * found, and a cell's output stops exactly at its marker whatever the read boundaries, capped
 * and counted. */
#include <string.h>

#include "../../sandbox/context.h"
#include "../lib/tap.h"

static const char HEX[] = "0123456789abcdef0123456789abcdef";

static int line_is(const char *req, const char *want)
{
	size_t len = 0;
	char *line = sbx_ctx_request_line(req, strlen(req), HEX, false, &len);
	int r = want ? line && len == strlen(want) && memcmp(line, want, len) == 0 : line == NULL;

	if (!r)
		TAP_DIAG("got %s", line ? line : "NULL");
	free(line);
	return r;
}

/* Feed data to a fresh stream in pieces of `step` bytes; returns the kept output. */
static struct sbx_ctx_stream feed_in(const char *data, size_t n, size_t step, size_t cap,
				     size_t *consumed)
{
	struct sbx_ctx_stream s;
	char mark[SBX_CTX_MARK_LEN];
	size_t off = 0;

	mark[0] = '\0';
	memcpy(mark + 1, HEX, 32);
	mark[33] = '\0';
	sbx_ctx_stream_init(&s, -1, cap);
	while (off < n && !s.marked) {
		size_t k = n - off < step ? n - off : step;

		off += sbx_ctx_stream_feed(&s, mark, data + off, k);
	}
	*consumed = off;
	return s;
}

int main(void)
{
	char data[256], mark[SBX_CTX_MARK_LEN];
	size_t n, used, step;
	const char *v;
	static const char reply[] = "{\"op\": \"execute\", \"status\" : \"error\", "
				    "\"execution_count\":7, \"results\": []}";

	TAP_OK(line_is("{\"op\":\"execute\",\"code\":\"1\"}",
		       "{\"marker\":\"0123456789abcdef0123456789abcdef\",\"op\":\"execute\","
		       "\"code\":\"1\"}\n"),
	       "request line: the marker goes first, the caller's members follow, one newline");
	TAP_OK(line_is("  {\"op\":\"variables\"}\t",
		       "{\"marker\":\"0123456789abcdef0123456789abcdef\","
		       "\"op\":\"variables\"}\n"),
	       "request line: surrounding blanks dropped");
	TAP_OK(line_is("{ }", "{\"marker\":\"0123456789abcdef0123456789abcdef\" }\n"),
	       "request line: an empty object gets the marker alone (no dangling comma)");
	TAP_OK(line_is("{\"code\":\"a\nb\"}", NULL), "request line: a raw newline is refused");
	TAP_OK(line_is("[1]", NULL), "request line: not an object is refused");
	TAP_OK(line_is("{\"a\":1", NULL), "request line: an unclosed object is refused");
	TAP_OK(line_is("{", NULL), "request line: a lone brace is refused");
	{
		static const char nul[] = "{\"a\":\"\0\"}";
		size_t len;

		TAP_OK(sbx_ctx_request_line(nul, sizeof nul - 1, HEX, false, &len) == NULL,
		       "request line: a NUL byte is refused");
	}

	{
		size_t len = 0;
		char *line = sbx_ctx_request_line("{\"op\":\"execute\"}", 16, HEX, true, &len);

		TAP_OK(line &&
			   !strcmp(line, "{\"marker\":\"0123456789abcdef0123456789abcdef\","
					 "\"stream\":true,\"op\":\"execute\"}\n") &&
			   len == strlen(line),
		       "request line: a streamed call tells the kernel after the marker");
		free(line);
	}
#define L(s) s, sizeof(s) - 1
	TAP_OK(sbx_ctx_line_kind(L("{\"marker\":\"0123456789abcdef0123456789abcdef\",\"op\":"
				   "\"display\",\"result\":{}}"),
				 HEX) == SBX_CTX_LINE_RESULT,
	       "line kind: display data with this call's marker");
	TAP_OK(sbx_ctx_line_kind(L("{\"marker\":\"0123456789abcdef0123456789abcdef\",\"op\":"
				   "\"execute\",\"status\":\"ok\"}"),
				 HEX) == SBX_CTX_LINE_REPLY,
	       "line kind: the reply with this call's marker");
	TAP_OK(sbx_ctx_line_kind(L("{\"op\":\"execute\",\"execution_count\":99}"), HEX) ==
		   SBX_CTX_LINE_FOREIGN,
	       "line kind: a line without the marker is foreign (a cell forging a reply)");
	TAP_OK(sbx_ctx_line_kind(L("{\"marker\":\"0123456789abcdef0123456789abcdee\",\"op\":"
				   "\"display\"}"),
				 HEX) == SBX_CTX_LINE_FOREIGN,
	       "line kind: another call's marker is foreign");
	TAP_OK(sbx_ctx_line_kind(L("{\"marker\":\"0123456789abcdef0123456789abcdef"), HEX) ==
		   SBX_CTX_LINE_FOREIGN,
	       "line kind: a cut line is foreign");
#undef L
	v = sbx_ctx_reply_key(reply, strlen(reply), "status");
	TAP_OK(v && strncmp(v, "\"error\"", 7) == 0, "reply key: status found past blanks");
	v = sbx_ctx_reply_key(reply, strlen(reply), "execution_count");
	TAP_OK(v && strtoul(v, NULL, 10) == 7, "reply key: execution_count");
	TAP_OK(sbx_ctx_reply_key(reply, strlen(reply), "error") == NULL,
	       "reply key: a missing key is NULL");
	TAP_OK(sbx_ctx_reply_key("{\"status\"", 9, "status") == NULL,
	       "reply key: a key at the very end is NULL");

	/* "out" + marker + "later" */
	mark[0] = '\0';
	memcpy(mark + 1, HEX, 32);
	mark[33] = '\0';
	memcpy(data, "hello ", 6);
	memcpy(data + 6, mark, SBX_CTX_MARK_LEN);
	memcpy(data + 6 + SBX_CTX_MARK_LEN, "later", 5);
	n = 6 + SBX_CTX_MARK_LEN + 5;
	for (step = 1; step <= n; step++) {
		struct sbx_ctx_stream s = feed_in(data, n, step, 100, &used);

		if (!(s.marked && s.len == 6 && memcmp(s.buf, "hello ", 6) == 0 && s.total == 6 &&
		      used == 6 + SBX_CTX_MARK_LEN)) {
			TAP_OK(0, "stream: the marker found when fed %zu bytes at a time", step);
			sbx_ctx_stream_free(&s);
			break;
		}
		sbx_ctx_stream_free(&s);
		if (step == n)
			TAP_OK(1,
			       "stream: output ends exactly at the marker whatever the read "
			       "boundaries (1..%zu bytes at a time)",
			       n);
	}
	{
		struct sbx_ctx_stream s = feed_in(data, n, n, 3, &used);

		TAP_OK(s.marked && s.len == 3 && s.truncated && s.total == 6,
		       "stream: kept up to its cap, the rest counted and flagged");
		sbx_ctx_stream_free(&s);
	}
	{
		/* a near-marker: NUL + 32 hex but another digit */
		char fake[SBX_CTX_MARK_LEN];
		struct sbx_ctx_stream s;

		memcpy(fake, mark, sizeof fake);
		fake[5] = 'x';
		s = feed_in(fake, sizeof fake, 7, 100, &used);
		TAP_OK(!s.marked && s.len + s.win_len == sizeof fake,
		       "stream: something like the marker is output, held back only as long as it "
		       "could still be one");
		sbx_ctx_stream_free(&s);
	}
	{
		struct sbx_ctx_stream s;

		sbx_ctx_stream_init(&s, -1, 10);
		sbx_ctx_stream_feed_all(&s, mark, mark, SBX_CTX_MARK_LEN);
		TAP_OK(s.marked && s.len == 0 && s.total == 0,
		       "stream: an empty cell is the marker "
		       "alone");
		sbx_ctx_stream_free(&s);
	}
	{
		/* what cannot begin the marker goes on at once (a streamed caller sees it live) */
		struct sbx_ctx_stream s;
		char part[12] = "first\n";

		sbx_ctx_stream_init(&s, -1, 100);
		sbx_ctx_stream_feed(&s, mark, part, 6);
		TAP_OK(s.len == 6 && s.win_len == 0,
		       "stream: a line without a NUL is kept at once");
		memcpy(part, "ab", 2);
		memcpy(part + 2, mark, 5); /* "ab" + NUL + 4 hex digits: may begin the marker */
		sbx_ctx_stream_feed(&s, mark, part, 7);
		TAP_OK(s.len == 8 && s.win_len == 5,
		       "stream: only a tail that begins the marker is held back");
		sbx_ctx_stream_feed(&s, mark, "zz", 2);
		TAP_OK(s.len == 15 && s.win_len == 0 && !s.marked,
		       "stream: ... and let go once it cannot be the marker");
		sbx_ctx_stream_free(&s);
	}
	return tap_done();
}
