#!/usr/bin/env bash
# The split-brain watch (gateway.ha.uplink_address) counts only another
# master, and reads the uplink's ARP in an unprivileged child.
#
# Anyone on the uplink segment can send ARP.  Forged replies for the
# shared address that carry one of this box's own MACs, or that are not
# addressed to this box, raise nothing; a burst of forged replies from a
# foreign MAC shows at most "unconfirmed" in ctl status and is never
# audited: it is not answered again when the box asks that MAC alone.  A
# real second holder of the address (the internet namespace with it on
# its interface, answering both probes) is confirmed, shown as another
# master and audited once per episode.  The ARP is read by the ha-arp
# child, as moat-log under seccomp: the root parent holds no packet
# socket.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

VIP=203.0.113.100	# the pair's shared uplink address, held by no one yet
FOREIGN=02:00:00:00:00:99
OTHER=02:00:00:00:00:77
topo_up || { not_ok "topology"; exit 1; }
sed "s|^gateway: {|gateway: {\n  ha: { enabled = true; uplink_address = \"$VIP\"; };|" \
	examples/demo.conf >"$GW_CONF"
gw_start; expect_eq "a box of a pair with uplink_address starts" 0 $?
gw_ctl ha master >/dev/null; expect_eq "and is master" 0 $?

mac_of() { ip -n "$1" -o link show dev "$2" 2>/dev/null | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2; }
UP_MAC=$(mac_of "$NS_GW" up0)
BR_MAC=$(mac_of "$NS_GW" moat0)
INET_MAC=$(mac_of "$NS_INET" eth0)
forge() {	# forge COUNT SHA/THA... -- from the internet namespace, at once
	in_ns "$NS_INET" python3 tests/harness/arp-reply.py eth0 $VIP "$@"
}
split_line() { gw_ctl status 2>/dev/null | grep '^split-brain '; }
audits() { grep -c '"event":"ha-split-brain"' "$GW_AUDIT"; }

# --- the ARP reader: its own user, seccomp; the parent holds no packet socket
has_child() { [ -n "$(gw_child_pid ha-arp)" ]; }
expect_ok "the ha-arp child runs" wait_for 10 has_child
CPID=$(gw_child_pid ha-arp)
expect_eq "it is gatewayd's child" "$GW_PID" "$(awk '$1 == "PPid:" {print $2}' /proc/$CPID/status)"
u=$(id -u moat-log)
expect_eq "it runs as moat-log (real, effective, saved, fs)" "$u $u $u $u" \
	"$(awk '$1 == "Uid:" {print $2, $3, $4, $5}' /proc/$CPID/status)"
expect_eq "under a seccomp filter (Seccomp: 2)" 2 "$(awk '$1 == "Seccomp:" {print $2}' /proc/$CPID/status)"
expect_eq "with no capability" 0000000000000000 "$(awk '$1 == "CapEff:" {print $2}' /proc/$CPID/status)"
# Every packet socket of the namespace, by inode, against each process's fds.
pkt_inodes() { awk 'NR > 1 {print $NF}' /proc/$GW_PID/net/packet | sort -u; }
sock_inodes() { ls -l /proc/$1/fd 2>/dev/null | grep -o 'socket:\[[0-9]*\]' | tr -dc '0-9\n' | sort -u; }
expect_ok "the namespace has a packet socket" test -n "$(pkt_inodes)"
expect_eq "the child holds it" 1 "$(comm -12 <(pkt_inodes) <(sock_inodes $CPID) | wc -l)"
expect_eq "the root parent holds none" 0 "$(comm -12 <(pkt_inodes) <(sock_inodes $GW_PID) | wc -l)"

