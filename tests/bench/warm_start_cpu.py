#!/usr/bin/python3
"""warm_start_cpu.py MODE N: the whole sandbox-side CPU of N sequential `python3 -c 'print(1)'`
runs through a private broker with one slot, per run: every process under the broker (slot
processes, inits, programs, zygotes, counted own + reaped children), against what the runs were
billed. MODE is "warm" (pre-start, sandbox/warm.c) or "zygote" (SBX_ZYGOTE=1, sandbox/zygote.c).
Needs root and a built tree. Unlike tests/bench/warm_start it does not need a quiet machine:
it counts the broker's processes only, not the machine's busy time."""
import os, subprocess, sys, time, tempfile, json
BUILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'build')
HZ = os.sysconf('SC_CLK_TCK')
def st(pid):
    s = open('/proc/%d/stat' % pid).read(); f = s[s.rindex(')') + 2:].split()
    return f[1], (int(f[11]) + int(f[12])) * 1000 / HZ, (int(f[13]) + int(f[14])) * 1000 / HZ
def tree_cpu(root):
    # own+reaped children of root's descendants, alive now
    tot = 0.0
    kids = {}
    for p in os.listdir('/proc'):
        if p.isdigit():
            try: pp, o, c = st(int(p))
            except OSError: continue
            kids.setdefault(int(pp), []).append((int(p), o, c))
    stack = [root]
    while stack:
        x = stack.pop()
        for p, o, c in kids.get(x, []):
            tot += o + c; stack.append(p)
    return tot
d = tempfile.mkdtemp(dir='/var/tmp'); os.chmod(d, 0o755); w = d + '/w'; os.mkdir(w); os.chown(w, 65534, 65534)
mode = sys.argv[1]; N = int(sys.argv[2])
env = dict(os.environ, SBX_ZYGOTE='1' if mode == 'zygote' else '0', SBX_TEMPLATE_MAX_AGE_S='3600')
b = subprocess.Popen([BUILD + '/sbxd', '--socket', d + '/s', '--slots', '1', '--client-uid', '0', '--files-uid', '65534', '--files-gid', '65534', '--uid-base', '376000', '--cgroup-name', 'zc'], env=env, stderr=subprocess.DEVNULL)
while not os.path.exists(d + '/s'): time.sleep(0.05)
def run():
    return json.loads(subprocess.run([BUILD + '/sbx', '--broker', d + '/s', '--workdir', w, '--', '/usr/bin/python3', '-c', 'print(1)'], capture_output=True, text=True).stdout)
for _ in range(3): run()
time.sleep(1)
c0 = tree_cpu(b.pid) + st(b.pid)[2]; billed = 0
for _ in range(N): billed += run()['cpu_ms']
time.sleep(1)
c1 = tree_cpu(b.pid) + st(b.pid)[2]
print(mode, 'sandbox-side CPU per run %.1f ms (billed %.1f)' % ((c1 - c0) / N, billed / N))
b.terminate(); b.wait()
import shutil; shutil.rmtree(d, ignore_errors=True)
