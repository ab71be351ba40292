#!/usr/bin/env bash
# Grants: `gatewayd ctl allow` makes a refused name resolve and connect
# within a second, with the same dnsd and proxy workers and another
# sandbox's flows untouched; --for expires by itself and takes its set
# elements with it; a grant for good is written to the sandbox's file
# (comments and other keys kept) only if the whole configuration loads;
# a member grants within gateway.member_allow only, on their own
# sandboxes only, and is told who can grant the rest; members create
# nothing wider than gateway.member_max_egress.  The proxy workers take a
# grant alone: connections through them (a sandbox's own to names it
# keeps, another's spliced and read ones) go on; an unallow cuts only the
# connections to the name taken away.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mga$$ UB=mgb$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" || { not_ok "members $UA and $UB"; exit 1; }
as() { local u=$1; shift; runuser -u "$u" -- build/gatewayd ctl -s "$GW_SOCK" "$@"; }

topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest dev 10.77.0.11 52:54:00:00:00:0b mt-dev
topo_guest lab 10.77.0.13 52:54:00:00:00:0d mt-lab
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
# For connections through the proxy's explicit port: echo servers on port
# 80 (web's allow_ports) of the test DNS's deep.x.github.test and
# denied.test, and a keep-alive HTTP server for a connection whose
# requests the proxy reads.
for a in 203.0.113.11 203.0.113.20 203.0.113.200; do
	ip -n "$NS_INET" addr add $a/24 dev eth0
done
for a in 203.0.113.11 203.0.113.20; do
	topo_bg "$NS_INET" echo-$a socat TCP-LISTEN:80,bind=$a,fork,reuseaddr PIPE
	topo_wait_port "$NS_INET" $a 80
done
topo_bg "$NS_INET" keepalive python3 -c 'import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "5")
        self.end_headers(); self.wfile.write(b"kept\n")
http.server.ThreadingHTTPServer(("203.0.113.200", 80), H).serve_forever()'
topo_wait_port "$NS_INET" 203.0.113.200 80
chmod 711 "$TOPO_TMP"
sed -e "s/owner = \"alice\"/owner = \"$UA\"/" -e "s/owner = \"bob\"/owner = \"$UB\"/" \
    -e 's|^  exceptions = ( );|  exceptions = ( );\n  member_allow = [ "short.test", "*.member.test" ];|' \
	examples/demo.conf >"$GW_CONF"
# Interception off: the tcp 80 probes here test the kernel's forward
# chain (the sandboxes' sets), which interception would hand to the proxy.
sed -i 's/intercept = true;/intercept = false;/' "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d"
LAB=$TOPO_TMP/sandboxes.d/lab.conf
printf '%s\n' '# lab: written by hand; this comment stays' \
	'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-lab";' \
	'egress = "allowlist";' \
	'allow = [ "pypi.org" ];   # and so does this one' \
	"owner = \"$UA\";" >"$LAB"
chmod 0640 "$LAB"

gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
dig_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 +short @$GW_ADDR "$2" A; }
status_in() { in_ns "$TOPO-$1" dig +time=2 +tries=1 @$GW_ADDR "$2" A | grep -o 'status: [A-Z]*'; }
set_of() { in_ns "$NS_GW" nft list set inet moat "allow_$1"; }
ms() { date +%s%3N; }

# Connections through the proxy, held across the grants; each step sends
# once more on the same connection and records the answer.
tunnel() {	# tunnel NAME GUEST HOST:PORT STEPS -- a CONNECT tunnel (spliced)
	local n=$1 k gos=()
	for k in $(seq 0 $(($4 - 1))); do gos+=("$TOPO_TMP/go-$n-$k"); done
	in_ns $TOPO-$2 python3 tests/harness/echo-flow.py $GW_ADDR 3128 \
	    "$TOPO_TMP/res-$n" --connect "$3" "${gos[@]}" &
	TOPO_PIDS+=($!)
	wait_for 20 grep -qs before: "$TOPO_TMP/res-$n"
	expect_eq "$2 holds a tunnel to $3 through the proxy" "before:200 one" "$(cat "$TOPO_TMP/res-$n")"
}
httpflow() {	# httpflow NAME GUEST URL STEPS -- requests the proxy reads
	local n=$1 k gos=()
	for k in $(seq 0 $(($4 - 1))); do gos+=("$TOPO_TMP/go-$n-$k"); done
	in_ns $TOPO-$2 python3 tests/harness/http-flow.py $GW_ADDR 3128 "$3" \
	    "$TOPO_TMP/res-$n" "${gos[@]}" &
	TOPO_PIDS+=($!)
	wait_for 20 grep -qs before: "$TOPO_TMP/res-$n"
	expect_eq "$2 holds a connection to $3 through the proxy" "before:200 kept" "$(cat "$TOPO_TMP/res-$n")"
}
step() {	# step NAME K -- one more exchange on NAME; its answer
	touch "$TOPO_TMP/go-$1-$2"
	wait_for 20 grep -qs "after$2:" "$TOPO_TMP/res-$1"
	sed -n "s/^after$2://p" "$TOPO_TMP/res-$1"
}
tunnel w web deep.x.github.test:80 2
tunnel d dev deep.x.github.test:80 2
httpflow h dev http://203.0.113.200/ 2

