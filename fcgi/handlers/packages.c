/* packages.c: the operator's package directory (the allow-list), installs into a session and
 * the stateless layers of execute's "packages".
 *
 * The directory (config packages.dir, default state_dir/packages) holds python/ (wheels, sdists)
 * and node/ (npm pack tarballs); it is read at each request. Every install runs the installer
 * (pip, or a small node script unpacking tarballs) INSIDE a sandbox run, in a fresh scratch dir
 * holding a copy of the language's files at /work/dist; what it leaves in /work/out is copied
 * out by the host (fs_copy_tree: never following a link the installer made) into the session's
 * .packages/<language>, or into a stateless layer (packages_layer.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../store/ccache.h"
#include "handlers.h"
#include "packages.h"
#include "packages_int.h"

const char *pkg_lang(const char *id)
{
	if (strcmp(id, "python") == 0)
		return "python";
	if (strcmp(id, "node") == 0)
		return "node";
	return NULL;
}

/* Python names compare normalised (PEP 503): lower case, runs of "-_." as one "-". */
static void norm_name(char *s, bool python)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		char c = *r;

		if (python && (c == '-' || c == '_' || c == '.')) {
			if (w == s || w[-1] != '-')
				*w++ = '-';
			continue;
		}
		*w++ = python && c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	*w = '\0';
}

static bool copy_part(char *dst, size_t cap, const char *src, size_t len)
{
	if (len == 0 || len >= cap)
		return false;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return true;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);

	return a > b && strcmp(s + a - b, suf) == 0;
}

/* Name and version from a file name: a wheel ({name}-{version}(-{build})?-{py}-{abi}-{plat}.whl,
 * the name's "-" written "_"), a Python sdist ({name}-{version}.tar.gz or .zip) or an npm pack
 * tarball ({name}-{version}.tgz, "@scope/name" packed as "scope-name"). false: not a package. */
static bool parse_file(const char *lang, const char *fn, struct pkg_ent *p)
{
	const char *dash;
	size_t stem;

	if (strcmp(lang, "python") == 0 && ends_with(fn, ".whl")) {
		const char *v = strchr(fn, '-'), *ve = v ? strchr(v + 1, '-') : NULL;

		if (!v || !ve || !copy_part(p->name, sizeof(p->name), fn, (size_t)(v - fn)) ||
		    !copy_part(p->version, sizeof(p->version), v + 1, (size_t)(ve - v - 1)))
			return false;
	} else if (strcmp(lang, "python") == 0 &&
		   (ends_with(fn, ".tar.gz") || ends_with(fn, ".zip"))) {
		stem = strlen(fn) - (ends_with(fn, ".zip") ? 4 : 7);
		dash = NULL;
		for (const char *c = fn; c < fn + stem; c++)
			if (*c == '-')
				dash = c;
		if (!dash || !copy_part(p->name, sizeof(p->name), fn, (size_t)(dash - fn)) ||
		    !copy_part(p->version, sizeof(p->version), dash + 1,
			       (size_t)(fn + stem - dash - 1)))
			return false;
	} else if (strcmp(lang, "node") == 0 && ends_with(fn, ".tgz")) {
		stem = strlen(fn) - 4;
		dash = NULL;
		/* The version starts at the first "-" followed by a digit (versions hold "-"). */
		for (const char *c = fn; c + 1 < fn + stem; c++)
			if (*c == '-' && c[1] >= '0' && c[1] <= '9') {
				dash = c;
				break;
			}
		if (!dash || !copy_part(p->name, sizeof(p->name), fn, (size_t)(dash - fn)) ||
		    !copy_part(p->version, sizeof(p->version), dash + 1,
			       (size_t)(fn + stem - dash - 1)))
			return false;
	} else {
		return false;
	}
	if (strlen(fn) >= sizeof(p->file))
		return false;
	strcpy(p->file, fn);
	norm_name(p->name, strcmp(lang, "python") == 0);
	return true;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct pkg_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->file, y->file);
}

/* The operator's directory of lang, opened (the operator's path: trusted); -errno. */
static int pkg_dir_open(const struct config *cfg, const char *lang)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", cfg->packages_dir, lang);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void pkg_set_free(struct pkg_set *s)
{
	free(s->e);
	s->e = NULL;
	s->n = 0;
}

