#!/usr/bin/env bash
# No member can take the gateway down for everyone through the control
# socket.  A verb that writes the configuration either leaves a
# configuration the loader takes or changes nothing (secret set keeps
# every key it does not name, and a refused change is put back exactly);
# a caller whose name the loader would refuse is refused up front; a
# member sees only the errors that are about their own files; and a
# member holding idle connections cannot lock root out of the socket.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=msa$$ UB=msb$$ UC=msc$$ UD="msd$$@ex.test"
team_cleanup() {
	local u
	for u in "$UA" "$UB" "$UC" "$UD"; do userdel "$u" 2>/dev/null; done
}
topo_up || { not_ok "topology comes up"; team_cleanup; exit 1; }
trap 'rc=$?; team_cleanup; topo_down; exit $rc' EXIT
trap 'team_cleanup; topo_down; exit 130' INT
trap 'team_cleanup; topo_down; exit 143' TERM

bash gatewayd/install-users.sh
for u in $UA $UB $UC; do
	useradd -M -N -G moat -s /usr/sbin/nologin "$u" || { not_ok "useradd $u"; exit 1; }
done
# A name as SSSD hands them out: a user on this host, but not a name the
# configuration may hold.
useradd -M -N -G moat --badname -s /usr/sbin/nologin "$UD" || not_ok "useradd $UD"
MOATGID=$(getent group moat | cut -d: -f3)
NOUID=$((61000 + $$ % 1000))	# in group moat, no passwd entry
while getent passwd $NOUID >/dev/null; do NOUID=$((NOUID + 1)); done
as() { local u=$1; shift; runuser -u "$u" -- "$@"; }
actl() { as $UA build/gatewayd ctl -s "$GW_SOCK" "$@"; }
bctl() { as $UB build/gatewayd ctl -s "$GW_SOCK" "$@"; }
dctl() { as "$UD" build/gatewayd ctl -s "$GW_SOCK" "$@"; }
nctl() { setpriv --reuid=$NOUID --regid=$MOATGID --clear-groups build/gatewayd ctl -s "$GW_SOCK" "$@"; }
gw_check() { in_ns "$NS_GW" build/gatewayd -n -c "$GW_CONF" >/dev/null 2>&1; }
fileid() { stat -c '%a %U %G %s %Y' "$1"; }

chmod 711 "$TOPO_TMP"
STATE=$TOPO_TMP/state SECD=$TOPO_TMP/secrets.d
mkdir -p "$TOPO_TMP/sandboxes.d" "$STATE"
# member_max_egress "open": destroy's check below needs a member's open
# sandbox that an admin's exception names (the default lets members create
# allowlist sandboxes at most).
sed -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$STATE\";\n  member_max_egress = \"open\";|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
dropin() {	# dropin NAME ADDR MAC OWNER [EXTRA]
	printf 'mac = "%s";\naddress = "%s";\ntap = "mt-%s";\negress = "allowlist";\nallow = [ "api.bound.test" ];\nowner = "%s";\n%s' \
	    "$3" "$2" "$1" "$4" "${5:-}" >"$TOPO_TMP/sandboxes.d/$1.conf"
}
dropin a-web 10.77.0.10 52:54:00:00:00:0a $UA
dropin b-old 10.77.0.11 52:54:00:00:00:0b $UB
gw_start; expect_eq "gatewayd starts" 0 $?

# --- 4: secret set keeps what it does not name ----------------------------
VA=sk-a-$RANDOM$RANDOM VA2=sk-a2-$RANDOM$RANDOM VA3=sk-a3-$RANDOM$RANDOM
out=$(printf '%s\n' "$VA" | actl secret set akey --host api.bound.test --share $UB 2>&1)
expect_match "$UA sets a secret shared with $UB" "^secret akey: placeholder moat-akey-" "$out"
d=$SECD/akey.conf
# An admin narrows it by hand, with a note; $UB's sandbox uses it.
cat >>"$d" <<'EOF'
# admin: reads only, and not too many
requests = [ "GET /v1/*" ];
budget = { requests_per_minute = 5; };
EOF
dropin b-old 10.77.0.11 52:54:00:00:00:0b $UB 'secrets = [ "akey" ];'
expect_ok "the admin's edits load" gw_ctl reload
out=$(printf '%s\n' "$VA2" | actl secret set akey --host api.bound.test 2>&1)
expect_match "$UA rotates the value" "^secret akey: placeholder moat-akey-" "$out"
t=$(cat "$d")
expect_match "rotation keeps shared_with" "shared_with = \[ \"$UB\" \]" "$t"
expect_match "rotation keeps the admin's request rules" 'requests = \[ "GET /v1/\*" \];' "$t"
expect_match "rotation keeps the admin's budget" "budget = \{ requests_per_minute = 5; \};" "$t"
expect_match "rotation keeps the admin's comment" "# admin: reads only" "$t"
expect_eq "the new value is stored" "$VA2" "$(cat "$STATE/secrets/akey")"
expect_ok "the configuration on disk still loads (gatewayd -n)" gw_check
out=$(actl secret list --json)
expect_ok "the running config has the rules and the budget" python3 -c '
import json, sys
v = json.loads(sys.argv[1])[0]
assert v["requests"] == ["GET /v1/*"] and v["budget"]["requests_per_minute"] == 5, v
assert v["shared_with"] == [sys.argv[2]], v' "$out" "$UB"

