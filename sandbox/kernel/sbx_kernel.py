#!/usr/bin/python3
"""sbx_kernel.py: the cell server of a context (docs/CONTEXTS section 2; README.md here).

Runs inside a context's sandbox as `/usr/bin/python3 sbx_kernel.py python|bash`, started by the
broker's holder with fd 0 = /dev/null, fd 1 = stdout pipe, fd 2 = stderr pipe and fd 3 = the
control socket. Requests and replies are single JSON lines on the control socket; after each
request the kernel writes "\\0" + marker + "\\0" to fds 1 and 2, then the reply line.

Standard library only at start: an idle context must stay small (matplotlib, numpy, PIL and
pandas are used only when the user's code has imported them).
"""

import os

# Before any user code can import matplotlib: no GUI backend, never block on show().
os.environ["MPLBACKEND"] = "Agg"

import ast  # noqa: E402
import binascii  # noqa: E402
import builtins  # noqa: E402
import fcntl  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import keyword  # noqa: E402
import linecache  # noqa: E402
import reprlib  # noqa: E402
import signal  # noqa: E402
import _signal  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402
import _thread  # noqa: E402

CTL_FD = 3
TEXT_CAP = 100_000  # characters of a result's text repr
FIELD_CAP = 16 << 20  # characters of one html/png/svg/json/markdown field
RESULTS_BUDGET = 32 << 20  # characters of all results of one reply (the holder's cap is 64 MiB)
VAR_REPR_CAP = 200
PACKAGES = "/work/.packages/python"  # a session's installed packages (fcgi/handlers/packages.c)
VAR_MAX = 1000  # variables listed at most
SIGSET = {signal.SIGINT}

# The kernel's own references: a cell that rebinds os.write or json.dumps must not break the
# protocol (it can still break itself).
_write = os.write
_read = os.read
_dup2 = os.dup2
_getpid = os.getpid
_exit = os._exit
_sigmask = _signal.pthread_sigmask  # the C function: no Python frame a SIGINT could land in
_dumps = json.dumps
_loads = json.loads
_KFILE = (lambda: None).__code__.co_filename


def _high_fd(fd):
    """A close-on-exec copy of fd far from the low numbers a cell is likely to close."""
    try:
        limit = os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        limit = 1024
    base = max(10, min(limit - 8, 900))
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, base)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        n = _write(fd, view)
        view = view[n:]


def _finite(obj):
    """obj with every NaN or infinity replaced by None (they are not JSON)."""
    if isinstance(obj, float):
        return obj if obj - obj == 0 else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _encode_line(obj):
    """One JSON line, UTF-8. Lone surrogates are escaped (ASCII form), NaN becomes null."""
    for _ in range(2):
        try:
            text = _dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            return text.encode("utf-8") + b"\n"
        except UnicodeEncodeError:
            text = _dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
            return text.encode("ascii") + b"\n"
        except ValueError:
            obj = _finite(obj)
    return _dumps(_protocol_error(None, "reply not encodable")).encode() + b"\n"


def _valid_marker(marker):
    return (isinstance(marker, str) and 0 < len(marker) <= 128 and
            all(c.isascii() and (c.isalnum() or c in "-_") for c in marker))


def _cap(text, limit):
    if len(text) <= limit:
        return text
    return text[:limit] + "... [%d more characters]" % (len(text) - limit)


def _b64(data):
    return binascii.b2a_base64(bytes(data), newline=False).decode("ascii")


def _protocol_error(op, message):
    return {"op": op if isinstance(op, str) else "error", "status": "error",
            "error": {"name": "ProtocolError", "value": message, "traceback": []}}


