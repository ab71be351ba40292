/*
 * moat-proxy -- gatewayd's secret-injecting proxy: guests hold placeholders,
 * and the real value goes on the wire only to the host it is bound to.
 *
 * Start-up order is open, drop, narrow: read the config and the secret
 * values, load or create the gateway CA and bind (or receive) the
 * listening sockets as root; then drop to an unprivileged user with
 * no_new_privs and no core dumps; then serve guests from one epoll loop.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "conn.h"
#include "engine.h"
#include "kpath.h"
#include "hostaddr.h"
#include "ipc.h"
#include "reload.h"
#include "reqrule.h"
#include "log.h"
#include "parent.h"
#include "../signer/signer.h"
#include "privdrop.h"
#include "sandbox.h"
#include "tls.h"

#include "exitcodes.h"

#define MAX_LISTENERS	4
#define DRAIN_S		30

struct options {
	const char	*conf;
	const char	*upstream_ca;
	const char	*user;
	const char	*listen;	/* ADDR:PORT, standalone */
	int		 listen_fd[MAX_LISTENERS];
	int		 nlisten;
	int		 ipc_fd;
	int		 signer_fd;
	int		 config_fd;
	int		 foreground;
	int		 verbose;
	int		 no_seccomp;
	int		 sockmap_fd, peers_fd;
	uint16_t	 dns_port;
};

struct listener {
	struct ev	 ev;
	enum ckind	 kind;
};

static volatile sig_atomic_t stop_sig;
static volatile int stop;
static struct listener listeners[MAX_LISTENERS];
static int nlisteners;
static struct ev ipc_ev;
static struct ev host_ev;
static struct hostaddr *hostaddr;
static time_t drain_deadline;
static void
usage(FILE *fp)
{
	fprintf(fp,
"usage: moat-proxy [-dv] [-c FILE] [--listen ADDR:PORT] [--listen-fd N]\n"
"                  [--transparent-fd N] [--ipc-fd N] [--upstream-ca FILE]\n"
"                  [--user NAME]\n"
"\n"
"gatewayd's secret-injecting proxy: explicit (CONNECT, absolute-URI HTTP)\n"
"and transparent (redirected tcp 80/443) on one port.\n"
"\n"
"  -c, --config FILE       configuration (default " MOAT_CONF_DEFAULT ")\n"
"  -d, --foreground        stay in the foreground and log to stderr\n"
"  -v, --verbose           more log output (twice: debug)\n"
"      --listen ADDR:PORT  bind here instead of gateway address:proxy port\n"
"      --listen-fd N       serve a listening socket inherited as fd N\n"
"      --transparent-fd N  the same, for redirected connections only\n"
"      --ipc-fd N          SOCK_SEQPACKET to gatewayd (audit, reload)\n"
"      --sockmap-fd N      the socket map spliced tunnels are paired in\n"
"      --sockmap-peers-fd N  the socket map of where each one's data goes\n"
"      --signer-fd N       SOCK_SEQPACKET to the signer holding the CA key\n"
"      --config-fd N       the normalised configuration (-c names it only)\n"
"                          (without it the proxy starts its own signer)\n"
"      --upstream-ca FILE  trust FILE for upstream TLS besides the system store\n"
"      --user NAME         unprivileged user to run as (default nobody)\n"
"      --dns-port N        upstream resolver port (default 53)\n"
"      --no-seccomp        do not install the system call filter (debugging)\n"
"  -h, --help              this help\n"
"      --version           print the version\n"
"\n"
"Exit status: 0 stopped cleanly, 1 configuration or secret error,\n"
"2 usage error, 3 system error.\n");
}

static int
parse_fd(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < 3 || v > 65535)
		return -1;
	return (int)v;
}

