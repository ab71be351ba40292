# moat -- top-level build.  Each program folder has a module.mk that adds
# its binary, objects and unit tests; this file holds only what they share.

PREFIX	?= /usr/local
BINDIR	?= $(PREFIX)/bin
SBINDIR	?= $(PREFIX)/sbin
MANDIR	?= $(PREFIX)/share/man
DOCDIR	?= $(PREFIX)/share/doc/moat
SYSCONFDIR ?= /etc
UNITDIR	?= /lib/systemd/system
DESTDIR	?=

# The one version string every program prints for --version.
VERSION	 = 0.1.0

CC	?= gcc
BUILD	?= build
SAN	?=

WARN	 = -Wall -Wextra -Werror -Wformat=2 -Wshadow -Wpointer-arith \
	   -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
HARDEN	 = -fstack-protector-strong -fstack-clash-protection -fcf-protection
CFLAGS	?= -O2 -g
override CFLAGS += -std=c17 -D_GNU_SOURCE -Ilib $(WARN) $(HARDEN) -fPIE \
	-DMOAT_VERSION='"$(VERSION)"'
LDHARDEN = -pie -Wl,-z,relro,-z,now -Wl,-z,noexecstack

ifeq ($(SAN),1)
override CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -O1
LDHARDEN += -fsanitize=address,undefined
else
override CFLAGS += -D_FORTIFY_SOURCE=2
endif

PKGS_CORE = libconfig
# Every library's flags come from pkg-config; a missing .pc file stops the
# build with its name (these expand only where a recipe uses them, so
# `make check` on a fresh machine installs the packages first).
pkgok     = $(if $(shell pkg-config --exists $(1) && echo y),,$(error pkg-config does not know $(1): run "sudo make deps"))
pkgcflags = $(call pkgok,$(1))$(shell pkg-config --cflags $(1))
pkglibs   = $(call pkgok,$(1))$(shell pkg-config --libs $(1))

PROGRAMS   :=
UNIT_TESTS :=
INSTALL_BIN :=
INSTALL_SBIN :=
# Members of group moat run these (provision, gatewayd ctl): a link in
# BINDIR, which is on every user's PATH; the programs stay in SBINDIR
# beside the helpers gatewayd starts.
MEMBER_CMDS := provision gatewayd

all: programs

OBJ	 = $(BUILD)/obj
LIBMOAT = $(BUILD)/libmoat.a
# Defined here too so modules included before nft-rules/module.mk can
# name it as a prerequisite.
NFTRULES_LIB = $(BUILD)/libnftrules.a
include lib/module.mk
include $(filter-out lib/module.mk,$(sort $(wildcard */module.mk)))
include tests/unit/module.mk

programs: $(PROGRAMS)

# Objects live under $(OBJ)/<source path>.o so that binaries can be
# $(BUILD)/<program> without clashing with a folder of the same name.
# In module.mk files write e.g.  FOO_OBJS := $(FOO_SRCS:%.c=$(OBJ)/%.o)
# A quiet build: "CC file" per object unless V=1 shows the command lines.
V	?= 0
ifeq ($(V),1)
Q	:=
QLINK	:=
QAR	:=
else
Q	:= @
QLINK	 = @echo "LINK    $@";
QAR	 = @echo "AR      $@";
endif

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(if $(Q),@echo "CC      $<")
	$(Q)$(CC) $(CFLAGS) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) -MMD -MP -c -o $@ $<

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# --- the README's two commands and friends -------------------------------

deps:
	@bash tests/deps.sh

check: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory $(UNIT_TESTS)
	@bash tests/run.sh $(UNIT_TESTS)

unit: $(UNIT_TESTS)
	@bash tests/run.sh --unit-only $(UNIT_TESTS)

asan:
	@LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp \
	 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	 $(MAKE) --no-print-directory BUILD=build-asan SAN=1 unit

demo: deps
	@$(MAKE) --no-print-directory all
	@bash tests/demo.sh

