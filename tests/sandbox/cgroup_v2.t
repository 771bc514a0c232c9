#!/usr/bin/env bash
# cgroup_v2.t: the sandbox's cgroup v2 path, on a real pure-v2 kernel. This host mounts the
# controllers as v1 (its own supervisor's groups hold them), and most production hosts are pure
# v2, so the test boots User-mode Linux (Debian's user-mode-linux: a 6.1 kernel that runs as a
# process, no KVM needed) with the host's / as its root (hostfs), mounts cgroup2 alone, and runs
# real sandboxes there through build/sbx and build/sbxd (a plain build of them when build/ is
# sanitized): limits enforced by the v2 controllers (memory.max with memory.peak, pids.max, CPU
# from cpu.stat), runs born in their group with CLONE_INTO_CGROUP and ended with cgroup.kill,
# and no group left by the CLI or the broker.
# /work of runs that need a work directory lives on a small btrfs image (hostfs cannot be
# idmapped). Everything inside UML is about 40 times slower than here; the limits are set for it.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
[ "$(id -u)" -eq 0 ] || skip_all "needs root (the sandbox)"
uml=$(command -v linux.uml) || skip_all "user-mode-linux is not installed (make deps installs it)"
command -v mkfs.btrfs >/dev/null || skip_all "btrfs-progs is not installed (make deps)"
for b in sbx sbxd; do [ -x "build/$b" ] || { echo "Bail out! build/$b is missing (make all)"; exit 1; }; done
# The broker's client is the service user, made here as make run and the harness make it: this
# test may be the first on a fresh machine to need it.
. nginx/stack.sh
stack_users || { echo "Bail out! cannot create the service users (useradd)"; exit 1; }

tmp=$(mktemp -d /var/tmp/sbx-uml.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
# AddressSanitizer reserves terabytes of shadow address space at start-up, more than a process
# under User-mode Linux can map, so a sanitized sbx dies before main there. Under a sanitized
# build/ (CI's second pass) the checks run with a plain build of the same sources made here.
bin=build
# (gcc links libasan dynamically; clang links its runtime in, so the build's flags tell too.)
if ldd build/sbx 2>/dev/null | grep -q libasan || grep -qs -- '-fsanitize=[^ ]*address' build/.flags; then
	bin=$tmp/build
	diag "build/ is sanitized (ASan cannot run under UML): using a plain build in $bin"
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u SANITIZE make --no-print-directory BUILD="$bin" \
		SANITIZE= "$bin/sbx" "$bin/sbxd" >"$tmp/make.log" 2>&1 ||
		{ echo "Bail out! the plain build for UML failed: $(tail -n 5 "$tmp/make.log")"; exit 1; }
fi
truncate -s 1G "$tmp/work.img" && mkfs.btrfs -q "$tmp/work.img" >/dev/null 2>&1 ||
	skip_all "cannot make a btrfs image"

# PID 1 inside UML: mount what a v2-only host has, run the checks, power off.
cat >"$tmp/init" <<EOF
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm
# As systemd mounts it on a pure-v2 host.
mount -t cgroup2 -o nsdelegate,memory_recursiveprot none /sys/fs/cgroup
mkdir -p /mnt/w && mount /dev/ubda /mnt/w && mkdir -p /mnt/w/tmp && chmod 1777 /mnt/w/tmp
export PATH=/usr/sbin:/usr/bin:/sbin:/bin TMPDIR=/mnt/w/tmp HOME=/root SBX_BIN_DIR=$bin
cd "$PWD"
echo UML-BEGIN
/usr/bin/python3 "$PWD/tests/sandbox/cgroup_v2_inside.py"
echo UML-END
echo o > /proc/sysrq-trigger
sleep 10
EOF
chmod 0755 "$tmp/init"

# UML keeps its memory in a file under TMPDIR (the host's /dev/shm when unset).
out=$(cd "$tmp" && timeout 600 "$uml" mem=1536M "ubd0=$tmp/work.img" rootfstype=hostfs rootflags=/ rw \
	"init=$tmp/init" con=null con0=fd:0,fd:1 </dev/null 2>&1)
rc=$?
# UML's console ends lines with CR LF.
body=$(printf '%s\n' "$out" | tr -d '\r' | sed -n '/^UML-BEGIN/,/^UML-END/p')
if [ -z "$body" ]; then
	echo "not ok 1 - User-mode Linux booted and ran the checks (exit $rc)"
	printf '%s\n' "$out" | tail -n 30 | sed 's/^/#   /'
	echo "1..1"
	exit 1
fi
# Relay the inner TAP lines (their numbering is the inner script's).
printf '%s\n' "$body" | grep -E '^(ok|not ok|#|1\.\.)'
if ! printf '%s\n' "$body" | grep -q '^1\.\.'; then
	echo "not ok - the checks inside UML did not finish"
	printf '%s\n' "$body" | grep -vE '^(ok|not ok|#)' | tail -n 25 | sed 's/^/#   /'
	exit 1
fi
! printf '%s\n' "$body" | grep -q '^not ok'
