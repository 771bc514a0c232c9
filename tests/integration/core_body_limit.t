#!/usr/bin/env bash
# core_body_limit.t: the worker enforces max_body_bytes itself (413 envelope) even when nginx's
# limit is larger, and a body just under it still works.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh

harness_config <<'PY' || harness_bail "cannot write the config"
c["max_body_bytes"] = 65536
PY
harness_start

body() { /usr/bin/python3 -c 'import json,sys; print(json.dumps({"language":"python","code":"#"*int(sys.argv[1])+"\nprint(7)"}))' "$1" >"$SBX_HARNESS_DIR/body.json"; }
body 60000
API_CONTENT_TYPE=application/json api POST /v1/execute "@$SBX_HARNESS_DIR/body.json" >/dev/null
is "$api_status" 200 "a body under max_body_bytes runs"
body 70000
API_CONTENT_TYPE=application/json api POST /v1/execute "@$SBX_HARNESS_DIR/body.json" >/dev/null
is "$api_status" 413 "over max_body_bytes (nginx would take it): 413 from the worker"
ok "$(is_envelope "$api_body" body_too_large; echo $?)" "... in the envelope with body_too_large"
done_testing
