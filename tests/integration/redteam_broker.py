"""redteam_broker.py: the broker's control socket must not drop a request because a child of the
broker ended while the request was on its way. sbxd's main loop accepts a connection, then
poll()s up to 200 ms for the request; its SIGCHLD handler (SA_RESTART does not restart poll)
makes that poll return EINTR whenever a context holder or a background run's keeper exits at that
moment, and the request is rejected ("event=reject socket=control reason=bad_request error=io").
Seen for real: deleting a session with two contexts, the first holder's exit dropped the second
delete, and that context outlived its session (holding a context slot of the client) until its
idle TTL. Deterministic here: a request (captured from `sbx ctx list` against a stand-in socket)
is replayed to the stack's broker slowly, once as is and once with a SIGCHLD sent to the broker
before its bytes. Run by redteam_broker.t under tests/lib/harness.sh --exec."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from tap import done, ok  # noqa: E402

SBX = os.path.join(os.environ.get("SBX_BIN", "build"), "sbx")
CONTROL = os.environ["SBX_STATE_DIR"] + "/run/sbxd.sock-health"
BROKER = int(os.environ["SBX_PID_broker"])


def capture():
    """The bytes `sbx ctx list` sends (the CLI adds "-health" to the path it is given)."""
    d = tempfile.mkdtemp(prefix="sbx-redteam-")
    path = os.path.join(d, "b.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + "-health")
    srv.listen(1)
    got = []

    def serve():
        c, _ = srv.accept()
        c.settimeout(1)
        data = b""
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                data += b
        except socket.timeout:
            pass
        got.append(data)
        c.close()

    t = threading.Thread(target=serve)
    t.start()
    subprocess.run([SBX, "ctx", "--broker", path, "list", "--owner", "nobody"],
                   capture_output=True, timeout=20)
    t.join()
    srv.close()
    os.unlink(path + "-health")
    os.rmdir(d)
    return got[0] if got else b""


def replay(req, sig):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(CONTROL)
    time.sleep(0.05)
    if sig:
        os.kill(BROKER, signal.SIGCHLD)
    time.sleep(0.05)
    try:
        s.sendall(req)
        s.settimeout(10)
        r = s.recv(65536)
    except OSError as e:
        r = repr(e).encode()
    s.close()
    return r


req = capture()
ok(len(req) > 0, f"captured the CLI's list request ({len(req)} bytes)")
plain = replay(req, False)
ok(len(plain) > 64, f"replayed slowly, the broker answers it ({len(plain)} bytes)", plain[:80])
hit = replay(req, True)
ok(hit == plain, "... also when a SIGCHLD reaches the broker while it waits for the bytes",
   f"got {len(hit)} bytes")
done()
