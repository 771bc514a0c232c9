"""contract.py: the responses of the real stack validated against fcgi/openapi.json with
python3-jsonschema: representative requests of every route of the document, errors included;
each answer's status must be documented for its operation, and its JSON body must match the
schema documented for that status (404/405 answers of nginx or the router excepted: they are
answers of no operation), and its headers the headers documented for it (header_problems). Run by contract.t under tests/lib/harness.sh --exec."""
import json
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from sbx_http import call  # noqa: E402
from tap import done, ok, skip_all  # noqa: E402

import warnings  # noqa: E402

try:
    from jsonschema import Draft202012Validator, RefResolver
except ImportError as e:
    skip_all(f"python3-jsonschema is not installed (make deps): {e}")

warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver: Debian's jsonschema has no other
DOC = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "fcgi", "openapi.json")))
RESOLVER = RefResolver(base_uri="", referrer=DOC)
covered = set()
# CONTRACT_EXAMPLES=file: the first request and answer of each (operation, status) are written
# there, the raw material of the document's examples (tests/integration/contract_examples.py).
DUMP = {} if os.environ.get("CONTRACT_EXAMPLES") else None
# The headers the API itself sets: every name documented under some response's headers.
API_HEADERS = set()


def resolve(obj):
    while isinstance(obj, dict) and "$ref" in obj:
        node = DOC
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


def walk_headers(node):
    if isinstance(node, dict):
        if isinstance(node.get("headers"), dict) and "description" in node:
            API_HEADERS.update(k.lower() for k in node["headers"])
        for v in node.values():
            walk_headers(v)
    elif isinstance(node, list):
        for v in node:
            walk_headers(v)


walk_headers(DOC)


def header_problems(resp, h):
    """A response's headers against its documented ones: each required one present, each present
    one valid against its schema (an integer schema takes the decimal text), and no header the API
    sets (documented for some response) sent where it is not documented."""
    problems = []
    documented = {k.lower(): resolve(v) for k, v in resp.get("headers", {}).items()}
    for name, hd in documented.items():
        if name not in h:
            if hd.get("required"):
                problems.append(f"header {name} is required and absent")
            continue
        schema, value = hd.get("schema", {}), h[name]
        if schema.get("type") == "integer":
            try:
                value = int(value)
            except ValueError:
                problems.append(f"header {name}: {value!r} is not an integer")
                continue
        v = Draft202012Validator(schema, resolver=RESOLVER)
        problems += [f"header {name}: {e.message[:200]}" for e in v.iter_errors(value)][:2]
    problems += [f"header {name} is sent but not documented for this status"
                 for name in sorted(set(h) & API_HEADERS - set(documented))]
    return problems


def check(method, template, path, body=None, headers=None, token=True, want=None, desc=""):
    kw = {} if token else {"token": None}
    st, h, d = call(method, path, body, headers=headers, **kw)
    if DUMP is not None and not isinstance(d, bytes):
        DUMP.setdefault(f"{method} {template} {st}", {"request": body if isinstance(body, (dict, list)) else
                        (body.decode() if isinstance(body, bytes) else None), "response": d})
    op = DOC["paths"][template][method.lower()]
    covered.add((method, template))
    resp = op["responses"].get(str(st))
    problems = []
    if want is not None and st != want:
        problems.append(f"status {st}, wanted {want}")
    if resp is None:
        problems.append(f"status {st} is not documented for {method} {template}")
    else:
        resp = resolve(resp)
        schema = resp.get("content", {}).get("application/json", {}).get("schema")
        if schema is not None and st != 204 and isinstance(d, (dict, list, str)):
            # The document's own "#/components/..." references, resolved in the document.
            v = Draft202012Validator(schema, resolver=RESOLVER)
            problems += [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
                         for e in v.iter_errors(d)][:3]
        problems += header_problems(resp, h)
    ok(not problems, f"{method} {path} -> {st}: {desc or 'matches the document'}", problems)
    return st, h, d


check("GET", "/", "/", want=200)
check("GET", "/v1/health", "/v1/health", token=False, want=200)
check("GET", "/v1/metrics", "/v1/metrics", want=403, desc="not an operator")
check("GET", "/v1/languages", "/v1/languages", want=200)
check("GET", "/v1/languages", "/v1/languages", token=False, want=401, desc="no token")
for q in ("", "?format=openai", "?format=openai-responses", "?format=anthropic", "?format=x"):
    check("GET", "/v1/tools", "/v1/tools" + q)
check("POST", "/v1/tools/{name}", "/v1/tools/execute", {"language": "python", "code": "print(1)"},
      want=200)
check("POST", "/v1/tools/{name}", "/v1/tools/no_such_tool", {}, want=404, desc="an unknown tool")
check("POST", "/v1/tools/{name}", "/v1/tools/execute", {"language": "python"}, want=400,
      desc="arguments its schema refuses")
