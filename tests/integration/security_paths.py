"""security_paths.py: cross-client isolation and path tricks on every file route (run by
security_paths.t under the harness). Raw request paths go out through http.client so that no
client library normalises "..", "%2F" or "//" before the service sees them."""
import glob
import http.client
import json
import os
import ssl

from security_common import STATE, TOKEN, TOKEN2, URL, as_json, client, is_envelope
from tap import done, is_, ok

HOST, PORT = URL.split("//")[1].split(":")
CTX = ssl._create_unverified_context()
PASSWD = open("/etc/passwd").read()
MARK = "PWNED-by-security_paths"


def raw(method, path, token=TOKEN, body=None, ctype="application/json"):
    """One request with the path sent byte for byte. Returns (status, text)."""
    conn = http.client.HTTPSConnection(HOST, int(PORT), context=CTX, timeout=60)
    headers = {"Authorization": "Bearer " + token}
    if body is not None:
        headers["Content-Type"] = ctype
        if isinstance(body, str):
            body = body.encode()
    conn.putrequest(method, path, skip_accept_encoding=True)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.putheader("Content-Length", str(len(body or b"")))
    conn.endheaders(body or b"")
    r = conn.getresponse()
    text = r.read().decode(errors="replace")
    conn.close()
    return r.status, text


def envelope(text):
    try:
        e = json.loads(text)["error"]
        return isinstance(e["code"], str) and isinstance(e["message"], str)
    except Exception:
        return False


alice, bob = client(TOKEN), client(TOKEN2)
A = alice.post("/v1/sessions", json={}).json()["id"]
B = bob.post("/v1/sessions", json={}).json()["id"]
r = alice.put(f"/v1/sessions/{A}/files/a.txt", content=b"alice data")
is_(r.status_code, 201, "alice writes a.txt")
r = bob.put(f"/v1/sessions/{B}/files/secret.txt", content=b"bob secret")
is_(r.status_code, 201, "bob writes secret.txt")
bob_files = glob.glob(f"{STATE}/sessions/*/{B}/files")
ok(len(bob_files) == 1, "bob's session directory is found on the host", bob_files)
bob_host = bob_files[0] if bob_files else "/nonexistent"

# ---- two clients: bob gets 404 for everything of alice's, exactly as for a missing session ----
probes = [
    ("GET", f"/v1/sessions/{A}", None), ("DELETE", f"/v1/sessions/{A}", None),
    ("POST", f"/v1/sessions/{A}/fork", "{}"), ("GET", f"/v1/sessions/{A}/files", None),
    ("GET", f"/v1/sessions/{A}/files/a.txt", None), ("PUT", f"/v1/sessions/{A}/files/b.txt", "x"),
    ("DELETE", f"/v1/sessions/{A}/files/a.txt", None),
    ("POST", f"/v1/sessions/{A}/move", '{"from":"a.txt","to":"c.txt"}'),
    ("POST", f"/v1/sessions/{A}/run", '{"cmd":"cat a.txt"}'),
    ("POST", f"/v1/sessions/{A}/execute", '{"language":"bash","code":"cat a.txt"}'),
    ("POST", f"/v1/sessions/{A}/evaluate",
     '{"language":"python","code":"def f(): return 1","entry_point":"f","io_cases":[{"input":"","output":"1"}]}'),
]
missing = "00000000-0000-4000-8000-000000000000"
for method, path, body in probes:
    s, t = raw(method, path, TOKEN2, body, "application/octet-stream" if method == "PUT" else "application/json")
    s2, t2 = raw(method, path.replace(A, missing), TOKEN2, body,
                 "application/octet-stream" if method == "PUT" else "application/json")
    ok(s == 404 and envelope(t) and json.loads(t)["error"]["code"] == json.loads(t2)["error"]["code"] and s2 == 404,
       f"bob: {method} {path.replace(A, '{alice}')} is 404 like a missing session", (s, t[:200], s2, t2[:200]))
ok(A not in bob.get("/v1/sessions").text, "alice's session is not in bob's list")
r = alice.get(f"/v1/sessions/{A}/files/a.txt")
ok(r.status_code == 200 and r.content == b"alice data", "alice's file is intact after bob's attempts")
ok(sorted(e["path"] for e in alice.get(f"/v1/sessions/{A}/files").json()) == ["a.txt"],
   "and alice's tree gained nothing")

# Seed routes: the client picks the id; bob using alice's id reaches only a session of his own.
seed = "seed-" + A[:8]
r = alice.post("/write_file", json={"id": seed, "rel_path": "s.txt", "content": "alice seed"})
is_(r.status_code, 200, "alice writes a seed session")
r = bob.get("/read_file", params={"id": seed, "rel_path": "s.txt"})
ok(r.status_code == 404 and is_envelope(r), "bob reading alice's seed id: 404", r.text[:200])
r = bob.post("/write_file", json={"id": seed, "rel_path": "s.txt", "content": "bob overwrote"})
r = bob.post("/delete_file", json={"id": seed, "rel_path": "s.txt"})
r = alice.get("/read_file", params={"id": seed, "rel_path": "s.txt"})
ok(r.status_code == 200 and r.json().get("content") == "alice seed",
   "bob writing and deleting under the same seed id leaves alice's file alone", r.text[:200])

