SHELL := /bin/bash
# fuzz.mk -- build every fuzz/fuzz_*.c harness with clang's libFuzzer,
# ASan and UBSan, then run each for FUZZ_SECONDS on its seed corpus
# (fuzz/corpus/<name>/, copied to a scratch folder so the tree stays clean).
#
# A harness that tests a program's parser lists that program's sources in
# FUZZ_SRCS_<harness> below; lib/ is always linked.

FUZZ_SECONDS ?= 30
FCC	 = clang
FBUILD	 = build-fuzz
FCFLAGS	 = -g -O1 -std=c17 -D_GNU_SOURCE -Ilib -Igatewayd -Inft-rules -fsanitize=fuzzer,address,undefined \
	   -fno-sanitize-recover=undefined $(shell pkg-config --cflags libconfig)
FLIBS	 = $(shell pkg-config --libs libconfig ldns libssl libcrypto libmnl libnftnl libseccomp)
LIBSRC	 = $(wildcard lib/*.c)

FUZZ_SRCS_fuzz_config =
FUZZ_SRCS_fuzz_ipc =
FUZZ_SRCS_fuzz_nflog = gatewayd/nflog.c
FUZZ_SRCS_fuzz_control = gatewayd/control.c
FUZZ_SRCS_fuzz_register = gatewayd/register.c gatewayd/harepl_wire.c
FUZZ_SRCS_fuzz_harepl = gatewayd/harepl_wire.c gatewayd/register.c
FUZZ_SRCS_fuzz_metrics = gatewayd/metrics.c gatewayd/metrics_series.c
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
FUZZ_SRCS_fuzz_refused = gatewayd/parent_seen.c gatewayd/parent_dropin.c
FUZZ_SRCS_fuzz_allowentry =
FUZZ_SRCS_fuzz_printers = gatewayd/parent_seen.c

HARNESSES = $(patsubst fuzz/%.c,%,$(wildcard fuzz/fuzz_*.c))

all: $(HARNESSES:%=$(FBUILD)/%)
	@set -e; for h in $(HARNESSES); do \
		c=$(FBUILD)/corpus-$$h; rm -rf $$c; mkdir -p $$c; \
		n=$${h#fuzz_}; [ -d fuzz/corpus/$$n ] && cp fuzz/corpus/$$n/* $$c/ 2>/dev/null || true; \
		echo "fuzz: $$h for $(FUZZ_SECONDS) s"; \
		ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
		$(FBUILD)/$$h -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
		    -print_final_stats=1 $$c 2>&1 | grep -E 'stat::number_of_executed_units|Done|ERROR|SUMMARY' ; \
		test $${PIPESTATUS[0]} -eq 0; \
	done

.SECONDEXPANSION:
$(FBUILD)/%: fuzz/%.c $(LIBSRC) $$(FUZZ_SRCS_$$*)
	@mkdir -p $(FBUILD)
	$(FCC) $(FCFLAGS) -o $@ $< $(LIBSRC) $(FUZZ_SRCS_$*) $(FLIBS)

.PHONY: all
