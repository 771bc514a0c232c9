#!/usr/bin/env bash
# front_production.t: the production pieces stay valid: nginx/render-site's output passes
# `nginx -t` (inside a throwaway main config), redirects plain HTTP and keeps the token and error
# handling of the dev stack; the systemd units start what the runtime conventions say.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
command -v nginx >/dev/null || skip_all "nginx is not installed"
command -v openssl >/dev/null || skip_all "openssl is not installed"

tmp=$(mktemp -d /tmp/sbx-prod.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=t \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
: >"$tmp/tokens.conf"
mkdir -p "$tmp/tmp" "$tmp/log" # the README makes STATE/log (nginx's refusal counters)

nginx/render-site --server-name api.example.com --cert "$tmp/cert.pem" --key "$tmp/key.pem" \
	--state "$tmp" --prefix "$(pwd)" --access-log "$tmp/access.log" >"$tmp/site.conf"
ok $? "render-site renders the production site"
nginx/render-site --cert x >/dev/null 2>&1
ok $([ $? -eq 2 ]; echo $?) "render-site refuses to run without a server name, cert and key"
cat >"$tmp/nginx.conf" <<EOF
pid $tmp/nginx.pid;
events {}
http { client_body_temp_path $tmp/tmp; include $tmp/site.conf; }
EOF
out=$(nginx -t -q -p "$tmp/" -c "$tmp/nginx.conf" -e "$tmp/error.log" 2>&1)
ok $? "nginx -t accepts it${out:+: $out}"

site=$tmp/site.conf
grep -v "^#" "$site" | grep -q "@[A-Z_]*@"
ok $([ $? -ne 0 ]; echo $?) "no placeholder is left"
grep -q '^#@prod' "$site"
ok $([ $? -ne 0 ]; echo $?) "every production-only line is enabled"
grep -Eq 'listen 443 ssl' "$site" && grep -Eq 'listen \[::\]:443 ssl' "$site"
ok $? "HTTPS on 443, IPv4 and IPv6"
grep -q 'return 301 https://' "$site"
ok $? "plain HTTP redirects to HTTPS"
grep -q "include $tmp/tokens.conf;" "$site"
ok $? "the token map includes the state's tokens.conf"
grep -q 'fastcgi_pass unix:/run/sbx-pool/fcgi.sock;' "$site"
ok $? "FastCGI goes to the pool unit's socket"
n=$(grep -c 'fastcgi_pass unix:/run/sbx-health/fcgi.sock;' "$site")
h=$(sed -n '/location = \/v1\/health {/,/}/p' "$site" | grep -c 'fastcgi_pass unix:/run/sbx-health/fcgi.sock;')
ok $([ "$n" = 1 ] && [ "$h" = 1 ]; echo $?) "GET /v1/health, and nothing else, goes to the health unit's socket"
grep -q "ssl_protocols TLSv1.2 TLSv1.3;" "$site"
ok $? "TLS 1.2 and 1.3 only"

pool=nginx/sbx-pool.service broker=nginx/sbx-broker.service
grep -q '^ExecStart=/usr/bin/spawn-fcgi -n -s /run/sbx-pool/fcgi.sock .*-U www-data .*-u sbx -g sbx .*/usr/bin/multiwatch -f [0-9]* .* -- /opt/sbx/build/sbx-fcgi$' "$pool"
ok $? "the pool unit: spawn-fcgi (socket for www-data) + multiwatch + sbx-fcgi as sbx"
grep -q '^Environment=SBX_BROKER_SOCKET=/run/sbx/sbxd.sock$' "$pool"
ok $? "the pool finds the broker's socket"
grep -q '^Requires=sbx-broker.service$' "$pool"
ok $? "the pool requires the broker"
health=nginx/sbx-health.service
grep -q '^ExecStart=/usr/bin/spawn-fcgi -n -s /run/sbx-health/fcgi.sock .*-U www-data .*-u sbx -g sbx .*/usr/bin/multiwatch -f [0-9]* .* -- /opt/sbx/build/sbx-fcgi$' "$health"
ok $? "the health unit: its own socket, the same sbx-fcgi as sbx"
grep -q '^RuntimeDirectory=sbx-health$' "$health" && ! grep -q '^RuntimeDirectory=sbx-pool$' "$health"
ok $? "the health unit's socket directory is its own (stopping one pool never removes the other's)"
grep -q '^Environment=SBX_BROKER_SOCKET=/run/sbx/sbxd.sock$' "$health" && grep -q '^Requires=sbx-broker.service$' "$health"
ok $? "the health pool finds and requires the broker"
grep -q '^Environment=SBX_POOL_LISTEN=/run/sbx-pool/fcgi.sock$' "$health"
ok $? "the health pool checks the main pool's socket"
grep -q 'sbx-health' README.md
ok $? "the README installs and enables the health unit"
grep -q '^Restart=on-failure$' nginx/nginx-restart.conf && grep -q '^\[Service\]$' nginx/nginx-restart.conf &&
	grep -q 'nginx.service.d/sbx-restart.conf' README.md
ok $? "nginx restarts by itself too: a drop-in with Restart=on-failure, installed by the README"
for u in nginx/sbx-broker.service nginx/sbx-pool.service nginx/sbx-health.service; do
	grep -q '^Restart=\(always\|on-failure\)$' "$u" && grep -q '^KillMode=control-group$' "$u"
	ok $? "$u restarts by itself and stops its whole group"
done
for flag in '--socket /run/sbx/sbxd.sock' '--client-uid' '--files-uid' '--files-gid' '--bind-ro /opt/sbx/fcgi/evaluate/runner:/opt/sbx'; do
	grep -q -- "^ExecStart=.*/opt/sbx/build/sbxd .*$flag" "$broker"
	ok $? "the broker unit passes $flag"
done
grep -q '^RuntimeDirectory=sbx$' "$broker"
ok $? "the broker's socket directory is made by systemd"
grep -q '^Delegate=yes$' "$broker"
ok $? "the broker's cgroup subtree is delegated to it (cgroup v2: tests/sandbox/cgroup_v2.t runs it so)"

# systemd's own parser on the units (and the nginx drop-in), as `systemctl daemon-reload` would
# read them: unknown keys, bad values and missing sections are reported here, not in production.
if command -v systemd-analyze >/dev/null; then
	units=$(mktemp -d)
	cp nginx/sbx-broker.service nginx/sbx-pool.service nginx/sbx-health.service "$units/"
	for u in "$units"/*.service; do
		out=$(cd "$units" && systemd-analyze verify --man=no "./${u##*/}" 2>&1)
		is "$out" "" "systemd-analyze verify accepts ${u##*/}"
	done
	mkdir -p "$units/nginx.service.d"
	cp nginx/nginx-restart.conf "$units/nginx.service.d/sbx-restart.conf"
	printf '[Service]\nExecStart=/bin/true\n' >"$units/nginx.service"
	out=$(cd "$units" && SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify --man=no ./nginx.service 2>&1)
	is "$out" "" "systemd-analyze verify accepts the nginx drop-in"
	rm -rf "$units"
else
	skip "systemd-analyze is not installed" "systemd-analyze verify accepts the units"
fi

done_testing