# A change the configuration cannot take is refused and undone exactly:
# dropping $UB from shared_with while $UB's sandbox uses the secret.
before=$(cat "$d"); beforeid=$(fileid "$d"); vid=$(fileid "$STATE/secrets/akey")
reloads=$(gw_ctl status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["reloads"])')
out=$(printf '%s\n' "$VA3" | actl secret set akey --host api.bound.test --share $UC 2>&1); rc=$?
expect_eq "a change that would break $UB's sandbox is refused (exit 1)" 1 "$rc"
expect_match "... saying nothing was changed" "nothing was changed" "$out"
expect_eq "the drop-in is put back byte for byte" "$before" "$(cat "$d")"
expect_eq "... with its mode, owner and size" "$beforeid" "$(fileid "$d")"
expect_eq "the stored value is the previous one" "$VA2" "$(cat "$STATE/secrets/akey")"
expect_eq "... file and all" "$vid" "$(fileid "$STATE/secrets/akey")"
expect_ok "the configuration on disk still loads (gatewayd -n)" gw_check
expect_ok "a later reload works" gw_ctl reload
expect_eq "no hidden file is left beside the drop-ins" "" \
	"$(ls -A "$SECD" "$STATE/secrets" | grep '^\.')"
# 14: the refusal names nothing of $UB's.
expect_fail "... and names nothing of $UB's (sandbox, file, user)" \
	grep -qE "b-old|sandboxes.d|$UB" <<<"$out"
expect_match "... where an admin finds the details" \
	"sandbox \"b-old\": secrets: \"akey\" belongs to $UA and is not shared with $UB" "$(cat "$GW_LOG")"
# A new secret that cannot load leaves no file behind.
out=$(printf 'v\n' | actl secret set a-new --host api.bound.test --share "$UC" 2>&1)
expect_match "$UA adds another secret" "^secret a-new: placeholder" "$out"

# An admin keeps a secret's value in the state folder under another name;
# a member's new secret of that name must not replace the value.
VCO=sk-company-$RANDOM$RANDOM
install -m 0600 /dev/stdin "$STATE/secrets/acme" <<<"$VCO"
printf 'name = "company";\nfile = "%s";\nhosts = [ "api.bound.test" ];\nheader = "X-Company";\nplaceholder = "moat-company-4f1d";\n' \
    "$STATE/secrets/acme" >"$SECD/company.conf"
expect_ok "the admin's secret loads" gw_ctl reload
out=$(printf 'sk-mine\n' | bctl secret set acme --host api.bound.test 2>&1); rc=$?
expect_eq "$UB's new secret named after the company secret's value file is refused (exit 1)" 1 "$rc"
# A member gets the one answer for every name they cannot have: another
# member's secret, an admin's, or a value file in use (84-secret-same-answer).
expect_match "... with the answer for any name not theirs to take" 'the name "acme" is not available to you; choose another name' "$out"
expect_eq "the company secret's value is untouched" "$VCO" "$(cat "$STATE/secrets/acme")"
expect_fail "... and no drop-in is written" test -e "$SECD/acme.conf"
rm -f "$SECD/company.conf" "$SECD/acme.conf" "$STATE/secrets/acme"
expect_ok "the admin takes the company secret away" gw_ctl reload

