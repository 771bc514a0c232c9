#!/usr/bin/env bash
# fuzz_replay.t: replay the committed regression corpora (tests/fuzz/corpus/<driver>/) through
# their libFuzzer drivers (built by `make all` into build/fuzz/), with ASan and UBSan on. Each input
# runs once; a crash, sanitizer report or broken invariant fails the driver's line. Fuzzing itself
# (new inputs) is `make fuzz`.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
found=0
for src in tests/fuzz/fuzz_*.c; do
	name=$(basename "$src" .c)
	bin=build/fuzz/$name
	found=1
	if [ ! -x "$bin" ]; then
		ok 1 "$name: driver built (make all builds $bin)"
		continue
	fi
	inputs=(tests/fuzz/corpus/"$name"/*)
	if [ ! -e "${inputs[0]}" ]; then
		ok 1 "$name: has a regression corpus in tests/fuzz/corpus/$name/"
		continue
	fi
	log=$(mktemp)
	# Leaks count too; the time limit per input catches a hang.
	ASAN_OPTIONS=detect_leaks=1 timeout 120 "$bin" -timeout=10 "${inputs[@]}" >"$log" 2>&1
	rc=$?
	ran=$(grep -c '^Running: ' "$log")
	ok $((rc != 0 || ran != ${#inputs[@]})) "$name: ${#inputs[@]} corpus inputs replayed clean (ran $ran, exit $rc)"
	[ "$rc" -ne 0 ] && grep -E 'ERROR|SUMMARY|runtime error|Running:' "$log" | tail -n 8 | sed 's/^/# /'
	rm -f "$log"
done
[ "$found" -eq 1 ] || skip_all "no fuzz drivers in tests/fuzz/"
done_testing
