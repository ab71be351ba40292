#!/usr/bin/env bash
# containment-check with interception on (moat.conf's shipped default): the
# gateway redirects a guest's tcp 80 and 443 to public addresses to its own
# proxy, which accepts the connection and only then refuses (a TLS alert,
# or an HTTP 403 of its own).  An allowlist guest scanning the public
# resolvers (9.9.9.9, 1.1.1.1, 8.8.8.8, routed to real stand-ins in the
# internet namespace) is contained, and every DoH probe says that the
# gateway's proxy refused it.  A proxy that forwards instead (it splices
# to the stand-in, whose certificate is its own) is a breach naming the
# far end; a dead uplink fails the control although the proxy still
# answers.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/cc-lib.sh

for b in "$CC_BIN" build/nft-rules build/moat-proxy; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
cc_topo || { not_ok "topology comes up"; exit 1; }
CONF=$TOPO_TMP/cc-intercept.conf
mkdir -p "$TOPO_TMP/state"
# proxy.intercept is left out: the shipped default (on) applies.
cat >"$CONF" <<CONF
gateway: {
  uplink  = "up0";
  network = "10.77.0.0/24";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; };
  treat_as_public = [ "203.0.113.0/24" ];
  exceptions = ( );
  state_dir = "$TOPO_TMP/state";
};
sandboxes = (
  { name = "web"; mac = "52:54:00:00:00:0a"; address = "10.77.0.10";
    tap = "mt-web"; egress = "allowlist"; allow = [ "allowed.test" ]; },
  { name = "g2"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11";
    tap = "mt-g2"; egress = "open"; }
);
CONF
expect_match "the config has interception on (the default)" 'intercept = true' \
	"$(in_ns "$NS_GW" build/gatewayd -nv -c "$CONF" 2>&1)"
# The stand-ins are real: DoH on 9.9.9.9 answers from the gateway's side.
out=$(in_ns "$NS_GW" curl -sk --max-time 5 https://9.9.9.9/ 2>&1)
expect_match "the resolver stand-in on 9.9.9.9:443 answers HTTPS" \
	'public resolver stand-in 9\.9\.9\.9' "$out"

in_ns "$NS_GW" sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0
policy() { in_ns "$NS_GW" build/nft-rules -c "$CONF" --proxy-user nobody apply >/dev/null 2>&1; }
proxy_up() {	# proxy_up CMD... -- the one proxy on 10.77.0.1:3128
	[ -n "${PXPID:-}" ] && { kill $PXPID; wait $PXPID 2>/dev/null; }
	ip netns exec "$NS_GW" "$@" >"$TOPO_TMP/proxy.log" 2>&1 &
	PXPID=$!; TOPO_PIDS+=($PXPID)
	topo_wait_port "$NS_GW" $GW_ADDR 3128
}
policy || { not_ok "policy applies"; tap_done; exit 1; }
proxy_up build/moat-proxy -d -v -c "$CONF" --user nobody || not_ok "moat-proxy starts"

# The allowlist guest's scan: the control is an allowlisted name, which the
# proxy fetches; the bypass probes go to the built-in public resolvers.
CC_ARGS=(--expect allowlist --internet allowed.test:80 --target $LAN_HOST
	--treat-as-public 203.0.113.0/24 --allow-name allowed.test
	--deny-name denied.test --rebind-name safe.test)
cc_scan web -v
expect_eq "allowlist guest, interception on: contained, exit 0" 0 "$CC_RC"
[ "$CC_RC" = 0 ] || echo "# $(cc_q "[(x['class'], x['target'], x['evidence'], x['what']) for x in rs if x['outcome'] in ('BREACH', 'FAILED')]")"
expect_eq "allowlist guest, interception on: 0 breaches" 0 "$(cc_q 'r["breaches"]')"
for a in $PUBLIC_RESOLVERS; do
	expect_eq "$a:443 (DoH): refused by the gateway's proxy at TLS, not a breach" \
		"ok proxy-refused refused by the gateway's proxy: TLS alert access_denied" \
		"$(cc_q "' '.join(next(((x['outcome'], x['verdict'], x['evidence']) for x in rs if x['target']=='$a:443' and x['proto']=='tcp'), ('missing',)))")"
	expect_eq "$a:53 and :853 (DNS, DoT): blocked by the gateway" True \
		"$(cc_q "sorted(x['verdict'] for x in rs if x['target'] in ('$a:53', '$a:853')) == ['blocked'] * 3")"
done
expect_eq "the control passes on the far end's own answer, not the proxy's" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='$INET_HTTP:80' and x['outcome']=='pass' and 'HTTP 200, not written by' in x['evidence'] for x in rs)")"
# The human report says the same, line by line.
out=$(ip netns exec "$TOPO-web" "$CC_BIN" "${CC_ARGS[@]}" 2>&1)
for a in $PUBLIC_RESOLVERS; do
	expect_match "human report: $a:443 refused by the gateway's proxy" \
		"ok +tcp +${a//./\\.}:443 +proxy-refused +refused by the gateway's proxy: TLS alert access_denied +\[DNS over HTTPS \(port\)\]" "$out"
