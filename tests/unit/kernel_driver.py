"""kernel_driver.py: a test-side holder for sandbox/kernel/sbx_kernel.py, plus TAP helpers.

Starts `/usr/bin/python3 sandbox/kernel/sbx_kernel.py <lang>` with fd 0 = /dev/null, fds 1/2 =
pipes and fd 3 = one end of a socketpair, and speaks the protocol of CONTEXTS.md section 2:
one JSON line per request with a fresh marker; the output of a request is what comes before
"\\0" + marker + "\\0" on each stream; then comes the reply line. No sandbox here: the kernel's
own behaviour only. Every wait is bounded by a generous deadline (the machine may be slow).
"""

import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KERNEL = os.environ.get("SBX_KERNEL") or os.path.join(TOP, "sandbox", "kernel", "sbx_kernel.py")
PYTHON = "/usr/bin/python3"
DEADLINE = float(os.environ.get("KERNEL_TEST_DEADLINE", "120"))


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc, diag=None):
        self.n += 1
        if cond:
            print("ok %d - %s" % (self.n, desc))
        else:
            self.failed += 1
            print("not ok %d - %s" % (self.n, desc))
            if diag is not None:
                for line in str(diag).splitlines()[:40]:
                    print("#   " + line)
        sys.stdout.flush()
        return bool(cond)

    def is_(self, got, want, desc):
        return self.ok(got == want, desc, "got:      %r\nexpected: %r" % (got, want))

    def skip(self, desc, why):
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, desc, why))
        sys.stdout.flush()

    def diag(self, text):
        for line in str(text).splitlines():
            print("# " + line)
        sys.stdout.flush()

    def done(self):
        print("1..%d" % self.n)
        return 1 if self.failed else 0


def _bail(kind, value, tb):
    """An exception in a test script: say so in TAP (Bail out!) and keep the traceback."""
    print("Bail out! %s: %s" % (kind.__name__, value))
    sys.stdout.flush()
    sys.__excepthook__(kind, value, tb)


sys.excepthook = _bail


class KernelDied(Exception):
    pass


