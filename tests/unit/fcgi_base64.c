/* fcgi_base64.c: the one strict base64 decoder (api_base64_decode) that files[].content, stdin
 * and MCP's write_file share: every valid text decodes to its bytes, and every malformed one
 * (trailing garbage, bad padding, a foreign or mixed alphabet, whitespace, stray bits) is
 * refused with a reason. */
#include <stdlib.h>
#include <string.h>

#include "../../fcgi/http/core.h"
#include "../lib/tap.h"

struct good {
	const char *in;
	const char *want;
	size_t want_len;
};

static int decodes_to(const char *in, size_t len, const char *want, size_t want_len)
{
	unsigned char *out = NULL;
	size_t n = 0;
	char why[80] = "";
	int rc = api_base64_decode(in, len, &out, &n, why, sizeof(why));
	int ok = rc == 0 && n == want_len && (n == 0 || memcmp(out, want, n) == 0);

	if (!ok)
		TAP_DIAG("\"%s\": rc %d, %zu bytes, %s", in, rc, n, why);
	free(out);
	return ok;
}

static int refused(const char *in, size_t len, const char *why_has)
{
	unsigned char *out = (unsigned char *)"x";
	size_t n = 99;
	char why[80] = "";
	int rc = api_base64_decode(in, len, &out, &n, why, sizeof(why));
	int ok = rc < 0 && !out && n == 0 && why[0] && (!why_has || strstr(why, why_has));

	if (!ok)
		TAP_DIAG("\"%s\": rc %d, why \"%s\" (want \"%s\")", in, rc, why,
			 why_has ? why_has : "");
	if (rc == 0)
		free(out);
	return ok;
}

int main(void)
{
	static const struct good good[] = {
	    {"cHJpbnQoMSk=", "print(1)", 8},
	    {"cHJpbnQoMSk", "print(1)", 8},
	    {"", "", 0},
	    {"Zg==", "f", 1},
	    {"Zg", "f", 1},
	    {"Zm8=", "fo", 2},
	    {"Zm9v", "foo", 3},
	    {"+/+/", "\xfb\xff\xbf", 3},
	    {"-_-_", "\xfb\xff\xbf", 3},
	    {"AAEC", "\0\1\2", 3},
	};
	static const char *const bad[][2] = {
	    {"cHJpbnQoMSk=!!!", "byte 11 is = padding"},
	    {"cHJpbnQoMSk!!!", "('!') is not a base64 digit"},
	    {"cHJpbnQoMSk==", "padding"},
	    {"cHJpbnQoMSk===", "padding"},
	    {"Zg=", "padding"},
	    {"Zg===", "padding"},
	    {"=", "padding"},
	    {"====", "padding"},
	    {"Zm=9", "padding"},
	    {"Zm9v=", "padding"},
	    {"a", "length"},
	    {"Zm9vY", "length"},
	    {"Zh==", "bits"},
	    {"Zm9=", "bits"},
	    {"cHJpbnQoMSl=", "bits"},
	    {"Zm9v\nYmFy", "(0x0a)"},
	    {"Zm9v YmFy", "(0x20)"},
	    {"Zm9v\r\n", "(0x0d)"},
	    {"+/-_", "mixes"},
	    {"Zm9v.mFy", "('.')"},
	    {"Zm9v\xc3\xa9mF", "(0xc3)"},
	};
	size_t i;
	int all = 1;

	for (i = 0; i < sizeof good / sizeof good[0]; i++)
		all &= decodes_to(good[i].in, strlen(good[i].in), good[i].want, good[i].want_len);
	TAP_OK(all, "valid texts decode: padded, unpadded, empty, standard and URL alphabets");
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
		TAP_OK(refused(bad[i][0], strlen(bad[i][0]), bad[i][1]),
		       "malformed case %zu refused: %s", i, bad[i][1]);
	TAP_OK(refused("Zm9v\0mFy", 8, "(0x00)"), "a NUL byte inside is refused");
	return tap_done();
}
