/*
 * parent_canary.c -- a sandbox of gatewayd's own that proves, all the
 * time, that the policy in force contains a guest.
 *
 * gateway.canary makes an ordinary allowlist sandbox named "canary"
 * (lib/config: its rules, dnsd's allowlist and the proxy's view are a
 * guest's).  At start-up the parent makes an anonymous network namespace
 * for it, held only by a descriptor (it goes when gatewayd goes), and a
 * veth whose outer end, "mt-canary", joins the bridge with port isolation
 * on and whose inner end carries the canary's MAC and address, with the
 * gateway as its default route.  No VM and no user live there.
 *
 * Every canary.interval seconds, and soon after each commit of a new
 * policy, the parent forks; the child enters the canary's namespace,
 * checks that it is in it (or exits: the scanner must never scan from the
 * gateway's own network), drops to the user moat-scan with no capability
 * and no_new_privs, and runs containment-check --expect allowlist with the
 * gateway's own targets (its addresses and LAN ranges, the exceptions
 * that must stay closed, the other guests).  At most one scan runs, never
 * two within CANARY_GAP seconds, and none for longer than CANARY_MAX_RUN.
 *
 * The exit status is the verdict (0 contained, 1 a breach or a failed
 * control); the text report (canary_report.c, read as untrusted) names
 * the first probe that breached.  Verdict, duration and breach go to the
 * metrics, the audit log and ctl status; a breach is logged as an ALERT.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "canary_report.h"
#include "gw.h"
#include "audit.h"
#include "ctl.h"
#include "ha.h"
#include "reload.h"
#include "ev.h"
#include "log.h"
#include "sysctl.h"
#include "canary.h"
#include "privdrop.h"
#include "rtnl.h"

/* provision/targets.c: what a guest's containment-check probes beyond its
 * own discovery; the canary is given the same. */
char	*targets_text(const struct moat_config *, const char *,
	    enum moat_egress);

#define CANARY_USER	"moat-scan"
#define CANARY_GAP	10	/* seconds between two scans, at least */
#define CANARY_FIRST	5	/* after start-up: dnsd and the proxy up */
#define CANARY_MAX_RUN	180	/* a scan still running is killed */
#define CANARY_OUT_MAX	65536	/* of a report kept; the rest is drained */
#define CANARY_GUESTS	16	/* other guests probed by address */

enum verdict { V_NONE = -1, V_BREACH = 0, V_CONTAINED = 1 };

struct canary {
	int		 ns;		/* the canary's namespace */
	dev_t		 ns_dev;
	ino_t		 ns_ino;
	uid_t		 uid;
	gid_t		 gid;
	char		 tap[IFNAMSIZ];
	/* the scan */
	pid_t		 pid;		/* 0: none running */
	int		 out;		/* its stdout and stderr, or -1 */
	struct ev	 ev;		/* out, on the loop */
	char		*buf;
	size_t		 len;
	struct timespec	 t0;
	time_t		 started;
	const char	*why;		/* "timer", "commit" */
	/* when */
	time_t		 due;
	time_t		 not_before;	/* the next scan, at the soonest */
	const void	*applied;	/* the policy the last scan saw */
	unsigned	 reloads;
	/* the last verdict */
	enum verdict	 verdict;
	char		 detail[200];	/* why no verdict, or the breach */
	size_t		 breaches;
	time_t		 last;		/* when it finished */
	double		 secs;
	time_t		 contained;	/* last proof of containment */
	uint64_t	 runs, failures;
};

static struct canary *cy;
extern char **environ;

static void	out_close(void);
static void	on_out(struct ev *, uint32_t);

/* --- the namespace ---------------------------------------------------- */

static int
nl_do(struct mnl_socket *nl, struct nlmsghdr *nlh)
{
	char buf[8192];
	unsigned portid = mnl_socket_get_portid(nl);
	ssize_t n;
	int rc;

	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = (unsigned)time(NULL) ^ (unsigned)random();
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
		return -1;
	do {
		if ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) < 0)
			return -1;
		rc = mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, NULL,
		    NULL);
	} while (rc > MNL_CB_STOP);
	return rc < 0 ? -1 : 0;
}

