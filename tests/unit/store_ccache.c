/* store_ccache.c: the compile cache of the store on its own (fcgi/store/ccache.c): SHA-256 against
 * the FIPS 180-4 examples, what the key covers and what it leaves out, a round trip through the
 * cache, refusals (links, FIFOs, a binary over the cap), and LRU eviction past max_bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../fcgi/store/ccache.h"
#include "../lib/tap.h"

static char state[256], work[300];

static void hex(const uint8_t *d, char *out)
{
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static const char *sha_hex(const void *p, size_t len)
{
	static char out[65];
	struct sha256 s;
	uint8_t d[32];

	sha256_init(&s);
	sha256_update(&s, p, len);
	sha256_final(&s, d);
	hex(d, out);
	return out;
}

static void put(const char *name, const char *data, size_t len)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", work, name);
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		printf("Bail out! cannot write %s\n", path);
		exit(1);
	}
}

static int root_fd(void)
{
	return open(work, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static const char *const gcc[] = {"/bin/sh", "-c", "true", NULL};

static int key_of(struct ccache *c, const char *const *argv, char *out)
{
	int r = root_fd(), rc = ccache_key(c, r, "c", argv, "main");

	close(r);
	snprintf(out, 65, "%s", c->key);
	return rc;
}

static int entries(const char *client)
{
	char cmd[600];
	FILE *p;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls '%s/ccache/u-%s' | wc -l", state, client);
	p = popen(cmd, "r");
	if (p && fscanf(p, "%d", &n) != 1)
		n = -1;
	if (p)
		pclose(p);
	return n;
}

int main(void)
{
	char k1[65], k2[65], k3[65], big[1000], path[700];
	struct ccache c, bob;
	int r;

	/* ---- SHA-256 ---- */
	TAP_OK(!strcmp(sha_hex("", 0),
		       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
	       "sha256 of the empty string");
	TAP_OK(!strcmp(sha_hex("abc", 3),
		       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
	       "sha256 of abc");
	TAP_OK(!strcmp(sha_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56),
		       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
	       "sha256 of the 448-bit example (two blocks of padding)");
	{
		struct sha256 s;
		uint8_t d[32];
		char out[65];

		memset(big, 'a', sizeof(big));
		sha256_init(&s);
		for (int i = 0; i < 1000; i++)
			sha256_update(&s, big, sizeof(big));
		sha256_final(&s, d);
		hex(d, out);
		TAP_OK(!strcmp(out,
			       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
		       "sha256 of a million a's, fed in pieces");
	}

	/* ---- keys ---- */
	snprintf(state, sizeof(state), "/tmp/sbx-ccache-test-XXXXXX");
	if (!mkdtemp(state))
		return printf("Bail out! mkdtemp\n"), 1;
	snprintf(work, sizeof(work), "%s/work", state);
	mkdir(work, 0700);
	TAP_OK(ccache_open(state, "alice", 0, &c) == -ENOTSUP && c.dir_fd < 0, "max 0: off");
	TAP_OK(ccache_open(state, "alice", 200000, &c) == 0, "open alice's cache");
	TAP_OK(ccache_open(state, "bob", 200000, &bob) == 0, "open bob's cache");
	put("main.c", "int main(void){return 0;}", 25);
	TAP_OK(key_of(&c, gcc, k1) == 0 && strlen(k1) == 64, "a key: %s", k1);
	put("main", "old binary", 10);
	TAP_OK(key_of(&c, gcc, k2) == 0 && !strcmp(k1, k2), "the binary itself is not part of it");
	put("main.c", "int main(void){return 1;}", 25);
	TAP_OK(key_of(&c, gcc, k2) == 0 && strcmp(k1, k2), "another source byte: another key");
	put("main.c", "int main(void){return 0;}", 25);
	TAP_OK(key_of(&c, (const char *const[]){"/bin/sh", "-c", "false", NULL}, k2) == 0 &&
		   strcmp(k1, k2),
	       "another compiler argument: another key");
	TAP_OK(key_of(&c, (const char *const[]){"/bin/bash", "-c", "true", NULL}, k2) == 0 &&
		   key_of(&c, gcc, k3) == 0 && strcmp(k1, k2) != 0 && !strcmp(k1, k3),
	       "another compiler binary: another key; back: the same");
	put("util.h", "#define X 1\n", 12);
	TAP_OK(key_of(&c, gcc, k2) == 0 && strcmp(k1, k2),
	       "another file in the work dir: another key");
	snprintf(path, sizeof(path), "%s/util.h", work);
	unlink(path);
	snprintf(path, sizeof(path), "%s/link", work);
	TAP_OK(symlink("/etc/passwd", path) == 0 && key_of(&c, gcc, k2) == -ENOTSUP,
	       "a symlink in the work dir: not cached");
	unlink(path);
	TAP_OK(mkfifo(path, 0600) == 0 && key_of(&c, gcc, k2) == -ENOTSUP,
	       "a FIFO in the work dir: not cached (and no hang)");
	unlink(path);

	/* ---- a round trip ---- */
	TAP_OK(key_of(&c, gcc, k2) == 0 && !strcmp(k1, k2), "the key again");
	r = root_fd();
	TAP_OK(ccache_get(&c, r) == 0, "a miss before anything was kept");
	put("main", "BINARY-1", 8);
	TAP_OK(ccache_put(&c, r) == 0 && entries("alice") == 1, "kept after the compile");
	snprintf(path, sizeof(path), "%s/main", work);
	unlink(path);
	TAP_OK(symlink("/etc/passwd", path) == 0, "the work dir's binary is now a symlink");
	TAP_OK(ccache_get(&c, r) == 1, "a hit");
	{
		struct stat st;
		char buf[16] = "";
		FILE *f;

		TAP_OK(lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0755,
		       "the binary was placed over the link (a regular file, 0755)");
		f = fopen(path, "r");
		TAP_OK(f && fread(buf, 1, sizeof(buf), f) == 8 && !memcmp(buf, "BINARY-1", 8),
		       "... with the kept bytes");
		if (f)
			fclose(f);
	}
	bob.key[0] = '\0';
	{
		int rb = root_fd();

		TAP_OK(ccache_key(&bob, rb, "c", gcc, "main") == 0 && ccache_get(&bob, rb) == 0,
		       "bob, the same inputs: a miss (his own cache)");
		close(rb);
	}

	/* ---- what put refuses ---- */
	unlink(path);
	TAP_OK(symlink("/etc/passwd", path) == 0 && ccache_put(&c, r) == -ELOOP,
	       "a binary that is a symlink is not read (ELOOP)");
	unlink(path);
	TAP_OK(mkfifo(path, 0600) == 0 && ccache_put(&c, r) == -EINVAL,
	       "a FIFO is not read (and no hang)");
	unlink(path);
	{
		char *huge = calloc(1, 300000);

		put("main", huge, 300000);
		free(huge);
		TAP_OK(ccache_put(&c, r) == -EINVAL, "a binary over max_bytes is not kept");
	}
	TAP_OK(entries("alice") == 1, "still one entry");

	/* ---- eviction (max 200000 bytes; entries of 60000) ---- */
	{
		char *b = malloc(60000);
		char src[32];
		int i, hit1, hit4;

		for (i = 1; i <= 4; i++) {
			snprintf(src, sizeof(src), "int main(){return %d;}", i);
			put("main.c", src, strlen(src));
			ccache_key(&c, r, "c", gcc, "main");
			memset(b, 'A' + i, 60000);
			put("main", b, 60000);
			ccache_put(&c, r);
			struct timespec ts = {0, 20 * 1000 * 1000};
			nanosleep(&ts, NULL); /* distinct mtimes */
		}
		free(b);
		TAP_OK(entries("alice") == 3,
		       "four entries of 60000 bytes, a cap of 200000: three kept (%d)",
		       entries("alice"));
		snprintf(src, sizeof(src), "int main(){return %d;}", 4);
		put("main.c", src, strlen(src));
		ccache_key(&c, r, "c", gcc, "main");
		hit4 = ccache_get(&c, r);
		snprintf(src, sizeof(src), "int main(){return %d;}", 1);
		put("main.c", src, strlen(src));
		ccache_key(&c, r, "c", gcc, "main");
		hit1 = ccache_get(&c, r);
		TAP_OK(hit4 == 1 && hit1 == 0, "the newest is kept, the oldest went (hits: %d, %d)",
		       hit4, hit1);
	}
	close(r);
	ccache_close(&c);
	ccache_close(&bob);
	snprintf(path, sizeof(path), "rm -rf '%s'", state);
	if (system(path) != 0)
		TAP_DIAG("could not remove %s", state);
	return tap_done();
}
