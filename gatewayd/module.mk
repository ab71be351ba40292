GATEWAYD_SRCS := gatewayd/main.c
GATEWAYD_OBJS := $(GATEWAYD_SRCS:%.c=$(OBJ)/%.o)
PROGRAMS += $(BUILD)/gatewayd
INSTALL_SBIN += $(BUILD)/gatewayd

$(BUILD)/gatewayd: $(GATEWAYD_OBJS) $(LIBMOAT)
	$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS)
