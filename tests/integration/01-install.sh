#!/usr/bin/env bash
# make install honours PREFIX and DESTDIR and installs what an operator needs.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
D=$(mktemp -d /tmp/moat-install.XXXXXX)
trap 'rm -rf "$D"' EXIT
make --no-print-directory install DESTDIR="$D" PREFIX=/opt/moat >"$D.log" 2>&1
expect_eq "make install exits 0" 0 $?
for f in sbin/gatewayd sbin/nft-rules bin/containment-check share/doc/moat/moat.conf.5.md \
	share/doc/moat/gatewayd.8.md lib/moat/install-users.sh share/moat/allow.d/pypi.list \
	share/moat/allow.d/huggingface.list; do
	expect_ok "installs /opt/moat/$f" test -f "$D/opt/moat/$f"
done
for c in provision gatewayd; do	# members' commands, on a user's PATH
	expect_eq "bin/$c links to sbin/$c" /opt/moat/sbin/$c "$(readlink "$D/opt/moat/bin/$c")"
done
expect_ok "installs the example config" test -f "$D/etc/moat/moat.conf"
expect_match "the pair's notify script runs gatewayd from PREFIX" \
	'exec /opt/moat/sbin/gatewayd ctl' "$(cat "$D/opt/moat/lib/moat/moat-ha-notify.sh" 2>/dev/null)"
expect_ok "and is executable" test -x "$D/opt/moat/lib/moat/moat-ha-check.sh"
expect_match "the keepalived example names the scripts under PREFIX" \
	'script "/opt/moat/lib/moat/moat-ha-check.sh' "$(cat "$D/opt/moat/share/doc/moat/keepalived.conf" 2>/dev/null)"
expect_match "and passes conntrackd's configuration to the notify script" \
	'moat-ha-notify.sh .* /etc/conntrackd/conntrackd.conf"' "$(cat "$D/opt/moat/share/doc/moat/keepalived.conf" 2>/dev/null)"
expect_match "the conntrackd example is installed with it (FTFW)" 'Mode FTFW' \
	"$(cat "$D/opt/moat/share/doc/moat/conntrackd.conf" 2>/dev/null)"
expect_eq "secrets folder is 0700" 700 "$(stat -c %a "$D/etc/moat/secrets")"
expect_match "systemd unit points at PREFIX" 'ExecStart=/opt/moat/sbin/gatewayd -d' \
	"$(cat "$D/lib/systemd/system/moat-gatewayd.service")"
expect_match "systemctl reload runs ctl reload, whose exit code says if it took" \
	'ExecReload=/opt/moat/sbin/gatewayd ctl reload' \
	"$(cat "$D/lib/systemd/system/moat-gatewayd.service")"
expect_match "the unit gives the audit log /var/log/moat" '^LogsDirectory=moat$' \
	"$(cat "$D/lib/systemd/system/moat-gatewayd.service")"
expect_match "the guest unit runs provision from PREFIX" \
	'ExecStart=/opt/moat/sbin/provision --direct start %i' \
	"$(cat "$D/lib/systemd/system/moat-guest@.service" 2>/dev/null)"
expect_match "the box sync unit runs provision sync-box from PREFIX" \
	'ExecStart=/opt/moat/sbin/provision sync-box' \
	"$(cat "$D/lib/systemd/system/moat-sync-box.service" 2>/dev/null)"
# Documentation= names man pages that are installed (the Markdown is
# installed compressed by the .deb, so a file: link to it would be dead).
for u in moat-gatewayd moat-guest@ moat-sync-box; do
	docs=$(sed -n 's/^Documentation=//p' "$D/lib/systemd/system/$u.service")
	expect_match "$u.service: Documentation= is man pages only" '^man:[^ ]+( man:[^ ]+)*$' "$docs"
	for m in $docs; do
		m=${m#man:}; n=${m%(*}; s=${m#*(}; s=${s%)}
		expect_ok "$u.service: $m is installed" test -f "$D/opt/moat/share/man/man$s/$n.$s"
	done
done
expect_match "moat-sync-box does not retry a host without a box section (exit 2)" \
	'^RestartPreventExitStatus=2$' "$(cat "$D/lib/systemd/system/moat-sync-box.service")"
expect_ok "secrets.d exists (gatewayd's unit makes it writable)" test -d "$D/etc/moat/secrets.d"
expect_match "a logrotate snippet rotates the audit log and signals gatewayd" \
	'/var/log/moat/audit.log \{' "$(cat "$D/etc/logrotate.d/moat" 2>/dev/null)"
if command -v logrotate >/dev/null; then
	expect_ok "logrotate accepts the snippet" logrotate -d "$D/etc/logrotate.d/moat"
fi
expect_eq "nothing installed outside DESTDIR" "" \
	"$(ls /opt/moat 2>/dev/null)"
rm -f "$D.log"
tap_done
