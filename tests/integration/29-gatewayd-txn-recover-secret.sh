#!/usr/bin/env bash
# A `secret set --share` killed halfway is undone at the next start.  A new
# secret's first file is its value in state_dir/secrets, so its journal
# lies there, not beside moat.conf.  gatewayd is killed (strace injects
# SIGKILL) in the reload that checks the change, the moment it opens the
# new drop-in, with both files in place: without recovery the next start
# would load a secret whose caller never got "ok".  The next start finds the journal in the state folder, removes both files,
# and starts.
cd "$(dirname "$0")/../.."
KEEP=${KEEP:-}
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

is() {	# is RC DESCRIPTION -- a pass when RC is 0
	local rc=$1; shift
	if [ "$rc" = 0 ]; then ok "$*"; else not_ok "$*"; fi
}

command -v strace >/dev/null || { not_ok "strace is installed (make deps): it kills gatewayd at a point"; tap_done; exit 1; }

topo_up || { not_ok "topology comes up"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
ETC=$TOPO_TMP/etc
STATE=$TOPO_TMP/state
mkdir -p "$ETC/sandboxes.d" "$ETC/secrets" "$STATE"
printf 'sk-admin-value\n' >"$ETC/secrets/admin"; chmod 600 "$ETC/secrets/admin"
GW_CONF=$ETC/moat.conf
cat >"$GW_CONF" <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/24"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
  state_dir = "$STATE";
};
secrets = ( { name = "admin"; file = "$ETC/secrets/admin";
  hosts = [ "api.example.test" ]; header = "Authorization";
  placeholder = "moat-admin-PLACEHOLDER"; } );
CONF
WEB=$ETC/sandboxes.d/web.conf
cat >"$WEB" <<'CONF'
# web: written by hand; this comment stays
mac = "52:54:00:00:00:0a"; address = "10.77.0.10"; tap = "mt-web";
egress = "allowlist"; allow = [ "example.test" ];
CONF
cp -p "$WEB" "$TOPO_TMP/web.before"
VALUE=$STATE/secrets/k
DROPIN=$ETC/secrets.d/k.conf

gw_start
is $? "gatewayd starts"

# Killed when the check's load opens the new drop-in: both files in place.
strace -qq -o /dev/null -p "$GW_PID" -e trace=openat,open -P "$DROPIN" \
	-e inject=openat,open:signal=SIGKILL:when=1 &
TRACER=$!
TOPO_PIDS+=("$TRACER")
wait_for 5 grep -q '^TracerPid:[[:space:]]*[1-9]' "/proc/$GW_PID/status"
printf 'sk-KILLED-value\n' | timeout 10 build/gatewayd ctl -s "$GW_SOCK" \
	secret set k --host api.example.test --share nosuchuser-zz \
	>"$TOPO_TMP/set.out" 2>&1
wait_for 10 bash -c "! kill -0 $GW_PID 2>/dev/null"
! kill -0 "$GW_PID" 2>/dev/null
is $? "gatewayd is killed in the middle of secret set"
! grep -q '^ok' "$TOPO_TMP/set.out"
is $? "the caller never got ok"
wait "$TRACER" 2>/dev/null

JOURNAL=$(ls "$STATE/secrets"/.moat-txn.* 2>/dev/null | head -1)
[ -n "$JOURNAL" ] && [ -e "$VALUE" ] && [ -e "$DROPIN" ]
is $? "the value, the drop-in and the journal (in state_dir/secrets) are left"
out=$(ip netns exec "$NS_GW" build/gatewayd -nv -c "$GW_CONF" 2>&1)
grep -q 'name = "k"' <<<"$out"
is $? "without recovery the unconfirmed secret k would be loaded"

# Journals recovery must not trust, planted beside it: one owned by
# nobody, and one of root naming a file outside moat's folders.  Each
# says a file "was created" by the cut-short change, so acting on it would
# delete the admin's secret value, or the file outside.
OUT=$TOPO_TMP/outside
mkdir -p "$OUT"
printf 'precious\n' >"$OUT/victim"
cp "$ETC/secrets/admin" "$TOPO_TMP/admin.before"
NOBODY_J=$ETC/secrets/.moat-txn.nobody
printf 'W %s\t%s\n' "$ETC/secrets/.admin.new.x" "$ETC/secrets/admin" >"$NOBODY_J"
chmod 600 "$NOBODY_J"; chown nobody "$NOBODY_J"
OUTSIDE_J=$ETC/.moat-txn.outside
printf 'W %s\t%s\n' "$OUT/.victim.new.x" "$OUT/victim" >"$OUTSIDE_J"
chmod 600 "$OUTSIDE_J"

