#!/usr/bin/env bash
# packages_api.t: the operator's package directory (fcgi/handlers/packages.c), through the real
# stack. Packages are made here (tests/lib/make_packages.py: hand-made wheels, an sdist, npm pack):
#   - GET /v1/packages lists them (normalised names, versions from the file names);
#   - a session installs tinyapp (with its dependency tinydep, from the directory only); its
#     execute and run import it; GET session lists it; bytes_used grows;
#   - a name outside the set: 400 naming it; an installer failure: 200, stage "install";
#   - an sdist whose setup.py writes a host file runs only in the sandbox: the file never appears;
#   - bob cannot install into alice's session (404); a quota too small: 507 and nothing kept;
#   - stateless "packages": a layer built once for alice and bob (builds.log) and bound
#     read-only at /opt/sbx-packages (the same inode for both, EROFS on writes, ro,nosuid,nodev),
#     one build for two concurrent requests of a new set, least recently used layers evicted
#     past the cap; "packages" on /v1/evaluate (io_cases and cases import them; 400 naming an
#     unknown one);
#   - a flood: a client with 2 builds under way gets 429 for a third new set while another
#     client builds; the cap holds after concurrent builds once runs end;
#   - node: npm pack tarballs with a dependency, in a session, stateless and on evaluate; npm
#     ranges (^, ~, x-ranges, exact, pre-release only by name; 400 naming a range nothing meets).
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["packages"] = {"layers_max_kb": 500}
c.setdefault("sessions", {})["quota_mb"] = 2
PY
harness_start
evil=$SBX_HARNESS_DIR/evil-ran-on-host
/usr/bin/python3 tests/lib/make_packages.py "$SBX_STATE/packages" --evil-target "$evil" ||
	harness_bail "cannot make the test packages"
chmod -R a+rX "$SBX_STATE/packages"
have_node=0
[ -f "$SBX_STATE/packages/node/nodeapp-1.0.0.tgz" ] && have_node=1
layers=$SBX_STATE/layers
builds() { if [ -f "$layers/builds.log" ]; then wc -l <"$layers/builds.log"; else echo 0; fi; }
out() { echo "$api_body" | json_get "$1"; }
like() { case "$1" in *"$2"*) ok 0 "$3" ;; *) ok 1 "$3 (got: $1)" ;; esac; }

# ---- the list ----
api GET /v1/packages >/dev/null
is "$api_status" 200 "GET /v1/packages"
is "$(out '" ".join(sorted(p["name"]+"=="+p["version"] for p in d["packages"] if p["language"]=="python"))')" \
	"bigpkg==1.0 brokenpkg==1.0 evilsetup==1.0 tinyapp==1.0 tinydep==1.0" "... lists the python files"
if [ $have_node = 1 ]; then
	is "$(out '" ".join(sorted(p["name"] for p in d["packages"] if p["language"]=="node"))')" \
		"nodeapp nodedep" "... and the node tarballs"
else
	skip "npm is not installed" "... and the node tarballs"
fi

# ---- a session install ----
api POST /v1/sessions '{}' >/dev/null
sid=$(out 'd["id"]')
api GET "/v1/sessions/$sid" >/dev/null
before=$(out 'd["bytes_used"]')
api POST "/v1/sessions/$sid/packages" '{"language":"python","names":["TinyApp==1.0"]}' >/dev/null
is "$api_status" 200 "install tinyapp into a session"
is "$(out '" ".join(d["installed"])')" "tinyapp==1.0" "... installed as asked (name normalised)"
api POST "/v1/sessions/$sid/execute" \
	'{"language":"python","code":"import tinyapp, tinydep\nprint(tinyapp.answer())"}' >/dev/null
is "$(out 'd["stdout"]')" "42" "a session execute imports it and its dependency"
api POST "/v1/sessions/$sid/run" '{"cmd":"python3 -c \"import tinyapp; print(tinyapp.answer())\""}' >/dev/null
is "$(out 'd["stdout"]')" "42" "a session run imports it"
api GET "/v1/sessions/$sid" >/dev/null
is "$(out '[p["name"] for p in d["packages"]]')" '["tinyapp"]' "GET session lists the package"
[ "$(out 'd["bytes_used"]')" -gt "$before" ]
ok $? "... and its bytes count in bytes_used"
api POST "/v1/sessions/$sid/packages" '{"language":"python","names":["tinydep"]}' >/dev/null
api POST "/v1/sessions/$sid/execute" '{"language":"python","code":"import tinyapp\nprint(tinyapp.answer())"}' >/dev/null
is "$(out 'd["stdout"]')" "42" "a second install keeps the first"
api POST "/v1/sessions/$sid/repl" '{"code":"import tinyapp\ntinyapp.answer()"}' >/dev/null
is "$(out '[r["text"] for r in d["results"] if r["is_main_result"]][0]')" "42" \
	"a context of the session imports them too"

