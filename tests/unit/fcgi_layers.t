#!/usr/bin/env python3
"""fcgi_layers.t: fcgi/ stays in layers, without a circle (README.md, "Changing the code").

- Includes: store/ includes only store/ and system headers (no http/, handlers/, evaluate/,
  config.h, sandbox/, json-c, libfcgi); http/ includes only http/, system headers and json-c (no
  store/, handlers/, evaluate/, config.h, sandbox/); config.c/h include neither http/, store/,
  handlers/ nor evaluate/; nothing includes main.c's folder level above it.
- Calls (nm of the built objects): a store object calls nothing of another folder and neither
  json-c nor the broker client (sbx_*) nor libfcgi; an http object calls nothing of store/,
  handlers/, evaluate/ or config.c and nothing of the broker client.
- No circle: the include graph between files and the call graph between objects are acyclic.
Needs `make all` first (the objects under build/fcgi)."""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
n = 0
failed = 0


def ok(cond, name, detail=None):
    global n, failed
    n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (n, name))
    if not cond:
        failed += 1
        if detail:
            for line in str(detail).splitlines()[:20]:
                print("#   " + line)


def layer(path):
    """store, http, handlers, evaluate, config, main, sandbox, or other for a repo path."""
    rel = os.path.relpath(path, ROOT)
    parts = rel.split(os.sep)
    if parts[0] == "sandbox":
        return "sandbox"
    if parts[0] != "fcgi":
        return "other"
    if len(parts) == 2:
        return "main" if parts[1] == "main.c" else "config"
    return parts[1]


# What each layer may include (besides itself and system headers).
INCLUDE_OK = {
    "store": set(),
    "http": set(),
    "config": {"sandbox"},
    "handlers": {"store", "http", "config", "sandbox"},
    "evaluate": {"handlers", "store", "http", "config", "sandbox"},
    "main": {"handlers", "store", "http", "config", "sandbox", "evaluate"},
}
SYSTEM_FORBIDDEN = {"store": ("json-c/", "fcgiapp.h", "fcgi_stdio.h"), "http": ("fcgiapp.h",)}

sources = sorted(glob.glob(os.path.join(ROOT, "fcgi", "**", "*.[ch]"), recursive=True))
sources = [s for s in sources if "/runner/" not in s]
graph = {}
bad = []
for src in sources:
    me = layer(src)
    graph[src] = set()
    with open(src, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = re.match(r'\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
            if not m:
                continue
            if m.group(1) == "<":
                if any(m.group(2).startswith(p) for p in SYSTEM_FORBIDDEN.get(me, ())):
                    bad.append("%s:%d: %s includes <%s>" % (os.path.relpath(src, ROOT), lineno,
                                                           me, m.group(2)))
                continue
            target = os.path.realpath(os.path.join(os.path.dirname(src), m.group(2)))
            them = layer(target)
            graph[src].add(target)
            if them != me and them not in INCLUDE_OK.get(me, set()):
                bad.append("%s:%d: %s includes %s (%s)" % (os.path.relpath(src, ROOT), lineno,
                                                          me, m.group(2), them))
ok(len(sources) > 20, "found the fcgi sources (%d)" % len(sources))
ok(not bad, "no layer includes a layer above it (or a header it must not know)", "\n".join(bad))


def cycle(g):
    """A list of nodes forming a cycle in g, or None."""
    state = {}
    stack = []

    def visit(v):
        state[v] = 1
        stack.append(v)
        for w in sorted(g.get(v, ())):
            if state.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if w not in state:
                c = visit(w)
                if c:
                    return c
        state[v] = 2
        stack.pop()
        return None

    for v in sorted(g):
        if v not in state:
            c = visit(v)
            if c:
                return c
    return None


c = cycle(graph)
ok(c is None, "the include graph between files has no circle",
   c and " -> ".join(os.path.relpath(x, ROOT) for x in c))

objs = []
for src in sources:
    if src.endswith(".c"):
        o = os.path.join(ROOT, "build", os.path.relpath(src, ROOT))[:-2] + ".o"
        if os.path.exists(o):
            objs.append((src, o))
if len(objs) < len([s for s in sources if s.endswith(".c")]):
    print("# SKIP the call checks: build/fcgi objects missing (run make all)")
    print("1..%d" % n)
    sys.exit(1 if failed else 0)

defined = {}
undefined = {}
for src, o in objs:
    out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
    undefined[src] = set()
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "TDBRC":
            defined[p[2]] = src
        elif len(p) == 2 and p[0] == "U":
            undefined[src].add(p[1])

CALL_OK = {
    "store": set(),
    "http": set(),
    "config": set(),
    "handlers": {"store", "http", "config", "evaluate"},
    "evaluate": {"handlers", "store", "http", "config"},
    "main": {"handlers", "store", "http", "config", "evaluate"},
}
EXTERNAL_FORBIDDEN = {"store": ("json_", "sbx_", "FCGX_", "FCGI_"), "http": ("sbx_",)}
calls = {}
bad = []
for src, syms in undefined.items():
    me = layer(src)
    calls[src] = set()
    for s in sorted(syms):
        if s in defined:
            them = layer(defined[s])
            if defined[s] != src:
                calls[src].add(defined[s])
            if them != me and them not in CALL_OK[me]:
                bad.append("%s (%s) calls %s of %s" % (os.path.relpath(src, ROOT), me, s,
                                                     os.path.relpath(defined[s], ROOT)))
        elif any(s.startswith(p) for p in EXTERNAL_FORBIDDEN.get(me, ())):
            bad.append("%s (%s) calls %s" % (os.path.relpath(src, ROOT), me, s))
ok(not bad, "no object calls a layer above it (store: no json-c, broker or FastCGI; http: no "
   "broker)", "\n".join(bad))
c = cycle(calls)
ok(c is None, "the call graph between objects has no circle",
   c and " -> ".join(os.path.relpath(x, ROOT) for x in c))
print("1..%d" % n)
sys.exit(1 if failed else 0)
