/* fcgi_log.c: the request log line: one line, key=value, request values quoted and escaped so a
 * client cannot forge a field or a line. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../fcgi/handlers/handlers.h"
#include "../lib/tap.h"

/* Run log_request with stderr captured into buf. */
static void capture(const struct log_fields *f, char *buf, size_t len)
{
	int p[2], saved = dup(2);
	ssize_t n;

	memset(buf, 0, len);
	if (pipe(p) < 0)
		return;
	dup2(p[1], 2);
	log_request(f);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	n = read(p[0], buf, len - 1);
	if (n < 0)
		buf[0] = '\0';
	close(p[0]);
}

int main(void)
{
	char line[2048];
	struct log_fields f = {.request_id = "abc123",
			       .client = "alice",
			       .method = "POST",
			       .route = "/v1/sessions/{id}/run",
			       .status = 200,
			       .ms = 12.5,
			       .in_bytes = 40,
			       .out_bytes = 200,
			       .error_code = NULL};

	capture(&f, line, sizeof(line));
	TAP_OK(strstr(line, " req=abc123 client=alice method=POST route=/v1/sessions/{id}/run "
			    "status=200 ms=12.5 in=40 out=200\n") != NULL,
	       "fields in order: %.*s", (int)strcspn(line, "\n"), line);
	TAP_OK(strncmp(line, "ts=", 3) == 0 && strchr(line, '\n') == line + strlen(line) - 1,
	       "one line, starting with ts=");

	f.client = "mallory\nts=forged status=200 \"x\"";
	f.status = 400;
	f.error_code = "invalid_json";
	capture(&f, line, sizeof(line));
	TAP_OK(strchr(line, '\n') == line + strlen(line) - 1,
	       "a newline in a value cannot start a line");
	TAP_OK(strstr(line, "client=\"mallory\\x0ats=forged status=200 \\x22x\\x22\"") != NULL,
	       "the value is quoted with escapes: %.*s", (int)strcspn(line, "\n"), line);
	TAP_OK(strstr(line, " error=invalid_json") != NULL, "the error code is logged");

	f.client = "";
	f.route = "-";
	capture(&f, line, sizeof(line));
	TAP_OK(strstr(line, " client=- ") != NULL && strstr(line, " route=- ") != NULL,
	       "empty values log as -");
	return tap_done();
}