class Kernel:
    """What both languages share: the control socket, the fds, SIGINT, the framing."""

    def __init__(self):
        self.pid = _getpid()
        self.running = False  # True only while user code (or a bash cell) runs
        self.execution_count = 0
        try:
            self.ctl = _high_fd(CTL_FD)
        except OSError:
            sys.stderr.write("sbx_kernel: no control socket on fd 3\n")
            sys.exit(2)
        os.close(CTL_FD)
        self.saved = (_high_fd(1), _high_fd(2))
        self.inbuf = bytearray()
        self.marker = None  # the request in progress's marker: it starts every line we write
        self.stream = False  # that request asked for display data as it is made
        self.wlock = _thread.allocate_lock()  # a cell's threads may display at once
        # SIGINT is blocked except while user code runs, and the handler acts only then.
        signal.signal(signal.SIGINT, self._on_sigint)
        _sigmask(signal.SIG_BLOCK, SIGSET)

    # -- signals --------------------------------------------------------------------------
    def _on_sigint(self, signum, frame):
        if self.running:
            self.interrupt()

    def interrupt(self):
        raise KeyboardInterrupt

    @staticmethod
    def drain_sigint():
        """Forget a SIGINT that arrived while idle."""
        try:
            while signal.sigtimedwait(SIGSET, 0) is not None:
                pass
        except (OSError, AttributeError):
            pass

    # -- control socket -------------------------------------------------------------------
    def read_request(self):
        """The next request line (bytes), or None at EOF. Linear in the line's length."""
        buf = self.inbuf
        end = buf.find(b"\n")
        while end < 0:
            chunk = _read(self.ctl, 1 << 20)
            if not chunk:
                return None
            start = len(buf)
            buf += chunk
            end = buf.find(b"\n", start)
        line = bytes(buf[:end])
        del buf[:end + 1]
        return line

    def send(self, obj):
        _write_all(self.ctl, _encode_line(obj))

    def send_line(self, obj):
        """A line of the current request: its marker first (the holder ignores lines without
        it), written whole: SIGINT waits until the line is out, and threads take turns."""
        line = {"marker": self.marker}
        line.update(obj)
        data = _encode_line(line)
        old = _sigmask(signal.SIG_BLOCK, SIGSET)
        try:
            with self.wlock:
                _write_all(self.ctl, data)
        finally:
            _sigmask(signal.SIG_SETMASK, old)

    def frame(self, marker):
        """Restore fds 1 and 2, then end this request's output on both streams."""
        _dup2(self.saved[0], 1, inheritable=True)
        _dup2(self.saved[1], 2, inheritable=True)
        data = b"\0" + marker.encode("ascii") + b"\0"
        _write_all(1, data)
        _write_all(2, data)

    def serve(self):
        self.send({"op": "ready"})
        while True:
            line = self.read_request()
            if line is None:
                return 0
            self.drain_sigint()
            op, marker, reply = None, None, None
            self.marker, self.stream = None, False
            try:
                req = _loads(line)
                if not isinstance(req, dict):
                    raise ValueError("a request is a JSON object")
                op, marker = req.get("op"), req.get("marker")
                if not _valid_marker(marker):
                    reply = _protocol_error(op, "marker must be 1-128 letters, digits, - or _")
                    marker = None
                else:
                    self.marker, self.stream = marker, req.get("stream") is True
                    reply = self.handle(op, req)
            except ValueError as e:
                reply = _protocol_error(op, "bad request: %s" % e)
            except Exception as e:  # a kernel bug: say so rather than hang the holder
                reply = _protocol_error(op, "kernel error: %s: %s" % (type(e).__name__, e))
            self.after_request()
            self.stream = False
            if marker is not None:
                self.frame(marker)
                self.marker = marker
                self.send_line(reply)
            else:
                self.send(reply)

    def handle(self, op, req):
        if op == "execute":
            code = req.get("code")
            if not isinstance(code, str):
                return _protocol_error(op, "execute needs a string 'code'")
            return self.execute(code)
        if op == "variables":
            return self.variables()
        if op == "set_variable":
            return self.set_variable(req)
        return _protocol_error(op, "unknown op %r" % (op,))

    def after_request(self):
        pass


# ------------------------------------------------------------------------------------------
# Python


class _FdWriter(io.RawIOBase):
    """Unbuffered bytes to a fd, every byte written (a pipe may take a write in pieces)."""

    def __init__(self, fd):
        super().__init__()
        self.fd = fd

    def writable(self):
        return True

    def fileno(self):
        return self.fd

    def write(self, data):
        _write_all(self.fd, data)
        return len(data)


class _Exit:
    """exit()/quit() in a cell: SystemExit, reported as the cell's error (stdin left alone)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "Use %s() to raise SystemExit (the context keeps running)" % self.name

    def __call__(self, code=None):
        raise SystemExit() if code is None else SystemExit(code)


def _quiet(code, node):
    """Jupyter's rule: a ';' follows the cell's last expression statement `node`.

    After the last statement only closing parentheses, blanks, comments and ';' can come (no
    strings), so the source after the node's end, comments cut, tells it. Offsets are UTF-8."""
    lines = code.splitlines()
    try:
        first = lines[node.end_lineno - 1].encode("utf-8")[node.end_col_offset:]
        rest = [first.decode("utf-8", "replace")] + lines[node.end_lineno:]
    except (IndexError, TypeError, AttributeError):
        return code.rstrip().endswith(";")
    tail = "".join(line.split("#", 1)[0] for line in rest)
    return tail.lstrip(" \t\f\\)").startswith(";")


