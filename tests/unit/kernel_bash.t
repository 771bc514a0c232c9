#!/usr/bin/python3
# kernel_bash.t: sandbox/kernel/sbx_kernel.py in bash mode, driven as the holder drives it
# (kernel_driver.py), without a sandbox: cwd/variables/functions persist, exit_code, stdin is
# /dev/null, SIGINT reaches the running command and only it, variables and set_variable, the
# private cell file, `exit` ends the kernel.
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_driver as kd  # noqa: E402

t = kd.Tap()
if not os.access(kd.PYTHON, os.X_OK):
    print("1..0 # SKIP %s is not installed" % kd.PYTHON)
    sys.exit(0)
if shutil.which("bash") is None:
    print("1..0 # SKIP bash is not installed")
    sys.exit(0)

k = kd.Kernel("bash")
t.is_(k.ready, {"op": "ready"}, "the bash kernel says ready")

out, err, r = k.run("cd /tmp\nexport SBX_FOO=bar\nplain=1\ngreet() { echo \"hi $1\"; }")
t.is_((r["status"], r["exit_code"], r["execution_count"], r["results"], r["error"]),
      ("ok", 0, 1, [], None), "a cell: ok, exit_code 0, execution_count 1")
out, err, r = k.run("pwd; echo $SBX_FOO $plain; greet you; sh -c 'echo child:$SBX_FOO'")
t.is_(out, "/tmp\nbar 1\nhi you\nchild:bar\n", "cwd, variables, exports and functions persist")
out, err, r = k.run("echo out; echo err >&2; echo out2")
t.is_((out, err), ("out\nout2\n", "err\n"), "stdout and stderr are apart")
out, err, r = k.run("false")
t.is_((r["status"], r["exit_code"]), ("error", 1), "false: status error, exit_code 1")
out, err, r = k.run("(exit 7)")
t.is_(r["exit_code"], 7, "exit_code is the last command's status")
out, err, r = k.run("false\ntrue")
t.is_((r["status"], r["exit_code"]), ("ok", 0), "only the last status counts")
out, err, r = k.run("echo no newline at the end")
t.is_(out, "no newline at the end\n", "a cell without a final newline runs")
out, err, r = k.run("read line; echo \"rc=$?\"; cat; echo cat-done")
t.is_(out, "rc=1\ncat-done\n", "a cell reading stdin gets EOF at once (stdin is /dev/null)")
out, err, r = k.run("echo still here")
t.is_(out, "still here\n", "and the protocol is intact after it")
out, err, r = k.run('stat -c %a "${BASH_SOURCE[0]}" "$(dirname "${BASH_SOURCE[0]}")"; '
                    'stat -c %U "${BASH_SOURCE[0]}"')
t.is_(out.split()[:2], ["600", "700"], "the cell file is 0600 in a 0700 directory")
out, err, r = k.run("echo $$ > /dev/null; ls /proc/self/fd | sort -n | tr '\\n' ' '")
t.is_(out.split(), ["0", "1", "2", "3"],
      "a command in a cell has fds 0-2 only (3 is ls's own directory)")
for code, desc in (("exec >/dev/null 2>&1; echo gone", "sends its stdout and stderr away"),
                   ("exec 1>&- 2>&-", "closes its stdout and stderr")):
    k.run(code)
    out, err, r = k.run("echo back; echo err back >&2")
    t.is_((out, err, r["exit_code"]), ("back\n", "err back\n", 0),
          "a cell that %s (exec): the next cell's output is back" % desc)
out, err, r = k.run("set -o | grep -E '^(errexit|nounset)' | tr -s ' \\t' ' '")
t.is_(out, "errexit off\nnounset off\n", "the shell starts without -e and -u")
out, err, r = k.run("echo 'syntax error here (")
t.ok(r["status"] == "error" and r["exit_code"] == 2 and "line 1" in err,
     "a syntax error is a failed cell with bash's message on stderr", (err, r))
out, err, r = k.run("echo after syntax error; echo $SBX_FOO")
t.is_(out, "after syntax error\nbar\n", "the shell is intact after it")

# --- SIGINT ---------------------------------------------------------------------------------------
for code, desc in (("echo started; sleep 100; echo never", "sleep 100"),
                   ("echo started; while :; do :; done; echo never", "a busy loop"),
                   ("w() { sleep 100; echo never-w; }; v() { w; echo never-v; }\necho started; v\n"
                    "echo never", "sleep 100 inside nested functions"),
                   ("echo started; sleep 100 | cat; echo never", "a pipeline")):
    m = k.send({"op": "execute", "code": code})
    started = k.wait_output("out", b"started\n")
    # A SIGINT between bash's fork and its exec of sleep would be taken by the child's copy of
    # the trap and lost (a terminal's Ctrl-C has the same window): send it once sleep runs.
    if "sleep 100" in code:
        k.wait_exec(["sleep", "100"])
    else:
        time.sleep(0.2)
    t0 = time.monotonic()
    k.sigint()
    out, err, r = k.collect(m, timeout=60)
    took = time.monotonic() - t0
    t.ok(started and r["exit_code"] == 130 and r["status"] == "error" and
         (r["error"] or {}).get("name") == "KeyboardInterrupt" and "never" not in out,
         "SIGINT stops %s and the rest of the cell (%.1fs)" % (desc, took), (out, err, r))
out, err, r = k.run("pwd; echo $SBX_FOO; greet again")
t.is_(out, "/tmp\nbar\nhi again\n", "state is kept after interrupts")
out, err, r = k.run("sleep 0.2; echo ok")
t.is_((out, r["exit_code"], r["error"]), ("ok\n", 0, None),
      "commands after an interrupt get SIGINT back (not ignored)")
