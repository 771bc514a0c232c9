"""api_hygiene.py: what every body and every error of the API owes a client, through the real
stack: strict base64 in files[].content and stdin, duplicate JSON keys refused, the request id in
every error envelope (the worker's and nginx's own), 413s that name the limit in bytes.
Run by api_hygiene.t under tests/lib/harness.sh --exec (SBX_URL, SBX_TOKEN...)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from sbx_http import call, err  # noqa: E402
from tap import done, is_, ok  # noqa: E402


# ---- 1. strict base64 ----
st, _, d = call("POST", "/v1/execute", {"language": "python", "files": [
    {"path": "main.py", "content": "cHJpbnQoMSk=", "encoding": "base64"}]})
is_((st, d.get("stdout")), (200, "1\n"), "base64 files[].content runs: print(1)")
st, _, d = call("POST", "/v1/execute", {"language": "python", "files": [
    {"path": "main.py", "content": "cHJpbnQoMSk=!!!", "encoding": "base64"}]})
e = err(d)
ok(st == 400 and e.get("code") == "invalid_value" and e.get("field") == "files"
   and "files[0].content" in e.get("message", ""),
   "cHJpbnQoMSk=!!! (trailing garbage) is 400 naming files[0].content", d)
for bad, what in (("cHJpbnQoMSk==", "bad padding"), ("cHJp bnQoMSk=", "a space"),
                  ("cHJpbnQoMSk=\n", "a newline"), ("cHJp.nQoMSk=", "a foreign digit"),
                  ("cHJpbnQ+MS_=", "mixed alphabets")):
    st, _, d = call("POST", "/v1/execute", {"language": "python", "files": [
        {"path": "main.py", "content": bad, "encoding": "base64"}]})
    ok(st == 400 and err(d).get("field") == "files", f"base64 with {what} is 400", d)
st, _, d = call("POST", "/v1/execute", {"language": "python", "stdin": "aGVsbG8=",
                                        "stdin_encoding": "base64",
                                        "code": "print(input().upper())"})
is_((st, d.get("stdout")), (200, "HELLO\n"), "stdin_encoding base64: the program reads the bytes")
st, _, d = call("POST", "/v1/execute", {"language": "python", "stdin": "aGVsbG8=!",
                                        "stdin_encoding": "base64", "code": "print(1)"})
ok(st == 400 and err(d).get("field") == "stdin" and "not base64" in err(d).get("message", ""),
   "stdin with trailing garbage is 400 naming stdin", d)
st, _, d = call("POST", "/v1/execute", {"language": "python", "stdin": "x",
                                        "stdin_encoding": "rot13", "code": "print(1)"})
ok(st == 400 and err(d).get("field") == "stdin_encoding", "an unknown stdin_encoding is 400", d)

# ---- 2. duplicate keys, request id, 413 ----
st, _, d = call("POST", "/v1/execute",
                '{"language":"python","code":"print(1)","code":"print(2)"}')
ok(st == 400 and err(d).get("code") == "duplicate_key" and err(d).get("field") == "code",
   "a duplicate top-level key is 400 duplicate_key naming it", d)
st, _, d = call("POST", "/v1/execute",
                '{"language":"python","code":"print(1)","limits":{"wall_ms":1000,'
                '"wall_ms":2000}}')
ok(st == 400 and err(d).get("field") == "wall_ms", "... in a nested object too", d)
st, _, d = call("POST", "/v1/execute",
                '{"language":"python","code":"print(1)","\\u0063ode":"print(2)"}')
ok(st == 400 and err(d).get("field") == "code", "... also when one spelling is escaped", d)
st, _, d = call("POST", "/v1/execute",
                '{"language":"python","files":[{"path":"a.py","content":"print(3)"},'
                '{"path":"b.py","content":"x"}],"args":["path","path"]}')
is_((st, d.get("stdout")), (200, "3\n"),
    "the same name in sibling objects and equal array strings are fine")
st, _, d = call("POST", "/v1/sessions", '{"ttl_s":60,"ttl_s":120}')
ok(st == 400 and err(d).get("code") == "duplicate_key", "POST /v1/sessions refuses them too", d)
st, _, d = call("POST", "/v1/evaluate", '{"language":"python","language":"python"}')
ok(st == 400 and err(d).get("code") == "duplicate_key", "... and POST /v1/evaluate", d)

st, h, d = call("POST", "/v1/execute", {"language": "cobol", "code": "x"})
ok(st == 400 and err(d).get("request_id") and err(d)["request_id"] == h.get("x-request-id"),
   "a worker error carries request_id, equal to X-Request-Id", (d, h.get("x-request-id")))
st, h, d = call("GET", "/v1/sessions/nosuch/files/x")
ok(st == 404 and err(d).get("request_id") == h.get("x-request-id"), "... a 404 from a handler", d)
st, h, d = call("GET", "/v1/nosuchroute")
ok(st == 404 and err(d).get("request_id") == h.get("x-request-id"), "... an unknown route", d)
st, h, d = call("GET", "/v1/languages", token=None)
ok(st == 401 and err(d).get("request_id") == h.get("x-request-id"),
   "nginx's own 401 carries it too", (st, d))
st, h, d = call("GET", "/nothing-here", token=None)
ok(st == 404 and err(d).get("request_id") == h.get("x-request-id"), "... and nginx's 404", d)
st, h, d = call("GET", "/v1/health")
ok(st == 200 and "request_id" not in (d if isinstance(d, dict) else {}),
   "a success body is left alone")
st, _, d = call("POST", "/write_file", {"id": "x", "rel_path": "../x", "content": ""})
ok(st == 400 and err(d).get("request_id") and d.get("detail"),
   "seed-route errors keep detail and gain request_id", d)

body_max = int(os.environ.get("HYGIENE_BODY_MAX_BYTES", "0"))
big = b'{"language":"python","code":"' + b"#" * (body_max + 10) + b'"}'
st, h, d = call("POST", "/v1/execute", big)
ok(st == 413 and str(body_max) in err(d).get("message", "") and err(d).get("request_id"),
   f"nginx's 413 names its limit ({body_max} bytes) and the request id", (st, d))
worker_max = int(os.environ.get("HYGIENE_WORKER_MAX_BYTES", "0"))
st, h, d = call("POST", "/v1/execute",
                b'{"language":"python","code":"' + b"#" * (worker_max + 10) + b'"}')
ok(st == 413 and str(worker_max) in err(d).get("message", ""),
   f"the worker's 413 names max_body_bytes ({worker_max})", (st, d))
done()