static int
parse_args(int argc, char *argv[], struct options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "listen", required_argument, NULL, 'L' },
		{ "listen-fd", required_argument, NULL, 'l' },
		{ "transparent-fd", required_argument, NULL, 't' },
		{ "ipc-fd", required_argument, NULL, 'i' },
		{ "signer-fd", required_argument, NULL, 's' },
		{ "config-fd", required_argument, NULL, 'C' },
		{ "upstream-ca", required_argument, NULL, 'a' },
		{ "user", required_argument, NULL, 'u' },
		{ "dns-port", required_argument, NULL, 'p' },
		{ "no-seccomp", no_argument, NULL, 'S' },
		{ "sockmap-fd", required_argument, NULL, 'M' },
		{ "sockmap-peers-fd", required_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, fd;

	memset(o, 0, sizeof(*o));
	o->conf = MOAT_CONF_DEFAULT;
	o->ipc_fd = -1;
	o->signer_fd = -1;
	o->config_fd = -1;
	o->sockmap_fd = o->peers_fd = -1;
	while ((ch = getopt_long(argc, argv, "c:dvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': o->conf = optarg; break;
		case 'd': o->foreground = 1; break;
		case 'v': o->verbose++; break;
		case 'V':
			printf("%s %s\n", "moat-proxy", MOAT_VERSION);
			exit(EXIT_OK);
		case 'h': usage(stdout); exit(EXIT_OK);
		case 'L': o->listen = optarg; break;
		case 'a': o->upstream_ca = optarg; break;
		case 'u': o->user = optarg; break;
		case 'S': o->no_seccomp = 1; break;
		case 'p':
			if ((fd = parse_fd(optarg)) < 0)
				return -1;
			o->dns_port = (uint16_t)fd;
			break;
		case 'i':
			if ((o->ipc_fd = parse_fd(optarg)) < 0)
				return -1;
			break;
		case 's':
			if ((o->signer_fd = parse_fd(optarg)) < 0)
				return -1;
			break;
		case 'C':
			if ((o->config_fd = parse_fd(optarg)) < 0)
				return -1;
			break;
		case 'M':
			if ((o->sockmap_fd = parse_fd(optarg)) < 0)
				return -1;
			break;
		case 'P':
			if ((o->peers_fd = parse_fd(optarg)) < 0)
				return -1;
			break;
		case 'l':
		case 't':
			if (o->nlisten == MAX_LISTENERS ||
			    (fd = parse_fd(optarg)) < 0)
				return -1;
			listeners[o->nlisten].kind = ch == 't' ?
			    K_TRANSPARENT : K_EXPLICIT;
			o->listen_fd[o->nlisten++] = fd;
			break;
		default:
			return -1;
		}
	}
	return optind == argc ? 0 : -1;
}

static int
bind_listener(const struct moat_config *cfg, const char *spec,
    const char *user, bool v6)
{
	struct sockaddr_storage ss;
	struct moat_addr a = v6 ? cfg->gw.ipv6_address : cfg->gw.address;
	uint16_t port = cfg->gw.proxy_port;
	socklen_t sl;
	char addr[64];
	const char *colon;
	int fd, one = 1;

	if (spec != NULL) {
		if ((colon = strrchr(spec, ':')) == NULL ||
		    (size_t)(colon - spec) >= sizeof(addr))
			return -1;
		memcpy(addr, spec, (size_t)(colon - spec));
		addr[colon - spec] = '\0';
		if (addr_parse(addr, &a) == -1 || a.family != AF_INET)
			return -1;
		port = (uint16_t)atoi(colon + 1);
	}
	sl = addr_to_sockaddr(&a, port, &ss);
	/* Made as the user the proxy becomes: the policy lets only that
	 * uid answer guests from the proxy's port. */
	if ((fd = socket_as(user, a.family, SOCK_STREAM | SOCK_CLOEXEC)) < 0)
		fatal("socket");
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* The gateway's IPv6 address may reach the bridge after the proxy
	 * starts (duplicate address detection, or gatewayd adding it). */
	if (v6 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
	    sizeof(one)) < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND,
	    &one, sizeof(one)) < 0))
		fatal("IPv6 listener options");
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		fatal("bind %s", spec ? spec : v6 ? "gateway IPv6 address:"
		    "proxy port" : "gateway address:proxy port");
	if (listen(fd, 1024) < 0)
		fatal("listen");
	return fd;
}

