# host-guard.sh -- keep tests out of the host's own moat folders (sourced
# by topology.sh, so by every namespace test and bench).
#
# A moat program started with its defaults keeps its state, CA and
# network.undo record in /var/lib/moat, its audit log in /var/log/moat, its
# socket in /run/moat and reads /etc/moat: the host's, which a later real
# install would then inherit.  A test gets a state folder, an audit log and
# a socket inside its own $TOPO_TMP from the harness (gw_start, gw_own_state),
# and these checks refuse to start gatewayd, dnsd or moat-proxy, or to
# reload gatewayd, on anything that would reach the host's folders.  The
# refusal names the test and the key, and counts as a failure.
#
# CI also runs the tests with those four folders mounted empty and
# read-only (.ci/run), so a write that slips past these checks fails where
# it happens, on every machine, whatever the folders held before.

HOST_MOAT_DIRS=(/etc/moat /var/lib/moat /var/log/moat /run/moat)
HOST_GUARD_TEST=${HOST_GUARD_TEST:-$(basename "$0")}

# A refusal is written where the caller's stderr goes (often a daemon's
# log) and kept in $TOPO_TMP: topo_down reports every one as a failure of
# the test, even when it happened in a subshell or with output redirected.
host_guard_refuse() {	# host_guard_refuse WHAT -- report, record, fail
	echo "host-guard: $HOST_GUARD_TEST: $1" >&2
	[ -n "${TOPO_TMP:-}" ] && [ -d "$TOPO_TMP" ] &&
		echo "host-guard: $HOST_GUARD_TEST: $1" >>"$TOPO_TMP/host-guard.refused"
	return 1
}
host_guard_report() {	# every refusal as a "not ok" line; fails if any
	[ -s "${TOPO_TMP:-/nonexistent}/host-guard.refused" ] || return 0
	sed 's/^/not ok - /' "$TOPO_TMP/host-guard.refused"
	return 1
}

host_guard_hostdir() {	# host_guard_hostdir PATH -- the host folder PATH lies in
	local d p
	p=$(realpath -m -- "$1" 2>/dev/null || printf '%s' "$1")
	for d in "${HOST_MOAT_DIRS[@]}"; do
		case "$p/" in "$d"/*) echo "$d"; return 0 ;; esac
	done
	return 1
}

# host_guard_conf FILE -- FILE (and the drop-ins beside it) names its own
# state_dir and no path in the host's moat folders.
host_guard_conf() {
	local conf=$1 out
	[ -r "$conf" ] || { host_guard_refuse "no config at $conf"; return 1; }
	out=$(python3 - "$conf" "${HOST_MOAT_DIRS[@]}" <<'PY'
import glob, os, re, sys
conf, hostdirs = sys.argv[1], sys.argv[2:]
def strip(line, state):
    # drop libconfig comments (#, //, /* */) outside strings
    out, i, q = [], 0, False
    while i < len(line):
        c = line[i]
        if state[0]:
            if line.startswith('*/', i): state[0] = False; i += 2
            else: i += 1
            continue
        if q:
            out.append(c)
            if c == '\\' and i + 1 < len(line): out.append(line[i + 1]); i += 2; continue
            if c == '"': q = False
        elif c == '"': q = True; out.append(c)
        elif c == '#' or line.startswith('//', i): break
        elif line.startswith('/*', i): state[0] = True; i += 2; continue
        else: out.append(c)
        i += 1
    return ''.join(out)
def under(p):
    p = os.path.normpath(p)
    for d in hostdirs:
        if p == d or p.startswith(d + '/'): return d