class Kernel:
    def __init__(self, lang="python", env=None):
        ours, theirs = socket.socketpair()
        self.sock = ours
        fd = theirs.fileno()

        def child():
            os.dup2(fd, 3)

        start = time.monotonic()
        self.proc = subprocess.Popen([PYTHON, KERNEL, lang], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     pass_fds=(fd, 3), preexec_fn=child, cwd=TOP, env=env)
        theirs.close()
        self.bufs = {"out": bytearray(), "err": bytearray(), "ctl": bytearray()}
        self.files = {"out": self.proc.stdout.fileno(), "err": self.proc.stderr.fileno(),
                      "ctl": self.sock.fileno()}
        for fd in self.files.values():
            os.set_blocking(fd, False)
        self.eof = set()
        self.ready = self._reply_line(time.monotonic() + DEADLINE)
        self.ready_ms = (time.monotonic() - start) * 1000  # spawn to {"op":"ready"}
        self.n = 0

    def _pump(self, until):
        """Read what is available on every stream, waiting at most until `until`."""
        sel = selectors.DefaultSelector()
        for name, fd in self.files.items():
            if name not in self.eof:
                sel.register(fd, selectors.EVENT_READ, name)
        timeout = until - time.monotonic()
        if timeout <= 0 or not sel.get_map():
            sel.close()
            return False
        events = sel.select(timeout)
        sel.close()
        for key, _ in events:
            try:
                data = os.read(key.fd, 1 << 20)
            except BlockingIOError:
                continue
            if not data:
                self.eof.add(key.data)
            self.bufs[key.data] += data
        return True

    def _reply_line(self, until):
        buf = self.bufs["ctl"]
        end = buf.find(b"\n")
        while end < 0:
            if "ctl" in self.eof:
                raise KernelDied("control socket closed")
            start = len(buf)
            if not self._pump(until):
                raise TimeoutError("no reply line")
            end = buf.find(b"\n", start)
        line = bytes(buf[:end])
        del buf[:end + 1]
        return json.loads(line)

    def send(self, req):
        self.n += 1
        marker = "%032x" % (0xc0ffee00 + self.n)
        req = dict(req, marker=marker)
        self.sock.sendall(json.dumps(req).encode() + b"\n")
        return marker

    def wait_output(self, stream, needle, timeout=DEADLINE):
        """Wait until `needle` shows up on stream ('out'/'err') without consuming it."""
        until = time.monotonic() + timeout
        while needle not in self.bufs[stream]:
            if stream in self.eof or not self._pump(until):
                return False
        return True

    def collect(self, marker, timeout=DEADLINE):
        """(stdout, stderr, reply) of the request sent with marker."""
        until = time.monotonic() + timeout
        frame = b"\0" + marker.encode() + b"\0"
        got = {}
        for stream in ("out", "err"):
            while frame not in self.bufs[stream]:
                if stream in self.eof:
                    raise KernelDied("%s closed before the marker" % stream)
                if not self._pump(until):
                    raise TimeoutError("no marker on std%s" % stream)
            buf = self.bufs[stream]
            at = buf.find(frame)
            got[stream] = bytes(buf[:at])
            del buf[:at + len(frame)]
        # A streamed request's display lines come first; every line starts with the marker.
        self.displays, self.line_markers = [], []
        reply = self._reply_line(until)
        while isinstance(reply, dict) and reply.get("op") == "display":
            self.line_markers.append(reply.pop("marker", None) == marker)
            self.displays.append(reply.get("result"))
            reply = self._reply_line(until)
        if isinstance(reply, dict):
            self.line_markers.append(reply.pop("marker", None) == marker)
        return got["out"].decode("utf-8", "replace"), got["err"].decode("utf-8", "replace"), reply

    def call(self, req, timeout=DEADLINE):
        return self.collect(self.send(req), timeout)

    def run(self, code, timeout=DEADLINE):
        return self.call({"op": "execute", "code": code}, timeout)

    def sigint(self):
        os.kill(self.proc.pid, signal.SIGINT)

    def descendants(self):
        """Pids of the kernel's descendants (from /proc, racy by nature: for waiting only)."""
        parent = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d, "rb") as f:
                        parent[int(d)] = int(f.read().rsplit(b")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    pass
        found, todo = [], [self.proc.pid]
        while todo:
            p = todo.pop()
            kids = [c for c, pp in parent.items() if pp == p]
            found += kids
            todo += kids
        return found

    def wait_exec(self, argv, timeout=DEADLINE):
        """Wait until a descendant of the kernel runs argv (a list of str): a signal sent after
        that can no longer land between a shell's fork and its exec, where it would be lost."""
        want = b"\0".join(a.encode() for a in argv) + b"\0"
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            for pid in self.descendants():
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        if f.read() == want:
                            return True
                except OSError:
                    pass
            time.sleep(0.01)
        return False

    def rss_kb(self):
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(self.proc.pid)],
                             capture_output=True, text=True).stdout.strip()
        return int(out) if out.isdigit() else -1

    def alive(self):
        return self.proc.poll() is None

    def wait_exit(self, timeout=DEADLINE):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
        if self.wait_exit(10) is None:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


def png_info(data):
    """(width, height) of a complete, well-formed PNG, or raise ValueError saying why."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("no PNG signature")
    pos, chunks, idat = 8, [], b""
    while pos < len(data):
        if pos + 8 > len(data):
            raise ValueError("truncated chunk header")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        if len(body) != length or len(crc) != 4:
            raise ValueError("truncated chunk %r" % kind)
        if zlib.crc32(kind + body) != struct.unpack(">I", crc)[0]:
            raise ValueError("bad CRC in chunk %r" % kind)
        chunks.append(kind)
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if not chunks or chunks[0] != b"IHDR" or chunks[-1] != b"IEND":
        raise ValueError("chunks out of order: %r" % chunks[:5])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
    row = 1 + (width * channels * depth + 7) // 8
    raw = zlib.decompress(idat)
    if len(raw) != row * height:
        raise ValueError("pixel data is %d bytes, want %d" % (len(raw), row * height))
    return width, height
