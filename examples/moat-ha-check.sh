#!/bin/sh
# moat-ha-check.sh -- keepalived's track_script for a moat gateway pair:
#   moat-ha-check.sh SOCKET STATEFILE
# Fails while gatewayd does not answer on SOCKET: keepalived goes to FAULT
# and the peer takes the address.  A gatewayd that has answered but has
# had no role since it started (it restarted, or was down when keepalived
# last changed state) forwards nothing: it is given the role keepalived
# last gave (STATEFILE, written by moat-ha-notify.sh), and the check fails
# if that cannot be done.
sock=${1:-/run/moat/gatewayd.sock}
state=${2:-/run/moat/ha-role}
st=$(/usr/local/sbin/gatewayd ctl -s "$sock" status 2>/dev/null) || exit 1
echo "$st" | grep -Eq '^ha +(master|backup|fault) ' && exit 0
role=$(cat "$state" 2>/dev/null) || exit 1
case $role in master|backup|fault) ;; *) exit 1 ;; esac
exec /usr/local/sbin/gatewayd ctl -s "$sock" ha "$role"