# --- forged: our own MACs, not addressed to us, then a foreign burst ---
# Within milliseconds, and status shows the earliest unconfirmed MAC: had
# one of the first started an episode, it would show, not the last.
forge 3 "$UP_MAC/$UP_MAC" "$BR_MAC/$UP_MAC" "$OTHER/ff:ff:ff:ff:ff:ff" "$FOREIGN/$UP_MAC"
shown() { split_line | grep -q "$1"; }
expect_ok "a burst from a foreign MAC shows" wait_for 3 shown "$FOREIGN"
line=$(split_line)
echo "# $line"
expect_match "... only as unconfirmed" "^split-brain unconfirmed: $FOREIGN answered a probe" "$line"
expect_eq "and not our own MACs or a reply not addressed to us, in its place" 1 "$(grep -c "$FOREIGN" <<<"$line")"
json=$(gw_ctl status --json)
expect_match "--json: no split brain" '"split_brain":false,"split_brain_unconfirmed":true' "$json"
not_shown() { ! split_line >/dev/null; }
expect_ok "unanswered when asked alone, it clears" wait_for 8 not_shown
expect_eq "and nothing of it was audited" 0 "$(audits)"
expect_eq "nor logged as split brain" "" "$(grep 'split brain:' "$GW_LOG")"

# --- a forger answering first does not hide another master -------------
# FAST answers every broadcast probe at once, never a probe to it alone;
# SLOW, another holder of the address, answers both 50 ms later.
FAST=02:00:00:00:00:f1
SLOW=02:00:00:00:00:51
topo_bg "$NS_INET" responder python3 tests/harness/arp-responder.py eth0 $VIP "$UP_MAC" \
	"$FAST" "$SLOW" 50 10
RESP_PID=${TOPO_PIDS[-1]}
slow_confirmed() { split_line | grep -q "^split-brain another master ($SLOW) answers"; }
expect_ok "a forger answering first does not keep another master out" wait_for 8 slow_confirmed
expect_eq "only the other master is audited" "1 $SLOW" \
	"$(grep '"event":"ha-split-brain"' "$GW_AUDIT" | grep -o '"mac":"[^"]*"' | cut -d'"' -f4 | sort | uniq -c | awk '{print $1, $2}')"
kill "$RESP_PID" 2>/dev/null; wait "$RESP_PID" 2>/dev/null
expect_ok "both silent, it clears" wait_for 8 not_shown
base=$(audits)	# from here on, count the next episodes only
audits() { echo $(( $(grep -c '"event":"ha-split-brain"' "$GW_AUDIT") - base )); }

# --- a real second master: it answers both probes -----------------------
ip -n "$NS_INET" addr add $VIP/32 dev eth0
confirmed() { split_line | grep -q "^split-brain another master ($INET_MAC) answers"; }
expect_ok "a second holder of the address is confirmed as another master" wait_for 6 confirmed
echo "# $(split_line)"
expect_match "--json: split brain" '"split_brain":true,"split_brain_unconfirmed":false' "$(gw_ctl status --json)"
expect_eq "audited once" 1 "$(audits)"
expect_match "with its MAC and the address" "\"address\":\"$VIP\".*\"mac\":\"$INET_MAC\"" \
	"$(grep '"event":"ha-split-brain"' "$GW_AUDIT" | tail -1)"
lasted() { split_line | grep -Eq 'for ([4-9]|[1-9][0-9]+)s$'; }
expect_ok "the episode goes on" wait_for 8 lasted
expect_eq "still audited once, for the whole episode" 1 "$(audits)"
ip -n "$NS_INET" addr del $VIP/32 dev eth0
expect_ok "the other holder gone, the state clears" wait_for 8 not_shown
ip -n "$NS_INET" addr add $VIP/32 dev eth0
expect_ok "it comes back: a new episode" wait_for 6 confirmed
expect_eq "audited once more" 2 "$(audits)"
gw_ctl ha backup >/dev/null
expect_ok "keepalived makes this box backup: the episode ends" wait_for 3 not_shown
expect_match "--json: no split brain" '"split_brain":false,"split_brain_unconfirmed":false' "$(gw_ctl status --json)"
expect_eq "and no more audits" 2 "$(audits)"
tap_done
