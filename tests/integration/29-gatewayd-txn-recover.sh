#!/usr/bin/env bash
# A verb killed halfway through writing the configuration (gatewayd or
# provision killed, the machine losing power) leaves the new files in place
# and a journal beside moat.conf.  gatewayd undoes that change before it
# reads anything: here a drop-in replaced by one the loader refuses (which
# alone would keep gatewayd from starting) comes back as it was, a staged
# copy of a secret is removed, and the log says what was undone.  A
# journal whose transaction is still going on (locked) is left alone.
cd "$(dirname "$0")/../.."
KEEP=${KEEP:-}
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

is() {	# is RC DESCRIPTION -- a pass when RC is 0
	local rc=$1; shift
	if [ "$rc" = 0 ]; then ok "$*"; else not_ok "$*"; fi
}

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
ETC=$TOPO_TMP/etc
mkdir -p "$ETC/sandboxes.d" "$TOPO_TMP/state"
GW_CONF=$ETC/moat.conf
cat >"$GW_CONF" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$TOPO_TMP/state";
};
CONF
WEB=$ETC/sandboxes.d/web.conf
cat >"$WEB" <<'CONF'
mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
egress = "allowlist"; allow = [ "example.test" ];
CONF
cp "$WEB" "$TOPO_TMP/web.before"

# The state a killed `ctl allow` leaves: the old drop-in linked under a
# hidden name, the new one in place (here one the loader refuses), and a
# staged secret file not yet renamed.
OLD=$ETC/sandboxes.d/.web.conf.old.0a1b2c3d4e5f
ln "$WEB" "$OLD"
NEWTMP=$ETC/sandboxes.d/.web.conf.new.Qz9aBc
printf 'mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";\negress = "everything";\n' >"$NEWTMP"
mv "$NEWTMP" "$WEB.tmp" && mv "$WEB.tmp" "$WEB"
STAGED=$ETC/.api.secret.new.XyZ123
printf 'sk-staged-SECRET\n' >"$STAGED"; chmod 600 "$STAGED"
JOURNAL=$ETC/sandboxes.d/.moat-txn.k4Lm9P	# beside the first file it changed
printf 'W %s\t%s\nO %s\t%s\nW %s\t%s\n' "$NEWTMP" "$WEB" "$OLD" "$WEB" \
	"$STAGED" "$ETC/api.secret" >"$JOURNAL"
chmod 600 "$JOURNAL"

# Without the journal undone, this configuration is refused.
out=$(build/gatewayd -n -c "$GW_CONF" 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q 'web.conf' <<<"$out"
is $? "the half-written configuration alone is refused (rc $rc)"

# A journal still held by a live transaction is not touched.
LIVE=$ETC/.moat-txn.LiVe00
LIVETMP=$ETC/sandboxes.d/.live.conf.new.AbCdEf
printf 'x\n' >"$LIVETMP"
printf 'W %s\t%s\n' "$LIVETMP" "$ETC/sandboxes.d/live.conf" >"$LIVE"
flock "$LIVE" sleep 120 &
LOCKER=$!
TOPO_PIDS+=("$LOCKER")
sleep 0.3

gw_start
is $? "gatewayd starts: the cut-short change is undone first"
cmp -s "$WEB" "$TOPO_TMP/web.before"
is $? "the drop-in is back as it was before the killed verb"
[ ! -e "$OLD" ] && [ ! -e "$JOURNAL" ]
is $? "the old copy and the journal are gone"
[ ! -e "$STAGED" ] && [ ! -e "$ETC/api.secret" ]
is $? "the staged copy of the secret is removed and never put in place"
grep -q 'configuration change was cut short' "$GW_LOG"
is $? "the log says a change was cut short and undone"
! grep -rq 'sk-staged-SECRET' "$GW_LOG" "$GW_AUDIT" 2>/dev/null
is $? "no secret value in the log or the audit"
[ -e "$LIVE" ] && [ -e "$LIVETMP" ]
is $? "a transaction still going on (journal locked) is left alone"
gw_ctl sandboxes 2>/dev/null | grep -q web
is $? "the sandbox runs with its configuration from before"

kill "$LOCKER" 2>/dev/null
rm -f "$LIVE" "$LIVETMP"
tap_done
