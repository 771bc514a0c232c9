#!/usr/bin/env bash
# compile_cache.t: the per-client compile cache (fcgi/store/ccache.c), through the real stack.
#   - the same C source twice: the second's "compile" says cached: true (and the binary runs);
#     other run args still hit (they are not the compiler's);
#   - another source, or the same source under other compiler flags: a miss;
#   - bob never hits alice's entry;
#   - a compile that fails is not cached;
#   - past compile_cache.max_mb the least recently used entries go;
#   - a "compiler" that leaves a symlink (or a FIFO) as its binary makes nothing be cached or read,
#     and a program that replaces its binary by a symlink to a host file during its run cannot
#     make the next (cached) request read that file: the binary is placed over the link.
# The assertions are on the cached flag and the files on disk, never on speed.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

# 1 MiB per client; "c0": C with other flags; "shlink": a "compiler" that is a shell script.
harness_config <<'PY' || harness_bail "cannot write the config"
c["compile_cache"] = {"max_mb": 1}
c["languages"].append({"id": "c0", "source_file": "main.c",
    "compile": ["/usr/bin/gcc", "-O0", "-std=c17", "-o", "main", "{file}"],
    "run": ["/work/main", "{args}"]})
c["languages"].append({"id": "shlink", "source_file": "build.sh",
    "compile": ["/bin/sh", "{file}"], "run": ["/work/main", "{args}"]})
PY
harness_start
work=$SBX_HARNESS_DIR/ccache
mkdir -p "$work"
cache=$SBX_STATE/ccache
carol=$(harness_token carol) || harness_bail "no token for carol"

# body LANG CODE [ARGS-JSON]: an execute body
body() {
	/usr/bin/python3 -c 'import json, sys
d = {"language": sys.argv[1], "code": sys.argv[2]}
if len(sys.argv) > 3: d["args"] = json.loads(sys.argv[3])
print(json.dumps(d))' "$@"
}
# run_as TOKEN LANG CODE [ARGS]: POST /v1/execute; sets api_status/api_body
run_as() { api_as "$1" POST /v1/execute "$(body "${@:2}")" >/dev/null; }
cached() { echo "$api_body" | json_get 'd["compile"]["cached"]'; }
entries() { find "$cache/$1" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | wc -l; }

hello='#include <stdio.h>
int main(int argc, char **argv) { printf("hello %d\n", argc); return 0; }'

# ---- hit and miss ----
run_as "$SBX_TOKEN" c "$hello"
is "$api_status" 200 "alice compiles hello.c"
is "$(cached)" false "... a miss the first time (cached: false)"
is "$(echo "$api_body" | json_get 'd["stdout"]')" "hello 1" "... and it runs"
w1=$(echo "$api_body" | json_get 'd["compile"]["wall_ms"]')
is "$(entries u-alice)" 1 "... one entry in her cache"
run_as "$SBX_TOKEN" c "$hello"
is "$(cached)" true "the same source again: cached: true"
is "$(echo "$api_body" | json_get 'd["stdout"]')" "hello 1" "... the cached binary runs"
is "$(echo "$api_body" | json_get 'd["compile"]["status"]')" ok "... compile status ok"
w2=$(echo "$api_body" | json_get 'd["compile"]["wall_ms"]')
diag "compile wall: ${w1} ms compiled, ${w2} ms from the cache"
run_as "$SBX_TOKEN" c "$hello" '["a", "b"]'
is "$(cached)" true "other run args: still a hit (they are not the compiler's)"
is "$(echo "$api_body" | json_get 'd["stdout"]')" "hello 3" "... and reach the program"
run_as "$SBX_TOKEN" c "$hello
/* another source */"
is "$(cached)" false "another source (one comment more): a miss"
run_as "$SBX_TOKEN" c0 "$hello"
is "$(cached)" false "the same source under other compiler flags (-O0): a miss"
is "$(entries u-alice)" 3 "... three entries now"

# ---- per client ----
run_as "$SBX_TOKEN2" c "$hello"
is "$(cached)" false "bob compiling alice's hello.c: a miss (his own cache)"
is "$(entries u-bob)" 1 "... his entry is in his own directory"
ok $([ "$(stat -c '%U %a' "$cache/u-alice")" = "sbx 700" ]; echo $?) "alice's cache directory: the service user's, 0700"

