# nft-rules: the policy compiler.  The library part (libnftrules.a, header
# nft-rules/nftrules.h) is linked by nft-rules, gatewayd and dnsd.
NFTR_LIB_SRCS := $(addprefix nft-rules/,nr_model.c nr_rule.c nr_policy.c \
	nr_render.c nr_netlink.c nr_apply.c nr_delta.c nr_verify.c nr_allow.c nr_acct.c nr_ha.c \
	nr_route.c nr_watch.c nr_event.c)
NFTR_LIB_OBJS := $(NFTR_LIB_SRCS:%.c=$(OBJ)/%.o)
NFTRULES_LIB  := $(BUILD)/libnftrules.a
NFTRULES_LIBS  = $(call pkglibs,libnftnl libmnl)
EXTRA_CFLAGS_nft-rules = $(call pkgcflags,libnftnl libmnl)

PROGRAMS += $(BUILD)/nft-rules
INSTALL_SBIN += $(BUILD)/nft-rules

$(NFTRULES_LIB): $(NFTR_LIB_OBJS)
	@mkdir -p $(dir $@)
	$(QAR)$(AR) rcs $@ $^

$(BUILD)/nft-rules: $(OBJ)/nft-rules/main.o $(NFTRULES_LIB) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(NFTRULES_LIBS) $(LIBMOAT_LIBS)

NFTR_TESTS := $(BUILD)/tests/test_nftrules
UNIT_TESTS += $(NFTR_TESTS)

$(OBJ)/tests/unit/test_nftrules.o: EXTRA_CFLAGS_tests += -Inft-rules
$(NFTR_TESTS): $(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(NFTRULES_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
