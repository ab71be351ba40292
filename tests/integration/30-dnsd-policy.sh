#!/usr/bin/env bash
# dnsd from the guests' side with real dig: per-sandbox policy (none /
# allowlist / open), wildcards, REFUSED with EDE, AAAA empty, the DoH
# canary, rebinding strip (A and HTTPS hints), CNAME chains, TCP and
# truncation, hostile packets, unknown sources, and the sandboxing of
# the resolver process (own user, no capabilities, seccomp).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/dns-lib.sh

dns_topology || { not_ok "topology comes up"; exit 1; }
dns_conf
dns_upstream 203.0.113.53 || not_ok "test upstream starts"
dns_start --no-nft || { not_ok "dnsd starts" "$(dns_log)"; exit 1; }
ok "dnsd serves on $GW_ADDR:53"
# The log's budget starts full: a burst of refusals right after the start
# is logged line by line (it used to start empty, so the first lines after
# a start could be dropped, depending on how soon the queries came).
in_ns "$TOPO-locked" dig @"$GW_ADDR" +time=8 +tries=1 +short \
	b1.test b2.test b3.test b4.test b5.test b6.test b7.test b8.test >/dev/null 2>&1
burst() { grep -c "sandbox locked: refused A b[1-8].test.: egress none" "$TOPO_TMP/dnsd.log"; }
wait_for 10 eval '[ "$(burst)" -ge 8 ]'
expect_eq "a burst of 8 refusals right after the start: each logged" 8 "$(burst)"

# --- policy per mode ------------------------------------------------------
out=$(qdig web pypi.org)
expect_eq "allowlist: exact name answered" "NOERROR 203.0.113.10" \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
out=$(qdig web PyPI.Org.)
expect_eq "allowlist: case is ignored" "NOERROR" "$(rcode_of <<<"$out")"
out=$(qdig web deep.x.github.test)
expect_eq "allowlist: *.github.test matches two levels down" \
	"NOERROR 203.0.113.11" "$(rcode_of <<<"$out") $(answers_of <<<"$out")"
out=$(qdig web github.test)
expect_eq "allowlist: *.github.test does not match github.test" "REFUSED" \
	"$(rcode_of <<<"$out")"
out=$(qdig web denied.test)
expect_eq "allowlist: other name REFUSED" "REFUSED" "$(rcode_of <<<"$out")"
expect_match "refusal carries EDE 15 (Blocked)" "EDE: 15 \(Blocked\)" "$out"
# The refusal names the whole command, even for a 253-character name (the
# text used to stop at 128 bytes: "gatewayd ctl allow web aaa...a" named
# another host).  A client whose payload size leaves no room gets TC and
# the EDE code, and over TCP the whole text.
l63=$(printf 'a%.0s' $(seq 63)); long="$l63.$l63.$l63.$(printf 'b%.0s' $(seq 56)).test"
expect_eq "the long name has 253 characters" 253 "${#long}"
out=$(qdig web "$long")
expect_eq "253-character name: REFUSED" "REFUSED" "$(rcode_of <<<"$out")"
expect_match "...and dig's EDE line carries the whole command" \
	"EDE: 15 \(Blocked\): \(sandbox web may not resolve $long \(not on the allow list\); ask the operator: gatewayd ctl allow web $long\)\$" \
	"$out"
out=$(qdig web +bufsize=512 +ignore "$long")
expect_match "...a 512-byte client gets TC by UDP" "flags:.* tc" "$out"
expect_match "...with the EDE code, within its 512 bytes" "EDE: 15 \(Blocked\)" "$out"
expect_match "...and the message fits" "MSG SIZE  rcvd: ([1-4][0-9][0-9]|5(0[0-9]|1[0-2]))\$" "$out"
out=$(qdig web +bufsize=512 "$long")
expect_match "...and over TCP the whole command" \
	"ask the operator: gatewayd ctl allow web $long\)\$" "$out"
