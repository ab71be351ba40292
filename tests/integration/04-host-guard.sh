# The harness keeps tests out of the host's own moat folders: a test whose
# config would send gatewayd to /var/lib/moat, /var/log/moat, /run/moat or
# /etc/moat goes red, naming the test and the key (tests/harness/host-guard.sh).
# Each case below is a small test script of its own, run as tests/run.sh
# runs one; it must fail, and say why.
. tests/harness/tap.sh
set -u
T=$(mktemp -d /tmp/moat-guard.XXXXXX)
trap 'rm -rf "$T"' EXIT

# fake NAME BODY -- a test script that sources the harness, then BODY
fake() {
	{
		echo '. tests/harness/tap.sh'
		echo '. tests/harness/topology.sh'
		echo '. tests/harness/gw.sh'
		echo 'topo_trap'
		printf '%s\n' "$2"
		echo 'tap_done'
	} >"$T/$1"
}
run_fake() {	# run_fake NAME -- its output; its status in $T/NAME.rc
	bash "$T/$1" >"$T/$1.out" 2>&1; echo $? >"$T/$1.rc"
	cat "$T/$1.out"
}

# The config of the old 25-gatewayd-reload-cut.sh: rewritten without the
# state folder the harness gave it, then reloaded.
OLD='gateway: {
  uplink  = "up0";
  network = "10.77.0.0/23";
  bridge  = "moat0";
  dns:   { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
};
sandboxes = ( );'
fake old-reload.sh "cat >\"\$GW_CONF\" <<'EOF'
$OLD
EOF
GW_SOCK=\$TOPO_TMP/none.sock
gw_ctl reload
ok 'reload done'"
out=$(run_fake old-reload.sh)
expect_eq "a reload of a config without state_dir fails its test" 1 "$(cat "$T/old-reload.sh.rc")"
expect_match "... with a 'not ok' naming the test" "^not ok - host-guard: old-reload.sh: " "$out"
expect_match "... and the missing key" "no gateway.state_dir: gatewayd would keep its CA, state and network.undo in the host's /var/lib/moat" "$out"

# A state_dir, a secret and a textfile in the host's folders, each named
# with its file and line.
fake paths.sh "cat >\"\$GW_CONF\" <<'EOF'
gateway: {
  uplink = \"up0\";
  state_dir = \"/var/lib/moat\";   # the host's
  metrics: { textfile = \"/var/lib/moat/../moat/m.prom\"; };
};
secrets = ( { name = \"k\"; file = \"/etc/moat/secrets/k\"; hosts = [ \"a.test\" ]; } );
EOF
host_guard_conf \"\$GW_CONF\" && ok 'guard passed'"
out=$(run_fake paths.sh)
expect_eq "state_dir, textfile and file in the host's folders fail the test" 1 "$(cat "$T/paths.sh.rc")"
expect_match "... state_dir named with file:line" 'host-guard: paths.sh: /tmp/[^ ]*/moat.conf:3: state_dir = "/var/lib/moat" lies in the host.s /var/lib/moat' "$out"
expect_match "... a path that only resolves there" 'moat.conf:4: textfile = "/var/lib/moat/../moat/m.prom" lies in the host.s /var/lib/moat' "$out"
expect_match "... a secret's file" "moat.conf:6: file = \"/etc/moat/secrets/k\" lies in the host.s /etc/moat" "$out"
expect_eq "... and nothing passed it" "" "$(grep 'guard passed' <<<"$out")"

# gatewayd started with moat_daemon, without -a or -s: their defaults are the
# host's.  Refused before any namespace is entered.
fake start.sh 'moat_daemon nosuchns build/gatewayd -d -c "$GW_CONF" -s "$TOPO_TMP/s"
moat_daemon nosuchns build/gatewayd -d -c "$GW_CONF" -a /var/log/moat/audit.log -s "$TOPO_TMP/s"
ok "started"'
out=$(run_fake start.sh)
expect_eq "gatewayd started without its own audit log fails the test" 1 "$(cat "$T/start.sh.rc")"
expect_match "... naming -a and the host's folder" "host-guard: start.sh: gatewayd started without -a: its default is in the host's /var/log/moat" "$out"
expect_match "... and an -a in the host's folder" "host-guard: start.sh: gatewayd's -a /var/log/moat/audit.log lies in the host's /var/log/moat" "$out"

# What the harness writes passes: gw_own_state's state folder, comments
# naming the host's folders, paths in the run's own folder.
fake good.sh "cat >\"\$GW_CONF\" <<'EOF'
$OLD
# state_dir = \"/var/lib/moat\";  (the default, a comment)
EOF
gw_own_state
host_guard_conf \"\$GW_CONF\" && ok 'guard passed'"
out=$(run_fake good.sh)
expect_eq "a config with the harness's state folder passes" 0 "$(cat "$T/good.sh.rc")"
expect_match "... the guard let it through" "^ok - guard passed" "$out"

# Under .ci/run the four folders are empty read-only mounts: a write fails
# at once, whatever they held before.
if [ "${MOAT_CI_HOST_GUARD:-}" = 1 ]; then
	for d in /etc/moat /var/lib/moat /var/log/moat /run/moat; do
		expect_match "CI: $d is read-only" "Read-only file system" "$(touch "$d/x" 2>&1)"
		expect_eq "CI: $d is empty" "" "$(ls -A "$d")"
	done
fi
tap_done
