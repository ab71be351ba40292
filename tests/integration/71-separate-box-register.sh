#!/usr/bin/env bash
# Separate gateway box with registration: KVM hosts register their
# sandboxes with gatewayd on the box over TLS (a client certificate whose
# public key is pinned in the box's hosts = list) instead of copying
# drop-ins by hand.  The box writes sandboxes.d and reloads; egress
# follows.  A claim outside the host's pool, another host's sandbox and
# an unknown key are refused and audited.  Topology:
# tests/harness/separate-box.sh (the KVM hosts' own bridge rules are the
# business of 70-separate-box.sh and are not applied here).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/separate-box.sh
. tests/harness/gw.sh

for b in build/gatewayd; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
sbox_up || { not_ok "separate-box topology comes up"; tap_done; exit 1; }
sbox_guest "$SB_NS_A" a1 10.77.0.21 52:54:00:00:0a:01 mt-a1
sbox_guest "$SB_NS_B" b1 10.77.0.33 52:54:00:00:0b:01 mt-b1
topo_services || { not_ok "test services start"; tap_done; exit 1; }
# The management network the KVM hosts reach the box's endpoint on (the
# endpoint may not listen on the sandbox network).
MGMT=192.168.200.1
ip -n "$NS_GW" link add mgmt type bridge && ip -n "$NS_GW" link set mgmt up
ip -n "$NS_GW" addr add $MGMT/24 dev mgmt
topo_link "$NS_GW" mg-a "$SB_NS_A" mgmt0 && ip -n "$NS_GW" link set mg-a master mgmt
topo_link "$NS_GW" mg-b "$SB_NS_B" mgmt0 && ip -n "$NS_GW" link set mg-b master mgmt
ip -n "$SB_NS_A" addr add 192.168.200.2/24 dev mgmt0
ip -n "$SB_NS_B" addr add 192.168.200.3/24 dev mgmt0

PKI=$TOPO_TMP/pki; mkdir -p "$PKI"
mkcert() {	# mkcert NAME -- a self-signed EC certificate NAME.crt/.key
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/CN=$1" -days 2 -keyout "$PKI/$1.key" -out "$PKI/$1.crt" 2>/dev/null
}
pin() {	# pin NAME -- sha256:<hex> of NAME.crt's SubjectPublicKeyInfo
	echo "sha256:$(openssl x509 -in "$PKI/$1.crt" -pubkey -noout |
		openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1)"
}
for n in box hostA hostB stranger; do mkcert $n; done

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
  { name = "hostA"; key = "$(pin hostA)"; pool = "10.77.0.16/28"; trunk = "$SB_GW_IF"; max_egress = "open"; },
  { name = "hostB"; key = "$(pin hostB)"; pool = "10.77.0.32/28"; trunk = "$SB_GW_IF"; max_egress = "open"; }
);
CONF
mkdir -p "$TOPO_TMP/sandboxes.d"

