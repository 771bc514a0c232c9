# tap.sh: TAP helpers for shell tests. Source it; call ok/is/skip; finish with done_testing.
tap_n=0
tap_failed=0
ok() { # ok CONDITION-EXIT-STATUS DESCRIPTION  e.g.  ok $? "runs"; or: check cmd && ok 0 x || ok 1 x
	tap_n=$((tap_n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $tap_n - $2"; else echo "not ok $tap_n - $2"; tap_failed=$((tap_failed + 1)); fi
}
is() { # is GOT EXPECTED DESCRIPTION
	tap_n=$((tap_n + 1))
	if [ "$1" = "$2" ]; then echo "ok $tap_n - $3"; else
		echo "not ok $tap_n - $3"; echo "#   got:      '$1'"; echo "#   expected: '$2'"; tap_failed=$((tap_failed + 1)); fi
}
skip() { tap_n=$((tap_n + 1)); echo "ok $tap_n - $2 # SKIP $1"; }
diag() { echo "# $*"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
done_testing() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
