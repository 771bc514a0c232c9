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

The whole sandbox run's limits (set by fcgi/evaluate.c) are the backstop for everything here.
The job and answer formats are documented in fcgi/runner/README.md.
"""
import _signal as signal  # the `signal` module imports enum: milliseconds on every request
import errno
import gc
import os
import resource
import select
import sys
import time

import sbx_json as json
import sbx_pycase

sys.dont_write_bytecode = True  # importing a session's module must not leave __pycache__ there
sbx_pycase.register_runner_file(os.path.abspath(__file__))
sbx_pycase.register_runner_file(os.path.abspath(sbx_pycase.__file__))
SIGNAL_NAMES = {getattr(signal, n): n for n in dir(signal)
                if n.startswith("SIG") and not n.startswith("SIG_")
                and n not in ("SIGIOT", "SIGCLD", "SIGPOLL")}

TICK_S = 0.02             # how often running cases' CPU and memory are sampled
FORK_RETRIES = 100        # attempts to start a case while the process limit is full...
FORK_RETRY_MS = 20        # ...this far apart
SECOND_SCHEDULER_CASES = 8  # cases from which a second scheduler shares the forking
TOTAL_OUTPUT = 8 << 20    # stdout (and stderr) bytes kept across all cases of one request
PAGE = os.sysconf("SC_PAGE_SIZE")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def now_ms():
    return time.monotonic() * 1000.0


def signal_name(sig):
    return SIGNAL_NAMES.get(sig, "SIG%d" % sig)


def read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            return b"".join(chunks)
        chunks.append(b)


def proc_sample(pid):
    """(cpu_ms, rss_kb) of one process from /proc, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            st = f.read()
    except OSError:
        return None
    fields = st[st.rfind(b")") + 2:].split()
    cpu = (int(fields[11]) + int(fields[12])) * 1000 // CLK_TCK
    rss = int(fields[21]) * PAGE // 1024
    return cpu, rss


class Limits:
    def __init__(self, d):
        self.wall_ms = int(d.get("wall_ms") or 10000)
        self.cpu_ms = int(d.get("cpu_ms") or 5000)
        self.memory_bytes = int(d.get("memory_bytes") or (256 << 20))
        self.output_bytes = int(d.get("output_bytes") or (64 << 10))
        self.output_hard = int(d.get("output_hard_bytes") or (16 << 20))
        self.file_size = int(d.get("file_size_bytes") or (16 << 20))


