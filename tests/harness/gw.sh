# gw.sh -- start and stop gatewayd inside the topology's gateway namespace
# (sourced after topology.sh).  gw_start writes $GW_CONF from the demo
# config unless the caller wrote one, and runs gatewayd in the foreground
# in the background, reaped by topo_down.
GW_CONF=${GW_CONF:-$TOPO_TMP/moat.conf}
GW_SOCK=$TOPO_TMP/gatewayd.sock
GW_AUDIT=$TOPO_TMP/audit.log
GW_LOG=$TOPO_TMP/gatewayd.log
GW_PID=

# A reload reads $GW_CONF again: a test that rewrote it must have kept the
# state folder gw_start gave it (gw_own_state), or the reload is refused.
gw_ctl() {
	[ "${1:-}" = reload ] && { host_guard_conf "$GW_CONF" || return 1; }
	build/gatewayd ctl -s "$GW_SOCK" "$@"
}

# gw_own_state -- give $GW_CONF this run's state folder unless it names
# one: the default (/var/lib/moat) is the host's, and a test must never
# leave a network.undo record, a CA or guests' files there.  Added on the
# "gateway: {" line itself, so the file:line numbers tests expect hold.
gw_own_state() {
	local re='^[^#]*state_dir[[:space:]]*='
	grep -qE "$re" "$GW_CONF" && return 0
	sed -i "0,/^gateway *[:=] *{/s||& state_dir = \"$TOPO_TMP/state\";|" "$GW_CONF"
	grep -qE "$re" "$GW_CONF" ||
		{ echo "gw_own_state: no gateway section in $GW_CONF" >&2; return 1; }
}

gw_start() {	# gw_start [extra gatewayd args]
	[ -e "$GW_CONF" ] || cp examples/demo.conf "$GW_CONF"
	gw_own_state || return 1
	bash gatewayd/install-users.sh
	moat_daemon "$NS_GW" build/gatewayd -d -c "$GW_CONF" -s "$GW_SOCK" \
	    -a "$GW_AUDIT" "$@" >>"$GW_LOG" 2>&1 &
	GW_PID=$!
	TOPO_PIDS+=("$GW_PID")
	# Up when its control socket answers; give up early if it exited.
	wait_for 30 gw_up_or_gone && gw_ctl status >/dev/null 2>&1 && return 0
	echo "gatewayd did not come up:"; cat "$GW_LOG"
	return 1
}

gw_up_or_gone() {
	gw_ctl status >/dev/null 2>&1 || ! kill -0 "$GW_PID" 2>/dev/null
}

gw_child_pid() { # gw_child_pid NAME -- pid of a running child, from ctl status
	gw_ctl status --json | python3 -c "import json,sys
for c in json.load(sys.stdin)['children']:
    if c['name']=='$1' and c['pid']>0: print(c['pid'])"
}

# The proxy is a pool of workers (gateway.proxy.workers).
gw_proxy_pids() { # the running workers' pids, sorted, on one line
	gw_child_pid proxy | sort -n | tr '\n' ' ' | sed 's/ $//'
}
gw_proxy_new() { # gw_proxy_new "OLD PIDS" -- every worker runs, none of OLD
	local p want
	want=$(gw_ctl status --json | python3 -c "import json,sys
print(json.load(sys.stdin)['proxy_workers'])")
	set -- "$1" $(gw_proxy_pids)
	[ $(($# - 1)) = "$want" ] || return 1
	for p in "${@:2}"; do case " $1 " in *" $p "*) return 1 ;; esac; done
}

# tcp_probe NS ADDR PORT -- "connected", "unreachable" (ICMP reject),
# "refused" (RST) or "timeout".
tcp_probe() {
	local out
	out=$(ip netns exec "$1" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3 && echo connected" 2>&1)
	case "$out" in
	*connected*) echo connected ;;
	*"No route to host"*) echo unreachable ;;
	*"Connection refused"*) echo refused ;;
	*) echo timeout ;;
	esac
}
