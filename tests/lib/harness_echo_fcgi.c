/* harness_echo_fcgi.c: a FastCGI responder that answers every request with the parameters nginx
 * passed (as JSON), so front_params.t can check what reaches the workers: the client name, the
 * request id, and never the Authorization header. Test-only; built by that test into a temp dir. */
#include <fcgiapp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Print s as a JSON string (parameters are short ASCII in the test; escape what JSON needs). */
static void json_str(FCGX_Stream *out, const char *s)
{
	FCGX_PutChar('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			FCGX_FPrintF(out, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			FCGX_FPrintF(out, "\\u%04x", c);
		else
			FCGX_PutChar((int)c, out);
	}
	FCGX_PutChar('"', out);
}

int main(void)
{
	FCGX_Request r;
	char buf[4096];
	long body;
	int n;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&r, 0, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&r) >= 0) {
		body = 0;
		while ((n = FCGX_GetStr(buf, sizeof(buf), r.in)) > 0)
			body += n;
		FCGX_FPrintF(r.out, "Status: 200 OK\r\nContent-Type: application/json\r\n\r\n{");
		for (char **e = r.envp; *e; e++) {
			const char *eq = strchr(*e, '=');

			if (!eq)
				continue;
			snprintf(buf, sizeof(buf), "%.*s", (int)(eq - *e), *e);
			json_str(r.out, buf);
			FCGX_PutChar(':', r.out);
			json_str(r.out, eq + 1);
			FCGX_PutChar(',', r.out);
		}
		FCGX_FPrintF(r.out, "\"_body_bytes\":\"%ld\",\"_uid\":\"%d\"}\n", body,
			     (int)getuid());
		FCGX_Finish_r(&r);
	}
	return 0;
}