# ---- code in the session leaves traps ----
cmd = (f"ln -s /etc/passwd pw; ln -s /etc etcdir; ln -s {bob_host} bobdir; ln -s {bob_host}/secret.txt bobfile; "
       f"ln -s .. up; ln -s / rootdir; mkdir -p d; ln -s ../../.. d/deep; mkfifo fifo; "
       f"cat {bob_host}/secret.txt 2>/dev/null && echo SAW_BOB; ls -a")
r = alice.post(f"/v1/sessions/{A}/run", json={"cmd": cmd})
j = as_json(r)
ok(r.status_code == 200 and "bobdir" in j.get("stdout", "") and "SAW_BOB" not in j.get("stdout", ""),
   "code in the session makes symlinks out (and cannot read bob's host path itself)", j)

tree = alice.get(f"/v1/sessions/{A}/files").json()
types = {e["path"]: e["type"] for e in tree}
ok(all(types.get(p) == "symlink" for p in ("pw", "etcdir", "bobdir", "bobfile", "up", "rootdir")),
   "the tree shows the links as symlinks", types)
ok(not any(p.startswith(("bobdir/", "etcdir/", "up/", "rootdir/", "d/deep/")) for p in types),
   "and does not descend through them", sorted(types))

# Every trick on every /v1 file route. Raw paths: nothing normalised on the way.
tricks = ["../a.txt", "..", "%2e%2e/a.txt", "%2E%2E%2Fa.txt", "..%2fetc%2fpasswd", "a%2f..%2f..%2fx",
          "/etc/passwd", "%2Fetc%2Fpasswd", "a.txt%00.png", "%00", "./a.txt", "d/./x", "d//x", ".", "%2e",
          "pw", "etcdir/passwd", "bobdir/secret.txt", "bobfile", "up/" + A + "/files/a.txt",
          "rootdir/etc/passwd", "d/deep/etc/passwd", "up", "fifo"]
F = f"/v1/sessions/{A}/files/"
for t in tricks:
    s, text = raw("GET", F + t)
    safe = s in (400, 404, 409) and envelope(text) and "root:x:0:0" not in text and "bob secret" not in text
    ok(safe, f"GET files/{t}: {s}, an error envelope, nothing from outside", text[:200])
for t in tricks:
    s, text = raw("PUT", F + t, body=MARK, ctype="application/octet-stream")
    # Replacing a link in the session by a file is fine (it is not followed); writing through
    # one, or anywhere outside, is not.
    good = (s in (400, 404, 409) and envelope(text)) or (s in (200, 201) and t in ("pw", "bobfile", "up", "fifo"))
    ok(good, f"PUT files/{t}: {s}", text[:200])
for t in tricks:
    s, text = raw("DELETE", F + t)
    good = (s in (400, 404, 409) and envelope(text)) or (s == 204 and t in ("pw", "bobfile", "up", "fifo"))
    ok(good, f"DELETE files/{t}: {s}", text[:200])

# move, both ends, with JSON paths (no URL decoding: these are the literal names).
json_tricks = ["../a.txt", "/etc/passwd", "a.txt\u0000x", "etcdir/passwd", "bobdir/secret.txt",
               "bobdir/planted", "rootdir/tmp/x", "d/deep/tmp/x", "", ".", "d/../../x"]
alice.put(f"/v1/sessions/{A}/files/m.txt", content=MARK.encode())
for t in json_tricks:
    r1 = alice.post(f"/v1/sessions/{A}/move", json={"from": t, "to": "stolen.txt"})
    r2 = alice.post(f"/v1/sessions/{A}/move", json={"from": "m.txt", "to": t, "overwrite": True})
    ok(r1.status_code in (400, 404, 409) and is_envelope(r1) and r2.status_code in (400, 404, 409) and is_envelope(r2),
       f"move from/to {t!r}: {r1.status_code}/{r2.status_code}", (r1.text[:150], r2.text[:150]))

# Seed file routes with the same literal names.
sid = "seedtricks-" + A[:8]
alice.post("/write_file", json={"id": sid, "rel_path": "ok.txt", "content": "x"})
r = alice.post("/run", json={"id": sid, "cmd": f"ln -s /etc/passwd pw; ln -s /etc etcdir; ln -s {bob_host} bobdir; "
                                                f"ln -s / rootdir; mkdir d; ln -s ../../.. d/deep"})
