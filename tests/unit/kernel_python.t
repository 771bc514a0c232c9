#!/usr/bin/python3
# kernel_python.t: sandbox/kernel/sbx_kernel.py in python mode, driven as the holder drives it
# (kernel_driver.py: fd 3 socketpair, pipes on 1/2, marker framing), without a sandbox: state
# across cells, Jupyter's last-expression rule, stdout/stderr, plots, PIL, pandas, display(),
# tracebacks, SIGINT, hostile cells (closed stdout, sys.exit, fork, recursion), variables, and
# the idle kernel's RSS (at most 20 MiB).
import base64
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_driver as kd  # noqa: E402

t = kd.Tap()
if not os.access(kd.PYTHON, os.X_OK):
    print("1..0 # SKIP %s is not installed" % kd.PYTHON)
    sys.exit(0)


def have(module):
    import subprocess
    return subprocess.run([kd.PYTHON, "-c", "import " + module],
                          capture_output=True).returncode == 0


def texts(reply):
    return [(r.get("is_main_result"), r.get("text")) for r in reply.get("results", [])]


def main_text(reply):
    mains = [r["text"] for r in reply.get("results", []) if r.get("is_main_result")]
    return mains[0] if mains else None


k = kd.Kernel("python")
t.is_(k.ready, {"op": "ready"}, "the kernel says ready on fd 3")

# --- state and the last-expression rule --------------------------------------------------------
out, err, r = k.run("counter = 0")
t.is_((r["status"], r["execution_count"], r["results"], r["error"], r["exit_code"]),
      ("ok", 1, [], None, 0), "an assignment: ok, execution_count 1, no result")
for i in range(50):
    out, err, r = k.run("counter += 1\nprint(counter)")
    if r["status"] != "ok" or out != "%d\n" % (i + 1):
        break
t.is_((out, r["execution_count"]), ("50\n", 51), "state is kept across 50 cells")
out, err, r = k.run("counter * 2")
t.is_(texts(r), [(True, "100")], "the last expression is the main result")
t.is_(k.run("counter * 2;")[2]["results"], [], "a trailing ';' hides it")
t.is_(k.run("counter * 2  ;  # quiet\n\n")[2]["results"], [],
      "a trailing ';' before a comment hides it")
t.is_(texts(k.run("s = 'a;'\ns")[2]), [(True, "'a;'")], "a ';' inside a string does not")
t.is_(k.run("None")[2]["results"], [], "None is not shown")
t.is_(k.run("print('x')")[2]["results"], [], "print() returns None: nothing shown")
out, err, r = k.run("if True:\n    counter\n")
t.is_(r["results"], [], "an expression inside a compound statement is not a result")
out, err, r = k.run("_")
t.is_(main_text(r), "'a;'", "_ holds the last shown result")
t.is_(k.run("(counter +\n 1\n) ;")[2]["results"], [], "a ';' after closing parentheses hides it")
t.is_(texts(k.run("'\u00e9' + ';'  # ;")[2]), [(True, "'\u00e9;'")],
      "a ';' in a comment or in a string after a non-ASCII character does not")
out, err, r = k.run("import asyncio\nawait asyncio.sleep(0)\n41 + 1")
t.is_((r["status"], main_text(r)), ("ok", "42"), "top-level await works")

# --- stdout and stderr ---------------------------------------------------------------------------
out, err, r = k.run("import sys\nfor i in range(3):\n    print('o%d' % i)\n"
                    "    print('e%d' % i, file=sys.stderr)\n"
                    "sys.stdout.write('no newline')\nsys.stderr.write('tail')\n'done'")
t.is_((out, err), ("o0\no1\no2\nno newline", "e0\ne1\ne2\ntail"),
      "stdout and stderr are apart, ordered, and complete before the marker")
t.is_(main_text(r), "'done'", "output and a result together")
out, err, r = k.run("import os\nos.write(1, b'raw1 ')\nprint('py', flush=False)\n"
                    "os.write(1, b'raw2')")
