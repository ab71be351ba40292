#!/usr/bin/env bash
# provision sync-box for a KVM host with more sandboxes than one sync
# request line can name (1,024 bytes: about 60 names of 15 characters).
# The host registers each, then settles the rest by asking the box for
# its list and removing, one request each, every sandbox of its own that
# it no longer has; another host's sandboxes are never touched.
#
# Topology: sbox_up_trunks in tests/harness/separate-box.sh, host A's pool
# widened to a /25 so that 80 sandboxes fit.  No guest runs: this is the
# registration protocol between provision and the box's gatewayd.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/separate-box.sh
. tests/harness/gw.sh

for b in build/gatewayd build/provision; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
SB_POOL_A=10.77.0.128/25
sbox_up_trunks || { not_ok "separate-box topology with trunks comes up"; tap_done; exit 1; }
topo_services || { not_ok "test services start"; tap_done; exit 1; }

PKI=$TOPO_TMP/pki; mkdir -p "$PKI"	# sbox_mkcert, sbox_pin
for n in box hostA hostB; do sbox_mkcert $n; done
cat >"$GW_CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "$SB_GW_IF";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  registration: { listen = "$SB_MGMT:7443"; cert = "$PKI/box.crt"; key = "$PKI/box.key"; };
};
hosts = (
  { name = "hostA"; key = "$(sbox_pin hostA)"; pool = "$SB_POOL_A"; trunk = "trA"; max_egress = "open"; },
  { name = "hostB"; key = "$(sbox_pin hostB)"; pool = "$SB_POOL_B"; trunk = "trB"; max_egress = "open"; }
);
sandboxes = ();
CONF
BOX_SB=$TOPO_TMP/sandboxes.d; mkdir -p "$BOX_SB"

HA=$TOPO_TMP/hostA; mkdir -p "$HA/sandboxes.d"
cat >"$HA/moat.conf" <<CONF
gateway: {
  uplink  = "$SB_TRUNK";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "$GW_ADDR" ]; };
  state_dir = "$HA/state";
};
box: { address = "$SB_MGMT:7443"; pin = "$(sbox_pin box)"; cert = "$PKI/hostA.crt";
       key = "$PKI/hostA.key"; pool = "$SB_POOL_A"; };
CONF
# host A's 80 sandboxes, as provision writes their drop-ins: 15-character
# names, so the list is 80 * 16 = 1,280 bytes.
N=80
for i in $(seq 1 $N); do
	n=$(printf 'agent-%03d-build' "$i")
	cat >"$HA/sandboxes.d/$n.conf" <<CONF
# sandbox "$n", written by provision(8); remove it with \`provision destroy $n\`
name = "$n";
mac = "$(printf '52:54:00:00:0d:%02x' "$i")";
address = "10.77.0.$((129 + i))";
tap = "$(printf 'mt-a%03d' "$i")";
egress = "open";
CONF
done
pvA() { in_ns "$SB_NS_A" env -i PATH="$PATH" build/provision \
	-c "$HA/moat.conf" --run-dir "$HA/run" "$@"; }
reg() {	# reg HOSTNS CERT REQUEST... -- gatewayd register by hand
	local ns=$1 who=$2; shift 2
	in_ns "$ns" env -i timeout 40 build/gatewayd register --box $SB_MGMT:7443 \
		--ca "$PKI/box.crt" --cert "$PKI/$who.crt" --key "$PKI/$who.key" "$@" 2>&1
}
now_ms() { date +%s%3N; }
names() {	# names HOSTNS CERT -- the box's list for that host, sorted, one line
	reg "$1" "$2" list | grep -v '^ok$' | cut -d' ' -f1 | sort | tr '\n' ' ' | sed 's/ $//'
}
gw_start; expect_eq "gatewayd starts on the gateway box" 0 $?
topo_wait_port "$NS_GW" $SB_MGMT 7443

# What the box holds before the sync: two of host A's that host A no
# longer has, and one of host B's.
expect_eq "host A registers stale-one by hand" ok \
	"$(reg "$SB_NS_A" hostA register stale-one 10.77.0.250 52:54:00:00:0e:01 open)"
expect_eq "host A registers stale-two by hand" ok \
	"$(reg "$SB_NS_A" hostA register stale-two 10.77.0.251 52:54:00:00:0e:02 open)"
expect_eq "host B registers b1 by hand" ok \
	"$(reg "$SB_NS_B" hostB register b1 10.77.0.33 52:54:00:00:0b:01 open)"

t0=$(now_ms); out=$(pvA sync-box 2>&1); rc=$?; t1=$(now_ms)
echo "# provision sync-box ($N sandboxes, one connection): $((t1 - t0)) ms"
expect_eq "provision sync-box with $N sandboxes exits 0" 0 "$rc"
expect_match "... says all $N were registered and the box has no others" \
	"$N of $N sandbox\(es\) registered, the box has no others of this host" "$out"
expect_match "... says the list did not fit one sync request" \
	"do not fit one sync request" "$out"
want=$(for i in $(seq 1 $N); do printf 'agent-%03d-build\n' "$i"; done | sort | tr '\n' ' ' | sed 's/ $//')
expect_eq "the box lists exactly host A's $N sandboxes" "$want" "$(names "$SB_NS_A" hostA)"
expect_eq "... the stale ones' drop-ins are gone" "" \
	"$(ls "$BOX_SB"/stale-*.conf 2>/dev/null)"
expect_eq "... each removal audited" 2 \
	"$(grep -c '"request":"remove".*"sandbox":"stale-' "$GW_AUDIT")"
expect_eq "host B's b1 is untouched" b1 "$(names "$SB_NS_B" hostB)"
in_map() { in_ns "$NS_GW" nft list map inet moat sandboxes | grep -o "$1" | wc -l; }
expect_eq "the box's policy has host A's $N sandboxes" $N "$(in_map '10\.77\.0\.\(1[3-9][0-9]\|2[0-9][0-9]\) :')"
expect_eq "... and not the stale ones" 0 "$(in_map '10\.77\.0\.25[01] :')"

# Nothing changed: a second sync registers the same and removes nothing.
before=$(wc -l <"$GW_AUDIT")
out=$(pvA sync-box 2>&1); rc=$?
expect_eq "a second sync-box exits 0" 0 "$rc"
expect_eq "... removes nothing" 0 \
	"$(tail -n +$((before + 1)) "$GW_AUDIT" | grep -c '"request":"remove"\|"removed"')"
expect_eq "... the box still lists the $N" "$want" "$(names "$SB_NS_A" hostA)"

# Host A destroys one (its drop-in goes) while the box is not told: the
# next sync removes it at the box.
rm "$HA/sandboxes.d/agent-007-build.conf"
out=$(pvA sync-box 2>&1); rc=$?
expect_eq "after a local removal: sync-box exits 0" 0 "$rc"
expect_match "... says $((N - 1)) of $((N - 1)) registered" "$((N - 1)) of $((N - 1)) sandbox" "$out"
expect_eq "... the box no longer lists agent-007-build" "" \
	"$(names "$SB_NS_A" hostA | tr ' ' '\n' | grep -x agent-007-build)"
expect_eq "... and lists the other $((N - 1))" $((N - 1)) \
	"$(names "$SB_NS_A" hostA | wc -w)"
tap_done
