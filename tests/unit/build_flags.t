#!/usr/bin/env bash
# build_flags.t: CFLAGS and LDFLAGS given to make (on its command line or in the environment)
# add to the flags the build needs and never replace them: every compile line keeps the language
# level, _GNU_SOURCE, the warnings, the hardening, the dependency files and pkg-config's flags;
# every link line keeps -pie and full RELRO; SANITIZE reaches both. Read from `make -n -B` into a
# private build directory (the real build/ and its flags stamp are untouched), plus one real -O0
# build of the CLI with -Werror: it must be warning-free.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
command -v make >/dev/null || skip_all "make is not installed"
tmp=$(mktemp -d /tmp/sbx-build-flags.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
bins=(sbx sbxd sbx-fcgi)

# A clean make: nothing of an outer `make test SANITIZE=... WERROR=1` leaks in.
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CFLAGS -u LDFLAGS -u SANITIZE -u WERROR \
	"$@"; }
dry() { # dry DIR [VAR=VALUE...]: the commands that build the three binaries from scratch
	local dir=$1
	shift
	mk make --no-print-directory -n -B BUILD="$tmp/$dir" "$@" "${bins[@]/#/$tmp/$dir/}" 2>&1
}
compile_lines() { grep -E -- ' -c -o [^ ]+\.o ' "$1"; }
link_lines() { grep -E -- " -o $tmp/[^ ]+/(sbx|sbxd|sbx-fcgi) " "$1"; }

required_c=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
	-Wformat=2 -fstack-protector-strong -fstack-clash-protection -fPIE -MMD -MP)
for w in $(pkg-config --cflags json-c libseccomp 2>/dev/null); do required_c+=("$w"); done
required_l=(-pie -Wl,-z,relro,-z,now)

# every_line FILE WORD...: each line of FILE holds each WORD (as a separate word); prints the misses
every_line() {
	local f=$1 line w miss=0
	shift
	[ -s "$f" ] || { echo "(no such lines)"; return 1; }
	while IFS= read -r line; do
		for w in "$@"; do
			case " $line " in *" $w "*) ;; *) echo "missing $w: ${line:0:200}"; miss=1 ;; esac
		done
	done <"$f"
	return $miss
}
no_line() { # no_line FILE WORD: no line of FILE holds WORD
	! grep -qE -- "(^| )$2( |$)" "$1"
}
check() { # check NAME LABEL WORD...: every compile (c) or link (l) line of case NAME has WORDs
	local name=$1 kind=$2 label=$3 out
	shift 3
	out=$(every_line "$tmp/$name.$kind" "$@")
	ok $? "$label"
	[ -n "$out" ] && printf '%s\n' "$out" | head -n 5 | sed 's/^/#   /'
}
run_case() { # run_case NAME [VAR=VALUE...] (through env when NAME starts with env)
	local name=$1
	shift
	if [ "${name#env}" != "$name" ]; then
		mk env "$@" make --no-print-directory -n -B BUILD="$tmp/$name" \
			"${bins[@]/#/$tmp/$name/}" >"$tmp/$name.out" 2>&1
	else
		dry "$name" "$@" >"$tmp/$name.out"
	fi
	compile_lines "$tmp/$name.out" >"$tmp/$name.c"
	link_lines "$tmp/$name.out" >"$tmp/$name.l"
}

run_case default
check default c "default build: every compile line has the required flags, -O2 and FORTIFY" \
	"${required_c[@]}" -O2 -D_FORTIFY_SOURCE=3
check default l "default build: every link line of sbx, sbxd, sbx-fcgi has -pie and full RELRO" \
	"${required_l[@]}"
is "$(wc -l <"$tmp/default.l")" 3 "default build: three link lines seen (sbx, sbxd, sbx-fcgi)"

run_case cmdline CFLAGS=-O0 LDFLAGS=-Wl,-O1
check cmdline c "make CFLAGS=-O0: every compile line keeps the required flags and has -O0" \
	"${required_c[@]}" -O0
no_line "$tmp/cmdline.c" -O2
ok $? "make CFLAGS=-O0: the default -O2 is gone (the user's CFLAGS replace only it)"
no_line "$tmp/cmdline.c" -D_FORTIFY_SOURCE=3
ok $? "make CFLAGS=-O0: no _FORTIFY_SOURCE (glibc warns without optimisation)"
check cmdline l "make LDFLAGS=-Wl,-O1: every link line keeps -pie and full RELRO, adds -Wl,-O1" \
	"${required_l[@]}" -Wl,-O1

run_case env_flags "CFLAGS=-O1 -g" "LDFLAGS=-Wl,-O1"
check env_flags c "CFLAGS='-O1 -g' in the environment: required flags, -O1 and FORTIFY" \
	"${required_c[@]}" -O1 -g -D_FORTIFY_SOURCE=3
check env_flags l "LDFLAGS in the environment: link lines keep -pie and full RELRO" \
	"${required_l[@]}" -Wl,-O1

run_case own_fortify "CFLAGS=-O2 -D_FORTIFY_SOURCE=2"
check own_fortify c "CFLAGS with its own -D_FORTIFY_SOURCE=2: kept, the required flags too" \
	"${required_c[@]}" -O2 -D_FORTIFY_SOURCE=2
no_line "$tmp/own_fortify.c" -D_FORTIFY_SOURCE=3
ok $? "... and the build's own level is not added (a redefinition warning under -Werror)"

run_case sanitize SANITIZE=address,undefined WERROR=1 CFLAGS=-O0 LDFLAGS=-Wl,-O1
check sanitize c "SANITIZE with CFLAGS=-O0: compile lines have the sanitizer, -Werror, the rest" \
	"${required_c[@]}" -O0 -Werror -fsanitize=address,undefined
check sanitize l "SANITIZE with LDFLAGS: link lines have the sanitizer, -pie and full RELRO" \
	"${required_l[@]}" -Wl,-O1 -fsanitize=address,undefined

# A real -O0 build with warnings as errors (the CLI and the sandbox library).
mk make --no-print-directory BUILD="$tmp/real" CFLAGS=-O0 WERROR=1 "$tmp/real/sbx" \
	>"$tmp/real.out" 2>&1
rc=$?
ok $((rc != 0 || $(grep -c 'warning:' "$tmp/real.out") != 0)) \
	"make CFLAGS=-O0 WERROR=1 builds the CLI warning-free (exit $rc)"
[ "$rc" -ne 0 ] && grep -E 'warning|error' "$tmp/real.out" | head -n 10 | sed 's/^/#   /'
done_testing