# ---- refusals and failures ----
api POST "/v1/sessions/$sid/packages" '{"language":"python","names":["tinydep","requests"]}' >/dev/null
is "$api_status" 400 "a name outside the set: 400"
is "$(out 'd["error"]["field"]')" "names" "... field names"
like "$(out 'd["error"]["message"]')" "requests" "... the message names it"
api POST "/v1/sessions/$sid/packages" '{"language":"python","names":["brokenpkg"]}' >/dev/null
is "$api_status" 200 "an installer failure: 200"
is "$(out 'd["stage"]')" "install" "... stage install"
is "$(out 'd["status"]')" "error" "... status error"
like "$(out 'd["stderr"]')" "nothere" "... with the installer's output"
api POST "/v1/sessions/$sid/execute" '{"language":"python","code":"import tinyapp\nprint(tinyapp.answer())"}' >/dev/null
is "$(out 'd["stdout"]')" "42" "... and what was installed stays"
api POST "/v1/sessions/$sid/packages" '{"language":"python","names":["evilsetup"]}' >/dev/null
is "$api_status" 200 "the sdist with a setup.py that writes a host file is answered"
[ ! -e "$evil" ]
ok $? "... its setup.py never wrote on the host"
api_as "$SBX_TOKEN2" POST "/v1/sessions/$sid/packages" '{"language":"python","names":["tinydep"]}' >/dev/null
is "$api_status" 404 "bob cannot install into alice's session"
api POST /v1/sessions '{}' >/dev/null
sid2=$(out 'd["id"]')
head -c 1800000 /dev/zero >"$SBX_HARNESS_DIR/filler.bin"
api PUT "/v1/sessions/$sid2/files/filler.bin" "@$SBX_HARNESS_DIR/filler.bin" >/dev/null
is "$api_status" 201 "a session nearly full (1.8 of 2 MB)"
api POST "/v1/sessions/$sid2/packages" '{"language":"python","names":["bigpkg"]}' >/dev/null
is "$api_status" 507 "past the session quota: 507"
api GET "/v1/sessions/$sid2" >/dev/null
is "$(out 'd["packages"]')" "[]" "... and nothing is listed"

