# dnsd: the filtering DNS resolver.  Its DNS code (msg.c, policy.c,
# cache.c) is also linked by the unit tests and the fuzz harnesses.
DNSD_CORE_SRCS := dnsd/msg.c dnsd/policy.c dnsd/cache.c dnsd/mirror.c
DNSD_SRCS := dnsd/main.c dnsd/resolver.c dnsd/frontend.c dnsd/query.c \
	dnsd/upstream.c dnsd/priv.c dnsd/names.c \
	$(DNSD_CORE_SRCS)
DNSD_OBJS := $(DNSD_SRCS:%.c=$(OBJ)/%.o)
DNSD_CORE_OBJS := $(DNSD_CORE_SRCS:%.c=$(OBJ)/%.o)
EXTRA_CFLAGS_dnsd = $(call pkgcflags,ldns libseccomp) -Inft-rules
DNSD_LIBS = $(call pkglibs,ldns libseccomp)

PROGRAMS += $(BUILD)/dnsd
INSTALL_SBIN += $(BUILD)/dnsd

$(BUILD)/dnsd: $(DNSD_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(DNSD_LIBS) $(NFTRULES_LIBS) $(LIBMOAT_LIBS)

DNSD_TESTS := $(BUILD)/tests/test_dnsd_policy $(BUILD)/tests/test_dnsd_msg \
	$(BUILD)/tests/test_dnsd_cache $(BUILD)/tests/test_dnsd_mirror
UNIT_TESTS += $(DNSD_TESTS)

$(OBJ)/tests/unit/test_dnsd_%.o: EXTRA_CFLAGS_tests += -Idnsd
$(DNSD_TESTS): $(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(DNSD_CORE_OBJS) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(call pkglibs,ldns) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
