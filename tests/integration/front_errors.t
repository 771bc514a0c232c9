#!/usr/bin/env bash
# front_errors.t: nginx's own answers through the real stack: every error page is the JSON
# envelope (404, 405, 400, 414, 502 produced for real; the others checked in the config), TLS
# 1.2+ only, the playground's security headers and compression, what the access log holds.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

check_envelope() { # check_envelope DESC STATUS CODE BODY GOT_STATUS
	is "$5" "$2" "$1: $2"
	is_envelope "$4" "$3"
	ok $? "$1: JSON envelope, code $3"
}

api_as "" GET /no/such/file.txt >/dev/null
check_envelope "unknown static path" 404 not_found "$api_body" "$api_status"
is "$(api_header Content-Type)" application/json "404 is application/json"
api_as "" POST /index.html '{}' >/dev/null
check_envelope "POST to a static file" 405 method_not_allowed "$api_body" "$api_status"
out=$(curl -s --max-time 10 -w '\n%{http_code}' "http://127.0.0.1:${SBX_URL##*:}/v1/health")
check_envelope "plain HTTP to the TLS port" 400 bad_request "${out%$'\n'*}" "${out##*$'\n'}"
long=$(head -c 20000 /dev/zero | tr '\0' a)
out=$($SBX_CURL --http1.1 -w '\n%{http_code}' -H "Authorization: Bearer $SBX_TOKEN" "$SBX_URL/v1/$long")
st=${out##*$'\n'}
ok $([ "$st" = 414 ] || [ "$st" = 400 ]; echo $?) "a 20 kB URI is refused (414 or 400: $st)"
is_envelope "${out%$'\n'*}" "$([ "$st" = 414 ] && echo uri_too_long || echo bad_request)"
ok $? "... in the JSON envelope"

# Every status nginx can produce has a JSON page in the rendered config (the site and the error
# pages it includes).
site=$SBX_HARNESS_DIR/site-and-errors.conf
cat "$SBX_STATE_DIR/nginx/sbx-site.conf" nginx/sbx-errors.conf >"$site"
grep -q "include $PWD/nginx/sbx-errors.conf;" "$SBX_STATE_DIR/nginx/sbx-site.conf"
ok $? "the site includes the shared error pages"
for code in 400 401 403 404 405 408 413 414 429 500 502 503 504; do
	loc=$(sed -n "s/^[[:space:]]*error_page\( [0-9]*\)* $code\( [0-9]*\)* \([^ ;]*\);/\3/p" "$site")
	body=$(awk -v loc="location = $loc {" -v code="$code" '
		index($0, loc) { inside = 1 }
		inside && $1 == "return" && $2 == code { sub(/^[^\x27]*\x27/, ""); sub(/\\n\x27;$/, ""); print; exit }
		inside && $1 == "}" { inside = 0 }' "$site")
	is_envelope "$body" "$(echo "$body" | json_get 'd["error"]["code"]')"
	ok $? "error page $code is a JSON envelope (${body:0:40}...)"
done

# TLS: 1.2 and 1.3 only.
curl -k -s -o /dev/null --max-time 10 --tlsv1.1 --tls-max 1.1 "$SBX_URL/v1/health"
ok $([ $? -ne 0 ]; echo $?) "TLS 1.1 is refused"
is "$(curl -k -s -o /dev/null -w '%{http_code}' --max-time 10 --tlsv1.2 --tls-max 1.2 "$SBX_URL/v1/health")" 200 "TLS 1.2 works"
is "$(curl -k -s -o /dev/null -w '%{http_code}' --max-time 10 --tlsv1.3 "$SBX_URL/v1/health")" 200 "TLS 1.3 works"

# The playground: HTML for browsers, with the security headers; compressed static files.
if [ -f www/index.html ]; then
	hdr=$($SBX_CURL -D - -o "$SBX_HARNESS_DIR/index" -H 'Accept: text/html,application/xhtml+xml' "$SBX_URL/" | tr -d '\r')
	case "$hdr" in *"content-type: text/html"*) ok 0 "a browser gets HTML at /" ;; *) ok 1 "a browser gets HTML at /" ;; esac
	cmp -s "$SBX_HARNESS_DIR/index" www/index.html
	ok $? "... www/index.html"
	csp=$(printf '%s\n' "$hdr" | sed -n 's/^content-security-policy: //Ip')
	case "$csp" in *"default-src 'self'"*) ok 0 "CSP default-src 'self'" ;; *) ok 1 "CSP default-src 'self' ($csp)" ;; esac
	case "$csp" in *unsafe-inline*|*unsafe-eval*) ok 1 "CSP allows no inline script ($csp)" ;; *) ok 0 "CSP allows no inline script" ;; esac
	case "$csp" in *"frame-ancestors 'none'"*) ok 0 "CSP frame-ancestors 'none'" ;; *) ok 1 "CSP frame-ancestors 'none'" ;; esac
	printf '%s\n' "$hdr" | grep -qi '^x-content-type-options: nosniff'
	ok $? "X-Content-Type-Options: nosniff"
	printf '%s\n' "$hdr" | grep -qi '^referrer-policy: no-referrer'
	ok $? "Referrer-Policy: no-referrer"
	if [ "$(stat -c %s www/index.html)" -gt 1024 ]; then
		enc=$($SBX_CURL -D - -o /dev/null -H 'Accept-Encoding: gzip' -H 'Accept: text/html' "$SBX_URL/" | tr -d '\r' | sed -n 's/^content-encoding: //Ip')
		is "$enc" gzip "static files are gzip-compressed"
	fi
else
	skip "www/index.html does not exist yet" "a browser gets the playground at /"
fi
api_as "" GET / >/dev/null
is "$api_body" '"ping"' "a non-browser gets the ping at /"

# The access log: one line per request, with the client and the request id, no query string.
api GET "/read_file?id=abc&rel_path=secret-name.txt" >/dev/null
rid=$(api_header X-Request-Id)
ok $([ -n "$rid" ]; echo $?) "responses carry X-Request-Id"
line=$(grep "rid=$rid" "$SBX_STATE_DIR/log/access.log")
case "$line" in *client=alice*) ok 0 "the access line names the client" ;; *) ok 1 "the access line names the client: $line" ;; esac
case "$line" in *secret-name*) ok 1 "the access line has no query string" ;; *) ok 0 "the access line has no query string" ;; esac
case "$line" in *'path="/read_file"'*) ok 0 "the access line has the path" ;; *) ok 1 "the access line has the path: $line" ;; esac
api_as "" GET /v1/sessions >/dev/null
line=$(grep "rid=$(api_header X-Request-Id)" "$SBX_STATE_DIR/log/access.log")
case "$line" in *'path="/v1/sessions"'*) ok 0 "an error's access line has the path asked for" ;; *) ok 1 "an error's access line has the path asked for: $line" ;; esac

# 502: the pool is gone. The answer is still the envelope (this ends the pool: keep it last).
stack_kill_group "$(harness_pool_pid)" 5
rm -f "$SBX_STATE_DIR/run/fcgi.sock"
api GET /v1/languages >/dev/null
check_envelope "no FastCGI pool" 502 bad_gateway "$api_body" "$api_status"
ok $([ -n "$(api_header Retry-After)" ]; echo $?) "502 has Retry-After"

done_testing
