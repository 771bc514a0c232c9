# nginx/build.mk: the stack's entry points (included by the top Makefile).
#   make run                      deps, build, then the stack in the foreground (nginx/run)
#   make token NAME=alice         a new API token for client alice (printed)
#   make revoke NAME=alice        remove alice's tokens
# STATE_DIR (default ./state) and PORT (default 8443) pick the stack.
STATE_DIR ?= $(CURDIR)/state
PORT ?= 8443

# What running needs first (deps-run, build: no test package, test binary or fuzzer), then the
# stack: in sequence even under make -j.
run: deps-run
	@$(MAKE) --no-print-directory build
	@STATE_DIR='$(STATE_DIR)' PORT='$(PORT)' nginx/run

token:
	@test -n "$(NAME)" || { echo "usage: make token NAME=client" >&2; exit 2; }
	@STATE_DIR='$(STATE_DIR)' nginx/token add '$(NAME)'

revoke:
	@test -n "$(NAME)" || { echo "usage: make revoke NAME=client" >&2; exit 2; }
	@STATE_DIR='$(STATE_DIR)' nginx/token revoke '$(NAME)'
