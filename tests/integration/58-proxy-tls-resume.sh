#!/usr/bin/env bash
# moat-proxy: upstream TLS sessions are resumed, per sandbox.  The upstream
# is `openssl s_server -www` for api.bound.test (the secret "api" is bound
# there for the sandboxes "agent" and "listed"): its page says whether the
# handshake it answered was "New" or "Reused".  Two intercepted guest
# connections of "agent" one after the other: the first upstream handshake
# is in full, the second resumes the first's session.  A connection of
# "listed" -- another sandbox with the same secret bound -- is never given
# "agent"'s session: its first handshake is in full, its second resumes
# its own.  The secret is still injected (and scrubbed) on a resumed
# connection, its value is in no log, and the proxy logs each handshake
# (resumed or in full) and whether the kernel carries TLS records, or that
# it cannot here (fallback: user space).
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest agent 10.77.0.10 52:54:00:00:00:0a mt-agent
topo_guest listed 10.77.0.12 52:54:00:00:00:0c mt-listed
proxy_certs || not_ok "test certificates"
proxy_conf "$TOPO_TMP/moat.conf"
# "listed" may reach api.bound.test on 8443 as well
sed -i 's|allow = \[ "api.bound.test",|allow = [ "api.bound.test:tcp/443,tcp/8443",|' \
	"$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
# -www: the answer is a page describing the session, "New, ..." or
# "Reused, ..."; s_server issues TLS 1.3 tickets after each handshake.
topo_bg "$NS_INET" s_server openssl s_server -accept $PX_BOUND:8443 -www \
	-cert "$PX_DIR/api.bound.test.crt" -key "$PX_DIR/api.bound.test.key"
topo_wait_port "$NS_INET" $PX_BOUND 8443 || not_ok "s_server starts"
proxy_start "$TOPO_TMP/moat.conf" || { not_ok "moat-proxy starts"; tap_done; exit 1; }
PXLOG=$TOPO_TMP/moat-proxy.log

# page GUEST -- one intercepted request to s_server; its "New"/"Reused" line
page() {
	px_curl "$1" https://api.bound.test:8443/ -H "Authorization: Bearer $PX_PLACEHOLDER" |
		grep -oE '^(New|Reused), TLSv1\.[23]' | head -1
}
# handshakes GUEST HOW -- upstream handshakes to api.bound.test the proxy logged
handshakes() {
	grep -cE "^moat-proxy: ${1//./\\.}: api\.bound\.test: upstream TLS $2," "$PXLOG"
}

expect_eq "agent's first connection: the upstream handshake is in full" \
	"New, TLSv1.3" "$(page agent)"
expect_eq "agent's second connection resumes that session (s_server: Reused)" \
	"Reused, TLSv1.3" "$(page agent)"
expect_eq "... and a third" "Reused, TLSv1.3" "$(page agent)"
expect_eq "listed (another sandbox, the same secret bound): not agent's session" \
	"New, TLSv1.3" "$(page listed)"
expect_eq "... its second connection resumes its own" "Reused, TLSv1.3" "$(page listed)"
expect_eq "the proxy logged 2 resumed and 1 full for agent" "2 1" \
	"$(handshakes 10.77.0.10 resumed) $(handshakes 10.77.0.10 'in full')"
expect_eq "... and 1 resumed and 1 full for listed" "1 1" \
	"$(handshakes 10.77.0.12 resumed) $(handshakes 10.77.0.12 'in full')"

# --- injection and the scrubber on a resumed connection ---------------------
: >"$PX_DIR/bound.log"
for i in 1 2; do
	out=$(px_curl agent https://api.bound.test/echo -H "Authorization: Bearer $PX_PLACEHOLDER")
	expect_match "echo $i: the guest sees its placeholder" "Bearer $PX_PLACEHOLDER" "$out"
	expect_fail "... never the value" grep -qF "$PX_SECRET" <<<"$out"
done
expect_eq "both requests reached api.bound.test with the real value" 2 \
	"$(grep -c "^Authorization: Bearer $PX_SECRET" "$PX_DIR/bound.log")"
expect_match "the second of them went over a resumed session" \
	'10\.77\.0\.10: api\.bound\.test: upstream TLS resumed' \
	"$(grep -E 'api\.bound\.test: upstream TLS' "$PXLOG" | tail -1)"
expect_fail "the value is in no proxy log line" grep -qF "$PX_SECRET" "$PXLOG"

# --- kernel TLS, or the fallback -------------------------------------------
if in_ns "$NS_GW" test -e /proc/net/tls_stat; then
	expect_match "the kernel has TLS: the proxy says it is available" \
		'kernel TLS: available' "$(cat "$PXLOG")"
	expect_match "... and a connection's records went to the kernel" \
		'upstream TLS (resumed|in full), kernel TLS' "$(cat "$PXLOG")"
else
	expect_match "no TLS in this kernel: the proxy says so at start" \
		'kernel TLS: not available \(fallback: user space\)' "$(cat "$PXLOG")"
	expect_fail "... and no connection claims kernel TLS" \
		grep -qE '(upstream|guest) TLS.*, kernel TLS' "$PXLOG"
	expect_match "... each connection's records stay in user space" \
		'upstream TLS resumed, user-space TLS' "$(cat "$PXLOG")"
fi
tap_done