k.sigint()
time.sleep(0.3)
out, err, r = k.run("echo idle-ok")
t.ok(k.alive() and out == "idle-ok\n" and r["error"] is None, "SIGINT while idle is ignored", r)
# Wait until the job has exec'd sleep: bash ignores SIGINT in an async child only once that
# child runs, and on a loaded machine the interrupt below could otherwise come first.
out, err, r = k.run("sleep 30 & bgpid=$!; "
                    "until [ \"$(cat /proc/$bgpid/comm 2>/dev/null)\" = sleep ]; do :; done; echo bg")
m = k.send({"op": "execute", "code": "echo started; sleep 100"})
k.wait_exec(["sleep", "100"])
k.sigint()
out, err, r = k.collect(m, timeout=60)
out, err, r = k.run("kill -0 $bgpid && echo bg-alive; kill $bgpid")
t.is_(out, "bg-alive\n", "a background job of an earlier cell survives an interrupt")

# --- variables ------------------------------------------------------------------------------------
k.run("myvar=hello; declare -i num=41+1; arr=(1 'two 2'); declare -A map=([k]=v); _priv=1; "
      "long=$(printf 'x%.0s' {1..500})")
out, err, r = k.call({"op": "variables"})
vs = {v["name"]: v for v in r.get("variables", [])}
t.ok({"myvar", "num", "arr", "map", "SBX_FOO", "plain", "long"} <= set(vs),
     "variables lists the user's shell variables", sorted(vs))
t.ok("_priv" not in vs and "PATH" not in vs and "RANDOM" not in vs and "PWD" not in vs,
     "and leaves out _names and the shell's own", sorted(vs))
t.is_([(vs.get(n) or {}).get("type") for n in ("myvar", "num", "arr", "map")],
      ["string", "integer", "array", "assoc"], "with their kinds")
t.ok(vs.get("myvar", {}).get("repr") == "hello" and vs.get("num", {}).get("repr") == "42" and
     "two 2" in vs.get("arr", {}).get("repr", "") and
     len(vs.get("long", {}).get("repr", "")) <= 200,
     "and values (capped at 200)", [vs.get(n) for n in ("myvar", "num", "arr", "long")])
out, err, r = k.call({"op": "set_variable", "name": "inj", "value": "it's $HOME `x`"})
t.is_(r, {"op": "set_variable", "ok": True}, "set_variable sets a string")
out, err, r = k.call({"op": "set_variable", "name": "inj_list", "value": ["a b", 2, True]})
out2, err2, r2 = k.call({"op": "set_variable", "name": "num", "value": "1+1"})
out, err, r = k.run('printf "[%s]\\n" "$inj" "${inj_list[@]}" "$num"')
t.is_(out, "[it's $HOME `x`]\n[a b]\n[2]\n[true]\n[1+1]\n",
      "values arrive literally (lists as arrays; old attributes dropped)")
k.run("readonly ro=1")
out, err, r = k.call({"op": "set_variable", "name": "ro", "value": "2"})
t.ok(r.get("ok") is False and "readonly" in r.get("error", {}).get("value", ""),
     "setting a readonly variable is refused with bash's message", r)
for bad in ("1x", "a-b", "", None, "BASH_ENV", "PPID", "a b"):
    out, err, r = k.call({"op": "set_variable", "name": bad, "value": "v"})
    t.ok(r.get("ok") is False, "set_variable refuses %r" % (bad,), r)
out, err, r = k.run("set -eu")
out, err, r = k.call({"op": "variables"})
t.ok("myvar" in {v["name"] for v in r.get("variables", [])} and k.alive(),
     "variables works under set -eu (the shell survives)", r)
out, err, r = k.run("echo $-")
t.ok("e" in out and "u" in out, "and the user's -e -u are kept", out)
k.run("set +eu")
out, err, r = k.run("echo $myvar")
t.is_(out, "hello\n", "the state is intact")

# --- resources and exit ---------------------------------------------------------------------------
time.sleep(0.2)
rss = k.rss_kb()
bash_rss = int(open("/proc/%d/status" % int(k.run("echo $$")[0])).read()
               .split("VmRSS:")[1].split()[0])
t.diag("idle bash kernel RSS: %d KiB, its bash %d KiB; start (spawn to ready): %.0f ms"
       % (rss, bash_rss, k.ready_ms))
t.ok(0 < rss <= 20 * 1024, "an idle bash kernel holds at most 20 MiB (%d KiB)" % rss)
out, err, r = k.run("echo $BASHPID")
bash_pid = int(out.strip())
cell_dir = None
out, err, r = k.run('dirname "${BASH_SOURCE[0]}"')
cell_dir = out.strip()
m = k.send({"op": "execute", "code": "echo bye; exit 5"})
code = k.wait_exit(60)
t.is_(code, 5, "exit in a cell ends the kernel (with the shell's status)")
t.ok(not os.path.exists("/proc/%d/cmdline" % bash_pid) or
     b"bash" not in open("/proc/%d/cmdline" % bash_pid, "rb").read(), "the shell is gone")
t.ok(cell_dir.startswith("/tmp/sbx-kernel-") and not os.path.exists(cell_dir),
     "the private directory is removed", cell_dir)
k.close()

k = kd.Kernel("bash")
k.run("echo x")
d = None
out, err, r = k.run('dirname "${BASH_SOURCE[0]}"')
d = out.strip()
k.close()
t.ok(k.proc.returncode == 0 and not os.path.exists(d),
     "EOF on the control socket: exit 0, the directory removed", (k.proc.returncode, d))
sys.exit(t.done())
