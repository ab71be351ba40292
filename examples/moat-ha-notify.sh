#!/bin/sh
# moat-ha-notify.sh -- keepalived's notify script for a moat gateway pair:
# tells gatewayd the role keepalived gave this box, and conntrackd what to
# do with the connections it replicates.  keepalived calls it as
#   moat-ha-notify.sh SOCKET STATEFILE [CONNTRACKD_CONF] INSTANCE NAME STATE PRIORITY
# (SOCKET, STATEFILE and CONNTRACKD_CONF from the notify line in
# keepalived.conf, the last four appended by keepalived).  Any state but
# MASTER and BACKUP (FAULT, STOP) is "fault": the box forwards nothing.
# The role is also written to STATEFILE, so that moat-ha-check.sh can give
# it again to a gatewayd that restarts (or was down when keepalived
# changed state).
#
# With CONNTRACKD_CONF, conntrackd (FTFW mode, examples/conntrackd.conf)
# is told what its documentation's primary-backup.sh tells it, but for
# -t: becoming master, commit what came from the other box (a no-op with
# DisableExternalCache On, where it is in the kernel already), then start
# over from the kernel's table and send it to the other box; becoming
# backup, ask for the master's table.  Not -t ("shorten the timers"):
# conntrackd implements it as a flush of the whole kernel table a few
# seconds later, and with DisableExternalCache On that table holds the
# master's flows, which the next failover needs.  A conntrackd step that
# fails is logged and does not keep the role from gatewayd.
sock=${1:-/run/moat/gatewayd.sock}
state=${2:-/run/moat/ha-role}
ctd=
[ $# -ge 7 ] && ctd=$3
eval "kstate=\${$(($# - 1))}"
case $kstate in
MASTER) role=master steps="-c -f -R -B" ;;
BACKUP) role=backup steps="-n" ;;
*) role=fault steps= ;;
esac
echo "$role" >"$state.tmp" && mv -f "$state.tmp" "$state"
if [ -n "$ctd" ]; then
	for s in $steps; do
		/usr/sbin/conntrackd -C "$ctd" "$s" >/dev/null 2>&1 ||
			logger -t moat-ha "conntrackd $s failed ($role)" 2>/dev/null
	done
fi
exec /usr/local/sbin/gatewayd ctl -s "$sock" ha "$role"