static void
on_listener(struct ev *e, uint32_t events)
{
	struct listener *l = e->arg;

	conn_accept(e->fd, l->kind);
}

static void
close_listeners(void)
{
	int i, fd;

	for (i = 0; i < nlisteners; i++) {
		if ((fd = listeners[i].ev.fd) < 0)
			continue;
		ev_del(&listeners[i].ev);
		close(fd);
	}
}

void
proxy_drain(void)
{
	log_info("draining: no new connections, %d open", proxy.nconns);
	proxy.draining = true;
	drain_deadline = (time_t)(ev_now() / 1000) + DRAIN_S;
	close_listeners();
}

/* gatewayd's messages: budget answers, and a change of configuration
 * (reload.c).  Only an IPC_CONF carries a descriptor, its configuration:
 * the proxy cannot re-read root-only files after the drop. */
static void
on_ipc(struct ev *e, uint32_t events)
{
	char buf[IPC_MAX_PAYLOAD] __attribute__((aligned(8))), err[256];
	struct ipc_hdr hdr;
	size_t nfds = 0;
	ssize_t n;
	int fd = -1;

	n = ipc_recv_fds(e->fd, &hdr, buf, sizeof(buf), &fd, 1, &nfds, err,
	    sizeof(err));
	/* 0 bytes of a typed message is not the end of the stream (type
	 * 0). */
	if ((n == 0 && hdr.type == 0) || n == -1) {
		log_warnx("gatewayd went away: stopping");
		stop = 1;
		return;
	}
	if (n == -2)
		fatalx("ipc: %s", err);
	if (nfds > 0 && hdr.type != IPC_CONF)
		fatalx("ipc: a descriptor with %s", ipc_type_name(hdr.type));
	if (hdr.type == IPC_BUDGET_ACK)
		reqrule_ipc(&hdr, buf, (size_t)n);
	else
		reload_ipc(&hdr, buf, (size_t)n, fd);
	explicit_bzero(buf, sizeof(buf));	/* a secret's value, maybe */
}

/* The host's addresses change (DHCP, SLAAC, an interface coming up):
 * the proxy follows, so it never dials one. */
static void
on_hostaddr(struct ev *e, uint32_t events)
{
	if (hostaddr_read(hostaddr, &proxy.host) < 0)
		fatal("rtnetlink");
}

/* Without the host's addresses the proxy cannot tell the host from the
 * internet: it must not run. */
static void
setup_hostaddr(void)
{
	if ((hostaddr = hostaddr_open()) == NULL)
		fatal("rtnetlink: cannot learn the host's addresses");
	if (hostaddr_read(hostaddr, &proxy.host) < 0 ||
	    ev_add(&host_ev, hostaddr_fd(hostaddr), EPOLLIN, on_hostaddr,
	    NULL) < 0)
		fatal("rtnetlink");
}

static struct ev_timer tick_timer;
static int parent_fd = -1;

/* The TLS counters to gatewayd (ctl status, metrics), when they moved. */
static void
tls_report(void)
{
	static struct ipc_proxy_tls last;
	const struct tls_stats *t = tls_stats();
	struct ipc_proxy_tls m = {
		.resumed = t->resumed, .full = t->full, .conns = t->conns,
		.ktls_send = t->ktls_send, .ktls_recv = t->ktls_recv,
		.pid = (uint32_t)getpid(), .ktls_kernel = t->ktls_kernel != 0,
	};

	if (parent_fd < 0 || memcmp(&m, &last, sizeof(m)) == 0)
		return;
	if (ipc_send(parent_fd, IPC_PROXY_TLS, 0, &m, sizeof(m)) == 0)
		last = m;
}