/* Read lang's directory into s (sorted). A missing directory is an empty set. 0 or -errno. */
int pkg_set_read(const struct config *cfg, const char *lang, struct pkg_set *s)
{
	int fd = pkg_dir_open(cfg, lang);
	DIR *d;
	struct dirent *de;
	size_t cap = 0;

	s->lang = lang;
	s->e = NULL;
	s->n = 0;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) && s->n < PKG_MAX_FILES) {
		struct pkg_ent p;
		struct stat st;

		if (de->d_name[0] == '.' || !parse_file(lang, de->d_name, &p))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		p.size = st.st_size;
		p.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		if (s->n == cap) {
			struct pkg_ent *n = realloc(s->e, (cap = cap ? cap * 2 : 16) * sizeof(*n));

			if (!n) {
				closedir(d);
				pkg_set_free(s);
				return -ENOMEM;
			}
			s->e = n;
		}
		s->e[s->n++] = p;
	}
	closedir(d);
	if (s->n)
		qsort(s->e, s->n, sizeof(*s->e), ent_cmp);
	return 0;
}

void h_packages_list(const struct api_req *req, struct api_resp *resp)
{
	static const char *const langs[] = {"python", "node"};
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	json_object_object_add(o, "packages", a);
	for (size_t l = 0; l < 2; l++) {
		struct pkg_set s;
		int rc = pkg_set_read(req->cfg, langs[l], &s);

		if (rc < 0) {
			json_object_put(o);
			h_errno(resp, -rc, NULL, NULL);
			return;
		}
		for (size_t i = 0; i < s.n; i++) {
			struct json_object *p = json_object_new_object();

			json_object_object_add(p, "language", json_object_new_string(langs[l]));
			json_object_object_add(p, "name", json_object_new_string(s.e[i].name));
			json_object_object_add(p, "version",
					       json_object_new_string(s.e[i].version));
			json_object_object_add(p, "file", json_object_new_string(s.e[i].file));
			json_object_object_add(p, "bytes", json_object_new_int64(s.e[i].size));
			json_object_array_add(a, p);
		}
		pkg_set_free(&s);
	}
	api_json(resp, 200, o);
}

/* ---- requirements ---- */

static int req_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* One requirement against the set: into out->r. 0, or -1 with a 400 naming it. */
static int req_add(const struct pkg_set *set, const char *spec, const char *field, size_t i,
		   struct pkg_reqs *out, struct api_resp *resp)
{
	char name[PKG_NAME_MAX], ver[PKG_VERSION_MAX] = "";
	const char *eq = strstr(spec, "=="), *at = NULL;
	size_t nlen;
	bool found = false, node = strcmp(set->lang, "node") == 0;

