"""mcp_raw.py: POST /mcp as raw JSON-RPC over HTTPS through the real stack: both protocol
generations (2025-11-25 initialize, 2026-07-28 server/discover with _meta and mirrored headers),
every tool, the error paths (header mismatch, bad arguments, unknown tool and method, batch,
malformed JSON, unsupported version, missing token, foreign Origin), isolation between clients,
and JSON Schema 2020-12 validation of every tool schema and of every structuredContent received.
Run by mcp_raw.t under tests/lib/harness.sh --exec."""
import base64
import json
import os
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok, skip_all  # noqa: E402

try:
    from jsonschema import Draft202012Validator
except ImportError:
    skip_all("python3-jsonschema is not installed (make deps)")

URL = os.environ["SBX_URL"]
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "mcp_raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def client(token):
    h = {"Accept": "application/json, text/event-stream"}
    if token:
        h["Authorization"] = "Bearer " + token
    return httpx.Client(base_url=URL, verify=False, timeout=120, headers=h)


alice = client(os.environ["SBX_TOKEN"])
bob = client(os.environ["SBX_TOKEN2"])
anon = client(None)
ids = iter(range(1, 10**6))


def post(body, headers=None, c=alice):
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    r = c.post("/mcp", content=raw, headers=headers or {},
               )
    try:
        d = r.json() if r.content else None
    except ValueError:
        d = {"raw": r.text}
    return r, d


def legacy(method, params=None, c=alice, version=LEGACY):
    body = {"jsonrpc": "2.0", "id": next(ids), "method": method}
    if params is not None:
        body["params"] = params
    h = {"MCP-Protocol-Version": version} if version else {}
    return post(body, h, c)


def modern(method, params=None, c=alice, headers=None):
    p = dict(params or {})
    p["_meta"] = META
    body = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": p}
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        h["Mcp-Name"] = p.get("name", "")
    h.update(headers or {})
    return post(body, h, c)


def err_code(d):
    return (d or {}).get("error", {}).get("code")