def child_setup(lim, as_bytes, out_w, err_w, stdin_fd):
    """In a freshly forked case child: own process group, own limits, own output pipes."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    cpu_s = max(1, -(-lim.cpu_ms // 1000))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))
    if as_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
    if stdin_fd >= 0:
        os.dup2(stdin_fd, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)


class Task:
    """One running case: its pid, its pipes and what has been read from them."""

    def __init__(self, index, pid, fds, lim, out_cap):
        self.index, self.pid, self.lim, self.out_cap = index, pid, lim, out_cap
        self.fds = fds                      # name -> read fd: out, err, and res (Python modes)
        self.bufs = {k: bytearray() for k in fds}
        self.total = {k: 0 for k in fds}
        self.start = now_ms()
        self.kill_reason = None             # ("timeout", "wall"|"cpu") / ("memory_limit",) ...
        self.cpu_ms = 0
        self.rss_kb = 0
        self.base_rss = 0                   # bytes the process had before the case began

    def feed(self, name, data):
        self.total[name] += len(data)
        buf = self.bufs[name]
        cap = (1 << 24) if name == "res" else self.out_cap
        if len(buf) < cap:
            buf += data[:cap - len(buf)]
        if name != "res" and self.total[name] > self.lim.output_hard and not self.kill_reason:
            self.kill(("output_limit",))

    def kill(self, reason):
        if not self.kill_reason:
            self.kill_reason = reason
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass


class ListSource:
    """The case indices one scheduler runs."""

    def __init__(self, indices):
        self.items = list(indices)
        self.items.reverse()

    def next(self):
        return self.items.pop() if self.items else None

    def push_back(self, i):
        self.items.append(i)


class PipeSource(ListSource):
    """Case indices shared by two schedulers: 4-byte records in a pipe that both read. A read of
    4 bytes takes one whole record, so each index goes to exactly one of them."""

    def __init__(self, fd):
        ListSource.__init__(self, ())
        self.fd = fd

    @staticmethod
    def fill(indices):
        r, w = os.pipe()
        data = b"".join(i.to_bytes(4, "little") for i in indices)
        while data:
            data = data[os.write(w, data):]
        os.close(w)
        return r

    def next(self):
        if self.items:
            return self.items.pop()
        b = os.read(self.fd, 4)
        return int.from_bytes(b, "little") if len(b) == 4 else None


class Scheduler:
    """Runs launch(i) for every index of source, `parallel` at a time, and calls done(i, result)."""

    def __init__(self, source, launch, finish, done, parallel, deadline_ms, stop_on_failure):
        if not isinstance(source, ListSource):
            source = ListSource(source)
        self.source = source
        self.launch, self.finish, self.done = launch, finish, done
        self.parallel = max(1, parallel)
        self.deadline = deadline_ms
        self.stop_on_failure = stop_on_failure
        self.stopped = False
        self.running = {}   # pid -> Task
        self.by_fd = {}     # fd -> (Task, name)
        self.poller = select.poll()
        self.attempts = {}
        self.retry_at = 0.0
        # A pidfd turns readable the moment its process exits: reaping is then exact, without
        # polling wait4 or a SIGCHLD handler. Without pidfds (old kernel, seccomp) the loop
        # falls back to wait4(-1) on every wake-up and a short tick.
        self.pidfds = {}    # pidfd -> Task
        self.use_pidfd = hasattr(os, "pidfd_open")

    def _start(self, i):
        try:
            t = self.launch(i)
        except OSError as e:
            # At the process limit (a fork bomb's processes are still being torn down) wait a
            # little and retry; only a limit that stays full fails the case.
            n = self.attempts.get(i, 0) + 1
            self.attempts[i] = n
            if e.errno == errno.EAGAIN and n < FORK_RETRIES:
                self.source.push_back(i)
                self.retry_at = now_ms() + FORK_RETRY_MS
                return
            self.done(i, {"status": "error", "passed": False,
                          "error": "could not start the case: %s" % e})
            return
        self.running[t.pid] = t
        for name, fd in t.fds.items():
            self.by_fd[fd] = (t, name)
            self.poller.register(fd, select.POLLIN)
        t.pidfd = -1
        if self.use_pidfd:
            try:
                t.pidfd = os.pidfd_open(t.pid)
                self.pidfds[t.pidfd] = t
                self.poller.register(t.pidfd, select.POLLIN)
            except OSError:
                self.use_pidfd = False

    def _close_fd(self, fd):
        t, name = self.by_fd.pop(fd)
        del t.fds[name]  # the number may be reused at once: never close it twice
        self.poller.unregister(fd)
        os.close(fd)

    def _reap(self, t, status, ru):
        t.kill(t.kill_reason)  # the group may hold background children: they die with the case
        for name, fd in list(t.fds.items()):
            if True:
                os.set_blocking(fd, False)
                try:
                    while True:
                        b = os.read(fd, 1 << 16)
                        if not b:
                            break
                        t.feed(name, b)
                except BlockingIOError:
                    pass
                self._close_fd(fd)
        del self.running[t.pid]
        if t.pidfd >= 0:
            del self.pidfds[t.pidfd]
            self.poller.unregister(t.pidfd)
            os.close(t.pidfd)
        t.cpu_ms = max(t.cpu_ms, int((ru.ru_utime + ru.ru_stime) * 1000))
        t.rss_kb = max(t.rss_kb, ru.ru_maxrss)
        res = self.finish(t, status)
        res["wall_ms"] = int(now_ms() - t.start)
        res["cpu_ms"] = t.cpu_ms
        res["memory_kb"] = t.rss_kb
        if self.stop_on_failure and not res.get("passed", res.get("status") == "ok"):
            self.stopped = True
        self.done(t.index, res)

    def _sample(self):
        for t in self.running.values():
            if t.kill_reason:
                continue
            if now_ms() - t.start > t.lim.wall_ms:
                t.kill(("timeout", "wall"))
                continue
            s = proc_sample(t.pid)
            if s is None:
                continue
            t.cpu_ms, rss = s[0], s[1]
            t.rss_kb = max(t.rss_kb, rss)
            if t.cpu_ms > t.lim.cpu_ms:
                t.kill(("timeout", "cpu"))
            elif rss * 1024 > t.lim.memory_bytes + t.base_rss:
                t.kill(("memory_limit",))

    def run(self):
        last_sample = 0.0
        exhausted = False
        while True:
            while not exhausted and len(self.running) < self.parallel and not self.stopped:
                if now_ms() >= self.deadline or now_ms() < self.retry_at:
                    break
                i = self.source.next()
                if i is None:
                    exhausted = True
                    break
                self._start(i)
            if not self.running:
                now = now_ms()
                if not exhausted and not self.stopped and now < min(self.retry_at,
                                                                     self.deadline):
                    time.sleep((self.retry_at - now) / 1000.0)
                    continue
                break
            now = now_ms()
            wait = TICK_S * 1000
            if not exhausted and self.retry_at > now:
                wait = min(wait, self.retry_at - now)
            for t in self.running.values():
                wait = min(wait, max(0.0, t.start + t.lim.wall_ms - now + 1))
                if not t.fds and t.pidfd < 0:
                    wait = min(wait, 1)  # its pipes closed: it is exiting, reap it soon
            if now >= self.deadline:
                for t in self.running.values():
                    t.kill(("timeout", "wall"))
            exited = []
            for fd, ev in self.poller.poll(wait):
                if fd in self.pidfds:
                    exited.append(self.pidfds[fd])
                    continue
                t, name = self.by_fd[fd]
                try:
                    b = os.read(fd, 1 << 16)
                except OSError:
                    b = b""
                if b:
                    t.feed(name, b)
                else:
                    self._close_fd(fd)
            for t in exited:
                pid, status, ru = os.wait4(t.pid, os.WNOHANG)
                if pid:
                    self._reap(t, status, ru)
            while self.running and (not self.use_pidfd or
                                    now_ms() - last_sample >= TICK_S * 1000):
                try:
                    pid, status, ru = os.wait4(-1, os.WNOHANG)
                except ChildProcessError:
                    pid = 0
                if pid == 0:
                    break
                t = self.running.get(pid)
                if t is not None:
                    self._reap(t, status, ru)
            if now_ms() - last_sample >= TICK_S * 1000:
                last_sample = now_ms()
                self._sample()
        while True:
            i = self.source.next()
            if i is None:
                break
            why = ("stop_on_first_failure: an earlier case failed" if self.stopped else
                   "the request's time budget (evaluate wall_ms) ran out before this case")
            self.done(i, {"status": "skipped", "passed": False, "error": why})


def outcome(t, status, res):
    """Fill the run-status fields of res from how the case process ended."""
    reason = t.kill_reason
    if reason:
        res["status"] = reason[0]
        if reason[0] == "timeout":
            res["limit"] = reason[1]
            res["error"] = "the case passed its %s limit of %d ms" % (
                "wall-clock" if reason[1] == "wall" else "CPU",
                t.lim.wall_ms if reason[1] == "wall" else t.lim.cpu_ms)
        elif reason[0] == "memory_limit":
            res["error"] = "the case passed its memory limit of %d MiB" % (
                t.lim.memory_bytes >> 20)
        elif reason[0] == "output_limit":
            res["error"] = "the case wrote more than %d bytes to one stream" % t.lim.output_hard
        res["passed"] = False
        if os.WIFSIGNALED(status):
            res["signal"] = signal_name(os.WTERMSIG(status))
        return res
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        res["passed"] = False
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and t.cpu_ms >= t.lim.cpu_ms):
            res["status"], res["limit"] = "timeout", "cpu"
            res["error"] = "the case passed its CPU limit of %d ms" % t.lim.cpu_ms
        else:
            res["status"] = "signal"
            res["error"] = "the process was killed by %s" % signal_name(sig)
        res["signal"] = signal_name(sig)
    else:
        res["exit_code"] = os.WEXITSTATUS(status)
    return res


def text(b):
    return bytes(b).decode("utf-8", "replace")


def add_streams(t, res):
    for name, key in (("out", "stdout"), ("err", "stderr")):
        if name in t.bufs:
            res[key] = text(t.bufs[name])
            res[key + "_truncated"] = t.total[name] > len(t.bufs[name])


# ---- Python modes: the worker process ----

def python_site():
    """What `site` would have done for the user's code (the runner starts with -S: site costs
    about 10 ms per request, mostly in hooks the sandbox has no use for): the dist-packages
    directories on sys.path and the exit()/quit() builtins. .pth files are not processed."""
    import builtins
    import _sitebuiltins
    v = "%d.%d" % sys.version_info[:2]
    for d in ("/usr/local/lib/python%s/dist-packages" % v, "/usr/lib/python3/dist-packages",
              "/usr/lib/python%s/dist-packages" % v):
        if d not in sys.path and os.path.isdir(d):
            sys.path.append(d)
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")


def load_code(job):
    """Compile and exec the user's code in a fresh namespace. Returns (ns, None) or (None, err)."""
    import builtins
    code = job.get("code", "")
    sbx_pycase.register_source("<solution>", code)
    # __name__ is not "__main__": a trailing `if __name__ == "__main__": main()` reading stdin
    # must not run when the code is loaded as a library of functions.
    ns = {"__name__": "solution", "__builtins__": builtins}
    try:
        exec(compile(code, "<solution>", "exec"), ns)
    except BaseException as e:  # SystemExit too: the code may not end the evaluation
        return None, sbx_pycase.format_error(e)
    return ns, None


