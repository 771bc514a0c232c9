"""tools_api.py: GET /v1/tools in its three vendor forms, each validated with python3-jsonschema
against a schema of the vendor's documented tool shape (written here from the vendors' API
references: OpenAI Chat Completions `tools`, OpenAI Responses `tools` with strict function
calling, Anthropic Messages `tools`); the Responses form checked against strict mode's rules
(every object closed, every property required, optional ones nullable); one source with the MCP
tools (same names and descriptions as tools/list); and the new tools work end to end
(create_session through MCP). Run by tools_api.t under tests/lib/harness.sh --exec."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from sbx_http import BOB, call, err  # noqa: E402
from tap import done, is_, ok, skip_all  # noqa: E402

try:
    from jsonschema import Draft202012Validator
except ImportError:
    skip_all("python3-jsonschema is not installed (make deps)")

NAME = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
OBJECT_SCHEMA = {"type": "object", "required": ["type"],
                 "properties": {"type": {"const": "object"}}}
# OpenAI Chat Completions: tools[] = {type: "function", function: {name, description?,
# parameters?, strict?}}.
CHAT = {"type": "array", "minItems": 1, "items": {
    "type": "object", "additionalProperties": False, "required": ["type", "function"],
    "properties": {
        "type": {"const": "function"},
        "function": {"type": "object", "additionalProperties": False, "required": ["name"],
                     "properties": {"name": NAME, "description": {"type": "string"},
                                    "parameters": OBJECT_SCHEMA,
                                    "strict": {"type": ["boolean", "null"]}}}}}}
# OpenAI Responses: tools[] = {type: "function", name, description?, parameters, strict}.
RESPONSES = {"type": "array", "minItems": 1, "items": {
    "type": "object", "additionalProperties": False,
    "required": ["type", "name", "parameters", "strict"],
    "properties": {"type": {"const": "function"}, "name": NAME,
                   "description": {"type": ["string", "null"]},
                   "parameters": OBJECT_SCHEMA, "strict": {"const": True}}}}
# Anthropic Messages: tools[] = {name, description?, input_schema: {type: "object", ...}}.
ANTHROPIC = {"type": "array", "minItems": 1, "items": {
    "type": "object", "additionalProperties": False, "required": ["name", "input_schema"],
    "properties": {"name": NAME, "description": {"type": "string"},
                   "input_schema": OBJECT_SCHEMA}}}
STRICT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "enum", "anyOf",
                   "items", "description", "const", "pattern", "format", "minimum", "maximum",
                   "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "multipleOf"}
EXPECTED = ["create_session", "execute", "run_command", "list_files", "read_file", "write_file",
            "evaluate", "python"]


def shape_errors(doc, schema):
    return [e.message for e in Draft202012Validator(schema).iter_errors(doc)][:5]


def strict_problems(s, where="parameters"):
    """Where s breaks OpenAI's strict-mode rules ([] when it keeps them)."""
    out = []
    if not isinstance(s, dict):
        return [f"{where}: not an object"]
    bad = set(s) - STRICT_KEYWORDS
    if bad:
        out.append(f"{where}: keywords strict mode does not take: {sorted(bad)}")
    if "properties" in s or s.get("type") == "object":
        if s.get("additionalProperties") is not False:
            out.append(f"{where}: additionalProperties is not false")
        if sorted(s.get("required", [])) != sorted(s.get("properties", {})):
            out.append(f"{where}: required is not every property")
    for k, v in s.get("properties", {}).items():
        out += strict_problems(v, f"{where}.{k}")
    if "items" in s:
        out += strict_problems(s["items"], f"{where}[]")
    for i, v in enumerate(s.get("anyOf", [])):
        out += strict_problems(v, f"{where}.anyOf[{i}]")
    return out


def nullable(s):
    t = s.get("type")
    return (t == "null" or (isinstance(t, list) and "null" in t)
            or any(nullable(x) for x in s.get("anyOf", [])))


forms = {}
for fmt, schema in (("openai", CHAT), ("openai-responses", RESPONSES), ("anthropic", ANTHROPIC)):
    st, _, d = call("GET", "/v1/tools?format=" + fmt)
    forms[fmt] = d
    ok(st == 200 and not shape_errors(d, schema),
       f"?format={fmt}: a JSON array in the vendor's documented tool shape",
       shape_errors(d, schema) if st == 200 else d)
names = [t["function"]["name"] for t in forms["openai"]]
is_(names, EXPECTED, "the tools: sessions, files, shell, execute, evaluate, python")
is_([t["name"] for t in forms["anthropic"]], EXPECTED, "... the same in the Anthropic form")
is_([t["name"] for t in forms["openai-responses"]], EXPECTED, "... and the Responses form")

for t in forms["openai-responses"]:
    ok(not strict_problems(t["parameters"]), f"{t['name']}: strict-ready parameters",
       strict_problems(t["parameters"]))
chat = {t["function"]["name"]: t["function"] for t in forms["openai"]}
for t in forms["openai-responses"]:
    opt = set(chat[t["name"]]["parameters"].get("properties", {})) - \
        set(chat[t["name"]]["parameters"].get("required", []))
    ok(all(nullable(t["parameters"]["properties"][k]) for k in opt),
       f"{t['name']}: its optional parameters are nullable in the strict form ({len(opt)})")
for t in forms["anthropic"]:
    try:
        Draft202012Validator.check_schema(t["input_schema"])
        problem = None
    except Exception as e:  # noqa: BLE001 (SchemaError, or anything else the check raises)
        problem = str(e).splitlines()[0]
    ok(problem is None, f"{t['name']}: input_schema is a valid JSON Schema", problem)

