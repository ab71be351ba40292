#!/usr/bin/env bash
# promtool.sh -- Prometheus' promtool, to check alerting rules.
#
#   promtool.sh CACHE_DIR   prints the path of a promtool that runs
#
# The one on PATH if there is one; else Debian's prometheus package is
# downloaded once into CACHE_DIR and only promtool is unpacked from it
# (installing the package would start a Prometheus server).  Without apt
# access this fails loudly: the rules test must not silently skip.
set -eu
if command -v promtool >/dev/null 2>&1; then command -v promtool; exit 0; fi
cache=${1:?usage: promtool.sh CACHE_DIR}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
exec 9>"$cache/.lock"
flock 9
if [ ! -x "$cache/root/usr/bin/promtool" ]; then
	cd "$cache"
	ls prometheus_*.deb >/dev/null 2>&1 || apt-get download prometheus >/dev/null 2>&1 ||
		{ echo "promtool: apt-get download prometheus failed (no apt access?)" >&2; exit 1; }
	rm -rf root.tmp
	dpkg -x "$(ls -t prometheus_*.deb | head -1)" root.tmp
	rm -rf root && mv root.tmp root
fi
"$cache/root/usr/bin/promtool" --version >/dev/null 2>&1 ||
	{ echo "promtool: $cache/root/usr/bin/promtool does not run" >&2; exit 1; }
echo "$cache/root/usr/bin/promtool"
