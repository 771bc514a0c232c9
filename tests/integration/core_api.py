"""core_api.py: the core routes through the real stack (nginx + pool + broker) over HTTPS.
Run by core_api.t under tests/lib/harness.sh --exec, which exports SBX_URL and the tokens."""
import base64
import os
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok  # noqa: E402

URL = os.environ["SBX_URL"]
H = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"]}
c = httpx.Client(base_url=URL, verify=False, timeout=60, headers=H)


def post(path, body, **kw):
    return c.post(path, json=body, **kw)


def ex(body):
    r = post("/v1/execute", body)
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, {"raw": r.text}


def err(r):
    try:
        return r.json().get("error", {})
    except ValueError:
        return {}


RESULT_KEYS = {"status", "exit_code", "signal", "stdout", "stderr", "stdout_truncated",
               "stderr_truncated", "wall_ms", "cpu_ms", "memory_kb"}

# ---- info routes ----
r = c.get("/", headers={"Accept": "application/json"})
ok(r.status_code == 200 and r.json() == "ping", "GET / is the JSON ping")
r = c.get("/v1/health", headers={"Authorization": ""})
j = r.json()
ok(r.status_code == 200 and j["status"] == "ok" and j["sandbox"]["usable"] is True
   and "cgroup_version" not in j["sandbox"], "health without a token: ok, sandbox usable", j)
r = c.get("/v1/languages")
langs = {l["id"]: l for l in r.json()}
is_(sorted(langs), ["bash", "c", "cpp", "node", "python"], "five languages")
ok(langs["python"]["version"].startswith("3.") and langs["c"]["compiled"] and "js" in langs["node"]["aliases"],
   "versions, compiled flag, aliases", langs)
r = c.get("/v1/tools")
ok(r.status_code == 200 and [t["function"]["name"] for t in r.json()["openai"]] ==
   ["create_session", "execute", "run_command", "list_files", "read_file", "write_file", "evaluate", "python"]
   and all("input_schema" in t for t in r.json()["anthropic"]), "tool schemas")
r = c.get("/v1/openapi.json")
ok(r.status_code == 200 and r.json()["openapi"].startswith("3.") and "/v1/execute" in r.json()["paths"], "OpenAPI document")
r = c.get("/v1/languages", headers={"Authorization": ""})
ok(r.status_code == 401 and err(r).get("code") and "bearer" in r.headers.get("www-authenticate", "").lower(),
   "no token: 401 envelope with WWW-Authenticate")

# ---- every language ----
progs = {
    "python": "import sys\nprint('py', sys.argv[1:], sys.stdin.read())",
    "bash": "echo bash \"$@\" $(cat)",
    "node": "const fs=require('fs');console.log('node', process.argv.slice(2).join(','), fs.readFileSync(0,'utf8'))",
    "c": "#include <stdio.h>\nint main(int c,char**v){char b[64]={0};fgets(b,64,stdin);printf(\"c %s %s\\n\",v[1],b);return 0;}",
    "cpp": "#include <iostream>\n#include <string>\nint main(int c,char**v){std::string s;std::getline(std::cin,s);std::cout<<\"cpp \"<<v[1]<<\" \"<<s<<std::endl;}",
}
for lang, code in progs.items():
    st, j = ex({"language": lang, "code": code, "stdin": "IN", "args": ["A"]})
    ok(st == 200 and j.get("status") == "ok" and j.get("exit_code") == 0 and "A" in j.get("stdout", "")
       and "IN" in j.get("stdout", "") and RESULT_KEYS <= set(j), f"{lang}: runs with args and stdin", j)
    if lang in ("c", "cpp"):
        ok(j.get("compile", {}).get("status") == "ok", f"{lang}: compile result reported")

st, j = ex({"language": "c", "code": "int main( { return 0; }"})
ok(st == 200 and j.get("stage") == "compile" and j["compile"]["status"] == "error"
   and "error" in j["compile"]["stderr"] and j["status"] == "error", "c compile error: compile result, no run", j)
st, j = ex({"language": "py", "files": [{"path": "main.py", "content": "import helper\nhelper.hi()"},
                                         {"path": "helper.py", "content": "def hi(): print('from helper')"}]})
