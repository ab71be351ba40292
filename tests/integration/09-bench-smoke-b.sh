#!/usr/bin/env bash
# Every bench starts and measures (part b: the proxy): see
# 09-bench-smoke-a.sh.  moat-proxy against tinyproxy, mitmproxy, HAProxy
# and nginx, the signer under a neighbour's new hosts, a failover of the HA
# pair.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. bench/smoke-lib.sh

smoke_run proxy-bench 180
smoke_row "proxy-bench: moat-proxy's spliced row" "^\| spliced \| $NZ \| $NZ \|"
smoke_row "proxy-bench: moat-proxy's row with tunnels in the kernel" "^\| sockmap \| $NZ \| $NZ \|"
smoke_row "proxy-bench: tinyproxy's row" "^\| tinyproxy \| $NZ \| $NZ \|"
smoke_row "proxy-bench: moat-proxy's download" "^spliced $NZ .* $NZ 1 "
smoke_row "proxy-bench: moat-proxy's intercepted row" "^\| intercepted \| $NZ \| $NZ \|"
smoke_row "proxy-bench: HAProxy's intercepted row" "^\| haproxy \| $NZ \| $NZ \|"

smoke_run signer-bench 90
smoke_row "signer-bench: A's requests alone" "^\| alone \| 20 \| $NZ \|"
smoke_row "signer-bench: A's requests while B opens new hosts" "^\| while B opens 8 new intercepted hosts \| 20 \| $NZ \|"

smoke_run agent-workload 180
smoke_row "agent-workload: moat's row" "^\| moat \| $NZ "
smoke_row "agent-workload: mitmproxy's row" "^\| mitmproxy \| $NZ "
smoke_row "agent-workload: every API call carried the real key" "^\| moat \|.*\| 0 of $NZ \|"
smoke_row "agent-workload: moat-routed's row" "^\| moat-routed \| $NZ "
smoke_row "agent-workload: HAProxy's row, every call with the real key" "^\| haproxy \| $NZ .*\| 0 of $NZ \|"
smoke_row "agent-workload: nginx's row, every call with the real key" "^\| nginx \| $NZ .*\| 0 of $NZ \|"

smoke_run ha-failover 180
smoke_row "ha-failover: DNS and connections back after gatewayd is killed" "^\| default \| kill \| $NZ \| $NZ \|"

smoke_run reload-storm 150
smoke_row "reload-storm: each commit timed" "ms per commit, .*median $NZ"
smoke_row "reload-storm: dnsd never answered SERVFAIL for a refused set update" "SERVFAIL for a refused set update: 0$"
tap_done