t.is_(out, "raw1 py\nraw2", "print() and os.write(1) keep their order (no buffer in between)")
out, err, r = k.run("import subprocess\nsubprocess.run(['echo', 'from a child'])\nNone")
t.is_(out, "from a child\n", "a child process writes to the same stdout")
out, err, r = k.run("print('\\u00e9\\u4e2d')\n'\\u00e9'")
t.is_((out, main_text(r)), ("\u00e9\u4e2d\n", "'\u00e9'"), "UTF-8 output and results")

# --- display data ---------------------------------------------------------------------------------
out, err, r = k.run("display(1, 'two')\ndisplay([3])\n4")
t.is_(texts(r), [(False, "1"), (False, "'two'"), (False, "[3]"), (True, "4")],
      "display() adds results in order, the main result last")
t.ok(k.line_markers == [True], "the reply starts with the request's marker", k.line_markers)

# --- a streamed cell: each result is its own line as it is made, the reply has none ----------------
out, err, r = k.collect(k.send({"op": "execute", "stream": True,
                                "code": "print('a')\ndisplay(1)\nprint('b')\n2"}))
t.is_(([x.get("text") for x in k.displays], r.get("results"), out),
      (["1", "2"], [], "a\nb\n"),
      "stream: display() and the main result are display lines, in order; the reply has no results")
t.ok(k.line_markers == [True, True, True], "stream: every line starts with the marker",
     k.line_markers)
out, err, r = k.run("display(5)\n6")
t.is_((k.displays, texts(r)), ([], [(False, "5"), (True, "6")]),
      "the next request without stream has its results in the reply again")
out, err, r = k.collect(k.send({"op": "execute", "stream": True, "code": "import threading\n"
                                "ts = [threading.Thread(target=lambda: [display('x' * 5000) "
                                "for _ in range(50)]) for _ in range(4)]\n"
                                "[t.start() for t in ts]\n[t.join() for t in ts];"}))
t.ok(len(k.displays) == 200 and all(d.get("text") == repr("x" * 5000) for d in k.displays),
     "stream: threads displaying at once never cut each other's lines", len(k.displays))

out, err, r = k.run("class H:\n    def _repr_html_(self): return '<b>h</b>'\n"
                    "    def _repr_svg_(self): return '<svg/>'\n"
                    "    def _repr_json_(self): return {'k': [1]}\n"
                    "    def __repr__(self): return 'H()'\nH()")
res = r["results"][0] if r["results"] else {}
t.is_((res.get("html"), res.get("svg"), res.get("json"), res.get("text")),
      ("<b>h</b>", "<svg/>", {"k": [1]}, "H()"), "_repr_html_/_repr_svg_/_repr_json_ become keys")
out, err, r = k.run("class Any:\n    def __getattr__(self, n): return lambda: 'x'\n"
                    "    def __repr__(self): return 'Any()'\nAny()")
t.is_(r["results"], [{"is_main_result": True, "text": "Any()"}],
      "an object answering every attribute gets no _repr_*_ calls")
out, err, r = k.run("class M:\n    def _repr_mimebundle_(self, **kw):\n"
                    "        return {'text/plain': 'M!',\n"
                    "                'application/json': [float('nan'), 'NaN']}\n"
                    "M()")
t.is_(r["results"], [{"is_main_result": True, "text": "M!", "json": [None, "NaN"]}],
      "_repr_mimebundle_ is used; NaN is not JSON: it becomes null")
out, err, r = k.run("class J:\n    def _repr_mimebundle_(self, **kw):\n"
                    "        return {'application/json': {1}, 'text/plain': 5, 'text/html': b'x'}\n"
                    "    def __repr__(self): return 'J()'\n"
                    "class G:\n    def __getattr__(self, n): raise ValueError(n)\n"
                    "    def __repr__(self): return 'G()'\n"
                    "display({'text/plain': 'p', 'application/json': {2}}, raw=True)\n"
                    "display(J())\nJ(), G()")
