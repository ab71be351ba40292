#!/usr/bin/env bash
# Every widening a member tried in the attack pass of issue 40 stays
# refused (regression).  gateway.member_allow is narrow: "*.pypi.test" and
# the list "@pypi".  Member $UA, on their own allowlist sandbox lab, asks
# for a wider wildcard, a list member_allow does not cover, ports outside
# the sandbox's allow_ports, names with quotes, backslashes and newlines,
# and durations of 0, below 0 and over a year; asks for grants on member
# $UB's sandbox zsb with names member_allow covers (the answer is byte
# for byte the one for a sandbox that does not exist); and tries secrets
# across members: a secret $UB shares with $UA, which $UA may attach but
# neither re-share nor re-point, which $UB may not detach from $UA's
# sandbox, nor stop sharing while $UA's sandbox holds it (--share).  Each is
# refused with its reason, and nothing changes: both sandboxes' files are
# byte-identical, `ctl grants` and lab's nft sets are as before, and the
# secrets' drop-ins and values are untouched.  A covered grant at the end
# shows that the same snapshot does see a change.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

UA=mwa$$ UB=mwb$$ UC=mwc$$
topo_up || { not_ok "topology"; exit 1; }
topo_members "$UA" "$UB" "$UC" || { not_ok "members $UA $UB $UC"; exit 1; }
CTL=$(topo_pub build/gatewayd)
as() { local u=$1; shift; runuser -u "$u" -- "$CTL" ctl -s "$GW_SOCK" "$@"; }
chmod 711 "$TOPO_TMP"
mkdir -p "$TOPO_TMP/allow.d" "$TOPO_TMP/sandboxes.d" "$TOPO_TMP/state"
cp data/allow.d/pypi.list data/allow.d/github.list "$TOPO_TMP/allow.d/"
S=$TOPO_TMP/secrets; mkdir -p "$S"; chmod 0700 "$S"
printf 'sk-ub-real-5a17\n' >"$S/bkey"; printf 'sk-ub-shared-93e2\n' >"$S/bshared"
chmod 0600 "$S"/*
sed -e "s|^  exceptions = ( );|  exceptions = ( );\n  state_dir = \"$TOPO_TMP/state\";\n  member_allow = [ \"*.pypi.test\", \"@pypi\" ];|" \
    -e '/^sandboxes = (/,$d' examples/demo.conf >"$GW_CONF"
cat >>"$GW_CONF" <<CONF
secrets = (
  { name = "bkey"; file = "$S/bkey"; hosts = [ "api.bound.test" ]; header = "X-B";
    placeholder = "moat-bkey-PLACEHOLDER"; owner = "$UB"; },
  { name = "bshared"; file = "$S/bshared"; hosts = [ "api.bound.test" ]; header = "X-S";
    placeholder = "moat-bshared-PLACEHOLDER"; owner = "$UB"; shared_with = [ "$UA" ]; }
);
CONF
LAB=$TOPO_TMP/sandboxes.d/lab.conf ZSB=$TOPO_TMP/sandboxes.d/zsb.conf
printf '%s\n' '# lab: $UA'"'"'s, by hand' \
	'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-lab";' \
	'egress = "allowlist";' 'allow = [ "pypi.org" ];' \
	"owner = \"$UA\";" >"$LAB"
printf '%s\n' 'mac = "52:54:00:00:00:0e"; address = "10.77.0.14"; tap = "mt-zsb";' \
	'egress = "allowlist";' 'allow = [ "pypi.org" ];' 'secrets = [ "bkey" ];' \
	"owner = \"$UB\";" >"$ZSB"
gw_start; expect_eq "gatewayd starts" 0 $?

# Everything a refused request could have changed.
snap() {
	sha256sum "$LAB" "$ZSB" "$GW_CONF" "$S"/*
	ls -A "$TOPO_TMP/sandboxes.d" "$TOPO_TMP/state"
	gw_ctl grants 2>&1
	gw_ctl secret list 2>&1
	in_ns "$NS_GW" nft list table inet moat | awk '/^\tset /,/^\t}/'	# sets, not counters
}
BASE=$(snap)
expect_match "the snapshot holds lab's set" 'set allow_lab' "$BASE"
expect_match "... and no grant" '^no grants$' "$BASE"
AUDIT0=$(grep -c '"event":"allow"' "$GW_AUDIT")

# refused DESCRIPTION REGEX ARGS... -- $UA's ctl ARGS exits 1, its answer
# matches REGEX, and nothing changed.
refused() {
	local d=$1 re=$2 out rc; shift 2
	out=$(as "$UA" "$@" 2>&1); rc=$?
	expect_eq "$d: refused (exit 1)" 1 "$rc"
	expect_match "... saying why" "$re" "$out"
	expect_eq "... and nothing changed" "$BASE" "$(snap)"
}
WHO='root can: gatewayd ctl allow lab'
NAME_RE='expected a fully qualified host name or "\*\." followed by one, got "'
for f in "" "--for 1m"; do
	# shellcheck disable=SC2086
	{
	refused "*.test, wider than *.pypi.test ${f:-(for good)}" \
		'^\*\.test: wildcard "\*\.test" is too broad: it covers the whole top-level domain "test"' \
		allow lab '*.test' $f
	refused "* ${f:-(for good)}" \
		'^\*: expected a fully qualified host name or "\*\." followed by one, got "\*"; nothing changed' \
		allow lab '*' $f
	refused "*.pythonhosted.org, wider than @pypi's files.pythonhosted.org ${f:-(for good)}" \
		"^\*\.pythonhosted\.org is not in gateway\.member_allow, so members may not grant it; $WHO \*\.pythonhosted\.org" \
		allow lab '*.pythonhosted.org' $f
	refused "*.pypi.org, wider than @pypi's pypi.org ${f:-(for good)}" \
		'^\*\.pypi\.org is not in gateway\.member_allow' allow lab '*.pypi.org' $f
	refused "*.pypi.test's parent pypi.test ${f:-(for good)}" \
		'pypi\.test is not in gateway\.member_allow' allow lab pypi.test $f
	refused "@github, a list member_allow does not cover ${f:-(for good)}" \
		'is not in gateway\.member_allow, so members may not grant it' allow lab @github $f
	refused "a covered name with a name that is not ${f:-(for good)}" \
		'evil\.test is not in gateway\.member_allow' allow lab a.pypi.test evil.test $f
	refused "--ports tcp/22, outside allow_ports ${f:-(for good)}" \
		"^--ports tcp/22: members may grant only ports among the sandbox's allow_ports, never wider; $WHO a\.pypi\.test --ports tcp/22" \
		allow lab a.pypi.test --ports tcp/22 $f
	refused "--ports tcp/443,udp/53, one outside ${f:-(for good)}" \
		"--ports tcp/443,udp/53: members may grant only ports among the sandbox's allow_ports" \
		allow lab a.pypi.test --ports tcp/443,udp/53 $f
	refused "--ports with a list ${f:-(for good)}" \
		'--ports applies to names, not to a list \(@pypi\); nothing changed' \
		allow lab @pypi --ports tcp/443 $f
	}
done
# Names that would end a string or a line in lab's file, each under a
# pattern member_allow covers: only the name's own check stops them.
for n in 'x.pypi.test"]; allow_ports = [ "tcp/22' 'x.pypi.test\' 'x\".pypi.test' \
    $'x.pypi.test\nallow_ports = [ "tcp/22" ];' $'x.pypi.test\r' "x'.pypi.test" \
    'x.pypi.test #' 'x..pypi.test' 'x.pypi.test/' 'x.pypi.test:tcp/22'; do
	refused "the name $(printf %q "$n")" "$NAME_RE" allow lab "$n" --for 1m
	refused "... for good" "$NAME_RE" allow lab "$n"
done
refused "a name that looks like an option" '^usage: allow SANDBOX NAME' allow lab -x.pypi.test
LIST_RE="a list is named \"@NAME\", NAME 1 to 32 of a-z, 0-9, '-', '_'; nothing changed"
refused "a list name with a quote" "$LIST_RE" allow lab '@pypi"'
refused "a list name with a path" "$LIST_RE" allow lab '@../pypi'
refused "a list name with a newline" "$LIST_RE" allow lab $'@pypi\n@github'
for d in 0 0s -5m -1 400d 367d 9000h 1y m 10m30s 99999999999999999999; do
	refused "--for $(printf %q "$d")" \
		"^--for: expected a duration such as 90s, 10m, 2h or 1d \(at most a year\), got \"$d\"" \
		allow lab a.pypi.test --for "$d"
done
expect_eq "no refused grant was audited as a grant" "$AUDIT0" "$(grep -c '"event":"allow"' "$GW_AUDIT")"

# --- $UB's sandbox: the same answer as none at all ------------------------------
for q in "allow zsb a.pypi.test" "allow zsb a.pypi.test --for 1m" "allow zsb @pypi --for 1h" \
    "unallow zsb pypi.org" "grants zsb" "secret attach zsb bshared"; do
	# shellcheck disable=SC2086
	mine=$(as "$UA" $q 2>&1; echo "rc=$?")
	# shellcheck disable=SC2086
	none=$(as "$UA" ${q/zsb/nosuch} 2>&1; echo "rc=$?")
	expect_eq "\"$q\" on $UB's sandbox answers as for none" "${none//nosuch/zsb}" "$mine"
	expect_match "... refused" 'rc=1$' "$mine"
done
expect_eq "... and nothing changed" "$BASE" "$(snap)"

# --- secrets across members -------------------------------------------------------
# (attaching $UB's unshared secret, and $UB's sandbox by attach and
# detach: 84-secret-attach.sh and 84-secret-same-answer.sh)
refused "re-sharing $UB's secret with $UC" '^secret set: the name "bshared" is not available to you; choose another name$' \
	secret set bshared --host api.bound.test --share "$UC" <<<sk-stolen
refused "... or to another host" '^secret set: the name "bshared" is not available to you; choose another name$' \
	secret set bshared --host other.test <<<sk-stolen
expect_eq "$UC still does not see bshared" "" "$(as "$UC" secret list 2>&1 | grep bshared)"
expect_match "$UA may attach bshared, which $UB shares with them" "^BSHARED_API_KEY='moat-bshared-PLACEHOLDER'\$" \
	"$(as "$UA" secret attach lab bshared 2>&1)"
BASE=$(snap)	# lab holds bshared now: the refusals below start from here
out=$(as "$UB" secret detach lab bshared 2>&1; echo "rc=$?")
expect_eq "$UB, bshared's owner, cannot detach it from $UA's sandbox: as for no sandbox" \
	"$(as "$UB" secret detach nosuch bshared 2>&1 | sed s/nosuch/lab/; echo rc=1)" "$out"
expect_eq "... and nothing changed" "$BASE" "$(snap)"
out=$(as "$UC" secret attach lab bshared 2>&1; echo "rc=$?")
expect_eq "$UC cannot attach it to $UA's sandbox: as for no sandbox" \
	"$(as "$UC" secret attach nosuch bshared 2>&1 | sed s/nosuch/lab/; echo rc=1)" "$out"
expect_eq "... and nothing changed" "$BASE" "$(snap)"

# A secret $UB makes with `secret set --share`: shared with $UA, not $UC.
out=$(printf 'sk-ub-made-c0de\n' | as "$UB" secret set bmade --host api.bound.test --share "$UA" 2>&1)
expect_match "$UB makes bmade, shared with $UA" '^secret bmade: placeholder moat-bmade-' "$out"
BM=$TOPO_TMP/secrets.d/bmade.conf
expect_match "... its drop-in says so" "shared_with = \\[ \"$UA\" \\]" "$(cat "$BM")"
expect_match "$UA attaches bmade to lab" "^BMADE_API_KEY='moat-bmade-" "$(as "$UA" secret attach lab bmade 2>&1)"
BASE=$(snap); BMSUM=$(sha256sum "$BM" "$TOPO_TMP/state/secrets/bmade")
refused "$UA re-sharing bmade with $UC" '^secret set: the name "bmade" is not available to you; choose another name$' \
	secret set bmade --host api.bound.test --share "$UC" <<<sk-stolen
refused "$UA pointing bmade at another host" '^secret set: the name "bmade" is not available to you; choose another name$' \
	secret set bmade --host other.test <<<sk-stolen
expect_eq "... bmade's drop-in and value are as they were" "$BMSUM" \
	"$(sha256sum "$BM" "$TOPO_TMP/state/secrets/bmade")"
out=$(printf 'sk-ub-made-c0de\n' | as "$UB" secret set bmade --host api.bound.test --share "$UC" 2>&1); rc=$?
expect_eq "$UB's --share that leaves out $UA, whose lab holds bmade, is refused (exit 1)" 1 $rc
expect_match "... nothing was changed" 'nothing was changed' "$out"
expect_eq "... bmade's drop-in and value are as they were" "$BMSUM" \
	"$(sha256sum "$BM" "$TOPO_TMP/state/secrets/bmade")"
expect_eq "... and nothing else changed" "$BASE" "$(snap)"
expect_ok "$UA detaches bmade" as "$UA" secret detach lab bmade
expect_ok "$UA detaches bshared" as "$UA" secret detach lab bshared
expect_fail "... lab holds neither" grep -q 'bmade\|bshared' "$LAB"

# --- the control: a covered grant does change what the snapshot sees ---------------
expect_match "a covered name for a while is granted" '^lab may reach a\.pypi\.test for 1m' \
	"$(as "$UA" allow lab a.pypi.test --for 1m 2>&1)"
expect_match "... and ctl grants shows it" "^lab +a\.pypi\.test +- +$UA " "$(gw_ctl grants 2>&1)"
expect_match "@pypi, which member_allow names, is granted" '^lab may reach pypi\.org, files\.pythonhosted\.org' \
	"$(as "$UA" allow lab @pypi --for 1m 2>&1)"
expect_eq "no child crashed" "" "$(grep -E 'ERROR: AddressSanitizer|runtime error|seccomp|killed|restarting' "$GW_LOG")"
tap_done