	/* node also takes npm's "name@range" ("@scope/name@^1.2"): the last "@" past the first
	 * character, resolved here to the highest matching version in the directory. */
	if (node && !eq && strlen(spec) > 1)
		at = strrchr(spec + 1, '@');
	nlen = eq ? (size_t)(eq - spec) : at ? (size_t)(at - spec) : strlen(spec);
	for (const char *c = spec; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr(node ? "-_.=@/+^~*" : "-_.=@/+", *c))) {
			api_error(resp, 400, "invalid_value", field,
				  "%s[%zu] \"%.64s\" is not \"name\" or \"name==version\"%s.",
				  field, i, spec, node ? " or \"name@range\"" : "");
			return -1;
		}
	if (!copy_part(name, sizeof(name), spec, nlen) ||
	    (eq && !copy_part(ver, sizeof(ver), eq + 2, strlen(eq + 2))) || name[0] == '-') {
		api_error(resp, 400, "invalid_value", field,
			  "%s[%zu] \"%.64s\" is not \"name\" or \"name==version\"%s.", field, i,
			  spec, node ? " or \"name@range\"" : "");
		return -1;
	}
	norm_name(name, strcmp(set->lang, "python") == 0);
	if (at) {
		int r = pkg_semver_best(set, name, at + 1, ver, sizeof(ver));

		if (r == -EINVAL) {
			api_error(resp, 400, "invalid_value", field,
				  "%s[%zu]: \"%.64s\" is not a version range this service knows "
				  "(exact, ^, ~, x-ranges such as 1.x or *).",
				  field, i, at + 1);
			return -1;
		}
		if (r < 0) {
			api_error(resp, 400, "unknown_package", field,
				  "%s[%zu]: no version of node package \"%.64s\" in the package "
				  "directory satisfies \"%.32s\" (GET /v1/packages lists them).",
				  field, i, name, at + 1);
			return -1;
		}
	}
	for (size_t k = 0; k < set->n && !found; k++)
		found = strcmp(set->e[k].name, name) == 0 &&
			(!ver[0] || strcmp(set->e[k].version, ver) == 0);
	if (!found) {
		api_error(resp, 400, "unknown_package", field,
			  "%s[%zu]: %s package \"%.64s%s%.32s\" is not in the package directory "
			  "(GET /v1/packages lists it).",
			  field, i, set->lang, name, ver[0] ? "==" : "", ver);
		return -1;
	}
	for (size_t k = 0; k < out->n; k++)
		if (strncmp(out->r[k], name, strlen(name)) == 0 &&
		    (out->r[k][strlen(name)] == '\0' || out->r[k][strlen(name)] == '=')) {
			out->n--; /* the later spelling wins */
			memmove(out->r[k], out->r[out->n], sizeof(out->r[k]));
			break;
		}
	if (out->n == PKG_MAX_NAMES) {
		api_error(resp, 400, "invalid_value", field, "At most %d packages.", PKG_MAX_NAMES);
		return -1;
	}
	snprintf(out->r[out->n++], sizeof(out->r[0]), "%s%s%s", name, ver[0] ? "==" : "", ver);
	return 0;
}

int pkg_reqs_parse(const struct pkg_set *set, struct json_object *names, const char *field,
		   struct pkg_reqs *out, struct api_resp *resp)
{
	size_t n = json_object_array_length(names);

	if (n == 0 || n > PKG_MAX_NAMES) {
		api_error(resp, 400, "invalid_value", field, "%s must hold 1 to %d names.", field,
			  PKG_MAX_NAMES);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_array_get_idx(names, i);

		if (!json_object_is_type(v, json_type_string)) {
			api_error(resp, 400, "invalid_type", field, "%s[%zu] must be a string.",
				  field, i);
			return -1;
		}
		/* "tinyapp\u0000x" is not the name tinyapp: never read a prefix of what was sent.
		 */
		if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
			api_error(resp, 400, "invalid_value", field,
				  "%s[%zu] must not contain NUL bytes.", field, i);
			return -1;
		}
		if (req_add(set, json_object_get_string(v), field, i, out, resp) < 0)
			return -1;
	}
	qsort(out->r, out->n, sizeof(out->r[0]), req_cmp);
	return 0;
}

/* ---- the installer run ---- */

/* The node installer: each wanted name's tarball (and, by package.json, its dependencies', any
 * version the directory holds) unpacked into /work/out/node_modules/<name>. */
static const char node_installer[] =
    "const fs=require('fs'),cp=require('child_process'),path=require('path');"
    "const D='/work/dist',O='/work/out/node_modules',avail={};"
    "for(const f of fs.readdirSync(D).sort()){if(!f.endsWith('.tgz'))continue;let pj;"
    "try{pj=JSON.parse(cp.execFileSync('tar',['-xzOf',path.join(D,f),'package/package.json']))}"
    "catch(e){continue}(avail[pj.name]=avail[pj.name]||[]).push({v:pj.version,f,"
    "deps:pj.dependencies||{}})}"
    "const want=process.argv.slice(1).map(a=>{const i=a.indexOf('==');"
    "return i<0?[a,null]:[a.slice(0,i),a.slice(i+2)]});const done=new Set();"
    "fs.mkdirSync(O,{recursive:true});"
    "while(want.length){const [n,v]=want.shift();if(done.has(n))continue;"
    "const c=(avail[n]||[]).filter(x=>!v||x.v===v);"
    "if(!c.length){console.error('no tarball for '+n+(v?'=='+v:'')+' in the package "
    "directory');process.exit(1)}"
    "const p=c[c.length-1],d=path.join(O,n);fs.mkdirSync(d,{recursive:true});"
    "cp.execFileSync('tar',['-xzf',path.join(D,p.f),'-C',d,'--strip-components=1']);"
    "console.log('installed '+n+'@'+p.v);done.add(n);"
    "for(const k of Object.keys(p.deps))want.push([k,null])}";

