"""tap.py: TAP helpers for Python tests (standard library only)."""
import sys

_n = 0
_failed = 0


def ok(cond, desc, diag=None):
    global _n, _failed
    _n += 1
    if cond:
        print(f"ok {_n} - {desc}", flush=True)
    else:
        _failed += 1
        print(f"not ok {_n} - {desc}", flush=True)
        if diag is not None:
            for line in str(diag).splitlines()[:40]:
                print(f"#   {line}", flush=True)
    return bool(cond)


def is_(got, expected, desc):
    return ok(got == expected, desc, f"got:      {got!r}\nexpected: {expected!r}")


def skip(why, desc):
    global _n
    _n += 1
    print(f"ok {_n} - {desc} # SKIP {why}", flush=True)


def skip_all(why):
    print(f"1..0 # SKIP {why}", flush=True)
    sys.exit(0)


def diag(msg):
    for line in str(msg).splitlines():
        print(f"# {line}", flush=True)


def done():
    print(f"1..{_n}", flush=True)
    sys.exit(1 if _failed else 0)
