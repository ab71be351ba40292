# provision -- hardened QEMU guests on the gateway.
PROVISION_LIB_SRCS := provision/guest.c provision/alloc.c provision/dropin.c \
	provision/qemu.c provision/seed.c provision/targets.c provision/proc.c provision/tap.c \
	provision/ctl.c provision/accel.c provision/cmd_create.c \
	provision/cmd_start.c provision/cmd_destroy.c provision/cmd_list.c \
	provision/uids.c provision/import.c provision/qcow2.c \
	provision/unit.c provision/box.c provision/serial.c
PROVISION_SRCS := provision/main.c $(PROVISION_LIB_SRCS)
PROVISION_OBJS := $(PROVISION_SRCS:%.c=$(OBJ)/%.o)
PROVISION_LIB_OBJS := $(PROVISION_LIB_SRCS:%.c=$(OBJ)/%.o)
PROVISION_LIBS = $(call pkglibs,libmnl libssl libcrypto)
EXTRA_CFLAGS_provision = -Inft-rules $(call pkgcflags,libconfig) $(call pkgcflags,libmnl)
PROGRAMS += $(BUILD)/provision
INSTALL_SBIN += $(BUILD)/provision

# targets.c lists the host's IPv6 routes as the policy does (nr_route.c).
$(BUILD)/provision: $(PROVISION_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(PROVISION_LIBS)

PROVISION_TESTS := $(BUILD)/tests/test_provision
UNIT_TESTS += $(PROVISION_TESTS)

$(PROVISION_TESTS): $(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(PROVISION_LIB_OBJS) $(NFTRULES_LIB) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(PROVISION_LIBS) $(CMOCKA_LIBS)
$(OBJ)/tests/unit/test_provision.o: override CFLAGS += -Iprovision
