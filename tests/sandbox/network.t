#!/usr/bin/python3
"""network.t: no network (SANDBOX.md checklist 22). The host listens on TCP and UDP at 127.0.0.1,
::1 and its own address, on an abstract Unix socket and on a Unix socket file; the run tries every
address family and every target, in Python and in shell. Contract: socket() refuses everything
but AF_UNIX; and whatever the refusal, nothing arrives at any host listener."""
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
from tap import ok, is_, diag  # noqa: E402

S.start()
received = []


def host_addrs():
    out = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True).stdout
    addrs = []
    for line in out.splitlines():
        f = line.split()
        if len(f) > 3 and f[2] in ("inet", "inet6") and not f[3].startswith("fe80"):
            addrs.append((f[2], f[3].split("/")[0]))
    return addrs


def listen_tcp(fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 0))
    s.listen(16)
    s.settimeout(0.2)

    def loop():
        while not stop.is_set():
            try:
                c, peer = s.accept()
                received.append(("tcp", addr, peer))
                c.close()
            except OSError:
                pass
    threading.Thread(target=loop, daemon=True).start()
    return s.getsockname()[1]


def listen_udp(fam, addr):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((addr, 0))
    s.settimeout(0.2)

    def loop():
        while not stop.is_set():
            try:
                data, peer = s.recvfrom(4096)
                received.append(("udp", addr, peer, data))
            except OSError:
                pass
    threading.Thread(target=loop, daemon=True).start()
    return s.getsockname()[1]


def listen_unix(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    s.settimeout(0.2)

    def loop():
        while not stop.is_set():
            try:
                c, _ = s.accept()
                received.append(("unix", path))
                c.close()
            except OSError:
                pass
    threading.Thread(target=loop, daemon=True).start()


stop = threading.Event()
targets = []
for kind, addr in host_addrs():
    fam = socket.AF_INET if kind == "inet" else socket.AF_INET6
    try:
        targets.append([kind, addr, listen_tcp(fam, addr), listen_udp(fam, addr)])
    except OSError as e:
        diag(f"cannot listen on {addr}: {e}")
targets.append(["inet", "169.254.169.254", 80, 53])
abstract = "\0sbxt-host-" + secrets.token_hex(4)
listen_unix(abstract)
unix_dir = S.tmpdir(0o755, "sbxt-sock-", owner=None)
unix_path = os.path.join(unix_dir, "s")
listen_unix(unix_path)
os.chmod(unix_path, 0o777)
diag("targets: " + ", ".join(f"{t[1]} tcp/{t[2]} udp/{t[3]}" for t in targets))
# The listeners must really hear: one TCP connection, one datagram and one abstract-socket
# connection from the host itself, then forget them.
socket.create_connection((targets[0][1], targets[0][2]), timeout=2).close()
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"self", (targets[0][1], targets[0][3]))
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
u.connect(abstract)
u.close()
t0 = time.monotonic()  # the listener threads record them when they get the CPU: wait for it
while len(received) < 3 and time.monotonic() - t0 < 30:
    time.sleep(0.05)
ok(sorted(x[0] for x in received) == ["tcp", "udp", "unix"], "the host listeners hear a host "
   "client (TCP, UDP, abstract Unix)", received)
received.clear()