# Built in parallel (each source once), then run one harness at a time.
fuzz:
	@$(MAKE) --no-print-directory -j$(shell nproc) -f fuzz/fuzz.mk build
	@$(MAKE) --no-print-directory -f fuzz/fuzz.mk all

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(SYSCONFDIR)/moat/sandboxes.d \
	    $(DESTDIR)$(SYSCONFDIR)/moat/secrets \
	    $(DESTDIR)$(SYSCONFDIR)/moat/secrets.d
	$(if $(INSTALL_SBIN),install -m 0755 $(INSTALL_SBIN) $(DESTDIR)$(SBINDIR)/)
	$(if $(INSTALL_BIN),install -m 0755 $(INSTALL_BIN) $(DESTDIR)$(BINDIR)/)
	for c in $(MEMBER_CMDS); do ln -sf $(SBINDIR)/$$c $(DESTDIR)$(BINDIR)/$$c; done
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 README.md docs/*.md examples/grafana-moat.json $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/images
	install -m 0644 docs/images/*.png $(DESTDIR)$(DOCDIR)/images/
	# The baseline lists allow = [ "@NAME" ] names (lib/allowlists.c).
	install -d $(DESTDIR)$(PREFIX)/share/moat/allow.d $(DESTDIR)$(SYSCONFDIR)/moat/allow.d
	install -m 0644 data/allow.d/*.list $(DESTDIR)$(PREFIX)/share/moat/allow.d/
	# The web console's pages, read by gatewayd at start (parent_web.c).
	install -d $(DESTDIR)$(PREFIX)/share/moat/web
	install -m 0644 web/*.html web/*.css web/*.js $(DESTDIR)$(PREFIX)/share/moat/web/
	[ -e $(DESTDIR)$(SYSCONFDIR)/moat/moat.conf ] || \
	    install -m 0644 examples/moat.conf $(DESTDIR)$(SYSCONFDIR)/moat/moat.conf
	chmod 0700 $(DESTDIR)$(SYSCONFDIR)/moat/secrets
	install -d $(DESTDIR)$(UNITDIR)
	sed -e 's|/usr/local/sbin|$(SBINDIR)|g' \
	    examples/moat-gatewayd.service >$(DESTDIR)$(UNITDIR)/moat-gatewayd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/moat-gatewayd.service
	sed -e 's|/usr/local/sbin|$(SBINDIR)|g' \
	    examples/moat-guest@.service >$(DESTDIR)$(UNITDIR)/moat-guest@.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/moat-guest@.service
	sed -e 's|/usr/local/sbin|$(SBINDIR)|g' \
	    examples/moat-sync-box.service >$(DESTDIR)$(UNITDIR)/moat-sync-box.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/moat-sync-box.service
	install -d $(DESTDIR)$(SYSCONFDIR)/logrotate.d
	install -m 0644 examples/moat.logrotate $(DESTDIR)$(SYSCONFDIR)/logrotate.d/moat
	install -d $(DESTDIR)$(PREFIX)/lib/moat
	install -m 0755 gatewayd/install-users.sh $(DESTDIR)$(PREFIX)/lib/moat/
	# An active/standby pair's keepalived scripts, and the examples of
	# keepalived's and conntrackd's configuration (ha.md).
	for s in moat-ha-notify.sh moat-ha-check.sh; do \
		sed -e 's|/usr/local/sbin|$(SBINDIR)|g' examples/$$s \
		    >$(DESTDIR)$(PREFIX)/lib/moat/$$s && \
		chmod 0755 $(DESTDIR)$(PREFIX)/lib/moat/$$s || exit 1; \
	done
	sed -e 's|/usr/local/lib/moat|$(PREFIX)/lib/moat|g' examples/keepalived.conf \
	    >$(DESTDIR)$(DOCDIR)/keepalived.conf
	chmod 0644 $(DESTDIR)$(DOCDIR)/keepalived.conf
	install -m 0644 examples/conntrackd.conf $(DESTDIR)$(DOCDIR)/conntrackd.conf
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
		sh gatewayd/install-users.sh && echo "moat's users (moat-dns, moat-proxy, moat-log, moat-ca, moat-ctl, moat-reg, moat-qemu) and group moat are in place"; \
	else echo "as root on the target, run $(PREFIX)/lib/moat/install-users.sh"; fi

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all programs deps check unit asan demo fuzz install clean
