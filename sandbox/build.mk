# sandbox/build.mk: the sandbox library, the broker (sbxd) and the CLI (sbx).
SANDBOX_LIB_OBJS := $(addprefix $(BUILD)/sandbox/,run.o slot.o child.o seccomp.o cgroup.o util.o client.o quota.o result.o)

$(BUILD)/libsandbox.a: $(SANDBOX_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/sbxd: $(BUILD)/sandbox/sbxd.o $(BUILD)/libsandbox.a
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

$(BUILD)/sbx: $(BUILD)/sandbox/sbx.o $(BUILD)/libsandbox.a
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

all: $(BUILD)/libsandbox.a $(BUILD)/sbxd $(BUILD)/sbx

# The overhead benchmark links the library directly: it measures a warm slot as the broker uses it.
$(BUILD)/bench/sandbox_overhead: $(BUILD)/tests/bench/sandbox_overhead.o $(BUILD)/libsandbox.a
	@mkdir -p $(dir $@)
	$(CC) $(SBX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

all: $(BUILD)/bench/sandbox_overhead
