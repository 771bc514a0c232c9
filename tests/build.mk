# tests/build.mk: build rules of tests/ (included by the top Makefile).

# ---- reliability: libFuzzer drivers (tests/fuzz/) ----
# Each driver links the fcgi code it fuzzes, rebuilt with clang under build/fuzz/ with coverage
# instrumentation and ASan+UBSan whatever SANITIZE says (the service's own objects are untouched).
# `make all` builds them so tests/unit/fuzz_replay.t can replay the committed corpora;
# `make fuzz` runs each for FUZZ_SECONDS (default 60) and adds what it finds to build/fuzz/corpus.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE $(WARN) $(PKG_CFLAGS) $(FUZZ_SAN) -MMD -MP \
	-DFUZZ_REPO='"$(CURDIR)"' $(if $(WERROR),-Werror)
FUZZ_DRIVERS := $(patsubst tests/fuzz/%.c,$(FUZZ_DIR)/%,$(wildcard tests/fuzz/fuzz_*.c))
# Every fcgi object but main.c (the FCGX loop), with the unit tests' fake broker client.
FUZZ_FCGI_OBJS := $(patsubst fcgi/%.c,$(FUZZ_DIR)/fcgi/%.o,\
	$(filter-out fcgi/main.c,$(wildcard fcgi/*.c fcgi/*/*.c))) \
	$(FUZZ_DIR)/tests/unit/fcgi_fake_sbx.o

all: $(FUZZ_DRIVERS)
# Chained pattern rules would make these intermediate (deleted after the link): keep them.
.SECONDARY: $(FUZZ_FCGI_OBJS) $(FUZZ_DRIVERS:%=%.o)

$(FUZZ_DIR)/fcgi/%.o: fcgi/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_DIR)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# compare.c stands alone; the others need the whole handler layer (route table, sessions).
$(FUZZ_DIR)/fuzz_compare: $(FUZZ_DIR)/fuzz_compare.o $(FUZZ_DIR)/fcgi/evaluate/compare.o
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -lm

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/fuzz_%.o $(FUZZ_FCGI_OBJS)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ -lfcgi $(PKG_LIBS_JSON) $(PKG_LIBS_SECCOMP) -lm

# Bounded fuzzing: the committed corpus is the seed, new inputs go to build/fuzz/corpus/<driver>/
# (copy the interesting ones into tests/fuzz/corpus/ by hand), crashes to build/fuzz/crashes/.
fuzz: $(FUZZ_DRIVERS)
	@set -e; for d in $(FUZZ_DRIVERS); do \
		n=$${d##*/}; mkdir -p $(FUZZ_DIR)/corpus/$$n $(FUZZ_DIR)/crashes/$$n; \
		echo "== $$n: $(FUZZ_SECONDS) s"; \
		$$d -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_DIR)/crashes/$$n/ \
			$(FUZZ_DIR)/corpus/$$n tests/fuzz/corpus/$$n 2>&1 | \
			grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added|==[0-9]+==ERROR|SUMMARY|INFO: seed corpus)' || true; \
		test -z "$$(ls $(FUZZ_DIR)/crashes/$$n)" || { echo "$$n: crash inputs in $(FUZZ_DIR)/crashes/$$n"; exit 1; }; \
	done
# ---- end reliability ----