# ---- stateless layers ----
code='{"language":"python","code":"import tinyapp\nprint(tinyapp.answer())","packages":["tinyapp"]}'
b0=$(builds)
api POST /v1/execute "$code" >/dev/null
is "$(out 'd["stdout"]')" "42" "stateless execute with packages imports them"
is "$(out 'd["packages"]["cached"]')" "false" "... the layer is built the first time"
first=$(out 'd["packages"]["layer"]')
api_as "$SBX_TOKEN2" POST /v1/execute "$code" >/dev/null
is "$(out 'd["stdout"]')" "42" "bob runs the same set"
is "$(out 'd["packages"]["cached"]')" "true" "... from the same layer"
is "$(( $(builds) - b0 ))" 1 "... built once for both"
# The layer is one read-only mount shared by every run, not a copy in the run's directory.
probe='import os,errno\nst=os.stat(\"/opt/sbx-packages/tinyapp.py\")\nprint(st.st_dev,st.st_ino,os.path.exists(\"/work/.packages\"))'
api POST /v1/execute "{\"language\":\"python\",\"code\":\"$probe\",\"packages\":[\"tinyapp\"]}" >/dev/null
ino_a=$(out 'd["stdout"].strip()')
api_as "$SBX_TOKEN2" POST /v1/execute "{\"language\":\"python\",\"code\":\"$probe\",\"packages\":[\"tinyapp\"]}" >/dev/null
ino_b=$(out 'd["stdout"].strip()')
like "$ino_a" " False" "the layer is mounted at /opt/sbx-packages, nothing copied into /work"
[ -n "$ino_a" ] && [ "$ino_a" = "$ino_b" ]
ok $? "... the same inode for alice's run and bob's ($ino_a / $ino_b)"
[ "$(stat -c %i "$layers/$first/tinyapp.py")" = "$(echo "$ino_a" | cut -d' ' -f2)" ]
ok $? "... the host's layer file itself, not a copy"
write='import os,errno\ndef t(f):\n  try:\n    f(); return \"wrote\"\n  except OSError as e:\n    return errno.errorcode[e.errno]\nprint(t(lambda: open(\"/opt/sbx-packages/new.py\",\"w\")), t(lambda: os.mkdir(\"/opt/sbx-packages/d\")), t(lambda: os.unlink(\"/opt/sbx-packages/tinyapp.py\")), t(lambda: os.chmod(\"/opt/sbx-packages/tinyapp.py\",0o777)), t(lambda: open(\"/opt/sbx-packages/tinyapp.py\",\"a\")))\nm=[l.split() for l in open(\"/proc/self/mountinfo\") if l.split()[4]==\"/opt/sbx-packages\"]\nprint(m[-1][5] if m else \"unmounted\")'
api POST /v1/execute "{\"language\":\"python\",\"code\":\"$write\",\"packages\":[\"tinyapp\"]}" >/dev/null
w=$(out 'd["stdout"]')
like "$w" "EROFS EROFS EROFS EROFS" "writing into the layer fails with EROFS (create, mkdir, unlink, chmod)"
case "$w" in *"wrote"*) ok 1 "... and an existing file cannot be opened for writing (got: $w)" ;;
*) ok 0 "... and an existing file cannot be opened for writing" ;; esac
like "$w" "ro,nosuid,nodev" "... the mount is ro, nosuid, nodev"
[ -f "$layers/$first/tinyapp.py" ] && [ ! -e "$layers/$first/new.py" ]
ok $? "... and the host's layer is unchanged"
api POST /v1/execute '{"language":"python","code":"print(1)","packages":["nosuch"]}' >/dev/null
is "$api_status" 400 "stateless: a name outside the set: 400"
is "$(out 'd["error"]["field"]')" "packages" "... field packages"
api POST /v1/execute '{"language":"python","code":"print(1)","packages":["brokenpkg"]}' >/dev/null
is "$(out 'd.get("stage")')" "install" "stateless: an installer failure is stage install"
b1=$(builds)
both='{"language":"python","code":"import tinydep\nprint(tinydep.VALUE)","packages":["tinydep"]}'
(HARNESS_QUIET_SUBSHELL=1 api POST /v1/execute "$both" >"$SBX_HARNESS_DIR/c1.out") &
p1=$!
(HARNESS_QUIET_SUBSHELL=1 api_as "$SBX_TOKEN2" POST /v1/execute "$both" >"$SBX_HARNESS_DIR/c2.out") &
p2=$!
wait "$p1" "$p2" # not a bare wait: the stack's processes are children of this shell too
is "$(cat "$SBX_HARNESS_DIR/c1.out" "$SBX_HARNESS_DIR/c2.out" | grep -o '"stdout": *"41' | wc -l)" 2 \
	"two concurrent requests of a new set both run"
is "$(( $(builds) - b1 ))" 1 "... and the set is built once"
# Eviction: bigpkg (300 KiB) twice in other sets passes the 500 KiB cap; the oldest go.
api POST /v1/execute '{"language":"python","code":"import bigpkg","packages":["bigpkg"]}' >/dev/null
api POST /v1/execute '{"language":"python","code":"import bigpkg","packages":["bigpkg","tinydep"]}' >/dev/null
last=$(out 'd["packages"]["layer"]')
is "$(out 'd["status"]')" "ok" "a layer past the cap is built and used"
[ -n "$first" ] && [ ! -e "$layers/$first" ]
ok $? "... the least recently used layer is evicted"
[ -n "$last" ] && [ -d "$layers/$last" ]
ok $? "... the new one stays"

