#!/usr/bin/env bash
# files_api.t: the /v1 file routes through the real stack: raw round trips, tree, move, delete,
# malformed paths, and what a program in the session can leave behind (symlinks out, a
# symlinked parent dir, a FIFO, an unreadable dir): the API never follows any of it.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
. tests/lib/harness.sh
harness_start

api POST /v1/sessions >/dev/null
id=$(echo "$api_body" | json_get 'd["id"]')
F="/v1/sessions/$id/files"
work=$SBX_HARNESS_DIR/files-test
mkdir -p "$work"

# Raw bytes both ways, binary and 3 MiB.
head -c 3145728 /dev/urandom >"$work/blob"
api PUT "$F/bin/blob.dat" "@$work/blob" >/dev/null
is "$api_status" 201 "PUT a 3 MiB binary file (parents made) is 201"
is "$(echo "$api_body" | json_get 'd["size"]')" 3145728 "the reply says its size"
$SBX_CURL -H "Authorization: Bearer $SBX_TOKEN" -o "$work/back" -D "$work/head" "$SBX_URL$F/bin/blob.dat"
cmp -s "$work/blob" "$work/back"
ok $? "GET returns the same bytes"
grep -qi '^content-type: application/octet-stream' "$work/head"
ok $? "as application/octet-stream"
api PUT "$F/bin/blob.dat" 'small' >/dev/null
is "$api_status" 200 "PUT over an existing file is 200"
api GET "$F/bin/blob.dat" >/dev/null
is "$api_body" "small" "and replaces it whole"
api PUT "$F/bin" 'x' >/dev/null
is "$api_status" 409 "PUT onto a directory is 409"
api GET "$F/bin" >/dev/null
is "$api_status" 409 "GET of a directory is 409"
api GET "$F/nope.txt" >/dev/null
is "$api_status" 404 "GET of a missing file is 404"
is_envelope "$api_body" not_found
ok $? "with code not_found"

# Tree.
api PUT "$F/t/b.txt" 'bb' >/dev/null
api GET "$F" >/dev/null
is "$api_status" 200 "GET .../files is 200"
echo "$api_body" | json_get '[(e["path"], e["type"], e["size"]) for e in d]' |
	grep -q '\["t/b.txt", "file", 2\]'
ok $? "the tree lists t/b.txt as a file of 2 bytes"
echo "$api_body" | json_get 'all(set(e) == {"path","type","size","mtime"} for e in d)' | grep -q true
ok $? "every entry has path, type, size, mtime"

# Move.
api PUT "$F/m1.txt" 'one' >/dev/null
api PUT "$F/m2.txt" 'two' >/dev/null
api POST "/v1/sessions/$id/move" '{"from":"m1.txt","to":"m2.txt"}' >/dev/null
is "$api_status" 409 "move onto an existing file without overwrite is 409"
api POST "/v1/sessions/$id/move" '{"from":"m1.txt","to":"m2.txt","overwrite":true}' >/dev/null
is "$api_status" 200 "with overwrite: 200"
api GET "$F/m2.txt" >/dev/null
is "$api_body" "one" "the target has the moved contents"
api POST "/v1/sessions/$id/move" '{"from":"m2.txt","to":"new/dir/m3.txt"}' >/dev/null
is "$api_status" 200 "move makes the target's parents"
api POST "/v1/sessions/$id/move" '{"from":"m2.txt","to":"x"}' >/dev/null
is "$api_status" 404 "moving a missing file is 404"
api POST "/v1/sessions/$id/move" '{"from":"new","to":"x","overwrite":1}' >/dev/null
is "$api_status" 400 "a wrong type for overwrite is 400"
is "$(echo "$api_body" | json_get 'd["error"]["field"]')" overwrite "naming the field"
api POST "/v1/sessions/$id/move" '{"from":"new","to":"x","force":true}' >/dev/null
is "$api_status" 400 "an unknown field is 400"

# Delete.
api DELETE "$F/new" >/dev/null
is "$api_status" 204 "DELETE of a directory is 204 (the whole tree goes)"
api GET "$F/new/dir/m3.txt" >/dev/null
is "$api_status" 404 "its files are gone"
api DELETE "$F/new" >/dev/null
is "$api_status" 404 "DELETE again is 404"

