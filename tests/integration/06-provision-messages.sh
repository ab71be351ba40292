#!/usr/bin/env bash
# provision's refusals say what to do: a user outside group moat is told
# to join it (not to become root), and a --secret that names no secret
# lists the ones it could name.  Nothing is created; no network is used.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
topo_trap
T=$TOPO_TMP
chmod 0755 "$T"	# QEMU's user would pass through to state_dir
PV=$(topo_pub build/provision)	# run as nobody: a copy anyone can run

sed "s|^gateway: {|gateway: { state_dir = \"$T/state\";|" examples/demo.conf >"$T/moat.conf"
mkdir -p "$T/sandboxes.d"; echo kernel >"$T/vmlinuz"
pv() { "$PV" -c "$T/moat.conf" --run-dir "$T/run" "$@"; }
create() { pv create t1 --kernel "$T/vmlinuz" --egress allowlist --allow a.test "$@" 2>&1; }
nothing_made() { [ -z "$(find "$T/sandboxes.d" "$T/state/guests" -mindepth 1 2>/dev/null)" ]; }

# A user outside group moat.
out=$(runuser -u nobody -- "$PV" -c "$T/moat.conf" --run-dir "$T/run" create t1 \
	--kernel "$T/vmlinuz" --egress none 2>&1); rc=$?
expect_eq "non-member create: exit 1" 1 $rc
expect_eq "non-member create: told to join group moat" \
	"provision: create: permission denied: you are not in group moat; an admin adds you with: usermod -aG moat nobody (then log in again)" \
	"$out"
expect_fail "non-member create: not told it needs root" grep -q "needs root" <<<"$out"
out=$(runuser -u nobody -- "$PV" -c "$T/moat.conf" list 2>&1)
expect_match "non-member list: told to join group moat" "list: permission denied: you are not in group moat" "$out"
out=$(runuser -u nobody -- "$PV" -c "$T/moat.conf" sync-box 2>&1)
expect_eq "sync-box (root's alone) still says it needs root" \
	"provision: sync-box: permission denied: provision sync-box needs root" "$out"

# --secret naming no secret: none defined, then two defined.
out=$(create --secret nope); rc=$?
expect_eq "--secret undefined: exit 1" 1 $rc
expect_match "--secret with no secrets defined: says there are none" \
	'^provision: --secret nope: no secret named "nope" is defined, and there are none' "$out"
cat >>"$T/moat.conf" <<CONF
secrets = (
  { name = "api"; file = "$T/api"; hosts = [ "api.test" ]; header = "Authorization";
    placeholder = "moat-api-PLACEHOLDER"; },
  { name = "gh"; file = "$T/gh"; hosts = [ "api.test" ]; header = "Authorization";
    placeholder = "moat-gh-PLACEHOLDER"; }
);
CONF
echo v1 >"$T/api"; echo v2 >"$T/gh"; chmod 600 "$T/api" "$T/gh"
out=$(create --secret nope); rc=$?
expect_eq "--secret undefined: exit 1 with secrets defined" 1 $rc
expect_eq "--secret undefined: names the defined ones" \
	'provision: --secret nope: no secret named "nope" is defined; defined: api, gh' "$out"
expect_ok "--secret undefined: nothing was made" nothing_made
tap_done
