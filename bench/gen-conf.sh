# gen-conf.sh -- sourced by bench/nft-apply.sh and bench/nft-delta.sh: one
# generator of N-sandbox configurations, so that both measure the same
# policy.
#
# gen_conf N FILE [dev] [new] -- N sandboxes s0..s(N-1) on 10.77.0.0/16
# from 10.77.10.2 on, modes cycling allowlist / open / none; "dev" puts an
# open sandbox "dev" (10.77.0.11, tap mt-dev) first, "new" the sandbox
# $NEW_SB last.  GEN_GATEWAY: more lines for the gateway block; unless
# they name a state_dir, the run's own ($TOPO_TMP/state) is added, so
# that nothing a bench starts on the file looks in the host's.

# The sandbox an increment adds: allowlist mode, so it brings the most
# objects (a set, a chain of three rules, five elements).
NEW_ADDR=10.77.200.2 NEW_MAC=52:54:02:00:00:01 NEW_TAP=mtnew
NEW_SB="{ name = \"new\"; mac = \"$NEW_MAC\"; address = \"$NEW_ADDR\"; tap = \"$NEW_TAP\"; egress = \"allowlist\"; }"
GEN_GATEWAY=${GEN_GATEWAY:-}

gen_conf() {
	local n=$1 f=$2 dev=0 new=0 i a sd=
	case $GEN_GATEWAY in *state_dir*) ;; *) sd="
  state_dir = \"$TOPO_TMP/state\";" ;; esac
	for a in "${@:3}"; do
		case $a in dev) dev=1 ;; new) new=1 ;; esac
	done
	{
		cat <<CONF
gateway: {
  uplink = "up0"; network = "10.77.0.0/16"; bridge = "moat0";
  dns: { upstream = [ "203.0.113.53" ]; };
  proxy: { port = 3128; intercept = false; };
  treat_as_public = [ "203.0.113.0/24" ];
$GEN_GATEWAY$sd
};
sandboxes = (
CONF
		[ $dev = 1 ] && printf '{ name = "dev"; mac = "52:54:00:00:00:0b"; address = "10.77.0.11"; tap = "mt-dev"; egress = "open"; }%s\n' \
			"$([ "$n" -gt 0 ] || [ $new = 1 ] && echo ,)"
		for ((i = 0; i < n; i++)); do
			printf '{ name = "s%d"; mac = "52:54:01:%02x:%02x:%02x"; address = "10.77.%d.%d"; tap = "mt%d"; egress = "%s"; }%s\n' \
				$i $((i >> 16 & 255)) $((i >> 8 & 255)) $((i & 255)) \
				$((10 + i / 250)) $((i % 250 + 2)) $i \
				"$(case $((i % 3)) in 0) echo allowlist;; 1) echo open;; *) echo none;; esac)" \
				"$([ $((i + 1)) -lt "$n" ] || [ $new = 1 ] && echo ,)"
		done
		[ $new = 1 ] && echo "$NEW_SB"
		echo ");"
	} >"$f"
}
