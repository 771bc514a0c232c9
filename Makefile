# Build, run and test the sandboxed code-execution service.
#   make run    install what is missing, build, start the stack on https://127.0.0.1:8443
#   make test   every test: unit, sandbox, integration, browser
#   make bench  the speed figures (ratios against baselines measured in the same run)
# Switches: SANITIZE=address,undefined  WERROR=1  STATE_DIR=...  PORT=...

BUILD := build
CC ?= cc
PKG_CFLAGS := $(shell pkg-config --cflags json-c libseccomp 2>/dev/null)
PKG_LIBS_JSON := $(shell pkg-config --libs json-c 2>/dev/null || echo -ljson-c)
PKG_LIBS_SECCOMP := $(shell pkg-config --libs libseccomp 2>/dev/null || echo -lseccomp)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
HARDEN := -D_FORTIFY_SOURCE=3 -fstack-protector-strong -fstack-clash-protection -fPIE
CFLAGS ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(WARN) $(HARDEN) $(PKG_CFLAGS) -MMD -MP
LDFLAGS += -pie -Wl,-z,relro,-z,now
ifdef WERROR
CFLAGS += -Werror
endif
ifdef SANITIZE
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
# FORTIFY and ASan disagree; keep the sanitizer honest.
CFLAGS := $(filter-out -D_FORTIFY_SOURCE=3,$(CFLAGS)) -U_FORTIFY_SOURCE
endif

# Debian packages the build, the stack and the tests need. Installed only when missing.
PACKAGES := gcc make pkg-config libc6-dev libfcgi-dev libjson-c-dev libseccomp-dev \
	nginx-light spawn-fcgi multiwatch openssl curl ca-certificates procps psmisc \
	python3 python3-numpy python3-sympy python3-pandas python3-scipy python3-httpx python3-jsonschema \
	g++ nodejs chromium wrk hyperfine clang libclang-rt-14-dev iproute2 util-linux \
	btrfs-progs user-mode-linux

.PHONY: all deps run test bench fuzz token revoke clean
all:

deps:
	@missing=$$(for p in $(PACKAGES); do \
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
$(shell mkdir -p $(BUILD); echo '$(CC) $(CFLAGS) $(LDFLAGS)' | cmp -s - $(FLAGS_STAMP) || \
	echo '$(CC) $(CFLAGS) $(LDFLAGS)' >$(FLAGS_STAMP))

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

include sandbox/build.mk
include fcgi/build.mk
include www/build.mk
include nginx/build.mk
include tests/build.mk

test: deps
	@$(MAKE) --no-print-directory all
	tests/run

bench: deps
	@$(MAKE) --no-print-directory all
	tests/bench/run

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
