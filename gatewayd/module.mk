# Named by the process each runs in: parent*.c the root parent, control.c
# the control process (unprivileged), nflog*.c the refusal-log reader,
# ha_arp.c the split-brain watch's ARP reader, signer.c and ca.c
# the signer, ctl_client.c `gatewayd ctl`; the proxy is in proxy/.
GATEWAYD_SRCS := $(addprefix gatewayd/,gatewayd.c parent.c parent_proc.c \
	parent_reload.c parent_ctl.c parent_ctlreq.c control.c ctl_client.c \
	parent_audit.c nflog.c parent_policy.c parent_team.c \
	parent_secret.c ca.c signer.c parent_network.c parent_rtnl.c \
	parent_hostnet.c parent_drift.c parent_kwatch.c parent_canary.c canary_report.c \
	parent_console.c parent_budget.c register.c register_client.c \
	parent_register.c parent_pool.c parent_metrics.c \
	metrics_series.c metrics.c parent_seen.c \
	parent_refused.c parent_grant.c parent_dropin.c parent_dnsd.c \
	parent_proxy.c parent_attach.c parent_ha.c parent_ha_dup.c ha_arp.c \
	parent_egress.c parent_harepl.c harepl_send.c harepl_wire.c \
	parent_owner.c)
GATEWAYD_OBJS := $(GATEWAYD_SRCS:%.c=$(OBJ)/%.o) $(OBJ)/provision/targets.o
EXTRA_CFLAGS_gatewayd = -Inft-rules $(call pkgcflags,libnftnl libmnl libseccomp)
GATEWAYD_LIBS = $(call pkglibs,libnftnl libmnl libseccomp libssl libcrypto)
PROGRAMS += $(BUILD)/gatewayd
INSTALL_SBIN += $(BUILD)/gatewayd

$(BUILD)/gatewayd: $(GATEWAYD_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS)
include gatewayd/proxy.mk

GATEWAYD_TESTS := $(BUILD)/tests/test_gatewayd_nflog
UNIT_TESTS += $(GATEWAYD_TESTS)
# The parent's record of what it promised each allowlist set.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_promise
$(BUILD)/tests/test_gatewayd_promise: $(OBJ)/tests/unit/test_gatewayd_promise.o \
	    $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
$(OBJ)/tests/unit/test_gatewayd_%.o: EXTRA_CFLAGS_tests += -Igatewayd
$(BUILD)/tests/test_gatewayd_nflog: $(OBJ)/tests/unit/test_gatewayd_nflog.o \
	    $(OBJ)/gatewayd/nflog.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The split-brain watch's ARP parser.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_ha_arp
$(BUILD)/tests/test_gatewayd_ha_arp: $(OBJ)/tests/unit/test_gatewayd_ha_arp.o \
	    $(OBJ)/gatewayd/ha_arp.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The bounded views behind ctl refused and ctl names.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_seen
$(BUILD)/tests/test_gatewayd_seen: $(OBJ)/tests/unit/test_gatewayd_seen.o \
	    $(OBJ)/gatewayd/parent_seen.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The edit ctl allow makes to a sandbox's file.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_dropin
$(BUILD)/tests/test_gatewayd_dropin: $(OBJ)/tests/unit/test_gatewayd_dropin.o \
	    $(OBJ)/gatewayd/parent_dropin.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The control process's parser and descriptor passing; the parent's
# handler driven with forged requests (needs root: it becomes nobody).
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_control $(BUILD)/tests/test_gatewayd_forged
$(BUILD)/tests/test_gatewayd_control: $(OBJ)/tests/unit/test_gatewayd_control.o \
	    $(OBJ)/gatewayd/control.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
$(BUILD)/tests/test_gatewayd_forged: $(OBJ)/tests/unit/test_gatewayd_forged.o \
	    $(filter-out $(OBJ)/gatewayd/gatewayd.o,$(GATEWAYD_OBJS)) $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# The metrics' labels, their bound, and the scrape endpoint's parser.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_metrics
$(BUILD)/tests/test_gatewayd_metrics: $(OBJ)/tests/unit/test_gatewayd_metrics.o \
	    $(filter-out $(OBJ)/gatewayd/gatewayd.o,$(GATEWAYD_OBJS)) $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# The parent's side of reloading dnsd in place.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_dnsreload
$(BUILD)/tests/test_gatewayd_dnsreload: $(OBJ)/tests/unit/test_gatewayd_dnsreload.o \
	    $(filter-out $(OBJ)/gatewayd/gatewayd.o,$(GATEWAYD_OBJS)) $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# What a reload changed, decided once in the parent.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_delta
$(BUILD)/tests/test_gatewayd_delta: $(OBJ)/tests/unit/test_gatewayd_delta.o \
	    $(filter-out $(OBJ)/gatewayd/gatewayd.o,$(GATEWAYD_OBJS)) $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# The replication lines: removals, grants, the heartbeat.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_harepl
$(BUILD)/tests/test_gatewayd_harepl: $(OBJ)/tests/unit/test_gatewayd_harepl.o \
	    $(OBJ)/gatewayd/harepl_wire.o $(OBJ)/gatewayd/register.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# The parent's registration handler driven with forged requests.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_register
$(BUILD)/tests/test_gatewayd_register: $(OBJ)/tests/unit/test_gatewayd_register.o \
	    $(filter-out $(OBJ)/gatewayd/gatewayd.o,$(GATEWAYD_OBJS)) $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# The proxy workers' reuseport group, steered by source address, on
# loopback against the real kernel.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_pool
$(BUILD)/tests/test_gatewayd_pool: $(OBJ)/tests/unit/test_gatewayd_pool.o \
	    $(OBJ)/gatewayd/parent_pool.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The reader of the canary's scan report.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_canary
$(BUILD)/tests/test_gatewayd_canary: $(OBJ)/tests/unit/test_gatewayd_canary.o \
	    $(OBJ)/gatewayd/canary_report.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