def _filter_tb(te, seen=None):
    """Drop the kernel's frames (and asyncio's before the first cell frame) everywhere."""
    seen = set() if seen is None else seen
    if te is None or id(te) in seen:
        return
    seen.add(id(te))
    frames = [f for f in te.stack if f.filename != _KFILE]
    for i, f in enumerate(frames):
        if f.filename.startswith("<cell "):
            frames = frames[i:]
            break
    te.stack = traceback.StackSummary.from_list(frames)
    _filter_tb(te.__cause__, seen)
    _filter_tb(te.__context__, seen)
    for sub in getattr(te, "exceptions", None) or ():
        _filter_tb(sub, seen)


def _error_dict(e):
    try:
        value = str(e)
    except Exception:
        value = "<unprintable %s>" % type(e).__name__
    try:
        te = traceback.TracebackException(type(e), e, e.__traceback__, compact=True)
        _filter_tb(te)
        tb = list(te.format())
    except Exception:  # RecursionError, MemoryError, a hostile __str__...
        tb = ["%s: %s\n" % (type(e).__name__, value)]
    return {"name": type(e).__name__, "value": value, "traceback": tb}


def _size(value):
    if isinstance(value, str):
        return len(value)
    try:
        return len(_dumps(value))
    except (TypeError, ValueError):
        return 0


def _within_budget(results, used=0):
    """Results past RESULTS_BUDGET characters keep only a note: a reply stays deliverable."""
    out = []
    for r in results:
        size = sum(_size(v) for v in r.values())
        if used + size > RESULTS_BUDGET:
            r = {"is_main_result": r.get("is_main_result", False),
                 "text": "[result dropped: this cell's results are over %d characters]"
                         % RESULTS_BUDGET}
            size = len(r["text"])
        used += size
        out.append(r)
    return out


def _answers_anything(obj):
    """Objects answering every attribute (a __getattr__ catch-all) get no _repr_*_ calls."""
    try:
        return hasattr(obj, "_sbx_kernel_no_such_attribute_")
    except Exception:
        return True


def _clean(r, text):
    """A result as the reply carries it: string fields capped, JSON that encodes."""
    if not isinstance(r.get("text"), str):
        r["text"] = text if text is not None else ""
    r["text"] = _cap(r["text"], TEXT_CAP)
    for key in ("html", "png", "svg", "markdown"):
        if key in r and not isinstance(r[key], str):
            del r[key]
        elif key in r and len(r[key]) > FIELD_CAP:
            del r[key]
            r["text"] += "\n[%s output dropped: over %d characters]" % (key, FIELD_CAP)
    if "json" in r:
        try:
            if len(_dumps(r["json"])) > FIELD_CAP:
                del r["json"]
        except (TypeError, ValueError, RecursionError):
            del r["json"]
    return r


_MIME = (("_repr_html_", "html"), ("_repr_png_", "png"), ("_repr_svg_", "svg"),
         ("_repr_json_", "json"), ("_repr_markdown_", "markdown"))
_BUNDLE = {"text/plain": "text", "text/html": "html", "image/png": "png",
           "image/svg+xml": "svg", "application/json": "json", "text/markdown": "markdown"}