check("GET", "/v1/openapi.json", "/v1/openapi.json", want=200)
check("POST", "/v1/execute", "/v1/execute", {"language": "python", "code": "print(1)"}, want=200)
check("POST", "/v1/execute", "/v1/execute", {"language": "c", "code": "int main(){return 2;}"},
      want=200, desc="a compiled language")
check("POST", "/v1/execute", "/v1/execute", {"language": "c", "code": "int main(){return x;}"},
      want=200, desc="a compile error")
check("POST", "/v1/execute", "/v1/execute", {"language": "python", "code": "import time\ntime.sleep(3)",
                                             "limits": {"wall_ms": 300}}, want=200, desc="a timeout")
check("POST", "/v1/execute", "/v1/execute", {"language": "python", "cod": "x"}, want=400)
check("POST", "/v1/evaluate", "/v1/evaluate", {"language": "python", "code": "def f(a): return a",
      "entry_point": "f", "io_cases": [{"input": "1", "output": "1"}, {"input": "2", "output": "3"}]},
      want=200, desc="io_cases")
check("POST", "/v1/evaluate", "/v1/evaluate", {"language": "python", "code": "print(input())",
      "cases": [{"stdin": "a", "expected_stdout": "a\n"}]}, want=200, desc="cases")
check("POST", "/v1/evaluate", "/v1/evaluate", {"language": "c", "code": "int main(){return x;}",
      "cases": [{"stdin": "", "expected_stdout": ""}]}, want=200, desc="a compile error")
check("POST", "/v1/evaluate", "/v1/evaluate", {"language": "python", "code": "x"}, want=400)
st, _, s = check("POST", "/v1/sessions", "/v1/sessions", want=201)
sid = s.get("id", "none")
check("POST", "/v1/sessions", "/v1/sessions", {"x": 1}, want=400)
key = {"Idempotency-Key": uuid.uuid4().hex}
st, _, k1 = check("POST", "/v1/sessions", "/v1/sessions", headers=key, want=201)
st, h, k2 = check("POST", "/v1/sessions", "/v1/sessions", headers=key, want=201, desc="a replay")
ok(h.get("idempotent-replayed") == "true" and k1 == k2, "... which says Idempotent-Replayed", h)
check("DELETE", "/v1/sessions/{id}", f"/v1/sessions/{k1.get('id', 'x')}", want=204)
check("GET", "/v1/sessions", "/v1/sessions", want=200)
check("GET", "/v1/sessions/{id}", f"/v1/sessions/{sid}", want=200)
check("GET", "/v1/sessions/{id}", "/v1/sessions/nosuch", want=404)
check("PUT", "/v1/sessions/{id}/files/{path}", f"/v1/sessions/{sid}/files/a/b.txt",
      b"hello\n", want=201)
check("PUT", "/v1/sessions/{id}/files/{path}", f"/v1/sessions/{sid}/files/a/b.txt",
      b"hello again\n", want=200, desc="a replace")
check("GET", "/v1/sessions/{id}/files", f"/v1/sessions/{sid}/files", want=200)
check("GET", "/v1/sessions/{id}/files/{path}", f"/v1/sessions/{sid}/files/nope", want=404)
check("POST", "/v1/sessions/{id}/move", f"/v1/sessions/{sid}/move", {"from": "a/b.txt", "to": "c.txt"},
      want=200)
check("POST", "/v1/sessions/{id}/run", f"/v1/sessions/{sid}/run", {"cmd": "cat c.txt; exit 3"},
      want=200)
check("POST", "/v1/sessions/{id}/execute", f"/v1/sessions/{sid}/execute",
      {"language": "python", "code": "print(open('c.txt').read())"}, want=200)
check("POST", "/v1/sessions/{id}/evaluate", f"/v1/sessions/{sid}/evaluate",
      {"language": "python", "code": "print(1)", "cases": [{"expected_stdout": "2\n"}]}, want=200)
st, _, f = check("POST", "/v1/sessions/{id}/fork", f"/v1/sessions/{sid}/fork", want=201)
check("DELETE", "/v1/sessions/{id}/files/{path}", f"/v1/sessions/{sid}/files/c.txt", want=204)
check("DELETE", "/v1/sessions/{id}", f"/v1/sessions/{f.get('id', 'x')}", want=204)
check("DELETE", "/v1/sessions/{id}", f"/v1/sessions/{sid}", want=204)
seed = str(uuid.uuid4())
check("POST", "/write_file", "/write_file", {"id": seed, "rel_path": "x.py", "content": "print(5)"},
      want=200)
check("GET", "/read_file", f"/read_file?id={seed}&rel_path=x.py", want=200)
check("POST", "/rename_file", "/rename_file", {"id": seed, "old_path": "x.py", "new_path": "y.py"},
      want=200)
