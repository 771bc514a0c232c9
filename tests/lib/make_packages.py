#!/usr/bin/python3
"""make_packages.py DIR: tiny test packages, built here (no network), into DIR/python and DIR/node.

python: tinydep 1.0 (VALUE = 41), tinyapp 1.0 (needs tinydep; answer() == 42), brokenpkg 1.0
(needs "nothere", which is absent: its install fails), bigpkg 1.0 (a 300 KiB incompressible
data file), evilsetup 1.0 (an sdist whose setup.py writes the file named by its first line of
EVIL_TARGET, to prove it runs only in the sandbox). Wheels are written by hand per the wheel spec.
node (when npm is there): nodedep 1.0.0 (module.exports = 7), nodeapp 1.0.0 (needs nodedep).
Options: --evil-target PATH."""
import base64, hashlib, io, json, os, subprocess, sys, tarfile, tempfile, zipfile


def wheel(out, name, version, files, requires=()):
    di = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = dict(files)
    files[f"{di}/METADATA"] = meta
    files[f"{di}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: sbx-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for p, c in files.items():
        b = c.encode() if isinstance(c, str) else c
        h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
        record.append(f"{p},sha256={h},{len(b)}")
    record.append(f"{di}/RECORD,,")
    files[f"{di}/RECORD"] = "\n".join(record) + "\n"
    path = os.path.join(out, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, c in files.items():
            z.writestr(p, c)


def sdist(out, name, version, setup_py):
    path = os.path.join(out, f"{name}-{version}.tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for p, c in {"setup.py": setup_py, f"{name}.py": "X = 1\n",
                     "PKG-INFO": f"Metadata-Version: 1.0\nName: {name}\nVersion: {version}\n"}.items():
            b = c.encode()
            ti = tarfile.TarInfo(f"{name}-{version}/{p}")
            ti.size = len(b)
            t.addfile(ti, io.BytesIO(b))


def main():
    out = sys.argv[1]
    evil = sys.argv[sys.argv.index("--evil-target") + 1] if "--evil-target" in sys.argv else "/tmp/evil"
    py, nd = os.path.join(out, "python"), os.path.join(out, "node")
    os.makedirs(py, exist_ok=True)
    os.makedirs(nd, exist_ok=True)
    wheel(py, "tinydep", "1.0", {"tinydep.py": "VALUE = 41\n"})
    wheel(py, "tinyapp", "1.0", {"tinyapp.py": "from tinydep import VALUE\ndef answer():\n    return VALUE + 1\n"},
          ["tinydep"])
    wheel(py, "brokenpkg", "1.0", {"brokenpkg.py": "\n"}, ["nothere"])
    wheel(py, "bigpkg", "1.0", {"bigpkg/__init__.py": "", "bigpkg/blob.bin": os.urandom(300 << 10)})
    sdist(py, "evilsetup", "1.0",
          "import os\n"
          f"open({evil!r}, 'w').write('ran on the host')\n"
          "from setuptools import setup\nsetup(name='evilsetup', version='1.0', py_modules=['evilsetup'])\n")
    if subprocess.run(["sh", "-c", "command -v npm"], capture_output=True).returncode == 0:
        for name, deps, body in (("nodedep", {}, "module.exports = 7;\n"),
                                 ("nodeapp", {"nodedep": "^1.0.0"},
                                  "module.exports = () => require('nodedep') * 6;\n")):
            with tempfile.TemporaryDirectory() as d:
                json.dump({"name": name, "version": "1.0.0", "main": "index.js",
                           "dependencies": deps}, open(os.path.join(d, "package.json"), "w"))
                open(os.path.join(d, "index.js"), "w").write(body)
                subprocess.run(["npm", "pack", "--pack-destination", nd, "--offline", "--silent"],
                               cwd=d, check=True, capture_output=True,
                               env=dict(os.environ, npm_config_cache=os.path.join(d, ".npm")))


main()
