"""sbx_pycase.py: what one Python evaluate case does inside its forked child.

The runner (evaluate.py) loads the user's code once in a worker process and forks one child per
case; the child calls into this module. Everything here runs after the fork, in a process that
already has the user's code loaded, so it must stay cheap to import (no inspect at import time:
it costs milliseconds per request: ast, re and traceback are imported where first needed, or by
the worker before it forks when many cases will need them) and must never trust the user's objects (== may raise, repr
may raise, values may be huge or self-referential).
"""
import math
import sys

VALUE_CAP = 64 << 10      # characters of repr / JSON form kept per value
MAX_DEPTH = 32            # nesting converted to JSON before falling back to repr
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # what json-c reads back as an integer

# Frames from these files are the runner's own and are cut from tracebacks users see.
_RUNNER_FILES = set()

# The seed service's "name=value" splitter, used only when the input does not parse as call
# keywords (e.g. "a=1 b=2"): the same regex keeps odd-but-working seed inputs working.
_SEED_PAIRS = r"(\w+)\s*=\s*(.+?)(?=,\s*\w+\s*=|$)"

# Sources of code compiled from strings, for tracebacks; put into linecache only when a
# traceback is formatted (importing linecache costs milliseconds on every request).
_SOURCES = {}


class CaseError(Exception):
    """A problem with the case itself (bad input, missing argument), not with the user's code."""


def register_runner_file(path):
    _RUNNER_FILES.add(path)


def register_source(name, text):
    _SOURCES[name] = text


def _linecache():
    import linecache
    for name, text in _SOURCES.items():
        linecache.cache[name] = (len(text), None, text.splitlines(True), name)


def preload(mode, ncases):
    """Import in the worker, before it forks, what the cases will import anyway: once instead
    of once per child."""
    if mode == "io":
        import ast  # noqa: F401
    if ncases > 4:
        import traceback  # noqa: F401
        _linecache()


def safe_repr(v):
    """repr() that never raises and is capped at VALUE_CAP characters."""
    try:
        r = repr(v)
    except BaseException as e:  # a user __repr__ may raise anything
        r = "<unrepresentable %s: %s>" % (type(v).__name__, type(e).__name__)
    if len(r) > VALUE_CAP:
        r = r[:VALUE_CAP] + "...<truncated>"
    return r


def _clean_str(s):
    # Lone surrogates cannot be encoded as UTF-8; the repr keeps the exact value.
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace").decode("utf-8")


class _TooBig(Exception):
    pass


def to_json(v):
    """The JSON form of a Python value, as close to lossless as JSON allows.

    None/bool/str/int/float/list/dict map directly; tuples become arrays; sets become sorted
    arrays (insertion order when unsortable); dict keys that are not strings become their repr;
    NaN and the infinities become the strings "NaN", "Infinity", "-Infinity"; integers beyond
    64 bits become decimal strings; bytes, numpy values and other objects become their repr
    (numpy scalars and arrays first go through .item() / .tolist()). A value nested deeper than
    MAX_DEPTH, or bigger than about VALUE_CAP in all, becomes its (capped) repr as a whole. The
    exact value is always also available as the case's got_repr / expected_repr."""
    try:
        return _to_json(v, 0, [VALUE_CAP])
    except _TooBig:
        return safe_repr(v)
    except BaseException:  # a hostile __iter__, __eq__, items()...: the repr still tells
        return safe_repr(v)


