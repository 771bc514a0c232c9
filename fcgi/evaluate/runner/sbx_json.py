"""sbx_json.py: json.loads / json.dumps on the C accelerator alone.

The runner starts once per evaluate request, so its imports are on every request's path: the
`json` package imports `re`, and through it `enum` and `functools`, about 10 ms of a ~25 ms
budget. `_json` needs none of that. Same output as json.dumps(ensure_ascii=True) for the types
the runner writes (dict, list, str, int, float, bool, None)."""
import _json

_WS = " \t\n\r"


def _bad_constant(name):
    raise ValueError("JSON constant %s is not accepted" % name)


class _Context:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_bad_constant)
    memo = {}


_scan = _json.make_scanner(_Context())


def loads(s):
    if isinstance(s, (bytes, bytearray)):
        s = bytes(s).decode("utf-8")
    i, n = 0, len(s)
    while i < n and s[i] in _WS:
        i += 1
    try:
        obj, end = _scan(s, i)
    except StopIteration:
        raise ValueError("no JSON value at offset %d" % i) from None
    while end < n and s[end] in _WS:
        end += 1
    if end != n:
        raise ValueError("extra data at offset %d" % end)
    return obj


def _default(o):
    raise TypeError("%s is not JSON serializable" % type(o).__name__)


def dumps(obj):
    enc = _json.make_encoder({}, _default, _json.encode_basestring_ascii, None, ": ", ", ",
                             False, False, True)
    return "".join(enc(obj, 0))