# The log line may follow the answer: wait for it (or fail below).
wait_for 20 grep -qF "sandbox web: refused A denied.test.: not on the allow list" "$TOPO_TMP/dnsd.log"
expect_match "refusal is logged with sandbox, name and reason" \
	"sandbox web: refused A denied.test.: not on the allow list" "$(dns_log)"
out=$(qdig locked pypi.org)
expect_eq "none: every name REFUSED" "REFUSED" "$(rcode_of <<<"$out")"
wait_for 20 grep -qF "sandbox locked: refused A pypi.org.: egress none" "$TOPO_TMP/dnsd.log"
expect_match "none: logged" "sandbox locked: refused A pypi.org.: egress none" "$(dns_log)"
out=$(qdig dev denied.test)
expect_eq "open: any name answered" "NOERROR 203.0.113.20" \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
out=$(qdig dev no-such-name.test)
expect_eq "open: NXDOMAIN passed through" "NXDOMAIN" "$(rcode_of <<<"$out")"

# --- special answers --------------------------------------------------------
out=$(qdig dev open.test AAAA)
expect_eq "AAAA gets an empty NOERROR answer" "NOERROR 0" \
	"$(rcode_of <<<"$out") $(grep -v '^;' <<<"$out" | grep -c 'IN.AAAA')"
expect_eq "AAAA never reaches the upstream" "0" \
	"$(grep -c '^open.test 28 ' "$DNS_UPLOG")"
out=$(qdig web use-application-dns.net)
expect_eq "use-application-dns.net is NXDOMAIN (allowlist sandbox)" "NXDOMAIN" "$(rcode_of <<<"$out")"
out=$(qdig dev use-application-dns.net)
expect_eq "use-application-dns.net is NXDOMAIN (open sandbox)" "NXDOMAIN" "$(rcode_of <<<"$out")"

# --- rebinding ------------------------------------------------------------
out=$(qdig dev rebind.test)
expect_eq "rebinding: private-only answer is emptied" "NOERROR " \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
expect_match "rebinding: empty answer tagged EDE 15" "EDE: 15 \(Blocked\)" "$out"
out=$(qdig web rebind.github.test)
expect_eq "rebinding: also for an allowed name" "NOERROR " \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
out=$(qdig dev mixed.test)
expect_eq "rebinding: private records removed one by one" "203.0.113.40" \
	"$(answers_of <<<"$out")"
out=$(qdig dev meta.test)
expect_eq "rebinding: link-local metadata address stripped" "" "$(answers_of <<<"$out")"
out=$(qdig dev https.test HTTPS)
expect_match "rebinding: HTTPS ipv4hint keeps only the public address" \
	'ipv4hint=203\.0\.113\.10$' "$(grep -E 'IN.HTTPS' <<<"$out" | grep -v '^;')"
expect_match "rebinding is logged" "sandbox dev: rebind.test.: 1 private record" "$(dns_log)"

# --- CNAME chains ---------------------------------------------------------
out=$(qdig web www.github.test)
expect_eq "CNAME chain followed; records off the chain dropped" \
	"203.0.113.30 203.0.113.31" "$(answers_of <<<"$out")"
expect_eq "CNAME chain: both CNAMEs returned" "2" "$(grep -c 'IN.CNAME' <<<"$out")"

# --- TCP and truncation -------------------------------------------------------
out=$(qdig dev +tcp open.test)
expect_eq "TCP query answered" "NOERROR 203.0.113.10" \
	"$(rcode_of <<<"$out") $(answers_of <<<"$out")"
out=$(qdig dev +noedns +ignore big.test)
expect_match "UDP without EDNS: >512 bytes comes back truncated (tc)" "flags: qr tc" "$out"
expect_match "truncated answer fits 512 bytes" "MSG SIZE  rcvd: ([0-9]|[1-9][0-9]|[1-4][0-9][0-9]|50[0-9]|51[0-2])$" "$out"
out=$(qdig dev big.test)
expect_eq "same name with EDNS fits: 40 records" "40" "$(answers_of <<<"$out" | wc -w)"
out=$(qdig dev +noedns big.test)
expect_eq "dig retries over TCP and gets all 40" "40" "$(answers_of <<<"$out" | wc -w)"
out=$(qdig dev tc.test)
expect_eq "upstream TC: dnsd asks again over TCP" "203.0.113.50" "$(answers_of <<<"$out")"
expect_eq "upstream saw the TCP retry" "1" "$(grep -c '^tc.test 1 tcp' "$DNS_UPLOG")"

