#!/usr/bin/env bash
# front_cors.t: CORS for the origins of cors.origins, answered by nginx: a preflight from an
# allowed origin is 204 without a token, with Allow-Origin/Methods/Headers/Max-Age; any other
# origin gets none of them; answers (errors included) carry Allow-Origin for allowed origins
# only, Vary: Origin always, and never Access-Control-Allow-Credentials. An empty list is off.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["cors"] = {"origins": ["https://course.example", "http://localhost:8888"]}
PY
harness_start

hdr() { printf '%s\n' "$2" | tr -d '\r' | sed -n "s/^$1: *//Ip" | tail -n 1; }
# req METHOD PATH ORIGIN [curl args...]: sets $st and $hd (headers)
req() {
	local m=$1 p=$2 o=$3 out
	shift 3
	out=$($SBX_CURL -o /dev/null -D - -X "$m" ${o:+-H "Origin: $o"} "$@" "$SBX_URL$p")
	st=$(printf '%s\n' "$out" | head -n 1 | awk '{print $2}')
	hd=$out
}

req OPTIONS /v1/execute https://course.example -H 'Access-Control-Request-Method: POST' \
	-H 'Access-Control-Request-Headers: authorization, content-type'
is "$st" 204 "a preflight from an allowed origin is 204 without a token"
is "$(hdr Access-Control-Allow-Origin "$hd")" https://course.example "... Allow-Origin is that origin"
ok "$(hdr Access-Control-Allow-Methods "$hd" | grep -q POST; echo $?)" "... Allow-Methods lists POST"
ok "$(hdr Access-Control-Allow-Headers "$hd" | grep -qi 'authorization.*content-type'; echo $?)" \
	"... Allow-Headers lists Authorization and Content-Type"
is "$(hdr Access-Control-Max-Age "$hd")" 7200 "... with a Max-Age"
is "$(hdr Access-Control-Allow-Credentials "$hd")" "" "... and never Allow-Credentials"
ok "$(hdr Vary "$hd" | grep -qi origin; echo $?)" "... Vary: Origin"

req OPTIONS /v1/execute http://localhost:8888 -H 'Access-Control-Request-Method: POST'
is "$(hdr Access-Control-Allow-Origin "$hd")" http://localhost:8888 "the second allowed origin too"

req OPTIONS /v1/execute https://evil.example -H 'Access-Control-Request-Method: POST'
is "$(hdr Access-Control-Allow-Origin "$hd")$(hdr Access-Control-Allow-Methods "$hd")" "" \
	"a preflight from another origin gets no CORS header (status $st)"
ok "$([ "$st" != 204 ]; echo $?)" "... and is not answered as a preflight"
req OPTIONS /v1/execute https://course.example.evil.example -H 'Access-Control-Request-Method: POST'
is "$(hdr Access-Control-Allow-Origin "$hd")" "" "an origin that only begins like an allowed one gets none"

req GET /v1/languages https://course.example -H "Authorization: Bearer $SBX_TOKEN"
is "$st" 200 "an authenticated GET from an allowed origin works"
is "$(hdr Access-Control-Allow-Origin "$hd")" https://course.example "... with Allow-Origin"
ok "$(hdr Access-Control-Expose-Headers "$hd" | grep -qi 'x-request-id'; echo $?)" \
	"... exposing X-Request-Id"
is "$(hdr Access-Control-Allow-Credentials "$hd")" "" "... never Allow-Credentials"
is "$(hdr Access-Control-Allow-Methods "$hd")" "" "... and no preflight headers on an answer"

req GET /v1/languages https://evil.example -H "Authorization: Bearer $SBX_TOKEN"
is "$st/$(hdr Access-Control-Allow-Origin "$hd")" "200/" "another origin: the answer has no Allow-Origin"
ok "$(hdr Vary "$hd" | grep -qi origin; echo $?)" "... but Vary: Origin"

req GET /v1/languages https://course.example
is "$st/$(hdr Access-Control-Allow-Origin "$hd")" "401/https://course.example" \
	"nginx's 401 to an allowed origin carries Allow-Origin (the page can read why)"
req POST /v1/execute https://course.example -H "Authorization: Bearer $SBX_TOKEN" \
	--data '{"language":"nope","code":"x"}'
is "$st/$(hdr Access-Control-Allow-Origin "$hd")" "400/https://course.example" \
	"a worker's 400 to an allowed origin carries it too"
req GET /v1/health https://course.example
is "$(hdr Access-Control-Allow-Origin "$hd")" https://course.example "health too"

# Off: the shipped config has no origin.
/usr/bin/python3 - "$SBX_CONFIG" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["cors"] = {"origins": []}
json.dump(c, open(sys.argv[1], "w"))
PY
stack_render_nginx && harness_reload
ok $? "nginx reloads with an empty cors.origins"
wait_until 10 bash -c "! $SBX_CURL -D - -o /dev/null -X OPTIONS -H 'Origin: https://course.example' \
	$SBX_URL/v1/execute | grep -qi '^access-control-allow-origin'"
ok $? "with cors.origins empty, the same preflight gets no CORS header"
req GET /v1/languages https://course.example -H "Authorization: Bearer $SBX_TOKEN"
is "$st/$(hdr Access-Control-Allow-Origin "$hd")" "200/" "... nor does an answer"
done_testing
