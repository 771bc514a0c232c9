"""sbx_site.py: what `site` would have done for the user's code, for the runner (sbx_eval.py) and
for a Python checker's run (check.py), both started with -S (site costs about 10 ms per start,
mostly in hooks the sandbox has no use for). Kept apart and small: check.py imports only this,
so the interpreter pre-started for a check (sandbox/warm.c preloads the script's imports) stays
as cheap as a bare one."""
import _sitebuiltins
import os
import sys


def site_dirs():
    """The directories `site` would have put on sys.path for the user's code (the runner starts
    with -S: site costs about 10 ms per request, mostly in hooks the sandbox has no use for).
    .pth files are not processed. Found once per request, in the process that forks the cases:
    each process that looked again paid for it in page faults."""
    v = "%d.%d" % sys.version_info[:2]
    dirs = []
    # A package layer the request named ("packages"), mounted read-only: the user's code imports
    # it before Debian's packages; a program exec'd for a case finds it through PYTHONPATH.
    if os.path.isdir("/opt/sbx-packages") and os.listdir("/opt/sbx-packages"):
        dirs.append("/opt/sbx-packages")
        os.environ["PYTHONPATH"] = "/opt/sbx-packages"
    for d in ("/usr/local/lib/python%s/dist-packages" % v, "/usr/lib/python3/dist-packages",
              "/usr/lib/python%s/dist-packages" % v):
        if d not in dirs and os.path.isdir(d):
            dirs.append(d)
    return dirs


_EXIT = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
_QUIT = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")


def python_site(dirs=None):
    """What `site` would have done for the user's code: site_dirs() (or dirs, found already)
    on sys.path, and the exit()/quit() builtins."""
    import builtins
    for d in site_dirs() if dirs is None else dirs:
        if d not in sys.path:
            sys.path.append(d)
    builtins.exit = _EXIT
    builtins.quit = _QUIT