static struct nlmsghdr *
link_msg(char *buf, uint16_t type, uint16_t flags, uint8_t family, int index)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifi;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = family;
	ifi->ifi_index = index;
	return nlh;
}

static int
link_up(struct mnl_socket *nl, int index)
{
	char buf[512];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, 0, AF_UNSPEC, index);
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);

	ifi->ifi_flags = ifi->ifi_change = IFF_UP;
	return nl_do(nl, nlh);
}

/* The veth: tap on this side, "eth0" with the canary's MAC in ns. */
static int
veth_add(struct mnl_socket *nl, const char *tap, const uint8_t mac[6], int ns)
{
	char buf[1024];
	struct nlmsghdr *nlh = link_msg(buf, RTM_NEWLINK, NLM_F_CREATE |
	    NLM_F_EXCL, AF_UNSPEC, 0);
	struct nlattr *info, *data, *peer;

	mnl_attr_put_strz(nlh, IFLA_IFNAME, tap);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	mnl_nlmsg_put_extra_header(nlh, sizeof(struct ifinfomsg));
	mnl_attr_put_strz(nlh, IFLA_IFNAME, "eth0");
	mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)ns);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, info);
	return nl_do(nl, nlh);
}

static int
port_attach(struct mnl_socket *nl, int index, int bridge)
{
	char buf[512];
	struct nlmsghdr *nlh;
	struct nlattr *nest;

	nlh = link_msg(buf, RTM_NEWLINK, 0, AF_UNSPEC, index);
	mnl_attr_put_u32(nlh, IFLA_MASTER, (uint32_t)bridge);
	if (nl_do(nl, nlh) == -1)
		return -1;
	/* Isolated before it comes up, like every guest's port. */
	nlh = link_msg(buf, RTM_SETLINK, 0, AF_BRIDGE, index);
	nest = mnl_attr_nest_start(nlh, IFLA_PROTINFO | NLA_F_NESTED);
	mnl_attr_put_u8(nlh, IFLA_BRPORT_ISOLATED, 1);
	mnl_attr_nest_end(nlh, nest);
	if (nl_do(nl, nlh) == -1)
		return -1;
	return link_up(nl, index);
}

/* From inside: lo and eth0 up, the canary's address (and its IPv6 one,
 * as every guest's: config_sandbox_addr6) on eth0, and the gateway as
 * its default route in each family. */
static int
inner_setup(struct rtnl *r, const struct moat_config *cfg,
    const struct moat_sandbox *sb)
{
	const struct moat_gateway *g = &cfg->gw;
	int lo = (int)if_nametoindex("lo"), eth = (int)if_nametoindex("eth0");
	struct moat_addr a6;

	if (lo == 0 || eth == 0 || rtnl_link_set_up(r, lo, true) == -1 ||
	    rtnl_link_set_up(r, eth, true) == -1 ||
	    rtnl_addr_add(r, eth, AF_INET, sb->address.a, g->network.plen) ==
	    -1 || rtnl_default_route_add(r, AF_INET, g->address.a, eth) == -1)
		return -1;
	if (!config_sandbox_addr6(cfg, sb, &a6))
		return 0;
	if (rtnl_addr_add(r, eth, AF_INET6, a6.a, 64) == -1 ||
	    rtnl_default_route_add(r, AF_INET6, g->ipv6_address.a, eth) == -1)
		return -1;
	return 0;
}

/* The guest's side, set up from inside: the parent enters the namespace
 * for the time of it (it runs one thread) and always comes back. */
static int
inside(int home, const struct moat_config *cfg, const struct moat_sandbox *sb)
{
	struct rtnl *r;
	int rc = -1;

	if (setns(cy->ns, CLONE_NEWNET) == -1)
		return -1;
	/* Opened here, it talks to the canary's namespace. */
	if ((r = rtnl_open()) != NULL)
		rc = inner_setup(r, cfg, sb);
	rtnl_close(r);
	if (setns(home, CLONE_NEWNET) == -1)
		fatal("canary: back to the gateway's network namespace");
	return rc;
}