# --- an admin grants for a while --------------------------------------------
expect_eq "web is refused open.test" "status: REFUSED" "$(status_in web open.test)"
expect_eq "web cannot reach its address" unreachable "$(tcp_probe $TOPO-web $INET_HTTP 80)"
# dev (open) holds a connection to the same server across the grants.
in_ns "$TOPO-dev" bash -c "exec 3<>/dev/tcp/$INET_HTTP/80; sleep 60" &
TOPO_PIDS+=($!)
dev_flow() { in_ns "$NS_GW" conntrack -L -s 10.77.0.11 -p tcp --dport 80 2>/dev/null | grep -c ESTABLISHED; }
has_dev_flow() { [ "$(dev_flow)" -ge 1 ]; }
wait_for 10 has_dev_flow
expect_eq "dev has its connection" 1 "$(dev_flow)"
DNSD=$(gw_child_pid dnsd); PROXY=$(gw_proxy_pids)
t0=$(ms)
out=$(gw_ctl allow web open.test --for 3s 2>&1)
expect_match "ctl allow --for answers" "^web may reach open\.test for 3s \(until " "$out"
resolves() { [ "$(dig_in web open.test)" = "$INET_HTTP" ]; }
reaches() { [ "$(tcp_probe $TOPO-web $INET_HTTP 80)" = connected ]; }
until { resolves && reaches; } || [ $(( $(ms) - t0 )) -gt 5000 ]; do sleep 0.05; done
dt=$(( $(ms) - t0 ))
if [ $dt -le 1000 ]; then ok "web resolves and connects within a second ($dt ms)"
else not_ok "web resolves and connects within a second" "$dt ms"; fi
expect_match "its address is in web's set" "$INET_HTTP timeout" "$(set_of web)"
expect_eq "dnsd was not restarted" "$DNSD" "$(gw_child_pid dnsd)"
expect_match "dnsd was sent web's new list alone, not a whole configuration" \
	"dnsd: sandbox web's allow list sent alone \\(3 names\\)" "$(cat "$GW_LOG")"
expect_eq "...and took it (no restart, no refusal)" "" "$(grep -E 'dnsd could not|restarting' "$GW_LOG")"
expect_eq "the proxy workers were not restarted (same pids)" "$PROXY" "$(gw_proxy_pids)"
expect_eq "dev's connection is untouched" 1 "$(dev_flow)"
expect_match "the grant is audited: who, what, how long" \
	'"event":"allow","uid":0,"user":"root","sandbox":"web","names":"open.test","for":"3s"' "$(cat "$GW_AUDIT")"
gone() { ! set_of web | grep -q "$INET_HTTP"; }
wait_for 10 gone
expect_ok "after 3 s the grant's set elements are gone (nft list set)" gone
expect_eq "...and the name is refused again" "status: REFUSED" "$(status_in web open.test)"
expect_eq "...and the address unreachable" unreachable "$(tcp_probe $TOPO-web $INET_HTTP 80)"
expect_match "the expiry is audited" '"event":"grant-expired","sandbox":"web","name":"open.test"' "$(cat "$GW_AUDIT")"
expect_eq "still the same dnsd" "$DNSD" "$(gw_child_pid dnsd)"
expect_eq "still the same proxy workers" "$PROXY" "$(gw_proxy_pids)"
expect_eq "the workers got web's list alone, at the grant and its expiry" 2 \
	"$(grep -c "proxy: sandbox web's allow list sent alone to $(wc -w <<<"$PROXY") worker(s)" "$GW_LOG")"