# --- hostile and odd packets ---------------------------------------------
raw() {	# raw GUEST HEX -- send one UDP datagram, print the reply's hex
	in_ns "$TOPO-$1" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
s.sendto(bytes.fromhex(sys.argv[1]), ("10.77.0.1", 53))
try: print(s.recv(65535).hex())
except socket.timeout: print("timeout")' "$2"
}
hdr=123401000001000000000000
expect_match "compression-pointer loop gets FORMERR" "^12348.01" \
	"$(raw dev ${hdr}c00c00010001)"
expect_match "zero questions get FORMERR" "^12348.01" \
	"$(raw dev 123401000000000000000000)"
expect_match "two questions get FORMERR" "^12348.01" \
	"$(raw dev 12340100000200000000000003666f6f0000010001036261720000010001)"
expect_match "truncated question gets FORMERR" "^12348.01" "$(raw dev ${hdr}03666f)"
expect_eq "a response sent to dnsd is dropped (no reflection)" "timeout" \
	"$(raw dev 123481800001000000000000036f72670000010001)"
expect_eq "a 5-byte datagram is dropped" "timeout" "$(raw dev 1234010000)"
expect_match "ANY gets NOTIMP" "^1234....0001" \
	"$(raw dev ${hdr}046f70656e04746573740000ff0001)"
expect_match "opcode NOTIFY gets NOTIMP" "^1234a..4" \
	"$(raw dev 123420000001000000000000046f70656e0474657374000001000100)"
expect_match "CHAOS class gets NOTIMP" "^12348..4" \
	"$(raw dev ${hdr}0776657273696f6e0462696e640000100003)"
big=$(head -c 3000 /dev/urandom | od -An -tx1 | tr -d ' \n')
raw dev "1234010000010000000000${big}" >/dev/null
expect_ok "dnsd is alive after hostile packets" kill -0 "$DNSD_PID"
out=$(qdig dev open.test)
expect_eq "and still answers" "NOERROR" "$(rcode_of <<<"$out")"

# --- who asks ---------------------------------------------------------------
out=$(in_ns "$NS_GW" dig @$GW_ADDR +time=8 +tries=1 open.test 2>&1)
expect_eq "a source that is not a sandbox is REFUSED" "REFUSED" "$(rcode_of <<<"$out")"

# --- the resolver process ---------------------------------------------------
child=$(pgrep -P "$(pgrep -f "^$DNSD -c $DNS_CONF" | head -1)" | head -1)
[ -z "$child" ] && child=$(pgrep -f "^$DNSD -c $DNS_CONF" | tail -1)
expect_eq "resolver runs as its own user ($DNS_USER)" "$DNS_USER" "$(ps -o user= -p "$child" | tr -d ' ')"
expect_eq "resolver has no effective capabilities" "0000000000000000" \
	"$(awk '/^CapEff/ {print $2}' /proc/$child/status)"
expect_eq "resolver has no permitted capabilities" "0000000000000000" \
	"$(awk '/^CapPrm/ {print $2}' /proc/$child/status)"
expect_eq "resolver runs under a seccomp filter" "2" \
	"$(awk '/^Seccomp:/ {print $2}' /proc/$child/status)"
expect_eq "resolver has no_new_privs" "1" \
	"$(awk '/^NoNewPrivs/ {print $2}' /proc/$child/status)"
expect_eq "the resolver never crashed or restarted" "" \
	"$(grep -E 'resolver exited|ERROR: AddressSanitizer|runtime error' "$TOPO_TMP/dnsd.log")"
tap_done