: >"$GW_LOG"
gw_start
is $? "gatewayd starts again: the cut-short change is undone first"
[ ! -e "$VALUE" ] && [ ! -e "$DROPIN" ]
is $? "the new secret's value and drop-in are removed"
[ -z "$(ls -A "$STATE/secrets" 2>/dev/null)" ] && \
	[ -z "$(ls -A "$ETC/secrets.d" 2>/dev/null)" ] && \
	[ "$(ls -A "$ETC/secrets")" = "$(printf '.moat-txn.nobody\nadmin')" ]
is $? "no journal, staged or old file is left in either folder"
grep -q "configuration change was cut short ($STATE/secrets/.moat-txn" "$GW_LOG"
is $? "the log names the journal in the state folder"
cmp -s "$ETC/secrets/admin" "$TOPO_TMP/admin.before" && \
	[ "$(cat "$OUT/victim")" = precious ]
is $? "the planted journals' targets are untouched"
[ -e "$NOBODY_J" ] && [ -e "$OUTSIDE_J" ]
is $? "the planted journals are left in place"
grep -q "$NOBODY_J: a configuration journal that is not owned by root; left alone" "$GW_LOG" && \
	grep -q "$OUTSIDE_J: a configuration journal that names a path outside moat's configuration and state folders; left alone" "$GW_LOG"
is $? "the log says why each planted journal was refused"
[ "$(grep -c '"event":"config-journal-refused"' "$GW_AUDIT")" = 2 ] && \
	grep -q "\"journal\":\"$NOBODY_J\",\"reason\":\"is not owned by root\"" "$GW_AUDIT"
is $? "each refusal is an audit event"
! grep -rq 'sk-KILLED-value' "$GW_LOG" "$GW_AUDIT" 2>/dev/null
is $? "no secret value in the log or the audit"
! gw_ctl secret list 2>/dev/null | grep -q '^k\b'
is $? "the running configuration has no secret k"

# `ctl allow` for good goes through the same journaled writer: killed when
# the check's load opens the sandbox's file (its second open: the first
# reads it for the edit), the new list is in place and the journal beside
# it; the next start puts the file back as it was.
strace -qq -o /dev/null -p "$GW_PID" -e trace=openat,open -P "$WEB" \
	-e inject=openat,open:signal=SIGKILL:when=2 &
TRACER=$!
TOPO_PIDS+=("$TRACER")
wait_for 5 grep -q '^TracerPid:[[:space:]]*[1-9]' "/proc/$GW_PID/status"
timeout 10 build/gatewayd ctl -s "$GW_SOCK" allow web added.test \
	>"$TOPO_TMP/allow.out" 2>&1
wait_for 10 bash -c "! kill -0 $GW_PID 2>/dev/null"
! kill -0 "$GW_PID" 2>/dev/null && ! grep -q '^ok' "$TOPO_TMP/allow.out"
is $? "gatewayd is killed in the middle of ctl allow for good"
wait "$TRACER" 2>/dev/null
grep -q added.test "$WEB" && ls "$ETC/sandboxes.d"/.moat-txn.* >/dev/null 2>&1
is $? "the new list is in place, its journal beside it"
: >"$GW_LOG"
gw_start
is $? "gatewayd starts again"
cmp -s "$WEB" "$TOPO_TMP/web.before" && \
	[ "$(stat -c %a "$WEB")" = "$(stat -c %a "$TOPO_TMP/web.before")" ]
is $? "the sandbox's file is back as it was, comment and mode included"
[ -z "$(ls -A "$ETC/sandboxes.d" | grep '^\.')" ]
is $? "no journal, staged or old file is left in sandboxes.d"
grep -q "configuration change was cut short ($ETC/sandboxes.d/.moat-txn" "$GW_LOG"
is $? "the log names the journal in sandboxes.d"

tap_done