ok(st == 200 and j.get("stdout") == "from helper\n", "files[]: entry plus a module", j)

# ---- program outcomes ----
st, j = ex({"language": "python", "code": "import sys; print('x'); sys.exit(3)"})
ok(j.get("status") == "error" and j.get("exit_code") == 3 and j.get("stdout") == "x\n", "non-zero exit: error", j)
st, j = ex({"language": "c", "code": "int main(){volatile int*p=0;return *p;}"})
ok(j.get("status") == "signal" and j.get("signal") == "SIGSEGV" and j.get("exit_code") is None, "segfault: signal SIGSEGV", j)
# The wall limit leaves the interpreter time to start and print on a slow machine; the sleep
# is far past it.
st, j = ex({"language": "python", "code": "import time\nprint('before', flush=True)\ntime.sleep(30)",
            "limits": {"wall_ms": 5000}})
ok(st == 200 and j.get("status") == "timeout" and j.get("limit") == "wall" and j.get("stdout") == "before\n",
   "wall timeout: limit named, partial output kept", j)
st, j = ex({"language": "python", "code": "while True: pass", "limits": {"cpu_ms": 500, "wall_ms": 30000}})
ok(j.get("status") == "timeout" and j.get("limit") == "cpu", "cpu timeout", j)
st, j = ex({"language": "python", "code": "b = bytearray(512 << 20)\nprint(len(b))", "limits": {"memory_mb": 64}})
ok(j.get("status") == "memory_limit", "memory limit", j)
st, j = ex({"language": "python", "code": "print('y' * 100000)", "limits": {"output_bytes": 1000}})
ok(j.get("stdout_truncated") is True and len(j.get("stdout", "")) == 1000, "output capped and flagged", len(j.get("stdout", "")))
st, j = ex({"language": "python", "code": "import sys; sys.stdout.buffer.write(b'a\\xffb\\n')"})
is_(j.get("stdout"), "a\ufffdb\n", "invalid UTF-8 becomes U+FFFD")
st, j = ex({"language": "python", "code": "import sys; sys.stdout.buffer.write(b'a\\xffb\\n')", "output_encoding": "base64"})
is_(base64.b64decode(j.get("stdout", "")), b"a\xffb\n", "output_encoding base64 returns the raw bytes")
st, j = ex({"language": "python", "code": "import urllib.request\nurllib.request.urlopen('http://1.1.1.1', timeout=2)"})
ok(j.get("status") == "error" and "Error" in j.get("stderr", ""), "no network inside")
st, j = ex({"language": "bash", "code": "ls /work; echo hi > f"})
st2, j2 = ex({"language": "bash", "code": "ls /work"})
is_(j2.get("stdout"), "main.sh\n", "stateless: nothing survives the call")

# ---- request errors ----
def expect(body, status, code, field=None, desc=""):
    r = c.post("/v1/execute", content=body if isinstance(body, (bytes, str)) else None,
               json=None if isinstance(body, (bytes, str)) else body,
               headers={"Content-Type": "application/json"})
    e = err(r)
    ok(r.status_code == status and e.get("code") == code and (field is None or e.get("field") == field),
       f"{desc}: {status} {code}", f"{r.status_code} {r.text[:300]}")

expect("{\"language\":", 400, "invalid_json", desc="truncated JSON")
expect("{\"language\":\"python\",\"code\":\"1\"} []", 400, "invalid_json", desc="trailing garbage")
expect("[" * 100 + "]" * 100, 400, "invalid_json", desc="deep nesting")
expect({"language": "python", "code": "1", "stdinn": ""}, 400, "unknown_field", "stdinn", "unknown field")
expect({"language": "python", "code": 1}, 400, "invalid_type", "code", "wrong type")
expect({"language": "python", "code": "1", "limits": {"wall_ms": 10 ** 9}}, 400, "limit_too_high", "limits.wall_ms", "limit above maximum")
expect({"language": "brainfuck", "code": "+"}, 400, "unsupported_language", "language", "unknown language")
expect({"code": "1"}, 400, "missing_field", "language", "missing language")
r = c.post("/v1/execute", content=b"{\"language\":\"python\",\"code\":\"" + b"#" * (11 << 20) + b"\"}",
           headers={"Content-Type": "application/json"})
