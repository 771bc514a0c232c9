/* judge_util.c: what the checker's parts share (judge.c, checkhost.c, interact.c): a case's
 * files in a directory, the program placed there, its argv, its feedback read back, the verdict
 * set on the case, the request's checker budget. Calls nothing of judge.c or checkhost.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkhost.h"
#include "compile.h"

const char *const judge_kattis_args[3] = {SBX_WORK_DIR "/input", SBX_WORK_DIR "/answer",
					  SBX_WORK_DIR "/feedback/"};

int judge_read_file(int dirfd, const char *name, size_t max, bool trunc, char **out, size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t n = 0, want;
	int rc = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > max && !trunc) {
		rc = -EFBIG;
		goto out;
	}
	want = (uint64_t)st.st_size > max ? max : (size_t)st.st_size;
	*out = malloc(want + 1);
	if (!*out) {
		rc = -ENOMEM;
		goto out;
	}
	while (n < want) {
		ssize_t k = read(fd, *out + n, want - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	(*out)[n] = '\0';
	*len = n;
out:
	close(fd);
	return rc;
}

void judge_argv(const struct judge *j, const char *const *args, size_t nargs, const char **argv,
		size_t max)
{
	size_t n = 0;

	for (char *const *t = j->lang->run; t && *t && n + nargs + 1 < max; t++) {
		if (strcmp(*t, "{args}") == 0) {
			for (size_t i = 0; i < nargs; i++)
				argv[n++] = args[i];
		} else if (strcmp(*t, "{file}") == 0) {
			argv[n++] = j->prog_name;
		} else {
			argv[n++] = *t;
		}
	}
	argv[n] = NULL;
}

int judge_put(const struct judge *j, int dirfd)
{
	return eval_put_file(dirfd, j->prog_name, j->prog, j->prog_len, 0755);
}

int judge_case_files(int dirfd, struct json_object *src)
{
	struct json_object *v;
	const char *in = "", *ans = "";
	size_t in_len = 0, ans_len = 0;
	int rc;

	if (json_object_object_get_ex(src, "stdin", &v) && json_object_is_type(v, json_type_string))
		in = json_object_get_string(v), in_len = (size_t)json_object_get_string_len(v);
	if (json_object_object_get_ex(src, "expected_stdout", &v) &&
	    json_object_is_type(v, json_type_string))
		ans = json_object_get_string(v), ans_len = (size_t)json_object_get_string_len(v);
	if ((rc = eval_put_file(dirfd, "input", in, in_len, 0644)) < 0 ||
	    (rc = eval_put_file(dirfd, "answer", ans, ans_len, 0644)) < 0)
		return rc;
	return mkdirat(dirfd, "feedback", 0755) < 0 ? -errno : 0;
}

struct json_object *judge_feedback(int casefd, const char *o, size_t o_len, const char *e,
				   size_t e_len)
{
	char *buf, *msg = NULL;
	size_t out = o_len > JUDGE_FEEDBACK_BYTES ? JUDGE_FEEDBACK_BYTES : o_len;
	size_t err = e_len > JUDGE_FEEDBACK_BYTES ? JUDGE_FEEDBACK_BYTES : e_len;
	size_t msg_len = 0, n = 0;
	struct json_object *s;
	int fb = openat(casefd, "feedback", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fb >= 0) {
		judge_read_file(fb, "judgemessage.txt", JUDGE_FEEDBACK_BYTES, true, &msg, &msg_len);
		close(fb);
	}
	buf = malloc(out + err + msg_len + 1);
	if (!buf) {
		free(msg);
		return json_object_new_string("");
	}
	memcpy(buf, o, out);
	n += out;
	memcpy(buf + n, e, err);
	n += err;
	if (msg_len)
		memcpy(buf + n, msg, msg_len);
	n += msg_len;
	s = api_utf8_string(buf, n);
	free(buf);
	free(msg);
	return s;
}

uint64_t judge_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int judge_set_verdict(struct json_object *c, int exit_ok, struct json_object *feedback)
{
	static const char *const words[] = {"JE", "AC", "WA"};

	json_object_object_add(c, "passed", json_object_new_boolean(exit_ok == 1));
	json_object_object_add(c, "verdict", json_object_new_string(words[exit_ok]));
	json_object_object_add(c, "feedback", feedback);
	return exit_ok == 1;
}

uint64_t judge_left_ms(struct judge *j)
{
	uint64_t left;

	pthread_mutex_lock(&j->lock);
	left = j->cfg->evaluate_wall_ms > j->spent_ms ? j->cfg->evaluate_wall_ms - j->spent_ms : 0;
	pthread_mutex_unlock(&j->lock);
	return left;
}

void judge_spend(struct judge *j, uint64_t ms)
{
	pthread_mutex_lock(&j->lock);
	j->spent_ms += ms;
	pthread_mutex_unlock(&j->lock);
}
