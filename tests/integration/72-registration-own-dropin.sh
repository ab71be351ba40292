#!/usr/bin/env bash
# Registration writes like every other writer (issue 40, finding 6): a
# host's `register NAME` never replaces a sandboxes.d/NAME.conf that is
# not its own marked drop-in (a local sandbox written and not yet loaded,
# a symlink), and it takes provision's lock on sandboxes.d, so no write of
# a host lands between provision's check and its write.  The host's own
# drop-in is still replaced, through the journaled writer.
#
# Topology: tests/harness/separate-box.sh plus a management bridge that
# host A reaches (as in 72-registration-box.sh).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/separate-box.sh
. tests/harness/gw.sh

for b in build/gatewayd build/nft-rules; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
sbox_up || { not_ok "separate-box topology comes up"; tap_done; exit 1; }
MGMT=192.168.200.1
ip -n "$NS_GW" link add mgmt type bridge && ip -n "$NS_GW" link set mgmt up
ip -n "$NS_GW" addr add $MGMT/24 dev mgmt
topo_link "$NS_GW" mg-a "$SB_NS_A" mgmt0 && ip -n "$NS_GW" link set mg-a master mgmt
ip -n "$SB_NS_A" addr add 192.168.200.2/24 dev mgmt0

PKI=$TOPO_TMP/pki; mkdir -p "$PKI"
for n in box hostA; do sbox_mkcert $n; done
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "$SB_GW_IF";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  registration: { listen = "$MGMT:7443"; cert = "$PKI/box.crt"; key = "$PKI/box.key"; };
};
hosts = (
  { name = "hostA"; key = "$(sbox_pin hostA)"; pool = "10.77.0.16/28"; trunk = "$SB_GW_IF";
    max_egress = "open"; }
);
CONF
SBD=$TOPO_TMP/sandboxes.d
mkdir -p "$SBD"

reg() {	# reg REQUEST... -- the box's answers to host A
	in_ns "$SB_NS_A" env -i timeout 40 build/gatewayd register --box $MGMT:7443 \
		--ca "$PKI/box.crt" --cert "$PKI/hostA.crt" --key "$PKI/hostA.key" "$@" 2>&1
}

gw_start; expect_eq "gatewayd starts on the box" 0 $?
topo_wait_port "$NS_GW" $MGMT 7443

# A local sandbox, written (by provision create, or an admin) and not yet
# loaded: the name is free in the running configuration, the file is not.
cat >"$SBD/web.conf" <<'CONF'
# sandbox "web", written by provision(8); remove it with `provision destroy web`
name = "web";
mac = "52:54:00:00:00:0a";
address = "10.77.0.10";
tap = "mt-web";
egress = "none";
CONF
cp -p "$SBD/web.conf" "$TOPO_TMP/web.before"
expect_match "host A's register of a local sandbox's unloaded name is refused" \
	"^error name used by another sandbox \(sandboxes.d/web.conf is not this host's\)" \
	"$(reg register web 10.77.0.17 52:54:00:00:0a:07 open)"
expect_eq "... the local drop-in is byte-identical" same \
	"$(cmp -s "$SBD/web.conf" "$TOPO_TMP/web.before" && echo same || echo changed)"
expect_match "... audited as a refusal" \
	'"event":"registration-refused".*"host":"hostA".*"sandbox":"web".*"reason":"name used by another sandbox' \
	"$(cat "$GW_AUDIT")"
expect_eq "... no sandbox web runs" "" \
	"$(gw_ctl sandboxes 2>/dev/null | grep -w web)"
rm -f "$SBD/web.conf"

# A symlink by that name (anything not a regular file) is not the host's.
printf 'outside\n' >"$TOPO_TMP/target"
ln -s "$TOPO_TMP/target" "$SBD/lnk.conf"
expect_match "a symlink at the drop-in's path is not replaced" \
	"^error name used by another sandbox" \
	"$(reg register lnk 10.77.0.18 52:54:00:00:0a:08 open)"
expect_eq "... the symlink and its target are as they were" "$TOPO_TMP/target outside" \
	"$(readlink "$SBD/lnk.conf") $(cat "$TOPO_TMP/target")"
rm -f "$SBD/lnk.conf"

# The host's own drop-in is created, then replaced.
expect_eq "host A registers a1" ok "$(reg register a1 10.77.0.19 52:54:00:00:0a:09 open)"
expect_eq "... its drop-in carries the host's mark" "# registered by host hostA" \
	"$(head -1 "$SBD/a1.conf")"
expect_eq "host A changes its own a1 (egress none)" ok \
	"$(reg register a1 10.77.0.19 52:54:00:00:0a:09 none)"
expect_eq "... the drop-in is replaced" 'egress = "none";' "$(grep '^egress' "$SBD/a1.conf")"

# provision's lock held: the box does not wait (its root loop never
# blocks) and does not write; it says so, and takes it once free.
flock -o "$SBD" sleep 60 &	# -o: the sleep does not hold it too
LOCKER=$!
TOPO_PIDS+=("$LOCKER")
wait_for 5 grep -q ":$(stat -c %i "$SBD") " /proc/locks
expect_match "while provision holds sandboxes.d's lock, a register is refused" \
	"^error the box is changing its configuration; try again" \
	"$(reg register a2 10.77.0.20 52:54:00:00:0a:0a open)"
expect_eq "... and writes nothing" no "$([ -e "$SBD/a2.conf" ] && echo yes || echo no)"
expect_match "... a remove too" "^error the box is changing its configuration" \
	"$(reg remove a1)"
expect_eq "... a1 stays" yes "$([ -e "$SBD/a1.conf" ] && echo yes || echo no)"
SLEEPER=$(pgrep -P "$LOCKER")
kill "$LOCKER" $SLEEPER 2>/dev/null; wait "$LOCKER" 2>/dev/null
expect_eq "once the lock is free, the register goes through" ok \
	"$(reg register a2 10.77.0.20 52:54:00:00:0a:0a open)"
expect_eq "no journal or staged file is left in sandboxes.d" "" \
	"$(ls -A "$SBD" | grep '^\.')"

tap_done
