"""check.py: a Python checker's run (fcgi/evaluate/judge.c), INSIDE the checker's own sandbox:
`/usr/bin/python3 -S -B /opt/sbx/check.py main.py ARGS...` runs main.py as `python3 -u main.py
ARGS...` would (the language's own run form): main.py as __main__ with sys.argv ["main.py",
ARGS...], its directory first on sys.path, the site directories, unbuffered stdout and stderr.

Why not that form itself: each slot keeps ONE pre-started interpreter, of the form of its last
Python run (sandbox/warm.c). Checkers in the `-u` form and the evaluate runner in `-S -B` made
every slot a checker had used start the next runner cold (measured: every runner run after a
request with a checker, until the slots were turned back one run at a time). In the runner's
form, checks and runner runs share the slots' pre-started interpreters. This file imports only
sbx_site at top level (what a pre-started interpreter preloads for a slot whose last run was a
check): preloading the runner's modules too doubled the cost of starting every check's
interpreter (~730 -> ~1430 page faults), while a runner run on such a slot pays only its own
imports, still without an interpreter start."""
import builtins
import io
import os
import sys

import sbx_site


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: check.py PROGRAM [ARGS...]\n")
        os._exit(2)
    path = os.path.abspath(sys.argv[1])
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(path)
    sbx_site.python_site()
    # -u: no buffer between the program's writes and the fds (what a killed checker printed
    # still reaches its feedback).
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        setattr(sys, name, io.TextIOWrapper(io.FileIO(fd, "w", closefd=False),
                                            encoding=old.encoding, errors=old.errors,
                                            write_through=True))
    with open(path, "rb") as f:
        src = f.read()
    main_mod = type(sys)("__main__")
    main_mod.__file__ = path
    main_mod.__builtins__ = builtins
    sys.modules["__main__"] = main_mod
    try:
        exec(compile(src, path, "exec"), main_mod.__dict__)
    except SystemExit:
        raise
    except BaseException as e:  # as python3 main.py reports it: main.py's frames only, exit 1
        tb = e.__traceback__.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        raise SystemExit(1)


main()