t.is_((r["status"], r["results"]),
      ("ok", [{"is_main_result": False, "text": "p"}, {"is_main_result": False, "text": "J()"},
              {"is_main_result": True, "text": "(J(), G())"}]),
      "display data that is not JSON or not a string is dropped, the reply stays valid")
out, err, r = k.run("G()")
t.is_((r["status"], main_text(r)), ("ok", "G()"), "a __getattr__ raising ValueError is no error")
out, err, r = k.run("class Bad:\n    def __repr__(self): raise RuntimeError('no')\nBad()")
t.ok(r["status"] == "ok" and "repr failed" in (main_text(r) or ""),
     "a failing __repr__ is reported in the text, the cell is ok", r)
out, err, r = k.run("'x' * 300000")
t.ok(r["status"] == "ok" and len(main_text(r)) < 120000 and "more characters" in main_text(r),
     "a huge repr is capped")


def check_png(desc, b64, size=None):
    try:
        w, h = kd.png_info(base64.b64decode(b64, validate=True))
    except Exception as e:  # noqa: BLE001
        return t.ok(False, desc, "not a valid PNG: %s" % e)
    if size is not None:
        return t.is_((w, h), size, desc)
    return t.ok(50 <= w <= 4000 and 50 <= h <= 4000, desc + " (%dx%d)" % (w, h))


if have("matplotlib"):
    out, err, r = k.run("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [4, 1, 9])")
    pngs = [x for x in r["results"] if "png" in x]
    t.ok(r["status"] == "ok" and len(pngs) == 1, "a plot with only plt.plot: one PNG result", r)
    if pngs:
        check_png("the plot is a valid PNG (signature, IHDR, CRCs, pixel data)", pngs[0]["png"])
        t.ok(pngs[0]["is_main_result"] is False and "Figure" in pngs[0]["text"],
             "the figure is display data with a text form", pngs[0]["text"])
    t.ok(main_text(r) is not None and "Line2D" in main_text(r),
         "the plot call's value is still the main result", texts(r))
    t.is_(main_text(k.run("plt.get_fignums()")[2]), "[]", "figures are closed after the cell")
    t.is_(main_text(k.run("import os\nos.environ['MPLBACKEND']")[2]), "'Agg'", "MPLBACKEND=Agg")
    start = time.monotonic()
    out, err, r = k.run("plt.figure()\nplt.plot([1, 2])\nplt.show()\nprint('after show')\n"
                        "plt.figure()\nplt.bar([1], [2])\nplt.show(block=True)\n", timeout=120)
    pngs = [x for x in r["results"] if "png" in x]
    t.ok(r["status"] == "ok" and out == "after show\n" and len(pngs) == 2,
         "plt.show() does not block and shows each figure once (%.1fs)"
         % (time.monotonic() - start), (out, err, texts(r)))
    out, err, r = k.run("fig, ax = plt.subplots()\nax.plot([0, 1])\nfig")
    pngs = [x for x in r["results"] if "png" in x]
    t.ok(len(pngs) == 1 and pngs[0]["is_main_result"],
         "a Figure as the last expression is the main result, not shown twice", texts(r))
    out, err, r = k.run("from matplotlib import pyplot\npyplot.plot([1])\n1/0")
    t.ok(r["status"] == "error" and len([x for x in r["results"] if "png" in x]) == 1,
         "figures of a failing cell are still returned", texts(r))
else:
    for d in range(9):
        t.skip("matplotlib check %d" % d, "python3-matplotlib is not installed (make deps)")

if have("PIL"):
    out, err, r = k.run("from PIL import Image\nImage.new('RGB', (7, 5), 'red')")
    pngs = [x for x in r["results"] if "png" in x]
    t.ok(len(pngs) == 1, "a PIL image becomes a PNG", r)
    if pngs:
        check_png("the PIL image is a valid 7x5 PNG", pngs[0]["png"], (7, 5))
    out, err, r = k.run("display(Image.new('CMYK', (3, 2)))")
    pngs = [x for x in r["results"] if "png" in x]
    if pngs:
        check_png("a CMYK image is converted to a valid PNG", pngs[0]["png"], (3, 2))
    else:
        t.ok(False, "a CMYK image is converted to a valid PNG", r)