expect_eq "...not a configuration" 0 "$(grep -c 'reconfigured in place' "$GW_LOG")"
expect_eq "web's own tunnel through the proxy went on (grant and expiry)" step0 "$(step w 0)"
expect_eq "dev's spliced tunnel through the proxy went on" step0 "$(step d 0)"
expect_eq "dev's connection whose requests the proxy reads went on" "200 kept" "$(step h 0)"

# --- an unallow cuts what went through the name taken back, only that -------
expect_match "allow web denied.test --for 1m" '^web may reach denied\.test' \
	"$(gw_ctl allow web denied.test --for 1m 2>&1)"
tunnel n web denied.test:80 1
expect_match "unallow web denied.test" 'web no longer reaches denied\.test' \
	"$(gw_ctl unallow web denied.test 2>&1)"
expect_match "web's tunnel to denied.test is cut" "^(closed|error)" "$(step n 0)"
expect_match "...audited with its reason" \
	'"event":"cut","sandbox":"web".*"host":"denied.test","reason":"name no longer allowed"' \
	"$(grep '"event":"cut"' "$GW_AUDIT")"
expect_eq "...and nothing else was cut" 1 "$(grep -c '"event":"cut"' "$GW_AUDIT")"
expect_eq "web's tunnel to a name it keeps goes on" step1 "$(step w 1)"
expect_eq "dev's spliced tunnel goes on" step1 "$(step d 1)"
expect_eq "dev's read connection goes on" "200 kept" "$(step h 1)"
expect_eq "the same proxy workers after the unallow" "$PROXY" "$(gw_proxy_pids)"
expect_eq "...and the same dnsd" "$DNSD" "$(gw_child_pid dnsd)"

# --- names are checked as the configuration checks them --------------------------
out=$(gw_ctl allow web '*.test' 2>&1); rc=$?
expect_eq "a wildcard over a top-level domain is refused (exit 1)" 1 $rc
expect_match "...saying why" 'too broad' "$out"
expect_fail "a malformed name is refused" gw_ctl allow web 'bad..name'
expect_fail "an open sandbox needs no grant" gw_ctl allow dev open.test
out=$(gw_ctl allow web open.test 2>&1)
expect_match "a sandbox from moat.conf takes grants for a while only" 'defined in .*moat\.conf' "$out"

# --- a member, within member_allow -----------------------------------------------
expect_eq "lab is refused short.test" "status: REFUSED" "$(status_in lab short.test)"
before=$(md5sum <"$LAB")
out=$(as $UA allow lab denied.test 2>&1); rc=$?
expect_eq "a member's grant outside member_allow is refused (exit 1)" 1 $rc
expect_match "...naming the key and who can grant it" \
	'denied\.test is not in gateway\.member_allow.* root .*can: gatewayd ctl allow lab denied\.test' "$out"
expect_eq "...and nothing changed on disk" "$before" "$(md5sum <"$LAB")"
expect_eq "...nor in force" "status: REFUSED" "$(status_in lab denied.test)"
expect_fail "another member may not grant on lab" as $UB allow lab short.test
expect_match "...and is told there is no such sandbox of theirs" 'no sandbox lab' "$(as $UB allow lab short.test 2>&1)"
out=$(as $UA allow lab short.test 2>&1)
expect_match "the owner grants short.test for good (member_allow)" 'lab may reach short\.test \(written to its file\)' "$out"
expect_match "lab resolves it" "^$INET_HTTP\$" "$(dig_in lab short.test)"
expect_match "the file has it" 'allow = \[ "pypi.org", "short.test" \];   # and so does this one' "$(cat "$LAB")"
expect_match "its comments are kept" '^# lab: written by hand; this comment stays' "$(cat "$LAB")"
expect_eq "its mode is kept" 640 "$(stat -c %a "$LAB")"
expect_eq "no temporary file is left" "" "$(ls -A "$TOPO_TMP/sandboxes.d" | grep -v '^lab.conf$')"
expect_ok "the configuration on disk still loads" in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF"
out=$(as $UA allow lab a.member.test --for 1m 2>&1)
expect_match "a wildcard in member_allow covers names under it" 'lab may reach a\.member\.test for 1m' "$out"
expect_ok "reload" gw_ctl reload
expect_match "a grant for a while outlives a reload (answered, not refused)" 'status: NXDOMAIN' "$(status_in lab a.member.test)"
out=$(as $UA unallow lab a.member.test 2>&1)
expect_match "...and can be taken back after it" 'lab no longer reaches a\.member\.test' "$out"
out=$(as $UA unallow lab short.test 2>&1)
expect_match "unallow takes a grant for good back" 'lab no longer reaches short\.test' "$out"
expect_match "...from the file" 'allow = \[ "pypi.org" \];' "$(cat "$LAB")"
expect_eq "...and from lab" "status: REFUSED" "$(status_in lab short.test)"
expect_fail "unallow of a name never granted changes nothing" gw_ctl unallow lab never.test

