#!/usr/bin/env bash
# stack_conf.t: nginx/stack.sh takes the broker's context caps from the same config the workers
# read (contexts.machine, contexts.total_memory_mb), so the two never disagree; the environment
# still overrides them, and a value that is not a whole number stops the stack.
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); if [ "$1" = "$2" ]; then echo "ok $n - $3"; else echo "not ok $n - $3 (got '$1', want '$2')"; fi; }
caps() { # caps [VAR=VALUE...]: SBX_CONTEXTS and SBX_CONTEXTS_MEMORY_MB after stack_init
	env -u SBX_CONTEXTS -u SBX_CONTEXTS_MEMORY_MB "$@" bash -c \
		'source "$0/nginx/stack.sh" && stack_init "$0" "$1/state" && echo "$SBX_CONTEXTS $SBX_CONTEXTS_MEMORY_MB"' \
		"$top" "$tmp" 2>/dev/null || echo failed
}
want=$(/usr/bin/python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["contexts"]; print(c["machine"], c["total_memory_mb"])' "$top/fcgi/sbx.conf.json")
ok "$(caps)" "$want" "the shipped config's contexts.machine and total_memory_mb reach the broker"
printf '{"contexts": {"machine": 5, "total_memory_mb": 300}}' >"$tmp/a.json"
ok "$(caps SBX_CONFIG="$tmp/a.json")" "5 300" "an operator's config (SBX_CONFIG) is the source"
ok "$(caps SBX_CONFIG="$tmp/a.json" SBX_CONTEXTS=2)" "2 300" "the environment still overrides one cap"
printf '{"other": 1}' >"$tmp/b.json"
ok "$(caps SBX_CONFIG="$tmp/b.json")" "16 2048" "a config without the section: the workers' own defaults (16, 2048)"
printf '{"contexts": {"machine": "lots"}}' >"$tmp/c.json"
ok "$(caps SBX_CONFIG="$tmp/c.json")" "failed" "a cap that is not a whole number stops the stack"
echo "1..$n"
