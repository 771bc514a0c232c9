# sandbox/build.mk: the sandbox library, the broker (sbxd) and the CLI (sbx).
SANDBOX_LIB_OBJS := $(addprefix $(BUILD)/sandbox/,run.o child.o seccomp.o cgroup.o util.o client.o)

$(BUILD)/libsandbox.a: $(SANDBOX_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/sbxd: $(BUILD)/sandbox/sbxd.o $(BUILD)/libsandbox.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

$(BUILD)/sbx: $(BUILD)/sandbox/sbx.o $(BUILD)/libsandbox.a
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS_SECCOMP)

all: $(BUILD)/libsandbox.a $(BUILD)/sbxd $(BUILD)/sbx