# --- lists in the file, and grants for a while beside it ------------------------
mkdir -p "$TOPO_TMP/allow.d"; cp data/allow.d/pypi.list "$TOPO_TMP/allow.d/"
expect_match "allow lab @pypi (for good)" 'lab may reach pypi\.org, files\.pythonhosted\.org \(written' \
	"$(gw_ctl allow lab @pypi 2>&1)"
expect_match "...writes the list as named, to follow it" 'allow = \[ "pypi.org", "@pypi" \];' "$(cat "$LAB")"
expect_match "...and lab resolves its names" 'status: NOERROR' "$(in_ns "$TOPO-lab" dig +time=2 +tries=1 @$GW_ADDR files.pythonhosted.org A)"
out=$(gw_ctl unallow lab files.pythonhosted.org 2>&1)
expect_match "unallow of a name the file has through a list says so" 'comes from a list' "$out"
expect_match "...and changes nothing" 'allow = \[ "pypi.org", "@pypi" \];' "$(cat "$LAB")"
expect_match "a grant for a while beside it" 'lab may reach b\.member\.test for 1m' \
	"$(gw_ctl allow lab b.member.test --for 1m 2>&1)"
expect_match "...and a short one" 'lab may reach c\.member\.test for 8s' \
	"$(gw_ctl allow lab c.member.test --for 8s 2>&1)"
out=$(gw_ctl unallow lab @pypi 2>&1)
expect_match "unallow @pypi takes the list out of the file" 'lab no longer reaches files\.pythonhosted\.org' "$out"
expect_match "...not pypi.org, which the file has by name, saying so" "pypi\.org stays: it is in the sandbox's file" "$out"
expect_match "...leaving the file's list as before the list" 'allow = \[ "pypi.org" \];' "$(cat "$LAB")"
expect_eq "...and lab still resolves pypi.org" "status: NOERROR" "$(status_in lab pypi.org)"
expect_eq "...not files.pythonhosted.org" "status: REFUSED" "$(status_in lab files.pythonhosted.org)"
expect_match "ending one grant for a while" 'lab no longer reaches b\.member\.test' "$(gw_ctl unallow lab b.member.test 2>&1)"
expect_eq "...leaves the short one answered" "status: NXDOMAIN" "$(status_in lab c.member.test)"
c_refused() { [ "$(status_in lab c.member.test)" = "status: REFUSED" ]; }
wait_for 15 c_refused
expect_ok "...until it ends by itself" c_refused
expect_ok "reload" gw_ctl reload

# --- a grant the whole configuration refuses is rolled back ------------------------
cp "$LAB" "$TOPO_TMP/lab.before"
sed -i 's/mac = "52:54:00:00:00:0d"/mac = "52:54:00:00:00:0a"/' "$LAB"	# web's MAC: invalid
before=$(md5sum <"$LAB")
out=$(gw_ctl allow lab pypi.example 2>&1); rc=$?
expect_eq "a grant into an invalid configuration fails (exit 1)" 1 $rc
expect_match "...with the loader's file:line" 'lab\.conf:[0-9]+: ' "$out"
expect_eq "...and the file is as it was" "$before" "$(md5sum <"$LAB")"
expect_eq "...with nothing left beside it" "" "$(ls -A "$TOPO_TMP/sandboxes.d" | grep -v '^lab.conf$')"
cp "$TOPO_TMP/lab.before" "$LAB"

# --- member_max_egress ------------------------------------------------------------
out=$(as $UA create wide --egress open --kernel /nonexistent 2>&1)
expect_match "a member may not create an open sandbox (member_max_egress)" \
	'--egress open is wider than members may create here \(gateway\.member_max_egress = "allowlist"\)' "$out"

expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
tap_done
