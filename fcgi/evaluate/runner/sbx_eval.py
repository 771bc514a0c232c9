"""sbx_eval.py: the evaluate runner, started INSIDE the sandbox through evaluate.py.

Theory of operation. One sandbox run per evaluate request. This process (the supervisor) reads
one JSON job on stdin, keeps a private duplicate of the real stdout for its one JSON answer, and
points fds 1 and 2 at /dev/null so nothing the user's code prints can corrupt that answer.

- Python modes (io_cases, test): a worker process is forked; it loads the user's code once, then
  forks one child per case (up to the number of cores at a time). Each child gets its own
  rlimits, its own stdout/stderr pipes and a result pipe, so state never leaks between cases and
  a case that crashes, exits, hangs or eats memory fails alone. The worker enforces each case's
  wall time and streams one JSON line per finished case to the supervisor. The worker holds
  user code, so the supervisor trusts nothing it says beyond the line format: if the worker dies
  (load-time crash, os._exit, OOM), the supervisor still answers, blaming the load.
- `cases` mode: the supervisor writes the source to a private build directory, compiles it once
  for compiled languages, then runs the scheduler itself: one fork+exec of the binary or
  interpreter per case (Python programs are forked from a preloaded interpreter instead of
  exec'd: same semantics as `python3 main.py`, without paying interpreter start-up per case).

The whole sandbox run's limits (set by fcgi/evaluate/evaluate.c) are the backstop for everything here.
The job and answer formats are documented in fcgi/evaluate/runner/README.md.
"""
import gc
import os
import select
import sys

import sbx_json as json
import sbx_pycase
from sbx_site import python_site, site_dirs  # noqa: F401
from sbx_sched import (Limits, PipeSource, Scheduler, Task, add_streams,  # noqa
                       child_setup, job_parallel, make_stdin, now_ms, outcome, proc_sample,
                       read_all, rlimit_plan, resource, set_pgid, signal, signal_name, text, PAGE)

# Imported here, not where first used: the pre-started interpreter (sandbox/warm.c) imports this
# module before its job arrives, so what is imported at module level costs a request nothing,
# while each import made during a request is paid again, in page faults (~70 us each on the
# paravirtual MMU of the VM this was measured on): ast alone was ~500 faults in the supervisor.
import _ctypes  # noqa: E402
import ast  # noqa: E402,F401  (io inputs and literal outputs: supervisor, executor, cases)
import traceback  # noqa: E402,F401  (errors in cases)

_PRCTL = _ctypes.dlsym(_ctypes.dlopen(None), "prctl")
sys.dont_write_bytecode = True  # importing a session's module must not leave __pycache__ there
sbx_pycase.register_runner_file(os.path.abspath(__file__))
sbx_pycase.register_runner_file(os.path.abspath(sbx_pycase.__file__))
sbx_pycase.register_runner_file(os.path.abspath(sys.modules["sbx_sched"].__file__))
SECOND_SCHEDULER_CASES = 8  # cases from which a second scheduler shares the forking
PREFORK = 4  # cases a scheduler forks back to back, each held until its turn (sbx_sched)
TOTAL_OUTPUT = 8 << 20    # stdout (and stderr) bytes kept across all cases of one request


# ---- Python modes: the worker process ----

def load_code(job, compiled=None):
    """Compile and exec the user's code in a fresh namespace. Returns (ns, None) or (None, err).
    compiled: a one-element list caching the code object, for a process that loads the code once
    per case (namespace isolation): a code object is immutable, so exec'ing the same one in fresh
    globals is what exec'ing the source again does, without compiling it for every case."""
    import builtins
    code = job.get("code", "")
    sbx_pycase.register_source("<solution>", code)
    # __name__ is not "__main__": a trailing `if __name__ == "__main__": main()` reading stdin
    # must not run when the code is loaded as a library of functions.
    ns = {"__name__": "solution", "__builtins__": builtins}
    try:
        if compiled is None:
            obj = compile(code, "<solution>", "exec")
        else:
            if compiled[0] is None:
                compiled[0] = compile(code, "<solution>", "exec")  # a SyntaxError: every case
            obj = compiled[0]
        exec(obj, ns)
    except BaseException as e:  # SystemExit too: the code may not end the evaluation
        return None, sbx_pycase.format_error(e)
    return ns, None


