/* packages_int.h: what packages.c (the directory, requirements, the installer run, sessions)
 * shares with packages_layer.c (stateless layers). Not for other handlers: they use packages.h. */
#ifndef SBX_PACKAGES_INT_H
#define SBX_PACKAGES_INT_H

#include "handlers.h"

#define PKG_MAX_FILES 4096
#define PKG_MAX_NAMES 32
#define PKG_NAME_MAX 128
#define PKG_VERSION_MAX 64

struct pkg_ent {
	char name[PKG_NAME_MAX];
	char version[PKG_VERSION_MAX];
	char file[256];
	off_t size;
	int64_t mtime_ns;
};

struct pkg_set {
	const char *lang; /* "python" or "node" */
	struct pkg_ent *e;
	size_t n;
};

struct pkg_reqs {
	char r[PKG_MAX_NAMES][PKG_NAME_MAX + PKG_VERSION_MAX + 2]; /* "name" or "name==version" */
	size_t n;
};

/* The package language of a configured language id ("python", "node"), or NULL. */
const char *pkg_lang(const char *id);

/* Read lang's directory into s (sorted; s->e owned, pkg_set_free). A missing directory is an
 * empty set. 0 or -errno. */
int pkg_set_read(const struct config *cfg, const char *lang, struct pkg_set *s);
void pkg_set_free(struct pkg_set *s);

/* names (a JSON array of "name" / "name==version") against set, sorted into out. 0, or -1 with
 * a 400 naming field (the first unknown name, a bad spelling, too many). */
int pkg_reqs_parse(const struct pkg_set *set, struct json_object *names, const char *field,
		   struct pkg_reqs *out, struct api_resp *resp);

/* The highest version of name in set (node) satisfying the npm range (exact, ^, ~, x-ranges;
 * packages_semver.c) into ver. 0; -ENOENT none does; -EINVAL a range outside that subset. */
int pkg_semver_best(const struct pkg_set *set, const char *name, const char *range, char *ver,
		    size_t verlen);

/* The installer run in a fresh scratch dir with /work/dist (the language's files): 0 with *root
 * (the caller destroys it with path) and res filled (res->status says whether it installed; what
 * it installed is in root's "out"); -1 with resp filled. */
int pkg_build(const struct api_req *req, const struct pkg_set *set, const struct pkg_reqs *reqs,
	      int *root, char *path, size_t pathlen, struct sbx_result *res, struct api_resp *resp);

/* The installer's failure as the request's answer: 200, its run result with stage "install". */
void pkg_install_failed(struct api_resp *resp, const struct sbx_result *res);

/* Copy the directory src_name of src (O_NOFOLLOW, never following a link in it) into a new
 * directory dst_name of dst, within *budget bytes (-EDQUOT past it). 0 or -errno. */
int pkg_copy_dir(int src, const char *src_name, int dst, const char *dst_name, uint64_t *budget);

#endif
