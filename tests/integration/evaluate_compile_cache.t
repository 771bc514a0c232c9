#!/usr/bin/env bash
# evaluate_compile_cache.t: the per-client compile cache on POST /v1/evaluate (fcgi/evaluate/
# compile.c), through the real stack over HTTPS:
#   - the same C submission graded twice: the second's "compile" says cached: true, the cases
#     pass, and the cases see the same empty /work either way;
#   - a changed source misses; another client (bob) misses on alice's submission;
#   - a program that replaces its binary during its run does not change the kept entry;
#   - a compile error is reported as before (verdict CE) and never cached;
#   - "stream": true: the compile event and the end event say cached too;
#   - a C checker is compiled once per request through the cache (checker_compile.cached), so are
#     an interactive problem's solution and interactor (compile, interactor_compile);
#   - a session's evaluate is not cached (its compile sees the session's files);
#   - the same source on POST /v1/execute: the same key, a hit;
#   - past compile_cache.max_mb the least recently used entries go.
# The assertions are on the cached flag and the files on disk, never on speed.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["compile_cache"] = {"max_mb": 1}
PY
harness_start
cache=$SBX_STATE/ccache
carol=$(harness_token carol) || harness_bail "no token for carol"

# ebody CODE [EXTRA-JSON]: an evaluate body for C, two cases (a+b), EXTRA merged in
ebody() {
	/usr/bin/python3 -c 'import json, sys
d = {"language": "c", "code": sys.argv[1],
     "cases": [{"stdin": "1 2\n", "expected_stdout": "3\n"},
               {"stdin": "40 2\n", "expected_stdout": "42\n"}]}
if len(sys.argv) > 2: d.update(json.loads(sys.argv[2]))
print(json.dumps(d))' "$@"
}
# eval_as TOKEN CODE [EXTRA]: POST /v1/evaluate; sets api_status/api_body
eval_as() { api_as "$1" POST /v1/evaluate "$(ebody "${@:2}")" >/dev/null; }
get() { echo "$api_body" | json_get "$1"; }
entries() { find "$cache/$1" -maxdepth 1 -type f ! -name '.*' 2>/dev/null | wc -l; }
# ndjson PYEXPR: PYEXPR on the list of events ev of a streamed answer in $api_body
ndjson() {
	printf '%s' "$api_body" | /usr/bin/python3 -c '
import json, sys
try:
    ev = [json.loads(l) for l in sys.stdin.read().splitlines() if l.strip()]
    v = eval(sys.argv[1], {"ev": ev})
except Exception as e:
    print("error: %s" % e); sys.exit(1)
print(v if isinstance(v, str) else json.dumps(v))' "$1"
}

# The program also says how many entries its /work has (the cases' view must not change).
sum='#include <stdio.h>
#include <dirent.h>
int main(void) {
	long a, b; int n = 0; struct dirent *e; DIR *d = opendir("/work");
	while (d && (e = readdir(d))) if (e->d_name[0] != 0x2e) n++;
	if (scanf("%ld %ld", &a, &b) != 2) return 1;
	printf("%ld\n", a + b); fprintf(stderr, "work entries: %d\n", n); return 0;
}'

# ---- hit and miss ----
eval_as "$SBX_TOKEN" "$sum"
is "$api_status" 200 "alice grades a C submission"
is "$(get 'd["passed"]')" true "... it passes"
is "$(get 'd["compile"]["cached"]')" false "... compile.cached: false the first time"
is "$(get 'd["compile"]["status"]')" ok "... compile.status ok"
is "$(get 'd["cases"][0]["stderr"]')" "work entries: 0" "... the cases see an empty /work"
is "$(entries u-alice)" 1 "... one entry in her cache"
eval_as "$SBX_TOKEN" "$sum"
is "$api_status" 200 "the same submission graded again"
is "$(get 'd["compile"]["cached"]')" true "... compile.cached: true"
is "$(get 'd["compile"]["status"]')" ok "... compile.status ok"
is "$(get 'd["compile"]["stderr"]')" "" "... no compiler output (the earlier compile's is not repeated)"
is "$(get 'd["passed"]')" true "... the cached binary passes every case"
is "$(get '[c["verdict"] for c in d["cases"]]')" '["AC", "AC"]' "... verdicts AC"
is "$(get 'd["cases"][1]["stderr"]')" "work entries: 0" "... and the cases still see an empty /work"
is "$(entries u-alice)" 1 "... still one entry"

eval_as "$SBX_TOKEN" "$sum
/* one comment more */"
is "$(get 'd["compile"]["cached"]')" false "a changed source: a miss"
is "$(get 'd["passed"]')" true "... it passes"
is "$(entries u-alice)" 2 "... two entries now"