NET_PY = r"""
import errno, json, os, socket, stat, sys
targets, abstract, unix_path = json.loads(sys.argv[1]), '\0' + sys.argv[2], sys.argv[3]
res = {'create': {}, 'tcp': {}, 'udp': {}, 'unix': {}}
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno)) if isinstance(e, OSError) and e.errno else repr(e)
families = {
    'inet-stream': (socket.AF_INET, socket.SOCK_STREAM, 0),
    'inet-dgram': (socket.AF_INET, socket.SOCK_DGRAM, 0),
    'inet6-stream': (socket.AF_INET6, socket.SOCK_STREAM, 0),
    'inet6-dgram': (socket.AF_INET6, socket.SOCK_DGRAM, 0),
    'inet-raw-icmp': (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
    'inet-ping': (socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP),
    'inet-sctp': (socket.AF_INET, socket.SOCK_STREAM, 132),
    'packet': (17, socket.SOCK_RAW, 0x0300),
    'packet-dgram': (17, socket.SOCK_DGRAM, 0x0300),
    'netlink-route': (16, socket.SOCK_RAW, 0),
    'netlink-audit': (16, socket.SOCK_RAW, 9),
    'netlink-uevent': (16, socket.SOCK_DGRAM, 15),
    'vsock-stream': (40, socket.SOCK_STREAM, 0),
    'vsock-dgram': (40, socket.SOCK_DGRAM, 0),
    'alg': (38, socket.SOCK_SEQPACKET, 0),
    'key': (15, socket.SOCK_RAW, 2),
    'xdp': (44, socket.SOCK_RAW, 0),
    'tipc': (30, socket.SOCK_RDM, 0),
    'can': (29, socket.SOCK_RAW, 1),
    'bluetooth': (31, socket.SOCK_RAW, 1),
    'rds': (21, socket.SOCK_SEQPACKET, 0),
}
for name, (fam, typ, proto) in families.items():
    try:
        socket.socket(fam, typ, proto).close()
        res['create'][name] = 'ok'
    except OSError as e:
        res['create'][name] = err(e)
for kind, addr, tport, uport in targets:
    fam = socket.AF_INET if kind == 'inet' else socket.AF_INET6
    try:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect((addr, tport))
        res['tcp'][addr] = 'connected'
    except OSError as e:
        res['tcp'][addr] = err(e)
    try:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.sendto(b'sbxt-udp', (addr, uport))
        res['udp'][addr] = 'sent'
    except OSError as e:
        res['udp'][addr] = err(e)
for name, path in (('abstract', abstract), ('file', unix_path),
                   ('dbus', '/run/dbus/system_bus_socket'),
                   ('postgres', '/run/postgresql/.s.PGSQL.5432'),
                   ('sbxd', '/work/main/state/run/sbxd.sock')):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(path)
        res['unix'][name] = 'connected'
    except OSError as e:
        res['unix'][name] = err(e)
try:
    a, b = socket.socketpair()
    a.send(b'x')
    res['socketpair'] = b.recv(1).decode()
except OSError as e:
    res['socketpair'] = err(e)
try:
    socket.getaddrinfo('example.com', 80)
    res['dns'] = 'resolved'
except OSError as e:
    res['dns'] = 'failed'
socks = []
for top in ('/tmp', '/work', '/dev', '/etc', '/opt', '/run', '/var'):
    for root, dirs, files in os.walk(top):
        for f in files + dirs:
            p = os.path.join(root, f)
            try:
                if stat.S_ISSOCK(os.lstat(p).st_mode):
                    socks.append(p)
            except OSError:
                pass
res['sockets_visible'] = socks
try:
    res['ifaces'] = [l.split(':')[0].strip() for l in open('/proc/self/net/dev').read().splitlines()[2:]]
except OSError as e:
    res['ifaces'] = err(e)
print(json.dumps(res))
"""
r = S.py(NET_PY, json.dumps(targets), abstract[1:], unix_path, wall_ms=20000)
j = S.last_json(r) or {}
diag("socket(): " + ", ".join(f"{k}={v}" for k, v in j.get("create", {}).items()))
diag(f"tcp: {j.get('tcp')} udp: {j.get('udp')} unix: {j.get('unix')} ifaces: {j.get('ifaces')}")
created = {k: v for k, v in j.get("create", {}).items() if v == "ok"}
ok(j and not created, "socket() refuses every family but AF_UNIX (inet, inet6, raw, ping, packet, "
   "netlink, vsock, alg, key, xdp, tipc, can, bluetooth, rds)", f"created: {created}\n{S.show(r)}")
ok(j and not any(v == "connected" for v in j.get("tcp", {}).values()),
   "TCP to 127.0.0.1, ::1, the host's addresses and 169.254.169.254: no connection", j.get("tcp"))
ok(j and j.get("udp") and not any(v == "sent" for v in j.get("udp", {}).values()),
   "UDP to the same: refused", j.get("udp"))
ok(j and j.get("unix") and not any(v == "connected" for v in j.get("unix", {}).values()),
   "host Unix sockets (abstract, file, dbus, postgres, broker): unreachable", j.get("unix"))
is_(j.get("socketpair"), "x", "AF_UNIX socketpair still works inside")
is_(j.get("dns"), "failed", "DNS resolution fails")
is_(j.get("sockets_visible"), [], "no socket file of the host is visible anywhere")
ok(j and j.get("ifaces") in (["lo"], [], "ENOENT", "EACCES"), "no network interface but lo",
   j.get("ifaces"))

# Shell: bash /dev/tcp and /dev/udp, curl.
t = targets[0]
script = (f"(exec 3<>/dev/tcp/{t[1]}/{t[2]}) && echo tcp-open; echo tcp=$?; "
          f"echo x > /dev/udp/{t[1]}/{t[3]} && echo udp-sent; echo udp=$?; "
          f"/usr/bin/curl -s -m 2 http://{t[1]}:{t[2]}/ ; echo curl=$?; "
          f"/usr/bin/curl -s -m 2 http://169.254.169.254/ ; echo meta=$?")
r = S.bash(script, wall_ms=15000)
out = r.get("stdout") or ""
ok(r.get("status") == "ok" and "tcp-open" not in out and "udp-sent" not in out
   and "curl=0" not in out and "meta=0" not in out and out.count("=") == 4,
   "bash /dev/tcp, /dev/udp and curl reach nothing", S.show(r))

time.sleep(0.5)
stop.set()
is_(received, [], "no host listener received a connection or a datagram")

S.finish()
