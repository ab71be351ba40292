# tools/module.mk -- man pages, the Debian package and the VM tests.
# (Included by the top-level Makefile like every */module.mk.)

# Man pages: troff generated from docs/NAME.SECTION.md by lowdown (the
# Markdown is the single source; the page's title line names the file);
# docs/*.[1-8] are troff sources installed as they are.
MAN_MD    := $(wildcard docs/*.[1-8].md)
MAN_TROFF := $(wildcard docs/*.[1-8])
MAN_STAMP := $(BUILD)/man/.stamp

man: $(MAN_STAMP)

$(MAN_STAMP): $(MAN_MD) tools/md2man.sh
	@rm -rf $(BUILD)/man
	@sh tools/md2man.sh $(BUILD)/man $(MAN_MD) | sed 's/^/MAN /'
	@touch $@

install: install-man
install-man: man
	@for p in $(BUILD)/man/*.[1-8] $(MAN_TROFF); do s=$${p##*.}; \
	    install -d $(DESTDIR)$(MANDIR)/man$$s && \
	    install -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done

# The Debian package, built from a copy of the tree in $(BUILD)/deb so
# dpkg-buildpackage's ../ outputs stay out of the source's parent folder;
# lintian must report nothing at its default level: an error or a
# warning fails the build (README calls the package lintian-clean).  Its
# informational tags are printed too, for whoever reads the log; the one
# it has today (no init.d script beside the units) is a choice: without
# systemd, docs/install.md runs gatewayd under any supervisor.  An
# override needs a comment saying why it is a false positive
# (debian/moat.lintian-overrides).
DEB_DIR = $(BUILD)/deb
deb:
	@rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	@tar -c --exclude=./build --exclude=./build-asan --exclude=./build-fuzz \
	    --exclude=./.git . | tar -x -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc -b
	lintian --fail-on error,warning --display-info $(DEB_DIR)/*.changes \
	    >$(DEB_DIR)/lintian.log 2>&1; st=$$?; cat $(DEB_DIR)/lintian.log; \
	    if [ $$st -ne 0 ] || grep -q '^[EW]: ' $(DEB_DIR)/lintian.log; then \
	    echo "make deb: lintian is not clean (above)" >&2; exit 1; fi
	@ls $(DEB_DIR)/*.deb

# Real Debian guests under TCG (cached image under /var/cache/moat-test):
# minutes, so not part of `make check`; .ci/run runs it.
check-vm: deps
	@$(MAKE) --no-print-directory all
	@bash tests/image/run.sh

.PHONY: man install-man deb check-vm