check("POST", "/run", "/run", {"id": seed, "cmd": "python y.py"}, want=200)
check("POST", "/fork_session", "/fork_session", {"id": seed})
check("POST", "/evaluate_code", "/evaluate_code", {"id": seed, "code": "def add(a, b): return a + b",
      "entry_point": "add", "io_cases": [{"input": "a=1, b=2", "output": "3"}]}, want=200)
check("POST", "/delete_file", "/delete_file", {"id": seed, "rel_path": "y.py"}, want=200)
check("POST", "/write_file", "/write_file", {"id": seed, "rel_path": "../x", "content": ""}, want=400)
check("POST", "/mcp", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
      headers={"MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"})
check("POST", "/api/v2/execute", "/api/v2/execute", {"language": "python", "files": [{"content": "print(1)"}]},
      want=200)
check("POST", "/api/v2/execute", "/api/v2/execute", {"language": "python", "version": "1",
      "files": [{"content": "print(1)"}]}, want=400)
check("GET", "/api/v2/runtimes", "/api/v2/runtimes", want=200)

# Contexts, runs with ids and packages (each operation once, errors included).
st, _, s2 = check("POST", "/v1/sessions", "/v1/sessions", want=201)
sid2 = s2.get("id", "none")
st, _, cx = check("POST", "/v1/sessions/{id}/contexts", f"/v1/sessions/{sid2}/contexts",
                  {"language": "python"}, want=201)
cid = cx.get("id", "none")
check("POST", "/v1/sessions/{id}/contexts", f"/v1/sessions/{sid2}/contexts", {"language": "x"},
      want=400, desc="an unknown language")
check("GET", "/v1/sessions/{id}/contexts", f"/v1/sessions/{sid2}/contexts", want=200)
check("POST", "/v1/sessions/{id}/contexts/{cid}/execute",
      f"/v1/sessions/{sid2}/contexts/{cid}/execute", {"code": "x = 41\nx + 1"}, want=200)
check("POST", "/v1/sessions/{id}/contexts/{cid}/execute",
      f"/v1/sessions/{sid2}/contexts/{cid}/execute", {"code": "1/0"}, want=200, desc="an error")
check("PUT", "/v1/sessions/{id}/contexts/{cid}/variables/{name}",
      f"/v1/sessions/{sid2}/contexts/{cid}/variables/y", {"a": [1, 2]}, want=200)
check("GET", "/v1/sessions/{id}/contexts/{cid}/variables",
      f"/v1/sessions/{sid2}/contexts/{cid}/variables", want=200)
check("POST", "/v1/sessions/{id}/contexts/{cid}/interrupt",
      f"/v1/sessions/{sid2}/contexts/{cid}/interrupt", {}, want=204)
check("POST", "/v1/sessions/{id}/contexts/{cid}/restart",
      f"/v1/sessions/{sid2}/contexts/{cid}/restart", {}, want=200)
check("POST", "/v1/sessions/{id}/repl", f"/v1/sessions/{sid2}/repl", {"code": "2 + 2"}, want=200)
check("DELETE", "/v1/sessions/{id}/contexts/{cid}", f"/v1/sessions/{sid2}/contexts/{cid}",
      want=204)
check("DELETE", "/v1/sessions/{id}/contexts/{cid}", f"/v1/sessions/{sid2}/contexts/{cid}",
      want=404, desc="gone")
st, _, bg = check("POST", "/v1/sessions/{id}/runs", f"/v1/sessions/{sid2}/runs",
                  {"cmd": "echo started; read x; sleep 30", "interactive": True}, want=202)
rid = bg.get("run_id", "none")
check("GET", "/v1/sessions/{id}/runs", f"/v1/sessions/{sid2}/runs", want=200)
check("GET", "/v1/sessions/{id}/runs/{run_id}", f"/v1/sessions/{sid2}/runs/{rid}", want=200)
check("GET", "/v1/sessions/{id}/runs/{run_id}/output",
      f"/v1/sessions/{sid2}/runs/{rid}/output?stream=stdout&cursor=0&wait_ms=2000", want=200)
check("POST", "/v1/runs/{run_id}/stdin", f"/v1/runs/{rid}/stdin?eof=1", b"42\n", want=200)
check("POST", "/v1/runs/{run_id}/signal", f"/v1/runs/{rid}/signal", {"signal": "SIGTERM"}, want=200)
check("POST", "/v1/runs/{run_id}/signal", f"/v1/runs/{'0' * 32}/signal", {"signal": "SIGINT"},
      want=404, desc="an unknown run")
check("POST", "/v1/runs/{run_id}/stdin", f"/v1/runs/{'0' * 32}/stdin", b"x\n", want=404,
      desc="an unknown run")