/* A new namespace, held by cy->ns alone. */
static int
ns_new(int home)
{
	struct stat st;

	if (unshare(CLONE_NEWNET) == -1)
		return -1;
	cy->ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (setns(home, CLONE_NEWNET) == -1)
		fatal("canary: back to the gateway's network namespace");
	if (cy->ns == -1 || fstat(cy->ns, &st) == -1)
		return -1;
	cy->ns_dev = st.st_dev;
	cy->ns_ino = st.st_ino;
	return 0;
}

static void
tap_disable_ipv6(const char *tap)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
	    tap);
	if (sysctl_write(path, 1) == -1 && errno != ENOENT)
		log_warn("canary: %s", path);
}

static int
plumb(struct gw *gw, const struct moat_sandbox *sb, char *err, size_t len)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	struct mnl_socket *nl = NULL;
	int home, bridge, tap, rc = -1;

	if ((home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1 ||
	    ns_new(home) == -1) {
		snprintf(err, len, "a network namespace: %s", strerror(errno));
		goto out;
	}
	if ((nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1) {
		snprintf(err, len, "rtnetlink: %s", strerror(errno));
		goto out;
	}
	if ((bridge = (int)if_nametoindex(g->bridge)) == 0) {
		snprintf(err, len, "no bridge %s", g->bridge);
		goto out;
	}
	/* One left by a gatewayd killed with its namespace still held (a
	 * scan it started outlived it) is ours to replace. */
	if ((tap = (int)if_nametoindex(sb->tap)) != 0) {
		char buf[256];

		(void)nl_do(nl, link_msg(buf, RTM_DELLINK, 0, AF_UNSPEC, tap));
	}
	if (veth_add(nl, sb->tap, sb->mac, cy->ns) == -1 ||
	    (tap = (int)if_nametoindex(sb->tap)) == 0) {
		snprintf(err, len, "veth %s: %s", sb->tap, strerror(errno));
		goto out;
	}
	tap_disable_ipv6(sb->tap);
	if (port_attach(nl, tap, bridge) == -1) {
		snprintf(err, len, "port %s on %s: %s", sb->tap, g->bridge,
		    strerror(errno));
		goto out;
	}
	if (inside(home, gw->cfg, sb) == -1) {
		snprintf(err, len, "its address and route: %s",
		    strerror(errno));
		goto out;
	}
	snprintf(cy->tap, sizeof(cy->tap), "%s", sb->tap);
	rc = 0;
out:
	if (nl != NULL)
		mnl_socket_close(nl);
	if (home != -1)
		close(home);
	return rc;
}

void
canary_start(struct gw *gw)
{
	const struct moat_sandbox *sb = config_canary(gw->cfg);
	struct passwd *pw;
	char err[160];

	if (sb == NULL)
		return;
	cy = xcalloc(1, sizeof(*cy));
	cy->ns = cy->out = cy->ev.fd = -1;
	cy->verdict = V_NONE;
	snprintf(cy->detail, sizeof(cy->detail), "not run yet");
	if ((pw = getpwnam(CANARY_USER)) == NULL || pw->pw_uid == 0) {
		snprintf(cy->detail, sizeof(cy->detail), "no user %s: the "
		    "canary does not scan", CANARY_USER);
		log_warnx("canary: %s", cy->detail);
		return;
	}
	cy->uid = pw->pw_uid;
	cy->gid = pw->pw_gid;
	if (plumb(gw, sb, err, sizeof(err)) == -1) {
		snprintf(cy->detail, sizeof(cy->detail), "not set up: %s", err);
		log_warnx("canary: %s", cy->detail);
		if (cy->ns != -1)
			close(cy->ns);
		cy->ns = -1;
		return;
	}
	cy->due = cy->not_before = time(NULL) + CANARY_FIRST;
	cy->applied = gw->applied;
	cy->reloads = reload_of(gw)->commits;
	log_info("canary: sandbox %s on %s, scanning every %us", sb->name,
	    cy->tap, gw->cfg->gw.canary_interval);
}

void
canary_stop(void)
{
	char buf[256];
	struct mnl_socket *nl;
	int tap;

	if (cy == NULL)
		return;
	if (cy->pid > 0)
		kill(cy->pid, SIGKILL);
	out_close();
	/* The namespace goes with its last descriptor, and the veth with
	 * it; a scan still running would hold it, so the port goes now. */
	if (cy->tap[0] != '\0' && (tap = (int)if_nametoindex(cy->tap)) != 0 &&
	    (nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC)) != NULL) {
		if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == 0)
			(void)nl_do(nl, link_msg(buf, RTM_DELLINK, 0,
			    AF_UNSPEC, tap));
		mnl_socket_close(nl);
	}
	if (cy->ns != -1)
		close(cy->ns);
	free(cy->buf);
	free(cy);
	cy = NULL;
}

