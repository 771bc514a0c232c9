"""packages.py: speed of stateless "packages" (see tests/bench/packages).
  1. the first build of the layer for tinyapp, tinydep and bigpkg (pip in a sandbox): seconds;
  2. POST /v1/execute importing nothing, with and without "packages" naming that (cached) layer,
     alternated over one keep-alive connection: median ratio (target <= 1.1).
Run under tests/lib/harness.sh --exec."""
import http.client
import json
import os
import ssl
import statistics
import subprocess
import time
import urllib.parse

URL = os.environ["SBX_URL"]
H = {"Authorization": "Bearer " + os.environ["SBX_TOKEN"], "Content-Type": "application/json"}
N = int(os.environ.get("BENCH_N", "30"))
pkgdir = os.path.join(os.environ["SBX_STATE_DIR"], "packages")
subprocess.run(["/usr/bin/python3", "tests/lib/make_packages.py", pkgdir,
                "--evil-target", "/nonexistent/evil"], check=True)
subprocess.run(["chmod", "-R", "a+rX", pkgdir], check=True)

u = urllib.parse.urlsplit(URL)
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=300)


def post(body):
    t = time.perf_counter()
    conn.request("POST", "/v1/execute", body=json.dumps(body).encode(), headers=H)
    r = conn.getresponse()
    d = json.loads(r.read())
    if r.status != 200 or d.get("status") != "ok":
        raise SystemExit(f"execute failed: {r.status} {d}")
    return time.perf_counter() - t, d


plain = {"language": "python", "code": "print(1)"}
withp = dict(plain, packages=["tinyapp", "tinydep", "bigpkg"])
dt, d = post(withp)
print(f"first build of a 3-package layer: {dt:.2f} s (cached: {d['packages']['cached']})")
post(plain)
a, b = [], []
for _ in range(N):
    a.append(post(plain)[0])
    t, d = post(withp)
    assert d["packages"]["cached"], d
    b.append(t)
ma, mb = statistics.median(a), statistics.median(b)
ratio = mb / ma
print(f"execute without packages: median {ma*1000:.1f} ms; with a cached 3-package layer: "
      f"median {mb*1000:.1f} ms")
print(f"packages ratio {ratio:.2f}x (target <= 1.1) {'MET' if ratio <= 1.1 else 'NOT MET'}")