def python_worker(job, lim, msg_fds, deadline):
    """The worker: load once, then one forked child per case. Writes JSON lines to msg_fds[0]
    (msg_fds[1] is for the second scheduler, closed when there is none)."""
    mode = job["mode"]
    cases = job.get("cases") or []
    out = [os.fdopen(msg_fds[0], "w", buffering=1)]

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
    if len(cases) > 1:
        # Objects that survive to here are never collected in the children: a collection there
        # would write to every object's header and copy every page of the heap (copy-on-write).
        gc.collect()
        gc.freeze()
    base_rss = (proc_sample(os.getpid()) or (0, 0))[1] * 1024
    with open("/proc/self/statm") as f:
        vsize = int(f.read().split()[0]) * PAGE
    as_bytes = vsize + lim.memory_bytes + (64 << 20)
    entry = job.get("entry_point", "")
    out_cap = min(lim.output_bytes, max(4096, TOTAL_OUTPUT // max(1, len(cases))))

    def launch(i):
        case = cases[i]
        stdin_fd = -1
        prep = None
        if mode == "stdout":
            stdin_fd = make_stdin(case.get("stdin", ""))
        elif mode == "io":
            prep = sbx_pycase.prepare_io_case(func, func_err, case)
        pipes = [os.pipe() for _ in range(3)]
        try:
            pid = os.fork()
        except OSError:
            for r, w in pipes:
                os.close(r)
                os.close(w)
            raise
        if pid == 0:
            try:
                # 0-2 first: the result pipe's fd 3 may be the number stdin_fd holds.
                child_setup(lim, as_bytes, pipes[0][1], pipes[1][1], stdin_fd)
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
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except BaseException:
                    pass
                data = json.dumps(res).encode()
                while data:
                    data = data[os.write(3, data):]
            finally:
                os._exit(0)
        set_pgid(pid)
        if stdin_fd >= 0:
            os.close(stdin_fd)
        for r, w in pipes:
            os.close(w)
        t = Task(i, pid, {"out": pipes[0][0], "err": pipes[1][0], "res": pipes[2][0]},
                 lim, out_cap)
        t.base_rss = base_rss
        return t

    def finish(t, status):
        if mode == "stdout":
            return exec_finish(t, status)
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
                out[0] = os.fdopen(msg_fds[1], "w", buffering=1)
                Scheduler(source, launch, finish, done, parallel // 2, deadline,
                          bool(job.get("stop_on_failure"))).run()
                out[0].flush()
            finally:
                os._exit(0)
        parallel -= parallel // 2
    os.close(msg_fds[1])
    Scheduler(source, launch, finish, done, parallel, deadline,
              bool(job.get("stop_on_failure"))).run()
    if second:
        try:
            os.waitpid(second, 0)
        except ChildProcessError:
            pass
    send({"done": True})
    out[0].flush()


def set_pgid(pid):
    # Both parent and child call setpgid so the group exists before either side relies on it;
    # the parent's call fails harmlessly once the child has exec'd.
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass


def make_stdin(data):
    fd = os.memfd_create("stdin", 0) if hasattr(os, "memfd_create") else None
    if fd is None:
        fd = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
    b = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    while b:
        b = b[os.write(fd, b):]
    os.lseek(fd, 0, 0)
    return fd


def job_parallel(job):
    p = int(job.get("parallel") or 0)
    if p <= 0:
        try:
            p = len(os.sched_getaffinity(0))
        except OSError:
            p = os.cpu_count() or 1
    return p


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
    return got


def run_exec_cases(job, lim, build_dir, deadline, results):
    cases = job.get("cases") or []
    cwd = job.get("cwd") or os.getcwd()
    out_cap = min(lim.output_bytes, max(4096, TOTAL_OUTPUT // max(1, len(cases))))

    def launch(i):
        c = cases[i]
        return exec_task(i, expand(job["run"], job, build_dir, c.get("args")), lim, cwd,
                         c.get("stdin") or "", out_cap)

    Scheduler(range(len(cases)), launch, exec_finish, results.__setitem__,
              job_parallel(job), deadline, bool(job.get("stop_on_failure"))).run()


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
            try:
                os.killpg(pid, signal.SIGKILL)
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


def main():
    # The answer's fd is private: dup'ed before any user code exists, close-on-exec, and closed in
    # the worker; fds 1 and 2 then point at /dev/null for whatever leaks past the capture.
    PRIVATE_FD[0] = os.dup(1)
    job = json.loads(read_all(0))
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    start = now_ms()
    deadline = start + int(job.get("deadline_ms") or 60000)
    lim = Limits(job.get("limits") or {})
    mode = job.get("mode")
    results = {}
    answer = {"load": None, "compile": None}
    build_dir = None
    try:
        if mode in ("io", "test"):
            answer["load"] = run_python_worker(job, lim, deadline, results)
        elif mode == "stdout":
            build_dir = write_source(job)
            if job.get("python_fork"):
                job["source_path"] = os.path.join(build_dir, job["source_file"])
                run_python_worker(job, lim, deadline, results)
            else:
                if job.get("compile"):
                    answer["compile"] = compile_step(job, build_dir, deadline)
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
    data = json.dumps(answer).encode()
    while data:
        data = data[os.write(PRIVATE_FD[0], data):]
