#!/bin/sh
# moat-ha-notify.sh -- keepalived's notify script for a moat gateway pair:
# tells gatewayd the role keepalived gave this box.  keepalived calls it as
#   moat-ha-notify.sh SOCKET STATEFILE INSTANCE NAME STATE PRIORITY
# (SOCKET and STATEFILE from the notify line in keepalived.conf, the rest
# appended by keepalived).  Any state but MASTER and BACKUP (FAULT, STOP)
# is "fault": the box forwards nothing.  The role is also written to
# STATEFILE, so that moat-ha-check.sh can give it again to a gatewayd
# that restarts (or was down when keepalived changed state).
sock=${1:-/run/moat/gatewayd.sock}
state=${2:-/run/moat/ha-role}
case $5 in
MASTER) role=master ;;
BACKUP) role=backup ;;
*) role=fault ;;
esac
echo "$role" >"$state.tmp" && mv -f "$state.tmp" "$state"
exec /usr/local/sbin/gatewayd ctl -s "$sock" ha "$role"
