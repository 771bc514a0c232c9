"""warm_node_isolation.py: see warm_node_isolation.t."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from security_common import client, execute  # noqa: E402
from tap import ok, done  # noqa: E402
from warm_checks import BASE_ENV, check_restart_after_change, plant_then_look  # noqa: E402

# Run 1 leaves everything it can behind; each later run looks for it.
PLANT = r'''
const fs = require('fs'), cp = require('child_process');
const warm = fs.readFileSync('/proc/self/cmdline', 'utf8').includes('// sbx' + '-warm');
fs.writeFileSync('/tmp/mark.js', 'module.exports = 1;\n');
require('/tmp/mark.js');
fs.writeFileSync('/dev/shm/mark', 'x');
fs.writeFileSync('/work/mark', 'x');
globalThis.SBX_MARK = 1;
process.env.SBX_MARK = '1';
require('module').SBX_MARK = 1;
cp.spawn('/bin/sleep', ['30'], { detached: true, stdio: 'ignore' }).unref();
console.log(JSON.stringify({ warm, rand: Math.random(), pid: process.pid }));
'''
LOOK = r'''
const fs = require('fs');
const warm = fs.readFileSync('/proc/self/cmdline', 'utf8').includes('// sbx' + '-warm');
for (const sig of ['SIGTERM', 'SIGKILL', 'SIGSTOP'])
  try { process.kill(1, sig); } catch (e) {}
setTimeout(() => console.log(JSON.stringify({
  warm,
  files: ['/tmp/mark.js', '/dev/shm/mark', '/work/mark'].filter((p) => fs.existsSync(p)),
  tmp: fs.readdirSync('/tmp'), shm: fs.readdirSync('/dev/shm'),
  global: 'SBX_MARK' in globalThis, module: 'SBX_MARK' in require('module'),
  cache: Object.keys(require.cache), env: Object.keys(process.env).sort(),
  rand: Math.random(), pid: process.pid,
  procs: fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).map(Number),
})), 50);
'''

st, r, seen = plant_then_look(execute, "node", PLANT, LOOK, 3)
ok(st == 200 and "rand" in seen[0], "run 1 plants files, /tmp, /dev/shm, a required module, "
   "globals, module and environment state and a daemon", json.dumps(r)[:800])
later = seen[1:]
diag = json.dumps(later)[:1500]
ok(all(s.get("warm") for s in later), "the later node runs in the slot started warm", diag)
ok(all(s.get("files") == [] and s.get("tmp") == [] and s.get("shm") == [] for s in later),
   "no file of run 1 in /tmp, /dev/shm or /work of a later run", diag)
ok(all(s.get("global") is False and s.get("module") is False for s in later),
   "no global or module state of run 1", diag)
ok(all(s.get("cache") == ["/work/main.js"] for s in later),
   "the require cache holds only the run's own main.js", diag)
ok(all(s.get("env") == BASE_ENV for s in later), "the environment is the base one, every time",
   diag)
rands = [s.get("rand") for s in seen]
ok(None not in rands and len(set(rands)) == len(rands), "Math.random's state differs in every "
   "run", diag)
ok(all(s.get("procs") == [s.get("pid")] for s in later),
   "a run sees only its own process (no init, no other run, nothing pre-started)", diag)

# Languages alternate in the slot: each run works, and the slot follows the last one.
MARK_PY = "print('#sbx' + '-warm' in open('/proc/self/cmdline').read())\n"
MARK_JS = ("console.log(require('fs').readFileSync('/proc/self/cmdline', 'utf8')"
           ".includes('// sbx' + '-warm'))\n")
outs = []
for lang, code in (("python", MARK_PY), ("python", MARK_PY), ("node", MARK_JS),
                   ("node", MARK_JS), ("bash", "echo hi\n"), ("node", MARK_JS),
                   ("python", MARK_PY)):
    st, r = execute(lang, code)
    outs.append((lang, st, (r.get("stdout") or "").strip(), r.get("exit_code")))
ok(all(st == 200 and code == 0 for _, st, _, code in outs), "python, node and bash runs "
   "alternating in one slot all succeed", json.dumps(outs))
ok([o[2] for o in outs] == ["False", "True", "false", "true", "hi", "true", "False"],
   "the slot pre-starts the language of its last run (a bash run keeps node's)",
   json.dumps(outs))

# /v1/execute with arguments and an uncaught exception, warm.
with client() as cl:
    r = cl.post("/v1/execute", json={"language": "node", "args": ["a", "b"], "code":
                                     "console.log(process.argv.slice(1), require.main === module)"
                                     "\nnull.x;\n"})
    j = r.json()
    ok(j.get("exit_code") == 1 and "TypeError" in j.get("stderr", "") and
       "main.js:2" in j.get("stderr", "") and '"a"' not in j.get("stdout", "") and
       "'a', 'b' ] true" in j.get("stdout", ""),
       "/v1/execute node: argv, require.main and the uncaught exception as for node main.js",
       r.text[:600])

# stdin (a memfd from /v1/execute): reopened by the pre-started node, read as cold.
st, r = execute("node", "const s = require('fs').readFileSync(0, 'utf8');\n" + MARK_JS.replace(
    "console.log(", "console.log(s.toUpperCase(), "), stdin="abc\ndef\n")
ok(st == 200 and r.get("stdout") == "ABC\nDEF\n true\n" and r.get("exit_code") == 0,
   "/v1/execute node with stdin: warm, and the program reads its stdin", json.dumps(r)[:400])

# A change of the node binary drops the node that was started before it.
check_restart_after_change(execute, "node", "/usr/bin/node",
                           "after the node binary changed, the run's node was started after "
                           "the change")
done()
