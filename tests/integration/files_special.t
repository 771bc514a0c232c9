#!/usr/bin/env bash
# files_special.t: what a run can leave in its session, through the real stack: a Unix socket, a
# FIFO and a file whose name is not UTF-8. The file routes answered 500 for the socket and the
# tree listing was not valid JSON (UTF-8) for the name; now the socket and FIFO are listed as
# "other", never opened (404), moved, forked past and deleted, and the listing stays valid JSON
# (U+FFFD, "path_lossy"). Another client (bob) still gets session_not_found.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

api POST /v1/sessions >/dev/null
id=$(echo "$api_body" | json_get 'd["id"]')
F="/v1/sessions/$id/files"
work=$SBX_HARNESS_DIR/special-test
mkdir -p "$work"

cmd='python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.bind(\"sock\")" && mkfifo fifo && touch "$(printf "bad\\377\\376.txt")" && echo ok > good.txt'
api POST "/v1/sessions/$id/run" "$(python3 -c 'import json,sys; print(json.dumps({"cmd": sys.argv[1]}))' "$cmd")" >/dev/null
is "$api_status" 200 "a run leaves a socket, a FIFO and a non-UTF-8 name"
is "$(echo "$api_body" | json_get 'd["exit_code"]')" 0 "(the run succeeded)"

# The listing: raw bytes, checked as strict UTF-8 JSON.
$SBX_CURL -H "Authorization: Bearer $SBX_TOKEN" -o "$work/tree" -w '%{http_code}' "$SBX_URL$F" >"$work/code"
is "$(cat "$work/code")" 200 "GET the tree is 200"
python3 - "$work/tree" >"$work/types" <<'EOF'
import json, sys
raw = open(sys.argv[1], "rb").read()
tree = json.loads(raw.decode("utf-8"))  # strict: invalid UTF-8 raises
for e in tree:
    print("%s %s %s" % (ascii(e["path"]), e["type"], e.get("path_lossy", False)))
EOF
ok $? "the tree is valid UTF-8 JSON"
grep -qxF "'sock' other False" "$work/types" && grep -qxF "'fifo' other False" "$work/types"
ok $? "the socket and the FIFO are listed as other"
grep -qxF "'bad\\ufffd\\ufffd.txt' file True" "$work/types"
ok $? "the non-UTF-8 name is shown with U+FFFD and path_lossy"

api GET "$F/sock" >/dev/null
is "$api_status" 404 "GET of the socket is 404, not 500"
is_envelope "$api_body" not_found
ok $? "with code not_found"
echo "$api_body" | grep -q "special file"
ok $? "naming it a special file"
api GET "$F/fifo" >/dev/null
is "$api_status" 404 "GET of the FIFO is 404, promptly"
api GET "/read_file?id=$id&rel_path=sock" >/dev/null
is "$api_status" 404 "the seed's /read_file of the socket is 404"
api_as "$SBX_TOKEN2" GET "$F/sock" >/dev/null
is "$api_status" 404 "bob: 404 too"
is_envelope "$api_body" session_not_found
ok $? "as session_not_found (not his session)"

api POST "/v1/sessions/$id/fork" >/dev/null
is "$api_status" 201 "fork of the session holding them is 201"
fid=$(echo "$api_body" | json_get 'd["id"]')
api GET "/v1/sessions/$fid/files/good.txt" >/dev/null
is "$api_body" "ok" "the fork has the regular files"
api POST "/v1/sessions/$id/move" '{"from":"sock","to":"d/sock"}' >/dev/null
is "$api_status" 200 "move of the socket is 200"
api DELETE "$F/d/sock" >/dev/null
is "$api_status" 204 "delete of the socket is 204"
api DELETE "$F/fifo" >/dev/null
is "$api_status" 204 "delete of the FIFO is 204"
api GET "/v1/sessions/$id" >/dev/null
is "$api_status" 200 "the session is still fine"
done_testing