# ---- a failed compile ----
run_as "$SBX_TOKEN" c 'int main(void) { return syntax error; }'
is "$(echo "$api_body" | json_get 'd["stage"]')" compile "a source that does not compile: stage compile"
is "$(cached)" false "... cached: false"
run_as "$SBX_TOKEN" c 'int main(void) { return syntax error; }'
is "$(echo "$api_body" | json_get 'd["stage"]')" compile "... again: compiled again and failed again"
is "$(entries u-alice)" 3 "... nothing was kept for it"

# ---- links and special files as the binary ----
secret=$(mktemp /tmp/ccache-secret.XXXXXX)
echo "host-secret-$RANDOM$RANDOM" >"$secret"
chmod 0644 "$secret"
harness_on_exit rm -f "$secret"
run_as "$SBX_TOKEN" shlink "ln -s /bin/true main"
is "$api_status" 200 "a compile whose binary is a symlink (to /bin/true, which the run follows inside the sandbox)"
is "$(cached)" false "... not cached"
run_as "$SBX_TOKEN" shlink "ln -s /bin/true main"
is "$(cached)" false "... nor the second time (the cache never followed the link)"
# A link to a file only the host has: the run itself fails (no such file in the sandbox).
run_as "$SBX_TOKEN" shlink "ln -s $secret main"
run_as "$SBX_TOKEN" shlink "mkfifo main"
ok $([ "$api_status" != 000 ]; echo $?) "a compile whose binary is a FIFO: the request ends ($api_status)"
is "$(entries u-alice)" 3 "... no entry for the links or the FIFO"
ok $(! grep -rqF "$(cat "$secret")" "$cache"; echo $?) "the host file's bytes are nowhere in the cache"

# A program that replaces its own binary by a link to the host file during its run (in a session,
# where the work dir stays): the next run of the same source is a hit placed over the link.
swap='#include <stdio.h>
#include <unistd.h>
int main(void) { unlink("/work/main"); symlink("'$secret'", "/work/main"); puts("swapped"); return 0; }'
api POST /v1/sessions '{}' >/dev/null
sid=$(echo "$api_body" | json_get 'd["id"]')
api POST "/v1/sessions/$sid/execute" "$(body c "$swap")" >/dev/null
is "$(echo "$api_body" | json_get 'd["stdout"]')" swapped "in a session: a program replaces /work/main by a symlink to a host file"
api POST "/v1/sessions/$sid/execute" "$(body c "$swap")" >/dev/null
is "$(cached)" true "... the same source again: a hit"
is "$(echo "$api_body" | json_get 'd["stdout"]')" swapped "... the binary was placed over the link and runs"
ok $(! grep -rqF "$(cat "$secret")" "$cache"; echo $?) "... and the host file's bytes are nowhere in the cache"

# ---- eviction past max_mb (1 MiB): binaries of about 300 KiB each ----
big() { printf '#include <stdio.h>\nstatic volatile char pad[300000] = {%d};\nint main(void) { printf("%%d\\n", pad[0]); return 0; }\n' "$1"; }
for i in 1 2 3 4; do run_as "$carol" c "$(big "$i")"; done
is "$(cached)" false "carol compiles four programs of ~300 KiB"
bytes=$(du -sb "$cache/u-carol" | cut -f1)
ok $([ "$bytes" -le $((1024 * 1024 + 4096)) ]; echo $?) "... her cache stays within 1 MiB ($bytes bytes)"
is "$(entries u-carol)" 3 "... three kept: the least recently used went"
run_as "$carol" c "$(big 4)"
is "$(cached)" true "the most recent is still a hit"
run_as "$carol" c "$(big 1)"
is "$(cached)" false "the oldest was evicted: a miss"
is "$(echo "$api_body" | json_get 'd["stdout"]')" 1 "... compiled again, it runs"
run_as "$carol" c "$(big 4)"
is "$(cached)" true "... and a hit refreshed program 4, which stays"

done_testing
