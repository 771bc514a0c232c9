#!/usr/bin/python3
"""warm_semantics.t: a Python run started from the pre-started interpreter (sandbox/warm.c) looks
exactly like `python3 main.py` started cold: sys.argv, __name__, __file__, sys.path[0],
tracebacks, exit codes, signals, uncaught exceptions, SyntaxError, input() from stdin, -u, the
environment, and its process view. Each program runs warm (the default) and cold (SBX_WARM=0) and
the two results must be equal; the warm one must really have been warm (its command line is the
stub's), and a run the stub cannot honour (python3 -m, PYTHON* env) starts cold."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
from tap import ok  # noqa: E402

# With SBX_ZYGOTE=1 (tests/sandbox/zygote_semantics.t) the warm side is forked from the slot's
# zygote (sandbox/zygote.c), whose command line says so; otherwise the pre-start alone is tested
# (the zygote is the default: SBX_ZYGOTE=0 turns it off).
ZYGOTE = os.environ.get("SBX_ZYGOTE") == "1"
os.environ["SBX_ZYGOTE"] = "1" if ZYGOTE else "0"
S.start()
PY = S.PY
MARK = "-zygote" if ZYGOTE else "-warm"


both, same = S.warm_and_cold, S.same_warm_and_cold


CMDLINE = ("import sys;sys.stdout.write(str('#sbx'+'%s' in open('/proc/self/cmdline').read()))\n"
           % MARK)
w, c = both([PY, "-u", "/work/main.py"], {"main.py": CMDLINE})
ok(w.get("stdout") == "True", "the default start of python3 -u main.py is warm", S.show(w))
ok(c.get("stdout") == "False", "with SBX_WARM=0 it starts cold", S.show(c))
w, c = both([PY, "-c", CMDLINE])
ok(w.get("stdout") == "True", "python3 -c is warm too", S.show(w))

IDENT = r"""
import sys, os
print(sys.argv)
print(__name__, globals().get('__file__'), repr(__doc__), __package__, __spec__)
print(sys.path[0], os.getcwd())
print(sys.flags.no_site, sys.flags.dont_write_bytecode, sys.stdout.write_through)
print(sorted(os.environ.items()))
print(os.getpid(), os.getppid(), sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
print(os.getuid(), os.getgid(), os.getgroups())
print(open('/proc/self/status').read().split('CapInh')[1].split('Speculation')[0])
import resource
print([resource.getrlimit(getattr(resource, r)) for r in dir(resource) if r.startswith('RLIMIT_')])
print(os.getpriority(os.PRIO_PROCESS, 0), os.getsid(0) == os.getpid())
print(sys.stdin.isatty(), sys.stdout.line_buffering, sys.stdout.encoding, sys.getfilesystemencoding())
print('exit' in dir(__builtins__), type(__loader__).__name__)
print(open('/proc/self/comm').read(), sorted(os.listdir('/proc/self/fd')), sorted(os.listdir('/proc/self/task')) == [str(os.getpid())])
"""
same([PY, "-u", "/work/main.py", "a b", "-c", "x"], {"main.py": IDENT},
     "argv, __main__, __file__, sys.path[0], cwd, flags, environment, pid view, ids, capabilities, "
     "seccomp, rlimits, nice, session: as python3 -u main.py", env=["EXTRA=1"],
     memory_mb=300, open_files=100, file_size_mb=3, processes=20, cpu_ms=4000)
same([PY, "main.py", "rel"], {"main.py": IDENT}, "a relative script path, no -u: the same")
same([PY, "-S", "-B", "/work/main.py"], {"main.py": IDENT}, "-S -B: the same")
same([PY, "-c", IDENT, "arg1"], None, "-c code with arguments: the same")

TB = "def f(x):\n    return 1 / x\n\nprint('before', flush=True)\nf(0)\n"
w, c = same([PY, "-u", "/work/main.py"], {"main.py": TB},
            "an uncaught exception: exit 1 and the same traceback on stderr")
ok('File "/work/main.py", line 5, in <module>' in (w.get("stderr") or "") and
   w.get("exit_code") == 1 and "runpy" not in w.get("stderr", "") and
   "_sbx" not in w.get("stderr", ""), "the traceback names /work/main.py, line 5, and nothing "
   "of the stub", S.show(w))
same([PY, "-u", "/work/main.py"], {"main.py": "import sys\nprint('x')\nsys.exit(3)\n"},
     "sys.exit(3): exit code 3")
same([PY, "-u", "/work/main.py"], {"main.py": "raise SystemExit('bye')\n"},
     "SystemExit('bye'): message on stderr, exit 1")
same([PY, "-u", "/work/main.py"], {"main.py": "import os, signal\nos.kill(os.getpid(), "
                                   "signal.SIGSEGV)\n"}, "os.kill(getpid(), SIGSEGV): signal SIGSEGV")
same([PY, "-u", "/work/main.py"], {"main.py": "import ctypes\nctypes.string_at(0)\n"},
     "a real segfault: signal SIGSEGV")
same([PY, "-u", "/work/main.py"], {"main.py": "x = (1,\n"}, "a SyntaxError: the same report")
same([PY, "-u", "/work/main.py"], {"main.py": "raise KeyboardInterrupt\n"},
     "KeyboardInterrupt: the same outcome")
same([PY, "-u", "/work/nope.py"], {}, "a missing script: exit 2 and the same message")
same([PY, "-u", "/work/main.py"], {"main.py": "import threading, time\n"
                                   "threading.Thread(target=lambda: (time.sleep(0.2), "
                                   "print('thread done'))).start()\nprint('main done')\n"},
     "a non-daemon thread is waited for at exit")
stdin_path = os.path.join(S.tmpdir(), "in.txt")
with open(stdin_path, "w") as f:
    f.write("hello\nworld\n")
same([PY, "-u", "/work/main.py"], {"main.py": "print(input().upper())\nimport sys\n"
                                   "print(sys.stdin.read())\n"},
     "input() and sys.stdin read the run's stdin", stdin=stdin_path)
same([PY, "/work/main.py"], {"main.py": "import sys\nprint('a')\nsys.stderr.write('b\\n')\n"
                             "print(sys.stdout.buffer.write(b'c\\n'))\n"},
     "buffered stdout and stderr without -u: the same bytes")
same([PY, "-u", "/work/main.py"], {"main.py": "import sys\nprint(sys._getframe().f_code.co_filename,"
                                   " __import__('__main__').__dict__ is globals())\n"},
     "the running frame is main.py's and __main__ is its module")

# Billing: the start is not billed, the user's work always is.
w, c = both([PY, "-u", "/work/main.py"], {"main.py": "import time\nt = time.process_time()\n"
                                        "while time.process_time() - t < 0.5:\n    pass\n"
                                        "b = bytearray(64 << 20)\nb[::4096] = b'x' * len(b[::4096])\n"})
ok(w.get("status") == "ok" and w.get("cpu_ms", 0) >= 500 and w.get("memory_kb", 0) >= 60 << 10,
   "a warm run is billed its own CPU (>= 500 ms spun) and memory (>= 64 MiB touched)", S.show(w))
w, c = both([PY, "-c", "pass"])
ok(w.get("status") == "ok" and c.get("status") == "ok" and w.get("cpu_ms", 99) < c.get("cpu_ms", 0),
   "the interpreter's start is not billed: a warm empty run costs less CPU than a cold one",
   S.show(w) + S.show(c))

# A read-only script outside /work (the evaluate runner's case) is compiled and its imports
# loaded ahead; the run still sees its current file, and /work is never read before the job.
ro = S.tmpdir(owner=None)
with open(os.path.join(ro, "run.py"), "w") as f:
    f.write("import sys\nimport hmod\nprint(hmod.X, __file__, sys.path[0], sys.argv)\n"
            "import os\nprint(sorted(os.listdir('/work')))\n")
with open(os.path.join(ro, "hmod.py"), "w") as f:
    f.write("X = 41 + 1\n")
same([PY, "-S", "-B", "/opt/ro/run.py", "z"], {"mod.py": "open('/work/imported', 'w')\n"},
     "a read-only script outside /work, preloaded: the same as cold", binds=[f"{ro}:/opt/ro"])

# Forms the pre-started interpreter cannot honour start cold, and still work.
w, c = both([PY, "-m", "json.tool", "--help"])
ok(S.happened(w) and w.get("exit_code") == 0 and w.get("stdout") == c.get("stdout"),
   "python3 -m json.tool runs (cold), as with SBX_WARM=0", S.show(w))
w, c = both([PY, "-c", CMDLINE], env=["PYTHONHASHSEED=1"])
ok(w.get("stdout") == "False", "PYTHONHASHSEED in the environment: cold start (the variable is "
    "honoured)", S.show(w))
w, c = both(["/bin/sh", "-c", "echo hi"])
ok(w.get("stdout") == "hi\n", "a shell run is untouched", S.show(w))
S.finish()