# ---- evaluate ----
ev='{"language":"python","code":"import tinyapp\ndef f(x):\n    return tinyapp.answer() + x","entry_point":"f","io_cases":[{"input":"1","output":"43"}],"packages":["tinyapp"]}'
api POST /v1/evaluate "$ev" >/dev/null
is "$(out 'd["passed"]')" "true" "evaluate io_cases: the solution imports a package of the set"
is "$(out 'len(d["packages"]["layer"])')" "64" "... from a layer (the answer names it)"
api POST /v1/evaluate '{"language":"python","code":"import tinydep\nprint(tinydep.VALUE)","cases":[{"stdin":"","expected_stdout":"41"}],"packages":["tinydep"]}' >/dev/null
is "$(out 'd["passed"]')" "true" "evaluate cases: every case imports it"
api POST /v1/evaluate '{"language":"python","code":"import tinydep\nprint(tinydep.VALUE)","cases":[{"stdin":"","expected_stdout":"41"}]}' >/dev/null
is "$(out 'd["passed"]')" "false" "... and without packages it is not there"
# streamed ("stream": true takes another path to the broker): the layer is there too
api POST /v1/evaluate '{"language":"python","code":"import tinydep\nprint(tinydep.VALUE)","cases":[{"stdin":"","expected_stdout":"41"},{"stdin":"","expected_stdout":"41"}],"packages":["tinydep"],"stream":true}' >/dev/null
is "$(echo "$api_body" | tail -1 | json_get 'd["type"], d["passed"]')" '["end", true]' \
	"a streamed evaluate imports the layer too (its end event passes)"
api POST /v1/evaluate '{"language":"python","code":"print(1)","cases":[{"stdin":"","expected_stdout":"1"}],"packages":["tinydep","nosuchpkg"]}' >/dev/null
is "$api_status" 400 "evaluate: a name outside the set: 400"
like "$(out 'd["error"]["field"]+" "+d["error"]["message"]')" "packages packages[1]: python package \"nosuchpkg\"" "... naming the field and the package"
api POST "/v1/sessions/$sid/evaluate" '{"language":"python","code":"print(1)","cases":[{"stdin":"","expected_stdout":"1"}],"packages":["tinydep"]}' >/dev/null
is "$api_status" 400 "a session's evaluate takes no packages (the session installs them)"

# ---- a flood of distinct sets from one client ----
# alice's two build slots held (as two builds of hers would): her new set is 429 at once, never
# a worker waiting; bob, another client, still builds; alice builds again once one is free.
slot=$(printf alice | sha256sum | cut -c1-16)
for i in 0 1; do # the service's own lock files (its workers must still open them)
	[ -e "$layers/.build-$slot-$i.lock" ] ||
		install -o "$(stat -c %u "$layers")" -g "$(stat -c %g "$layers")" -m 600 /dev/null \
			"$layers/.build-$slot-$i.lock"
done
/usr/bin/python3 -c '
import fcntl, sys, time
fs = [open(p, "r+") for p in sys.argv[1:3]]
for f in fs:
    fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[3], "w").close()
time.sleep(600)' "$layers/.build-$slot-0.lock" "$layers/.build-$slot-1.lock" "$SBX_HARNESS_DIR/held" &
holder=$!
for _ in $(seq 600); do [ -e "$SBX_HARNESS_DIR/held" ] && break; sleep 0.1; done
api POST /v1/execute '{"language":"python","code":"import tinydep","packages":["tinyapp","tinydep"]}' >/dev/null
is "$api_status" 429 "a client with 2 layers building: its next new set is 429"
is "$(out 'd["error"]["code"]')" "too_many_builds" "... code too_many_builds"
[ -n "$(printf '%s\n' "$api_headers" | grep -i '^Retry-After:')" ]
ok $? "... with Retry-After"
api_as "$SBX_TOKEN2" POST /v1/execute '{"language":"python","code":"import tinydep","packages":["tinyapp","tinydep"]}' >/dev/null
is "$(out 'd["status"]')" "ok" "... bob's build goes on meanwhile"
api POST /v1/execute '{"language":"python","code":"import tinydep","packages":["tinyapp","tinydep"]}' >/dev/null
is "$(out 'd["packages"]["cached"]')" "true" "... and alice gets the layer bob built, no build needed"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
# The cap under concurrency: four new sets with bigpkg (300 KiB each; cap 500 KiB) at once.
pids=""
for set in '"bigpkg","evilsetup"' '"bigpkg","tinyapp"' '"bigpkg","brokenpkg"' '"bigpkg","evilsetup","tinyapp"'; do
	(HARNESS_QUIET_SUBSHELL=1 api POST /v1/execute "{\"language\":\"python\",\"code\":\"import bigpkg\",\"packages\":[$set]}" >/dev/null) &
	pids="$pids $!"
	(HARNESS_QUIET_SUBSHELL=1 api_as "$SBX_TOKEN2" POST /v1/execute "{\"language\":\"python\",\"code\":\"import bigpkg\",\"packages\":[$set]}" >/dev/null) &
	pids="$pids $!"