check("DELETE", "/v1/sessions/{id}/runs/{run_id}", f"/v1/sessions/{sid2}/runs/{rid}", want=204)
check("GET", "/v1/packages", "/v1/packages", want=200)
check("POST", "/v1/sessions/{id}/packages", f"/v1/sessions/{sid2}/packages",
      {"language": "python", "names": ["no-such-package"]}, want=400, desc="not in the set")
check("DELETE", "/v1/sessions/{id}", f"/v1/sessions/{sid2}", want=204)

# Request schemas are as strict as the server: a route that refuses unknown members says
# additionalProperties: false (the seed routes and MCP are lenient on purpose).
LENIENT = {"/write_file", "/delete_file", "/rename_file", "/fork_session", "/run", "/evaluate_code",
           "/mcp", "/v1/sessions/{id}/files/{path}",
           # a variable's value is any JSON; stdin is raw bytes
           "/v1/sessions/{id}/contexts/{cid}/variables/{name}", "/v1/runs/{run_id}/stdin",
           # a tool's arguments: each tool's own inputSchema (GET /v1/tools) is the strict one
           "/v1/tools/{name}"}
loose = []
for p, item in DOC["paths"].items():
    for m, op in item.items():
        rb = op.get("requestBody") if isinstance(op, dict) else None
        if not rb or p in LENIENT:
            continue
        for c in rb["content"].values():
            if resolve(c.get("schema", {})).get("additionalProperties") is not False:
                loose.append(f"{m.upper()} {p}")
ok(not loose, "request schemas of the strict routes have additionalProperties: false", loose)
st, _, d = call("POST", "/v1/evaluate", {"language": "python", "code": "print(1)",
                                         "cases": [{"expected_stdout": "1\n", "stdn": "x"}]})
ok(st == 400 and d.get("error", {}).get("code") == "unknown_field",
   "... and the server does refuse them (an unknown member of a case: 400 unknown_field)", d)

# The header checks themselves catch what they are for (fabricated answers).
UNAUTH = resolve({"$ref": "#/components/responses/Unauthorized"})
ok(header_problems(UNAUTH, {"x-request-id": "0" * 32, "www-authenticate": "Bearer"}) == [],
   "header check: a good 401 passes")
ok(any("required" in p for p in header_problems(UNAUTH, {"x-request-id": "0" * 32})),
   "header check: a 401 without WWW-Authenticate fails")
ok(any("x-request-id" in p for p in header_problems(UNAUTH, {"x-request-id": "zz",
                                                             "www-authenticate": "Bearer"})),
   "header check: a malformed X-Request-Id fails")
ok(any("not documented" in p for p in header_problems(UNAUTH, {
    "x-request-id": "0" * 32, "www-authenticate": "Bearer", "sbx-cursor": "1"})),
   "header check: an API header where it is not documented fails")

# Examples (filled from real answers by contract_examples.py): each valid against its schema, and
# every operation has them: its body, each parameter, and at least one answer (a shared error
# answer's counts).
bad_examples, missing = [], []


def example_problems(where, node):
    if "example" in node and "schema" in node:
        v = Draft202012Validator(node["schema"], resolver=RESOLVER)
        bad_examples.extend(f"{where}: {e.message[:160]}" for e in v.iter_errors(node["example"]))


for p, item in DOC["paths"].items():
    for m, op in item.items():
        if not isinstance(op, dict) or "responses" not in op:
            continue
        where = f"{m.upper()} {p}"
        for prm in op.get("parameters", []) + item.get("parameters", []):
            prm = resolve(prm)
            example_problems(f"{where} parameter {prm['name']}", prm)
            if "example" not in prm:
                missing.append(f"{where} parameter {prm['name']}")
        body = op.get("requestBody", {}).get("content", {})
        for ct, media in body.items():
            example_problems(f"{where} request {ct}", media)
        if body and not any("example" in media for media in body.values()):
            missing.append(f"{where} request body")
        answers = [resolve(r) for r in op["responses"].values()]
        for st, r in zip(op["responses"], answers):
            for ct, media in r.get("content", {}).items():
                example_problems(f"{where} {st} {ct}", media)
        if not any("example" in media for r in answers for media in r.get("content", {}).values()):
            missing.append(f"{where} answer")
ok(not bad_examples, "every example of the document is valid against its schema", bad_examples[:10])
ok(not missing, "every operation has examples of its inputs and of an answer", missing)

every = {(m.upper(), p) for p, item in DOC["paths"].items() for m in item
         if m.upper() in ("GET", "POST", "PUT", "DELETE", "PATCH")}
ok(every <= covered, "every operation of the document was exercised", sorted(every - covered))
if DUMP is not None:
    json.dump(DUMP, open(os.environ["CONTRACT_EXAMPLES"], "w"), indent=1)
done()
