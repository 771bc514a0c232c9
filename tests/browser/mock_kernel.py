# mock_kernel.py: a DEV AID ONLY, for mock_server.mjs: a tiny unsandboxed stand-in for the real
# context kernel (sandbox/kernel/), enough to work on the notebook page without the stack.
# One JSON request per line on stdin, one JSON reply per line on stdout.
import ast, base64, io, json, sys, traceback, contextlib

ns = {"__name__": "__main__"}
count = 0
real_out = sys.stdout


def rich(value, main):
    r = {"is_main_result": main, "text": repr(value)}
    for key, meth in (("html", "_repr_html_"), ("png", "_repr_png_"), ("svg", "_repr_svg_")):
        f = getattr(value, meth, None)
        if callable(f):
            got = f()
            if got is not None:
                r[key] = base64.b64encode(got).decode() if key == "png" else got
    return r


def execute(code):
    global count
    count += 1
    out, err, results, error = io.StringIO(), io.StringIO(), [], None
    ns["display"] = lambda obj: results.append(rich(obj, False))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            tree = ast.parse(code, f"<cell {count}>")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, f"<cell {count}>", "exec"), ns)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), f"<cell {count}>", "eval"), ns)
                if value is not None and not code.rstrip().endswith(";"):
                    results.append(rich(value, True))
    except BaseException as e:  # KeyboardInterrupt too
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        error = {"name": type(e).__name__, "value": str(e),
                 "traceback": [l for l in tb if "mock_kernel.py" not in l]}
    return {"status": "error" if error else "ok", "execution_count": count, "results": results,
            "error": error, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "exit_code": 1 if error else 0}


def variables():
    return [{"name": k, "type": type(v).__name__, "repr": repr(v)[:200]} for k, v in ns.items()
            if not k.startswith("_") and k != "display" and not callable(v) and type(v).__name__ != "module"]


while True:
    try:
        line = sys.stdin.readline()
        if not line:
            break
        req = json.loads(line)
        reply = execute(req["code"]) if req["op"] == "execute" else {"variables": variables()}
    except KeyboardInterrupt:
        continue
    real_out.write(json.dumps(reply) + "\n")
    real_out.flush()
