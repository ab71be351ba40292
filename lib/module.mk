LIB_SRCS := lib/log.c lib/ranges.c lib/config.c lib/config_load.c \
	lib/config_schema.c lib/config_validate.c lib/config_check.c \
	lib/config_print.c lib/config_host.c lib/ipc.c \
	lib/refusals.c lib/sysctl.c lib/dnswire.c lib/parent.c lib/privdrop.c lib/secretfile.c \
	lib/sandbox.c lib/ctlclient.c \
	lib/admit.c lib/hostaddr.c lib/guestacct.c lib/json.c lib/ev.c lib/addr.c \
	lib/pathmatch.c lib/budget.c lib/admit_reg.c lib/regclient.c \
	lib/smallfile.c lib/cfgtxn.c lib/conftext.c lib/confpath.c \
	lib/promise.c \
	lib/allowlists.c lib/allowentry.c lib/verdict.c
LIB_OBJS := $(LIB_SRCS:%.c=$(OBJ)/%.o)
EXTRA_CFLAGS_lib = $(call pkgcflags,libconfig libmnl libseccomp)
# Where the shipped baseline lists are (make install puts them there).
$(OBJ)/lib/allowlists.o: override CFLAGS += -DMOAT_DATADIR='"$(PREFIX)/share/moat"'
LIBMOAT_LIBS = $(call pkglibs,libconfig)

$(LIBMOAT): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(QAR)$(AR) rcs $@ $^