done
# shellcheck disable=SC2086 # a list of pids
wait $pids
api POST /v1/execute '{"language":"python","code":"print(1)","packages":["tinydep"]}' >/dev/null
total=$(/usr/bin/python3 -c '
import os, re, sys
t = 0
for n in os.listdir(sys.argv[1]):
    if re.fullmatch("[0-9a-f]{64}", n):
        for r, _, fs in os.walk(os.path.join(sys.argv[1], n)):
            t += sum(os.lstat(os.path.join(r, f)).st_size for f in fs)
print(t)' "$layers")
[ "$total" -le $((500 * 1024)) ]
ok $? "concurrent builds: the layers stay under the 500 KiB cap once runs end ($total bytes)"

# ---- node ----
if [ $have_node = 1 ]; then
	api POST "/v1/sessions/$sid/packages" '{"language":"node","names":["nodeapp"]}' >/dev/null
	is "$api_status" 200 "node: install nodeapp into the session"
	api POST "/v1/sessions/$sid/execute" '{"language":"node","code":"console.log(require(\"nodeapp\")())"}' >/dev/null
	is "$(out 'd["stdout"]')" "42" "... a node execute requires it and its dependency"
	api POST /v1/execute '{"language":"node","code":"console.log(require(\"nodeapp\")())","packages":["nodeapp"]}' >/dev/null
	is "$(out 'd["stdout"]')" "42" "node: stateless packages"
	api POST /v1/evaluate '{"language":"node","code":"console.log(require(\"nodeapp\")())","cases":[{"stdin":"","expected_stdout":"42"}],"packages":["nodeapp"]}' >/dev/null
	is "$(out 'd["passed"]')" "true" "node: evaluate cases import the layer"
	# npm's ranges pick the highest version in the directory that satisfies them.
	for v in 0.3.5 1.2.0 1.4.1 2.0.0 2.1.0-rc.1; do
		d=$(mktemp -d "$SBX_HARNESS_DIR/nv.XXXXXX")
		printf '{"name":"nodever","version":"%s","main":"index.js"}' "$v" >"$d/package.json"
		printf 'module.exports = "%s";\n' "$v" >"$d/index.js"
		(cd "$d" && npm_config_cache="$d/.npm" npm pack --pack-destination "$SBX_STATE/packages/node" \
			--offline --silent >/dev/null 2>&1)
	done
	chmod -R a+rX "$SBX_STATE/packages"
	ver() {
		api POST /v1/execute "{\"language\":\"node\",\"code\":\"console.log(require('nodever'))\",\"packages\":[\"nodever@$1\"]}" >/dev/null
		if [ "$api_status" = 200 ]; then out 'd["stdout"].strip()'; else echo "$api_status $(out 'd["error"]["code"]+" "+d["error"]["message"]')"; fi
	}
	is "$(ver '^1.2')" "1.4.1" "node range ^1.2: the highest 1.x at or past 1.2"
	is "$(ver '~1.2')" "1.2.0" "node range ~1.2: 1.2.x only"
	is "$(ver '1.x')" "1.4.1" "node range 1.x"
	api POST /v1/execute '{"language":"node","code":"1","packages":["nodever@1.x"]}' >/dev/null
	is "$(out 'd["packages"]["cached"]')" "true" "... 1.x resolves to the same layer as ^1.2"
	is "$(ver '*')" "2.0.0" "node range *: the highest release, never a pre-release"
	is "$(ver '^0.3')" "0.3.5" "node range ^0.3: 0.3.x only"
	is "$(ver '2.1.0-rc.1')" "2.1.0-rc.1" "node: an exact pre-release by name"
	is "$(ver '1.2.0')" "1.2.0" "node: an exact version"
	r=$(ver '^3')
	like "$r" "400 unknown_package" "node range nothing satisfies: 400 unknown_package"
	like "$r" "^3" "... naming the range"
	like "$(ver '>=1')" "400 invalid_value" "node range outside the subset: 400"
else
	for t in "node: session install" "node: session import" "node: stateless" "node evaluate" ^1.2 ~1.2 1.x \
		"1.x cached" "*" ^0.3 pre exact "^3 400" "^3 named" ">=1"; do
		skip "npm is not installed" "$t"
	done
fi
done_testing
