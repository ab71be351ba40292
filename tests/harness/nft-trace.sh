# nft-trace.sh -- which of moat's rules a packet meets, from the kernel's
# own trace (sourced; needs topology.sh).
#
# trace_start NS MATCH...  marks the packets that MATCH (an nft match, for
#     example "ip daddr 10.77.0.1 udp dport 53") with meta nftrace, first
#     thing in bridge prerouting, inet prerouting and inet output (tables
#     "bridge mtrace" and "inet mtrace", priority -400, ahead of moat's),
#     and records `nft monitor trace` into $TOPO_TMP/trace.txt.
# trace_stop NS  stops the monitor and removes the marking tables.
# trace_walk NS  prints, for each trace in the record, one line per chain
#     of moat's tables it went through: "ID FAMILY CHAIN RULES VERDICT",
#     RULES being how many rules of that chain the packet was evaluated
#     against: the position of the rule whose verdict ended the chain
#     (accept, drop, goto, jump), or every rule of the chain when it fell
#     off the end (policy, or the end of a chain it was sent to with
#     goto).  The kernel traces only rules that match; the ones before a
#     matching rule were evaluated and did not match, which is what the
#     position counts.  Positions come from `nft -a list table`, so call
#     it before the ruleset changes.
TRACE_MON=

trace_start() {
	local ns=$1; shift
	local m="$*"
	in_ns "$ns" nft -f - <<NFT || return 1
table bridge mtrace {
	chain pre {
		type filter hook prerouting priority -400
		$m meta nftrace set 1
	}
}
table inet mtrace {
	chain pre {
		type filter hook prerouting priority -400
		$m meta nftrace set 1
	}
	chain out {
		type filter hook output priority -400
		$m meta nftrace set 1
	}
}
NFT
	# Not through in_ns: $! must be nft itself (ip netns exec execs it).
	ip netns exec "$ns" nft -a monitor trace >"$TOPO_TMP/trace.txt" 2>&1 &
	TRACE_MON=$!
	TOPO_PIDS+=($TRACE_MON)
	sleep 0.3
}

trace_stop() {
	sleep 0.3
	[ -n "$TRACE_MON" ] && kill "$TRACE_MON" 2>/dev/null && wait "$TRACE_MON" 2>/dev/null
	TRACE_MON=
	in_ns "$1" nft delete table bridge mtrace 2>/dev/null
	in_ns "$1" nft delete table inet mtrace 2>/dev/null
	return 0
}

trace_walk() {
	{
		for f in inet bridge; do
			in_ns "$1" nft -a list table $f moat 2>/dev/null |
				awk -v f=$f '$1 == "chain" { c = $2; n = 0; next }
					/# handle [0-9]+$/ && c != "" && !/^[ \t]*(type|policy) / {
						n++; print "R", f, c, $NF, n }
					$1 == "}" && c != "" { print "N", f, c, n; c = "" }'
		done
		echo "--"
		cat "$TOPO_TMP/trace.txt"
	} | awk '
		$1 == "R" { pos[$2, $3, $4] = $5; next }
		$1 == "N" { len[$2, $3] = $4; next }
		$1 == "--" { trace = 1; next }
		!trace || $1 != "trace" || $5 != "moat" { next }
		{
			id = $3; key = $4 SUBSEP $6
			if (open != "" && (open_id != id || open != key)) flush()
			open = key; open_id = id; ofam = $4; ochain = $6
			if ($7 == "rule") {
				h = ""; v = ""
				for (i = 8; i < NF; i++) if ($i == "handle") h = $(i + 1)
				if (match($0, /\(verdict [a-z]+/)) v = substr($0, RSTART + 9, RLENGTH - 9)
				if (v != "continue") { n = pos[$4, $6, h]; verdict = v; flush() }
				else last = h
			} else if ($7 == "policy" || ($7 == "verdict" && $8 == "continue")) {
				n = len[$4, $6]; verdict = ($7 == "policy" ? "policy " $8 : "end")
				flush()
			}
		}
		function flush() {
			if (open != "" && n != "") print open_id, ofam, ochain, n, verdict
			open = ""; n = ""; verdict = ""; last = ""
		}
		END { flush() }'
}
