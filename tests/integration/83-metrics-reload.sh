#!/usr/bin/env bash
# A reload that adds, moves or removes gateway.metrics.listen takes effect
# at once (issue 41, item 8: it printed success and served nothing until
# a restart, "child metrics disabled"); one whose address cannot be bound
# is refused and the old listener stays; a new textfile's folder is made;
# ctl status gives the audit log's size in the unit of its bound.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
# The metrics group on a line of its own, after the "gateway: {" line,
# where gw_start puts this run's state_dir: that stays as it is.
metrics() { sed -i "/^  metrics:/d" "$GW_CONF"
	[ -n "$1" ] && sed -i "/^gateway: {/a\\  metrics: { $1 interval = 1; };" "$GW_CONF"
	[ -z "$GW_PID" ] || grep -q "state_dir = \"$TOPO_TMP/state\"" "$GW_CONF" ||
		{ not_ok "the config keeps this run's state_dir"; exit 1; }; }
cp examples/demo.conf "$GW_CONF"
sed -i '/^gateway: {/a\  audit_max_kb = 64;' "$GW_CONF"
PROM=$TOPO_TMP/prom/moat.prom
metrics "textfile = \"$PROM\";"
gw_start; expect_eq "gatewayd starts with a textfile and no listener" 0 $?

child() { gw_ctl status | grep -E '^child +metrics '; }
scrape() { in_ns "$NS_LAN" env -i curl -s --max-time 3 "http://192.168.77.1:$1/metrics"; }
serves() { scrape "$1" | grep -q '^moat_up 1$'; }
closed() { # closed PORT -- nothing listens there (the connection is refused)
	in_ns "$NS_LAN" env -i curl -s -o /dev/null --max-time 3 "http://192.168.77.1:$1/metrics"
	[ $? = 7 ]; }
expect_match "no listener: the metrics child is disabled" 'disabled' "$(child)"

# --- added --------------------------------------------------------------------
metrics "textfile = \"$PROM\"; listen = \"192.168.77.1:9477\";"
expect_ok "a reload that adds metrics.listen succeeds" gw_ctl reload
expect_ok "and the listener answers without a restart" wait_for 10 serves 9477
expect_match "the metrics child runs" 'running pid [0-9]+' "$(child)"
expect_match "the new endpoint is logged" 'metrics endpoint now http://192.168.77.1:9477/metrics' "$(cat "$GW_LOG")"
pid1=$(gw_child_pid metrics)

# --- moved ----------------------------------------------------------------------
metrics "textfile = \"$PROM\"; listen = \"192.168.77.1:9478\";"
expect_ok "a reload that moves it succeeds" gw_ctl reload
expect_ok "the new address answers" wait_for 10 serves 9478
expect_ok "the old one is closed" wait_for 10 closed 9477
new_child() { p=$(gw_child_pid metrics); [ -n "$p" ] && [ "$p" != "$pid1" ]; }
expect_ok "served by a new metrics process" new_child
pid1=$(gw_child_pid metrics)

# --- an address this box does not have: refused, nothing changes ------------------
metrics "textfile = \"$PROM\"; listen = \"192.168.77.50:9477\";"
line=$(grep -n '^  metrics:' "$GW_CONF" | cut -d: -f1)
out=$(gw_ctl reload 2>&1); rc=$?
expect_eq "a reload whose listen cannot be bound is refused" 1 "$([ $rc != 0 ] && echo 1 || echo 0)"
expect_match "naming file:line and the address" \
	"moat.conf:$line: gateway.metrics: listen: cannot listen on 192.168.77.50:9477" "$out"
expect_ok "the old listener still answers" serves 9478
expect_eq "served by the same process" "$pid1" "$(gw_child_pid metrics)"
counted() { scrape 9478 | grep -q '^moat_reloads_total{result="refused"} 1$'; }
expect_ok "the refusal is counted" wait_for 10 counted

# --- a textfile in a new folder ------------------------------------------------------
PROM2=$TOPO_TMP/prom2/sub/moat.prom
metrics "textfile = \"$PROM2\"; listen = \"192.168.77.1:9478\";"
expect_ok "a reload to a textfile in a folder that is not there" gw_ctl reload
written() { grep -qs '^moat_up 1$' "$PROM2"; }
expect_ok "is written" wait_for 10 written
expect_eq "in a folder made 0755, root's" "755 root" "$(stat -c '%a %U' "$TOPO_TMP/prom2/sub")"
expect_eq "the listener, unchanged, kept its process" "$pid1" "$(gw_child_pid metrics)"

# --- removed ---------------------------------------------------------------------------
metrics "textfile = \"$PROM2\";"
expect_ok "a reload that removes metrics.listen succeeds" gw_ctl reload
expect_ok "the listener is closed" wait_for 10 closed 9478
gone() { child | grep -q disabled; }
expect_ok "and the metrics child is disabled again" wait_for 10 gone
expect_eq "the textfile is still written" 0 "$(written; echo $?)"
metrics "textfile = \"$PROM2\"; listen = \"192.168.77.1:9477\";"
expect_ok "and added back" gw_ctl reload
expect_ok "it answers again" wait_for 10 serves 9477

# --- the audit log's size, in KiB like its bound ------------------------------------------
for i in $(seq 40); do gw_ctl status >/dev/null; done	# each is audited
st=$(gw_ctl status | grep '^audit ')
bytes=$(stat -c %s "$GW_AUDIT")
kib=$(sed -n 's/.*, size \([0-9]*\) of \([0-9]*\) KiB,.*/\1/p' <<<"$st")
expect_match "ctl status gives the audit size against its bound of 64 KiB" 'size [0-9]+ of 64 KiB' "$st"
expect_ok "in KiB, not bytes: $kib KiB for a file of $bytes bytes" \
	python3 -c "import sys; k, b = int('${kib:-0}'), $bytes; sys.exit(not (b > 1024 and 1 <= k <= (b + 1023) // 1024 and k * 1024 > b - 4096))"
json=$(gw_ctl status --json)
expect_match "--json gives it exactly, in bytes" '"audit":\{"rotations":0,[^}]*"size_bytes":[0-9]+,"max_bytes":65536\}' "$json"
tap_done
