"""contract_examples.py: fills the examples fcgi/openapi.json lacks from real answers.
  CONTRACT_EXAMPLES=/tmp/ex.json tests/integration/contract.t    # the first request and answer of
                                                                 # each (operation, status)
  python3 tests/integration/contract_examples.py /tmp/ex.json    # rewrites fcgi/openapi.json
It also documents X-Request-Id on any answer that lacks it (a new route's). An example already in
the document is never replaced; contract.t validates them all against their
schemas (so they cannot drift). Long answers (the tool lists, this document) are cut to a few
items; non-JSON bodies and the parameters have fixed examples here."""
import json
import os
import sys

DOC_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "fcgi", "openapi.json")
doc = json.load(open(DOC_PATH))
seen = json.load(open(sys.argv[1]))

# Inputs the contract test does not send as JSON, and answers it gets as bytes.
FIXED_REQUEST = {
    ("PUT", "/v1/sessions/{id}/files/{path}", "application/octet-stream"): "print('hello')\n",
    ("POST", "/v1/runs/{run_id}/stdin", "application/octet-stream"): "42\n",
    ("POST", "/v1/sessions", "application/json"): {},
}
FIXED_RESPONSE = {
    ("GET", "/v1/metrics", "text/plain"): "# TYPE sbx_runs_admitted_total counter\n"
                                          "sbx_runs_admitted_total{client=\"alice\"} 12\n",
    ("GET", "/v1/sessions/{id}/files/{path}", "application/octet-stream"): "print('hello')\n",
    ("GET", "/v1/sessions/{id}/runs/{run_id}/output", "application/octet-stream"): "started\n",
}
PARAMS = {"id": "3f0c2b9e-4d1a-4c55-9a57-2a1c6b0e8d11", "path": "src/main.py",
          "cid": "9a5153b317f182f76e91f6f6f5f117b5", "run_id": "7a43cd435639bcb4b63d6b8c54efdd99",
          "name": "y", "Idempotency-Key": "create-workspace-1", "format": "openai",
          "rel_path": "main.py", "output_encoding": "base64", "stream": "stdout", "cursor": 0,
          "wait_ms": 2000, "eof": 1, "MCP-Protocol-Version": "2025-11-25",
          "Mcp-Method": "tools/call", "Mcp-Name": "execute", "Origin": "https://sbx.example.org"}


def trim(method, path, body):
    """Long answers cut to what shows their shape."""
    if path == "/v1/openapi.json":
        return {"openapi": body["openapi"], "info": body["info"], "paths": {"/v1/health": {}}}
    if path == "/v1/tools" and isinstance(body, dict):
        return {k: (v[:1] if isinstance(v, list) else v) for k, v in body.items()}
    if path == "/mcp" and isinstance(body.get("result", {}).get("tools"), list):
        return {**body, "result": {**body["result"], "tools": body["result"]["tools"][:1]}}
    return body


def deref(node):
    while isinstance(node, dict) and "$ref" in node:
        target = doc
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


added = 0
for p in doc["paths"].values():
    for prm in p.get("parameters", []):
        prm = deref(prm)
        if "example" not in prm and prm["name"] in PARAMS:
            prm["example"] = PARAMS[prm["name"]]
            added += 1
for path, item in doc["paths"].items():
    for method, op in item.items():
        if not isinstance(op, dict) or "responses" not in op:
            continue
        M = method.upper()
        for prm in op.get("parameters", []):
            prm = deref(prm)
            if "example" not in prm and prm["name"] in PARAMS:
                prm["example"] = PARAMS[prm["name"]]
                added += 1
        got = {int(k.split()[-1]): v for k, v in seen.items()
               if k.rsplit(" ", 1)[0] == f"{M} {path}"}
        ok_first = sorted(got, key=lambda s: (s >= 300, s))
        for ct, media in op.get("requestBody", {}).get("content", {}).items():
            if "example" in media or "examples" in media:
                continue
            if (M, path, ct) in FIXED_REQUEST:
                media["example"] = FIXED_REQUEST[(M, path, ct)]
            elif ct == "application/json" and ok_first and got[ok_first[0]]["request"] is not None:
                media["example"] = got[ok_first[0]]["request"]
            else:
                continue
            added += 1
            break
        for st, resp in op["responses"].items():
            if "$ref" in resp:
                continue
            # Every answer carries nginx's X-Request-Id (contract.t requires it documented).
            resp.setdefault("headers", {}).setdefault(
                "X-Request-Id", {"$ref": "#/components/headers/X-Request-Id"})
            for ct, media in resp.get("content", {}).items():
                if "example" in media or "examples" in media:
                    continue
                if (M, path, ct) in FIXED_RESPONSE:
                    media["example"] = FIXED_RESPONSE[(M, path, ct)]
                elif ct == "application/json" and st.isdigit() and int(st) in got:
                    media["example"] = trim(M, path, got[int(st)]["response"])
                else:
                    continue
                added += 1
# The shared error answer: a real 404.
err = doc["components"]["responses"]["Error"]["content"]["application/json"]
if "example" not in err:
    for k, v in seen.items():
        if k.endswith(" 404") and isinstance(v["response"], dict) and "detail" not in v["response"]:
            err["example"] = v["response"]
            added += 1
            break
open(DOC_PATH, "w").write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
print(f"{added} examples added")
