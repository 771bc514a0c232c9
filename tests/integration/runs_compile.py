"""runs_compile.py: a streamed run of a compiled language has its run id from its start event on,
the compile step included (API.md "Runs"), through the real stack over HTTPS (run by
runs_compile.t under tests/lib/harness.sh):
- stdin sent to an interactive C run while gcc still compiles it is held and given to the program
  once it starts, in order, with the eof, never a 404 for the id the client was given;
- a signal during the compile cancels it: the program never starts (the end event is the
  compile's, stage "compile"), and the id then answers 409 run_ended;
- stdin to a streamed run that is not interactive, during its compile: 409, as at run time;
- another client's stdin or signal during the compile: 404, as at run time;
- what is held during the compile is capped (1 MiB, as what a running program has not read
  yet): the write past it is a 429 stdin_full with Retry-After, and the program reads exactly
  what was taken.
Each program is a new source (a random constant), so the client's compile cache never skips the
compile; the source has enough functions for gcc -O2 to take a while. That the stdin was taken
before the compile ended is checked, not assumed: the request that carried it was answered
before (the stream's request time + the compile's wall_ms), a bound that holds on any machine."""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import sbx_http as h  # noqa: E402
from tap import diag, done, is_, ok, skip, skip_all  # noqa: E402


def source(nfuncs=150):
    tag = random.randrange(1 << 30)
    body = "".join(f"int f{i}(int x){{int s={tag};for(int k=0;k<x;k++)s+=k*{i}^(s>>3);"
                   f"return s;}}\n" for i in range(nfuncs))
    return ("#include <stdio.h>\n" + body +
            'int main(void){char b[64];puts("ready");fflush(stdout);'
            'while(fgets(b,sizeof b,stdin)){printf("got %s",b);fflush(stdout);}'
            'return f1(0)&0;}\n')


def counting_source(nfuncs=150):
    """Like source(), but the program prints how many bytes of stdin it read, then exits."""
    return source(nfuncs).split("int main")[0] + (
        'int main(void){long n=0;while(getchar()!=EOF)n++;printf("read %ld\\n",n);'
        'return f1(0)&0;}\n')


def stdin(rid, data, eof=False, token=h.ALICE):
    st, _, d = h.call("POST", f"/v1/runs/{rid}/stdin" + ("?eof=1" if eof else ""), data,
                      token=token, headers={"Content-Type": "application/octet-stream"})
    return st, d


def start(body):
    t0 = time.monotonic()
    s = h.Stream("/v1/execute", body)
    ev = s.next() or {}
    return s, ev.get("run_id") or "", t0


def compile_end_bound(t0, end):
    """The compile ended no earlier than this (monotonic): it started after t0."""
    return t0 + ((end or {}).get("compile") or {}).get("wall_ms", 0) / 1000.0


st, _, langs = h.call("GET", "/v1/languages")
langs = langs if isinstance(langs, list) else (langs or {}).get("languages") or []
if not any(isinstance(x, dict) and x.get("id") == "c" for x in langs):
    skip_all("no c compiler in this stack")
LIM = {"wall_ms": 20000}

# -- 1. stdin with eof, sent at once after the start event: held, then read by the program --
s, rid, t0 = start({"language": "c", "code": source(), "stream": True, "interactive": True,
                    "limits": LIM})
ok(len(rid) == 32, "the start event names the run id", rid)
st, d = stdin(rid, b"hello\n", eof=True)
t_taken = time.monotonic()
end = s.until(lambda e: e.get("type") == "end")
s.close()
is_(st, 200, "stdin sent while the program still compiles is taken (not a 404)")
ok(end and end.get("status") == "ok" and end.get("stdout") == "ready\ngot hello\n",
   "... the program reads it, and the eof ends it", end)
if t_taken < compile_end_bound(t0, end):
    ok(True, "... and it was taken before the compile ended")
else:
    diag(f"the compile ended first (wall_ms {((end or {}).get('compile') or {}).get('wall_ms')})")
    skip("gcc was quicker than the stdin request here", "... taken before the compile ended")

# -- 2. two writes during the compile, a third once the program runs: in order --
s, rid, t0 = start({"language": "c", "code": source(), "stream": True, "interactive": True,
                    "limits": LIM})