files = [conf] + sorted(glob.glob(os.path.join(os.path.dirname(conf) or '.', '*.d', '*.conf')))
has_state = False
for f in files:
    state, key = [False], '?'
    for n, raw in enumerate(open(f, errors='replace'), 1):
        line = strip(raw, state)
        for m in re.finditer(r'([A-Za-z_][A-Za-z0-9_-]*)\s*[=:]|"((?:[^"\\]|\\.)*)"', line):
            if m.group(1):
                key = m.group(1)
                if key == 'state_dir' and f == conf: has_state = True
            elif m.group(2).startswith('/') and under(m.group(2)):
                print(f'{f}:{n}: {key} = "{m.group(2)}" lies in the host\'s {under(m.group(2))}')
if not has_state:
    print(f'{conf}: no gateway.state_dir: gatewayd would keep its CA, state and '
          'network.undo in the host\'s /var/lib/moat (start it with gw_start, '
          'or call gw_own_state after writing the config)')
PY
	) || { host_guard_refuse "cannot read $conf"; return 1; }
	[ -z "$out" ] && return 0
	while IFS= read -r l; do host_guard_refuse "$l"; done <<<"$out"
	return 1
}

# host_guard_cmd ARGV... -- a command line that starts gatewayd, dnsd or
# moat-proxy (wrappers such as strace or setpriv before it are looked
# through) names its config, socket and audit log outside the host's
# folders; anything else passes.
host_guard_cmd() {
	local i prog= a d conf= sock= audit= mode=daemon want
	[ -n "${HOST_GUARD_OWN_MOUNTS:-}" ] && return 0
	for ((i = 1; i <= $#; i++)); do
		case "$(basename -- "${!i}")" in
		gatewayd|dnsd|moat-proxy) prog=$(basename -- "${!i}"); break ;;
		esac
	done
	[ -n "$prog" ] || return 0
	shift "$i"
	while [ $# -gt 0 ]; do
		a=$1; shift
		case "$a" in
		ctl) [ "$prog" = gatewayd ] && return 0 ;;	# a client
		-h|--help|-V|--version) return 0 ;;
		-n|--check) mode=check ;;
		--teardown) mode=teardown ;;
		-c|--config) conf=${1:-}; shift ;;
		--config=*) conf=${a#*=} ;;
		-s|--socket) sock=${1:-}; shift ;;
		--socket=*) sock=${a#*=} ;;
		-a|--audit) audit=${1:-}; shift ;;
		--audit=*) audit=${a#*=} ;;
		-[!-]?*)	# a cluster of short options: -nv, -dX, -c FILE
			case "$a" in
			-*[hV]*) return 0 ;;
			-*n*) mode=check ;;
			esac ;;
		esac
	done
	[ -n "$conf" ] || { host_guard_refuse "$prog started without -c: it would read the host's /etc/moat/moat.conf"; return 1; }
	if d=$(host_guard_hostdir "$conf"); then
		host_guard_refuse "$prog's -c $conf lies in the host's $d"; return 1
	fi
	[ "$prog" = gatewayd ] || return 0
	[ $mode = check ] && return 0
	for want in sock audit; do
		[ $mode = daemon ] || break
		[ -n "${!want}" ] || { host_guard_refuse "gatewayd started without -${want:0:1}: its default is in the host's $([ $want = sock ] && echo /run/moat || echo /var/log/moat)"; return 1; }
		if d=$(host_guard_hostdir "${!want}"); then
			host_guard_refuse "gatewayd's -${want:0:1} ${!want} lies in the host's $d"; return 1
		fi
	done
	host_guard_conf "$conf"
}

# moat_daemon NS CMD... -- `ip netns exec NS CMD` for a command that
# starts gatewayd, dnsd or moat-proxy, after host_guard_cmd.  Started in
# the background (`moat_daemon NS build/gatewayd ... &`) it runs in a
# subshell of its own, which it replaces: $! is then the daemon's pid, as
# tests that signal or wait for it need.  (A daemon that gets private
# mounts over the host's folders on purpose says so with
# HOST_GUARD_OWN_MOUNTS=1.)
moat_daemon() {
	host_guard_cmd "${@:2}" || return 1
	[ "$BASHPID" != "$$" ] && exec ip netns exec "$@"
	ip netns exec "$@"
}