def _to_json(v, depth, budget):
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig()
    if v is None or v is True or v is False:
        return v
    t = type(v)
    if t is str or isinstance(v, str):
        budget[0] -= len(v)
        if budget[0] < 0:
            raise _TooBig()
        return _clean_str(str.__str__(v))
    if t is int or (isinstance(v, int) and not isinstance(v, bool)):
        v = int(v)
        return v if INT_MIN <= v <= INT_MAX else str(v)
    if t is float or isinstance(v, float):
        v = float(v)
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if depth >= MAX_DEPTH:
        raise _TooBig()
    if isinstance(v, (list, tuple)):
        return [_to_json(x, depth + 1, budget) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            key = k if type(k) is str else safe_repr(k)
            budget[0] -= len(key)
            out[key] = _to_json(x, depth + 1, budget)
        return out
    if isinstance(v, (set, frozenset)):
        items = list(v)
        try:
            items.sort()
        except Exception:
            pass
        return [_to_json(x, depth + 1, budget) for x in items]
    mod = type(v).__module__
    if mod == "numpy" or mod.startswith("numpy."):
        try:
            return _to_json(v.tolist() if hasattr(v, "tolist") else v.item(), depth + 1, budget)
        except _TooBig:
            raise
        except Exception:
            pass
    r = safe_repr(v)
    budget[0] -= len(r)
    return r


# ---- plain values: how a held case's result crosses to the supervisor ----
#
# A case whose `output` is a Python literal is "held": the supervisor keeps the expected value
# and the case's process never sees it, so the comparison cannot be reached by the submission
# (frames, gc, sys.modules, its own result pipe). The child sends what the function returned in
# a tagged JSON form made only of plain values; the supervisor rebuilds them and compares with
# `==` there. Every conversion below may go through user code (a subclass's __iter__, numpy's
# tolist): that is harmless, what comes out is plain data and the submission does not know the
# answer it would have to forge.

PLAIN_BUDGET = 1 << 19    # items + characters in one got (about half a million)
PLAIN_DEPTH = 200


class _Opaque(Exception):
    pass


def plain_encode(v):
    """(tagged JSON form of v, None), or (None, the type name) when v holds a value that is not
    plain (a user object, a generator...)."""
    try:
        return _plain(v, 0, [PLAIN_BUDGET]), None
    except _Opaque as e:
        return None, str(e)
    except BaseException:  # a hostile __iter__ / __len__, RecursionError, MemoryError
        return None, _type_name(v)


def _type_name(v):
    try:
        t = type(v)
        return "%s.%s" % (t.__module__, t.__qualname__) if t.__module__ != "builtins" \
            else t.__qualname__
    except BaseException:
        return "object"


def _pfloat(x):
    x = float.__float__(x) if isinstance(x, float) else float(x)
    if x != x:
        return ["f", "nan"]
    if x in (float("inf"), float("-inf")):
        return ["f", "inf" if x > 0 else "-inf"]
    return x


def _plain(v, depth, budget):
    budget[0] -= 1
    try:
        n = len(v) if isinstance(v, (str, bytes, bytearray, list, tuple, dict, set, frozenset)) \
            else 0
    except BaseException:
        n = 0
    if n > budget[0]:
        raise _Opaque("a value too large to compare (more than %d items)" % PLAIN_BUDGET)
    if budget[0] < 0 or depth > PLAIN_DEPTH:
        raise _Opaque("a value too large or too deep to compare")
    if v is None or v is True or v is False:
        return v
    if v is Ellipsis:
        return ["e"]
    if isinstance(v, str):
        s = str.__str__(v)
        budget[0] -= len(s)
        return s
    if isinstance(v, int) and not isinstance(v, bool):
        return int.__int__(v)
    if isinstance(v, float):
        return _pfloat(v)
    if isinstance(v, complex):
        return ["c", _pfloat(complex.__getattribute__(v, "real")),
                _pfloat(complex.__getattribute__(v, "imag"))]
    if isinstance(v, (bytes, bytearray)):
        budget[0] -= len(v)
        return ["ba" if isinstance(v, bytearray) else "b", bytes(v).decode("latin-1")]
    if isinstance(v, list):
        return ["l", [_plain(x, depth + 1, budget) for x in list.__iter__(v)]]
    if isinstance(v, tuple):
        return ["t", [_plain(x, depth + 1, budget) for x in tuple.__iter__(v)]]
    if isinstance(v, dict):
        return ["d", [[_plain(k, depth + 1, budget), _plain(x, depth + 1, budget)]
                      for k, x in dict.items(v)]]
    if isinstance(v, frozenset):
        return ["fs", [_plain(x, depth + 1, budget) for x in frozenset.__iter__(v)]]
    if isinstance(v, set):
        return ["s", [_plain(x, depth + 1, budget) for x in set.__iter__(v)]]
    t = type(v)
    mod = getattr(t, "__module__", "") or ""
    if mod == "numpy" or mod.startswith("numpy."):
        return _plain(v.tolist() if hasattr(v, "tolist") else v.item(), depth + 1, budget)
    if mod == "fractions" and t.__name__ == "Fraction":
        return ["q", int(v.numerator), int(v.denominator)]
    if mod == "decimal" and t.__name__ == "Decimal":
        return ["D", str(v)]
    raise _Opaque(_type_name(v))


def plain_decode(x, depth=0):
    """The value plain_encode made (in the supervisor; x comes from a case and is untrusted:
    anything malformed raises ValueError)."""
    if depth > PLAIN_DEPTH + 2:
        raise ValueError("too deep")
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if not isinstance(x, list) or not x or not isinstance(x[0], str):
        raise ValueError("not a tagged value")
    tag, d = x[0], depth + 1
    if tag == "e" and len(x) == 1:
        return Ellipsis
    if len(x) == 2 and tag == "f" and x[1] in ("nan", "inf", "-inf"):
        return float(x[1])
    if len(x) == 3 and tag == "c":
        return complex(_dfloat(x[1]), _dfloat(x[2]))
    if len(x) == 2 and tag in ("b", "ba") and isinstance(x[1], str):
        b = x[1].encode("latin-1")
        return bytearray(b) if tag == "ba" else b
    if len(x) == 2 and tag in ("l", "t", "s", "fs", "d") and isinstance(x[1], list):
        if tag == "d":
            out = {}
            for kv in x[1]:
                if not isinstance(kv, list) or len(kv) != 2:
                    raise ValueError("bad dict item")
                out[plain_decode(kv[0], d)] = plain_decode(kv[1], d)
            return out
        items = [plain_decode(y, d) for y in x[1]]
        return {"l": list, "t": tuple, "s": set, "fs": frozenset}[tag](items)
    if len(x) == 3 and tag == "q" and all(type(y) is int for y in x[1:]):
        import fractions
        return fractions.Fraction(x[1], x[2])
    if len(x) == 2 and tag == "D" and isinstance(x[1], str):
        import decimal
        return decimal.Decimal(x[1])
    raise ValueError("unknown tag")


def _dfloat(x):
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    if isinstance(x, list) and len(x) == 2 and x[0] == "f" and x[1] in ("nan", "inf", "-inf"):
        return float(x[1])
    raise ValueError("not a float")


def hold_expected(cases):
    """In the supervisor, before anything runs: the cases whose output is a literal lose it
    (replaced by "held": true) and it is kept here. Returns {index: (value, json, repr)}."""
    held = {}
    for i, case in enumerate(cases):
        if not isinstance(case, dict) or "output" not in case:
            continue
        out = case["output"]
        if isinstance(out, str):
            import ast
            try:
                val = ast.literal_eval(out.strip())
            except Exception:
                continue  # an expression: evaluated in the case's process (not protected)
        else:
            val = out
        held[i] = (val, to_json(val), safe_repr(val))
        del case["output"]
        case["held"] = True
    return held


def judge_held(res, held):
    """In the supervisor: a held case's verdict from what its process sent back."""
    val, exp_json, exp_repr = held
    plain = res.pop("got_plain", None)
    opaque = res.pop("got_opaque", None)
    ran = res.pop("held", None) is not None or plain is not None or opaque is not None
    res["passed"] = False
    if ran:
        res["expected"], res["expected_repr"] = exp_json, exp_repr
    if res.get("status") != "ok":
        return res
    if opaque is not None or not isinstance(plain, list) or len(plain) != 1:
        res["error"] = ("the function returned a %s: a literal output is compared outside the "
                        "submission's process, with plain values only (numbers, strings, bytes, "
                        "None, lists, tuples, dicts, sets, numpy values)" % str(opaque or "value"))
        return res
    try:
        got = plain_decode(plain[0])
        res["passed"] = bool(got == val)
    except Exception:
        res["error"] = "the case's result could not be read"
    return res


def format_error(e):
    """'Type: message' then the traceback with the runner's own frames cut (the seed's format)."""
    try:
        import traceback
        _linecache()
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename in _RUNNER_FILES:
            tb = tb.tb_next
        lines = traceback.format_exception(type(e), e, tb)
        msg = str(e)
    except BaseException:
        lines, msg = [], "<unprintable>"
    text = "%s: %s\n%s" % (type(e).__name__, msg, "".join(lines))
    return text if len(text) <= VALUE_CAP else text[:VALUE_CAP] + "...<truncated>"


def parse_input(inp):
    """A case's input as (positional args, keyword pairs); exactly one of them is not None.

    A string holding name=value pairs gives the pairs (values are Python literals); any other
    non-empty string is one literal argument; an empty string gives no arguments. A JSON object
    gives the pairs directly, a JSON array the positional arguments."""
    import ast
    if isinstance(inp, dict):
        return None, dict(inp)
    if isinstance(inp, list):
        return list(inp), None
    if not isinstance(inp, str):
        return [inp], None
    s = inp.strip()
    if not s:
        return [], None
    call = None
    try:
        call = ast.parse("f(%s\n)" % s, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        call = None
    if isinstance(call, ast.Call) and call.keywords and not call.args \
            and all(k.arg for k in call.keywords):
        pairs = {}
        for k in call.keywords:
            try:
                pairs[k.arg] = ast.literal_eval(k.value)
            except Exception:
                raise CaseError("input: the value of %r is not a Python literal: %s"
                                % (k.arg, ast.get_source_segment("f(%s\n)" % s, k.value)))
        return None, pairs
    if call is None or not isinstance(call, ast.Call):
        import re
        pairs = {}
        for m in re.finditer(_SEED_PAIRS, s):
            try:
                pairs[m.group(1)] = ast.literal_eval(m.group(2).strip())
            except Exception:
                pass
        if pairs:
            return None, pairs
    try:
        return [ast.literal_eval(s)], None
    except Exception:
        raise CaseError("input is neither name=value pairs nor a Python literal: %s"
                        % safe_repr(s)[:200])


def _param_spec(func):
    """(positional names, how many have defaults, kw-only names, kw-only names with defaults)."""
    f, skip = func, 0
    if hasattr(f, "__func__") and hasattr(f, "__self__") and f.__self__ is not None:
        f, skip = f.__func__, 1  # bound method: the instance fills the first parameter
    code = getattr(f, "__code__", None)
    if code is not None and hasattr(f, "__defaults__"):
        pos = list(code.co_varnames[:code.co_argcount])[skip:]
        ndef = len(f.__defaults__ or ())
        kwonly = list(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])
        kwdef = set((f.__kwdefaults__ or {}).keys())
        return pos, min(ndef, len(pos)), kwonly, kwdef
    import inspect  # only for builtins, classes and callable objects
    sig = inspect.signature(func)
    pos, ndef, kwonly, kwdef = [], 0, [], set()
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            pos.append(p.name)
            ndef += p.default is not p.empty
        elif p.kind == p.KEYWORD_ONLY:
            kwonly.append(p.name)
            if p.default is not p.empty:
                kwdef.add(p.name)
    return pos, ndef, kwonly, kwdef


def bind_pairs(func, pairs):
    """Match name=value pairs to func's parameters: order free, extra names ignored, a missing
    name without a default is an error. Returns (args, kwargs)."""
    pos, ndef, kwonly, kwdef = _param_spec(func)
    if pos and pos[0] == "self" and "self" not in pairs:
        pos = pos[1:]  # the seed's rule for methods reached through the class
    args, kwargs = [], {}
    first_default = len(pos) - ndef
    by_keyword = False
    for i, name in enumerate(pos):
        if name in pairs and not by_keyword:
            args.append(pairs[name])
        elif name in pairs:
            kwargs[name] = pairs[name]
        elif i >= first_default:
            by_keyword = True  # skip a defaulted parameter: the rest must go by name
        else:
            raise CaseError("input has no value for parameter %r (the input names: %s)"
                            % (name, ", ".join(sorted(pairs)) or "none"))
    for name in kwonly:
        if name in pairs:
            kwargs[name] = pairs[name]
        elif name not in kwdef:
            raise CaseError("input has no value for keyword-only parameter %r" % name)
    return args, kwargs


def resolve_entry(ns, entry_point, cache=None):
    """The function entry_point names (an expression such as `Solution().twoSum`), evaluated once
    in the worker: every case's child is forked from the same state, so this is the same as
    evaluating it in each child, minus the cost. Returns (func, None) or (None, error text).
    cache: a one-element list keeping the compiled expression, for a process that evaluates it
    again for every case (namespace isolation)."""
    try:
        if cache is None:
            return eval(compile(entry_point, "<entry_point>", "eval"), ns), None
        if cache[0] is None:
            cache[0] = compile(entry_point, "<entry_point>", "eval")
        return eval(cache[0], ns), None
    except BaseException as e:
        return None, format_error(e)


def prepare_io_case(func, func_error, case):
    """In the worker, before the fork: the pure part of a case (its input parsed and bound to
    func's parameters, a literal output evaluated), so the child does less: every page a child
    writes is a copy-on-write fault, and compiling touches many."""
    p = {"error": func_error, "args": (), "kwargs": {}, "has_exp": "output" in case,
         "exp": None, "exp_src": None, "held": bool(case.get("held"))}
    out = case.get("output")
    if p["has_exp"]:
        if isinstance(out, str):
            import ast
            try:
                p["exp"] = ast.literal_eval(out.strip())
            except Exception:
                p["exp_src"] = out  # an expression: evaluated in the child, in its namespace
        else:
            p["exp"] = out
        if p["exp_src"] is None:
            # A literal holds no user code: its JSON form and repr are made here once, not in
            # every child (each object a child makes is a copy-on-write page fault).
            p["exp_json"], p["exp_repr"] = to_json(p["exp"]), safe_repr(p["exp"])
    if func_error is not None:
        return p
    try:
        args, pairs = parse_input(case.get("input", ""))
        if pairs is not None:
            p["args"], p["kwargs"] = bind_pairs(func, pairs)
        else:
            p["args"] = args
    except CaseError as e:
        p["error"] = "CaseError: %s" % e
    except BaseException as e:
        p["error"] = format_error(e)
    return p


def case_failed(res, e):
    """The status and error of a case whose run raised e, whichever way the case is written.
    Classes by type(e), as `except` does: isinstance would trust a __class__ the code forged."""
    t = type(e)
    if issubclass(t, CaseError):
        res["status"] = "error"
        res["error"] = "CaseError: %s" % e
    elif issubclass(t, MemoryError):
        res["status"] = "memory_limit"
        res["error"] = format_error(e)
    elif issubclass(t, SystemExit):
        res["status"] = "error"
        res["error"] = "SystemExit: the code called sys.exit(%s)\n" % safe_repr(e.code)
    else:
        res["status"] = "error"
        res["error"] = format_error(e)


def run_io_case(ns, func, p):
    """One prepared io_case in the current (forked) process. Returns the result dict."""
    res = {"status": "ok", "passed": False, "got": None, "expected": None, "error": None}
    if p["held"]:
        # The supervisor decides; with no "passed" here the scheduler's stop_on_failure goes by
        # the status alone (a wrong value is seen only in the supervisor, and evaluate.c
        # applies stop_on_first_failure to the final verdicts).
        res["held"] = True
        del res["passed"]
    try:
        if p["has_exp"]:
            if p["exp_src"] is None:
                exp = p["exp"]
                res["expected"], res["expected_repr"] = p["exp_json"], p["exp_repr"]
            else:
                try:
                    exp = eval(p["exp_src"], ns)
                except Exception as e:
                    raise CaseError("output is neither a Python literal nor an expression: "
                                    + format_error(e))
                res["expected"] = to_json(exp)
                res["expected_repr"] = safe_repr(exp)
        if p["error"] is not None:
            res["status"] = "error"
            res["error"] = p["error"]
            return res
        got = func(*p["args"], **p["kwargs"])
        res["got"] = to_json(got)
        res["got_repr"] = safe_repr(got)
        if p["held"]:
            plain, opaque = plain_encode(got)
            if opaque is None:
                res["got_plain"] = [plain]  # wrapped: None is a value
            else:
                res["got_opaque"] = opaque
        elif p["has_exp"]:
            try:
                res["passed"] = bool(got == exp)
            except Exception as e:
                res["error"] = "comparing got == expected raised " + format_error(e)
        else:
            res["passed"] = True
    except BaseException as e:
        case_failed(res, e)
    return res


def run_test_case(ns, entry_point, test):
    """HumanEval convention: exec test in the code's namespace, then check(entry_point)."""
    res = {"status": "ok", "passed": False, "got": None, "expected": None, "error": None}
    try:
        register_source("<test>", test)
        exec(compile(test, "<test>", "exec"), ns)
        candidate = eval(entry_point, ns)
        check = ns.get("check")
        if not callable(check):
            raise CaseError("the test code does not define check(candidate)")
        check(candidate)
        res["passed"] = True
    except BaseException as e:
        case_failed(res, e)
    return res


def run_script(code_obj, path, args):
    """`cases` mode for Python without a new interpreter: run the compiled program as __main__
    in this forked child and exit the way `python3 main.py` would. Never returns."""
    import builtins
    import os
    sys.argv = [path] + list(args)
    ns = {"__name__": "__main__", "__file__": path, "__builtins__": builtins}
    rc = 0
    try:
        exec(code_obj, ns)
    except SystemExit as e:
        c = e.code
        if c is None:
            rc = 0
        elif isinstance(c, int):
            rc = c & 0xFF
        else:
            try:
                sys.stderr.write(str(c) + "\n")
            except BaseException:
                pass
            rc = 1
    except BaseException as e:
        try:
            import traceback
            sys.stderr.write("".join(traceback.format_exception(type(e), e,
                                                                _strip_tb(e.__traceback__))))
        except BaseException:
            pass
        rc = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    os._exit(rc)


def _strip_tb(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename in _RUNNER_FILES:
        tb = tb.tb_next
    return tb