# reg HOSTNS CERT REQUEST... -- gatewayd register on a KVM host: print
# the box's answers.
reg() {
	local ns=$1 who=$2; shift 2
	in_ns "$ns" env -i timeout 40 build/gatewayd register --box $MGMT:7443 \
		--ca "$PKI/box.crt" --cert "$PKI/$who.crt" --key "$PKI/$who.key" "$@" 2>&1
}
web() { in_ns $TOPO-$1 curl -s -m 5 http://$INET_HTTP/ 2>/dev/null; }
web_ok() { web "$1" | grep -q "hello from the internet"; }
web_refused() { ! web_ok "$1"; }

expect_ok "gateway config with registration and hosts checks" \
	build/gatewayd -n -c "$GW_CONF"
gw_start; expect_eq "gatewayd starts on the gateway box" 0 $?
topo_wait_port "$NS_GW" $MGMT 7443
expect_eq "before registration: a1 gets nothing out (the box does not know it)" \
	"" "$(web a1)"

expect_eq "host A registers a1" ok \
	"$(reg "$SB_NS_A" hostA register a1 10.77.0.21 52:54:00:00:0a:01 open)"
wait_for 30 web_ok a1
expect_match "after registration: a1 reaches the internet through the box" \
	"hello from the internet" "$(web a1)"
expect_eq "the box wrote a1's drop-in" True \
	"$([ -f "$TOPO_TMP/sandboxes.d/a1.conf" ] && echo True || echo False)"
expect_eq "host A lists its sandboxes" "a1 10.77.0.21 ok" \
	"$(reg "$SB_NS_A" hostA list | tr '\n' ' ' | sed 's/ $//')"

expect_match "host A claiming an address in host B's pool is refused" \
	"^error address outside this host's pool" \
	"$(reg "$SB_NS_A" hostA register evil 10.77.0.33 52:54:00:00:0a:09 open)"
expect_eq "... and no drop-in was written" False \
	"$([ -f "$TOPO_TMP/sandboxes.d/evil.conf" ] && echo True || echo False)"
expect_match "... and the refusal is audited" \
	'"event":"registration-refused".*"host":"hostA".*outside' "$(cat "$GW_AUDIT")"
expect_match "host B claiming a1's MAC is refused" "^error mac used by another sandbox" \
	"$(reg "$SB_NS_B" hostB register b1 10.77.0.33 52:54:00:00:0a:01 open)"
expect_match "host B removing host A's a1 is refused" "^error not this host's sandbox" \
	"$(reg "$SB_NS_B" hostB remove a1)"
expect_match "host B taking over a1's name is refused" "^error name used by another sandbox" \
	"$(reg "$SB_NS_B" hostB register a1 10.77.0.34 52:54:00:00:0b:09 open)"

out=$(reg "$SB_NS_A" stranger register s1 10.77.0.22 52:54:00:00:0c:01 open)
expect_match "a host with an unknown key is refused" "^error unknown host key" "$out"
expect_fail "... and gatewayd register exits non-zero" reg "$SB_NS_A" stranger list
expect_eq "... and its request was not applied" False \
	"$([ -f "$TOPO_TMP/sandboxes.d/s1.conf" ] && echo True || echo False)"
expect_match "... and the refusal is audited with the key's hash" \
	"\"event\":\"registration-refused\".*\"host\":\"$(pin stranger | cut -d: -f2)\"" \
	"$(cat "$GW_AUDIT")"
expect_eq "a client without a certificate gets no answer" "" \
	"$(printf 'list\nquit\n' | in_ns "$SB_NS_A" env -i timeout 20 openssl s_client \
		-connect $MGMT:7443 -CAfile "$PKI/box.crt" -quiet -ign_eof 2>/dev/null)"

expect_eq "host B registers b1" ok \
	"$(reg "$SB_NS_B" hostB register b1 10.77.0.33 52:54:00:00:0b:01 open)"
wait_for 30 web_ok b1
expect_match "b1 (host B) reaches the internet" "hello from the internet" "$(web b1)"

# A host back from a restart sends its full list; the box converges.
expect_eq "host A registers a stale sandbox a3" ok \
	"$(reg "$SB_NS_A" hostA register a3 10.77.0.23 52:54:00:00:0a:03 none)"
expect_eq "host A resyncs with only a1" ok "$(reg "$SB_NS_A" hostA sync a1)"
expect_eq "... a3 is gone, a1 stays" "a1 10.77.0.21 ok" \
	"$(reg "$SB_NS_A" hostA list | tr '\n' ' ' | sed 's/ $//')"
expect_match "... host B's b1 is untouched" "^b1 10.77.0.33" "$(reg "$SB_NS_B" hostB list)"
expect_eq "host A removes a1" ok "$(reg "$SB_NS_A" hostA remove a1)"
wait_for 30 web_refused a1
expect_eq "after removal: a1 gets nothing out" "" "$(web a1)"
expect_match "b1 still reaches the internet" "hello from the internet" "$(web b1)"
kill -TERM "$GW_PID" 2>/dev/null; wait "$GW_PID" 2>/dev/null
tap_done
