#!/usr/bin/python3
"""warm_node.t: a node run started from the pre-started node (sandbox/warm.c, the stub
sandbox/warm_stub.js) looks like `node /work/main.js` started cold: process.argv, execArgv,
require.main, __filename/__dirname, the globals, module resolution from /work/node_modules and
a package layer's NODE_PATH, ESM (.mjs), uncaught exceptions (exit 1, the same report down to
node's own loader frames), process.exit codes, signals, the environment, ids, capabilities,
rlimits and process view. Each program runs warm (the default) and cold (SBX_WARM=0) and the
results must be equal; the warm one must really have been warm (its command line is the stub's),
and runs the stub cannot honour (options, NODE_OPTIONS) start cold and still work. Other
languages' runs are unaffected."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxtest as S  # noqa: E402
from tap import ok  # noqa: E402

NODE = "/usr/bin/node"
if not os.access(NODE, os.X_OK):
    print(f"1..0 # SKIP {NODE} is not installed")
    sys.exit(0)
# The pre-start: its Python checks look for the pre-started stub (the zygote, the default for
# Python, has tests of its own: zygote*.t).
os.environ["SBX_ZYGOTE"] = "0"
S.start()
both, same = S.warm_and_cold, S.same_warm_and_cold


WARM = ("process.stdout.write(String(require('fs').readFileSync('/proc/self/cmdline', 'utf8')"
        ".includes('// sbx' + '-warm')))\n")
w, c = both([NODE, "/work/main.js"], {"main.js": WARM})
ok(w.get("stdout") == "true", "the default start of node main.js is warm", S.show(w))
ok(c.get("stdout") == "false", "with SBX_WARM=0 it starts cold", S.show(c))

IDENT = r"""
const fs = require('fs'), os = require('os');
const out = [];
out.push(process.argv, process.argv0, process.execArgv, process.execPath, process._eval);
out.push(require.main === module, module.id, __filename, __dirname, module.paths, process.cwd());
out.push(Object.getOwnPropertyNames(globalThis).sort());
out.push(typeof fs, typeof globalThis.require, typeof globalThis.module, Object.keys(require.cache));
out.push(Object.entries(process.env).sort());
out.push(process.pid, process.ppid, fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)));
out.push(process.getuid(), process.getgid(), process.getgroups(), os.homedir(), os.tmpdir());
out.push(fs.readFileSync('/proc/self/status', 'utf8').split('CapInh')[1].split('Speculation')[0]);
out.push(fs.readFileSync('/proc/self/limits', 'utf8'));
out.push(os.getPriority(), process.stdin.isTTY, process.stdout.isTTY, process.title);
out.push(Intl.DateTimeFormat().resolvedOptions().locale, new Date(0).getTimezoneOffset());
console.log(JSON.stringify(out, null, 1));
"""
same([NODE, "/work/main.js", "a b", "-e", "x"], {"main.js": IDENT},
     "argv, execArgv, require.main, __filename, __dirname, module paths, globals, require "
     "cache, environment, pid view, ids, capabilities, seccomp, rlimits, nice: as node main.js",
     env=["EXTRA=1"], memory_mb=600, open_files=100, file_size_mb=3, processes=30,
     cpu_ms=4000)
same([NODE, "main.js", "rel"], {"main.js": IDENT}, "a relative script path: the same")

TB = ("function f(x) {\n  if (x === 0) throw new Error('boom');\n}\n"
      "console.log('before');\nf(0);\n")
w, c = both([NODE, "/work/main.js"], {"main.js": TB})


def head(r):
    """The report down to node's own loader: below it, cold shows node's bootstrap and warm the
    stub's eval frames (the only difference, documented in warm.c)."""
    e = r.get("stderr") or ""
    return e.split("at Function.executeUserEntryPoint")[0], e.rstrip().splitlines()[-1:]


ok(S.happened(w) and w.get("exit_code") == 1 == c.get("exit_code") and
   w.get("stdout") == c.get("stdout") == "before\n" and head(w) == head(c) and
   "/work/main.js:2" in w.get("stderr", ""),
   "an uncaught exception: exit 1, the same report (source line, message, the user's frames, "
   "node's loader frames, version)", S.show(w) + S.show(c))
