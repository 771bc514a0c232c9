#!/usr/bin/env bash
# format.t: every C file of the project (*.c, *.h known to git: tracked, or new and not ignored)
# is exactly what clang-format makes of it with the checked-in .clang-format. One line per file;
# a "not ok" names the file and the command that fixes it. `make check-format` runs this.
# Formatting is decided by clang-format's major version: `make deps` installs Debian's.
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/tap.sh
command -v clang-format >/dev/null || skip_all "clang-format is not installed (make deps installs it)"
[ -f .clang-format ] || { echo "Bail out! .clang-format is missing"; exit 1; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' | sort -u)
else # an unpacked tarball: every C file outside the build and npm trees
	mapfile -t files < <(find . -name '*.[ch]' -not -path './build*' -not -path '*/node_modules/*' \
		-printf '%P\n' | sort)
fi
[ ${#files[@]} -gt 0 ] || { echo "Bail out! no C files found"; exit 1; }
diag "$(clang-format --version)"
bad=0
for f in "${files[@]}"; do
	[ -f "$f" ] || continue # deleted in the work tree, not yet in the index
	if clang-format --style=file "$f" | cmp -s - "$f"; then
		ok 0 "$f is clang-formatted"
	else
		ok 1 "$f is clang-formatted (fix: clang-format -i $f)"
		bad=$((bad + 1))
	fi
done
[ "$bad" -eq 0 ] || diag "$bad file(s) differ from clang-format's output"
done_testing
