/* packages_record.c: the "packages" of GET /v1/sessions/{id}: the session's record of what it
 * installed (.packages/<language>.txt, written by packages.c). Apart from packages.c so the
 * session routes link without the run path. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handlers.h"
#include "packages.h"

int pkg_session_list(struct session *s, struct json_object *o)
{
	static const char *const langs[] = {"python", "node"};
	struct json_object *a = json_object_new_array();

	for (size_t l = 0; l < 2; l++) {
		char path[64], buf[8192], *save = NULL;
		struct store_err e = {0};
		struct stat st;
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), ".packages/%s.txt", langs[l]);
		fd = fs_open_file(s->root_fd, path, strlen(path), &st, &e);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		for (char *line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			struct json_object *p = json_object_new_object();
			char *eq = strstr(line, "==");

			if (eq)
				*eq = '\0';
			json_object_object_add(p, "language", json_object_new_string(langs[l]));
			json_object_object_add(p, "name", api_utf8_string(line, strlen(line)));
			json_object_object_add(p, "version",
					       eq ? api_utf8_string(eq + 2, strlen(eq + 2)) : NULL);
			json_object_array_add(a, p);
		}
	}
	json_object_object_add(o, "packages", a);
	return 0;
}
