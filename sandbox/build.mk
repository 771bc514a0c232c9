# sandbox/build.mk: the sandbox library, the broker (sbxd) and the CLI (sbx).
SANDBOX_LIB_OBJS := $(addprefix $(BUILD)/sandbox/,run.o slot.o child.o child_template.o child_warm.o seccomp.o cgroup.o cgroup_cpu.o util.o client.o quota.o result.o wire.o outcome.o ctx_client.o warm.o zygote.o zyg_share.o runs_client.o)
SBXD_OBJS := $(addprefix $(BUILD)/sandbox/,sbxd.o sbxd_opts.o context.o holder.o holder_call.o holder_kernel.o holder_stream.o ctx_proto.o runs.o runs_bg.o)

$(BUILD)/libsandbox.a: $(SANDBOX_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/sbxd: $(SBXD_OBJS) $(BUILD)/libsandbox.a
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

$(BUILD)/sbx: $(BUILD)/sandbox/sbx.o $(BUILD)/sandbox/sbx_ctx.o $(BUILD)/libsandbox.a
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

all: $(BUILD)/libsandbox.a $(BUILD)/sbxd $(BUILD)/sbx

# The overhead benchmark links the library directly: it measures a warm slot as the broker uses it.
$(BUILD)/bench/sandbox_overhead: $(BUILD)/tests/bench/sandbox_overhead.o $(BUILD)/libsandbox.a
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

all: $(BUILD)/bench/sandbox_overhead

# Unit tests of the broker protocol: wire.o and util.o alone (socketpairs, no broker, no root).
WIRE_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,$(wildcard tests/unit/wire_*.c))
all: $(WIRE_UNIT_TESTS)

$(BUILD)/tests/wire_%.t: $(BUILD)/tests/unit/wire_%.o $(BUILD)/sandbox/wire.o $(BUILD)/sandbox/util.o
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^

# Unit tests of a run's pure decisions (outcome.c): no sandbox, no root.
OUTCOME_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,$(wildcard tests/unit/outcome_*.c))
all: $(OUTCOME_UNIT_TESTS)

$(BUILD)/tests/outcome_%.t: $(BUILD)/tests/unit/outcome_%.o $(BUILD)/sandbox/outcome.o
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^

# The protocol's libFuzzer driver (tests/fuzz/fuzz_wire.c) links wire.c and util.c only, built
# with tests/build.mk's FUZZ_* flags (defined later; recipes expand when they run). An explicit
# rule: the drivers' pattern rule would link the fcgi objects instead.
$(BUILD)/fuzz/sandbox/%.o: sandbox/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(BUILD)/fuzz/fuzz_wire: $(BUILD)/fuzz/fuzz_wire.o $(BUILD)/fuzz/sandbox/wire.o \
		$(BUILD)/fuzz/sandbox/util.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^

# warm.c embeds the pre-started interpreter's stub (sandbox/warm_stub.py) as a C string.
$(BUILD)/sandbox/warm_stub.inc: sandbox/warm_stub.py
	@mkdir -p $(dir $@)
	{ echo 'const char sbx_warm_stub_py[] = {'; od -An -v -tx1 $< | \
	  sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } >$@

# ...and the pre-started node's (sandbox/warm_stub.js).
$(BUILD)/sandbox/warm_stub_js.inc: sandbox/warm_stub.js
	@mkdir -p $(dir $@)
	{ echo 'const char sbx_warm_stub_js[] = {'; od -An -v -tx1 $< | \
	  sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } >$@

$(BUILD)/sandbox/warm.o: $(BUILD)/sandbox/warm_stub.inc $(BUILD)/sandbox/warm_stub_js.inc
$(BUILD)/sandbox/warm.o: SBX_CFLAGS += -I$(BUILD)/sandbox

# zygote.c embeds the zygote's program (sandbox/zygote.py) the same way.
$(BUILD)/sandbox/zygote.inc: sandbox/zygote.py
	@mkdir -p $(dir $@)
	{ echo 'const char sbx_zygote_py[] = {'; od -An -v -tx1 $< | \
	  sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0};'; } >$@

$(BUILD)/sandbox/zygote.o: $(BUILD)/sandbox/zygote.inc

# ...and the zygote's per-run chain in C (sandbox/zyg_spawn.c), a shared object the zygote loads
# from a sealed memfd: no install path. Position-independent, never sanitized (it runs inside
# python3, which is not).
ZYG_SO_CFLAGS := $(filter-out -fPIE -fsanitize=% -fno-sanitize-recover=%,$(SBX_CFLAGS)) -fPIC
$(BUILD)/sandbox/zyg_spawn.so: sandbox/zyg_spawn.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ZYG_SO_CFLAGS) $(CFLAGS) -shared -Wl,-z,relro,-z,now -o $@ $<

$(BUILD)/sandbox/zyg_spawn_so.inc: $(BUILD)/sandbox/zyg_spawn.so
	{ echo 'const unsigned char sbx_zyg_spawn_so[] = {'; od -An -v -tx1 $< | \
	  sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '};'; } >$@

$(BUILD)/sandbox/zygote.o: $(BUILD)/sandbox/zyg_spawn_so.inc
$(BUILD)/sandbox/zygote.o: SBX_CFLAGS += -I$(BUILD)/sandbox

# Unit tests of the kernel protocol's pure parts (ctx_proto.c): no sandbox, no root.
CTX_UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%.t,$(wildcard tests/unit/ctx_*.c))
all: $(CTX_UNIT_TESTS)

$(BUILD)/tests/ctx_%.t: $(BUILD)/tests/unit/ctx_%.o $(BUILD)/sandbox/ctx_proto.o
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^

# The runs tests' client (tests/sandbox/runs*.t): the library's runs API, driven from shell.
$(BUILD)/tests/runs_drive: tests/sandbox/runs_drive.c $(BUILD)/libsandbox.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

all: $(BUILD)/tests/runs_drive
