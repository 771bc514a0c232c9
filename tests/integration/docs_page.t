#!/usr/bin/env bash
# docs_page.t: the API reference built from fcgi/openapi.json (www/docs/, www/build.mk) is served
# by nginx at /docs/ without a token: an HTML page whose every script is a file of our own origin
# (the CSP runs no inline script), each served; /docs redirects there; the page holds the
# document's operations; the playground and the README link it.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
[ -f www/docs/index.html ] || skip_all "www/docs/index.html is not built (make all; @redocly/cli from npm)"
. tests/lib/harness.sh
harness_start

hdr() { printf '%s\n' "$2" | tr -d '\r' | sed -n "s/^$1: *//Ip" | tail -n 1; }
page=$(mktemp /tmp/docs-page.XXXXXX)
harness_on_exit rm -f "$page"
hd=$($SBX_CURL -D - -o "$page" "$SBX_URL/docs/")
is "$(printf '%s\n' "$hd" | head -n 1 | awk '{print $2}')" 200 "GET /docs/ without a token is 200"
ok "$(hdr Content-Type "$hd" | grep -q '^text/html'; echo $?)" "... text/html"
csp=$(hdr Content-Security-Policy "$hd")
ok "$(printf '%s' "$csp" | grep -q "script-src 'self';"; echo $?)" "... with a CSP that runs no inline script: $csp"
ok "$(grep -q 'executeStateless\|/v1/execute' "$page"; echo $?)" "... and it holds the document's operations"
inline=$(grep -o '<script[^>]*>' "$page" | grep -vc 'src=')
is "$inline" 0 "no inline script on the page"
srcs=$(grep -o '<script[^>]* src="[^"]*"' "$page" | sed 's/.*src="\([^"]*\)"/\1/')
ok "$([ -n "$srcs" ]; echo $?)" "the page loads its scripts by src: $(echo $srcs)"
for s in $srcs; do
	case "$s" in
	http* | //*) ok 1 "$s is of another origin" ;;
	*)
		h=$($SBX_CURL -D - -o /dev/null "$SBX_URL/docs/$s")
		is "$(printf '%s\n' "$h" | head -n 1 | awk '{print $2}')/$(hdr Content-Type "$h" | cut -d';' -f1)" \
			200/application/javascript "... /docs/$s is served as JavaScript"
		;;
	esac
done
h=$($SBX_CURL -D - -o /dev/null "$SBX_URL/docs")
is "$(printf '%s\n' "$h" | head -n 1 | awk '{print $2}') $(hdr Location "$h")" "301 /docs/" "/docs redirects to /docs/"
is "$($SBX_CURL -o /dev/null -w '%{http_code}' "$SBX_URL/docs/../fcgi/openapi.json")" 404 \
	"nothing but the built pages under /docs/"
ok "$($SBX_CURL "$SBX_URL/index.html" | grep -q 'href="/docs/"'; echo $?)" "the playground links /docs/"
ok "$(grep -q '/docs/' README.md; echo $?)" "the README links /docs/"
done_testing
