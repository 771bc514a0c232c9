"""A minimal stand-in for sandbox/kernel/sbx_kernel.py, for the broker's context tests: it speaks
the kernel protocol of CONTEXTS.md section 2 (ready line, execute with a marker on fds 1 and 2,
then the reply line on fd 3; SIGINT is KeyboardInterrupt only while a cell runs) and nothing more.
Python only; the real kernel is tested against the same broker by tests/sandbox/contexts.t when
it is present."""
import ast
import json
import os
import signal
import sys
import traceback

CTL = 3
saved_out, saved_err = os.dup(1), os.dup(2)
for fd in (saved_out, saved_err):
    os.set_inheritable(fd, False)
running = False
count = 0
ns = {"__name__": "__main__"}


def on_sigint(signum, frame):
    if running:
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, on_sigint)


def send(obj):
    data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(CTL, data):]


def execute(code):
    global count
    count += 1
    tree = ast.parse(code, "<cell %d>" % count)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell %d>" % count, "exec"), ns)
    if last is not None:
        v = eval(compile(last, "<cell %d>" % count, "eval"), ns)
        if v is not None:
            return [{"is_main_result": True, "text": repr(v)}]
    return []


def main():
    global running
    send({"op": "ready"})
    buf = b""
    while True:
        try:
            chunk = os.read(CTL, 65536)
        except KeyboardInterrupt:
            continue
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            marker = req["marker"].encode()
            # every line of a request starts with its marker (the holder drops any other)
            reply = {"marker": req["marker"], "op": req.get("op")}
            if req.get("op") == "execute":
                err, results = None, []
                try:
                    running = True
                    try:
                        results = execute(req["code"])
                    finally:
                        running = False
                except BaseException as e:  # noqa: B902 - a cell's exit() too
                    err = {"name": type(e).__name__, "value": str(e),
                           "traceback": traceback.format_exception_only(type(e), e)}
                reply.update(status="error" if err else "ok", execution_count=count,
                             results=results, error=err, exit_code=1 if err else 0)
            elif req.get("op") == "variables":
                reply["variables"] = [{"name": k, "type": type(v).__name__, "repr": repr(v)[:200]}
                                      for k, v in ns.items() if not k.startswith("_")]
            for f in (sys.stdout, sys.stderr):
                try:
                    f.flush()
                except Exception:
                    pass
            os.dup2(saved_out, 1)
            os.dup2(saved_err, 2)
            os.write(1, b"\0" + marker + b"\0")
            os.write(2, b"\0" + marker + b"\0")
            send(reply)


main()