class PythonKernel(Kernel):
    def __init__(self):
        super().__init__()
        self.main = types.ModuleType("__main__")
        self.main.__dict__.update(__builtins__=builtins, __doc__=None)
        self.ns = self.main.__dict__
        sys.modules["_sbx_kernel"] = sys.modules.get("__main__")
        sys.modules["__main__"] = self.main
        sys.argv = [""]
        sys.path[0] = ""  # the cwd (/work), as in Jupyter: the session's own modules import
        self.keep = [sys.stdin, sys.stdout, sys.stderr]  # never collected: they own fds 0-2
        self.out = self.err = None
        self._reset_streams()
        self.results = []
        self.used = 0  # characters of results sent so far in a streamed cell
        self.shown = set()  # ids of figures displayed in this cell
        self.loop = None
        self.vrepr = reprlib.Repr()
        self.vrepr.maxlevel, self.vrepr.maxstring, self.vrepr.maxother = 3, 240, 240
        self.vrepr.maxlist = self.vrepr.maxtuple = self.vrepr.maxset = 40
        self.vrepr.maxdict = self.vrepr.maxfrozenset = self.vrepr.maxdeque = 20
        self._set_builtins()
        sys.meta_path.insert(0, _PyplotHook(self))

    def _set_builtins(self):
        builtins.display = self.display
        builtins.exit = _Exit("exit")
        builtins.quit = _Exit("quit")

    @staticmethod
    def _writer(fd):
        return io.TextIOWrapper(_FdWriter(fd), encoding="utf-8", errors="backslashreplace",
                                line_buffering=True, write_through=True)

    def _reset_streams(self):
        """sys.stdout/sys.stderr write straight to fds 1/2 (no buffer to lose or reorder)."""
        if self.out is None or self.out.closed or sys.stdout is not self.out:
            self.out = self._writer(1)
            sys.stdout = sys.__stdout__ = self.out
        if self.err is None or self.err.closed or sys.stderr is not self.err:
            self.err = self._writer(2)
            sys.stderr = sys.__stderr__ = self.err
        stdin = sys.stdin
        if stdin is None or getattr(stdin, "closed", True):
            try:
                sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
            except (OSError, ValueError):
                pass

    # -- running user code ----------------------------------------------------------------
    def guarded(self, fn, *args):
        """Run fn with SIGINT live (as KeyboardInterrupt); return (value, exception)."""
        value, exc = None, None
        try:
            try:
                signal.signal(signal.SIGINT, self._on_sigint)
                self.running = True
                _sigmask(signal.SIG_UNBLOCK, SIGSET)
                value = fn(*args)
            finally:
                _sigmask(signal.SIG_BLOCK, SIGSET)
                self.running = False
        except BaseException as e:
            exc = e
        self.running = False
        if _getpid() != self.pid:  # a forked child came back out of the cell: never serve
            code = 0
            if isinstance(exc, SystemExit):
                code = exc.code if isinstance(exc.code, int) else (exc.code is not None)
            elif exc is not None:
                code = 1
            for s in (sys.stdout, sys.stderr):
                try:
                    s.flush()
                except BaseException:
                    pass
            _exit(code)
        return value, exc

    def execute(self, code):
        self.execution_count += 1
        n = self.execution_count
        # The session's installed packages (POST /v1/sessions/{id}/packages) import here as in
        # its runs (PYTHONPATH there), also when installed after the context started.
        if PACKAGES not in sys.path and os.path.isdir(PACKAGES):
            sys.path.append(PACKAGES)
        name = "<cell %d>" % n
        linecache.cache[name] = (len(code), None, code.splitlines(True) or ["\n"], name)
        self.results, self.shown, self.used = [], set(), 0
        self._reset_streams()
        self._set_builtins()
        _, exc = self.guarded(self._run_cell, code, name)
        _, exc2 = self.guarded(self._end_of_cell)
        if exc is None:
            exc = exc2
        elif exc2 is not None:
            self._stderr_note("error while finishing the cell: %s" % "".join(
                _error_dict(exc2)["traceback"]))
        error = None if exc is None else self._safe_error(exc)
        return {"op": "execute", "status": "ok" if error is None else "error",
                "execution_count": n, "results": _within_budget(self.results), "error": error,
                "exit_code": 0 if error is None else 1}

    def _safe_error(self, exc):
        err, e2 = self.guarded(_error_dict, exc)
        if e2 is not None:
            err = {"name": type(exc).__name__, "value": "", "traceback": []}
        return err

    def _stderr_note(self, text):
        try:
            _write_all(self.saved[1], text.encode("utf-8", "backslashreplace"))
        except OSError:
            pass

    def _run_cell(self, code, name):
        flags = getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)
        tree = compile(code, name, "exec", ast.PyCF_ONLY_AST | flags)
        last = node = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            node = tree.body.pop()
            last = ast.Expression(node.value)
        body = compile(tree, name, "exec", flags)
        self._eval(body)
        if last is not None:
            value = self._eval(compile(last, name, "eval", flags))
            if value is not None and not _quiet(code, node):
                self.ns["_"] = value
                self._add_result(value, True)

    def _eval(self, code):
        res = eval(code, self.ns)
        if code.co_flags & 0x80:  # CO_COROUTINE: top-level await
            if self.loop is None:
                import asyncio
                self.loop = asyncio.new_event_loop()
            res = self.loop.run_until_complete(res)
        return res

    def _end_of_cell(self):
        try:
            self._flush_figures()
        finally:
            for s in (sys.stdout, sys.stderr):  # the user's own objects, if replaced
                if s is not None and s is not self.out and s is not self.err:
                    try:
                        s.flush()
                    except Exception:
                        pass
            if "ctypes" in sys.modules:  # C stdio buffers of a cell that used ctypes
                try:
                    sys.modules["ctypes"].CDLL(None).fflush(None)
                except Exception:
                    pass

    def after_request(self):
        for s in (self.out, self.err):
            try:
                s.flush()
            except Exception:
                pass
        self._reset_streams()
        self.drain_sigint()

    # -- display data ---------------------------------------------------------------------
    def display(self, *objs, raw=False, **kwargs):
        """display(obj, ...): show each object as a result (Jupyter's display)."""
        for obj in objs:
            if raw and isinstance(obj, dict):
                r = {"is_main_result": False}
                for mime, key in _BUNDLE.items():
                    if mime in obj:
                        r[key] = obj[mime] if key != "png" or isinstance(obj[mime], str) \
                            else _b64(obj[mime])
                self._emit(_clean(r, ""))
            else:
                self._add_result(obj, False)

    def _add_result(self, obj, main):
        self._emit(self._format(obj, main))

    def _emit(self, r):
        """A result: kept for the reply, or, in a streamed cell, sent at once (as Jupyter's
        display_data) and left out of the reply. The same budget holds either way."""
        if not self.stream:
            self.results.append(r)
            return
        r = _within_budget([r], self.used)[0]
        self.used += sum(_size(v) for v in r.values())
        self.send_line({"op": "display", "result": r})

    def _format(self, obj, main):
        r = {"is_main_result": main}
        mods = sys.modules
        fig_mod = mods.get("matplotlib.figure")
        pil = mods.get("PIL.Image")
        if fig_mod is not None and isinstance(obj, fig_mod.Figure):
            r["png"] = _b64(self._figure_png(obj))
            self.shown.add(id(obj))
        elif pil is not None and isinstance(obj, pil.Image):
            r["png"] = _b64(self._pil_png(obj))
        elif not isinstance(obj, type) and not _answers_anything(obj):
            self._mime(obj, r)
        if not isinstance(r.get("text"), str):
            try:
                r["text"] = repr(obj)
            except Exception as e:
                r["text"] = "<repr failed: %s: %s>" % (type(e).__name__, e)
        return _clean(r, None)

    def _mime(self, obj, r):
        bundle = getattr(obj, "_repr_mimebundle_", None)
        if callable(bundle):
            try:
                data = bundle()
                if isinstance(data, tuple):
                    data = data[0]
                for mime, key in _BUNDLE.items():
                    if isinstance(data, dict) and data.get(mime) is not None:
                        v = data[mime]
                        r[key] = _b64(v) if key == "png" and isinstance(v, (bytes, bytearray)) \
                            else v
            except Exception as e:
                self._stderr_note("_repr_mimebundle_ failed: %s: %s\n" % (type(e).__name__, e))
        for meth, key in _MIME:
            if key in r:
                continue
            fn = getattr(obj, meth, None)
            if not callable(fn):
                continue
            try:
                v = fn()
            except Exception as e:
                self._stderr_note("%s failed: %s: %s\n" % (meth, type(e).__name__, e))
                continue
            if isinstance(v, tuple) and len(v) == 2:
                v = v[0]  # (data, metadata)
            if v is None:
                continue
            if key == "png":
                v = _b64(v) if isinstance(v, (bytes, bytearray)) else v
            elif key == "json":
                if isinstance(v, str):
                    try:
                        v = _loads(v)
                    except ValueError:
                        continue
                try:
                    _dumps(v, allow_nan=False)
                except (TypeError, ValueError):
                    continue
            r[key] = v

    @staticmethod
    def _pil_png(img):
        if img.mode not in ("1", "L", "LA", "I", "P", "RGB", "RGBA"):
            img = img.convert("RGBA" if "A" in img.mode else "RGB")
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return buf.getvalue()

    @staticmethod
    def _figure_png(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()

    def _flush_figures(self):
        """Every open pyplot figure becomes a PNG result, then is closed (Jupyter's inline)."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        try:
            managers = sys.modules["matplotlib._pylab_helpers"].Gcf.get_all_fig_managers()
        except (KeyError, AttributeError):
            return
        try:
            for m in managers:
                fig = m.canvas.figure
                if id(fig) in self.shown:
                    continue
                png = self._figure_png(fig)
                try:
                    text = repr(fig)
                except Exception:
                    text = "<Figure>"
                self._emit({"is_main_result": False, "text": text, "png": _b64(png)})
        finally:
            plt.close("all")

    # -- variables --------------------------------------------------------------------------
    def variables(self):
        out = []
        _, exc = self.guarded(self._list_variables, out)
        reply = {"op": "variables", "variables": out}
        if exc is not None:
            reply["error"] = self._safe_error(exc)
        return reply

    def _list_variables(self, out):
        skip = (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType,
                types.MethodType, types.BuiltinMethodType)
        for name, value in list(self.ns.items()):
            if not isinstance(name, str) or name.startswith("_") or isinstance(value, skip):
                continue
            if len(out) >= VAR_MAX:
                break
            try:
                text = self.vrepr.repr(value)
            except Exception as e:
                text = "<repr failed: %s>" % type(e).__name__
            if len(text) > VAR_REPR_CAP:
                text = text[:VAR_REPR_CAP - 3] + "..."
            out.append({"name": name, "type": type(value).__name__, "repr": text})

    def set_variable(self, req):
        name = req.get("name")
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) \
                or (name.startswith("__") and name.endswith("__")):
            return _set_error("%r is not a name a variable can have" % (name,))
        if "value" not in req:
            return _set_error("set_variable needs a 'value'")
        self.ns[name] = req["value"]
        return {"op": "set_variable", "ok": True}


def _set_error(message, name="ValueError"):
    return {"op": "set_variable", "ok": False,
            "error": {"name": name, "value": message, "traceback": []}}


class _PyplotHook:
    """A meta-path finder that patches matplotlib.pyplot.show once pyplot is imported."""

    def __init__(self, kernel):
        self.kernel = kernel

    def find_spec(self, name, path, target=None):
        if name != "matplotlib.pyplot":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec
        kernel = self.kernel

        def show(*args, **kwargs):
            """Show every open figure now (as PNG results) and close it; never blocks."""
            kernel._flush_figures()

        def patched(module):
            exec_module(module)
            module.show = show

        try:
            loader.exec_module = patched
        except AttributeError:
            pass
        return spec


# ------------------------------------------------------------------------------------------
# bash

# SIGINT (sent by the kernel to bash's process group while a cell runs) makes the sourced
# cell return 130, and a DEBUG trap (inherited by functions through set -T) keeps returning
# until the cell is left, so an interrupted cell stops as a terminal's Ctrl-C would. The trap
# stays set between cells and the flag is cleared only after a cell, so a SIGINT that reaches
# bash before it has started the cell still stops that cell at its first command.
_BASH_INT = ("__sbx_i=1; set -T; "
             "trap '[ -n \"$__sbx_i\" ] && { return 130; } 2>/dev/null' DEBUG; "
             "{ return 130; } 2>/dev/null")
_BASH_DYNAMIC = {"BASHOPTS", "BASHPID", "BASH_ARGC", "BASH_ARGV", "BASH_ARGV0", "BASH_COMMAND",
                 "BASH_LINENO", "BASH_SOURCE", "BASH_SUBSHELL", "COLUMNS", "DIRSTACK",
                 "EPOCHREALTIME", "EPOCHSECONDS", "FUNCNAME", "GROUPS", "HISTCMD", "LINENO",
                 "LINES", "OLDPWD", "OPTARG", "OPTIND", "PIPESTATUS", "PPID", "PWD", "RANDOM",
                 "SECONDS", "SHELLOPTS", "SRANDOM"}
_BASH_VARS = r"""__sbx_f=$-; set +eu
while IFS= builtin read -r __sbx_n; do
	case $__sbx_n in _*) continue ;; esac
	__sbx_a=${!__sbx_n@a}
	builtin printf '%s\0%s\0' "$__sbx_n" "$__sbx_a"
	case $__sbx_a in
	*[aA]*) builtin declare -p "$__sbx_n" ;;
	*) builtin printf '%s' "${!__sbx_n}" ;;
	esac
	builtin printf '\0'
