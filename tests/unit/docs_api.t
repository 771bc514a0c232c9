#!/usr/bin/env python3
"""docs_api.t: fcgi/API.md, fcgi/openapi.json and the code describe the same API.

- every route of the C route table is in openapi.json, and every path+method of openapi.json is
  in the route table;
- every route heading of API.md (a line "#### `METHOD /path`") is in openapi.json, and every
  openapi.json operation has such a heading;
- every error code the code emits is in API.md's error-code table, and every code of that table
  is still emitted somewhere.

The sources are found by searching fcgi/ and nginx/ recursively, so the test keeps working when
files move into subfolders (fcgi/http/, fcgi/handlers/, ...). Error codes in C are found four
ways: a status next to a code, `404, "not_found"` or `"not_found", 404,` (api_error calls and
status tables alike), a code assigned by name, `.code = "not_found"`, and a code then a
sentence, `"sandbox_unavailable", "The sandbox ..."` (helpers that take no status). Each failure
names exactly what is missing and where to add it.
"""
import glob
import json
import os
import re
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "lib"))
import tap  # noqa: E402

API_MD = os.path.join(TOP, "fcgi", "API.md")
OPENAPI = os.path.join(TOP, "fcgi", "openapi.json")
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")


def rel(path):
    return os.path.relpath(path, TOP)


def c_sources():
    """Every C source and header under fcgi/, whatever subfolder it is in."""
    files = glob.glob(os.path.join(TOP, "fcgi", "**", "*.[ch]"), recursive=True)
    return sorted(f for f in files if os.path.isfile(f))


def strip_c_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def norm_path(p):
    """The route table writes the rest-of-path capture as {path...}; OpenAPI as {path}."""
    return re.sub(r"\{(\w+)\.\.\.\}", r"{\1}", p)


# A route table entry: {"GET", "/v1/health", h_health, ...}.
ROUTE_RE = re.compile(r'\{\s*"(' + "|".join(METHODS) + r')"\s*,\s*"(/[^"]*)"\s*,')


def code_routes():
    routes = {}
    for f in c_sources():
        for m in ROUTE_RE.finditer(strip_c_comments(open(f, encoding="utf-8").read())):
            routes.setdefault((m.group(1), norm_path(m.group(2))), rel(f))
    return routes


def openapi_routes():
    doc = json.load(open(OPENAPI, encoding="utf-8"))
    return {
        (method.upper(), path)
        for path, item in doc.get("paths", {}).items()
        for method in item
        if method.upper() in METHODS
    }


# A route heading of API.md: "#### `POST /v1/execute`" (any heading level from 2 to 6).
DOC_ROUTE_RE = re.compile(r"^#{2,6}\s+`(" + "|".join(METHODS) + r") (/[^`\s]*)`\s*$", re.M)


def doc_routes(text):
    return {(m.group(1), m.group(2)) for m in DOC_ROUTE_RE.finditer(text)}


CODE_WORD = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*"
# `404, "not_found"`: the third argument of api_error(), or a row of a status table.
STATUS_CODE_RE = re.compile(r"\b([1-5][0-9]{2})\s*,\s*\"(" + CODE_WORD + r")\"")
# `"sandbox_unavailable", "The sandbox..."` or `"code", field, "Field ..."`: a code word followed
# (after at most one more argument) by a message sentence.
CODE_MSG_RE = re.compile(
    r"\"(" + CODE_WORD + r")\"\s*,\s*"
    r"(?:(?:NULL|[A-Za-z_]\w*|\"[a-z][a-z0-9_.\[\]]*\")\s*,\s*)?\"[A-Z]"
)
# `{"not_found", 404, ...}`: a status table that puts the code first.
CODE_STATUS_RE = re.compile(r"\"(" + CODE_WORD + r")\"\s*,\s*[1-5][0-9]{2}\s*[,}]")
# A designated initializer or assignment: {.status = 507, .code = "insufficient_storage"}.
ASSIGNED_CODE_RE = re.compile(r"\b(?:\.|->)?(?:error_)?code\s*=\s*\"(" + CODE_WORD + r")\"")
# nginx's own envelopes: return 429 '{"error":{"code":"rate_limited",...'
NGINX_CODE_RE = re.compile(r"\"code\"\s*:\s*\"(" + CODE_WORD + r")\"")


def preceded_by_argument_separator(text, start):
    """True when the literal at start is an argument of its own: a comma before it, and that
    comma does not follow another string literal (then the literal is a field name, as in
    api_error(resp, 400, "missing_field", "code", "Send ...")). Rules out the second branch of
    a ?: (a field) too."""
    i = start - 1
    while i >= 0 and text[i] in " \t\n":
        i -= 1
    if i < 0 or text[i] != ",":
        return False
    i -= 1
    while i >= 0 and text[i] in " \t\n":
        i -= 1
    return i >= 0 and text[i] != '"'


