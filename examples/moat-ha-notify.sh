#!/bin/sh
# moat-ha-notify.sh -- keepalived's notify script for a moat gateway pair:
# tells gatewayd the role keepalived gave this box.  keepalived calls it as
#   moat-ha-notify.sh SOCKET INSTANCE NAME STATE PRIORITY
# (SOCKET from the notify line in keepalived.conf, the rest appended by
# keepalived).  Any state but MASTER and BACKUP (FAULT, STOP) is "fault":
# the box forwards nothing.
sock=${1:-/run/moat/gatewayd.sock}
case $4 in
MASTER) role=master ;;
BACKUP) role=backup ;;
*) role=fault ;;
esac
exec gatewayd ctl -s "$sock" ha "$role"
