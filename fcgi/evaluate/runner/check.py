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
    if len(sys.argv) == 3 and sys.argv[1] == "--host":
        host(sys.argv[2])
        return
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


# ---- host mode: the checks of a request in one sandbox run (judge.c: "the check host") ----
#
# `check.py --host PROGRAM|-`: one sandbox run judges a lane's checks one at a time. judge.c made
# two FIFOs in /work before the run (.sbx_cmd, .sbx_res); before each check it empties /work and
# writes that case's files there as for a run of its own (input, answer, feedback/, the program,
# .sbx_team: the solution's output), then sends one JSON line on .sbx_cmd. The host forks the
# check: `python3 -u PROGRAM` semantics from the code compiled once here (PROGRAM given), or the
# language's argv exec'd (`-`), with the case's Kattis arguments, .sbx_team on stdin and
# /work/.sbx_out, /work/.sbx_err as stdout and stderr. When the check's process ends (or its wall
# or CPU limit), every other process of the sandbox but init and the host is killed and reaped
# (the host is their subreaper: setsid() and double forks end here too), /tmp, /dev/shm and the
# System V IPC objects are emptied, and only then is the result line written on .sbx_res: no
# process of a check is alive when judge.c reads its feedback or prepares the next case. The host
# is not dumpable (no /proc/<host>/fd, mem or environ for a check), ignores every signal it may,
# and never reads a case's files itself; a check that kills or stops it ends the run, which
# judge.c sees (end of file, or no answer by its own deadline) and answers JE, never AC.

_SIGS_KEPT = ("SIGKILL", "SIGSTOP", "SIGCHLD")


def _libc():
    import ctypes
    return ctypes, ctypes.CDLL(None, use_errno=True)


def _host_setup():
    ctypes, libc = _libc()
    # PR_SET_DUMPABLE 0: /proc/<host>/{fd,mem,environ} root's, ptrace refused besides seccomp.
    # PR_SET_CHILD_SUBREAPER: a check's orphans come back here, not to the sandbox's init.
    for opt, val in ((4, 0), (36, 1)):
        if libc.prctl(opt, val, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl %d" % opt)
    import signal
    # SIGCHLD at its default (an ignored SIGCHLD, which exec keeps, would reap the checks
    # before the host could see how they ended).
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    saved = {}
    kept = {getattr(signal, n) for n in _SIGS_KEPT}
    # By number, not by name: the real-time signals have no names, and a check could kill the
    # host with SIGRTMIN + k while it ignored only the named ones.
    for sig in sorted(signal.valid_signals()):
        if sig in kept:
            continue
        try:
            saved[sig] = signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError):
            pass
    return ctypes, libc, saved


def _rm(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    import stat
    if stat.S_ISDIR(st.st_mode):
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
        for name in os.listdir(path):
            _rm(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)


def _wipe_ipc(ctypes, libc):
    # The run's IPC namespace outlives a check: remove every System V object, by index (the
    # *_STAT_ANY commands need no read permission; /proc/sysvipc is hidden by subset=pid).
    buf = ctypes.create_string_buffer(4096)
    for ctl, info, stat_any, nargs in ((libc.shmctl, 14, 15, 3), (libc.msgctl, 12, 13, 3),
                                       (libc.semctl, 19, 20, 4)):
        args = (0, info, buf) if nargs == 3 else (0, 0, info, buf)
        top = ctl(*args)
        for idx in range(top + 1 if top >= 0 else 0):
            ident = ctl(idx, stat_any, buf) if nargs == 3 else ctl(idx, 0, stat_any, buf)
            if ident >= 0:
                if (ctl(ident, 0, None) if nargs == 3 else ctl(ident, 0, 0, None)) != 0:
                    raise OSError(ctypes.get_errno(), "IPC_RMID")


def _reap_all(cpu):
    """Kill and reap every process of the sandbox but init and this one; their CPU into cpu[0]."""
    import signal
    import time
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            while True:
                pid, _, ru = os.wait4(-1, os.WNOHANG)
                if pid == 0:
                    break
                cpu[0] += ru.ru_utime + ru.ru_stime
        except ChildProcessError:
            return
        time.sleep(0.001)


def _child_python(code, path, args, saved):
    import signal
    for sig, old in saved.items():
        try:
            signal.signal(sig, old)
        except (OSError, ValueError, TypeError):
            signal.signal(sig, signal.SIG_DFL)
    sys.argv = [os.path.basename(path)] + list(args)
    sys.path[0] = os.path.dirname(path)
    enc = sys.stdout.encoding or "utf-8"
    sys.stdin = sys.__stdin__ = io.open(0, "r", encoding=enc, closefd=False)
    for fd, name in ((1, "stdout"), (2, "stderr")):
        old = getattr(sys, name)
        w = io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding=old.encoding,
                             errors=old.errors, write_through=True)
        setattr(sys, name, w)
        setattr(sys, "__%s__" % name, w)
    main_mod = type(sys)("__main__")
    main_mod.__file__ = path
    main_mod.__builtins__ = builtins
    sys.modules["__main__"] = main_mod
    rc = 0
    try:
        if code is False:  # it did not compile in the host: the same error, as python3 shows it
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
        exec(code, main_mod.__dict__)
    except SystemExit as e:
        rc = _exit_code(e)
    except BaseException as e:  # as python3 main.py reports it: main.py's frames only, exit 1
        tb = e.__traceback__.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        rc = 1
    try:
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        import atexit
        atexit._run_exitfuncs()
    except SystemExit as e:
        rc = _exit_code(e)
    except BaseException:
        pass
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except BaseException:
            pass
    os._exit(rc & 0xff)


