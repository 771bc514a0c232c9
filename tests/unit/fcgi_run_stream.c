/* fcgi_run_stream.c: what a streamed answer hands nginx in one flush (run_stream.c). A fake
 * api_out keeps main.c's rule: begin and write flush what they were given, with whatever waited
 * before it, unless resp->hold is set. A run begun held sends its headers and start event with
 * its first output event (or at its first tick), not alone; the end event waits for the end of
 * the request (FCGX_Finish writes it with FastCGI's end of the response). The events and their
 * order are those of an answer that is not held. */
#include <stdlib.h>
#include <string.h>

#include "../../fcgi/handlers/handlers.h"
#include "../lib/tap.h"

struct fake {
	struct api_resp *resp;
	char buf[4096]; /* written, not flushed yet */
	size_t len;
	char flushes[8][4096];
	int nflush;
};

static void put(struct fake *f, const char *b, size_t n)
{
	if (f->len + n < sizeof(f->buf)) {
		memcpy(f->buf + f->len, b, n);
		f->len += n;
		f->buf[f->len] = '\0';
	}
	if (!f->resp->hold && f->len && f->nflush < 8) {
		memcpy(f->flushes[f->nflush], f->buf, f->len);
		f->flushes[f->nflush++][f->len] = '\0';
		f->len = 0;
	}
}

static int fake_begin(void *ctx, int status, const char *type, const char *headers)
{
	(void)status, (void)type, (void)headers;
	put(ctx, "H\n", 2);
	return 0;
}

static int fake_write(void *ctx, const char *b, size_t n)
{
	put(ctx, b, n);
	return 0;
}

static const struct api_out fake_out = {.begin = fake_begin, .write = fake_write};

struct setup {
	struct fake f;
	struct api_out out;
	struct api_req req;
	struct api_resp resp, answer;
	struct run_stream rs;
};

static void setup(struct setup *s)
{
	memset(s, 0, sizeof(*s));
	api_resp_init(&s->resp);
	api_resp_init(&s->answer);
	s->f.resp = &s->resp;
	s->out = fake_out;
	s->out.ctx = &s->f;
	s->req.out = &s->out;
	s->req.conn_fd = -1;
	api_json(&s->answer, 200, json_object_new_object());
}

/* The lines' "type" members, in order, e.g. "H start stdout". */
static void types(const char *flush, char *out, size_t cap)
{
	const char *p = flush;

	out[0] = '\0';
	while (*p) {
		const char *t = strstr(p, "\"type\":\"");
		const char *nl = strchr(p, '\n');
		size_t have = strlen(out);

		if (!nl)
			break;
		if (p[0] == 'H' && p[1] == '\n')
			snprintf(out + have, cap - have, "%sH", have ? " " : "");
		else if (t && t < nl)
			snprintf(out + have, cap - have, "%s%.*s", have ? " " : "",
				 (int)strcspn(t + 8, "\""), t + 8);
		p = nl + 1;
	}
}

int main(void)
{
	struct setup s;
	char t[256];

	/* A run begun held: nothing reaches nginx before the run says something. */
	setup(&s);
	TAP_OK(run_stream_begin_held(&s.rs, &s.req, &s.resp, false,
				     "0123456789abcdef0123456789abcdef") == 0 &&
		   s.f.nflush == 0 && !s.resp.hold,
	       "held: headers and start are not flushed at the start");
	TAP_OK(run_stream_output(&s.rs, 1, "1\n", 2) == 0 && s.f.nflush == 1,
	       "held: the first output event flushes once");
	types(s.f.flushes[0], t, sizeof(t));
	TAP_OK(strcmp(t, "H start stdout") == 0,
	       "held: headers, start and stdout in that flush (%s)", t);
	TAP_OK(strstr(s.f.flushes[0], "\"run_id\":\"0123456789abcdef0123456789abcdef\"") != NULL,
	       "held: the start event carries the run id");
	TAP_OK(run_stream_output(&s.rs, 2, "e", 1) == 0 && s.f.nflush == 2,
	       "held: later events flush at once");
	run_stream_end(&s.rs, &s.answer);
	types(s.f.buf, t, sizeof(t));
	TAP_OK(s.f.nflush == 2 && strcmp(t, "end") == 0 && !s.resp.hold,
	       "the end event waits for the request's end (%s)", t);
	api_resp_free(&s.answer);

	/* A silent run: its first tick sends the headers and start event. */
	setup(&s);
	run_stream_begin_held(&s.rs, &s.req, &s.resp, false, "0123456789abcdef0123456789abcdef");
	TAP_OK(run_stream_output(&s.rs, 0, NULL, 0) == 0 && s.f.nflush == 1,
	       "held: the first tick flushes");
	types(s.f.flushes[0], t, sizeof(t));
	TAP_OK(strcmp(t, "H start") == 0, "held: headers and start, no keepalive yet (%s)", t);
	TAP_OK(run_stream_output(&s.rs, 0, NULL, 0) == 0 && s.f.nflush == 1 && s.f.len == 0,
	       "a tick with nothing held writes nothing");
	api_resp_free(&s.answer);

	/* A run that ends before its first tick or output: everything at the request's end. */
	setup(&s);
	run_stream_begin_held(&s.rs, &s.req, &s.resp, false, "0123456789abcdef0123456789abcdef");
	run_stream_end(&s.rs, &s.answer);
	types(s.f.buf, t, sizeof(t));
	TAP_OK(s.f.nflush == 0 && strcmp(t, "H start end") == 0,
	       "held: a run that ends at once sends all with the request's end (%s)", t);
	api_resp_free(&s.answer);

	/* Not held (evaluate, contexts): the start event goes out at once. */
	setup(&s);
	TAP_OK(run_stream_begin(&s.rs, &s.req, &s.resp, false, "") == 0 && s.f.nflush >= 1 &&
		   s.f.len == 0,
	       "not held: headers and start are flushed at the start");
	types(s.f.flushes[s.f.nflush - 1], t, sizeof(t));
	TAP_OK(strstr(t, "start") != NULL && strstr(s.f.flushes[s.f.nflush - 1], "\"run_id\":null"),
	       "not held: the start event, run_id null (%s)", t);
	api_resp_free(&s.answer);
	return tap_done();
}