/* Once a second: timeouts, the signer's health, the end of a drain. */
static void
tick(void *arg)
{
	if (stop_sig)
		stop = 1;
	if (tls_signer_lost() && !proxy.draining) {
		/* No new leaf can be made: let gatewayd start a proxy and a
		 * signer afresh, and finish what is open meanwhile. */
		log_warnx("the signer is gone: draining");
		proxy_drain();
	}
	dns_tick();
	conn_tick();
	tls_report();
	if (proxy.draining && (proxy.nconns == 0 ||
	    (time_t)(ev_now() / 1000) >= drain_deadline))
		stop = 1;
	ev_timer_set(&tick_timer, ev_now() + 1000, tick, NULL);
}

static void
on_signal(int sig)
{
	stop_sig = 1;
	stop = 1;
}

static void
signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Under gatewayd: each secret's value comes from the parent, in the
 * configuration's order, right after the start. */
static int
secret_from_ipc(void *arg, const struct moat_secret *s, char *buf,
    size_t *len, char *err, size_t errlen)
{
	static union {
		struct ipc_conf_secret m;
		uint8_t raw[IPC_MAX_PAYLOAD];
	} u;
	struct ipc_hdr h;
	ssize_t n;
	int rc = -1;

	n = ipc_recv(*(int *)arg, &h, u.raw, sizeof(u.raw), err, errlen);
	if (n == -1 || n == 0)
		snprintf(err, errlen, "secret \"%s\": not received from "
		    "gatewayd", s->name);
	else if (n > 0 && (h.type != IPC_CONF_SECRET ||
	    strcmp(u.m.name, s->name) != 0 || u.m.len > SECRET_MAX_LEN))
		snprintf(err, errlen, "secret \"%s\": gatewayd sent something "
		    "else", s->name);
	else if (n > 0) {
		memcpy(buf, u.m.value, u.m.len);
		*len = u.m.len;
		rc = 0;
	}
	explicit_bzero(&u, sizeof(u));
	return rc;
}

static int
secrets_from_parent(struct secrets *ss, const struct moat_config *cfg,
    int fd, char *err, size_t errlen)
{
	struct timeval wait = { 10, 0 }, none = { 0, 0 };
	int rc;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
	rc = secrets_load_from(ss, cfg, secret_from_ipc, &fd, err, errlen);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
	return rc;
}

static struct moat_config *
load_config(const char *path, int fd)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;

	/* Under gatewayd the configuration comes checked, on an fd. */
	cfg = fd >= 0 ? config_load_normalised(path, fd, &errs) :
	    config_load(path, NULL, &errs);
	if (fd >= 0)
		close(fd);
	if (cfg == NULL) {
		config_errors_print(stderr, &errs);
		config_errors_free(&errs);
		exit(EXIT_CONFIG);
	}
	return cfg;
}

static void
setup_listeners(const struct options *o, const struct moat_config *cfg)
{
	int i, fd;

	nlisteners = o->nlisten;
	for (i = 0; i < o->nlisten; i++)
		if (fcntl(o->listen_fd[i], F_SETFD, FD_CLOEXEC) < 0)
			fatal("--listen-fd %d", o->listen_fd[i]);
	/* Standalone: the gateway's address, and its IPv6 address with
	 * gateway.ipv6 (explicit and redirected connections of guests'
	 * IPv6). */
	if (nlisteners == 0) {
		listeners[0].kind = listeners[1].kind = K_EXPLICIT;
		nlisteners = o->listen == NULL && cfg->gw.ipv6 ? 2 : 1;
	}
	for (i = 0; i < nlisteners; i++) {
		fd = o->nlisten ? o->listen_fd[i] : bind_listener(cfg,
		    o->listen, o->user != NULL ? o->user : "nobody", i == 1);
		if (fd < 0)
			fatalx("--listen: expected ADDR:PORT");
		if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ||
		    ev_add(&listeners[i].ev, fd, EPOLLIN, on_listener,
		    &listeners[i]) < 0)
			fatal("listener fd %d", fd);
	}
}

/* Before anything is read: this process will hold secrets, which must
 * never reach a core file or another process of the same user through
 * ptrace or /proc/PID/mem. */
static void
nodump(void)
{
	struct rlimit rl = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &rl) < 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fatal("cannot disable core dumps");
}

/* Raise the descriptor limit to its hard limit (at most 65536); returns
 * it. */
