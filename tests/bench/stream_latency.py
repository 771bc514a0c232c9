"""stream_latency.py: what "stream": true costs and gives, each figure from the same run.
  1. A short run (python print(1)) over HTTPS keep-alive, alternated: the non-streamed answer's
     end-to-end latency against the streamed answer's end event (target: streaming adds at most
     1 ms to the median) and its first stdout line (time to first byte of output); also when
     the streamed response is complete (its closing chunk read), as the plain figure is.
  2. A run that prints, sleeps 1 s and prints: the first line streamed vs the whole answer without
     streaming (reference: how much sooner a client sees output).
Run under tests/lib/harness.sh --exec (stream_latency does that)."""
import http.client
import json
import os
import ssl
import statistics
import time
import urllib.parse

URL = urllib.parse.urlparse(os.environ["SBX_URL"])
TOKEN = os.environ["SBX_TOKEN"]
N = int(os.environ.get("BENCH_N", "40"))
CTX = ssl._create_unverified_context()
SHORT = "print(1)"
SLOW = "import time\nprint(1, flush=True)\ntime.sleep(1)\nprint(2)"


class Conn:
    def __init__(self):
        self.c = http.client.HTTPSConnection(URL.hostname, URL.port, context=CTX, timeout=120)

    def plain(self, code):
        body = json.dumps({"language": "python", "code": code})
        t = time.perf_counter()
        self.c.request("POST", "/v1/execute", body=body, headers=self.h())
        r = self.c.getresponse()
        d = json.loads(r.read())
        assert r.status == 200 and d["status"] == "ok", d
        return time.perf_counter() - t

    def streamed(self, code):
        body = json.dumps({"language": "python", "code": code, "stream": True})
        t = time.perf_counter()
        self.c.request("POST", "/v1/execute", body=body, headers=self.h())
        r = self.c.getresponse()
        first = None
        end = None
        while True:
            line = r.readline()
            if not line:
                break
            ev = json.loads(line)
            if ev["type"] == "stdout" and first is None:
                first = time.perf_counter() - t
            if ev["type"] == "end":
                end = time.perf_counter() - t
                assert ev["status"] == "ok", ev
        r.read()  # the closing chunk: the response is complete
        done = time.perf_counter() - t
        assert first is not None and end is not None
        return first, end, done

    @staticmethod
    def h():
        return {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}


def ms(x):
    return x * 1000


c = Conn()
for _ in range(3):  # warm up
    c.plain(SHORT)
    c.streamed(SHORT)
plain, first, total, complete = [], [], [], []
for i in range(N):
    if i % 2:
        plain.append(c.plain(SHORT))
        f, e, d = c.streamed(SHORT)
    else:
        f, e, d = c.streamed(SHORT)
        plain.append(c.plain(SHORT))
    first.append(f)
    total.append(e)
    complete.append(d)
mp, mf, mt, md = (statistics.median(x) for x in (plain, first, total, complete))
# The paired difference's median: each streamed run against the plain run beside it.
diff = statistics.median(t - p for t, p in zip(total, plain))
print(f"short run, {N} pairs: plain end-to-end median {ms(mp):.2f} ms; streamed: first line "
      f"{ms(mf):.2f} ms, end event {ms(mt):.2f} ms, response complete {ms(md):.2f} ms")
print(f"target: streaming adds <= 1 ms to a short run: {ms(diff):+.2f} ms (median of paired "
      f"differences) {'PASS' if ms(diff) <= 1.0 else 'FAIL'}")
slow_plain, slow_first = [], []
for _ in range(max(3, N // 8)):
    slow_plain.append(c.plain(SLOW))
    slow_first.append(c.streamed(SLOW)[0])
print(f"reference: print, sleep 1 s, print: first line streamed after "
      f"{ms(statistics.median(slow_first)):.1f} ms vs the whole answer without streaming after "
      f"{ms(statistics.median(slow_plain)):.1f} ms")