else:
    for d in range(3):
        t.skip("PIL check %d" % d, "python3-pil is not installed (make deps)")

if have("pandas"):
    out, err, r = k.run("import pandas as pd\n"
                        "df = pd.DataFrame({'alpha': [1, 2], 'beta': ['x', 'y']})\ndf")
    res = r["results"][0] if r["results"] else {}
    t.ok("<table" in res.get("html", "") and "alpha" in res.get("html", ""),
         "a DataFrame has html", res)
    t.ok("alpha" in res.get("text", "") and "beta" in res.get("text", ""),
         "and a text form", res)
else:
    t.skip("a DataFrame has html", "python3-pandas is not installed (make deps)")
    t.skip("and a text form", "python3-pandas is not installed (make deps)")

# --- errors ---------------------------------------------------------------------------------------
out, err, r = k.run("def inv(x):\n    return 1 / x\n")
n_def = r["execution_count"]
out, err, r = k.run("y = 1\ninv(0)")
e = r["error"] or {}
tb = "".join(e.get("traceback", []))
t.is_((r["status"], r["exit_code"], e.get("name"), e.get("value")),
      ("error", 1, "ZeroDivisionError", "division by zero"), "an exception is a structured error")
t.ok('File "<cell %d>", line 2, in <module>' % r["execution_count"] in tb and
     'File "<cell %d>", line 2, in inv' % n_def in tb and "return 1 / x" in tb and
     "inv(0)" in tb, "the traceback names the cells and shows their lines", tb)
t.ok("sbx_kernel" not in tb and tb.startswith("Traceback (most recent call last):\n")
     and tb.count('  File "') == 2, "only the user's frames are in it", tb)
out, err, r = k.run("x = (1,\n")
e = r["error"] or {}
tb = "".join(e.get("traceback", []))
t.ok(r["status"] == "error" and e.get("name") == "SyntaxError" and
     'File "<cell %d>", line 1' % r["execution_count"] in tb and "x = (1," in tb and
     "sbx_kernel" not in tb, "a SyntaxError is reported the same way", e)
out, err, r = k.run("try:\n    {}['k']\nexcept KeyError as ex:\n    raise ValueError('v') from ex")
tb = "".join((r["error"] or {}).get("traceback", []))
t.ok("KeyError" in tb and "direct cause" in tb and "sbx_kernel" not in tb,
     "chained exceptions keep their cause, without kernel frames", tb)
out, err, r = k.run("def deep(n): return deep(n + 1)\ndeep(0)")
e = r["error"] or {}
t.ok(e.get("name") == "RecursionError" and len("".join(e.get("traceback", []))) < 20000,
     "a RecursionError is reported (with a short traceback)", e.get("name"))
t.is_(main_text(k.run("counter")[2]), "50", "and the kernel goes on")
out, err, r = k.run("import warnings\nwarnings.warn('careful')\n1")
t.ok("careful" in err and "<cell" in err and main_text(r) == "1",
     "a warning goes to stderr, naming the cell", err)

# --- SIGINT ---------------------------------------------------------------------------------------
m = k.send({"op": "execute",
            "code": "import sys\nprint('started', flush=True)\nwhile True:\n    pass\n"})
started = k.wait_output("out", b"started")
time.sleep(0.2)
k.sigint()
out, err, r = k.collect(m)
e = r["error"] or {}
t.ok(started and r["status"] == "error" and e.get("name") == "KeyboardInterrupt" and
     "<cell" in "".join(e.get("traceback", [])), "SIGINT during while True: KeyboardInterrupt", r)