# ---- per client ----
eval_as "$SBX_TOKEN2" "$sum"
is "$(get 'd["compile"]["cached"]')" false "bob grading alice's submission: a miss (his own cache)"
is "$(get 'd["passed"]')" true "... it passes"
is "$(entries u-bob)" 1 "... his entry is in his own directory"
eval_as "$SBX_TOKEN2" "$sum"
is "$(get 'd["compile"]["cached"]')" true "... his second grading: a hit in his cache"

# ---- the kept binary is the compiler's, whatever the graded program does ----
# A submission that replaces its own binary (and /work/main) by a script during its run: the
# entry was kept before any case ran, so the next grading still runs what the compiler made.
tamper='#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
static void put(const char *p) { FILE *f; unlink(p); if ((f = fopen(p, "w"))) {
	fputs("#!/bin/sh\necho tampered-999\n", f); fclose(f); chmod(p, 0755); } }
int main(int argc, char **argv) { long a, b; (void)argc;
	if (scanf("%ld %ld", &a, &b) != 2) return 1;
	printf("%ld\n", a + b); fflush(stdout); put(argv[0]); put("/work/main"); return 0; }'
one='{"cases": [{"stdin": "1 2\n", "expected_stdout": "3\n"}]}'
eval_as "$SBX_TOKEN" "$tamper" "$one"
is "$(get '[d["compile"]["cached"], d["passed"]]')" '[false, true]' "a submission that overwrites its own binary during its run: compiled, passes"
eval_as "$SBX_TOKEN" "$tamper" "$one"
is "$(get '[d["compile"]["cached"], d["cases"][0]["stdout"]]')" '[true, "3\n"]' "... graded again: a hit that runs the compiled program, not the script"
notelf=$(find "$cache/u-alice" -maxdepth 1 -type f ! -name '.*' -exec sh -c '[ "$(head -c 4 "$1" | tail -c 3)" = ELF ] || echo "$1"' _ {} \;)
is "$notelf" "" "... every entry of the cache is still an ELF binary (the script is not one)"
is "$(entries u-alice)" 3 "... one entry more"

# ---- a compile error ----
bad='int main(void) { return syntax error; }'
eval_as "$SBX_TOKEN" "$bad"
is "$api_status" 200 "a submission that does not compile: 200"
is "$(get 'd["compile"]["status"]')" error "... compile.status error"
is "$(get 'd["compile"]["cached"]')" false "... compile.cached: false"
ok $(get 'd["compile"]["stderr"]' | grep -q error; echo $?) "... the compiler's message is in compile.stderr"
is "$(get '[c["verdict"] for c in d["cases"]]')" '["CE", "CE"]' "... every case CE"
eval_as "$SBX_TOKEN" "$bad"
is "$(get 'd["compile"]["cached"]')" false "... graded again: compiled again (never cached)"
is "$(get '[c["verdict"] for c in d["cases"]]')" '["CE", "CE"]' "... CE again"
is "$(entries u-alice)" 3 "... nothing was kept for it"

# ---- stream ----
eval_as "$SBX_TOKEN" "$sum" '{"stream": true}'
is "$api_status" 200 "stream: the same submission streamed"
is "$(ndjson '[e["cached"] for e in ev if e.get("type") == "compile"]')" '[true]' "... its compile event says cached: true"
is "$(ndjson '[e["compile"]["cached"] for e in ev if e.get("type") == "end"]')" '[true]' "... and so does the end event"
is "$(ndjson '[e["passed"] for e in ev if e.get("type") == "end"]')" '[true]' "... which passed"
eval_as "$SBX_TOKEN" "$sum
/* streamed */" '{"stream": true}'
is "$(ndjson '[e["cached"] for e in ev if e.get("type") == "compile"]')" '[false]' "stream: a new source: compile event cached: false"
is "$(ndjson '[c["verdict"] for c in ev if c.get("type") == "case"]')" '["AC", "AC"]' "... its cases stream AC"
eval_as "$SBX_TOKEN" "$sum
/* streamed */" '{"stream": true}'
is "$(ndjson '[e["cached"] for e in ev if e.get("type") == "compile"]')" '[true]' "... streamed again: a hit"
eval_as "$SBX_TOKEN" "$bad" '{"stream": true}'
is "$(ndjson '[e["cached"] for e in ev if e.get("type") == "compile"]')" '[false]' "stream: a compile error: cached: false"
is "$(ndjson '[c["verdict"] for c in ev if c.get("type") == "case"]')" '["CE", "CE"]' "... its cases CE"
is "$(entries u-alice)" 4 "... and still nothing kept for it"

# ---- a compiled checker ----
checker='#include <stdio.h>
int main(int argc, char **argv) { long a, b; (void)argc; (void)argv;
	return scanf("%ld", &a) == 1 && (b = a) == a ? 42 : 43; }'
