#!/bin/sh
# install-users.sh -- create the group and the unprivileged users gatewayd
# needs, idempotently.  Run by `make install` and by the tests (as root).
#   moat        group: may use the control socket and provision
#   moat-dns    dnsd's user      moat-proxy  the proxy's user
#   moat-log    the refusal-log reader's user   moat-qemu  QEMU guests
#   moat-ca     the signer, which holds the proxy CA key
#   moat-ctl    the control process, which parses control requests
#   moat-reg    a separate box's registration process (TLS from KVM hosts)
#   moat-mon    the metrics process (Prometheus scrapes, management side)
#   moat-web    the web console (moat-web), management side
#   moat-scan   the canary's containment-check, in its own namespace
set -e
NOLOGIN=/usr/sbin/nologin
[ -x "$NOLOGIN" ] || NOLOGIN=/bin/false
getent group moat >/dev/null || groupadd --system moat
for u in moat-dns moat-proxy moat-log moat-ca moat-ctl moat-reg moat-mon moat-web moat-qemu moat-scan; do
	getent passwd "$u" >/dev/null ||
		useradd --system --no-create-home --home-dir /nonexistent \
		    --shell "$NOLOGIN" --user-group "$u"
done
# QEMU opens /dev/kvm, which Debian makes root:kvm 0660.
KVM_GROUP=${KVM_GROUP:-kvm}
if getent group "$KVM_GROUP" >/dev/null; then
	id -nG moat-qemu | grep -qw -- "$KVM_GROUP" ||
		usermod -aG "$KVM_GROUP" moat-qemu
fi