t.is_(main_text(k.run("counter")[2]), "50", "state is kept after the interrupt")
m = k.send({"op": "execute", "code": "import time\nprint('s', flush=True)\ntime.sleep(100)"})
k.wait_output("out", b"s\n")
k.sigint()
out, err, r = k.collect(m, timeout=60)
t.is_((r["error"] or {}).get("name"), "KeyboardInterrupt", "SIGINT interrupts time.sleep(100)")
k.sigint()
time.sleep(0.3)
k.sigint()
time.sleep(0.3)
out, err, r = k.run("counter + 1")
t.ok(k.alive() and r["status"] == "ok" and main_text(r) == "51",
     "SIGINT while idle is ignored (and not delivered to the next cell)", r)

# SIGINT storms while short cells run: every reply is well framed and either ok or interrupted.
stop = threading.Event()


def storm():
    while not stop.is_set():
        try:
            k.sigint()
        except ProcessLookupError:
            return
        time.sleep(0.003)


th = threading.Thread(target=storm)
th.start()
bad, stormed = [], 0
try:
    for i in range(40):
        out, err, r = k.run("z = sum(range(2000))\nz", timeout=60)
        name = (r.get("error") or {}).get("name")
        if name == "KeyboardInterrupt":
            stormed += 1
        elif not (r["status"] == "ok" and main_text(r) == "1999000"):
            bad.append(r)
finally:
    stop.set()
    th.join()
t.diag("SIGINT storm: %d of 40 cells interrupted" % stormed)
t.ok(not bad and k.alive(), "40 cells under a SIGINT storm: all replies well formed", bad[:2])
t.is_(main_text(k.run("counter")[2]), "50", "the protocol survived the storm")

# --- hostile cells --------------------------------------------------------------------------------
for code, desc in (("import os\nos.close(1)", "closes fd 1"),
                   ("import os\nos.close(2)\nos.close(1)\nopen('/dev/null')", "closes fds 1 and 2"),
                   ("import sys\nsys.stdout.close()", "closes sys.stdout"),
                   ("import sys, io\nsys.stdout = io.StringIO()\nprint('lost')",
                    "replaces sys.stdout"),
                   ("import sys\nsys.stdout = None\nsys.stderr = None", "sets sys.stdout to None"),
                   ("import os\nfd = os.open('/dev/null', os.O_WRONLY)\n"
                    "os.dup2(fd, 1)\nos.dup2(fd, 2)",
                    "redirects fds 1 and 2 to /dev/null")):
    out, err, r = k.run(code)
    out2, err2, r2 = k.run("import sys\nprint('back')\nprint('err back', file=sys.stderr)\n7")
    t.ok((out2, err2, main_text(r2)) == ("back\n", "err back\n", "7"),
         "a cell that %s does not break the next cell's output" % desc, (out2, err2, r2, r))
out, err, r = k.run("import sys\nsys.exit(3)")
e = r["error"] or {}
t.is_((r["status"], e.get("name"), e.get("value"), k.alive()), ("error", "SystemExit", "3", True),
      "sys.exit(3) is an error SystemExit with its code, the kernel lives")
for call in ("exit()", "quit(4)", "raise SystemExit('bye')"):
    out, err, r = k.run(call)
    t.ok((r["error"] or {}).get("name") == "SystemExit" and k.alive(),
         "%s is reported, the kernel lives" % call, r)
out, err, r = k.run("input()")
t.is_((r["error"] or {}).get("name"), "EOFError", "input() sees EOF (stdin is /dev/null)")
out, err, r = k.run("import os\npid = os.fork()\nif pid == 0:\n    print('child')\nelse:\n"
                    "    os.waitpid(pid, 0)\n    print('parent')\n")
t.ok("parent\n" in out and r["status"] == "ok", "a cell that forks: the parent's reply", (out, r))
out, err, r = k.run("counter")
t.is_((main_text(r), k.alive()), ("50", True), "the child never serves the protocol")
out, err, r = k.run("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nNone")
m = k.send({"op": "execute", "code": "print('s2', flush=True)\nwhile True: pass"})
k.wait_output("out", b"s2")
k.sigint()
out, err, r = k.collect(m, timeout=60)
t.is_((r["error"] or {}).get("name"), "KeyboardInterrupt",
      "a cell that ignored SIGINT earlier: the next cell is interruptible again")