cbody=$(/usr/bin/python3 -c 'import json, sys
print(json.dumps({"checker": {"language": "c", "code": sys.argv[1]}}))' "$checker")
eval_as "$carol" "$sum" "$cbody"
is "$api_status" 200 "a C checker"
is "$(get 'd["checker_compile"]["cached"]')" false "... checker_compile.cached: false the first time"
is "$(get 'd["passed"]')" true "... the checker accepts"
eval_as "$carol" "$sum" "$cbody"
is "$(get 'd["checker_compile"]["cached"]')" true "... the same checker again: checker_compile.cached: true"
is "$(get 'd["compile"]["cached"]')" true "... and the solution's too"
is "$(get 'd["passed"]')" true "... the cached checker still accepts"

# ---- the same key as execute ----
api POST /v1/execute "$(/usr/bin/python3 -c 'import json, sys
print(json.dumps({"language": "c", "code": sys.argv[1], "stdin": "2 3\n"}))' "$sum")" >/dev/null
is "$(get 'd["compile"]["cached"]')" true "POST /v1/execute of alice's graded source: a hit (the same key)"
is "$(get 'd["stdout"]')" 5 "... and it runs"

# ---- a session's evaluate: the runner compiles (it sees the session's files), no cache ----
api POST /v1/sessions '{}' >/dev/null
sid=$(get 'd["id"]')
api POST "/v1/sessions/$sid/evaluate" "$(ebody "$sum")" >/dev/null
is "$(get 'd["compile"]["cached"]')" false "a session's evaluate of a cached source: cached: false (not cached there)"
is "$(get 'd["passed"]')" true "... it passes"

# ---- an interactive problem: the solution and the interactor, each through the cache ----
# The interactor sends the case's number; the solution answers it doubled.
itr='#include <stdio.h>
int main(int argc, char **argv) { FILE *f = fopen(argv[1], "r"); long n, g;
	if (argc != 4 || !f || fscanf(f, "%ld", &n) != 1) return 1;
	printf("%ld\n", n); fflush(stdout);
	return scanf("%ld", &g) == 1 && g == 2 * n ? 42 : 43; }'
sol='#include <stdio.h>
int main(void) { long n; if (scanf("%ld", &n) != 1) return 1; printf("%ld\n", 2 * n); return 0; }'
ibody() {
	/usr/bin/python3 -c 'import json, sys
print(json.dumps({"language": "c", "code": sys.argv[1], "cases": [{"stdin": "7\n"}, {"stdin": "21\n"}],
                  "interactor": {"language": "c", "code": sys.argv[2]}}))' "$sol" "$itr"
}
erin=$(harness_token erin) || harness_bail "no token for erin"
api_as "$erin" POST /v1/evaluate "$(ibody)" >/dev/null
is "$api_status" 200 "an interactive problem in C"
is "$(get '[c["verdict"] for c in d["cases"]]')" '["AC", "AC"]' "... AC"
is "$(get '[d["compile"]["cached"], d["interactor_compile"]["cached"]]')" '[false, false]' "... solution and interactor compiled (cached: false)"
api_as "$erin" POST /v1/evaluate "$(ibody)" >/dev/null
is "$(get '[d["compile"]["cached"], d["interactor_compile"]["cached"]]')" '[true, true]' "... again: both from the cache (cached: true)"
is "$(get '[c["verdict"] for c in d["cases"]]')" '["AC", "AC"]' "... still AC"
is "$(entries u-erin)" 2 "... two entries in erin's cache"

# ---- the bound: 1 MiB per client, binaries of about 300 KiB ----
big() { printf '#include <stdio.h>\nstatic volatile char pad[300000] = {%d};\nint main(void) { long a, b; if (scanf("%%ld %%ld", &a, &b) != 2) return 1; printf("%%ld\\n", a + b + pad[0] - %d); return 0; }\n' "$1" "$1"; }
dave=$(harness_token dave) || harness_bail "no token for dave"
for i in 1 2 3 4; do eval_as "$dave" "$(big "$i")"; done
is "$(get 'd["compile"]["cached"]')" false "dave grades four programs of ~300 KiB"
is "$(get 'd["passed"]')" true "... which pass"
bytes=$(du -sb "$cache/u-dave" | cut -f1)
ok $([ "$bytes" -le $((1024 * 1024 + 4096)) ]; echo $?) "... his cache stays within 1 MiB ($bytes bytes)"
is "$(entries u-dave)" 3 "... three kept: the least recently used went"
eval_as "$dave" "$(big 4)"
is "$(get 'd["compile"]["cached"]')" true "the most recent is still a hit"
eval_as "$dave" "$(big 1)"
is "$(get 'd["compile"]["cached"]')" false "the oldest was evicted: a miss"
is "$(get 'd["passed"]')" true "... compiled again, it passes"

done_testing
