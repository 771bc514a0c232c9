#!/usr/bin/env bash
# piston_client.t: Piston compatibility. POST /api/v2/execute and GET /api/v2/runtimes with the
# bearer token (raw requests: shapes, version "*" / installed / unknown as Piston answers it),
# and the way in for clients that send no header: a per-client base URL /piston/<key>, used by
# npm's piston-client unchanged (tests/piston_client, pinned by its package-lock.json). The key
# opens nothing else, is revoked with the client's tokens, and never appears in a log.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

api GET /api/v2/runtimes >/dev/null
is "$api_status" 200 "GET /api/v2/runtimes with the token"
pyver=$(echo "$api_body" | json_get '[r["version"] for r in d if r["language"] == "python"][0]')
ok "$(echo "$api_body" | json_get 'all(set(r) >= {"language","version","aliases"} for r in d) and any(r["language"] == "javascript" and r.get("runtime") == "node" for r in d)' | grep -q true; echo $?)" \
	"... [{language, version, aliases}], node as javascript"
api POST /api/v2/execute '{"language":"python","version":"*","files":[{"name":"m.py","content":"import sys\nprint(input(), sys.argv[1:])"}],"stdin":"hey","args":["a"],"run_timeout":3000,"compile_timeout":10000,"run_memory_limit":-1,"compile_memory_limit":-1}' >/dev/null
is "$api_status" 200 "POST /api/v2/execute, version \"*\""
is "$(echo "$api_body" | json_get '(d["language"], d["run"]["stdout"], d["run"]["output"], d["run"]["code"], d["run"]["signal"], "compile" in d)')" \
	'["python", "hey ['"'a'"']\n", "hey ['"'a'"']\n", 0, null, false]' "... {language, version, run: {stdout, output, code, signal}}"
is "$(echo "$api_body" | json_get 'd["version"]')" "$pyver" "... version is the installed one"
api POST /api/v2/execute "{\"language\":\"python\",\"version\":\"$pyver\",\"files\":[{\"content\":\"print(2)\"}]}" >/dev/null
is "$api_status/$(echo "$api_body" | json_get 'd["run"]["stdout"]')" "200/2" "the installed version by name, a file without a name"
api POST /api/v2/execute '{"language":"python","version":"2.7.18","files":[{"content":"print(2)"}]}' >/dev/null
is "$api_status" 400 "another version: 400"
is "$(echo "$api_body" | json_get 'd["message"]')" "python-2.7.18 runtime is unknown" "... with Piston's message"
api POST /api/v2/execute '{"language":"cobol","files":[{"content":"x"}]}' >/dev/null
is "$api_status/$(echo "$api_body" | json_get 'd["message"]')" "400/cobol-* runtime is unknown" "an unknown language: the same"
api POST /api/v2/execute '{"language":"python","files":[{"content":"import time\ntime.sleep(5)"}],"run_timeout":300}' >/dev/null
is "$(echo "$api_body" | json_get '(d["run"]["signal"], d["run"]["status"])')" '["SIGKILL", "TO"]' "run_timeout: killed, status TO"
api POST /api/v2/execute '{"language":"c","files":[{"content":"int main(void){return x;}"}]}' >/dev/null
is "$(echo "$api_body" | json_get '(d["compile"]["code"] != 0, "run" in d, len(d["compile"]["stderr"]) > 0)')" \
	'[true, false, true]' "a compile error: the compile stage only, with its stderr"
api_as "" GET /api/v2/runtimes >/dev/null
is "$api_status" 401 "no token: 401"

key=$(stack_piston_key_new alice) && harness_reload
ok $? "a Piston key for alice (nginx/token piston)"
out=$($SBX_CURL -o - -w ' %{http_code}' "$SBX_URL/piston/$key/api/v2/runtimes")
is "${out##* }" 200 "GET /piston/<key>/api/v2/runtimes without any header: 200"
out=$($SBX_CURL -o - -w ' %{http_code}' -H 'Content-Type:' --data-binary '{"language":"python","files":[{"content":"print(40+2)"}]}' "$SBX_URL/piston/$key/api/v2/execute")
ok "$(printf '%s' "$out" | grep -q '"stdout":"42\\n".* 200$'; echo $?)" "POST execute through the key URL, no header at all"
out=$($SBX_CURL -o /dev/null -w '%{http_code}' "$SBX_URL/piston/$key/v1/sessions")
is "$out" 404 "the key opens only the Piston routes (/piston/<key>/v1/sessions: 404)"
out=$($SBX_CURL -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$SBX_URL/v1/sessions")
is "$out" 401 "... and is no bearer token"
out=$($SBX_CURL -o /dev/null -w '%{http_code}' "$SBX_URL/piston/${key}0/api/v2/runtimes")
is "$out" 401 "a wrong key: 401"

if command -v node >/dev/null 2>&1; then
	if [ ! -d tests/piston_client/node_modules/piston-client ]; then
		(cd tests/piston_client && npm ci --no-audit --no-fund --loglevel=error) >&2
	fi
	if [ -d tests/piston_client/node_modules/piston-client ]; then
		PISTON_URL="$SBX_URL/piston/$key" NODE_EXTRA_CA_CERTS="$SBX_STATE_DIR/tls/cert.pem" \
			node tests/piston_client/piston_client.mjs >"$SBX_HARNESS_DIR/pc.tap" 2>&1
		rc=$?
		sed 's/^/# piston-client: /' "$SBX_HARNESS_DIR/pc.tap"
		ok $rc "npm's piston-client, unchanged, passes its checks through the key URL"
	else
		skip "npm ci in tests/piston_client failed (no registry?)" "npm's piston-client"
	fi
else
	skip "node is not installed" "npm's piston-client"
fi

ok "$(grep -rqF "$key" "$SBX_LOG"; [ $? -ne 0 ]; echo $?)" "the key is in no log (access, error, workers)"
ok "$(grep -q 'path="/piston/-/api/v2/execute"' "$SBX_LOG/access.log"; echo $?)" "... the access log shows /piston/-/..."
stack_token_revoke alice >/dev/null && harness_reload
out=$($SBX_CURL -o /dev/null -w '%{http_code}' "$SBX_URL/piston/$key/api/v2/runtimes")
is "$out" 401 "revoking alice revokes her Piston key: 401"
done_testing
