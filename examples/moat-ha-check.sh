#!/bin/sh
# moat-ha-check.sh -- keepalived's track_script for a moat gateway pair.
# Healthy while gatewayd answers on SOCKET and has been given a role since
# it started.  A gatewayd that is down fails the check, and so does one
# that restarted and forwards nothing yet (role "unknown"): keepalived
# then goes to FAULT (the peer takes the address), tells gatewayd
# "fault", the check passes again, and keepalived brings the box back as
# BACKUP.
sock=${1:-/run/moat/gatewayd.sock}
gatewayd ctl -s "$sock" status 2>/dev/null |
	grep -Eq '^ha +(master|backup|fault) '