/* Copy the regular file name of src into dst (fresh, ours). 0 or -errno. */
static int copy_file(int src, int dst, const char *name)
{
	int in = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), out = -1;
	char buf[FS_CHUNK];
	struct stat st;
	int rc = 0;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return -EINVAL;
	}
	out = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (out < 0) {
		close(in);
		return -errno;
	}
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf)), w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : 0;
			break;
		}
		while (w < n) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				rc = k < 0 ? -errno : -EIO;
				goto out;
			}
			w += k;
		}
	}
out:
	close(in);
	close(out);
	return rc;
}

/* A fresh scratch dir with /work/dist (the language's files) and the installer run in it.
 * 0 with *root (the caller destroys it with path) and res filled (res->status says whether it
 * installed); -1 with resp filled. */
int pkg_build(const struct api_req *req, const struct pkg_set *set, const struct pkg_reqs *reqs,
	      int *root, char *path, size_t pathlen, struct sbx_result *res, struct api_resp *resp)
{
	static const char *const env[] = {"HOME=/tmp", "PIP_NO_INPUT=1", NULL};
	const char *argv[PKG_MAX_NAMES + 24];
	struct store_err e = {0};
	struct sbx_limits lim;
	size_t n = 0;
	int src = -1, dist = -1, rc = -1, r;

	memset(res, 0, sizeof(*res));
	*root = scratch_create(h_store(req->cfg), path, pathlen, &e);
	if (*root < 0) {
		h_store_error(resp, &e, NULL);
		return -1;
	}
	src = pkg_dir_open(req->cfg, set->lang);
	if (src < 0 || mkdirat(*root, "dist", 0755) < 0 || mkdirat(*root, "out", 0755) < 0 ||
	    (dist = openat(*root, "dist", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		h_errno(resp, src < 0 ? -src : errno, NULL, NULL);
		goto out;
	}
	for (size_t i = 0; i < set->n; i++)
		if ((r = copy_file(src, dist, set->e[i].file)) < 0) {
			h_errno(resp, -r, NULL, NULL);
			goto out;
		}
	if (strcmp(set->lang, "python") == 0) {
		static const char *const pip[] = {"/usr/bin/python3",
						  "-m",
						  "pip",
						  "install",
						  "--no-index",
						  "--find-links",
						  "/work/dist",
						  "--no-build-isolation",
						  "--no-cache-dir",
						  "--disable-pip-version-check",
						  "--no-warn-script-location",
						  "--target",
						  "/work/out",
						  NULL};

		for (; pip[n]; n++)
			argv[n] = pip[n];
	} else {
		argv[n++] = "/usr/bin/node";
		argv[n++] = "-e";
		argv[n++] = node_installer;
	}
	for (size_t i = 0; i < reqs->n; i++)
		argv[n++] = reqs->r[i];
	argv[n] = NULL;
	/* The installer is untrusted code with the server's largest limits (it unpacks, and may
	 * build an sdist). */
	run_parse_limits(req->cfg, NULL, NULL, &lim, resp);
	lim.wall_ms = req->cfg->maxima.wall_ms;
	lim.cpu_ms = req->cfg->maxima.cpu_ms;
	lim.memory_bytes = req->cfg->maxima.memory_bytes;
	lim.file_size_bytes = req->cfg->maxima.file_size_bytes;
	if (lim.processes < 16 && req->cfg->maxima.processes >= 16)
		lim.processes = 16;
	rc = run_sandboxed(req->cfg, *root, argv, env, NULL, 0, &lim, res, resp);
out:
	if (src >= 0)
		close(src);
	if (dist >= 0)
		close(dist);
	return rc;
}

/* The installer's failure as the request's answer: 200, its run result with stage "install". */
void pkg_install_failed(struct api_resp *resp, const struct sbx_result *res)
{
	struct json_object *o = run_result_json(res, false);

	json_object_object_add(o, "stage", json_object_new_string("install"));
	api_json(resp, 200, o);
}

/* ---- the environment of runs ---- */

size_t pkg_env(int root, const char **env, size_t max)
{
	struct stat st;
	size_t n = 0;

	if (n + 1 < max && fstatat(root, ".packages/python", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		env[n++] = "PYTHONPATH=/work/.packages/python";
	if (n + 1 < max &&
	    fstatat(root, ".packages/node/node_modules", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		env[n++] = "NODE_PATH=/work/.packages/node/node_modules";
	env[n] = NULL;
	return n;
}

int pkg_copy_dir(int src, const char *src_name, int dst, const char *dst_name, uint64_t *budget)
{
	int s = openat(src, src_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), d = -1, rc;

	if (s < 0)
		return -errno;
	if (mkdirat(dst, dst_name, 0755) < 0 && errno != EEXIST) {
		rc = -errno;
		goto out;
	}
	d = openat(dst, dst_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d < 0) {
		rc = -errno;
		goto out;
	}
	rc = fs_copy_tree(s, d, budget);
out:
	close(s);
	if (d >= 0)
		close(d);
	return rc;
}

/* ---- sessions ---- */

/* The session's record of what it asked for: .packages/<lang>.txt, one requirement a line. Its
 * content is the session's own (a run may have changed it): each line is checked again. */
static void record_read(struct session *s, const struct pkg_set *set, struct pkg_reqs *out)
{
	char path[64], buf[8192], *save = NULL;
	struct store_err e = {0};
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), ".packages/%s.txt", set->lang);
	fd = fs_open_file(s->root_fd, path, strlen(path), &st, &e);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct api_resp scratch = {0};

		if (req_add(set, line, "names", 0, out, &scratch) < 0 && scratch.json)
			json_object_put(scratch.json);
	}
}

/* Replace the session's .packages/<lang> with scratch's out under the session's quota. */
static int session_put(struct session *s, int sroot, const char *lang, struct store_err *e)
{
	char tmp[64];
	uint64_t budget, old = 0;
	int pk = -1, lk, r, o;

	if (mkdirat(s->root_fd, ".packages", 0755) < 0 && errno != EEXIST)
		return store_fail(e, errno, STORE_WHY_NONE, 0);
	pk = fs_open(s->root_fd, ".packages", O_RDONLY | O_DIRECTORY, 0);
	if (pk < 0)
		return store_fail(e, -pk, STORE_WHY_NONE, 0);
	lk = session_lock(s);
	if (lk < 0) {
		lk = session_lock_fail(e);
		close(pk);
		return lk;
	}
	o = openat(pk, lang, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (o >= 0) {
		fs_usage(o, &old, NULL);
		close(o);
	}
	budget = session_quota_left(s);
	if (budget != UINT64_MAX)
		budget += old;
	fs_temp_name(tmp, sizeof(tmp), ".new-");
	r = pkg_copy_dir(sroot, "out", pk, tmp, &budget);
	if (r < 0) {
		fs_rm_tree(pk, tmp);
		session_unlock(lk);
		close(pk);
		if (r == -EDQUOT) {
			e->left = session_quota_left(s);
			e->limit = s->conf->quota_bytes;
			return store_fail(e, EDQUOT, STORE_WHY_QUOTA, 0);
		}
		return store_fail(e, -r, STORE_WHY_NONE, 0);
	}
	fs_discard(pk, lang, ".old-");
	r = renameat(pk, tmp, pk, lang) < 0 ? -errno : 0;
	if (r < 0)
		fs_rm_tree(pk, tmp);
	session_unlock(lk);
	close(pk);
	return r < 0 ? store_fail(e, -r, STORE_WHY_NONE, 0) : 0;
}

void h_session_packages(const struct api_req *req, struct api_resp *resp)
{
	static const char *const fields[] = {"language", "names", NULL};
	struct json_object *body = api_body_object(req, resp), *names = NULL, *o;
	const char *lname = NULL, *pl;
	const struct lang *lang;
	struct session *s = NULL;
	struct pkg_set set = {0};
	struct pkg_reqs reqs;
	struct sbx_result res;
	struct store_err e = {0};
	char spath[4096], rec[PKG_MAX_NAMES * (PKG_NAME_MAX + PKG_VERSION_MAX + 3)] = "";
	int sroot = -1, r;

	memset(&res, 0, sizeof(res));
	memset(&reqs, 0, sizeof(reqs));
	if (!body)
		goto out;
	if (api_only_fields(body, fields, resp) < 0 ||
	    api_get_string(body, "language", true, &lname, NULL, resp) < 0 ||
	    api_get_array(body, "names", &names, resp) < 0)
		goto out;
	if (!names) {
		api_error(resp, 400, "missing_field", "names", "Field \"names\" is required.");
		goto out;
	}
	lang = config_lang(req->cfg, lname);
	pl = lang ? pkg_lang(lang->id) : NULL;
	if (!pl) {
		api_error(resp, 400, "invalid_value", "language",
			  "Packages are for \"python\" and \"node\", not \"%.40s\".", lname);
		goto out;
	}
	if ((r = pkg_set_read(req->cfg, pl, &set)) < 0) {
		h_errno(resp, -r, NULL, NULL);
		goto out;
	}
	if (pkg_reqs_parse(&set, names, "names", &reqs, resp) < 0 || h_reserve_check(req, resp) < 0)
		goto out;
	s = h_session_open(req, req->params[0], resp);
	if (!s)
		goto out;
	/* What the session had stays installed: the new set is built whole and replaces it. */
	{
		struct pkg_reqs had;

		memset(&had, 0, sizeof(had));
		record_read(s, &set, &had);
		for (size_t i = 0; i < had.n; i++) {
			struct api_resp scratch = {0};
			bool named = false;

			for (size_t k = 0; k < reqs.n; k++) {
				size_t nl = strcspn(had.r[i], "=");

				named |= strncmp(reqs.r[k], had.r[i], nl) == 0 &&
					 (reqs.r[k][nl] == '\0' || reqs.r[k][nl] == '=');
			}
			if (!named && req_add(&set, had.r[i], "names", 0, &reqs, &scratch) < 0 &&
			    scratch.json)
				json_object_put(scratch.json);
		}
		qsort(reqs.r, reqs.n, sizeof(reqs.r[0]), req_cmp);
	}
	if (pkg_build(req, &set, &reqs, &sroot, spath, sizeof(spath), &res, resp) < 0)
		goto out;
	if (res.status != SBX_OK) {
		pkg_install_failed(resp, &res);
		goto out;
	}
	if (session_put(s, sroot, pl, &e) < 0) {
		h_store_error(resp, &e, &(struct h_where){.id = s->id});
		goto out;
	}
	for (size_t i = 0; i < reqs.n; i++)
		snprintf(rec + strlen(rec), sizeof(rec) - strlen(rec), "%s\n", reqs.r[i]);
	{
		char path[64];
		struct fs_mem m = {rec, strlen(rec), 0};
		struct fs_source src = FS_MEM_SOURCE(m);
		bool created;

		snprintf(path, sizeof(path), ".packages/%s.txt", pl);
		if (fs_write_atomic(s, path, strlen(path), &src, &created, NULL, &e) < 0) {
			h_store_error(resp, &e, &(struct h_where){.id = s->id});
			goto out;
		}
	}
	o = json_object_new_object();
	json_object_object_add(o, "language", json_object_new_string(pl));
	{
		struct json_object *a = json_object_new_array();

		for (size_t i = 0; i < reqs.n; i++)
			json_object_array_add(a, json_object_new_string(reqs.r[i]));
		json_object_object_add(o, "installed", a);
	}
	json_object_object_add(o, "install", run_result_json(&res, false));
	api_json(resp, 200, o);
out:
	if (sroot >= 0)
		scratch_destroy(h_store(req->cfg), sroot, spath);
	sbx_result_free(&res);
	pkg_set_free(&set);
	if (s)
		session_close(s);
	if (body)
		json_object_put(body);
}