done
expect_match "human report: contained" 'verdict: contained$' "$out"
# The summary says what each count is; a clean scan has no word that
# reads like a warning (the spoofing probes' silence, the policy's own,
# used to show as "silent drops", explained as possible rate limiting).
expect_match "human report: the summary names the gateway's refusals and the expected filtered probes" \
	'^[0-9]+ probes in [0-9.]+ s: 0 breaches, 0 failed controls, [1-9][0-9]* controls passed, [1-9][0-9]* refused by the gateway, [0-9]+ filtered \(expected\), [0-9]+ not run$' "$out"
expect_eq "human report: nothing in a clean scan reads like a warning" "" \
	"$(grep -Ei 'silent|rate.limit|warn' <<<"$out"; grep -E 'BREACH|FAILED' <<<"$out")"
# (How many refusals arrive before a probe stops waiting depends on the
# machine's load: the split between refused and filtered is not asserted.)
expect_eq "--json: the summary's counts add up to the probes" True \
	"$(cc_q "r['breaches'] + r['failed_controls'] + r['controls_passed'] + r['refused'] + r['filtered'] <= r['probes'] and r['refused'] > 0 and r['refused'] + r['filtered'] > 60000")"
expect_match "the proxy refused for want of a server name" \
	'no server name \(allowlist needs one\)' "$(cat "$TOPO_TMP/proxy.log")"

# Dead uplink: the proxy still accepts the control's connection and
# answers it (a refusal of its own once the dial fails, or silence while
# it waits); that is not the internet, so the control fails.
ip -n "$NS_GW" link set up0 down
cc_scan web
expect_eq "dead uplink: exit 1" 1 "$CC_RC"
expect_eq "dead uplink: the control fails although the proxy accepted it" True \
	"$(cc_q "any(x['class']=='controls' and x['target']=='$INET_HTTP:80' and x['outcome']=='FAILED' and x['verdict'] in ('proxy-refused', 'connected') for x in rs)")"
echo "# dead uplink control: $(cc_q "[x['evidence'] for x in rs if x['class']=='controls' and x['target']=='$INET_HTTP:80']")"
ip -n "$NS_GW" link set up0 up
ip -n "$NS_GW" route replace default via $INET_ADDR	# went with the link

# Mutation: a proxy that forwards instead of refusing (root, so the output
# chain does not hold it; the rule that lets only the proxy's user answer
# guests from its port goes too).  The TLS handshake completes with the
# stand-in's own certificate: the far end, a breach at each resolver.
proxy_up python3 tests/harness/naive-proxy.py $GW_ADDR 3128 || not_ok "forwarding proxy starts"
h=$(in_ns "$NS_GW" nft -a list chain inet moat output | sed -n 's/.*tcp sport 3128 goto drop_svcreply # handle \([0-9]*\)/\1/p')
expect_ok "mutation: the svcreply rule for the proxy's port is removed" \
	in_ns "$NS_GW" nft delete rule inet moat output handle "${h:-0}"
cc_scan web --timeout 3000	# room for the handshake and the DoH answer
expect_eq "mutation 'proxy forwards TLS': exit 1" 1 "$CC_RC"
for a in $PUBLIC_RESOLVERS; do
	expect_eq "mutation 'proxy forwards TLS': $a:443 breach names the far end's certificate" True \
		"$(cc_q "any(x['outcome']=='BREACH' and x['class']=='dns-bypass' and x['target']=='$a:443' and 'CN=public-resolver.test, not the gateway' in x['evidence'] for x in rs)")"
done
expect_eq "mutation 'proxy forwards TLS': the DoH answer is in the evidence" True \
	"$(cc_q "any(x['target'].endswith(':443') and 'DoH answer: NOERROR' in x['evidence'] for x in rs)")"

tap_done
