#!/usr/bin/env bash
# The docs are tests: docs/team-host.md, run as written (the machinery is
# tests/harness/doc-run.sh; see 64-docs-homelab.sh).  Root's commands run
# as root, the "$ " ones as the member alice, on a machine set up as the
# page's first step says (make install, gatewayd started as its unit
# would), with the people it names (alice, bob, carol) and alice's SSH
# key.  The page's moat.conf text is put into the installed file as it
# says; the images are the test's kernel-mode guest (no cloud image
# here), every other provision flag as written.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/guest-lib.sh
. tests/harness/doc-run.sh

for b in build/provision build/gatewayd; do
	[ -x "$b" ] || { not_ok "$b is built" "run make"; tap_done; exit 1; }
done
topo_trap
topo_reap_stale
guest_assets || { not_ok "guest kernel and initramfs" "needs apt access once"; tap_done; exit 1; }
doc_machine_up || { not_ok "the machine (namespaces, overlays, resolver)"; tap_done; exit 1; }

# What the page assumes before its first command: moat installed and
# gatewayd running as a service (step 1), the people, alice's key, and
# an image where the page names one.
echo "# before the page: make install, the unit started, users alice bob carol"
expect_ok "make install" doc_run "make install >/dev/null"
expect_ok "gatewayd started as the unit would" standin_systemctl_start
expect_ok "the people the page names exist" \
	doc_run "useradd -m alice && useradd -m bob && useradd -m carol"
expect_ok "alice has an SSH key" \
	doc_run "ssh-keygen -q -t ed25519 -N '' -f ~/.ssh/id_ed25519" alice
expect_ok "an image where the page names one (the test's kernel and initramfs)" \
	doc_run "install -d -m 0755 /srv/images && install -m 0644 '$GUEST_KERNEL' /srv/images/vmlinuz &&
		install -m 0644 '$GUEST_INITRD' /srv/images/initrd.gz"
DOC_MEMBER=alice
DOC_ENV="OPENAI_API_KEY=sk-test-not-a-real-key-0123456789"

# The page's moat.conf text: its gateway lines go into the installed
# file's gateway group ("..." is the rest of it), the rest after it.
doc_snippet() {
	echo "# $DOC:$1: the page's text put into /etc/moat/moat.conf"
	printf '%s\n' "$2" >"$TOPO_TMP/snippet"
	inside python3 - "$TOPO_TMP/snippet" /etc/moat/moat.conf <<'PY'
import re, sys
snip = open(sys.argv[1]).read().split("\n")
conf = open(sys.argv[2]).read()
lines = [l.strip() for l in snip]
g0 = lines.index("gateway: {")
g1 = lines.index("};", g0)
inner = [l for l in lines[g0 + 1:g1] if l and l != "..."]
rest = "\n".join(snip[g1 + 1:]).strip("\n")
m = re.search(r"^gateway: \{.*?^\};", conf, re.S | re.M)
conf = conf[:m.end() - 2] + "".join("  %s\n" % l for l in inner) + conf[m.end() - 2:]
open(sys.argv[2], "w").write(conf + "\n" + rest + "\n")
PY
	expect_ok "$DOC:$1: the file with the page's text is valid (gatewayd -n)" \
		doc_run "gatewayd -n -c /etc/moat/moat.conf >/dev/null"
}

standin_create() {
	echo "# stand-in: kernel mode instead of the page's cloud image: --image and"
	echo "#   --ssh-key replaced by the test's kernel and initramfs, every other flag"
	echo "#   as written, run as $DOC_MEMBER"
	local cmd
	cmd=$(sed -E -e 's| --image [^ ]+| --kernel /srv/images/vmlinuz --initrd /srv/images/initrd.gz|' \
		-e 's| --ssh-key [^ ]+||' <<<"$1")
	doc_run "$cmd" "$DOC_MEMBER"
}

CREATE1="provision create agent1 --image /srv/images/debian-12.qcow2 --disk 20G --ssh-key ~/.ssh/id_ed25519.pub --egress allowlist --allow pypi.org"
CREATE2="provision create agent2 --image /srv/images/debian-12.qcow2 --disk 20G --ssh-key ~/.ssh/id_ed25519.pub --egress allowlist --allow api.openai.com --secret openai-alice"
declare -A HOW=(
	["usermod -aG moat alice; usermod -aG moat bob"]=run
	["groupadd moat-admins; usermod -aG moat-admins carol"]=run
	["gatewayd ctl reload"]=run
	["$CREATE1"]=standin_create
	["printf '%s' \"\$OPENAI_API_KEY\" | gatewayd ctl secret set openai-alice --host api.openai.com --header Authorization"]=run
	["$CREATE2"]=standin_create
	["provision list"]=run
	["provision start agent1; provision stop agent1; provision destroy agent1"]=run
	["gatewayd ctl secret list"]=run
)
doc_varies() {
	echo 's/placeholder moat-openai-alice-[0-9a-f]+$/placeholder moat-openai-alice-[0-9a-f]{16}/'
}
doc_walk docs/team-host.md
expect_eq "every command of the page ran" "${#HOW[@]}" "$DOC_NCMDS"

# --- what the page promises beyond the shown output -----------------------
out=$(doc_run "provision list" alice 2>&1)
expect_match "alice's agent2 is hers" "agent2" "$out"
expect_fail "agent1 is gone" grep -q agent1 <<<"$out"
expect_match "agent2 carries the secret by name" "openai-alice" \
	"$(inside cat /etc/moat/sandboxes.d/agent2.conf 2>/dev/null)"
expect_ok "the secret is stored root-only (0600) in /var/lib/moat/secrets" \
	inside sh -c 'test "$(stat -c %a:%U /var/lib/moat/secrets/openai-alice)" = 600:root'
expect_fail "its value is never printed back (secret list)" \
	grep -q sk-test-not-a-real-key <<<"$(doc_run "gatewayd ctl secret list" alice 2>&1)"
expect_ok "alice may create one more (quota: 2 sandboxes)" \
	doc_run "provision create agent3 --kernel /srv/images/vmlinuz --egress none" alice
out=$(doc_run "provision create agent4 --kernel /srv/images/vmlinuz --egress none" alice 2>&1); rc=$?
expect_eq "over quota: create refused" 1 $rc
expect_match "... says which limit, what is in use and what was asked, as the page does" \
	"quota: alice may use at most 2 sandboxes; 2 in use, this request asks for 1" "$out"
out=$(doc_run "provision destroy agent2" bob 2>&1); rc=$?
expect_eq "bob cannot destroy alice's sandbox" 1 $rc
expect_match "... and is told as if it did not exist, as the page says" \
	"no sandbox \"agent2\" owned by bob" "$out"
out2=$(doc_run "provision destroy nosuch" bob 2>&1)
expect_eq "... the same answer as for a sandbox that does not exist" \
	"$(sed 's/agent2/nosuch/' <<<"$out")" "$out2"
expect_ok "the host's own /etc/moat was not touched by this test" \
	sh -c "! find /etc/moat /var/lib/moat /var/log/moat -newer '$DOC_OV' 2>/dev/null | grep -q ."
tap_done
