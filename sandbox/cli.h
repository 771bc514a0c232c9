/* cli.h: shared by the sbx command's files (sbx.c, sbx_ctx.c). Not part of the library. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <stddef.h>
#include <stdio.h>

/* JSON string with invalid UTF-8 replaced by U+FFFD. */
void sbx_cli_json_str(FILE *f, const char *s, size_t len);
/* "sbx ctx ...": argv[0] is "ctx". Returns the exit status. */
int sbx_ctx_cli(int argc, char **argv);

#endif
