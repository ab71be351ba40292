# One folder per process: parent/ the root parent (its modules),
# control/ the control process, signer/ the signer (and the CA code it
# shares with the parent), nflog/ the refusal-log reader, metrics/ the
# metrics process, harepl/ the replication sender (and the line both
# ends speak), register/ the registration process, ha_arp/ the
# split-brain watch's ARP reader, cli/ what `gatewayd ctl` and
# `gatewayd register` run as the calling user; the proxy is in proxy/,
# the web console (moat-web) in web/.
GATEWAYD_PARENT := parent.c proc.c reload.c ctl.c ctlreq.c audit.c policy.c \
	team.c secret.c network.c rtnl.c hostnet.c drift.c console.c budget.c \
	register.c pool.c metrics.c metrics_series.c seen.c refused.c grant.c \
	dnsd.c proxy.c attach.c ha.c ha_dup.c egress.c harepl.c owner.c \
	module.c commit.c ctflows.c web.c verdict.c \
	sockmap.c canary.c canary_report.c kwatch.c kwatch_net.c
GATEWAYD_SRCS := gatewayd/gatewayd.c \
	$(addprefix gatewayd/parent/,$(GATEWAYD_PARENT)) \
	gatewayd/control/control.c gatewayd/signer/signer.c \
	gatewayd/signer/ca.c gatewayd/nflog/nflog.c gatewayd/metrics/metrics.c \
	gatewayd/harepl/send.c gatewayd/harepl/wire.c \
	gatewayd/register/register.c gatewayd/ha_arp/ha_arp.c \
	gatewayd/web/web.c gatewayd/web/form.c \
	gatewayd/cli/ctl_client.c gatewayd/cli/register_client.c
GATEWAYD_OBJS := $(GATEWAYD_SRCS:%.c=$(OBJ)/%.o) $(OBJ)/gatewayd/bpf/tunnel_obj.o \
	$(OBJ)/provision/targets.o
EXTRA_CFLAGS_gatewayd = -Inft-rules -Igatewayd \
	-DH2O_USE_LIBUV=0 $(call pkgcflags,libnftnl libmnl libseccomp libh2o-evloop)
GATEWAYD_LIBS = $(call pkglibs,libnftnl libmnl libseccomp libssl libcrypto \
	libh2o-evloop libbpf)
PROGRAMS += $(BUILD)/gatewayd
INSTALL_SBIN += $(BUILD)/gatewayd

$(BUILD)/gatewayd: $(GATEWAYD_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS)
include gatewayd/proxy.mk

# The tunnel program (parent/sockmap.c): BPF bytecode built by clang and
# linked into gatewayd as data.
TUNNEL_BPF := $(OBJ)/gatewayd/bpf/tunnel.bpf.o
$(TUNNEL_BPF): gatewayd/bpf/tunnel.bpf.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "BPF     $<")
	$(Q)clang -O2 -g -target bpf -I/usr/include/$(shell $(CC) -dumpmachine) -c -o $@ $<
$(OBJ)/gatewayd/bpf/tunnel_obj.o: gatewayd/bpf/tunnel_obj.S $(TUNNEL_BPF)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -c -DMOAT_TUNNEL_BPF_OBJ='"$(TUNNEL_BPF)"' -o $@ $<

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
	    $(OBJ)/gatewayd/nflog/nflog.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The split-brain watch's ARP parser.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_ha_arp
$(BUILD)/tests/test_gatewayd_ha_arp: $(OBJ)/tests/unit/test_gatewayd_ha_arp.o \
	    $(OBJ)/gatewayd/ha_arp/ha_arp.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The bounded views behind ctl refused and ctl names.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_seen
$(BUILD)/tests/test_gatewayd_seen: $(OBJ)/tests/unit/test_gatewayd_seen.o \
	    $(OBJ)/gatewayd/parent/seen.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The control process's parser and descriptor passing; the parent's
# handler driven with forged requests (needs root: it becomes nobody).
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_control $(BUILD)/tests/test_gatewayd_forged
$(BUILD)/tests/test_gatewayd_control: $(OBJ)/tests/unit/test_gatewayd_control.o \
	    $(OBJ)/gatewayd/control/control.o $(LIBMOAT)
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
	    $(OBJ)/gatewayd/harepl/wire.o $(OBJ)/gatewayd/register/register.o $(LIBMOAT)
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
	    $(OBJ)/gatewayd/parent/pool.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
# The parent's list of conntrack entries, from the kernel's events.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_ctflows
$(BUILD)/tests/test_gatewayd_ctflows: $(OBJ)/tests/unit/test_gatewayd_ctflows.o \
	    $(OBJ)/gatewayd/parent/ctflows.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(call pkglibs,libmnl) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
$(OBJ)/gatewayd/parent/web.o: override CFLAGS += -DMOAT_DATADIR='"$(PREFIX)/share/moat"'
# What the web console's process reads of a request itself.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_web
$(BUILD)/tests/test_gatewayd_web: $(OBJ)/tests/unit/test_gatewayd_web.o \
	    $(OBJ)/gatewayd/web/form.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The reader of the canary's scan report.
UNIT_TESTS += $(BUILD)/tests/test_gatewayd_canary
$(BUILD)/tests/test_gatewayd_canary: $(OBJ)/tests/unit/test_gatewayd_canary.o \
	    $(OBJ)/gatewayd/parent/canary_report.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
