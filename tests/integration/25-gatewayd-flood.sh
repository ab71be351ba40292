#!/usr/bin/env bash
# gatewayd's audit log cannot be flooded.  Guests forging a new source
# address for every packet get the per-ingress budget (the bridge port they
# are plugged into, not the address they claim), all of them together get
# the global one, what is left out is counted exactly, and the audit file
# is rotated by size so it stays under gateway.audit_max_kb.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

N=6
topo_up || { not_ok "topology"; exit 1; }
sbs=""
for i in $(seq $N); do
	topo_guest g$i 10.77.0.$((10 + i)) 52:54:00:00:01:0$i mt-g$i
	sbs="$sbs${sbs:+,}
  { name = \"g$i\"; mac = \"52:54:00:00:01:0$i\"; address = \"10.77.0.$((10 + i))\";
    tap = \"mt-g$i\"; egress = \"open\"; }"
done
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
  audit_max_kb = 16384;
};
sandboxes = ($sbs
);
CONF
gw_start -X || { not_ok "gatewayd starts"; tap_done; exit 1; }

refusals() { grep -h '"event":"refusal","reason":"spoof"' "$GW_AUDIT".1 "$GW_AUDIT" 2>/dev/null; }
suppressed() {	# total of the refusals-suppressed counts [for INGRESS]
	grep -h '"event":"refusals-suppressed"' "$GW_AUDIT".1 "$GW_AUDIT" 2>/dev/null |
	    grep "${1:-.}" | sed -n 's/.*"count":\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'
}
wait_accounted() {	# wait_accounted TOTAL -- lines + suppressed reach TOTAL
	local i
	for i in $(seq 150); do
		[ $(( $(refusals | wc -l) + $(suppressed) )) -ge "$1" ] && return 0
		sleep 0.2
	done
	return 1
}

# --- one guest, 3,000 forged sources ------------------------------------------
in_ns $TOPO-g1 python3 tests/harness/spoof-flood.py 192.168.77.2 3000
expect_ok "every forged packet is accounted for (line or count)" wait_accounted 3000
lines=$(refusals | wc -l)
if [ "$lines" -ge 150 ] && [ "$lines" -le 400 ]; then
	ok "3,000 forged sources give the per-port budget, not 3,000 lines ($lines)"
else not_ok "3,000 forged sources give the per-port budget" "got $lines lines"; fi
# The same bucket also counts the guest's own IPv6 chatter (reason ipv6)
# that it suppressed meanwhile: a handful at most.
acc=$((lines + $(suppressed)))
if [ "$acc" -ge 3000 ] && [ "$acc" -le 3020 ]; then ok "the rest is reported as suppressed ($acc)"
else not_ok "the rest is reported as suppressed" "lines + suppressed = $acc"; fi
expect_match "suppression is reported by ingress port, not by source" \
	'"event":"refusals-suppressed".*"ingress":"port:[0-9]+","count":[0-9]+' "$(cat "$GW_AUDIT")"
expect_eq "one bucket for the whole flood" 1 \
	"$(grep '"event":"refusals-suppressed"' "$GW_AUDIT" | grep -o '"ingress":"[^"]*"' | sort -u | wc -l)"

# --- every guest at once: the global cap --------------------------------------
base_lines=$(refusals | wc -l)
pids=()
for i in $(seq $N); do
	in_ns $TOPO-g$i python3 tests/harness/spoof-flood.py 192.168.77.2 3000 10.$((100 + i)) \
	    "$TOPO_TMP/go" &
	pids+=($!)
done
touch "$TOPO_TMP/go"
wait "${pids[@]}"
expect_ok "all $((N * 3000)) forged packets are accounted for" wait_accounted $((3000 + N * 3000))
# The global budget is a burst of 400 and 150 a second: over the seconds
# the flood's lines span, that bounds them whatever the per-port budgets
# would add up to (6 x 200 at once).
read -r lines bound < <(refusals | tail -n +$((base_lines + 1)) | python3 -c '
import sys, json, datetime, math
ts = [datetime.datetime.fromisoformat(json.loads(l)["time"].rstrip("Z")) for l in sys.stdin]
span = (ts[-1] - ts[0]).total_seconds() if ts else 0
print(len(ts), 400 + 150 * (math.ceil(span) + 1))')
if [ "$lines" -le "$bound" ]; then
	ok "$N ports flooding together stay under the global cap ($lines lines <= $bound)"
else not_ok "$N ports flooding together stay under the global cap" "got $lines lines > $bound"; fi

# --- the size bound: again with a 64 KiB audit file -------------------------------
kill "$GW_PID"; wait "$GW_PID" 2>/dev/null
sed -i 's/audit_max_kb = 16384;/audit_max_kb = 64;/' "$GW_CONF"
rm -f "$GW_AUDIT" "$GW_AUDIT.1"
gw_start -X || { not_ok "gatewayd restarts"; tap_done; exit 1; }
for r in 1 2 3; do
	pids=()
	for i in $(seq $N); do
		in_ns $TOPO-g$i python3 tests/harness/spoof-flood.py 192.168.77.2 3000 10.$((110 + i)) &
		pids+=($!)
	done
	wait "${pids[@]}"
done
for i in $(seq 150); do grep -q '"event":"audit-rotated"' "$GW_AUDIT" && break; sleep 0.2; done
for i in $(seq 50); do	# until the last summaries are written
	s1=$(stat -c %s "$GW_AUDIT"); sleep 0.5; [ "$s1" = "$(stat -c %s "$GW_AUDIT")" ] && break
done
size=$(stat -c %s "$GW_AUDIT")
expect_ok "the audit file stays under audit_max_kb ($size bytes)" test "$size" -le 65536
expect_ok "the rotated file too" test "$(stat -c %s "$GW_AUDIT.1")" -le 65536
expect_match "the new file says what was rotated away and left out" \
	'"event":"audit-rotated","max_kb":64,"rotations":[1-9][0-9]*,"dropped_lines":[0-9]+,"suppressed":[0-9]+,"lost":[0-9]+' \
	"$(cat "$GW_AUDIT")"
c=$(gw_ctl counters)
expect_match "ctl counters reports rotations and suppressions" \
	'audit  lines [0-9]+, size [0-9]+ of 64 KiB, rotations [1-9][0-9]*, dropped lines [0-9]+, refusals suppressed [1-9][0-9]*' "$c"
expect_match "ctl status --json too" '"audit":\{"rotations":[1-9][0-9]*,"dropped_lines":[0-9]+,"suppressed":[1-9]' \
	"$(gw_ctl status --json)"
tap_done