same([NODE, "/work/main.js"], {"main.js": "console.log('x');\nprocess.exit(3);\n"},
     "process.exit(3): exit code 3")
same([NODE, "/work/main.js"], {"main.js": "process.exitCode = 4;\nsetTimeout(() => "
                               "console.log('later'), 50);\n"},
     "process.exitCode and a pending timer: the timer runs, exit code 4")
same([NODE, "/work/main.js"], {"main.js": "process.kill(process.pid, 'SIGSEGV');\n"},
     "process.kill(pid, SIGSEGV): signal SIGSEGV")
same([NODE, "/work/main.js"], {"main.js": "process.on('SIGTERM', () => { console.log('term'); "
                               "process.exit(5); });\nprocess.kill(process.pid, 'SIGTERM');\n"
                               "setTimeout(() => {}, 5000);\n"},
     "a SIGTERM handler of the program's own runs")
w, c = both([NODE, "/work/main.js"], {"main.js": "let x = (1,\n"})
ok(S.happened(w) and w.get("exit_code") == 1 == c.get("exit_code") and head(w) == head(c) and
   "SyntaxError" in w.get("stderr", ""), "a SyntaxError: exit 1, the same report",
   S.show(w) + S.show(c))
w, c = both([NODE, "/work/nope.js"], {})
ok(S.happened(w) and w.get("exit_code") == 1 == c.get("exit_code") and
   head(w)[0].split("\n    at ")[0] == head(c)[0].split("\n    at ")[0] and
   "Cannot find module '/work/nope.js'" in w.get("stderr", ""),
   "a missing script: exit 1, the same message", S.show(w) + S.show(c))
same([NODE, "/work/main.js"], {"main.js": "Promise.reject(new Error('rej'));\n"},
     "an unhandled rejection: the same report and exit code",
     keys=("status", "exit_code", "signal", "stdout"))
same([NODE, "/work/main.js"], {"main.js": "console.log(require('leftpad')(7));\n"
                               "console.log(require.resolve('leftpad'));\n",
                               "node_modules/leftpad/index.js":
                               "module.exports = (n) => '[' + n + ']';\n"},
     "require() resolves /work/node_modules")
same([NODE, "/work/main.mjs"], {"main.mjs": "import { x } from './lib.mjs';\n"
                                "import path from 'node:path';\n"
                                "console.log(x, import.meta.url, path.sep, typeof require);\n",
                                "lib.mjs": "export const x = 42;\n"},
     "an ES module (.mjs) and its imports")
same([NODE, "/work/main.js"], {"main.js": "import('./lib.mjs').then((m) => console.log(m.x));\n",
                               "lib.mjs": "export const x = 'dyn';\n"},
     "dynamic import() from a CommonJS main")
same([NODE, "/work/main.js"], {"main.js": "const { Worker } = require('worker_threads');\n"
                               "new Worker('require(\"worker_threads\").parentPort"
                               ".postMessage(6*7)', { eval: true }).on('message', "
                               "(m) => console.log('worker', m));\n"},
     "a worker thread")
same([NODE, "/work/main.js"], {"main.js": "process.stdout.write('a\\n');\n"
                               "process.stderr.write('b\\n');\nconsole.error('c');\n"},
     "stdout and stderr: the same bytes")

# A package layer: NODE_PATH (the service sets it with the layer) is honoured warm.
layer = S.tmpdir(owner=None)
os.makedirs(os.path.join(layer, "node_modules", "pkgx"))
with open(os.path.join(layer, "node_modules", "pkgx", "index.js"), "w") as f:
    f.write("module.exports = 'from the layer';\n")
LAYER_JS = (WARM.replace("process.stdout.write(", "console.log(") +
            "console.log(require('pkgx'), require.resolve('pkgx'));\n")
w, c = both([NODE, "/work/main.js"], {"main.js": LAYER_JS},
            env=["NODE_PATH=/opt/sbx-packages/node_modules"], extra=["--layer", layer])
ok(w.get("stdout") == "true\n" + "from the layer /opt/sbx-packages/node_modules/pkgx/index.js\n"
   and c.get("stdout") == "false\n" + w["stdout"].split("\n", 1)[1],
   "a package layer's NODE_PATH, warm: modules resolve from /opt/sbx-packages/node_modules as "
   "cold", S.show(w) + S.show(c))