def python_worker(job, lim, msg_fds, deadline):
    """The worker: load once, then one forked child per case. Writes JSON lines to msg_fds[0]
    (msg_fds[1] is for the second scheduler, closed when there is none)."""
    mode = job["mode"]
    cases = job.get("cases") or []
    out = [os.fdopen(msg_fds[0], "w", buffering=1)]
    msg_open = list(msg_fds)  # those of msg_fds still open in this process

    def send(obj):
        out[0].write(json.dumps(obj) + "\n")

    # The work dir's modules are importable, after the standard library so that a session file
    # named like a stdlib module cannot break the runner's own imports.
    sys.path.append(job.get("cwd") or os.getcwd())
    python_site()
    # Load-time output goes to a file, not a pipe: nobody reads while the code loads.
    cap = os.open(job.get("tmp_dir", "/tmp"), os.O_TMPFILE | os.O_RDWR, 0o600)
    os.dup2(cap, 1)
    os.dup2(cap, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
    t0 = now_ms()
    code_obj = None
    if mode == "stdout":
        ns, err = None, None
        try:
            code_obj = compile(job.get("code", ""), job["source_path"], "exec")
        except BaseException:
            code_obj = None  # the child reports the SyntaxError the way python3 would
    else:
        ns, err = load_code(job)
    func, func_err = None, None
    if mode == "io" and err is None:
        func, func_err = sbx_pycase.resolve_entry(ns, job.get("entry_point", ""))
    sys.stdout.flush()
    sys.stderr.flush()
    os.lseek(cap, 0, 0)
    load_out = os.read(cap, lim.output_bytes)
    os.close(cap)
    null = os.open("/dev/null", os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    send({"load": {"status": "ok" if err is None else "error", "error": err,
                   "stdout": text(load_out), "wall_ms": int(now_ms() - t0)}})
    if err is not None:
        os.close(msg_fds[1])
        return
    sbx_pycase.preload(mode, len(cases))
    # Every case's pure part (input parsed and bound, literal output evaluated) before the first
    # fork: between forks every page the scheduler writes is a copy-on-write fault, and parsing
    # writes many (measured: ~250 faulting pages per case in the schedulers, the main cost).
    preps = ([sbx_pycase.prepare_io_case(func, func_err, c) for c in cases] if mode == "io"
             else None)
    if len(cases) > 1:
        # Objects that survive to here are never collected in the children: a collection there
        # would write to every object's header and copy every page of the heap (copy-on-write).
        # No gc.collect() before: it would do just that here, in the worker (a fork too).
        gc.freeze()
    base_rss = (proc_sample(os.getpid()) or (0, 0))[1] * 1024
    with open("/proc/self/statm") as f:
        vsize = int(f.read().split()[0]) * PAGE
    as_bytes = vsize + lim.memory_bytes + (64 << 20)
    entry = job.get("entry_point", "")
    out_cap = min(lim.output_bytes, max(4096, TOTAL_OUTPUT // max(1, len(cases))))
    plan = rlimit_plan(lim, as_bytes)

    def launch(i):
        case = cases[i]
        stdin_fd = -1
        prep = None
        if mode == "stdout":
            stdin_fd = make_stdin(case.get("stdin", ""))
        elif mode == "io":
            prep = preps[i]
        pipes = [os.pipe() for _ in range(4)]  # out, err, result, and the gate (PREFORK)
        try:
            pid = os.fork()
        except OSError:
            for r, w in pipes:
                os.close(r)
                os.close(w)
            raise
        if pid == 0:
            try:
                # Held until its turn (sbx_sched.Scheduler.prefork); nothing of the case has
                # run yet. No byte (the scheduler dropped it): leave. The worker's message
                # pipes go first: a held case must not keep the supervisor from seeing the
                # worker's end should the worker die.
                for fd in msg_open:
                    os.close(fd)
                if not os.read(pipes[3][0], 1):
                    os._exit(0)
                # 0-2 first: the result pipe's fd 3 may be the number stdin_fd holds.
                child_setup(lim, as_bytes, pipes[0][1], pipes[1][1], stdin_fd, plan)
                os.dup2(pipes[2][1], 3)
                os.closerange(4, 1 << 16)
                if mode == "stdout":
                    sys.stdin = open(0, "r", closefd=False)
                    if code_obj is None:
                        os.execv(sys.executable, [sys.executable, job["source_path"]]
                                 + [str(a) for a in case.get("args") or []])
                    sbx_pycase.run_script(code_obj, job["source_path"], case.get("args") or [])
                if mode == "io":
                    res = sbx_pycase.run_io_case(ns, func, prep)
                else:
                    res = sbx_pycase.run_test_case(ns, entry, case.get("test", ""))
                write_result(res)
            finally:
                os._exit(0)
        set_pgid(pid)
        if stdin_fd >= 0:
            os.close(stdin_fd)
        for r, w in pipes[:3]:
            os.close(w)
        os.close(pipes[3][0])
        t = Task(i, pid, {"out": pipes[0][0], "err": pipes[1][0], "res": pipes[2][0]},
                 lim, out_cap)
        t.gate = pipes[3][1]
        t.base_rss = base_rss
        return t

    def finish(t, status):
        if mode == "stdout":
            return exec_finish(t, status)
        return python_finish(t, status)

    def done(i, res):
        res["index"] = i
        send({"case": res})

    # Forking is the serial part of a case (page tables are copied, and every page the parent
    # then writes faults): with many cases two schedulers, each a fork of this loaded worker,
    # share the indices and the cores.
    parallel = job_parallel(job)
    source, second = range(len(cases)), 0
    if parallel >= 2 and len(cases) >= SECOND_SCHEDULER_CASES:
        source = PipeSource(PipeSource.fill(range(len(cases))))
        second = os.fork()
        if second == 0:
            try:
                first, out[0] = out[0], os.fdopen(msg_fds[1], "w", buffering=1)
                first.close()  # the first scheduler's pipe (the garbage collector would too)
                msg_open.remove(msg_fds[0])
                Scheduler(source, launch, finish, done, parallel // 2, deadline,
                          bool(job.get("stop_on_failure")), lim.wall_ms, PREFORK).run()
                out[0].flush()
            finally:
                os._exit(0)
        parallel -= parallel // 2
    os.close(msg_fds[1])
    msg_open.remove(msg_fds[1])
    Scheduler(source, launch, finish, done, parallel, deadline,
              bool(job.get("stop_on_failure")), lim.wall_ms, PREFORK).run()
    if second:
        try:
            os.waitpid(second, 0)
        except ChildProcessError:
            pass
    send({"done": True})
    out[0].flush()


def python_finish(t, status):
    """A Python case's result: what its process wrote to the result pipe, unless a limit or a
    crash ended it first."""
    res = {"status": "error", "passed": False, "error": None}
    if t.bufs["res"] and not t.kill_reason:
        try:
            got = json.loads(bytes(t.bufs["res"]))
            if isinstance(got, dict):
                res = got
        except ValueError:
            pass
    elif os.WIFEXITED(status) and not t.kill_reason:
        res["error"] = ("the process exited with code %d before returning a result "
                        "(os._exit or a crash in native code)" % os.WEXITSTATUS(status))
    res = outcome(t, status, res)
    add_streams(t, res)
    return res


def write_result(res):
    """In a case's process: flush the user's output, then the result to fd 3."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    data = json.dumps(res).encode()
    while data:
        data = data[os.write(3, data):]


def run_single_python_case(job, lim, deadline, results):
    """One io or test case: no worker, the case's own process loads the code and runs the case.
    A fork and a scheduler less is a good part of a small request's cost (HumanEval's problems
    are one test each). The case's limits then cover loading too, as for `python3 main.py`, and
    what loading prints is in the case's stdout. Returns the load object."""
    mode, case = job["mode"], job["cases"][0]
    # The supervisor as its own executor (main_direct) makes what the case's process needs
    # that does not depend on the code before the fork: a page it writes before the fork is
    # its own already (it was exec'd, not forked), while every page the case's process writes
    # after it is a copy-on-write fault. An executor is a fork itself: there it would be more
    # faults, not fewer (measured: +75 in the executor for -30 in the case).
    prepared = DIRECT[0]
    plan = None
    if prepared:
        plan = rlimit_plan(lim, 0)
        sys.path.append(job.get("cwd") or os.getcwd())
        python_site(site_dirs())
    # Nothing inherited is then ever collected in the case's process: a collection there would
    # write to every inherited object's header (a fault per page of the heap).
    gc.freeze()

    def launch(i):
        pipes = [os.pipe() for _ in range(3)]
        pid = os.fork()
        if pid == 0:
            try:
                child_setup(lim, 0, pipes[0][1], pipes[1][1], -1, plan)
                os.dup2(pipes[2][1], 3)
                os.closerange(4, 1 << 16)  # the answer's private fd among them
                sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
                sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
                if not prepared:
                    sys.path.append(job.get("cwd") or os.getcwd())
                    python_site()
                t0 = now_ms()
                ns, err = load_code(job)
                load = {"status": "ok" if err is None else "error", "error": err, "stdout": "",
                        "wall_ms": int(now_ms() - t0)}
                if err is not None:
                    res = {"status": "error", "passed": False, "got": None, "expected": None,
                           "error": err}
                else:
                    # As in the worker: the address-space limit counts from what loading left.
                    with open("/proc/self/statm") as f:
                        vsize = int(f.read().split()[0]) * PAGE
                    as_bytes = vsize + lim.memory_bytes + (64 << 20)
                    resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
                    if mode == "io":
                        func, func_err = sbx_pycase.resolve_entry(ns, job.get("entry_point", ""))
                        prep = sbx_pycase.prepare_io_case(func, func_err, case)
                        res = sbx_pycase.run_io_case(ns, func, prep)
                    else:
                        res = sbx_pycase.run_test_case(ns, job.get("entry_point", ""),
                                                       case.get("test", ""))
                res["load"] = load
                write_result(res)
            finally:
                os._exit(0)
        set_pgid(pid)
        for r, w in pipes:
            os.close(w)
        return Task(i, pid, {"out": pipes[0][0], "err": pipes[1][0], "res": pipes[2][0]},
                    lim, lim.output_bytes)

    Scheduler([0], launch, python_finish, results.__setitem__, 1, deadline, False,
              lim.wall_ms).run()
    res = results.setdefault(0, {"status": "error", "passed": False,
                                 "error": "the case could not run"})
    load = res.pop("load", None)
    if not isinstance(load, dict):  # it never finished loading: the case's end says why
        load = {"status": res.get("status", "error"), "error": res.get("error"),
                "stdout": "", "wall_ms": res.get("wall_ms", 0)}
    return load


# ---- Python modes, "isolation": "namespace" (the seed's own semantics) ----

class NsProc:
    """One long-lived case process of namespace isolation, and the cases sent to it: q[0] is
    the one it runs (its start and CPU figure at start), the rest wait in its control pipe."""

    def __init__(self, pid, ctl_w, res_r):
        self.pid, self.ctl_w, self.res_r = pid, ctl_w, res_r
        self.buf = b""
        self.q = []           # indices sent, in order; q[0] runs
        self.start = 0.0      # when q[0] started (as seen here: sent, or the previous reported)
        self.cpu0 = None      # its CPU when q[0] started (None: not sampled yet)
        self.fast = True      # its last case was short: it is sent cases ahead


def ns_child(job, lim, ctl_r, res_w, site):
    """A namespace-isolation process: for each index read on ctl_r, the code is exec'd in fresh
    module globals and the case run, its output captured in temporary files; one JSON line per
    case on res_w. What the process itself holds (sys.modules, sys.setrecursionlimit, builtins,
    os.environ, threads, the heap) carries over from case to case, as in the seed."""
    mode, cases = job["mode"], job["cases"]
    os.setpgid(0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.dup2(ctl_r, 3)
    os.dup2(res_w, 4)
    os.closerange(5, 1 << 16)
    sys.path.append(job.get("cwd") or os.getcwd())
    python_site(site)
    fd = os.open("/proc/self/statm", os.O_RDONLY)
    vsize = int(os.read(fd, 256).split()[0]) * PAGE
    os.close(fd)
    as_bytes = vsize + lim.memory_bytes + (64 << 20)
    for what, pair in ((resource.RLIMIT_CORE, (0, 0)), (resource.RLIMIT_AS, (as_bytes, as_bytes)),
                       (resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))):
        resource.setrlimit(what, pair)
    tmp = job.get("tmp_dir", "/tmp")
    ctl = os.fdopen(3, "rb")
    compiled, entry = [None], [None]
    # One pair of output files for all the cases, emptied after a case that wrote to them, and
    # the same file objects while the code leaves them open: a new pair of files and of text
    # files per case was half of what a small case cost. fds 1 and 2 are pointed at them again
    # for every case, and sys.stdout / sys.stderr set again, whatever the last case did.
    out = os.open(tmp, os.O_TMPFILE | os.O_RDWR, 0o600)
    err = os.open(tmp, os.O_TMPFILE | os.O_RDWR, 0o600)
    files = [None, None]
    while True:
        line = ctl.readline()
        if not line:
            os._exit(0)
        i = int(line)
        try:
            os.dup2(out, 1)
            os.dup2(err, 2)
        except OSError:  # the code closed them: a new pair
            out = os.open(tmp, os.O_TMPFILE | os.O_RDWR, 0o600)
            err = os.open(tmp, os.O_TMPFILE | os.O_RDWR, 0o600)
            os.dup2(out, 1)
            os.dup2(err, 2)
        for k in (0, 1):
            try:
                if files[k] is None or files[k].closed:
                    raise ValueError
            except BaseException:  # closed or detached by the code
                files[k] = open(k + 1, "w", buffering=1, closefd=False,
                                errors="backslashreplace")
        sys.stdout, sys.stderr = files
        ns, res = None, None
        try:
            ns, load_err = load_code(job, compiled)
            if load_err is not None:
                res = {"status": "error", "passed": False, "error": load_err}
            elif mode == "io":
                func, func_err = sbx_pycase.resolve_entry(ns, job.get("entry_point", ""),
                                                          entry)
                prep = sbx_pycase.prepare_io_case(func, func_err, cases[i])
                res = sbx_pycase.run_io_case(ns, func, prep)
            else:
                res = sbx_pycase.run_test_case(ns, job.get("entry_point", ""),
                                               cases[i].get("test", ""))
        except MemoryError as e:
            res = {"status": "memory_limit", "passed": False,
                   "error": sbx_pycase.format_error(e)}
        except BaseException as e:
            res = {"status": "error", "passed": False, "error": sbx_pycase.format_error(e)}
        for f in (sys.stdout, sys.stderr, files[0], files[1]):
            try:
                f.flush()
            except BaseException:
                pass
        for fd, key in ((out, "stdout"), (err, "stderr")):
            got, size = b"", 0
            try:
                size = os.lseek(fd, 0, 2)
                if size:  # most cases print nothing: no seek back, no read, nothing to empty
                    os.lseek(fd, 0, 0)
                    got = os.read(fd, lim.output_bytes)
                    os.ftruncate(fd, 0)
                    os.lseek(fd, 0, 0)  # the offset fd 1 (or 2) shares: the next case's
            except OSError:             # output starts at 0, not after a hole
                out = err = -1  # the code closed them: a new pair for the next case
            res[key] = text(got)
            res[key + "_truncated"] = size > lim.output_bytes
        res["ns_index"] = i
        data = (json.dumps(res) + "\n").encode()
        while data:
            data = data[os.write(4, data):]
        del ns, res


NS_AHEAD = 1  # cases a namespace process is sent beyond the one it runs (run_namespace)
NS_AHEAD_MS = 50  # ... while its cases take less than this each (wall, as seen here)
NS_TICK_MS = 20  # how often the running cases' CPU is sampled


def run_namespace(job, lim, deadline, results):
    """Namespace isolation: `parallel` long-lived processes share the cases; a process that
    crashes, exits or passes a limit is replaced by a new one for the cases left. Wall and CPU
    limits are per case (CPU sampled: one process serves many cases), memory per process.

    Cases are sent ahead: a process finds its next NS_AHEAD indices in its control pipe while
    it runs one, so it goes on from case to case without waiting for this process to read each
    result and send the next index (two wake-ups per case: scheduling latency on a busy
    machine). Results come back in the order sent, so the first index a process has not
    reported is the one it runs, timed from the report before it. When a process ends (a
    crash, a limit) the indices queued behind its case go back to the front of the pool, for a
    new process; once stop_on_failure has fired or the deadline has passed no case starts: the
    queued ones are dropped with their process (reported skipped), as cases not started.
    A case queued behind a long one waits for it instead of going to a free process: so a
    process is sent ahead only while its cases are short (NS_AHEAD_MS; the first ones always),
    where the wake-ups matter; behind long cases they are noise, and the pool stays shared."""
    cases = job.get("cases") or []
    pool = list(range(len(cases)))
    pool.reverse()  # pop() takes the lowest index left
    stop = bool(job.get("stop_on_failure"))
    procs = []
    ended = [False]  # stop_on_failure fired: no case starts any more
    poller = select.poll()
    by_fd = {}

    def spawn():
        ctl_r, ctl_w = os.pipe()
        res_r, res_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(ctl_w)
                os.close(res_r)
                ns_child(job, lim, ctl_r, res_w, site)
            finally:
                os._exit(0)
        set_pgid(pid)
        os.close(ctl_r)
        os.close(res_w)
        pr = NsProc(pid, ctl_w, res_r)
        pr.cpu0 = 0  # just forked: the CPU it uses from here on is its cases'
        procs.append(pr)
        by_fd[res_r] = pr
        poller.register(res_r, select.POLLIN)
        return pr

    def closed():
        return ended[0] or now_ms() >= deadline

    def fill(pr):
        """Send pr indices from the pool until it has NS_AHEAD + 1 (1 after a long case).
        False when it has none."""
        sent = []
        want = NS_AHEAD + 1 if pr.fast else 1
        while pool and len(pr.q) < want and not closed():
            i = pool.pop()
            if not pr.q:  # it was idle: this one starts now
                pr.start = now_ms()
                if pr.cpu0 is None:
                    pr.cpu0 = (proc_sample(pr.pid) or (0, 0))[0]
            pr.q.append(i)
            sent.append(b"%d\n" % i)
        if sent:
            try:
                os.write(pr.ctl_w, b"".join(sent))  # a few bytes: never a partial write
            except OSError:
                pass  # it is gone: its end is seen on res_r
        return bool(pr.q)

    def retire(pr, reap=True):
        """pr is done with: killed (its group too), reaped. The indices it had not reported
        go back to the pool in order. Returns its wait status. reap=False: at the end of its
        work, not reaped here: its exit (the teardown of its address space, dear on this VM)
        is then not waited for before the answer; the sandbox's init reaps it once this
        process has exited."""
        for k in (os.killpg, os.kill):
            try:
                k(pr.pid, signal.SIGKILL)
            except OSError:
                pass
        by_fd.pop(pr.res_r, None)
        poller.unregister(pr.res_r)
        for fd in (pr.ctl_w, pr.res_r):
            os.close(fd)
        status = 0
        try:
            if reap:
                _, status = os.waitpid(pr.pid, 0)
        except ChildProcessError:
            pass
        procs.remove(pr)
        for i in reversed(pr.q):
            pool.append(i)
        pr.q = []
        return status

    def renew(pr):
        """pr ended or must end: a new process for the cases left, if any may start."""
        status = retire(pr)
        if pool and not closed():
            fill(spawn())
        return status

    def record(pr, res, s):
        """pr's running case ended with res; s: pr's (cpu, rss) sampled at its end, or None.
        The next index pr has (waiting in its pipe) runs from now."""
        i = pr.q.pop(0)
        t = now_ms()
        res["wall_ms"] = int(t - pr.start)
        pr.fast = t - pr.start < NS_AHEAD_MS
        if s:
            res["cpu_ms"] = max(0, s[0] - (pr.cpu0 or 0))
            res["memory_kb"] = s[1]
        pr.start, pr.cpu0 = t, (s[0] if s else None)
        results[i] = res
        if stop and not res.get("passed", res.get("status") == "ok"):
            ended[0] = True

    def read(pr):
        """What pr wrote: its results, or its end."""
        b = os.read(pr.res_r, 1 << 16)
        if not b:  # the process ended: the case it ran (if any) ended with it
            i = pr.q.pop(0) if pr.q else None
            start = pr.start
            status = retire(pr)
            if i is not None:
                res = {"status": "error", "passed": False}
                if os.WIFSIGNALED(status):
                    res["status"], res["signal"] = "signal", signal_name(os.WTERMSIG(status))
                    res["error"] = "the process was killed by %s" % res["signal"]
                else:
                    res["error"] = ("the process exited with code %d before returning a "
                                    "result (os._exit or a crash in native code)"
                                    % os.WEXITSTATUS(status))
                res["wall_ms"] = int(now_ms() - start)
                results[i] = res
                if stop:
                    ended[0] = True
            if pool and not closed():
                fill(spawn())
            return
        lines = (pr.buf + b).split(b"\n")
        pr.buf = lines.pop()
        if len(pr.buf) > (1 << 25):
            renew(pr)
            return
        s = None
        for line in lines:
            try:
                res = json.loads(line)
            except ValueError:
                continue
            if not isinstance(res, dict) or not pr.q or res.pop("ns_index", None) != pr.q[0]:
                continue  # not the line of the case it runs: ignored
            if s is None:
                s = proc_sample(pr.pid)  # once per read: these lines came together
            record(pr, res, s)
            if res.get("status") == "memory_limit":
                renew(pr)  # after a limit, a new process
                return
            if closed():
                break  # what it ran after this started too late: dropped with it
        if closed() or not fill(pr):
            retire(pr, False)  # nothing left for it, or nothing may start any more

    # What every case process would import by itself (ast to parse io inputs, traceback for
    # errors), imported once here, before the forks: each process otherwise paid it again (the
    # standard library only; the executor's sys.path is still the interpreter's own).
    sbx_pycase.preload(job["mode"], 0)
    site = site_dirs()
    # The forked processes' collections then leave the inherited objects' pages alone. No
    # gc.collect() first: it writes to every tracked object's header, a copy-on-write fault on
    # every page of the heap shared with the supervisor (~450 faults, a third of this process).
    gc.freeze()
    nprocs = min(job_parallel(job), len(cases))
    for k in range(nprocs):
        # Round robin: the first cases go to different processes; each process's first indices
        # are in its pipe before the next process is forked, in one write.
        pr = spawn()
        pr.q = list(range(k, min(len(cases), nprocs * (NS_AHEAD + 1)), nprocs))
        pr.start = now_ms()
        os.write(pr.ctl_w, b"".join(b"%d\n" % i for i in pr.q))
    taken = set(i for pr in procs for i in pr.q)
    pool[:] = [i for i in pool if i not in taken]
    last_sample = t = now_ms()
    while procs:
        wait = NS_TICK_MS
        for pr in procs:
            if pr.q:
                wait = min(wait, max(0.0, pr.start + lim.wall_ms - t + 1))
        for fd, _ in poller.poll(wait):
            pr = by_fd.get(fd)
            if pr is not None:
                read(pr)
        t = now_ms()
        sample = t - last_sample >= NS_TICK_MS
        if sample:
            last_sample = t
        for pr in list(procs):
            why = None
            if not pr.q:
                retire(pr, False)  # idle with nothing to do (after a stop): done
                continue
            if t - pr.start > lim.wall_ms:
                why = ("wall", "the case passed its wall-clock limit of %d ms" % lim.wall_ms)
            elif t > deadline:
                why = ("wall", "the request's time budget (evaluate wall_ms) ran out during "
                       "this case")
            elif sample:
                s = proc_sample(pr.pid)
                if s and pr.cpu0 is not None and s[0] - pr.cpu0 > lim.cpu_ms:
                    why = ("cpu", "the case passed its CPU limit of %d ms" % lim.cpu_ms)
            if why:
                record(pr, {"status": "timeout", "limit": why[0], "passed": False,
                            "error": why[1]}, proc_sample(pr.pid))
                renew(pr)  # after a limit, a new process
    why = ("stop_on_first_failure: an earlier case failed" if ended[0] else
           "the request's time budget (evaluate wall_ms) ran out before this case")
    for i in range(len(cases)):
        results.setdefault(i, {"status": "skipped", "passed": False, "error": why})


# ---- `cases` mode for exec'd programs, and the compile step ----

def no_address_limit(argv0):
    # V8 and the JVM reserve gigabytes of address space up front: RLIMIT_AS would kill them at
    # start, so their memory is watched by sampling RSS instead (and the cgroup backstop).
    return os.path.basename(argv0) in ("node", "nodejs", "java")


def expand(template, job, build_dir, args=None):
    """A language's argv template: {file} is the source, {args} the case's args, and paths under
    the work dir (where compiled outputs would land) are moved to the private build dir."""
    work = job.get("work_dir", "/work").rstrip("/") + "/"
    argv = []
    for tok in template:
        if tok == "{args}":
            argv.extend(str(a) for a in (args or []))
        elif tok == "{file}":
            argv.append(os.path.join(build_dir, job["source_file"]))
        elif tok.startswith(work):
            argv.append(os.path.join(build_dir, tok[len(work):]))
        else:
            argv.append(tok.replace("{file}", job["source_file"]))
    return argv


def exec_task(index, argv, lim, cwd, stdin_data, out_cap):
    stdin_fd = make_stdin(stdin_data) if stdin_data is not None else -1
    as_bytes = 0 if no_address_limit(argv[0]) else lim.memory_bytes
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        raise
    if pid == 0:
        try:
            child_setup(lim, as_bytes, out_w, err_w,
                        stdin_fd if stdin_fd >= 0 else os.open("/dev/null", os.O_RDONLY))
            os.closerange(3, 1 << 16)
            os.chdir(cwd)
            os.execv(argv[0], argv)
        except BaseException as e:
            try:
                os.write(2, ("cannot run %s: %s\n" % (argv[0], e)).encode())
            except BaseException:
                pass
        finally:
            os._exit(127)
    set_pgid(pid)
    if stdin_fd >= 0:
        os.close(stdin_fd)
    os.close(out_w)
    os.close(err_w)
    return Task(index, pid, {"out": out_r, "err": err_r}, lim, out_cap)


def exec_finish(t, status):
    res = outcome(t, status, {"error": None})
    if not t.kill_reason and os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        res["status"] = "ok" if code == 0 else "error"
        if code:
            res["error"] = "the program exited with code %d" % code
    add_streams(t, res)
    return res


def compile_step(job, build_dir, deadline):
    lim = Limits(job.get("compile_limits") or {"wall_ms": 30000, "cpu_ms": 30000,
                                               "memory_bytes": 1 << 30})
    argv = expand(job["compile"], job, build_dir)
    got = {}
    Scheduler([0], lambda i: exec_task(i, argv, lim, build_dir, None, lim.output_bytes),
              exec_finish, lambda i, r: got.update(r), 1, deadline, False).run()
    got.pop("passed", None)
    if not got:
        got = {"status": "timeout", "limit": "wall",
               "error": "no time was left in the request's budget to compile"}
    got.setdefault("exit_code", None)
    got.setdefault("signal", None)
    got["cached"] = False
    return got


def take_compiled(job, build_dir):
    """The compile the host already ran (or found in the client's compile cache): its result is
    the job's `compiled`; when it succeeded, the binary `binary` in the work dir moves to the
    build dir, where the compile step would have left it, and the work dir is empty again."""
    res = dict(job["compiled"])
    if res.get("status") != "ok":
        return res
    name = os.path.basename(job["binary"])
    src = os.path.join(job.get("work_dir", "/work"), name)
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        out = os.open(os.path.join(build_dir, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        try:
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                while b:
                    b = b[os.write(out, b):]
        finally:
            os.close(out)
    finally:
        os.close(fd)
    os.unlink(src)
    return res


def run_exec_cases(job, lim, build_dir, deadline, results):
    cases = job.get("cases") or []
    cwd = job.get("cwd") or os.getcwd()
    out_cap = min(lim.output_bytes, max(4096, TOTAL_OUTPUT // max(1, len(cases))))

    def launch(i):
        c = cases[i]
        return exec_task(i, expand(job["run"], job, build_dir, c.get("args")), lim, cwd,
                         c.get("stdin") or "", out_cap)

    Scheduler(range(len(cases)), launch, exec_finish, results.__setitem__,
              job_parallel(job), deadline, bool(job.get("stop_on_failure")), lim.wall_ms).run()


# ---- the supervisor ----

def run_python_worker(job, lim, deadline, results):
    """Fork the worker, collect its lines (from two pipes: one per scheduler). Returns the load
    object."""
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)  # the worker and its second scheduler die together on a kill
            os.close(r1)
            os.close(r2)
            os.close(PRIVATE_FD[0])
            python_worker(job, lim, (w1, w2), deadline)
        except BaseException as e:
            try:
                os.write(w1, (json.dumps({"worker_error": sbx_pycase.format_error(e)})
                              + "\n").encode())
            except BaseException:
                pass
        finally:
            os._exit(0)
    set_pgid(pid)
    os.close(w1)
    os.close(w2)
    load, worker_error, killed = None, None, None
    bufs = {r1: b"", r2: b""}
    started = now_ms()
    p = select.poll()
    p.register(r1, select.POLLIN)
    p.register(r2, select.POLLIN)
    ncases = len(job.get("cases") or [])
    while bufs:
        limit_at = started + lim.wall_ms + 1000 if load is None else deadline + 2000
        wait = max(0.0, limit_at - now_ms())
        events = p.poll(wait)
        if not events:
            killed = "load" if load is None else "deadline"
            # The group too (the second scheduler), and the pid itself in case the code moved
            # the worker to another group while loading.
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            break
        for fd, _ in events:
            b = os.read(fd, 1 << 16)
            if not b:
                p.unregister(fd)
                del bufs[fd]
                continue
            lines = (bufs[fd] + b).split(b"\n")
            bufs[fd] = lines.pop()
            for line in lines:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(msg, dict):
                    continue
                if "load" in msg and load is None and isinstance(msg["load"], dict):
                    load = msg["load"]
                elif "case" in msg and isinstance(msg["case"], dict):
                    c = msg["case"]
                    i = c.get("index")
                    if isinstance(i, int) and 0 <= i < ncases and i not in results:
                        results[i] = c
                elif "worker_error" in msg:
                    worker_error = str(msg["worker_error"])
    os.close(r1)
    os.close(r2)
    _, status, _ = os.wait4(pid, 0)
    if load is None:
        if killed:
            load = {"status": "timeout", "limit": "wall", "error":
                    "loading the code took longer than the wall limit of %d ms" % lim.wall_ms}
        elif os.WIFSIGNALED(status):
            load = {"status": "signal", "signal": signal_name(os.WTERMSIG(status)),
                    "error": "the process loading the code was killed by %s"
                    % signal_name(os.WTERMSIG(status))}
        else:
            load = {"status": "error", "error": worker_error or
                    "the code ended the process while loading (exit code %d)"
                    % os.WEXITSTATUS(status)}
    if load.get("status") != "ok":
        for i in range(ncases):
            results.setdefault(i, {"status": load.get("status", "error"), "passed": False,
                                   "limit": load.get("limit"), "signal": load.get("signal"),
                                   "error": load.get("error")})
    else:
        why = worker_error or ("the request's time budget ran out" if killed else
                               "the evaluation worker died before this case finished")
        for i in range(ncases):
            results.setdefault(i, {"status": "error", "passed": False, "error": why})
    return load


def write_source(job):
    base = os.environ.get("TMPDIR") or "/tmp"
    d = os.path.join(base, "sbx-eval-%d" % os.getpid())
    os.mkdir(d, 0o700)
    path = os.path.join(d, job["source_file"])
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    b = job.get("code", "").encode("utf-8", "surrogateescape")
    while b:
        b = b[os.write(fd, b):]
    os.close(fd)
    return d


def remove_tree(d):
    for root, dirs, files in os.walk(d, topdown=False):
        for n in files:
            os.unlink(os.path.join(root, n))
        for n in dirs:
            os.rmdir(os.path.join(root, n))
    os.rmdir(d)


PRIVATE_FD = [-1]
SUPERVISOR_GRACE_MS = 3000  # past the job's deadline, for the executor to write its answer


def set_nondumpable():
    """prctl(PR_SET_DUMPABLE, 0): no process of the same uid may open this one's /proc/<pid>/mem,
    fd/, environ... (the sandbox drops every capability, so nothing inside may override it).
    Forked children inherit it; an exec'd program is dumpable again (it holds nothing but its
    own case). _ctypes alone: the ctypes package costs milliseconds to import."""
    if _ctypes.call_function(_PRCTL, (4, 0, 0, 0, 0)) != 0:  # PR_SET_DUMPABLE
        raise OSError("prctl(PR_SET_DUMPABLE, 0) failed")


def null_stdio():
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def main():
    """The supervisor. It forks the executor before it reads the job, so no process that ever
    runs the submission's code was forked from memory that held the expected answers: it then
    hands the executor the job without them (io_cases' literal outputs are held here; the
    `cases` mode's expected_stdout never comes: fcgi/evaluate/evaluate.c keeps it), reads the
    executor's answer, and makes the verdicts of the held cases itself."""
    # The answer's fd is private: dup'ed before any user code exists, and closed in the executor.
    PRIVATE_FD[0] = os.dup(1)
    set_nondumpable()
    if DIRECT_ARG in sys.argv[1:]:
        return main_direct()
    job_r, job_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(job_w)
            os.close(ans_r)
            os.close(PRIVATE_FD[0])
            # The answer pipe is the executor's private fd from here: the worker closes it
            # before it loads any code, every case's process closes it with its fds >= 3.
            PRIVATE_FD[0] = ans_w
            null_stdio()
            job = json.loads(read_all(job_r))
            os.close(job_r)
            answer = execute(job)
            data = json.dumps(answer).encode()
            while data:
                data = data[os.write(ans_w, data):]
            # Closed here: at exit it would close only after this process's address space is
            # torn down, and the supervisor waits for this EOF.
            os.close(ans_w)
        finally:
            os._exit(0)
    os.close(job_r)
    os.close(ans_w)
    start = now_ms()
    job = json.loads(read_all(0))
    null_stdio()
    DEADLINE_MS[0] = int(job.get("deadline_ms") or 60000)
    cases = job.get("cases") or []
    ncases = len(cases)
    held = {}
    if job.get("mode") == "io" and isinstance(cases, list):
        held = sbx_pycase.hold_expected(cases)
    elif isinstance(cases, list):
        for c in cases:
            if isinstance(c, dict):
                c.pop("expected_stdout", None)  # compared in C; never needed in here
    stream = bool(job.get("stream"))
    data = json.dumps(job).encode()
    del job
    # The executor reads all of the job before it writes anything: no deadlock.
    try:
        while data:
            data = data[os.write(job_w, data):]
    except OSError:
        pass  # the executor died: its answer is missing and every case says so
    os.close(job_w)
    answer = supervise(pid, ans_r, start, held, ncases, stream)
    data = json.dumps(answer).encode()
    while data:
        data = data[os.write(PRIVATE_FD[0], data):]


DIRECT_ARG = "--nothing-held"  # evaluate.c: a test or cases job (runner/README.md)
DIRECT = [False]  # this process is the supervisor as its own executor


def main_direct():
    """A job with no answer to hold (test mode; `cases` mode, whose expected_stdout stays in
    evaluate.c): the supervisor is its own executor, one process level less (a fork, the job's
    hand-over and the answer's relay: a third of a HumanEval request's CPU). What the split
    protects is held answers, and there are none: the processes that run the code are forks of
    memory that held only what they are given anyway. The argument comes from evaluate.c, and
    a job that could hold something (io mode, an expected_stdout) is refused, never run."""
    start = now_ms()
    DIRECT[0] = True
    job = json.loads(read_all(0))
    null_stdio()
    cases = job.get("cases") if isinstance(job, dict) else None
    ncases = len(cases) if isinstance(cases, list) else 0
    if (not isinstance(job, dict) or job.get("mode") not in ("test", "stdout")
            or not isinstance(cases, list)
            or any(not isinstance(c, dict) or "expected_stdout" in c for c in cases)):
        why = "the runner was told the job holds no answer, and it does (%s)" % DIRECT_ARG
        answer = {"load": None, "compile": None, "runner_error": why,
                  "cases": [{"index": i, "status": "error", "passed": False, "error": why}
                            for i in range(ncases)]}
    else:
        DEADLINE_MS[0] = int(job.get("deadline_ms") or 60000)
        answer = execute(job)
    answer["wall_ms"] = int(now_ms() - start)
    data = json.dumps(answer).encode()
    while data:
        data = data[os.write(PRIVATE_FD[0], data):]


def relay(line, held, ncases, sent):
    """A streamed job: one line of the executor (a finished case, or the compile step) passed on
    at once to the service, a held case judged here first. Lines that are not a message, or a
    second message for one case, are dropped: the final answer says the rest."""
    try:
        msg = json.loads(bytes(line))
    except ValueError:
        return
    if not isinstance(msg, dict):
        return
    c = msg.get("case")
    if isinstance(c, dict):
        i = c.get("index")
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < ncases or i in sent:
            return
        if i in held:
            sbx_pycase.judge_held(c, held[i])
        sent[i] = c
        send_line(PRIVATE_FD[0], {"case": c})
    elif isinstance(msg.get("compile"), dict) and "compile" not in sent:
        sent["compile"] = True
        send_line(PRIVATE_FD[0], {"compile": msg["compile"]})


def supervise(pid, ans_r, start, held, ncases, stream=False):
    """The executor's answer (read with a deadline of its own: a stopped executor does not hold
    the request past its budget), with the held cases judged here. A streamed job's executor
    first sends one line per finished case: each is relayed as it comes (relay), and the case
    in the answer is the one that was relayed."""
    deadline = start + DEADLINE_MS[0] + SUPERVISOR_GRACE_MS
    buf = bytearray()
    sent = {}
    p = select.poll()
    p.register(ans_r, select.POLLIN)
    timed_out = False
    while True:
        wait = deadline - now_ms()
        if wait <= 0 or not p.poll(wait):
            timed_out = True
            break
        b = os.read(ans_r, 1 << 16)
        if not b:
            break
        buf += b
        while stream:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            relay(buf[:nl], held, ncases, sent)
            del buf[:nl + 1]
    if timed_out:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    os.close(ans_r)
    # The executor is not reaped: its answer is complete (EOF), and waiting for its exit (the
    # teardown of its address space) would delay the answer; the sandbox's init reaps it once
    # this process has exited (right after the answer).
    answer = None
    try:
        answer = json.loads(bytes(buf)) if buf else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("cases"), list):
        why = ("the request's time budget ran out" if timed_out else
               "the evaluation runner's executor died without an answer")
        answer = {"load": None, "compile": None, "runner_error": why,
                  "cases": [{"status": "error", "passed": False, "error": why}
                            for _ in range(ncases)]}
    out = []
    for i in range(ncases):
        c = answer["cases"][i] if i < len(answer["cases"]) else None
        if not isinstance(c, dict):
            c = {"status": "error", "passed": False, "error": "no result for this case"}
        c["index"] = i
        if i in sent:
            c = sent[i]
        elif i in held:
            sbx_pycase.judge_held(c, held[i])
        out.append(c)
    answer["cases"] = out
    answer["wall_ms"] = int(now_ms() - start)
    return answer


DEADLINE_MS = [60000]


class StreamedResults(dict):
    """The executor's case results; with a streamed job each case also goes to the supervisor
    as one line the moment it is first recorded (json.dumps never writes a raw newline, so a
    line is a whole message). Later writes to the same index are not sent again: what the
    client was told stands."""

    def __init__(self, fd):
        dict.__init__(self)
        self.fd = fd

    def __setitem__(self, i, res):
        first = i not in self
        dict.__setitem__(self, i, res)
        if first and self.fd >= 0:
            res["index"] = i
            send_line(self.fd, {"case": res})


def send_line(fd, obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def execute(job):
    """The executor: runs the job (without the held answers) and returns the answer object."""
    start = now_ms()
    deadline = start + int(job.get("deadline_ms") or 60000)
    lim = Limits(job.get("limits") or {})
    mode = job.get("mode")
    results = StreamedResults(PRIVATE_FD[0] if job.get("stream") else -1)
    answer = {"load": None, "compile": None}
    build_dir = None
    try:
        if mode in ("io", "test") and job.get("isolation") == "namespace":
            run_namespace(job, lim, deadline, results)
        elif mode in ("io", "test") and len(job.get("cases") or []) == 1:
            answer["load"] = run_single_python_case(job, lim, deadline, results)
        elif mode in ("io", "test"):
            answer["load"] = run_python_worker(job, lim, deadline, results)
        elif mode == "stdout":
            build_dir = write_source(job)
            if job.get("python_fork"):
                job["source_path"] = os.path.join(build_dir, job["source_file"])
                run_python_worker(job, lim, deadline, results)
            else:
                if isinstance(job.get("compiled"), dict):  # the host compiled (compile.c)
                    answer["compile"] = take_compiled(job, build_dir)
                    if job.get("stream"):
                        send_line(PRIVATE_FD[0], {"compile": answer["compile"]})
                elif job.get("compile"):
                    answer["compile"] = compile_step(job, build_dir, deadline)
                    if job.get("stream"):
                        send_line(PRIVATE_FD[0], {"compile": answer["compile"]})
                if answer["compile"] and answer["compile"].get("status") != "ok":
                    for i in range(len(job.get("cases") or [])):
                        results[i] = {"status": "error",
                                      "error": "compilation failed (see compile)"}
                else:
                    run_exec_cases(job, lim, build_dir, deadline, results)
        else:
            answer["runner_error"] = "unknown mode %r" % (mode,)
    except Exception as e:
        answer["runner_error"] = sbx_pycase.format_error(e)
    finally:
        if build_dir:
            try:
                remove_tree(build_dir)
            except OSError:
                pass
    cases = []
    for i in range(len(job.get("cases") or [])):
        c = results.get(i) or {"status": "error", "error": answer.get("runner_error")}
        c["index"] = i
        cases.append(c)
    answer["cases"] = cases
    answer["wall_ms"] = int(now_ms() - start)
    answer["parallel"] = job_parallel(job)
    return answer
