"""sbx_sched.py: run many child processes, a few at a time, each under its own limits.

Part of the evaluate runner (see sbx_eval.py for the whole picture). A Scheduler takes case
indices from a source, starts each with launch(i) (which forks and returns a Task), enforces the
case's wall, CPU and memory limits, reads its pipes with caps, reaps it through a pidfd, kills its
process group, and hands finish(task, status) to done(i, result). Everything here runs in the
runner's own processes, never in a case's."""
import _signal as signal  # the `signal` module imports enum: milliseconds on every request
import errno
import os
import resource
import select
import time

SIGNAL_NAMES = {getattr(signal, n): n for n in dir(signal)
                if n.startswith("SIG") and not n.startswith("SIG_")
                and n not in ("SIGIOT", "SIGCLD", "SIGPOLL")}

TICK_S = 0.02             # how often running cases' CPU and memory are sampled
FORK_RETRY_MS = 20        # how often a case is retried while the process limit is full
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
    """(cpu_ms, rss_kb) of one process from /proc, or None once it is gone. os.open/os.read,
    not open(): called several times per case, and a file object costs five more syscalls
    (fstat, ioctl, two lseeks, a second read) and its allocations each time. The line is far
    shorter than 4 KiB (comm is at most 16 bytes, the rest numbers)."""
    try:
        fd = os.open("/proc/%d/stat" % pid, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not st:
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
        self.processes = int(d.get("processes") or 0)


def rlimit_plan(lim, as_bytes):
    """The (resource, (soft, hard)) pairs child_setup applies: built once per scheduler, not in
    every child, where each object made is a page written (copy-on-write faults, ~3 us each)."""
    cpu_s = max(1, -(-lim.cpu_ms // 1000))
    plan = [(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)), (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_FSIZE, (lim.file_size, lim.file_size))]
    if as_bytes:
        plan.append((resource.RLIMIT_AS, (as_bytes, as_bytes)))
    if lim.processes:
        # Counted over the whole sandbox's uid, but capped below the run's pids limit (per case
        # x parallel + 16): a fork bomb in one case leaves room for the runner to start others.
        plan.append((resource.RLIMIT_NPROC, (lim.processes, lim.processes)))
    return plan


def child_setup(lim, as_bytes, out_w, err_w, stdin_fd, plan=None):
    """In a freshly forked case child: own process group, own limits, own output pipes."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    for what, pair in plan or rlimit_plan(lim, as_bytes):
        resource.setrlimit(what, pair)
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
        self.gate = -1                      # prefork: the write end of its gate pipe
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
        # The pid too: the case's code may have moved itself out of its group.
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signal.SIGKILL)
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

    def __init__(self, source, launch, finish, done, parallel, deadline_ms, stop_on_failure,
                 retry_ms=10000, prefork=0):
        if not isinstance(source, ListSource):
            source = ListSource(source)
        self.source = source
        self.launch, self.finish, self.done = launch, finish, done
        self.parallel = max(1, parallel)
        self.deadline = deadline_ms
        self.stop_on_failure = stop_on_failure
        self.retry_ms = retry_ms  # a fork bomb lives up to its case's wall limit: wait that long
        self.stopped = False
        self.running = {}   # pid -> Task
        self.by_fd = {}     # fd -> (Task, name)
        self.poller = select.poll()
        self.first_try = {}  # index -> when starting it first failed at the process limit
        self.retry_at = 0.0
        # A pidfd turns readable the moment its process exits: reaping is then exact, without
        # polling wait4 or a SIGCHLD handler. Without pidfds (old kernel, seccomp) the loop
        # falls back to wait4(-1) on every wake-up and a short tick.
        self.pidfds = {}    # pidfd -> Task
        self.use_pidfd = hasattr(os, "pidfd_open")
        # Forking ahead (prefork > 0; launch then returns tasks held at a gate): every page
        # this process writes between two forks faults again (copy-on-write), and one turn of
        # this loop writes a few hundred. Forking `prefork` cases back to back, each child
        # blocked on its gate until its turn, pays that once per batch instead of once per
        # case. A held child has not started: its limits and wall time begin at release.
        self.prefork = prefork
        self.held = []      # Tasks forked ahead, in order

    def _fork_batch(self):
        """Fork up to `prefork` cases ahead, held at their gates. False when none was left."""
        while len(self.held) < self.prefork:
            i = self.source.next()
            if i is None:
                break
            t = self._launch(i)
            if t is None:
                if self.retry_at > now_ms():
                    break
                continue
            self.held.append(t)
        return bool(self.held)

    def _release(self, t):
        """A held case's turn: its time starts now."""
        t.start = now_ms()
        try:
            os.write(t.gate, b"g")
        except OSError:
            pass  # it is gone already (another case killed it): its end says so
        os.close(t.gate)
        t.gate = -1
        self._register(t)

    def _drop_held(self):
        """Held cases that will never run: killed, reaped, their indices back to the source
        (the end of run() reports them as skipped)."""
        for t in reversed(self.held):
            try:
                os.kill(t.pid, signal.SIGKILL)
            except OSError:
                pass
            os.close(t.gate)
            for fd in t.fds.values():
                os.close(fd)
            try:
                os.waitpid(t.pid, 0)
            except ChildProcessError:
                pass
            self.source.push_back(t.index)
        self.held = []

    def _launch(self, i):
        """launch(i), or None when it could not start (the case is then retried later or
        reported as failed)."""
        try:
            return self.launch(i)
        except OSError as e:
            # At the process limit (a fork bomb's processes are still being torn down) wait a
            # little and retry; only a limit that stays full fails the case.
            first = self.first_try.setdefault(i, now_ms())
            if e.errno == errno.EAGAIN and now_ms() - first < self.retry_ms:
                self.source.push_back(i)
                self.retry_at = now_ms() + FORK_RETRY_MS
                return
            self.done(i, {"status": "error", "passed": False,
                          "error": "could not start the case: %s" % e})
            return None

    def _start(self, i):
        t = self._launch(i)
        if t is not None:
            self._register(t)

    def _register(self, t):
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

    def _wait(self, t):
        """Reap t if it has exited; its group (background children) dies first, while the
        zombie still holds the pid so that no new process can have taken the number."""
        try:
            if os.waitid(os.P_PID, t.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                return
        except ChildProcessError:
            return
        try:
            os.killpg(t.pid, signal.SIGKILL)
        except OSError:
            pass
        pid, status, ru = os.wait4(t.pid, os.WNOHANG)
        if pid:
            self._reap(t, status, ru)

    def _reap(self, t, status, ru):
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
                if self.prefork:
                    if not self.held and not self._fork_batch():
                        exhausted = self.retry_at <= now_ms()
                        break
                    self._release(self.held.pop(0))
                    continue
                i = self.source.next()
                if i is None:
                    exhausted = True
                    break
                self._start(i)
            if (not self.running and self.held and not self.stopped
                    and self.retry_at <= now_ms() < self.deadline):
                continue  # a batch forked while retrying: start it
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
                    t.kill(("timeout", "wall", "budget"))
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
            if not self.use_pidfd or now_ms() - last_sample >= TICK_S * 1000:
                exited = list(self.running.values())  # no pidfds, or a periodic check
            for t in exited:
                self._wait(t)
            if now_ms() - last_sample >= TICK_S * 1000:
                last_sample = now_ms()
                self._sample()
        self._drop_held()
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
        if reason[0] == "timeout" and len(reason) > 2:
            res["limit"] = reason[1]
            res["error"] = "the request's time budget (evaluate wall_ms) ran out during this case"
        elif reason[0] == "timeout":
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