done < <(builtin compgen -v) >"$1"
case $__sbx_f in *e*) set -e ;; esac; case $__sbx_f in *u*) set -u ;; esac
builtin unset __sbx_f __sbx_n __sbx_a
"""


def _sq(text):
    return "'" + text.replace("'", "'\\''") + "'"


class BashKernel(Kernel):
    def __init__(self):
        super().__init__()
        self.dir = self._private_dir()
        self.seq = 0
        r_st, self.w_st = os.pipe()
        # bash's own copies of the stdout/stderr pipes: after each cell its fds 1 and 2 are put
        # back from them, so `exec >/dev/null` or `exec 2>&-` in a cell lasts for that cell only
        self.std = (os.dup(self.saved[0]), os.dup(self.saved[1]))
        env = dict(os.environ)
        for k in ("BASH_ENV", "ENV"):
            env.pop(k, None)
        import subprocess  # here, not at the top: it costs a python context 1.5 MiB

        _sigmask(signal.SIG_UNBLOCK, SIGSET)  # bash inherits the mask: SIGINT live there
        try:
            self.bash = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE,
                                         pass_fds=(self.w_st,) + self.std, process_group=0,
                                         env=env, close_fds=True)
        finally:
            _sigmask(signal.SIG_BLOCK, SIGSET)
        os.close(self.w_st)
        for fd in self.std:
            os.close(fd)
        self.status = r_st
        self.stbuf = b""
        self.interrupted = False
        self.baseline = None
        self._command("trap %s INT\n" % _sq(_BASH_INT))
        self.baseline = self._var_table()

    @staticmethod
    def _private_dir():
        for _ in range(100):
            path = "/tmp/sbx-kernel-%s" % binascii.hexlify(os.urandom(8)).decode()
            try:
                os.mkdir(path, 0o700)
                return path
            except FileExistsError:
                continue
        raise OSError("cannot create a private directory in /tmp")

    def interrupt(self):
        self.interrupted = True
        try:
            os.killpg(self.bash.pid, signal.SIGINT)
        except OSError:
            pass

    def _command(self, line):
        try:
            self.bash.stdin.write(line.encode("utf-8", "surrogateescape"))
            self.bash.stdin.flush()
        except (BrokenPipeError, OSError):
            self._bash_gone()

    def _bash_gone(self):
        """bash ended (`exit` in a cell): the context is over; the holder reports it lost."""
        import subprocess

        try:
            code = self.bash.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = 1
        self._cleanup()
        _exit(code if 0 <= code < 256 else 128 + (-code if code < 0 else 1))

    def _cleanup(self):
        for name in os.listdir(self.dir) if os.path.isdir(self.dir) else ():
            try:
                os.unlink(os.path.join(self.dir, name))
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def _write_file(self, path, text):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            _write_all(fd, text.encode("utf-8", "replace"))
        finally:
            os.close(fd)

    def _source(self, text, live, redirect=""):
        """Source text in bash (stdin /dev/null); return its status. live: SIGINT reaches it.

        Each request gets a new file (cell-N for cells): rewriting one file in place would
        make ext4 flush it on every close (its replace-by-truncate heuristic), a few ms."""
        self.seq += 1
        name = "cell-%d" % self.execution_count if live else "op-%d" % self.seq
        path = os.path.join(self.dir, name)
        try:
            self._write_file(path, text)
        except OSError:  # a cell removed or replaced our directory: make a new one
            self.dir = self._private_dir()
            path = os.path.join(self.dir, name)
            self._write_file(path, text)
        try:
            return self._source_file(path, live, redirect)
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _source_file(self, path, live, redirect):
        w, (o, e) = self.w_st, self.std
        trap = "trap %s INT; " % _sq(_BASH_INT) if live else ""
        self.interrupted = False
        # The cell's commands inherit none of the kernel's descriptors (status pipe, copies).
        self._command("%s. %s </dev/null %d>&- %d>&- %d>&- %s; builtin printf '%%s\\n' \"$?\" "
                      ">&%d; command exec 1>&%d 2>&%d; trap - DEBUG; set +T; __sbx_i=\n"
                      % (trap, _sq(path), w, o, e, redirect, w, o, e))
        if live:
            signal.signal(signal.SIGINT, self._on_sigint)
            self.running = True
            _sigmask(signal.SIG_UNBLOCK, SIGSET)
        try:
            while b"\n" not in self.stbuf:
                chunk = _read(self.status, 64)
                if not chunk:
                    break
                self.stbuf += chunk
        finally:
            if live:
                _sigmask(signal.SIG_BLOCK, SIGSET)
                self.running = False
        if b"\n" not in self.stbuf:
            self._bash_gone()
        line, _, self.stbuf = self.stbuf.partition(b"\n")
        try:
            return int(line)
        except ValueError:
            return 1

    def execute(self, code):
        self.execution_count += 1
        if code and not code.endswith("\n"):
            code += "\n"
        status = self._source(code, True)
        error = None
        if self.interrupted:
            error = {"name": "KeyboardInterrupt", "value": "", "traceback": []}
        return {"op": "execute", "status": "ok" if status == 0 and error is None else "error",
                "execution_count": self.execution_count, "results": [], "error": error,
                "exit_code": status}

    def _var_table(self):
        path = os.path.join(self.dir, "vars")
        self._source(_BASH_VARS, False, ">/dev/null 2>/dev/null %s" % _sq(path))
        try:
            with open(path, "rb") as f:
                data = f.read()
            os.unlink(path)
        except OSError:
            return {}
        fields = data.split(b"\0")
        table = {}
        for i in range(0, len(fields) - 2, 3):
            name = fields[i].decode("utf-8", "replace")
            table[name] = (fields[i + 1].decode("ascii", "replace"),
                           fields[i + 2].decode("utf-8", "replace"))
        return table

    def variables(self):
        out = []
        for name, (attrs, value) in self._var_table().items():
            if name in _BASH_DYNAMIC or name.startswith("BASH") or \
                    self.baseline.get(name) == (attrs, value):
                continue
            if "A" in attrs:
                kind = "assoc"
            elif "a" in attrs:
                kind = "array"
            elif "i" in attrs:
                kind = "integer"
            else:
                kind = "string"
            if "a" in attrs.lower():
                value = value.rstrip("\n").split("=", 1)[-1]
            if len(value) > VAR_REPR_CAP:
                value = value[:VAR_REPR_CAP - 3] + "..."
            out.append({"name": name, "type": kind, "repr": value})
            if len(out) >= VAR_MAX:
                break
        return {"op": "variables", "variables": out}

    def set_variable(self, req):
        name = req.get("name")
        if not isinstance(name, str) or not name.isidentifier() or not name.isascii() or \
                name.startswith("BASH") or name in _BASH_DYNAMIC:
            return _set_error("%r is not a name a shell variable can have" % (name,))
        if "value" not in req:
            return _set_error("set_variable needs a 'value'")
        value = req["value"]

        def word(v):
            if isinstance(v, str):
                return v
            if v is None:
                return ""
            return _dumps(v, separators=(",", ":"))

        if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
            rhs = "(" + " ".join(_sq(word(v)) for v in value) + ")"
        else:
            rhs = _sq(word(value))
        if "\0" in rhs:
            return _set_error("a shell variable cannot hold a NUL character")
        errpath = os.path.join(self.dir, "err")
        status = self._source("builtin unset -v %s && %s=%s\n" % (name, name, rhs), False,
                              ">/dev/null 2>%s" % _sq(errpath))
        if status != 0:
            try:
                with open(errpath, "rb") as f:
                    msg = f.read(500).decode("utf-8", "replace").strip()
            except OSError:
                msg = ""
            return _set_error(msg or "bash could not set %s" % name, "BashError")
        return {"op": "set_variable", "ok": True}


def main(argv):
    lang = argv[1] if len(argv) > 1 else "python"
    if lang not in ("python", "bash"):
        sys.stderr.write("usage: sbx_kernel.py python|bash\n")
        return 2
    kernel = PythonKernel() if lang == "python" else BashKernel()
    try:
        code = kernel.serve()
    except BrokenPipeError:  # the holder went away
        code = 0
    except Exception:  # e.g. a cell closed the kernel's own descriptors: the holder sees it die
        traceback.print_exc()
        code = 70
    if isinstance(kernel, BashKernel):
        kernel._cleanup()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    # Not sys.exit: a cell's non-daemon thread or atexit hook must not keep the kernel alive.
    _exit(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
