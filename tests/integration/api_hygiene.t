#!/usr/bin/env bash
# api_hygiene.t: strict base64, duplicate JSON keys, the request id in error bodies and 413s that
# name their limit, through the real stack (the checks are in api_hygiene.py). nginx's body limit
# is set below the worker's here so that each of the two 413s can be reached.
cd "$(dirname "$0")/../.." || exit 1
conf_dir=$(mktemp -d /tmp/api-hygiene.XXXXXX)
chmod 0755 "$conf_dir"
/usr/bin/python3 - "$conf_dir/sbx.conf.json" <<'PY'
import json, sys
c = json.load(open("fcgi/sbx.conf.json"))
c["max_body_bytes"] = 65536
json.dump(c, open(sys.argv[1], "w"))
PY
chmod 0644 "$conf_dir/sbx.conf.json"
trap 'rm -rf "$conf_dir"' EXIT
export SBX_CONFIG=$conf_dir/sbx.conf.json HARNESS_BODY_MAX=256k
export HYGIENE_BODY_MAX_BYTES=262144 HYGIENE_WORKER_MAX_BYTES=65536
bash tests/lib/harness.sh --exec /usr/bin/python3 tests/integration/api_hygiene.py
