GATEWAYD_SRCS := $(addprefix gatewayd/,main.c daemon.c proc.c control.c ctl.c \
	audit.c nflog.c policy.c sandbox.c team.c secret.c network.c rtnl.c)
GATEWAYD_OBJS := $(GATEWAYD_SRCS:%.c=$(OBJ)/%.o)
EXTRA_CFLAGS_gatewayd = -Inft-rules $(call pkgcflags,libnftnl libmnl libseccomp)
GATEWAYD_LIBS = $(call pkglibs,libnftnl libmnl libseccomp)
PROGRAMS += $(BUILD)/gatewayd
INSTALL_SBIN += $(BUILD)/gatewayd

$(BUILD)/gatewayd: $(GATEWAYD_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	$(CC) $(LDHARDEN) -o $@ $^ $(GATEWAYD_LIBS) $(LIBMOAT_LIBS)
include gatewayd/proxy.mk
