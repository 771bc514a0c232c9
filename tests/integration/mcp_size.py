"""mcp_size.py: MCP tool results sized for a model (API.md, MCP; issue 18 "results sized for a
model"). Over HTTPS through the real stack with mcp.result_bytes = MCP_RESULT_BYTES:
  - a 2,000,000-byte stdout through execute comes back within the cap as its exact head and tail
    around a marker naming the bytes left out, that count also in stdout_omitted_bytes, and
    head + tail + omitted adding up to the output;
  - multi-byte UTF-8 output is cut between characters;
  - short output stays whole (omitted 0) and the text block is bounded too;
  - an evaluate of 120 cases with 100 KB outputs lists MCP_RESULT_CASES cases, failures first in
    their order, cases_omitted counting the rest, each case field shortened;
  - every structuredContent validates against the tool's outputSchema.
Run by mcp_size.t under tests/lib/harness.sh --exec."""
import json
import os
import re
import sys

import httpx

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, is_, ok, skip_all  # noqa: E402

try:
    from jsonschema import Draft202012Validator
except ImportError:
    skip_all("python3-jsonschema is not installed (make deps)")

URL = os.environ["SBX_URL"]
CAP = int(os.environ["MCP_RESULT_BYTES"])
CASES = int(os.environ["MCP_RESULT_CASES"])
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN}
c = httpx.Client(base_url=URL, verify=False, timeout=300,
                 headers={"Authorization": "Bearer " + os.environ["SBX_TOKEN"],
                          "Accept": "application/json, text/event-stream"})
MARK = re.compile(r"\n\u2026\[(\d+) bytes omitted\]\u2026\n")


def rpc(method, params, n=[0]):
    n[0] += 1
    p = dict(params)
    p["_meta"] = META
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        h["Mcp-Name"] = p["name"]
    r = c.post("/mcp", json={"jsonrpc": "2.0", "id": n[0], "method": method, "params": p},
               headers=h)
    return r, r.json()


_, d = rpc("tools/list", {})
schemas = {t["name"]: t.get("outputSchema") for t in d["result"]["tools"]}


def call(name, args):
    r, d = rpc("tools/call", {"name": name, "arguments": args})
    res = d.get("result") or {}
    sc = res.get("structuredContent")
    if sc is not None:
        errs = list(Draft202012Validator(schemas[name]).iter_errors(sc))
        ok(not errs, f"{name}: structuredContent matches the outputSchema",
           [e.message for e in errs[:3]])
    return r, res, sc or {}


def split(text):
    """(head, omitted, tail) of a sized string; (text, 0, '') when it has no marker."""
    m = MARK.search(text)
    if not m:
        return text, 0, ""
    return text[:m.start()], int(m.group(1)), text[m.end():]


# ---- 2,000,000 bytes of stdout ----
N = 250000  # lines of 8 bytes
expected = "".join("%07d\n" % i for i in range(N)).encode()
r, res, sc = call("execute", {"language": "python", "limits": {"output_bytes": 4194304},
                              "code": "import sys\n"
                                      "sys.stdout.write(''.join('%07d\\n' % i for i in range("
                                      + str(N) + ")))\nsys.stderr.write('tail of stderr')\n"})
is_(r.status_code, 200, "2 MB execute: 200")
out = sc.get("stdout", "")
ok(len(out.encode()) <= CAP, f"stdout within the cap ({len(out.encode())} <= {CAP} bytes)")
head, omitted, tail = split(out)
ok(omitted > 0, "stdout carries the omitted-bytes marker", out[:200])
is_(sc.get("stdout_omitted_bytes"), omitted, "stdout_omitted_bytes equals the marker's count")
ok(expected.startswith(head.encode()) and len(head) > CAP // 4,
   f"the head is the output's start ({len(head)} bytes)")
ok(expected.endswith(tail.encode()) and len(tail) > CAP // 4,
   f"the tail is the output's end ({len(tail)} bytes)", tail[-40:])
is_(len(head.encode()) + omitted + len(tail.encode()), len(expected),
    "head + omitted + tail = the 2,000,000 bytes printed")
is_(sc.get("stdout_truncated"), False, "the run itself kept all of it (not truncated)")
is_(sc.get("stderr"), "tail of stderr", "short stderr: whole")
is_(sc.get("stderr_omitted_bytes"), 0, "stderr_omitted_bytes 0")
text = "".join(b.get("text", "") for b in res.get("content", []) if b.get("type") == "text")
ok(len(text.encode()) <= 2 * CAP + 4096, f"the text block is bounded too ({len(text)} bytes)")
is_(res.get("isError"), False, "not an error")

# ---- UTF-8: 3-byte characters, never split ----
M = 700000
r, res, sc = call("execute", {"language": "python", "limits": {"output_bytes": 4194304},
                              "code": "print('\\u20ac' * %d)" % M})
out = sc.get("stdout", "")
head, omitted, tail = split(out)
ok(set(head) == {"\u20ac"} and set(tail.rstrip("\n")) == {"\u20ac"} and tail.endswith("\n"),
   "multi-byte output: head and tail are whole characters", (out[:20], out[-20:]))
is_(len(head.encode()) + omitted + len(tail.encode()), 3 * M + 1,
    "head + omitted + tail = the bytes printed")
ok(omitted % 3 == 1 or omitted % 3 == 0, "the cut fell between characters")
ok(len(out.encode()) <= CAP, "within the cap")

# ---- small output: untouched ----
r, res, sc = call("execute", {"language": "python", "code": "print('hi')"})
ok(sc.get("stdout") == "hi\n" and sc.get("stdout_omitted_bytes") == 0,
   "short stdout whole, stdout_omitted_bytes 0", sc)

# ---- evaluate: many cases with large outputs ----
code = ("n = int(input())\n"
        "print('x' * 100000 if n % 2 else n)\n")
cases = [{"stdin": "%d\n" % i, "expected_stdout": "%d\n" % i} for i in range(120)]
r, res, sc = call("evaluate", {"language": "python", "code": code, "cases": cases})
is_(r.status_code, 200, "evaluate of 120 cases: 200")
listed = sc.get("cases", [])
is_(len(listed), CASES, f"{CASES} cases listed")
is_(sc.get("cases_omitted"), 120 - CASES, "cases_omitted counts the rest")
idx = [k.get("index") for k in listed]
ok(all(not k.get("passed") for k in listed) and idx == sorted(idx),
   "the failures come first, in the cases' order", idx[:10])
is_(sc.get("total"), 120, "total still counts every case")
big = max((len(json.dumps(k)) for k in listed), default=0)
ok(big <= CAP // 4, f"each listed case is small ({big} bytes of JSON)")
size = len(json.dumps(res))
ok(size <= 4 * CAP + len(listed) * (CAP // 4), f"the whole result is bounded ({size} bytes)")
is_(res.get("isError"), True, "a failing evaluate is isError")

done()
