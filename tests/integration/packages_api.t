#!/usr/bin/env bash
# packages_api.t: the operator's package directory (fcgi/handlers/packages.c), through the real
# stack. Packages are made here (tests/lib/make_packages.py: hand-made wheels, an sdist, npm pack):
#   - GET /v1/packages lists them (normalised names, versions from the file names);
#   - a session installs tinyapp (with its dependency tinydep, from the directory only); its
#     execute and run import it; GET session lists it; bytes_used grows;
#   - a name outside the set: 400 naming it; an installer failure: 200, stage "install";
#   - an sdist whose setup.py writes a host file runs only in the sandbox: the file never appears;
#   - bob cannot install into alice's session (404); a quota too small: 507 and nothing kept;
#   - stateless "packages": a layer built once for alice and bob (builds.log), one build for two
#     concurrent requests of a new set, least recently used layers evicted past the cap;
#   - node: npm pack tarballs with a dependency, in a session and stateless.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

conf_dir=$(mktemp -d /tmp/packages.XXXXXX)
chmod 0755 "$conf_dir"
/usr/bin/python3 - "$conf_dir/sbx.conf.json" <<'PY'
import json, sys
c = json.load(open("fcgi/sbx.conf.json"))
c["packages"] = {"layers_max_kb": 500}
c.setdefault("sessions", {})["quota_mb"] = 2
json.dump(c, open(sys.argv[1], "w"))
PY
cp fcgi/openapi.json "$conf_dir/"
chmod 0644 "$conf_dir"/*
export SBX_CONFIG=$conf_dir/sbx.conf.json
harness_on_exit rm -rf "$conf_dir"
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

# ---- node ----
if [ $have_node = 1 ]; then
	api POST "/v1/sessions/$sid/packages" '{"language":"node","names":["nodeapp"]}' >/dev/null
	is "$api_status" 200 "node: install nodeapp into the session"
	api POST "/v1/sessions/$sid/execute" '{"language":"node","code":"console.log(require(\"nodeapp\")())"}' >/dev/null
	is "$(out 'd["stdout"]')" "42" "... a node execute requires it and its dependency"
	api POST /v1/execute '{"language":"node","code":"console.log(require(\"nodeapp\")())","packages":["nodeapp"]}' >/dev/null
	is "$(out 'd["stdout"]')" "42" "node: stateless packages"
else
	for t in "node: session install" "node: session import" "node: stateless"; do
		skip "npm is not installed" "$t"
	done
fi
done_testing
