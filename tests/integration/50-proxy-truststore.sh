#!/usr/bin/env bash
# moat-proxy opens no file once it serves: its seccomp filter has no
# open() or openat(), so the upstream trust store is read whole before.
# Here the trust store is a c_rehash'd directory ($SSL_CERT_DIR) holding
# the test CA, the kind OpenSSL would otherwise read lazily while
# verifying.  An upstream signed by that CA is verified and served; one
# signed by another CA is refused; strace, attached throughout, sees no
# open and only AF_INET/AF_INET6 sockets; the proxy survives both.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/proxy-lib.sh

command -v strace >/dev/null || { echo "1..0 # SKIP strace not installed"; exit 0; }
topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest inspect 10.77.0.13 52:54:00:00:00:0d mt-inspect
proxy_certs || not_ok "test certificates"
# other.test's certificate comes from a CA the proxy does not trust.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -subj "/CN=moat test rogue CA" -days 2 -keyout "$PX_DIR/rogue.key" \
    -out "$PX_DIR/rogue.crt" 2>/dev/null &&
openssl x509 -req -in "$PX_DIR/other.test.csr" -CA "$PX_DIR/rogue.crt" \
    -CAkey "$PX_DIR/rogue.key" -CAcreateserial -days 2 \
    -extfile <(printf 'subjectAltName=DNS:other.test\n') \
    -out "$PX_DIR/other.test.crt" 2>/dev/null || not_ok "rogue certificate"
# Readable by the proxy's user too, as a system store is: only the
# filter, not the file's mode, keeps it from opening the files late.
hashed=$TOPO_PUB/hashed
mkdir -p "$hashed" && cp "$PX_DIR/testca.crt" "$hashed/" &&
openssl rehash "$hashed" 2>/dev/null && chmod -R a+rX "$hashed" ||
	not_ok "hashed CA directory"
proxy_conf "$TOPO_TMP/moat.conf"
proxy_servers || not_ok "test servers start"
# No --upstream-ca and no system bundle: the hashed directory alone.
topo_bg "$NS_GW" moat-proxy env SSL_CERT_DIR="$hashed" \
    SSL_CERT_FILE="$PX_DIR/no-such-bundle" "$PX_BIN" -d -v -v \
    -c "$TOPO_TMP/moat.conf"
topo_wait_port "$NS_GW" $GW_ADDR 3128 || { not_ok "moat-proxy starts"; tap_done; exit 1; }
cp "$PX_DIR/state/proxy-ca.crt" "$PX_DIR/bundle.crt"
pid=$(in_ns "$NS_GW" ss -Hltnp "src $GW_ADDR:3128" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
expect_eq "the proxy runs under a seccomp filter" "2" \
	"$(awk '/^Seccomp:/ {print $2}' /proc/$pid/status)"

strace -f -qq -e trace=open,openat,creat,socket -o "$TOPO_TMP/strace.out" -p "$pid" &
st=$!
TOPO_PIDS+=($st)
traced() { awk '/^TracerPid:/ { exit !($2 > 0) }' /proc/$pid/status; }
wait_for 20 traced || not_ok "strace attaches to the proxy"

out=$(px_curl inspect https://api.bound.test/echo)
expect_match "an upstream the hashed directory's CA signed is verified and served" \
	"GET /echo" "$out"
# Refused before the guest's handshake completes: a TLS alert to it.
out=$(px_curl inspect https://other.test/echo 2>&1)
expect_match "an upstream signed by another CA is refused" "alert access denied" "$out"
expect_match "... and the log says its certificate was not verified" \
	"other.test: upstream TLS failed: .*(unable to get local issuer|self.signed)" \
	"$(cat "$TOPO_TMP/moat-proxy.log")"
kill -INT $st 2>/dev/null; wait $st 2>/dev/null
expect_eq "the proxy opened no file while verifying" "" \
	"$(grep -E 'open(at)?\(|creat\(' "$TOPO_TMP/strace.out")"
expect_match "... and made sockets while traced (strace saw it work)" \
	'socket\(AF_INET' "$(cat "$TOPO_TMP/strace.out")"
expect_eq "... only AF_INET and AF_INET6 sockets" "" \
	"$(grep 'socket(' "$TOPO_TMP/strace.out" | grep -Ev 'socket\(AF_INET6?,')"
expect_ok "the proxy is still running" kill -0 "$pid"
expect_eq "no seccomp kill in its log" "" \
	"$(grep -i 'seccomp\|bad system call' "$TOPO_TMP/moat-proxy.log")"
tap_done
