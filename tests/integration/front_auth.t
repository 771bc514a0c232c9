#!/usr/bin/env bash
# front_auth.t: nginx's bearer-token check through the real stack: missing, unknown and revoked
# tokens are 401 envelopes with WWW-Authenticate; the health routes need none; clients cannot see
# each other's sessions; the token never reaches a log or the pool; who can read what on disk.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

check_401() { # check_401 DESC: the last call was the 401 envelope with the challenge header
	is "$api_status" 401 "$1: 401"
	is_envelope "$api_body" unauthorized
	ok $? "$1: JSON envelope, code unauthorized"
	case "$(api_header WWW-Authenticate)" in
	Bearer*) ok 0 "$1: WWW-Authenticate: Bearer" ;;
	*) ok 1 "$1: WWW-Authenticate: Bearer (got '$(api_header WWW-Authenticate)')" ;;
	esac
	is "$(api_header Content-Type)" application/json "$1: Content-Type application/json"
}

api_as "" GET /v1/languages >/dev/null
check_401 "no token"
api_as "sbx_0000000000000000000000000000000000000000000000000000000000000000" GET /v1/languages >/dev/null
check_401 "unknown token"
api_as "" POST /run '{"id":"abc","cmd":"true"}' >/dev/null
check_401 "seed route without token"
api_as "" POST /v1/execute '{"language":"python","code":"print(1)"}' >/dev/null
is "$api_status" 401 "execute without token: 401"
# A token must be the whole header value: a prefix or another scheme is not enough.
tmp=$($SBX_CURL -o /dev/null -w '%{http_code}' -H "Authorization: Basic $SBX_TOKEN" "$SBX_URL/v1/languages")
is "$tmp" 401 "the token under another scheme: 401"
tmp=$($SBX_CURL -o /dev/null -w '%{http_code}' -H "Authorization: Bearer ${SBX_TOKEN%?}" "$SBX_URL/v1/languages")
is "$tmp" 401 "a truncated token: 401"

api GET /v1/languages >/dev/null
is "$api_status" 200 "alice's token: 200"
api_as "$SBX_TOKEN2" GET /v1/languages >/dev/null
is "$api_status" 200 "bob's token: 200"

api_as "" GET /v1/health >/dev/null
is "$api_status" 200 "GET /v1/health needs no token"
is "$(echo "$api_body" | json_get 'd["status"]')" ok "health says status ok"
api_as "" GET / >/dev/null
is "$api_status" 200 "GET / needs no token"
is "$api_body" '"ping"' "GET / answers the JSON string ping"

# make token / make revoke semantics: valid at once, invalid at once, without a restart.
nginx_pid=$(harness_nginx_pid)
carol=$(harness_token carol)
ok $? "a new token for carol"
api_as "$carol" GET /v1/languages >/dev/null
is "$api_status" 200 "carol's new token works without a restart"
harness_revoke carol
ok $? "revoke carol"
api_as "$carol" GET /v1/languages >/dev/null
check_401 "revoked token"
is "$(harness_nginx_pid)" "$nginx_pid" "the same nginx master served throughout (reload, not restart)"

# A token change reloads nginx gracefully: a request in flight is not dropped.
body='{"language":"bash","code":"sleep 2; echo survived","limits":{"wall_ms":20000}}'
( HARNESS_QUIET_SUBSHELL=1 api POST /v1/execute "$body" >"$SBX_HARNESS_DIR/slow.body"
  echo "$api_status" >"$SBX_HARNESS_DIR/slow.status" ) &
slow=$!
for ((i = 0; i < 100; i++)); do [ -n "$(harness_run_pids)" ] && break; sleep 0.1; done
dave=$(harness_token dave)
api_as "$dave" GET /v1/languages >/dev/null
is "$api_status" 200 "a token made while a request is in flight works"
wait "$slow"
is "$(cat "$SBX_HARNESS_DIR/slow.status")" 200 "the request in flight during the reload completes"
is "$(json_get 'd["stdout"]' <"$SBX_HARNESS_DIR/slow.body")" survived "... with its output"

# Sessions belong to their client.
api POST /v1/sessions '{}' >/dev/null
is "$api_status" 201 "alice creates a session"
sid=$(echo "$api_body" | json_get 'd["id"]')
ok $([ -n "$sid" ]; echo $?) "the session has an id"
api GET "/v1/sessions/$sid" >/dev/null
is "$api_status" 200 "alice sees her session"
api_as "$SBX_TOKEN2" GET "/v1/sessions/$sid" >/dev/null
is "$api_status" 404 "bob gets 404 for alice's session"
api_as "$SBX_TOKEN2" GET "/v1/sessions/00000000-0000-4000-8000-000000000000" >/dev/null
not_there=$api_body
api_as "$SBX_TOKEN2" GET "/v1/sessions/$sid" >/dev/null
is "$(echo "$api_body" | json_get 'd["error"]["code"]')" "$(echo "$not_there" | json_get 'd["error"]["code"]')" \
	"... the same answer as for a session that does not exist"
api_as "$SBX_TOKEN2" GET /v1/sessions >/dev/null
case "$api_body" in
*"$sid"*) ok 1 "bob's session list does not show alice's session" ;;
*) is "$api_status" 200 "bob's session list does not show alice's session" ;;
esac
api_as "$SBX_TOKEN2" PUT "/v1/sessions/$sid/files/x.txt" "hello" >/dev/null
is "$api_status" 404 "bob cannot write into alice's session"

# The token stays out of every log and everything the pool wrote.
leaks=$(grep -rlF -e "$SBX_TOKEN" -e "$SBX_TOKEN2" "$SBX_STATE_DIR" 2>/dev/null | grep -v '/tokens.conf$')
is "$leaks" "" "no token in any log or state file"
grep -q 'client=alice' "$SBX_STATE_DIR/log/access.log"
ok $? "the access log names the client instead"

# Privilege: the pool runs as sbx, nginx's workers as an unprivileged user; neither can read the
# tokens or the TLS key.
users=$(ps -o user= -p "$(harness_worker_pids | paste -sd, -)" | sort -u | tr '\n' ' ')
is "$users" "sbx " "the FastCGI workers run as sbx"
nusers=$(ps -o user= --ppid "$(harness_nginx_pid)" | sort -u | tr '\n' ' ')
is "$nusers" "$(stack_nginx_user) " "nginx's workers run as $(stack_nginx_user)"
for f in tokens.conf tls/key.pem; do
	runuser -u sbx -- cat "$SBX_STATE_DIR/$f" >/dev/null 2>&1
	ok $([ $? -ne 0 ]; echo $?) "user sbx cannot read $f"
	runuser -u "$(stack_nginx_user)" -- cat "$SBX_STATE_DIR/$f" >/dev/null 2>&1
	ok $([ $? -ne 0 ]; echo $?) "user $(stack_nginx_user) cannot read $f"
done
is "$(stat -c '%U %a' "$SBX_STATE_DIR/tokens.conf")" "root 600" "tokens.conf is root 0600"

done_testing
