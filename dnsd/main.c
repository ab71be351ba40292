/*
 * dnsd -- moat's filtering DNS resolver for sandboxes (see dnsd.8).
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dnsd.h"
#include "log.h"
#include "parent.h"
#include "privdrop.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
"usage: dnsd [-dnv] [-c FILE] [-u USER] [-l ADDR] [-p PORT] [options]\n"
"\n"
"Filtering DNS resolver for moat's sandboxes.\n"
"\n"
"  -c, --config FILE   configuration (default " MOAT_CONF_DEFAULT ")\n"
"  -n, --check         check the configuration and exit\n"
"  -d, --foreground    stay in the foreground, log to stderr\n"
"  -v, --verbose       more log output (repeat for debug)\n"
"  -u, --user USER     resolver's user (default " DNSD_USER_DEFAULT ")\n"
"  -l, --listen ADDR   address to serve (default: the gateway's)\n"
"  -p, --port PORT     port to serve (default 53)\n"
"      --no-nft        standalone: never touch nftables (testing)\n"
"      --cache-size N  cache cap in bytes (default: gateway.dns.cache_size)\n"
"      --rate QPS      queries per second per sandbox, 0 = unlimited,\n"
"                      burst twice that, for every sandbox (default:\n"
"                      gateway.dns.rate and each sandbox's dns_rate)\n"
"      --timeout MS    one upstream attempt over UDP (default 1000)\n"
"  Run by gatewayd (no privileged parent, no nftables of its own):\n"
"      --ipc-fd N      lib/ipc.h channel: IPC_SET_ADD and IPC_DNS_DROPPED\n"
"                      out, IPC_SET_ACK and IPC_RELOAD in\n"
"      --udp-fd N      bound UDP socket to serve on\n"
"      --tcp-fd N      bound, listening TCP socket to serve on\n"
"      --udp6-fd N, --tcp6-fd N  the same on the gateway's IPv6 address\n"
"      --config-fd N   the normalised configuration (-c names it only)\n"
"  -h, --help          this help\n"
"      --version       print the version\n"
"\n"
"Exit status: 0 done, 1 invalid configuration, 2 usage, 3 system error.\n");
}

enum { O_NO_NFT = 256, O_CACHE, O_RATE, O_TIMEOUT, O_IPC, O_UDP, O_TCP,
	O_CONFIG_FD, O_UDP6, O_TCP6 };

static long
number(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *s == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "dnsd: \"%s\": expected a number from %ld "
		    "to %ld\n", s, min, max);
		exit(EXIT_USAGE);
	}
	return v;
}

static void
parse_args(int argc, char *argv[], struct dnsd_opts *o, int *check,
    int *verbose)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "foreground", no_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "user", required_argument, NULL, 'u' },
		{ "listen", required_argument, NULL, 'l' },
		{ "port", required_argument, NULL, 'p' },
		{ "no-nft", no_argument, NULL, O_NO_NFT },
		{ "cache-size", required_argument, NULL, O_CACHE },
		{ "rate", required_argument, NULL, O_RATE },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "ipc-fd", required_argument, NULL, O_IPC },
		{ "udp-fd", required_argument, NULL, O_UDP },
		{ "tcp-fd", required_argument, NULL, O_TCP },
		{ "udp6-fd", required_argument, NULL, O_UDP6 },
		{ "tcp6-fd", required_argument, NULL, O_TCP6 },
		{ "config-fd", required_argument, NULL, O_CONFIG_FD },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "c:ndvu:l:p:h", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c': o->conf = optarg; break;
		case 'n': *check = 1; break;
		case 'd': o->foreground = true; break;
		case 'v': (*verbose)++; break;
		case 'u': o->user = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'p': o->port = (uint16_t)number(optarg, 1, 65535); break;
		case O_NO_NFT: o->no_nft = true; break;
		case O_CACHE:
			o->cache_bytes = (size_t)number(optarg, 4096, LONG_MAX);
			break;
		case O_RATE:
			o->qps = (double)number(optarg, 0, 10000000);
			o->burst = o->qps * 2;
			break;
		case O_TIMEOUT:
			o->timeout_ms = (uint32_t)number(optarg, 50, 30000);
			break;
		case O_IPC: o->ipc_fd = (int)number(optarg, 0, INT_MAX); break;
		case O_CONFIG_FD:
			o->config_fd = (int)number(optarg, 0, INT_MAX);
			break;
		case O_UDP: o->udp_fd = (int)number(optarg, 0, INT_MAX); break;
		case O_TCP: o->tcp_fd = (int)number(optarg, 0, INT_MAX); break;
		case O_UDP6:
			o->udp6_fd = (int)number(optarg, 0, INT_MAX);
			break;
		case O_TCP6:
			o->tcp6_fd = (int)number(optarg, 0, INT_MAX);
			break;
		case 'V':
			printf("%s %s\n", "dnsd", MOAT_VERSION);
			exit(EXIT_OK);
		case 'h':
			usage(stdout);
			exit(EXIT_OK);
		default:
			usage(stderr);
			exit(EXIT_USAGE);
		}
	}
	if (optind != argc || (o->udp_fd == -1) != (o->tcp_fd == -1) ||
	    (o->udp6_fd == -1) != (o->tcp6_fd == -1)) {
		usage(stderr);
		exit(EXIT_USAGE);
	}
}

int
bind_sockets(const char *addr, uint16_t port, const char *user, int *udp,
    int *tcp)
{
	struct sockaddr_storage ss;
	struct moat_addr a;
	socklen_t sl;
	int one = 1, rcv = 4 << 20;

	if (addr_parse(addr, &a) == -1) {
		log_warnx("listen address %s is not an address", addr);
		return -1;
	}
	sl = addr_to_sockaddr(&a, port, &ss);
	/* Made as user's: the policy lets only its packets answer guests. */
	*udp = socket_as(user, a.family, SOCK_DGRAM | SOCK_CLOEXEC);
	*tcp = socket_as(user, a.family, SOCK_STREAM | SOCK_CLOEXEC);
	if (*udp == -1 || *tcp == -1)
		return -1;
	(void)setsockopt(*udp, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	(void)setsockopt(*tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (a.family == AF_INET6 && (setsockopt(*udp, IPPROTO_IPV6,
	    IPV6_V6ONLY, &one, sizeof(one)) == -1 || setsockopt(*tcp,
	    IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == -1 ||
	    setsockopt(*udp, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) == -1 ||
	    setsockopt(*tcp, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) == -1)) {
		log_warn("IPv6 socket options");
		return -1;
	}
	if (bind(*udp, (struct sockaddr *)&ss, sl) == -1 ||
	    bind(*tcp, (struct sockaddr *)&ss, sl) == -1 ||
	    listen(*tcp, 128) == -1) {
		log_warn("cannot serve %s port %u", addr, port);
		return -1;
	}
	return 0;
}

static struct moat_config *
load(const char *path, int fd)
{
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;

	/* Under gatewayd the configuration comes checked, on an fd. */
	cfg = fd != -1 ? config_load_normalised(path, fd, &errs) :
	    config_load(path, NULL, &errs);
	if (fd != -1)
		close(fd);
	if (cfg == NULL) {
		config_errors_print(stderr, &errs);
		config_errors_free(&errs);
	}
	return cfg;
}

int
main(int argc, char *argv[])
{
	struct dnsd_opts o = {
		.conf = MOAT_CONF_DEFAULT, .user = DNSD_USER_DEFAULT,
		.port = 53, .udp_fd = -1, .tcp_fd = -1, .ipc_fd = -1,
		.udp6_fd = -1, .tcp6_fd = -1,
		.config_fd = -1,
		.cache_bytes = 0, .qps = -1, .burst = -1,
		.timeout_ms = 1000,
	};
	struct moat_config *cfg;
	pid_t parent = getppid();	/* gatewayd, when it started us */
	char gw[64];
	int check = 0, verbose = 0, udp, tcp;

	log_init("dnsd", 0, 0);
	parse_args(argc, argv, &o, &check, &verbose);
	if ((cfg = load(o.conf, o.config_fd)) == NULL)
		return EXIT_CONFIG;
	if (check) {
		config_free(cfg);
		return EXIT_OK;
	}
	log_init("dnsd", !o.foreground, verbose);
	if (o.udp_fd != -1) {
		udp = o.udp_fd;
		tcp = o.tcp_fd;
	} else if (bind_sockets(o.listen ? o.listen : addr_fmt(&cfg->gw.address,
	    gw, sizeof(gw)), o.port, o.user, &udp, &tcp) == -1)
		return EXIT_SYSTEM;
	/* With gateway.ipv6, also the gateway's IPv6 address (not with
	 * --listen, which names the one address to serve). */
	else if (cfg->gw.ipv6 && o.listen == NULL && bind_sockets(addr_fmt(
	    &cfg->gw.ipv6_address, gw, sizeof(gw)), o.port, o.user, &o.udp6_fd,
	    &o.tcp6_fd) == -1)
		return EXIT_SYSTEM;
	if (!o.foreground && daemon(0, 0) == -1)
		fatal("daemon");
	if (o.ipc_fd != -1) {
		/* Under gatewayd: it is the privileged side. */
		privdrop_daemon(o.user, NULL);
		die_with_parent(parent);
		return resolver_run(&o, cfg, udp, tcp, o.ipc_fd);
	}
	return priv_run(&o, cfg, udp, tcp);
}