ok(r.status_code == 200 and as_json(r).get("status") == "ok", "code in a seed session makes the same links", r.text[:200])
for t in json_tricks:
    alice.post("/write_file", json={"id": sid, "rel_path": "ok.txt", "content": "x"})
    rs = [alice.post("/write_file", json={"id": sid, "rel_path": t, "content": MARK}),
          alice.get("/read_file", params={"id": sid, "rel_path": t}),
          alice.post("/delete_file", json={"id": sid, "rel_path": t}),
          alice.post("/rename_file", json={"id": sid, "old_path": "ok.txt", "new_path": t}),
          alice.post("/rename_file", json={"id": sid, "old_path": t, "new_path": "ok2.txt"})]
    codes = [x.status_code for x in rs]
    ok(all(c in (400, 404, 409) and is_envelope(x) for c, x in zip(codes, rs)) and
       all("root:x:0:0" not in x.text for x in rs),
       f"seed write/read/delete/rename with {t!r}: {codes}", [x.text[:120] for x in rs])
# Names of uploads in flight are reserved: a client can neither read, plant, delete nor move one,
# on any file route, however the name is spelled in the URL (400 malformed_path each time).
reserved = [".sbx-tmp-x", "d/.sbx-tmp-x", "%2Esbx-tmp-x", "d%2F.sbx-tmp-x"]
codes = []
for t in reserved:
    for method, body in (("GET", None), ("PUT", MARK), ("DELETE", None)):
        st, text = raw(method, F + t, body=body, ctype="application/octet-stream")
        codes.append((method, t, st, envelope(text) and '"malformed_path"' in text))
lit = [x.replace("%2E", ".").replace("%2F", "/") for x in reserved]
for t in lit:
    r1 = alice.post(f"/v1/sessions/{A}/move", json={"from": "m.txt", "to": t})
    r2 = alice.post("/write_file", json={"id": sid, "rel_path": t, "content": MARK})
    r3 = alice.get("/read_file", params={"id": sid, "rel_path": t})
    codes += [("move", t, r1.status_code, '"malformed_path"' in r1.text),
              ("write_file", t, r2.status_code, '"malformed_path"' in r2.text),
              ("read_file", t, r3.status_code, '"malformed_path"' in r3.text)]
ok(all(st == 400 and good for _, _, st, good in codes),
   f"reserved upload names on GET/PUT/DELETE, move and the seed routes: all 400 malformed_path "
   f"({len(codes)} requests)", [c for c in codes if c[2] != 400 or not c[3]])

# Reading straight through the links.
for t in ("pw", "bobdir/secret.txt"):
    r = alice.get("/read_file", params={"id": sid, "rel_path": t})
    ok(r.status_code in (400, 404, 409) and "root:x:0:0" not in r.text and "bob secret" not in r.text,
       f"seed read_file {t} through a link: {r.status_code}", r.text[:200])

# Fork copies links as links; the copy reads nothing through them.
r = alice.post(f"/v1/sessions/{A}/fork", json={})
ok(r.status_code == 201, "fork of the trapped session", r.text[:200])
Fk = r.json().get("id", "x") if r.status_code == 201 else "x"
for t in ("etcdir/passwd", "bobdir/secret.txt", "rootdir/etc/passwd"):
    s, text = raw("GET", f"/v1/sessions/{Fk}/files/{t}")
    ok(s in (400, 404, 409) and "root:x:0:0" not in text and "bob secret" not in text,
       f"GET fork/files/{t}: {s}", text[:200])

# Session ids with tricks: never another directory.
for idt in ("..", "%2e%2e", "..%2Fu-bob%2F" + B, "%2E%2E%2F%2E%2E", "." , A + "%2F..", "u-bob%2F" + B):
    s, text = raw("GET", f"/v1/sessions/{idt}/files/secret.txt")
    ok(s in (400, 404) and envelope(text) and "bob secret" not in text, f"session id {idt}: {s}", text[:200])

# Afterwards: bob's session is exactly as it was; the mark landed nowhere outside alice's sessions.
r = bob.get(f"/v1/sessions/{B}/files")
is_(sorted(e["path"] for e in r.json()), ["secret.txt"], "bob's tree is unchanged")
r = bob.get(f"/v1/sessions/{B}/files/secret.txt")
ok(r.content == b"bob secret", "bob's secret is unchanged")
stray = []
for base, dirs, files in os.walk(STATE):
    for f in files:
        p = os.path.join(base, f)
        if "/u-alice/" in p or os.path.islink(p):
            continue
        try:
            with open(p, "rb") as h:
                if MARK.encode() in h.read(1 << 20):
                    stray.append(p)
        except OSError:
            pass
ok(not stray, "the written mark is nowhere in the state dir outside alice's sessions", stray)
ok(open("/etc/passwd").read() == PASSWD, "/etc/passwd is unchanged")


def planted(p):
    """p holds this run's mark (a file of the same name made by anyone else is not ours)."""
    try:
        with open(p, "rb") as h:
            return MARK.encode() in h.read(1 << 20)
    except OSError:
        return False


ok(not planted("/etc/" + "x") and not planted("/tmp/x"), "nothing planted in /etc or /tmp")
done()
