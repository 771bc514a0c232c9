#!/usr/bin/env bash
# front_params.t: what nginx hands the FastCGI workers. The pool runs an echo responder
# (tests/lib/harness_echo_fcgi.c, built here) instead of sbx-fcgi, with the real broker and the
# real nginx config: the client name arrives as REMOTE_USER, the request id as REQUEST_ID (the
# same as the X-Request-Id header), the Authorization header and HTTP_PROXY never arrive, the
# workers run as sbx, and the routes without auth carry no client name.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
[ "$(id -u)" -eq 0 ] || skip_all "the harness needs root"
[ -x build/sbxd ] || { echo "Bail out! build/sbxd is missing (make all)"; exit 1; }

bin=$(mktemp -d /tmp/sbx-echo.XXXXXX)
trap 'rm -rf "$bin"' EXIT
chmod 0755 "$bin"
cc -std=c11 -O1 -o "$bin/sbx-fcgi" tests/lib/harness_echo_fcgi.c -lfcgi 2>"$bin/cc.log" ||
	{ echo "Bail out! cannot build the echo responder: $(head -c 300 "$bin/cc.log")"; exit 1; }
ln -s "$(pwd)/build/sbxd" "$bin/sbxd"

. tests/lib/harness.sh
harness_on_exit 'rm -rf "$bin"'
SBX_BIN=$bin harness_start

param() { echo "$api_body" | json_get "d.get('$1', '<absent>')"; }

api POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
is "$api_status" 200 "the echo responder answers through nginx"
is "$(param REMOTE_USER)" alice "REMOTE_USER is alice's client name"
is "$(param REQUEST_ID)" "$(api_header X-Request-Id)" "REQUEST_ID is the request id of the X-Request-Id header"
ok $([[ "$(param REQUEST_ID)" =~ ^[0-9a-f]{32}$ ]]; echo $?) "... 32 hex digits"
auth=$(param HTTP_AUTHORIZATION)
ok $([ "$auth" = "<absent>" ] || [ -z "$auth" ]; echo $?) "HTTP_AUTHORIZATION does not reach the worker (got '$auth')"
case "$api_body" in *"$SBX_TOKEN"*) ok 1 "the token appears nowhere in what the worker got" ;;
*) ok 0 "the token appears nowhere in what the worker got" ;; esac
is "$(param REQUEST_METHOD)" POST "REQUEST_METHOD"
is "$(param REQUEST_URI)" /v1/execute "REQUEST_URI"
is "$(param CONTENT_TYPE)" application/json "CONTENT_TYPE"
is "$(param _body_bytes)" 39 "the body reaches the worker whole"
is "$(param HTTPS)" on "HTTPS=on"
is "$(param _uid)" "$(id -u sbx)" "the worker runs as sbx"

api_as "$SBX_TOKEN2" GET "/read_file?id=abc&rel_path=x.txt" >/dev/null
is "$(param REMOTE_USER)" bob "bob's requests carry bob's name"
is "$(param QUERY_STRING)" "id=abc&rel_path=x.txt" "QUERY_STRING"

api_as "" GET /v1/health >/dev/null
is "$(param REMOTE_USER)" "" "the health route carries no client name"
$SBX_CURL -o "$SBX_HARNESS_DIR/h" -H "Proxy: http://evil.example:1" "$SBX_URL/v1/health"
proxy=$(json_get "d.get('HTTP_PROXY', '')" <"$SBX_HARNESS_DIR/h")
is "$proxy" "" "a Proxy header never becomes HTTP_PROXY (httpoxy)"
api_as "" GET / >/dev/null
is "$(param DOCUMENT_URI)" / "GET / without text/html reaches the worker (the ping)"
is "$(param REMOTE_USER)" "" "... with no client name"
api_as "" GET /v1/sessions >/dev/null
is "$api_status" 401 "an authenticated route without a token never reaches the worker"
case "$api_body" in *REQUEST_METHOD*) ok 1 "... (nginx answers it)" ;; *) ok 0 "... (nginx answers it)" ;; esac

done_testing