# ---- 2025-11-25: initialize, notifications, tools/list ----
r, d = legacy("initialize", {"protocolVersion": LEGACY, "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}, version=None)
res = (d or {}).get("result", {})
ok(r.status_code == 200 and res.get("protocolVersion") == LEGACY
   and "tools" in res.get("capabilities", {}) and res.get("serverInfo", {}).get("name") == "sbx",
   "2025-11-25 initialize: version, capabilities.tools, serverInfo", d)
ok("mcp-session-id" not in r.headers, "initialize: no Mcp-Session-Id issued (stateless)")
r, d = legacy("initialize", {"protocolVersion": "2024-01-01", "capabilities": {},
                             "clientInfo": {"name": "t", "version": "1"}}, version=None)
is_((d or {}).get("result", {}).get("protocolVersion"), LEGACY,
    "initialize with an unknown version: the server offers its latest legacy version")
r, d = post({"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"MCP-Protocol-Version": LEGACY})
ok(r.status_code == 202 and r.content == b"", "notifications/initialized: 202, no body",
   (r.status_code, r.content))
r, d = legacy("ping")
ok(r.status_code == 200 and d.get("result") == {}, "ping: empty result", d)
r, d = legacy("tools/list")
tools = {t["name"]: t for t in (d or {}).get("result", {}).get("tools", [])}
is_(sorted(tools), sorted(["create_session", "execute", "run_command", "list_files", "read_file",
                           "write_file", "evaluate", "python"]),
    "tools/list: the six tools of the contract, create_session and python")
ok("ttlMs" not in d.get("result", {}), "2025-11-25 tools/list: no cache hints")

# ---- tool schemas: valid JSON Schema 2020-12, annotations, descriptions ----
for name, t in sorted(tools.items()):
    try:
        Draft202012Validator.check_schema(t["inputSchema"])
        Draft202012Validator.check_schema(t["outputSchema"])
        good = t["inputSchema"].get("type") == "object" and \
            t["outputSchema"].get("type") == "object"
    except Exception as e:  # noqa: BLE001
        good = False
        print("# " + str(e).splitlines()[0])
    ok(good, f"{name}: inputSchema and outputSchema are valid 2020-12 object schemas")
    a = t.get("annotations", {})
    ok(all(isinstance(a.get(k), bool) for k in ("readOnlyHint", "destructiveHint",
                                                   "idempotentHint"))
       and a.get("openWorldHint") is False and len(t.get("description", "")) > 80,
       f"{name}: annotations and a description", t.get("annotations"))
ok("python" in tools["execute"]["description"] and "@LANGS" not in
   tools["execute"]["description"], "execute's description lists the languages")
ok(tools["list_files"]["annotations"]["readOnlyHint"] is True and
   tools["run_command"]["annotations"]["destructiveHint"] is True, "read-only/destructive hints")
validators = {n: Draft202012Validator(t["outputSchema"]) for n, t in tools.items()}


def call(name, args, era="legacy", c=alice):
    p = {"name": name, "arguments": args}
    return legacy("tools/call", p, c) if era == "legacy" else modern("tools/call", p, c)


def structured(name, r, d, desc):
    """The result of a tools/call; checks structuredContent against the outputSchema and the text
    block against it."""
    res = (d or {}).get("result") or {}
    sc = res.get("structuredContent")
    errs = [e.message for e in validators[name].iter_errors(sc)] if sc is not None else ["none"]
    text = [b for b in res.get("content", []) if b.get("type") == "text"]
    ok(r.status_code == 200 and not errs and text and json.loads(text[0]["text"]) == sc,
       desc + ": structuredContent matches the outputSchema, text block is its JSON",
       errs or d)
    return res


# ---- every tool, 2025-11-25 ----
r, d = call("execute", {"language": "python", "code": "print(6*7)"})
res = structured("execute", r, d, "execute python")
ok(res.get("isError") is False and res["structuredContent"]["stdout"] == "42\n",
   "execute: stdout, isError false", res)
r, d = call("execute", {"language": "c", "code": "int main(){return 3;}"})
res = structured("execute", r, d, "execute c exit 3")
ok(res.get("isError") is True and res["structuredContent"]["exit_code"] == 3,
   "a failing program is a normal result with isError true", res)

# python: state kept across calls through the returned ids; a plot comes back as image content
r, d = call("python", {"code": "x = 20\nx + 1"})
res = structured("python", r, d, "python without ids")
sc = res.get("structuredContent") or {}
psid, pcid = sc.get("session_id", ""), sc.get("context_id", "")
ok(res.get("isError") is False and psid and pcid and
   any(x.get("is_main_result") and x.get("text") == "21" for x in sc.get("results", [])),
   "python: the last expression's value, session_id and context_id returned", res)
r, d = call("python", {"session_id": psid, "context_id": pcid, "code": "x * 2"})
res = structured("python", r, d, "python with ids")
ok(any(x.get("text") == "40" for x in (res.get("structuredContent") or {}).get("results", [])),
   "python: the variable of the previous call is still there", res)
r, d = call("python", {"session_id": psid, "context_id": pcid,
                       "code": "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])",
                       "limits": {"wall_ms": 30000}})
res = structured("python", r, d, "python plot")
imgs = [b for b in res.get("content", []) if b.get("type") == "image"]
ok(imgs and imgs[0].get("mimeType") == "image/png" and
   base64.b64decode(imgs[0].get("data", "")).startswith(b"\x89PNG\r\n\x1a\n"),
   "python: a matplotlib figure comes back as PNG image content",
   [b.get("type") for b in res.get("content", [])] or d)

r, d = call("write_file", {"path": "src/hello.py", "content": "print('hi from file')\n"})
res = structured("write_file", r, d, "write_file without session_id")
sid = (res.get("structuredContent") or {}).get("session_id", "")
ok(sid and res["structuredContent"]["created"] is True and res["structuredContent"]["size"] == 22,
   "write_file creates a session and returns its id", res)
png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
r, d = call("write_file", {"session_id": sid, "path": "img.png",
                           "content": base64.b64encode(png).decode(), "encoding": "base64"})
structured("write_file", r, d, "write_file base64")
r, d = call("run_command", {"session_id": sid, "cmd": "python3 src/hello.py > out.txt; cat out.txt"})
res = structured("run_command", r, d, "run_command")
ok(res["structuredContent"]["stdout"] == "hi from file\n" and
   res["structuredContent"]["session_id"] == sid, "run_command runs in the session's files", res)
r, d = call("run_command", {"cmd": "echo new"})
res = structured("run_command", r, d, "run_command without session_id")
ok(res["structuredContent"].get("session_id") not in (None, sid), "run_command: new session", res)
r, d = call("list_files", {"session_id": sid})
res = structured("list_files", r, d, "list_files")
paths = {f["path"] for f in res["structuredContent"]["files"]}
ok({"src/hello.py", "out.txt", "img.png"} <= paths, "list_files sees the files", paths)
r, d = call("read_file", {"session_id": sid, "path": "out.txt"})
res = structured("read_file", r, d, "read_file text")
ok(res["structuredContent"]["content"] == "hi from file\n" and
   res["structuredContent"]["encoding"] == "utf8", "read_file text content", res)
r, d = call("read_file", {"session_id": sid, "path": "img.png"})
res = structured("read_file", r, d, "read_file binary")
imgs = [b for b in res.get("content", []) if b.get("type") == "image"]
ok(res["structuredContent"]["encoding"] == "base64" and
   base64.b64decode(res["structuredContent"]["content"]) == png and imgs and
   imgs[0]["mimeType"] == "image/png", "read_file: binary as base64, a PNG as image content",
   res)
r, d = call("execute", {"session_id": sid, "language": "python",
                        "code": "print(open('out.txt').read().strip())"})
res = structured("execute", r, d, "execute in a session")
ok(res["structuredContent"]["stdout"] == "hi from file\n", "execute sees the session", res)
r, d = call("evaluate", {"language": "python", "code": "def add(a, b):\n    return a + b\n",
                         "entry_point": "add",
                         "io_cases": [{"input": "a=1, b=2", "output": "3"}]})
res = structured("evaluate", r, d, "evaluate passing")
ok(res.get("isError") is False and res["structuredContent"]["passed"] is True, "evaluate", res)
r, d = call("evaluate", {"language": "python", "code": "import sys\nprint(int(sys.stdin.read())+1)",
                         "cases": [{"stdin": "1", "expected_stdout": "3"}]})
res = structured("evaluate", r, d, "evaluate failing")
ok(res.get("isError") is True and res["structuredContent"]["passed"] is False,
   "evaluate: a failed case gives isError", res)

# ---- bad arguments, unknown tool ----
r, d = call("execute", {"language": "python"})
ok(err_code(d) == -32602 and "code" in d["error"]["message"], "missing argument: -32602", d)
r, d = call("execute", {"language": "python", "code": "1", "bogus": 1})
is_(err_code(d), -32602, "unknown argument: -32602")
r, d = call("execute", {"language": "cobol-77", "code": "1"})
ok(err_code(d) == -32602 and d["error"].get("data", {}).get("code") == "unsupported_language",
   "a value the API rejects: -32602 with the API's error as data", d)
r, d = call("execute", {"language": "python", "code": 5})
is_(err_code(d), -32602, "wrong type: -32602")
r, d = call("write_file", {"session_id": sid, "path": "x", "content": "!!", "encoding": "base64"})
is_(err_code(d), -32602, "write_file: bad base64 is -32602")
r, d = call("read_file", {"session_id": sid, "path": "../etc/passwd"})
is_(err_code(d), -32602, "read_file: a path outside the rules is -32602")
r, d = call("no_such_tool", {})
ok(err_code(d) == -32602 and "no_such_tool" in d["error"]["message"], "unknown tool: -32602", d)
r, d = legacy("tools/call", {"arguments": {}})
is_(err_code(d), -32602, "tools/call without name: -32602")
r, d = call("read_file", {"session_id": sid, "path": "missing.txt"})
res = (d or {}).get("result", {})
ok(res.get("isError") is True and "not_found" in res["content"][0]["text"],
   "a missing file is a tool error result the model can read", d)

# ---- isolation: bob cannot reach alice's session ----
for name, args in (("read_file", {"session_id": sid, "path": "out.txt"}),
                   ("list_files", {"session_id": sid}),
                   ("run_command", {"session_id": sid, "cmd": "cat out.txt"}),
                   ("write_file", {"session_id": sid, "path": "pwn", "content": "x"})):
    r, d = call(name, args, c=bob)
    res = (d or {}).get("result", {})
    ok(res.get("isError") is True and "session_not_found" in res["content"][0]["text"] and
       "hi from file" not in json.dumps(d), f"bob's {name} on alice's session: session_not_found",
       d)
r, d = call("list_files", {"session_id": sid})
ok("pwn" not in {f["path"] for f in d["result"]["structuredContent"]["files"]},
   "alice's session unchanged by bob")

# ---- 2026-07-28 ----
r, d = modern("server/discover")
res = (d or {}).get("result", {})
ok(r.status_code == 200 and MODERN in res.get("supportedVersions", []) and
   "tools" in res.get("capabilities", {}) and res.get("resultType") == "complete" and
   res.get("_meta", {}).get("io.modelcontextprotocol/serverInfo", {}).get("name") == "sbx" and
   isinstance(res.get("ttlMs"), int) and res.get("cacheScope") in ("public", "private"),
   "server/discover: versions, capabilities, serverInfo, cache hints", d)
r, d = modern("tools/list")
res = (d or {}).get("result", {})
ok(len(res.get("tools", [])) == 8 and isinstance(res.get("ttlMs"), int) and
   res.get("cacheScope") == "public" and res.get("resultType") == "complete",
   "2026-07-28 tools/list: ttlMs, cacheScope, resultType", {k: res.get(k) for k in
                                                              ("ttlMs", "cacheScope")})
r, d = call("execute", {"language": "python", "code": "print('modern')"}, era="modern")
res = structured("execute", r, d, "2026-07-28 tools/call")
ok(res.get("resultType") == "complete" and res["structuredContent"]["stdout"] == "modern\n",
   "2026-07-28 tools/call works", res)
r, d = modern("ping")
ok(r.status_code == 200 and d["result"].get("resultType") == "complete", "2026-07-28 ping", d)
r, d = modern("tools/call", {"name": "execute", "arguments": {"language": "python", "code": "1"}},
              headers={"Mcp-Name": "read_file"})
ok(r.status_code == 400 and err_code(d) == -32020, "Mcp-Name mismatch: 400 -32020", (r, d))
r, d = modern("tools/list", headers={"Mcp-Method": "tools/call"})
ok(r.status_code == 400 and err_code(d) == -32020, "Mcp-Method mismatch: 400 -32020", d)
r, d = modern("tools/list", headers={"MCP-Protocol-Version": LEGACY})
ok(r.status_code == 400 and err_code(d) == -32020, "MCP-Protocol-Version mismatch: -32020", d)
body = {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {"_meta": META}}
r, d = post(body, {"MCP-Protocol-Version": MODERN})
ok(r.status_code == 400 and err_code(d) == -32020, "missing Mcp-Method: -32020", d)
enc = "=?base64?" + base64.b64encode(b"execute").decode() + "?="
r, d = modern("tools/call", {"name": "execute", "arguments": {"language": "python",
                                                               "code": "print(2)"}},
              headers={"Mcp-Name": enc})
ok(r.status_code == 200 and d["result"]["structuredContent"]["stdout"] == "2\n",
   "a base64-encoded Mcp-Name is decoded before the comparison", d)
r, d = modern("resources/list")
ok(r.status_code == 404 and err_code(d) == -32601, "2026-07-28 unknown method: 404 -32601", d)
old = dict(META)
old["io.modelcontextprotocol/protocolVersion"] = "1900-01-01"
r, d = post({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": old}},
            {"MCP-Protocol-Version": "1900-01-01", "Mcp-Method": "tools/list"})
ok(r.status_code == 400 and err_code(d) == -32022 and
   MODERN in d["error"]["data"]["supported"] and d["error"]["data"]["requested"] == "1900-01-01",
   "unsupported version: 400 -32022 with the supported list", d)
r, d = legacy("tools/list", version="1900-01-01")
ok(r.status_code == 400 and err_code(d) == -32022, "unsupported version header (legacy): 400", d)
r, d = legacy("tools/list", version=MODERN)
ok(r.status_code == 400 and err_code(d) == -32020,
   "MCP-Protocol-Version 2026-07-28 without _meta: -32020", d)

# ---- JSON-RPC errors ----
r, d = legacy("no/such/method")
ok(err_code(d) == -32601 and d.get("id") is not None, "legacy unknown method: -32601", d)
r, d = post("{not json")
ok(r.status_code == 400 and err_code(d) == -32700 and "id" not in d, "malformed JSON: -32700", d)
r, d = post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
ok(r.status_code == 400 and err_code(d) == -32600, "batch array: 400 -32600", d)
r, d = post("42")
ok(r.status_code == 400 and err_code(d) == -32600, "a JSON scalar: -32600", d)
r, d = post({"jsonrpc": "1.0", "id": 1, "method": "ping"})
is_(err_code(d), -32600, "jsonrpc not 2.0: -32600")
r, d = post({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"})
is_(err_code(d), -32600, "an object id: -32600")
r, d = post({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]})
is_(err_code(d), -32602, "params not an object: -32602")
r, d = post({"jsonrpc": "2.0", "id": 1, "result": {}})
is_(r.status_code, 202, "a JSON-RPC response from the client: 202")

# ---- HTTP: token, Origin, methods ----
r = anon.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
ok(r.status_code == 401 and r.headers.get("www-authenticate", "").startswith("Bearer"),
   "no token: 401 with WWW-Authenticate", (r.status_code, dict(r.headers)))
r, d = post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Origin": "https://evil.example"})
ok(r.status_code == 403 and "error" in (d or {}), "a foreign Origin: 403 with a JSON-RPC error",
   (r.status_code, d))
host = URL.split("://", 1)[1].rstrip("/")
r, d = post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Origin": "https://" + host})
is_(r.status_code, 200, "the server's own Origin is allowed")
r, d = post({"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"Origin": "https://rebind.example:" + host.rsplit(":", 1)[1],
             "Host": "rebind.example:" + host.rsplit(":", 1)[1]})
is_(r.status_code, 403, "DNS rebinding (Origin equal to a foreign Host): 403")
r, d = post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"Origin": "null"})
is_(r.status_code, 403, "Origin null: 403")
r = alice.get("/mcp")
ok(r.status_code == 405 and "POST" in r.headers.get("allow", ""), "GET /mcp: 405 (no SSE stream)")
r = alice.delete("/mcp")
is_(r.status_code, 405, "DELETE /mcp: 405 (no session to end)")

done()