# Billing: the start is not billed, the user's work always is.
SPIN = ("const t = process.cpuUsage();\nwhile (process.cpuUsage(t).user < 500000) {}\n"
        "const b = Buffer.alloc(64 << 20, 1);\nconsole.log(b.length);\n")
w, c = both([NODE, "/work/main.js"], {"main.js": SPIN})
ok(w.get("status") == "ok" and w.get("cpu_ms", 0) >= 500 and w.get("memory_kb", 0) >= 60 << 10,
   "a warm run is billed its own CPU (>= 500 ms spun) and memory (>= 64 MiB touched)", S.show(w))
w, c = both([NODE, "/work/main.js"], {"main.js": ";\n"})
ok(w.get("status") == "ok" and c.get("status") == "ok" and w.get("cpu_ms", 99) < c.get("cpu_ms", 0),
   "node's start is not billed: a warm empty run costs less CPU than a cold one",
   S.show(w) + S.show(c))

# Forms the pre-started node cannot honour start cold, and still work.
w, c = both([NODE, "/work/main.js"], {"main.js": WARM}, env=["NODE_OPTIONS=--max-old-space-size=100"])
ok(w.get("stdout") == "false" and w.get("exit_code") == 0,
   "NODE_OPTIONS in the environment: cold start (the variable is honoured)", S.show(w))
w, c = both([NODE, "--stack-size=2000", "/work/main.js"], {"main.js": WARM})
ok(w.get("stdout") == "false" and w.get("exit_code") == 0, "node options: cold start", S.show(w))
w, c = both([NODE, "-e", "console.log(6*7)"])
ok(w.get("stdout") == "42\n" == c.get("stdout"), "node -e: runs (cold)", S.show(w))
stdin_path = os.path.join(S.tmpdir(), "in.txt")
with open(stdin_path, "w") as f:
    f.write("hello\nworld\n" * 3000)
STDIN_JS = ("const fs = require('fs');\nconst s = fs.readFileSync(0, 'utf8');\n"
            "console.log(s.length, s.slice(0, 11).toUpperCase(), fs.fstatSync(0).isFile());\n")
same([NODE, "/work/main.js"], {"main.js": STDIN_JS}, "fs.readFileSync(0) reads the run's stdin "
     "(a file), from its start", stdin=stdin_path)
w, c = both([NODE, "/work/main.js"], {"main.js": WARM.replace("process.stdout.write(", "console.log(")
                                      + "process.stdin.on('data', (d) => process.stdout.write("
                                      "String(d).slice(0, 6)));\n"}, stdin=stdin_path)
ok(w.get("stdout") == "true\nhello\n" and c.get("stdout") == "false\nhello\n",
   "a run with stdin starts warm; process.stdin streams it", S.show(w) + S.show(c))
w, c = both([NODE, "/work/main.js"], {"main.js": "console.log(require('fs')"
                                      ".readdirSync('/proc').filter((p) => /^\\d+$/.test(p)))\n"},
            stdin=stdin_path)
ok(S.happened(w) and w.get("stdout") == c.get("stdout") and w["stdout"].count("'") == 2,
   "with stdin, the run's process view is as cold: itself only (the stdin holder is gone)",
   S.show(w) + S.show(c))
os.chmod(stdin_path, 0o600)
w, c = both([NODE, "/work/main.js"], {"main.js": WARM.replace("process.stdout.write(", "console.log(")
                                      + "console.log(require('fs').readFileSync(0, 'utf8')"
                                      ".length)\n"}, stdin=stdin_path)
ok(w.get("stdout") == "false\n36000\n" and c.get("stdout") == w.get("stdout"),
   "a stdin the run's user could not open itself (a 0600 root file): cold start, read as ever",
   S.show(w) + S.show(c))

# Other languages: untouched, and Python still starts warm.
w, c = both(["/bin/sh", "-c", "echo hi"])
ok(w.get("stdout") == "hi\n", "a shell run is untouched", S.show(w))
w, c = both([S.PY, "-u", "-c", "import sys;sys.stdout.write(str('#sbx'+'-warm' in "
             "open('/proc/self/cmdline').read()))"])
ok(w.get("stdout") == "True" and c.get("stdout") == "False", "a Python run is still warm",
   S.show(w))
S.finish()