out, err, r = k.run("import __main__\n__name__, __main__.counter")
t.is_(main_text(r), "('__main__', 50)", "cells run in __main__")

# --- variables ------------------------------------------------------------------------------------
k.run("import json\ndef fn(): pass\nclass Cls: pass\n_hidden = 1\nbig = 'b' * 1000\n"
      "nums = list(range(100000))\nflag = True")
out, err, r = k.call({"op": "variables"})
names = {v["name"]: v for v in r.get("variables", [])}
t.ok(r.get("op") == "variables" and {"big", "nums", "flag", "counter"} <= set(names),
     "variables lists the user's variables", sorted(names))
t.ok(not {"json", "fn", "Cls", "_hidden", "display", "exit", "__builtins__"} & set(names),
     "and leaves out modules, functions, classes, _names and the kernel's own", sorted(names))
t.ok(all(len(v["repr"]) <= 200 for v in names.values()) and
     names.get("nums", {}).get("type") == "list"
     and names.get("flag", {}).get("repr") == "True", "type names, repr capped at 200",
     names.get("nums"))
out, err, r = k.call({"op": "set_variable", "name": "injected",
                      "value": {"a": [1, 2.5, None, True]}})
t.is_(r, {"op": "set_variable", "ok": True}, "set_variable sets a JSON value")
t.is_(main_text(k.run("injected")[2]), "{'a': [1, 2.5, None, True]}", "and the cell sees it")
for bad_name in ("1x", "class", "", "a b", "__builtins__", None, "x-y"):
    out, err, r = k.call({"op": "set_variable", "name": bad_name, "value": 1})
    t.ok(r.get("ok") is False and r.get("error", {}).get("name"), "set_variable refuses %r"
         % (bad_name,), r)
out, err, r = k.call({"op": "set_variable", "name": "novalue"})
t.ok(r.get("ok") is False, "set_variable without a value is refused", r)
out, err, r = k.call({"op": "bogus"})
t.ok(r.get("status") == "error" and r["error"]["name"] == "ProtocolError",
     "an unknown op is a ProtocolError reply (framed)", r)
out, err, r = k.run("counter")
t.is_(main_text(r), "50", "state unchanged by all of that")
out, err, r = k.run("for i in range(400):\n    display('x' * 100000)")
res = r["results"]
dropped = [x for x in res if "result dropped" in x["text"]]
t.ok(len(res) == 400 and 50 <= len(dropped) <= 100 and
     sum(len(x["text"]) for x in res) <= 33 << 20,
     "results past the reply budget (32 Mi characters) are replaced by a note (%d dropped)"
     % len(dropped))
k.run("import threading, time\nthreading.Thread(target=time.sleep, args=(1000,)).start()")
k.sock.close()
t.is_(k.wait_exit(30), 0, "EOF on the control socket: exit 0 at once, even with a thread left")
k.close()

# --- memory ---------------------------------------------------------------------------------------
k = kd.Kernel("python")
t.diag("python kernel start (spawn to ready): %.0f ms" % k.ready_ms)
k.run("1 + 1")
k.sigint()  # idle, and no thread of numpy & co. to take it: it must stay pending, then go
time.sleep(0.3)
out, err, r = k.run("2 + 2")
t.is_((r["status"], main_text(r)), ("ok", "4"),
      "SIGINT while idle in a fresh kernel (no other threads) is not delivered to the next cell")
k.run("1 / 0")
k.call({"op": "variables"})
time.sleep(0.2)
rss = k.rss_kb()
t.diag("idle python kernel RSS: %d KiB (ps -o rss, after 1+1, an error and variables)" % rss)
t.ok(0 < rss <= 20 * 1024, "an idle python kernel holds at most 20 MiB (%d KiB)" % rss)
out, err, r = k.run("import sys\nsorted(m for m in ('numpy', 'matplotlib', 'pandas', 'PIL') "
                    "if m in sys.modules)")
t.is_(main_text(r), "[]", "no numpy/matplotlib/pandas/PIL imported by the kernel itself")
k.close()
sys.exit(t.done())
