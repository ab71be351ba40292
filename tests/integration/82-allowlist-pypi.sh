#!/usr/bin/env bash
# @pypi: the shipped baseline list is what pip needs.  A local package
# index is served over HTTPS under the real names (pypi.org for the index,
# files.pythonhosted.org for the files), resolved by the test DNS to an
# address in the test's "internet".  A sandbox with allow = [ "@pypi" ]
# installs a package with pip; one with only pypi.org is refused the file
# host, which `ctl refused` names; `ctl allow SANDBOX @pypi --for` fixes it.
cd "$(dirname "$0")/../.."
. tests/harness/tap.sh
. tests/harness/topology.sh
. tests/harness/gw.sh

topo_up || { not_ok "topology"; exit 1; }
topo_guest web 10.77.0.10 52:54:00:00:00:0a mt-web
topo_guest py 10.77.0.13 52:54:00:00:00:0d mt-py
topo_services
topo_bg "$NS_INET" upstream python3 tests/harness/dns-upstream.py \
	--addr 203.0.113.53
topo_wait_port "$NS_INET" 203.0.113.53 53
chmod 711 "$TOPO_TMP"

# The index: one package, its wheel on the file host.
PX=$TOPO_TMP/pki; mkdir -p "$PX" && chmod 755 "$PX"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj "/CN=moat test PyPI CA" -days 2 -keyout "$PX/ca.key" -out "$PX/ca.crt" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	-subj "/CN=pypi.org" -keyout "$PX/srv.key" -out "$PX/srv.csr" 2>/dev/null
openssl x509 -req -in "$PX/srv.csr" -CA "$PX/ca.crt" -CAkey "$PX/ca.key" -CAcreateserial -days 2 \
	-extfile <(printf 'subjectAltName=DNS:pypi.org,DNS:files.pythonhosted.org\n') \
	-out "$PX/srv.crt" 2>/dev/null
chmod 644 "$PX"/*
WWW=$TOPO_TMP/pypi; mkdir -p "$WWW/simple/moat-demo" "$WWW/packages"
python3 - "$WWW" <<'PY'
import base64, hashlib, sys, zipfile
www = sys.argv[1]
whl = "moat_demo-1.0-py3-none-any.whl"
files = {
    "moat_demo/__init__.py": b"GREETING = 'installed through @pypi'\n",
    "moat_demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: moat-demo\nVersion: 1.0\n",
    "moat_demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: moat-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def rec(data):
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=%s,%d" % (d, len(data))
record = "".join("%s,%s\n" % (n, rec(d)) for n, d in files.items())
record += "moat_demo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("%s/packages/%s" % (www, whl), "w") as z:
    for n, d in files.items():
        z.writestr(n, d)
    z.writestr("moat_demo-1.0.dist-info/RECORD", record)
h = hashlib.sha256(open("%s/packages/%s" % (www, whl), "rb").read()).hexdigest()
open("%s/simple/moat-demo/index.html" % www, "w").write(
    '<html><body><a href="https://files.pythonhosted.org/packages/%s#sha256=%s">%s</a></body></html>\n'
    % (whl, h, whl))
PY
chmod -R a+rX "$WWW"
topo_bg "$NS_INET" pypi python3 tests/harness/https-static.py $INET_HTTP 443 "$WWW" "$PX/srv.crt" "$PX/srv.key"
topo_wait_port "$NS_INET" $INET_HTTP 443

# web: only pypi.org (the demo's list); py: @pypi, from the shipped list
# put beside the configuration as an admin's own would be.
cp examples/demo.conf "$GW_CONF"
mkdir -p "$TOPO_TMP/sandboxes.d" "$TOPO_TMP/allow.d"
cp data/allow.d/pypi.list "$TOPO_TMP/allow.d/"
printf '%s\n' 'mac = "52:54:00:00:00:0d"; address = "10.77.0.13"; tap = "mt-py";' \
	'egress = "allowlist"; allow = [ "@pypi" ];' >"$TOPO_TMP/sandboxes.d/py.conf"
gw_start; expect_eq "gatewayd starts" 0 $?
dnsd_up() { [ -n "$(gw_child_pid dnsd)" ]; }
wait_for 30 dnsd_up
topo_wait_port "$NS_GW" $GW_ADDR 53
# The guests' resolver is the gateway (a namespace's own resolv.conf).
mkdir -p "/etc/netns/$TOPO-web" "/etc/netns/$TOPO-py"
echo "nameserver $GW_ADDR" >"/etc/netns/$TOPO-web/resolv.conf"
echo "nameserver $GW_ADDR" >"/etc/netns/$TOPO-py/resolv.conf"
netns_cleanup() { rm -rf "/etc/netns/$TOPO-web" "/etc/netns/$TOPO-py"; }
trap 'rc=$?; netns_cleanup; topo_down; exit $rc' EXIT
pip_in() {	# pip_in GUEST -- install moat-demo into a fresh folder
	rm -rf "$TOPO_TMP/site-$1"
	# A clean environment and --isolated: only this CA, no local wheels.
	in_ns "$TOPO-$1" timeout 60 env -i PATH="$PATH" HOME="$TOPO_TMP" \
		python3 -m pip --isolated install --no-deps --no-cache-dir \
		--disable-pip-version-check --retries 0 --timeout 5 \
		--index-url https://pypi.org/simple/ --cert "$PX/ca.crt" \
		--target "$TOPO_TMP/site-$1" moat-demo >"$TOPO_TMP/pip-$1.log" 2>&1
}
installed() { grep -q 'installed through @pypi' "$TOPO_TMP/site-$1/moat_demo/__init__.py" 2>/dev/null; }

expect_ok "py (allow = [ \"@pypi\" ]) installs with pip" pip_in py
expect_ok "...the package is there" installed py
expect_eq "py was refused nothing" "" "$(gw_ctl refused py | grep '^py ')"
expect_fail "web (pypi.org only) cannot install" pip_in web
expect_match "ctl refused web names the file host pip needed" \
	'^web +files\.pythonhosted\.org .* dns +not on the allow list$' "$(gw_ctl refused web)"
expect_match "ctl allow web @pypi --for 1m" 'web may reach pypi\.org, files\.pythonhosted\.org for 1m' \
	"$(gw_ctl allow web @pypi --for 1m 2>&1)"
expect_ok "then web installs too" pip_in web
expect_ok "...the package is there" installed web
tap_done