/* --- one scan --------------------------------------------------------- */

static void
argv_push(char ***v, size_t *n, const char *s)
{
	*v = xreallocarray(*v, *n + 2, sizeof(char *));
	(*v)[(*n)++] = xstrdup(s);
	(*v)[*n] = NULL;
}

static char **
scan_argv(const struct gw *gw, const struct moat_sandbox *sb)
{
	const struct moat_gateway *g = &gw->cfg->gw;
	char **v = NULL, buf[64], *prog;
	size_t n = 0, i, guests = 0;

	/* Beside gatewayd in a build; installed, it is a user's program
	 * (bin beside sbin). */
	xasprintf(&prog, "%s/containment-check", gw->opts.bindir);
	if (access(prog, X_OK) == -1) {
		free(prog);
		xasprintf(&prog, "%s/../bin/containment-check",
		    gw->opts.bindir);
	}
	argv_push(&v, &n, prog);
	free(prog);
	argv_push(&v, &n, "--expect");
	argv_push(&v, &n, "allowlist");
	argv_push(&v, &n, "--in-guest");	/* gatewayd checked */
	argv_push(&v, &n, "--no-host-checks");
	argv_push(&v, &n, "--gateway");
	argv_push(&v, &n, addr_fmt(&g->address, buf, sizeof(buf)));
	argv_push(&v, &n, "--targets-file");
	argv_push(&v, &n, "/proc/self/fd/3");
	snprintf(buf, sizeof(buf), "%u", g->proxy_port);
	argv_push(&v, &n, "--proxy-port");
	argv_push(&v, &n, buf);
	argv_push(&v, &n, "--concurrency");
	argv_push(&v, &n, "256");
	for (i = 0; i < g->ntreat_as_public; i++) {
		argv_push(&v, &n, "--treat-as-public");
		argv_push(&v, &n, prefix_fmt(&g->treat_as_public[i], buf,
		    sizeof(buf)));
	}
	for (i = 0; i < sb->allow.n && i < 4; i++) {
		if (strchr(sb->allow.v[i], '*') != NULL ||
		    strchr(sb->allow.v[i], ':') != NULL)
			continue;
		argv_push(&v, &n, "--allow-name");
		argv_push(&v, &n, sb->allow.v[i]);
	}
	/* The other guests: none may answer the canary. */
	for (i = 0; i < gw->cfg->nsandboxes && guests < CANARY_GUESTS; i++) {
		const struct moat_sandbox *o = &gw->cfg->sandboxes[i];

		struct moat_addr a6;

		if (o->canary || o->address.family != AF_INET)
			continue;
		argv_push(&v, &n, "--target");
		argv_push(&v, &n, addr_fmt(&o->address, buf, sizeof(buf)));
		if (config_sandbox_addr6(gw->cfg, o, &a6)) {
			argv_push(&v, &n, "--target");
			argv_push(&v, &n, addr_fmt(&a6, buf, sizeof(buf)));
		}
		guests++;
	}
	return v;
}