# A member owns at most 32 secrets: each is one more drop-in that every
# reload loads and checks against every other one (with a few thousand,
# each reload held gatewayd for seconds).
owned() { actl secret list --json | python3 -c 'import json,sys
print(sum(1 for s in json.load(sys.stdin) if s["owner"] == sys.argv[1]))' "$UA"; }
n0=$(owned); rc=0
for i in $(seq 1 40); do
	out=$(printf 'v\n' | actl secret set "q$i" --host api.bound.test 2>&1) || { rc=1; break; }
done
expect_eq "$UA's secret set is refused once they own 32 (had $n0)" "1 32" "$rc $(owned)"
expect_match "... saying so" "you own 32 secrets, the most a member may own is 32" "$out"
expect_fail "... and nothing is written" test -e "$SECD/q$i.conf"
out=$(printf 'v2\n' | actl secret set q1 --host api.bound.test 2>&1)
expect_match "at the limit, $UA still sets a new value for one of them" "^secret q1: placeholder" "$out"
out=$(printf 'v\n' | gw_ctl secret set q-root --host api.bound.test 2>&1)
expect_match "root is not limited" "^secret q-root: placeholder" "$out"
rm -f "$SECD"/q*.conf "$STATE"/secrets/q*
expect_ok "the admin takes them away" gw_ctl reload

# --- 14: a member's reload shows only what is theirs ----------------------
printf 'name = "b-bad";\nmac = "52:54:00:00:00:0c";\naddress = "10.77.0.12";\ntap = "mt-b-bad";\negress = "sideways";\nowner = "%s";\nsecrets = [ "akey" ];\n' \
    "$UB" >"$TOPO_TMP/sandboxes.d/b-bad.conf"
cp "$TOPO_TMP/sandboxes.d/a-web.conf" "$TOPO_TMP/a-web.saved"
sed -i 's/^egress = .*/egress = "upward";/' "$TOPO_TMP/sandboxes.d/a-web.conf"
out=$(actl reload 2>&1); rc=$?
expect_eq "$UA's reload of a broken configuration fails (exit 1)" 1 "$rc"
expect_match "... showing the error in $UA's own drop-in" \
	"sandboxes.d/a-web.conf:4: .*egress.*upward" "$out"
expect_match "... with a message for members" "an administrator" "$out"
expect_fail "... and nothing of $UB's drop-ins, sandboxes or secrets" \
	grep -qE "b-bad|$UB|sideways" <<<"$out"
out=$(as $UA build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" list 2>&1)
expect_match "$UA's provision list (run by gatewayd) says an administrator must fix it" "an administrator" "$out"
expect_fail "... and names nothing of $UB's" grep -qE "b-bad|$UB|sideways" <<<"$out"
out=$(gw_ctl reload 2>&1)
expect_match "root's reload names the file, line and error" "sandboxes.d/b-bad.conf:5: .*egress" "$out"
expect_match "the journal has the full text" "b-bad.conf:5: .*egress" "$(cat "$GW_LOG")"
rm -f "$TOPO_TMP/sandboxes.d/b-bad.conf"
cp "$TOPO_TMP/a-web.saved" "$TOPO_TMP/sandboxes.d/a-web.conf"
expect_ok "fixed, the reload works again" gw_ctl reload

# --- 5: names the loader would refuse are refused up front ---------------
out=$(printf 'v\n' | nctl secret set nkey --host api.bound.test 2>&1); rc=$?
expect_eq "uid $NOUID (no passwd entry) cannot set a secret (exit 1)" 1 "$rc"
expect_match "... told why" "no login name" "$out"
expect_fail "... and no drop-in is written" test -e "$SECD/nkey.conf"
out=$(printf 'v\n' | dctl secret set dkey --host api.bound.test 2>&1); rc=$?
expect_eq "\"$UD\" cannot set a secret (exit 1)" 1 "$rc"
expect_match "... told why" "cannot own" "$out"
expect_fail "... and no drop-in is written" test -e "$SECD/dkey.conf"
echo "# placeholder kernel" >"$TOPO_TMP/vmlinuz"; chmod 0644 "$TOPO_TMP/vmlinuz"
out=$(nctl create n-x --kernel /dev/null --egress none 2>&1)
expect_match "uid $NOUID cannot create a sandbox" "no login name" "$out"
out=$(dctl create d-x --kernel /dev/null --egress none 2>&1)
expect_match "\"$UD\" cannot create a sandbox" "cannot own" "$out"
expect_ok "they may still look (sandboxes)" nctl sandboxes
expect_ok "the configuration on disk still loads (gatewayd -n)" gw_check

# --- 4: destroy cannot leave a configuration that does not load ------------
bpv() { as $UB build/provision -c "$GW_CONF" --run-dir "$TOPO_TMP" "$@"; }
out=$(bpv create b-x --kernel "$TOPO_TMP/vmlinuz" --egress open 2>&1)
expect_match "$UB creates b-x" "created b-x" "$out"
# An admin opens a LAN host to b-x.
cp "$GW_CONF" "$TOPO_TMP/moat.conf.saved"
sed -i 's|^  exceptions = ( );|  exceptions = ( { to = "192.168.77.5/32"; sandboxes = [ "b-x" ]; } );|' "$GW_CONF"
expect_ok "the admin's exception for b-x loads" gw_ctl reload
bx=$TOPO_TMP/sandboxes.d/b-x.conf; bxt=$(cat "$bx")
out=$(bpv destroy b-x 2>&1); rc=$?
expect_eq "destroying a sandbox an exception names is refused (exit 1)" 1 "$rc"
expect_match "... saying so" "not destroyed: the configuration would not load without it" "$out"
expect_eq "... and the drop-in is put back" "$bxt" "$(cat "$bx" 2>/dev/null)"
expect_ok "... and the guest's folder is kept" test -d "$STATE/guests/b-x"
expect_ok "the configuration on disk still loads (gatewayd -n)" gw_check
expect_match "b-x is still configured" "^b-x " "$(gw_ctl sandboxes)"
cp "$TOPO_TMP/moat.conf.saved" "$GW_CONF"
expect_ok "the admin takes the exception back" gw_ctl reload
out=$(bpv destroy b-x 2>&1)
expect_match "then $UB destroys b-x" "destroyed b-x" "$out"
expect_fail "... and its drop-in is gone" test -e "$bx"
expect_ok "the configuration on disk still loads (gatewayd -n)" gw_check

# --- 8: members cannot exhaust the control socket --------------------------
# hold.py SOCKET N -- open N connections, say nothing, and report how many
# the gateway still holds open after 1.5 s and after 11 s.
cat >"$TOPO_TMP/hold.py" <<'PY'
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
t0, socks = time.time(), []
for i in range(n):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)		# blocking: waits in the backlog
    except OSError:
        continue
    s.setblocking(False)
    socks.append(s)
print("connected", len(socks), flush=True)
def held(s):	# neither answered (an error line) nor hung up
    try:
        s.recv(100)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
time.sleep(max(0, t0 + 1.5 - time.time()))
print("held_at_1s", sum(held(s) for s in socks), flush=True)
time.sleep(max(0, t0 + 11 - time.time()))
print("held_at_10s", sum(held(s) for s in socks), flush=True)
PY
chmod 644 "$TOPO_TMP/hold.py"
hold() {	# hold USER N -- in the background, output in $TOPO_TMP/hold.USER
	as "$1" python3 "$TOPO_TMP/hold.py" "$GW_SOCK" "$2" >"$TOPO_TMP/hold.$1" 2>&1 &
	TOPO_PIDS+=($!)
}
held() { sed -n "s/^held_at_$2 //p" "$TOPO_TMP/hold.$1"; }
# UA first, so that its 8 are in before the others fill the members' 28
# (in a race, the last to connect could get fewer than 8).
hold $UA 40; wait_for 20 grep -q held_at_1s "$TOPO_TMP/hold.$UA"
hold $UB 10; hold $UC 10; hold "$UD" 10
for u in $UA $UB $UC "$UD"; do wait_for 20 grep -q held_at_1s "$TOPO_TMP/hold.$u"; done
out=$(timeout 5 build/gatewayd ctl -s "$GW_SOCK" status 2>&1); rc=$?
expect_eq "root's ctl status works while members hold 70 idle connections" 0 "$rc"
out=$(timeout 5 build/gatewayd ctl -s "$GW_SOCK" status 2>&1); rc=$?
expect_eq "... and again" 0 "$rc"
expect_eq "$UA's 40 connections are all answered (none left waiting)" \
	"connected 40" "$(grep connected "$TOPO_TMP/hold.$UA")"
expect_eq "$UA holds at most 8 (the rest are answered and closed at once)" 8 "$(held $UA 1s)"
total=$(( $(held $UA 1s) + $(held $UB 1s) + $(held $UC 1s) + $(held "$UD" 1s) ))
expect_eq "members together hold at most 28 of the 32 (4 kept for root)" 28 "$total"
out=$(timeout 5 runuser -u $UB -- build/gatewayd ctl -s "$GW_SOCK" sandboxes 2>&1); rc=$?
expect_eq "a member over the limit is refused with the reason" \
	"1:too many connections to gatewayd from your user; try again when one is done" "$rc:$out"
for u in $UA $UB $UC "$UD"; do wait_for 20 grep -q held_at_10s "$TOPO_TMP/hold.$u"; done
expect_eq "idle connections are closed after the deadline" "0 0 0 0" \
	"$(held $UA 10s) $(held $UB 10s) $(held $UC 10s) $(held "$UD" 10s)"
out=$(timeout 5 runuser -u $UB -- build/gatewayd ctl -s "$GW_SOCK" sandboxes 2>&1); rc=$?
expect_eq "then members' requests work again" 0 "$rc"
a=$(cat "$GW_AUDIT")
for v in "$VA" "$VA2" "$VA3"; do
	expect_fail "no secret value in the audit log or gatewayd's log" \
		grep -rqF "$v" "$GW_AUDIT" "$GW_LOG"
done
tap_done