def emitted_codes():
    """{code: set of files} for every error code emitted by fcgi/ (C) and nginx/ (configs)."""
    codes = {}
    for f in c_sources():
        text = strip_c_comments(open(f, encoding="utf-8").read())
        for m in STATUS_CODE_RE.finditer(text):
            codes.setdefault(m.group(2), set()).add(rel(f))
        for m in CODE_STATUS_RE.finditer(text):
            codes.setdefault(m.group(1), set()).add(rel(f))
        for m in ASSIGNED_CODE_RE.finditer(text):
            codes.setdefault(m.group(1), set()).add(rel(f))
        for m in CODE_MSG_RE.finditer(text):
            if preceded_by_argument_separator(text, m.start()):
                codes.setdefault(m.group(1), set()).add(rel(f))
    for f in sorted(glob.glob(os.path.join(TOP, "nginx", "**", "*"), recursive=True)):
        if not os.path.isfile(f):
            continue
        try:
            text = open(f, encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for m in NGINX_CODE_RE.finditer(text):
            codes.setdefault(m.group(1), set()).add(rel(f))
    return codes


def doc_error_table(text):
    """The codes of API.md's "## Error codes" table: rows "| `code` | status | when |"."""
    m = re.search(r"^## Error codes\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not m:
        return None
    row = re.compile(r"^\|\s*`(" + CODE_WORD + r")`\s*\|\s*[1-5][0-9]{2}\s*\|", re.M)
    return {r.group(1) for r in row.finditer(m.group(1))}


def fmt(routes):
    return "\n".join(f"{m} {p}" for m, p in sorted(routes, key=lambda r: (r[1], r[0])))


def main():
    for f in (API_MD, OPENAPI):
        if not os.path.isfile(f):
            tap.ok(False, f"{rel(f)} exists")
            tap.done()
    text = open(API_MD, encoding="utf-8").read()
    in_code = code_routes()
    in_spec = openapi_routes()
    in_doc = doc_routes(text)

    tap.ok(len(in_code) >= 10, f"the route table is found under fcgi/ ({len(in_code)} routes)",
           "no {\"METHOD\", \"/path\", handler, ...} entries in any fcgi/**/*.c")
    tap.ok(len(in_doc) >= 10, f"API.md has route headings ({len(in_doc)})",
           "expected headings like: #### `POST /v1/execute`")

    missing = set(in_code) - in_spec
    tap.ok(not missing, "every route of the C route table is in fcgi/openapi.json",
           "add to fcgi/openapi.json (paths):\n" + "\n".join(
               f"{m} {p}   (route table in {in_code[(m, p)]})" for m, p in sorted(missing)))
    missing = in_spec - set(in_code)
    tap.ok(not missing, "every operation of fcgi/openapi.json is in the C route table",
           "in fcgi/openapi.json but no route serves it:\n" + fmt(missing))
    missing = in_spec - in_doc
    tap.ok(not missing, "every operation of fcgi/openapi.json has a route heading in fcgi/API.md",
           "add to fcgi/API.md a section headed (e.g.) #### `METHOD /path` for:\n" + fmt(missing))
    missing = in_doc - in_spec
    tap.ok(not missing, "every route heading of fcgi/API.md is in fcgi/openapi.json",
           "documented in fcgi/API.md but not in fcgi/openapi.json:\n" + fmt(missing))

    emitted = emitted_codes()
    table = doc_error_table(text)
    tap.ok(table is not None and len(table) > 0,
           "fcgi/API.md has an \"## Error codes\" table", "expected rows: | `code` | 404 | when |")
    table = table or set()
    tap.ok(len(emitted) >= 10, f"error codes are found in the sources ({len(emitted)})",
           "no api_error(resp, STATUS, \"code\", ...) calls found under fcgi/")
    missing = sorted(set(emitted) - table)
    tap.ok(not missing, "every error code the code emits is in fcgi/API.md's error-code table",
           "add a row | `code` | status | when it happens | to \"## Error codes\" in fcgi/API.md:\n"
           + "\n".join(f"{c}   (emitted in {', '.join(sorted(emitted[c]))})" for c in missing))
    stale = sorted(table - set(emitted))
    tap.ok(not stale, "every code of fcgi/API.md's error-code table is still emitted",
           "in fcgi/API.md but emitted nowhere under fcgi/ or nginx/ (remove the row, or the "
           "emitting code is not found by this test):\n" + "\n".join(stale))
    tap.done()


main()