# Malformed paths: whatever nginx normalises, nothing outside is reached.
bad=0
for p in '..%2f..%2fetc%2fpasswd' '%2e%2e/%2e%2e/etc/passwd' 'a%2f%2fb' 'a/%2e/b' '%2fetc%2fpasswd' 'x%00y'; do
	api GET "$F/$p" >/dev/null
	case "$api_status" in 400 | 404) ;; *) bad=1; diag "$p: $api_status" ;; esac
	case "$api_body" in *root:x:*) bad=1; diag "$p leaked /etc/passwd" ;; esac
done
ok $bad "encoded '..', '//', '.', absolute and NUL paths are 400/404 and read nothing outside"
api PUT "$F/$(printf 'a%.0s' $(seq 300))" 'x' >/dev/null
is "$api_status" 400 "a path segment over 255 bytes is 400"
is_envelope "$api_body" malformed_path
ok $? "with code malformed_path"

# What a program can leave in the session.
api POST "/v1/sessions/$id/run" '{"cmd":"ln -s /etc/passwd pw; ln -s / root; mkdir -p real; ln -s /etc etcdir; mkfifo fifo; mkdir locked; echo s > locked/s; chmod 000 locked"}' >/dev/null
is "$api_status" 200 "a run leaves symlinks out, a FIFO and an unreadable dir"
api GET "$F/pw" >/dev/null
is "$api_status" 404 "GET of a symlink to /etc/passwd is 404"
api GET "$F/root/etc/passwd" >/dev/null
is "$api_status" 404 "GET through a symlink to / is 404"
api GET "$F/etcdir/hostname" >/dev/null
is "$api_status" 404 "GET through a symlinked parent dir is 404"
api PUT "$F/etcdir/sbx-escape-test" 'pwned' >/dev/null
is "$api_status" 404 "PUT through a symlinked parent dir is 404"
[ ! -e /etc/sbx-escape-test ]
ok $? "and nothing appeared in /etc"
api DELETE "$F/etcdir/hostname" >/dev/null
is "$api_status" 404 "DELETE through a symlinked dir is 404"
[ -e /etc/hostname ]
ok $? "and /etc/hostname is still there"
api POST "/v1/sessions/$id/move" '{"from":"etcdir/hostname","to":"stolen"}' >/dev/null
is "$api_status" 404 "move out through a symlinked dir is 404"
before=$(stat -c %Y /etc/passwd)
api PUT "$F/pw" 'replaced' >/dev/null
is "$api_status" 200 "PUT onto a symlink's name replaces the link itself"
[ "$(stat -c %Y /etc/passwd)" = "$before" ] && grep -q '^root:' /etc/passwd
ok $? "/etc/passwd was not touched"
api GET "$F/fifo" >/dev/null
is "$api_status" 404 "GET of a FIFO is 404, promptly"
api GET "$F" >/dev/null
echo "$api_body" | json_get '{e["path"]: e["type"] for e in d}' >"$work/types"
grep -q '"root": "symlink"' "$work/types" && grep -q '"fifo": "other"' "$work/types"
ok $? "the tree shows symlinks as symlink and the FIFO as other, without following"
grep -q '"root/' "$work/types"
is $? 1 "and never lists what a symlink points to"
api GET "$F/locked/s" >/dev/null
case "$api_status" in 403 | 404) r=0 ;; *) r=1 ;; esac
ok $r "a file in an unreadable dir is 403/404, not 500 ($api_status)"
api DELETE "$F/locked" >/dev/null
is "$api_status" 204 "an unreadable dir can still be deleted"
api POST "/v1/sessions/$id/run" '{"cmd":"chmod 000 /work"}' >/dev/null
api PUT "$F/after-chmod.txt" 'still' >/dev/null
is "$api_status" 201 "a session whose root a run made mode 000 stays writable through the API"
api DELETE "/v1/sessions/$id" >/dev/null
is "$api_status" 204 "the session with all that in it deletes cleanly"
[ -e /etc/passwd ] && [ -e /etc/hostname ]
ok $? "and the host files symlinks pointed to are intact"

done_testing