static void
argv_free(char **v)
{
	size_t i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* The child: into the canary's namespace, proven, then nobody. */
static void __attribute__((noreturn))
scan_child(char **argv, int targets, int out)
{
	sigset_t none;
	struct stat st;
	int null, prog;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (setns(cy->ns, CLONE_NEWNET) == -1 ||
	    stat("/proc/self/ns/net", &st) == -1 || st.st_dev != cy->ns_dev ||
	    st.st_ino != cy->ns_ino) {
		dprintf(out, "canary: not in its own network namespace: "
		    "refusing to scan\n");
		_exit(125);
	}
	/* The program is opened while still root: the folders on its path
	 * need not be open to moat-scan, only the file itself executable. */
	if ((prog = open(argv[0], O_PATH | O_CLOEXEC)) == -1) {
		dprintf(out, "canary: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if ((null = open("/dev/null", O_RDONLY)) == -1 ||
	    dup2(null, 0) == -1 || dup2(out, 1) == -1 || dup2(out, 2) == -1 ||
	    dup2(targets, 3) == -1 || dup2(prog, 4) == -1 ||
	    fcntl(4, F_SETFD, FD_CLOEXEC) == -1)
		_exit(125);
	closefrom(5);
	if (chdir("/") == -1 || privdrop_ids(cy->uid, cy->gid, CANARY_USER) ==
	    -1 || getuid() == 0 || geteuid() == 0)
		_exit(125);
	fexecve(4, argv, environ);
	dprintf(1, "canary: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

static int
targets_fd(const struct gw *gw, const struct moat_sandbox *sb)
{
	char *text = targets_text(gw->cfg, sb->name, sb->egress);
	size_t len = strlen(text);
	int fd = memfd_create("canary-targets", MFD_CLOEXEC);

	if (fd == -1 || write(fd, text, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) == -1) {
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	free(text);
	return fd;
}

static void
scan_start(struct gw *gw, const char *why)
{
	const struct moat_sandbox *sb = config_canary(gw->cfg);
	char **argv;
	int p[2], targets;
	pid_t pid;

	cy->not_before = time(NULL) + CANARY_GAP;
	cy->due = time(NULL) + (gw->cfg->gw.canary_interval > 0 ?
	    (gw->cfg->gw.canary_interval < CANARY_GAP ? CANARY_GAP :
	    gw->cfg->gw.canary_interval) : 86400 * 365);
	cy->applied = gw->applied;
	cy->reloads = reload_of(gw)->commits;
	if (sb == NULL)
		return;
	if ((targets = targets_fd(gw, sb)) == -1 ||
	    pipe2(p, O_CLOEXEC) == -1) {
		log_warn("canary: cannot start a scan");
		if (targets != -1)
			close(targets);
		return;
	}
	argv = scan_argv(gw, sb);
	if ((pid = fork()) == -1) {
		log_warn("canary: fork");
		close(p[0]);
		close(p[1]);
	} else if (pid == 0) {
		close(p[0]);
		scan_child(argv, targets, p[1]);
	} else {
		close(p[1]);
		(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
		cy->pid = pid;
		cy->out = p[0];
		if (ev_add(&cy->ev, cy->out, EPOLLIN, on_out, NULL) == -1)
			log_warn("canary: watching the scan");
		cy->len = 0;
		cy->why = why;
		cy->started = time(NULL);
		clock_gettime(CLOCK_MONOTONIC, &cy->t0);
		log_debug("canary: scan started (%s), pid %d", why, (int)pid);
	}
	close(targets);
	argv_free(argv);
}

static void drain(void);

/* The scan's output, watched on the loop while open; off the loop
 * before it is closed. */
static void
out_close(void)
{
	ev_del(&cy->ev);
	if (cy->out != -1)
		close(cy->out);
	cy->out = -1;
}

static void
on_out(struct ev *e, uint32_t events)
{
	(void)e;
	(void)events;
	if (cy != NULL)
		drain();
}

static void
drain(void)
{
	char tmp[4096];
	ssize_t n;

	if (cy->buf == NULL)
		cy->buf = xcalloc(1, CANARY_OUT_MAX + 1);
	while (cy->out != -1) {
		n = read(cy->out, tmp, sizeof(tmp));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN)
				out_close();
			return;
		}
		if (cy->len < CANARY_OUT_MAX) {
			size_t k = (size_t)n < CANARY_OUT_MAX - cy->len ?
			    (size_t)n : CANARY_OUT_MAX - cy->len;
			memcpy(cy->buf + cy->len, tmp, k);
			cy->len += k;
		}
	}
}

static void
record(struct gw *gw, int status)
{
	struct canary_report rep;
	struct timespec t1;
	char secs[32], nb[32];
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	cy->secs = (double)(t1.tv_sec - cy->t0.tv_sec) +
	    (double)(t1.tv_nsec - cy->t0.tv_nsec) / 1e9;
	cy->last = time(NULL);
	cy->runs++;
	canary_report_parse(cy->buf != NULL ? cy->buf : "", cy->len, &rep);
	cy->breaches = rep.breaches;
	snprintf(secs, sizeof(secs), "%.1f", cy->secs);
	snprintf(nb, sizeof(nb), "%zu", rep.breaches);
	if (code == 0) {
		cy->verdict = V_CONTAINED;
		cy->contained = cy->last;
		snprintf(cy->detail, sizeof(cy->detail), "contained");
		log_info("canary: contained (%s s, %s)", secs, cy->why);
		audit_event(gw, "canary", "verdict", "contained", "seconds",
		    secs, "found", cy->why, NULL);
	} else if (code == 1 && rep.breaches > 0) {
		cy->verdict = V_BREACH;
		snprintf(cy->detail, sizeof(cy->detail), "%s", rep.first);
		log_alertx("ALERT canary: NOT CONTAINED: %zu probe(s) breached "
		    "the policy, the first: %s", rep.breaches, rep.first);
		audit_event(gw, "canary", "verdict", "not-contained", "seconds",
		    secs, "breaches", nb, "probe", rep.first, "found", cy->why,
		    NULL);
	} else {
		cy->verdict = V_NONE;
		cy->failures++;
		if (code == 1)
			snprintf(cy->detail, sizeof(cy->detail), "a control "
			    "failed: %s", rep.first[0] ? rep.first : "?");
		else if (WIFSIGNALED(status))
			snprintf(cy->detail, sizeof(cy->detail), "the scan was "
			    "killed (signal %d)", WTERMSIG(status));
		else
			snprintf(cy->detail, sizeof(cy->detail), "the scan "
			    "could not run (exit %d)", code);
		log_warnx("canary: no verdict: %s", cy->detail);
		audit_event(gw, "canary", "verdict", "none", "seconds", secs,
		    "reason", cy->detail, "found", cy->why, NULL);
	}
	cy->pid = 0;
	cy->len = 0;
}

bool
canary_reaped(struct gw *gw, pid_t pid, int status)
{
	if (cy == NULL || cy->pid == 0 || pid != cy->pid)
		return false;
	drain();
	out_close();
	record(gw, status);
	return true;
}

int
canary_fd(void)
{
	return cy != NULL ? cy->out : -1;
}

void
canary_readable(struct gw *gw)
{
	(void)gw;
	drain();
}

/* A new policy committed since the last scan: prove it soon. */
static bool
committed(const struct gw *gw)
{
	return gw->applied != cy->applied || reload_of(gw)->commits != cy->reloads;
}

int
canary_timeout(const struct gw *gw, int timeout)
{
	time_t now = time(NULL), at;
	int ms;

	if (cy == NULL || cy->ns == -1)
		return timeout;
	if (cy->pid > 0)
		at = cy->started + CANARY_MAX_RUN;
	else if (committed(gw))
		at = cy->not_before;
	else
		at = cy->due > cy->not_before ? cy->due : cy->not_before;
	ms = at <= now ? 0 : (int)(at - now) * 1000;
	return timeout == -1 || ms < timeout ? ms : timeout;
}

void
canary_tick(struct gw *gw)
{
	time_t now = time(NULL);

	if (cy == NULL || cy->ns == -1)
		return;
	if (cy->pid > 0) {
		if (now >= cy->started + CANARY_MAX_RUN) {
			log_warnx("canary: the scan ran %ds: killed",
			    CANARY_MAX_RUN);
			kill(cy->pid, SIGKILL);
		}
		return;
	}
	if (now < cy->not_before)
		return;
	/* A box of a pair that is not the master forwards nothing: there
	 * is nothing to prove until it is. */
	if (ha_of(gw)->ha_on && ha_of(gw)->ha_role != HA_MASTER) {
		cy->due = now + CANARY_GAP;
		cy->not_before = now + CANARY_GAP;
		return;
	}
	if (committed(gw))
		scan_start(gw, "commit");
	else if (now >= cy->due)
		scan_start(gw, "timer");
}

/* --- reports ------------------------------------------------------------ */

static const char *
verdict_word(enum verdict v)
{
	return v == V_CONTAINED ? "contained" : v == V_BREACH ?
	    "NOT CONTAINED" : "no verdict";
}

void
canary_status(struct ctl_req *r)
{
	const struct moat_gateway *g = &r->gw->cfg->gw;
	time_t now = time(NULL);

	if (cy == NULL)
		return;
	if (r->json) {
		ctl_reply(r, "\"canary\":{\"interval\":%u,\"verdict\":",
		    g->canary_interval);
		ctl_reply_jstr(r, cy->verdict == V_CONTAINED ? "contained" :
		    cy->verdict == V_BREACH ? "not-contained" : "none");
		ctl_reply(r, ",\"detail\":");
		ctl_reply_jstr(r, cy->detail);
		ctl_reply(r, ",\"last\":%lld,\"seconds\":%.1f,\"breaches\":%zu,"
		    "\"contained\":%lld,\"runs\":%llu,\"running\":%s},",
		    (long long)cy->last, cy->secs, cy->breaches,
		    (long long)cy->contained, (unsigned long long)cy->runs,
		    cy->pid > 0 ? "true" : "false");
		return;
	}
	if (cy->last == 0)
		ctl_reply(r, "canary     %s (every %us)\n", cy->detail,
		    g->canary_interval);
	else
		ctl_reply(r, "canary     %s, %llds ago (%.1f s, every %us%s)"
		    "%s%s\n", verdict_word(cy->verdict),
		    (long long)(now - cy->last), cy->secs, g->canary_interval,
		    cy->pid > 0 ? ", scanning now" : "",
		    cy->verdict == V_CONTAINED ? "" : ": ",
		    cy->verdict == V_CONTAINED ? "" : cy->detail);
}

void
canary_metrics(FILE *fp, const struct gw *gw)
{
	(void)gw;
	if (cy == NULL)
		return;
	fprintf(fp, "# HELP moat_canary_verdict The canary's last scan: 1 "
	    "contained, 0 NOT contained (a probe breached), -1 no verdict.\n"
	    "# TYPE moat_canary_verdict gauge\nmoat_canary_verdict %d\n"
	    "# HELP moat_canary_last_run_seconds When the canary's last scan "
	    "ended (0: never).\n"
	    "# TYPE moat_canary_last_run_seconds gauge\n"
	    "moat_canary_last_run_seconds %lld\n"
	    "# HELP moat_canary_contained_seconds When the canary last proved "
	    "containment (0: never).\n"
	    "# TYPE moat_canary_contained_seconds gauge\n"
	    "moat_canary_contained_seconds %lld\n"
	    "# HELP moat_canary_duration_seconds How long the last scan took.\n"
	    "# TYPE moat_canary_duration_seconds gauge\n"
	    "moat_canary_duration_seconds %.3f\n"
	    "# HELP moat_canary_breaches Probes that breached in the last "
	    "scan.\n# TYPE moat_canary_breaches gauge\n"
	    "moat_canary_breaches %zu\n"
	    "# HELP moat_canary_runs_total Scans run.\n"
	    "# TYPE moat_canary_runs_total counter\nmoat_canary_runs_total "
	    "%llu\n", (int)cy->verdict, (long long)cy->last,
	    (long long)cy->contained, cy->secs, cy->breaches,
	    (unsigned long long)cy->runs);
}

const char *
canary_sandbox(const struct gw *gw)
{
	const struct moat_sandbox *sb = config_canary(gw->cfg);

	return sb != NULL ? sb->name : NULL;
}

static int
canary_mod_start(struct gw *gw)
{
	canary_start(gw);
	return 0;
}

static void
canary_mod_stop(struct gw *gw)
{
	(void)gw;
	canary_stop();
}

static uint64_t
canary_due(const struct gw *gw)
{
	return gw_due_in(canary_timeout(gw, -1));
}

const struct gw_module canary_module = {
	.name = "canary",
	.size = sizeof(char),
	.start = canary_mod_start,
	.stop = canary_mod_stop,
	.due = canary_due,
	.timer = canary_tick,
	.status = canary_status,
	.metrics = canary_metrics,
};