def _exit_code(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stderr.write(str(code) + "\n")
    except BaseException:
        pass
    return 1


def _child(job, code, path, saved, keep, stdio):
    import resource
    import signal
    try:
        os.setsid()
        for fd in keep:
            os.close(fd)
        for fd, to in zip(stdio, (0, 1, 2)):
            os.dup2(fd, to)
            os.close(fd)
        os.closerange(3, 65536)
        cpu_s = (int(job["cpu_ms"]) + 999) // 1000
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
        fsize = int(job["fsize"])
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        os.chdir("/work")
        if path is not None:
            _child_python(code, path, job["args"], saved)
        for sig in saved:
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        argv = job["argv"]
        os.execv(argv[0], argv)
    except BaseException as e:
        try:
            os.write(2, ("check host: %s\n" % e).encode())
        except BaseException:
            pass
    os._exit(127)


def _check(job, code, path, saved, keep, ctypes, libc):
    import select
    import time
    cpu = [0.0]
    # The check's stdio, opened here: its stdout and stderr are measured against the output
    # limit after it (RLIMIT_FSIZE stops them there; today's run is killed there: JE either way).
    team = os.open("/work/.sbx_team", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    os.set_blocking(team, True)
    os.unlink("/work/.sbx_team")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out = os.open("/work/.sbx_out", flags, 0o644)
    err = os.open("/work/.sbx_err", flags, 0o644)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(job, code, path, saved, keep, (team, out, err))
    os.close(team)
    pfd = os.pidfd_open(pid)
    p = select.poll()
    p.register(pfd, select.POLLIN)
    wall = int(job["wall_ms"])
    left = wall
    timed_out = False
    while True:
        if p.poll(max(left, 0)):
            break
        left = wall - int((time.monotonic() - t0) * 1000)
        if left <= 0:
            timed_out = True
            break
    os.close(pfd)
    if timed_out:
        os.kill(pid, 9)
    _, status, ru = os.wait4(pid, 0)
    wall_ms = int((time.monotonic() - t0) * 1000)
    cpu[0] += ru.ru_utime + ru.ru_stime
    _reap_all(cpu)
    for d in ("/tmp", "/dev/shm"):
        if os.path.isdir(d):
            for name in os.listdir(d):
                _rm(os.path.join(d, name))
    _wipe_ipc(ctypes, libc)
    os.chmod("/work", 0o755)
    cpu_ms = int(cpu[0] * 1000)
    full = max(os.fstat(out).st_size, os.fstat(err).st_size) >= int(job["fsize"])
    os.close(out)
    os.close(err)
    if timed_out:
        what = "timeout 0"
    elif cpu_ms > int(job["cpu_ms"]) or (os.WIFSIGNALED(status) and os.WTERMSIG(status) == 24):
        what = "timeout 1"
    elif full:
        what = "output 0"
    elif os.WIFSIGNALED(status):
        what = "signal %d" % os.WTERMSIG(status)
    else:
        what = "exit %d" % os.WEXITSTATUS(status)
    return "%s %d %d" % (what, wall_ms, cpu_ms)


def host(program):
    ctypes, libc, saved = _host_setup()
    cmd = os.open("/work/.sbx_cmd", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    res = os.open("/work/.sbx_res", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    code = path = None
    if program != "-":
        path = os.path.abspath(program)
        sbx_site.python_site()
        try:
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
        except Exception:
            code = False  # each check shows the error as `python3 main.py` would
    import json
    reader = io.open(cmd, "rb", closefd=False)
    os.write(res, b"ready\n")
    while True:
        line = reader.readline()
        if not line:
            os._exit(0)
        job = json.loads(line)
        try:
            answer = "%d %s\n" % (job["seq"], _check(job, code, path, saved, (cmd, res),
                                                    ctypes, libc))
        except Exception as e:  # the host can no longer vouch for the sandbox: end it
            sys.stderr.write("check host: %r\n" % (e,))
            os._exit(3)
        os.write(res, answer.encode())


main()
