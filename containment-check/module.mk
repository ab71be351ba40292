# containment-check: a static binary run inside a guest (no runtime
# dependencies).  ldns (for the DNS wire format), OpenSSL's TLS client (to
# tell the gateway's proxy from the far end) and libcrypto are linked
# statically; no resolver or NSS code of any of them is ever called.
CC_SRCS := $(addprefix containment-check/,main.c args.c discover.c plan.c \
	engine.c dns.c local.c report.c spoof.c intercept.c tls.c)
CC_OBJS := $(CC_SRCS:%.c=$(OBJ)/%.o)
CC_LIBOBJS := $(filter-out $(OBJ)/containment-check/main.o,$(CC_OBJS))
CC_STATIC_LIBS = $(call pkgok,ldns libssl libcrypto)$(shell pkg-config --libs --static ldns libssl libcrypto)
# -static-pie with the -fPIE objects; not $(LDHARDEN), whose -pie conflicts.
CC_LDFLAGS = -static-pie -Wl,-z,relro,-z,now -Wl,-z,noexecstack

PROGRAMS += $(BUILD)/containment-check
INSTALL_BIN += $(BUILD)/containment-check

# glibc warns about getaddrinfo/dlopen that libcrypto's BIO code refers
# to; that code is unreachable from here, so those warnings are filtered.
$(BUILD)/containment-check: $(CC_OBJS) $(LIBMOAT)
	@mkdir -p $(dir $@)
	@$(CC) $(CC_LDFLAGS) -o $@ $(CC_OBJS) $(LIBMOAT) $(CC_STATIC_LIBS) \
	    2>$@.ldlog; st=$$?; grep -v -e 'statically linked applications' \
	    -e 'in function .\(BIO_\|dlfcn_\|ldns_\|bio_\|DSO_\)' $@.ldlog >&2; \
	    rm -f $@.ldlog; echo "LINK (static-pie) $@"; exit $$st

# Unit tests link the same objects dynamically (cmocka, ASan-friendly).
CC_TESTS := $(BUILD)/tests/test_cc_dns $(BUILD)/tests/test_cc_args \
	$(BUILD)/tests/test_cc_report $(BUILD)/tests/test_cc_spoof \
	$(BUILD)/tests/test_cc_intercept
UNIT_TESTS += $(CC_TESTS)

$(CC_TESTS): $(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(CC_LIBOBJS) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(call pkglibs,ldns libssl libcrypto) \
	    $(CMOCKA_LIBS)