d = chat["execute"]
ok(all(w in d["description"] for w in ("python", "stdout", "limits", "wall")) and
   "stdin" in d["parameters"]["properties"] and "cpp" in d["parameters"]["properties"]["language"]["enum"],
   "execute: its description says languages, limits and the result; stdin; language enum", d)
ok("context_id" in chat["python"]["parameters"]["properties"] and
   "session_id" in chat["python"]["parameters"]["properties"], "python takes session_id and context_id")

st, _, d = call("GET", "/v1/tools")
ok(st == 200 and [t["name"] for t in d.get("tools", [])] == EXPECTED and
   all(t.get("route") for t in d["tools"]) and d.get("openai") == forms["openai"] and
   d.get("anthropic") == forms["anthropic"] and d.get("openai_responses") == forms["openai-responses"],
   "no format: the neutral list with each tool's route, and all three forms")
st, _, d = call("GET", "/v1/tools?format=gemini")
ok(st == 400 and err(d).get("field") == "format", "an unknown format is 400 naming format", d)

# One source: MCP's tools/list has the same names and descriptions.
H = {"MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"}
st, _, d = call("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=H)
mcp = {t["name"]: t["description"] for t in (d or {}).get("result", {}).get("tools", [])}
is_(mcp, {n: chat[n]["description"] for n in EXPECTED}, "MCP tools/list: the same tools and text")
st, _, d = call("POST", "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": {"name": "create_session", "arguments": {}}}, headers=H)
sc = (d or {}).get("result", {}).get("structuredContent", {})
ok(st == 200 and sc.get("session_id") and not d["result"].get("isError"),
   "create_session through MCP gives a session_id", d)
st2, _, d2 = call("GET", f"/v1/sessions/{sc.get('session_id')}")
is_(st2, 200, "... a session of the caller")

# POST /v1/tools/{name}: a tool called with a model's arguments, the answer MCP's CallToolResult,
# its outputs sized for a model (head and tail kept, the bytes left out counted).
st, _, d = call("POST", "/v1/tools/execute",
                {"language": "python", "code": "print('a' * 200000 + 'END')",
                 "limits": {"output_bytes": 300000}})
sc = (d or {}).get("structuredContent") or {}
out = sc.get("stdout", "")
ok(st == 200 and d.get("isError") is False and out.startswith("a") and out.rstrip().endswith("END")
   and sc.get("stdout_omitted_bytes", 0) > 0 and len(out.encode()) < 100000 and
   len(out.replace("\n", "").rstrip("END").rstrip("a")) > 0,
   "POST /v1/tools/execute: a 200 KB stdout comes back as head and tail with the bytes omitted",
   (st, len(out), sc.get("stdout_omitted_bytes")))
ok(any(c.get("type") == "text" for c in d.get("content", [])), "... with a text content block too")
st, _, d = call("POST", "/v1/tools/create_session", {})
tsid = ((d or {}).get("structuredContent") or {}).get("session_id")
ok(st == 200 and tsid, "POST /v1/tools/create_session: a session", d)
st, _, d = call("POST", "/v1/tools/python", {"session_id": tsid, "code": "x = 20"})
st, _, d = call("POST", "/v1/tools/python", {"session_id": tsid, "code": "x + 22"})
ok(st == 200 and "42" in json.dumps((d or {}).get("structuredContent")),
   "POST /v1/tools/python twice: the state is kept (x + 22 is 42)", d)
st, _, d = call("POST", "/v1/tools/python", {"session_id": tsid, "code": "1"}, token=BOB)
ok(st == 200 and d.get("isError") is True, "bob calling with alice's session: an isError result",
   d)
st, _, d = call("POST", "/v1/tools/rm_rf", {})
ok(st == 404 and err(d).get("code") == "tool_not_found", "an unknown tool: 404 tool_not_found", d)
st, _, d = call("POST", "/v1/tools/execute", {"language": "python"})
ok(st == 400 and err(d).get("code") == "invalid_arguments" and "code" in err(d).get("message", ""),
   "arguments the tool's schema refuses: 400 invalid_arguments naming what is wrong", d)
st, _, d = call("POST", "/v1/tools/execute", {"language": "python", "code": "print(1)"}, token="")
is_(st, 401, "without a token: 401")
# Hostile names: long, encoded slashes and dots, another route's name: never a 500, never a
# route the table does not list as a tool.
for bad in ("x" * 3000, "..%2Fexecute", "execute%2F..", "%00", "EXECUTE", "tools"):
    st, _, d = call("POST", "/v1/tools/" + bad, {})
    ok(st in (400, 404, 414) and st != 500, f"tool name {bad[:20]!r}: a clear refusal ({st})", d)
# Arguments a tool's schema does not list are refused, not passed on to the route (a model
# cannot smuggle route fields such as a session of another client's or raw limits past the cap).
st, _, d = call("POST", "/v1/tools/execute",
                {"language": "python", "code": "print(1)", "client": "bob"})
ok(st == 400 and err(d).get("code") == "invalid_arguments", "an unlisted argument: 400", d)
st, _, d = call("POST", "/v1/tools/execute",
                {"language": "python", "code": "print(1)", "limits": {"wall_ms": 10 ** 9}})
ok(st == 400 or (st == 200 and d.get("isError") is True),
   "limits past the server's maximum are refused, never granted", d)
done()
