# Build, run and test the sandboxed code-execution service.
#   make run    install what running needs (if missing), build it, start the stack on
#               https://127.0.0.1:8443
#   make test   install what the tests need too, build everything, run every test: unit, sandbox,
#               integration, browser
#   make bench  the speed figures (ratios against baselines measured in the same run)
#   make check-format   every C file as clang-format (.clang-format) prints it; lists the others
# Switches: SANITIZE=address,undefined  WERROR=1  STATE_DIR=...  PORT=...  CFLAGS=...  LDFLAGS=...
# (CFLAGS and LDFLAGS add to the flags the build needs, they never replace them: CFLAGS=-O0 works)

BUILD := build
CC ?= cc
PKG_CFLAGS := $(shell pkg-config --cflags json-c libseccomp 2>/dev/null)
PKG_LIBS_JSON := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
PKG_LIBS_SECCOMP := $(shell pkg-config --libs libseccomp 2>/dev/null || echo -lseccomp)

# Flags the build needs, kept apart from CFLAGS/LDFLAGS so that `make CFLAGS=-O0` (or any
# command-line or environment CFLAGS) changes only optimisation and debug information: the rules
# pass $(SBX_CFLAGS) $(CFLAGS) and $(SBX_LDFLAGS) $(LDFLAGS), the user's flags last so they win.
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
HARDEN := -fstack-protector-strong -fstack-clash-protection -fPIE
CFLAGS ?= -O2 -g
# glibc's _FORTIFY_SOURCE works only in an optimised build and warns (#warning) without one, so
# it follows the last -O of CFLAGS: on for -O1 and above, off for -O0 or none. A level the user
# sets (or unsets) in CFLAGS is theirs: a second definition would be a redefinition warning.
FORTIFY := $(strip $(if $(filter -D_FORTIFY_SOURCE% -U_FORTIFY_SOURCE,$(CFLAGS)),,\
	$(if $(filter-out -O0,$(lastword $(filter -O%,$(CFLAGS)))),-D_FORTIFY_SOURCE=3)))
SBX_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(HARDEN) $(FORTIFY) $(PKG_CFLAGS) -MMD -MP
SBX_LDFLAGS := -pie -Wl,-z,relro,-z,now
ifdef WERROR
SBX_CFLAGS += -Werror
endif
ifdef SANITIZE
# FORTIFY and ASan disagree; keep the sanitizer honest.
SBX_CFLAGS := $(filter-out -D_FORTIFY_SOURCE=3,$(SBX_CFLAGS)) -U_FORTIFY_SOURCE \
	-fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
SBX_LDFLAGS += -fsanitize=$(SANITIZE)
endif

# Debian packages, installed only when missing (apt-get update first, then apt-get install -y):
# RUN_PACKAGES are what `make run` needs (the build, the stack, the languages of the sandbox and
# the tools of nginx/run); `make test` and `make bench` add TEST_PACKAGES (browser, clang for the
# fuzzers and sanitizers, clang-format, User-mode Linux, the Python test libraries, perl for
# tests/run's TAP::Harness) and BENCH_PACKAGES (load generators).
RUN_PACKAGES := gcc g++ make pkg-config libc6-dev libfcgi-dev libjson-c-dev libseccomp-dev \
	nginx-light libnginx-mod-stream spawn-fcgi multiwatch openssl curl ca-certificates procps \
	psmisc util-linux iproute2 btrfs-progs nodejs \
	python3 python-is-python3 python3-numpy python3-sympy python3-pandas python3-scipy \
	python3-matplotlib python3-pil python3-pip python3-setuptools python3-wheel
TEST_PACKAGES := python3-httpx python3-jsonschema chromium clang libclang-rt-14-dev clang-format \
	user-mode-linux libcap2-bin perl
BENCH_PACKAGES := wrk hyperfine
PACKAGES := $(RUN_PACKAGES) $(TEST_PACKAGES) $(BENCH_PACKAGES)

.PHONY: all build deps deps-run run test bench fuzz token revoke clean check-format
all:

# deps-run: what running needs; deps: everything (make test, make bench).
deps-run: DEPS_PACKAGES = $(RUN_PACKAGES)
deps: DEPS_PACKAGES = $(PACKAGES)
deps deps-run:
	@missing=$$(for p in $(DEPS_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if ! command -v node >/dev/null 2>&1; then missing="$$missing nodejs"; fi; \
	if ! command -v npm >/dev/null 2>&1; then missing="$$missing npm"; fi; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# Objects depend on the flags they were built with, so `make test SANITIZE=...` after a plain
# build (or the reverse) rebuilds everything instead of linking a mix.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW := $(CC) $(SBX_CFLAGS) $(CFLAGS) $(SBX_LDFLAGS) $(LDFLAGS)
$(shell mkdir -p $(BUILD); echo '$(FLAGS_NOW)' | cmp -s - $(FLAGS_STAMP) || \
	echo '$(FLAGS_NOW)' >$(FLAGS_STAMP))

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SBX_CFLAGS) $(CFLAGS) -c -o $@ $<

include sandbox/build.mk
include fcgi/build.mk
include www/build.mk
include nginx/build.mk
include tests/build.mk

test: deps
	@$(MAKE) --no-print-directory all
	tests/run

# tests/unit/format.t is the check (one TAP line per file; `make test` runs it too).
check-format:
	@out=$$(tests/unit/format.t); rc=$$?; printf '%s\n' "$$out" | grep -v '^ok '; exit $$rc

bench: deps
	@$(MAKE) --no-print-directory all
	tests/bench/run

clean:
	rm -rf $(BUILD)

# `make build`: what running needs and nothing else (no test binary, fuzzer or benchmark), the
# build `make run` does; `make all` (make test) builds those too.
build: $(BUILD)/sbxd $(BUILD)/sbx $(BUILD)/sbx-fcgi $(EVAL_RUNNER_PYC) $(WWW_BUNDLE) $(WWW_DOCS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