ok(r.status_code == 413 and err(r).get("code"), "body over the limit: 413 envelope", r.status_code)
r = c.get("/v1/nope")
ok(r.status_code == 404 and err(r).get("code") == "not_found", "unknown route: 404 envelope")
r = c.get("/v1/execute")
ok(r.status_code == 405 and "POST" in r.headers.get("allow", "") and err(r).get("code") == "method_not_allowed",
   "wrong method: 405 with Allow", dict(r.headers))

r = c.get("/v1/sessions/abc%00def")
ok(r.status_code == 400 and err(r).get("code") in ("malformed_path", "bad_request"), "encoded NUL in the path: 400 (nginx or the worker)", r.text)
r = post("/v1/sessions/a%2Fb/run", {"cmd": "true"})
ok(r.status_code == 404 and err(r).get("code"), "encoded '/' inside {id}: no route, 404", r.text)
r = c.head("/v1/health", headers={"Authorization": ""})
ok(r.status_code == 200 and r.content == b"", "HEAD /v1/health: 200, no body")

# ---- sessions: run, execute ----
r = post("/v1/sessions", {})
sid = r.json().get("id")
ok(r.status_code == 201 and sid, "session created")
r = post(f"/v1/sessions/{sid}/run", {"cmd": "echo hello > note.txt; pwd; cat", "stdin": "piped"})
j = r.json()
ok(r.status_code == 200 and j.get("stdout") == "/work\npiped" and j.get("status") == "ok", "session run: /bin/sh -c in /work", j)
r = post(f"/v1/sessions/{sid}/execute", {"language": "python", "code": "print(open('note.txt').read().strip())"})
ok(r.status_code == 200 and r.json().get("stdout") == "hello\n", "session execute sees the session's files", r.text)
r = post(f"/v1/sessions/{sid}/run", {"cmd": "ls"})
ok("main.py" in r.json().get("stdout", "") and "note.txt" in r.json().get("stdout", ""), "execute's files persist in the session")
for trick in ("..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "a/%2E%2E/%2E%2E/%2E%2E/etc/passwd"):
    r = c.get(f"/v1/sessions/{sid}/files/{trick}")
    ok(r.status_code in (400, 404) and err(r).get("code") and b"root:" not in r.content,
       f"encoded escape attempt {trick}: {r.status_code}, never the host's file")
r = post(f"/v1/sessions/{sid}/run", {"cmd": "true", "extra": 1})
ok(r.status_code == 400 and err(r).get("field") == "extra", "session run rejects unknown fields")
r = post(f"/v1/sessions/{sid}/run", {"cmd": "echo x"}, headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN2"]})
ok(r.status_code == 404, "another client's session: 404")
r = post("/v1/sessions/no-such-session/run", {"cmd": "true"})
ok(r.status_code == 404 and err(r).get("code"), "missing session: 404 envelope")

# ---- seed /run ----
r = post("/run", {"id": "core-seed-1", "cmd": "echo seeded; echo oops >&2"})
j = r.json()
ok(r.status_code == 200 and j.get("stdout") == "seeded\n" and j.get("stderr") == "oops\n" and j.get("id") == "core-seed-1"
   and RESULT_KEYS <= set(j), "seed /run: {stdout, stderr, id} plus the run result", j)
r = post("/run", {"id": "core-seed-1", "cmd": "sleep 30", "limits": {"wall_ms": 500}})
ok(r.json().get("status") == "timeout", "seed /run honours limits")
r = post("/run", {"id": "core-seed-1", "cmd": "true #" + "x" * (300 << 10)})
ok(r.status_code == 400 and err(r).get("field") == "cmd", "seed /run: a cmd too long for argv is 400, not 500", r.text[:200])
r = post("/run", {"id": ".", "cmd": "true"})
ok(r.status_code == 400, "seed /run: id '.' is 400", r.text)
r = post("/run", {"cmd": "true"})
ok(r.status_code == 400 and err(r).get("field") == "id", "seed /run: missing id")
done()