sts = [stdin(rid, b"a\n")[0], stdin(rid, b"b\n")[0]]
t_taken = time.monotonic()
ready = s.until(lambda e: e.get("type") in ("stdout", "end"))
st3 = stdin(rid, b"c\n", eof=True)[0]
end = s.until(lambda e: e.get("type") == "end")
s.close()
is_(sts + [st3], [200, 200, 200], "two stdin writes during the compile and one after: taken")
ok(end and end.get("stdout") == "ready\ngot a\ngot b\ngot c\n",
   "... and read by the program in the order they were sent", end)
ok(ready and ready.get("type") == "stdout" and t_taken < compile_end_bound(t0, end),
   "... the first two before the compile ended", (ready, end and end.get("compile")))

# -- 3. another client during the compile: 404, as at run time; a signal cancels the compile --
s, rid, t0 = start({"language": "c", "code": source(), "stream": True, "interactive": True,
                    "limits": LIM})
st_bob, _ = stdin(rid, b"x\n", token=h.BOB)
st_bob_sig, _, _ = h.call("POST", f"/v1/runs/{rid}/signal", {"signal": "SIGKILL"}, token=h.BOB)
st_sig, _, d_sig = h.call("POST", f"/v1/runs/{rid}/signal", {"signal": "SIGKILL"})
end = s.until(lambda e: e.get("type") == "end")
s.close()
is_([st_bob, st_bob_sig], [404, 404], "another client's stdin and signal during the compile: 404")
is_(st_sig, 200, "SIGKILL during the compile is taken")
ok(end and end.get("stage") == "compile" and end.get("status") != "ok" and
   "ready" not in (end.get("stdout") or ""),
   "... it cancels the compile: the program never starts, the end is the compile's", end)
st, _, d = h.call("POST", f"/v1/runs/{rid}/stdin", b"late\n",
                  headers={"Content-Type": "application/octet-stream"})
ok(st == 409 and h.err(d).get("code") == "run_ended",
   "stdin to the cancelled run: 409 run_ended", (st, d))

# -- 4. a streamed run that is not interactive: stdin during its compile is a 409 --
s, rid, t0 = start({"language": "c", "code": source(), "stream": True, "stdin": "one\n",
                    "limits": LIM})
st, d = stdin(rid, b"x\n")
end = s.until(lambda e: e.get("type") == "end")
s.close()
ok(st == 409 and h.err(d).get("code") == "run_ended",
   "stdin during the compile of a run that is not interactive: 409", (st, d))
ok(end and end.get("stdout") == "ready\ngot one\n", "... which runs with its own stdin", end)

# -- 5. the held stdin is capped: 1 MiB taken during the compile, one byte more is a 429 --
s, rid, t0 = start({"language": "c", "code": counting_source(400), "stream": True,
                    "interactive": True, "limits": LIM})
half = b"y" * (512 * 1024)
r1, r2 = stdin(rid, half), stdin(rid, half)
r3 = h.call("POST", f"/v1/runs/{rid}/stdin", b"z",
            headers={"Content-Type": "application/octet-stream"})
t_taken = time.monotonic()
r4 = stdin(rid, b"", eof=True)
end = s.until(lambda e: e.get("type") == "end")
s.close()
if t_taken < compile_end_bound(t0, end):
    ok([r1[0], r2[0], r4[0]] == [200, 200, 200] and r3[0] == 429 and
       h.err(r3[2]).get("code") == "stdin_full" and r3[1].get("retry-after") == "1",
       "during the compile 1 MiB of stdin is held; one byte more: 429 stdin_full, Retry-After",
       (r1, r2, r3[:2], r4))
    ok(end and end.get("status") == "ok" and end.get("stdout") == "read 1048576\n",
       "... and the program reads exactly the 1 MiB that was taken, then the eof", end)
else:
    diag(f"the compile ended first (wall_ms {((end or {}).get('compile') or {}).get('wall_ms')})")
    skip("gcc was quicker than three stdin requests here", "the held stdin is capped at 1 MiB")
    skip("gcc was quicker than three stdin requests here", "... the program reads what was taken")
done()
