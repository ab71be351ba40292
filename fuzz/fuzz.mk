SHELL := /bin/bash
# fuzz.mk -- build every fuzz/fuzz_*.c harness with clang's libFuzzer,
# ASan and UBSan, then run each for FUZZ_SECONDS on its seed corpus
# (fuzz/corpus/<name>/, copied to a scratch folder so the tree stays clean).
#
# Every source is compiled once: lib/*.c into one archive, each program
# source a harness names into its own object, and each harness links its
# own object, the program objects it lists in FUZZ_SRCS_<harness> below and
# the archive (which brings in only the lib objects it uses).
#
#   make fuzz                    build, then run each harness FUZZ_SECONDS
#   make fuzz FUZZ_SECONDS=5     the smoke run CI does

FUZZ_SECONDS ?= 30
FCC	 = clang
FBUILD	 = build-fuzz
FSAN	 = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FCFLAGS	 = -g -O1 -std=c17 -D_GNU_SOURCE -Ilib -Igatewayd -Inft-rules $(FSAN) \
	   $(shell pkg-config --cflags libconfig)
FLIBS	 = $(shell pkg-config --libs libconfig ldns libssl libcrypto libmnl libnftnl libseccomp)
LIBSRC	 = $(wildcard lib/*.c)
FLIB	 = $(FBUILD)/libmoat-fuzz.a

FUZZ_SRCS_fuzz_config =
FUZZ_SRCS_fuzz_ipc =
FUZZ_SRCS_fuzz_nflog = gatewayd/nflog/nflog.c
FUZZ_SRCS_fuzz_ha_arp = gatewayd/ha_arp/ha_arp.c
FUZZ_SRCS_fuzz_ctflows = gatewayd/parent/ctflows.c
FUZZ_SRCS_fuzz_control = gatewayd/control/control.c
FUZZ_SRCS_fuzz_register = gatewayd/register/register.c gatewayd/harepl/wire.c
FUZZ_SRCS_fuzz_harepl = gatewayd/harepl/wire.c gatewayd/register/register.c
FUZZ_SRCS_fuzz_metrics = gatewayd/metrics/metrics.c gatewayd/parent/metrics_series.c
FUZZ_SRCS_fuzz_pathmatch =
FUZZ_SRCS_fuzz_dnsd_query = dnsd/msg.c dnsd/policy.c dnsd/cache.c
FUZZ_SRCS_fuzz_dnsd_answer = dnsd/msg.c dnsd/policy.c dnsd/cache.c
FUZZ_SRCS_fuzz_cc_dns = $(filter-out containment-check/main.c,$(wildcard containment-check/*.c))
FUZZ_SRCS_fuzz_cc_http = $(FUZZ_SRCS_fuzz_cc_dns)
FUZZ_SRCS_fuzz_cc_targets = $(FUZZ_SRCS_fuzz_cc_dns)
FUZZ_SRCS_fuzz_cc_spoof = $(FUZZ_SRCS_fuzz_cc_dns)
FUZZ_SRCS_fuzz_proxy_http = gatewayd/proxy/http.c
FUZZ_SRCS_fuzz_proxy_chunked = gatewayd/proxy/http.c
FUZZ_SRCS_fuzz_proxy_sni = gatewayd/proxy/sni.c
FUZZ_SRCS_fuzz_qcow2 = provision/qcow2.c
FUZZ_SRCS_fuzz_refused = gatewayd/parent/seen.c
FUZZ_SRCS_fuzz_allowentry =
FUZZ_SRCS_fuzz_printers = gatewayd/parent/seen.c
FUZZ_SRCS_fuzz_nftevent = nft-rules/nr_event.c
FUZZ_SRCS_fuzz_web_form = gatewayd/web/form.c
FUZZ_SRCS_fuzz_verdict =
FUZZ_SRCS_fuzz_canary = gatewayd/parent/canary_report.c
FUZZ_SRCS_fuzz_kwnet = gatewayd/parent/kwatch_net.c

HARNESSES = $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))
fobj	 = $(patsubst %.c,$(FBUILD)/obj/%.o,$(1))

all: build
	@set -e; for h in $(HARNESSES); do \
		c=$(FBUILD)/corpus-$$h; rm -rf $$c; mkdir -p $$c; \
		n=$${h#fuzz_}; [ -d fuzz/corpus/$$n ] && cp fuzz/corpus/$$n/* $$c/ 2>/dev/null || true; \
		echo "fuzz: $$h for $(FUZZ_SECONDS) s"; \
		ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
		$(FBUILD)/$$h -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		    -print_final_stats=1 $$c 2>&1 | grep -E 'stat::number_of_executed_units|Done|ERROR|SUMMARY' ; \
		test $${PIPESTATUS[0]} -eq 0; \
	done

build: $(HARNESSES:%=$(FBUILD)/%)

# Objects other than the harnesses' own are built for coverage only
# (fuzzer-no-link): libFuzzer's main comes in once, at each harness's link.
$(FBUILD)/obj/fuzz/%.o: fuzz/%.c
	@mkdir -p $(dir $@)
	@echo "FUZZCC  $<"
	@$(FCC) $(FCFLAGS) -fsanitize=fuzzer -MMD -MP -c -o $@ $<

$(FBUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "FUZZCC  $<"
	@$(FCC) $(FCFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FLIB): $(call fobj,$(LIBSRC))
	@rm -f $@
	@echo "AR      $@"
	@ar rcs $@ $^

.SECONDEXPANSION:
$(FBUILD)/%: $(FBUILD)/obj/fuzz/%.o $$(call fobj,$$(FUZZ_SRCS_$$*)) $(FLIB)
	@echo "LINK    $@"
	@$(FCC) $(FCFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(FLIB) $(FLIBS)

-include $(shell find $(FBUILD)/obj -name '*.d' 2>/dev/null)

.PHONY: all build
