#!/usr/bin/env bash
# run: guest (provision-bench boots a QEMU guest)
# Every bench starts and measures (part c: nftables, reloads, the scan
# and provisioning): see 09-bench-smoke-a.sh.  The library against
# `nft -f` (its peer), forwarding with accounting and over IPv6, reloads
# and grants with children, the containment scan, provision create/start.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. bench/smoke-lib.sh

smoke_run nft-apply 90
smoke_row "nft-apply: library and nft -f apply 10 sandboxes" "^\| 10 \| $NZ \| $NZ \| $NZ \|"
smoke_row "nft-apply: forwarding with 1000 other sandboxes" "^\| 1000 \| $NZ \|$"
smoke_run nft-delta 90
smoke_row "nft-delta: the increment, library and nft -f, and the reload" "^\| 10 \| $NZ \| $NZ \| $NZ \| [0-9.]+ \| $NZ \|"
smoke_run nft-acct 120
smoke_row "nft-acct: UDP with accounting off and on" "^\| UDP, 64-byte datagrams \(per second\) \| $NZ \(.*\) \| $NZ \("
smoke_run nft-v6 120
smoke_row "nft-v6: UDP over IPv4 and IPv6" "^\| UDP, 64-byte datagrams \(per second\) \| $NZ \(.*\) \| $NZ \("
smoke_run reload-children 90
smoke_row "reload-children: ctl reload with children" "ctl reload median $NZ ms"
smoke_run grant-latency 90
smoke_row "grant-latency: allow reaches dnsd and every worker" "allow: ctl round trip [0-9]+ ms .*dnsd has it $NZ ms .*every proxy worker has it $NZ ms"
smoke_run containment-scan 90
smoke_row "containment-scan: one scan behind the policy" "^\| full policy as applied by default .* \| $NZ \| 1 \| $NZ s \|"
smoke_run provision-bench 180
smoke_row "provision-bench: create in kernel mode" "^create kernel mode: median $NZ ms"
smoke_row "provision-bench: start to the first serial byte" "^start to 1st serial byte: median $NZ ms"
tap_done
