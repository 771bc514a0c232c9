# fcgi/build.mk: build rules of fcgi/ (included by the top Makefile).
# fcgi/ is in layers (README.md, "Changing the code"): main.c and config.c on top, handlers/ (one
# file per resource, the route table), evaluate/ (evaluate handlers, compare, the in-sandbox
# runner), then http/ (request/response plumbing) and store/ (sessions on disk).

# ---- fcgi-core ----
FCGI_HTTP_OBJS := $(BUILD)/fcgi/http/routes.o $(BUILD)/fcgi/http/json.o $(BUILD)/fcgi/http/log.o \
	$(BUILD)/fcgi/http/admit.o $(BUILD)/fcgi/http/metrics.o
FCGI_OBJS := $(BUILD)/fcgi/main.o $(BUILD)/fcgi/config.o $(FCGI_HTTP_OBJS) \
	$(BUILD)/fcgi/handlers/route_table.o $(BUILD)/fcgi/handlers/run.o \
	$(BUILD)/fcgi/handlers/exec.o $(BUILD)/fcgi/handlers/info.o $(BUILD)/fcgi/handlers/metrics.o \
	$(BUILD)/fcgi/handlers/mcp.o $(BUILD)/fcgi/handlers/mcp_tools.o \
	$(BUILD)/fcgi/handlers/compile_cache.o $(BUILD)/fcgi/handlers/contexts.o \
	$(BUILD)/fcgi/handlers/contexts_reply.o \
	$(BUILD)/fcgi/handlers/runs.o $(BUILD)/fcgi/handlers/run_stream.o
FCGI_OBJS += $(BUILD)/fcgi/handlers/tools.o
FCGI_OBJS += $(BUILD)/fcgi/handlers/mcp_size.o $(BUILD)/fcgi/handlers/mcp_list.o \
	$(BUILD)/fcgi/handlers/mcp_cancel.o \
	$(BUILD)/fcgi/handlers/mcp_route.o
FCGI_OBJS += $(BUILD)/fcgi/handlers/piston.o
FCGI_OBJS += $(BUILD)/fcgi/handlers/packages.o $(BUILD)/fcgi/handlers/packages_layer.o \
	$(BUILD)/fcgi/handlers/packages_semver.o
FCGI_LIBS := -lfcgi $(PKG_LIBS_JSON) $(PKG_LIBS_SECCOMP)
# mcp_list.c embeds the tool definitions with .incbin (a path relative to the repo root).
$(BUILD)/fcgi/handlers/mcp_list.o: fcgi/handlers/mcp_tools.json
# ---- end fcgi-core ----

# ---- sessions ----
# The store (sessions on disk) links nothing else of fcgi/, no json-c and no broker client.
STORE_OBJS := $(BUILD)/fcgi/store/base.o $(BUILD)/fcgi/store/path.o $(BUILD)/fcgi/store/tree.o \
	$(BUILD)/fcgi/store/disk.o $(BUILD)/fcgi/store/scratch.o $(BUILD)/fcgi/store/meta.o \
	$(BUILD)/fcgi/store/session.o $(BUILD)/fcgi/store/fs.o $(BUILD)/fcgi/store/counters.o \
	$(BUILD)/fcgi/store/ccache.o $(BUILD)/fcgi/store/contexts.o
SESSION_OBJS := $(STORE_OBJS) $(BUILD)/fcgi/handlers/sessions.o $(BUILD)/fcgi/handlers/files.o \
	$(BUILD)/fcgi/handlers/seed.o $(BUILD)/fcgi/handlers/errors.o \
	$(BUILD)/fcgi/handlers/seed_compat.o $(BUILD)/fcgi/handlers/packages_record.o
SESSION_OBJS += $(BUILD)/fcgi/handlers/idempotency.o
FCGI_OBJS += $(SESSION_OBJS)
# Store unit tests (tests/unit/store_*.c): the store objects alone.
STORE_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,$(wildcard tests/unit/store_*.c))
all: $(STORE_UNIT_TESTS)

