GATEWAYD_SRCS := $(addprefix gatewayd/,main.c daemon.c proc.c control.c ctl.c \
	audit.c nflog.c policy.c sandbox.c team.c secret.c ca.c signer.c \
	network.c rtnl.c budget.c)
GATEWAYD_OBJS := $(GATEWAYD_SRCS:%.c=$(OBJ)/%.o)
EXTRA_CFLAGS_gatewayd = -Inft-rules $(call pkgcflags,libnftnl libmnl libseccomp)
GATEWAYD_LIBS = $(call pkglibs,libnftnl libmnl libseccomp) -lssl -lcrypto
PROGRAMS += $(BUILD)/gatewayd
INSTALL_SBIN += $(BUILD)/gatewayd

$(BUILD)/gatewayd: $(GATEWAYD_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS)
include gatewayd/proxy.mk

GATEWAYD_TESTS := $(BUILD)/tests/test_gatewayd_nflog
UNIT_TESTS += $(GATEWAYD_TESTS)
$(OBJ)/tests/unit/test_gatewayd_%.o: EXTRA_CFLAGS_tests += -Igatewayd
$(BUILD)/tests/test_gatewayd_nflog: $(OBJ)/tests/unit/test_gatewayd_nflog.o \
	    $(OBJ)/gatewayd/nflog.o $(OBJ)/gatewayd/sandbox.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS) $(CMOCKA_LIBS)