static int
maxfiles(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
	(void)setrlimit(RLIMIT_NOFILE, &rl);
	return (int)rl.rlim_cur;
}

int
main(int argc, char *argv[])
{
	struct options o;
	struct moat_config *cfg;
	struct secrets secrets;
	pid_t parent = getppid();	/* gatewayd, when it started us */
	char err[512];

	nodump();
	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	log_init("moat-proxy", !o.foreground, o.verbose);
	cfg = load_config(o.conf, o.config_fd);
	/* Stand-alone, the proxy starts its own signer, which loads the CA
	 * key in its own process: fork before any secret is read here. */
	if (o.signer_fd < 0 && signer_fork_load(cfg->gw.state_dir, SIGNER_USER,
	    &o.signer_fd) == -1)
		return EXIT_SYSTEM;
	if (fcntl(o.signer_fd, F_SETFD, FD_CLOEXEC) < 0)
		fatal("--signer-fd %d", o.signer_fd);
	if ((o.ipc_fd >= 0 ? secrets_from_parent(&secrets, cfg, o.ipc_fd, err,
	    sizeof(err)) : secrets_load(&secrets, cfg, err, sizeof(err))) < 0) {
		log_warnx("%s", err);
		return EXIT_CONFIG;
	}
	if (tls_init(o.signer_fd, o.upstream_ca != NULL ? o.upstream_ca :
	    cfg->gw.proxy_upstream_ca) < 0)
		return EXIT_SYSTEM;
	if (ev_init() == -1 || tls_start() == -1)
		fatal("epoll_create1");
	conn_init(&http_app);
	setup_listeners(&o, cfg);
	if (o.ipc_fd >= 0 && ev_add(&ipc_ev, o.ipc_fd, EPOLLIN, on_ipc,
	    NULL) < 0)
		fatal("--ipc-fd %d", o.ipc_fd);
	audit_init(o.ipc_fd);
	parent_fd = o.ipc_fd;
	reqrule_init(o.ipc_fd);
	dns_init(cfg->gw.upstream, cfg->gw.nupstream, o.dns_port);
	setup_hostaddr();
	proxy.maxconns = maxfiles() / 3 - 16;
	privdrop_daemon(o.user, "nobody");
	/* As the worker's own user, as every pairing will be. */
	if (o.sockmap_fd >= 0 && o.peers_fd >= 0 &&
	    fcntl(o.sockmap_fd, F_SETFD, FD_CLOEXEC) == 0 &&
	    fcntl(o.peers_fd, F_SETFD, FD_CLOEXEC) == 0 &&
	    kpath_init(o.sockmap_fd, o.peers_fd) == 0)
		log_info("tunnels: through the kernel's socket map");
	log_info("kernel TLS: %s", tls_kernel_state());
	if (o.ipc_fd >= 0)
		die_with_parent(parent);
	if (!o.no_seccomp && sandbox_narrow(SANDBOX_PROXY) == -1)
		fatalx("cannot install the seccomp filter");
	signals();
	proxy.cfg = cfg;
	reload_init(cfg, o.conf);
	proxy.secrets = secrets_adopt(&secrets);
	/* One sandbox must leave room for the others: never half of all. */
	proxy.sb_max = (int)cfg->gw.proxy_per_sandbox;
	if (proxy.sb_max > (proxy.maxconns - 1) / 2)
		proxy.sb_max = (proxy.maxconns - 1) / 2;
	log_info("serving %zu sandboxes, %zu secrets, up to %d connections, "
	    "%d per sandbox", cfg->nsandboxes, proxy.secrets->n, proxy.maxconns,
	    proxy.sb_max);
	ev_timer_set(&tick_timer, ev_now() + 1000, tick, NULL);
	while (!stop)
		if (ev_run_once(-1) == -1)
			fatal("epoll_wait");
	audit_flush();
	log_info("stopping");
	secrets_wipe_all();
	tls_free();
	hostaddr_close(hostaddr);
	admit_host_free(&proxy.host);
	config_free(cfg);
	reload_free();
	return EXIT_OK;
}