$(BUILD)/tests/store_%.t: $(BUILD)/tests/unit/store_%.o $(STORE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $< $(STORE_OBJS)
# Session route tests: the session handlers over the store, + json.o and the fake broker client
# (no sockets, no sandbox).
SESSION_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,$(wildcard tests/unit/session_*.c))
all: $(SESSION_UNIT_TESTS)
SESSION_TEST_OBJS = $(SESSION_OBJS) $(BUILD)/fcgi/http/json.o $(BUILD)/tests/unit/fcgi_fake_sbx.o

$(BUILD)/tests/session_%.t: $(BUILD)/tests/unit/session_%.o $(SESSION_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $< $(SESSION_TEST_OBJS) $(PKG_LIBS_JSON)
# ---- end sessions ----

# ---- evaluate ----
FCGI_OBJS += $(BUILD)/fcgi/evaluate/evaluate.o $(BUILD)/fcgi/evaluate/request.o \
	$(BUILD)/fcgi/evaluate/compare.o $(BUILD)/fcgi/evaluate/judge.o \
	$(BUILD)/fcgi/evaluate/checkhost.o $(BUILD)/fcgi/evaluate/judge_util.o \
	$(BUILD)/fcgi/evaluate/interact.o $(BUILD)/fcgi/evaluate/events.o \
	$(BUILD)/fcgi/evaluate/compile.o $(BUILD)/fcgi/evaluate/decide.o
FCGI_LIBS += -lm
# compare.c stands alone: its unit tests link nothing else.
COMPARE_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,$(wildcard tests/unit/compare_*.c))
all: $(COMPARE_UNIT_TESTS)

$(BUILD)/tests/compare_%.t: $(BUILD)/tests/unit/compare_%.o $(BUILD)/fcgi/evaluate/compare.o
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ -lm
# ...but the evaluate handlers' test links every fcgi object but main.o, with fcgi-core's
# scripted broker client (tests/unit/fcgi_fake_sbx.c) in place of libsandbox.a.
$(BUILD)/tests/compare_evaluate.t: $(BUILD)/tests/unit/compare_evaluate.o \
		$(filter-out $(BUILD)/fcgi/main.o,$(FCGI_OBJS)) $(BUILD)/tests/unit/fcgi_fake_sbx.o
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(FCGI_LIBS)
# The runner's modules load from __pycache__ inside the sandbox, where /opt/sbx is read-only and
# compiling them on every request would cost milliseconds: compiled here, at build time.
EVAL_RUNNER_PYC := fcgi/evaluate/runner/__pycache__/.built
all: $(EVAL_RUNNER_PYC)

$(EVAL_RUNNER_PYC): $(wildcard fcgi/evaluate/runner/*.py)
	/usr/bin/python3 -m compileall -q fcgi/evaluate/runner
	@touch $@
# ---- end evaluate ----

# ---- fcgi-core: link and unit tests (keep last: uses the complete FCGI_OBJS) ----
all: $(BUILD)/sbx-fcgi

$(BUILD)/sbx-fcgi: $(FCGI_OBJS) $(BUILD)/libsandbox.a
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $(FCGI_OBJS) $(BUILD)/libsandbox.a $(FCGI_LIBS)

# Unit tests link every fcgi object but main.o, with a fake broker client (tests/unit/fcgi_fake_sbx.c)
# in place of libsandbox.a, so handlers run without sockets and sandbox outcomes can be scripted.
FCGI_TEST_OBJS = $(filter-out $(BUILD)/fcgi/main.o,$(FCGI_OBJS)) $(BUILD)/tests/unit/fcgi_fake_sbx.o
FCGI_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,\
	$(filter-out tests/unit/fcgi_fake_sbx.c,$(wildcard tests/unit/fcgi_*.c)))
all: $(FCGI_UNIT_TESTS)

$(BUILD)/tests/fcgi_%.t: $(BUILD)/tests/unit/fcgi_%.o $(FCGI_TEST_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $< $(FCGI_TEST_OBJS) $(FCGI_LIBS)
