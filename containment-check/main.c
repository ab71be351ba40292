/*
 * containment-check -- scans outward from inside a guest and reports
 * whether the moat boundary holds.  See containment-check(8).
 *
 * Exit codes: 0 contained, 1 breach or failed control, 2 usage, system
 * or internal error, or refused to run outside a guest.
 */
#include <dirent.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cc.h"
#include "log.h"

static const char usage_text[] =
"usage: containment-check [options]\n"
"Scan outward from inside a moat guest; report every probe; exit non-zero\n"
"on any breach.  Run it only inside a guest or a test network namespace.\n"
"\n"
"  --gateway IP          the gateway (default: the default route)\n"
"  --expect MODE         open | allowlist | none (default open)\n"
"  --allow-name N        must resolve, to public addresses\n"
"  --deny-name N         must be refused by the gateway's resolver\n"
"  --rebind-name N       must not resolve to a private address\n"
"  --internet HOST:PORT  positive control: must be reachable (with\n"
"                        --expect none: must not be); [v6]:PORT is run\n"
"                        only when the guest has IPv6\n"
"  --target IP[:PORT]    also probe this host (default: common ports)\n"
"  --routed CIDR         an IPv6 network the gateway routes other than by\n"
"                        its default route: a few of its hosts are probed\n"
"  --targets-file FILE   the gateway's addresses, exceptions that must stay\n"
"                        closed, LAN ranges and routed IPv6 networks, as\n"
"                        provision writes them\n"
"                        (default " CC_TARGETS_FILE " if present)\n"
"  --resolver IP         public resolver for the bypass probes (replaces\n"
"                        9.9.9.9 1.1.1.1 8.8.8.8 and two IPv6 ones)\n"
"  --treat-as-public CIDR  not private for DNS judgements (test labs)\n"
"  --proxy-port N        the gateway's proxy port (3128; 0: none)\n"
"  --gateway-ca FILE     the proxy's CA certificate (default\n"
"                        " CC_GATEWAY_CA " if present)\n"
"  --timeout MS          per-probe timeout (1500; the gateway sweep uses\n"
"                        a fifth of it, at least 100)\n"
"  --concurrency N       probes in flight (2048)\n"
"  --host-checks, --no-host-checks   force the in-guest exposure checks\n"
"  --in-guest            confirm this is a guest when the scanner shares\n"
"                        PID 1's network namespace (any real VM)\n"
"  --quick               a bounded scan for schedules: the gateway's ports\n"
"                        1-1024 and well-known service ports instead of\n"
"                        all 65535; every other group as usual\n"
"  --json                machine-readable report\n"
"  -v, --verbose         list every probe\n"
"  -h, --help            this text\n"
"      --version         print the version\n"
"\n"
"exit: 0 contained, 1 breach or failed control, 2 usage or system error\n";

enum {
	OPT_GATEWAY = 256, OPT_EXPECT, OPT_ALLOW, OPT_DENY, OPT_REBIND,
	OPT_INTERNET, OPT_TARGET, OPT_RESOLVER, OPT_PUBLIC, OPT_PROXY,
	OPT_TIMEOUT, OPT_CONC, OPT_HOSTCHK, OPT_NOHOSTCHK, OPT_INGUEST,
	OPT_JSON, OPT_TFILE, OPT_GWCA, OPT_QUICK, OPT_ROUTED,
};

static const struct option longopts[] = {
	{ "gateway",		required_argument, NULL, OPT_GATEWAY },
	{ "expect",		required_argument, NULL, OPT_EXPECT },
	{ "allow-name",		required_argument, NULL, OPT_ALLOW },
	{ "deny-name",		required_argument, NULL, OPT_DENY },
	{ "rebind-name",	required_argument, NULL, OPT_REBIND },
	{ "internet",		required_argument, NULL, OPT_INTERNET },
	{ "target",		required_argument, NULL, OPT_TARGET },
	{ "targets-file",	required_argument, NULL, OPT_TFILE },
	{ "routed",		required_argument, NULL, OPT_ROUTED },
	{ "resolver",		required_argument, NULL, OPT_RESOLVER },
	{ "treat-as-public",	required_argument, NULL, OPT_PUBLIC },
	{ "proxy-port",		required_argument, NULL, OPT_PROXY },
	{ "gateway-ca",		required_argument, NULL, OPT_GWCA },
	{ "timeout",		required_argument, NULL, OPT_TIMEOUT },
	{ "concurrency",	required_argument, NULL, OPT_CONC },
	{ "host-checks",	no_argument,	   NULL, OPT_HOSTCHK },
	{ "no-host-checks",	no_argument,	   NULL, OPT_NOHOSTCHK },
	{ "in-guest",		no_argument,	   NULL, OPT_INGUEST },
	{ "json",		no_argument,	   NULL, OPT_JSON },
	{ "quick",		no_argument,	   NULL, OPT_QUICK },
	{ "verbose",		no_argument,	   NULL, 'v' },
	{ "version",		no_argument,	   NULL, 'V' },
	{ "help",		no_argument,	   NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void __attribute__((noreturn))
usage(const char *why, const char *arg)
{
	if (why != NULL)
		fprintf(stderr, "containment-check: %s%s%s\n", why,
		    arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "try: containment-check --help\n");
	exit(EXIT_USAGE);
}

static void
push_name(const char **v, size_t *n, const char *s)
{
	struct cc_hostport hp;
	char buf[300];

	if (*n >= CC_MAXLIST)
		usage("too many names", s);
	/* args_hostport checks the characters of a name; reuse it. */
	if (snprintf(buf, sizeof(buf), "%s:1", s) >= (int)sizeof(buf) ||
	    args_hostport(buf, &hp) == -1)
		usage("not a host name", s);
	v[(*n)++] = s;
}

/* One option with an argument; a table would need a handler per row for
 * these few lines each, so a switch it is. */
static void
set_option(struct cc_opts *o, int ch, const char *arg)
{
	unsigned u;

	switch (ch) {
	case OPT_GATEWAY:
		if (addr_parse(arg, &o->gateway) == -1)
			usage("not an address", arg);
		break;
	case OPT_EXPECT:
		if (args_mode(arg, &o->mode) == -1)
			usage("--expect takes open, allowlist or none", arg);
		break;
	case OPT_ALLOW:
		push_name(o->allow, &o->nallow, arg);
		break;
	case OPT_DENY:
		push_name(o->deny, &o->ndeny, arg);
		break;
	case OPT_REBIND:
		push_name(o->rebind, &o->nrebind, arg);
		break;
	case OPT_INTERNET:
		if (o->ninternet == 4 ||
		    args_hostport(arg, &o->internet[o->ninternet++]) == -1)
			usage("--internet takes HOST:PORT (at most 4)", arg);
		break;
	case OPT_TFILE:
		o->targets_file = arg;
		break;
	case OPT_GWCA:
		o->gateway_ca = arg;
		break;
	case OPT_TARGET:
		if (o->ntargets == CC_MAXLIST ||
		    args_target(arg, &o->targets[o->ntargets++]) == -1)
			usage("--target takes IP or IP:PORT", arg);
		break;
	case OPT_ROUTED:
		if (args_routed(arg, o) != 0)
			usage("--routed takes an IPv6 prefix, /8 to /120, "
			    "without host bits (at most 64)", arg);
		break;
	case OPT_RESOLVER:
		if (o->nresolvers == CC_MAXLIST ||
		    addr_parse(arg, &o->resolvers[o->nresolvers++]) == -1)
			usage("--resolver takes an address", arg);
		break;
	case OPT_PUBLIC:
		if (o->npub == CC_MAXLIST ||
		    prefix_parse(arg, &o->pub[o->npub++]) == -1)
			usage("--treat-as-public takes a CIDR prefix", arg);
		break;
	case OPT_PROXY:
		if (args_uint(arg, 0, 65535, &u) == -1)
			usage("--proxy-port takes 0..65535", arg);
		o->proxy_port = (uint16_t)u;
		break;
	case OPT_TIMEOUT:
		if (args_uint(arg, 50, 30000, &o->timeout_ms) == -1)
			usage("--timeout takes 50..30000 ms", arg);
		break;
	case OPT_CONC:
		if (args_uint(arg, 1, 16384, &o->concurrency) == -1)
			usage("--concurrency takes 1..16384", arg);
		break;
	}
}

/* The targets the guest cannot learn by itself.  A missing default file
 * is fine (a guest not made by provision); a named one must be there. */
static void
read_targets(struct cc_opts *o)
{
	const char *path = o->targets_file ? o->targets_file : CC_TARGETS_FILE;
	char line[256];
	FILE *f;
	int lineno = 0, r;

	if ((f = fopen(path, "r")) == NULL) {
		if (o->targets_file != NULL)
			usage("cannot read --targets-file", path);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		if ((r = args_targets_line(line, o)) == 0)
			continue;
		fclose(f);
		snprintf(line, sizeof(line), "%s:%d", path, lineno);
		usage(r == -2 ? "too many targets in" : "expected \"gateway "
		    "IP[:PORT]\", \"exception IP[:PORT]\", \"lan CIDR\" or "
		    "\"routed CIDR\" at",
		    line);
	}
	fclose(f);
}

/* The CA the proxy signs with when it terminates TLS: a handshake with a
 * certificate from it is the proxy, not the far end.  A missing default
 * file is fine (no interception of TLS, or a guest not made by provision). */
static void
read_gateway_ca(const struct cc_opts *o)
{
	const char *path = o->gateway_ca ? o->gateway_ca : CC_GATEWAY_CA;

	if (tls_set_gateway_ca(path) == -1 && o->gateway_ca != NULL)
		usage("no certificate in --gateway-ca", path);
}

static void
parse_args(int argc, char **argv, struct cc_opts *o)
{
	int ch;

	memset(o, 0, sizeof(*o));
	o->gateway.family = AF_UNSPEC;
	o->mode = M_OPEN;
	o->proxy_port = 3128;
	o->timeout_ms = 1500;
	o->concurrency = 2048;
	o->host_checks = -1;
	while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'V':
			printf("%s %s\n", "containment-check", MOAT_VERSION);
			exit(EXIT_OK);
		case 'h':
			fputs(usage_text, stdout);
			exit(EXIT_OK);
		case 'v':
			o->verbose = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_INGUEST:
			o->in_guest = true;
			break;
		case OPT_QUICK:
			o->quick = true;
			break;
		case OPT_HOSTCHK:
		case OPT_NOHOSTCHK:
			o->host_checks = ch == OPT_HOSTCHK;
			break;
		case '?':
			usage(NULL, NULL);
		default:
			set_option(o, ch, optarg);
		}
	}
	if (optind != argc)
		usage("unexpected argument", argv[optind]);
	read_targets(o);
	read_gateway_ca(o);
}

/*
 * The scanner sends packets to private ranges; on a host that would scan
 * real networks.  Inside a test network namespace our namespace differs
 * from PID 1's.  Inside a VM it is the same, as on a bare host, and
 * nothing tells the two apart reliably (a host may itself be a VM), so
 * there the operator must say --in-guest.  When /proc/1/ns/net cannot be
 * read (not root, or a confined container), a namespace made by
 * `ip netns add` still shows itself under /run/netns; failing that we
 * cannot tell and ask for the flag too.
 * Returns 1 in a separate namespace, 0 in PID 1's, -1 unknown.
 */
static bool
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev;
}

static int
own_netns(void)
{
	struct stat self, other;
	struct dirent *de;
	char path[300];
	DIR *dir;
	int found = -1;

	if (stat("/proc/self/ns/net", &self) == -1)
		return -1;
	if (stat("/proc/1/ns/net", &other) == 0)
		return !same_file(&self, &other);
	if ((dir = opendir("/run/netns")) == NULL)
		return -1;
	while (found == -1 && (de = readdir(dir)) != NULL) {
		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		if (de->d_name[0] != '.' && stat(path, &other) == 0 &&
		    same_file(&self, &other))
			found = 1;
	}
	closedir(dir);
	return found;
}

static void
run_phase(struct cc_probes *v, size_t maxfly)
{
	if (engine_run(v->v, v->n, (unsigned)maxfly) == -1) {
		log_warnx("the probe engine failed");
		exit(EXIT_SYSTEM);
	}
}

/*
 * The gateway sweep (65,535 probes) is most of the scan's work and needs
 * nothing from phase 1, so loops in threads of their own take it from a
 * shared pool while the main thread runs phases 1 and 2 -- IPv4 and IPv6
 * alike -- and then joins them.  One loop per CPU (at most four); the
 * sweepers share half of --concurrency, phases 1 and 2 have the other.
 */
#define MAX_SWEEPERS	4

struct sweeper {
	pthread_t	 t;
	struct cc_pool	*pool;
	size_t		 maxfly;
	int		 rc;
};

static void *
sweeper_main(void *arg)
{
	struct sweeper *s = arg;

	s->rc = engine_run_pool(s->pool, s->maxfly);
	return NULL;
}

/* Starts the sweepers; returns how many run and the main loop's share. */
static size_t
sweep_start(struct sweeper *sw, struct cc_pool *pool, size_t budget,
    size_t *main_share)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t i, n, share;

	n = cpus < 1 ? 1 : cpus > MAX_SWEEPERS ? MAX_SWEEPERS : (size_t)cpus;
	share = budget / (2 * n);
	if (share == 0)
		n = 0;
	for (i = 0; i < n; i++) {
		sw[i] = (struct sweeper){ .pool = pool, .maxfly = share };
		if (pthread_create(&sw[i].t, NULL, sweeper_main, &sw[i]) != 0)
			break;
	}
	*main_share = budget - i * share;
	return i;
}

static void
sweep_join(struct sweeper *sw, size_t n, struct cc_pool *pool,
    size_t maxfly)
{
	size_t i;
	int rc = engine_run_pool(pool, maxfly);

	for (i = 0; i < n; i++) {
		pthread_join(sw[i].t, NULL);
		if (sw[i].rc == -1)
			rc = -1;
	}
	if (rc == -1) {
		log_warnx("the probe engine failed");
		exit(EXIT_SYSTEM);
	}
}

int
main(int argc, char **argv)
{
	struct cc_opts o;
	struct cc_disc d;
	struct cc_probes ph1 = { 0 }, ph2 = { 0 }, sweep = { 0 }, loc = { 0 };
	struct cc_probes all = { 0 };
	struct cc_probes *order[] = { &ph1, &ph2, &sweep, &loc };
	struct sweeper sw[MAX_SWEEPERS];
	struct cc_pool pool;
	struct moat_rangeset *priv;
	uint64_t t0;
	int ns, host, rc;
	size_t i, k, nsw, share;

	log_init("containment-check", 0, 0);
	parse_args(argc, argv, &o);
	ns = own_netns();
	if (ns != 1 && !o.in_guest) {
		log_warnx("refusing to run: this process shares PID 1's network "
		    "namespace (or cannot tell), as on a bare host; inside a "
		    "guest VM add --in-guest");
		return EXIT_USAGE;
	}
	host = o.host_checks >= 0 ? o.host_checks : ns != 1;
	if ((priv = rangeset_new_private(o.pub, o.npub)) == NULL)
		fatalx("cannot build the private range table");

	t0 = engine_now_us();
	discover(&d, host);
	if (o.gateway.family != AF_UNSPEC)
		d.gateway = o.gateway;
	if (d.gateway.family == AF_UNSPEC)
		log_warnx("no default gateway and no --gateway: the gateway "
		    "probes and controls cannot run");
	plan_sweep(&sweep, &o, &d);
	pool = (struct cc_pool){ .p = sweep.v, .n = sweep.n };
	nsw = sweep_start(sw, &pool, engine_budget(o.concurrency), &share);
	plan_phase1(&ph1, &o, &d);
	run_phase(&ph1, share);
	discover_neigh(&d);	/* the gateway's entry exists now */
	plan_phase2(&ph2, &o, &d, &ph1);
	local_checks(&loc, &d, host);
	run_phase(&ph2, share);
	run_phase(&loc, share);
	sweep_join(sw, nsw, &pool, share);

	/* One array for the report, phase 1 first, the sweep after 2. */
	for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		for (i = 0; i < order[k]->n; i++)
			*probes_add(&all) = order[k]->v[i];
		free(order[k]->v);
	}
	if (d.gateway.family == AF_UNSPEC) {	/* no control could run */
		struct cc_probe *p = probes_add(&all);

		p->cls = C_CONTROL;
		p->kind = K_LOCAL;
		p->expect = E_REACH;
		p->verdict = V_SKIPPED;
		p->what = "a gateway to probe";
		snprintf(p->evidence, sizeof(p->evidence),
		    "no default route and no --gateway");
	}
	report_judge(all.v, all.n, priv);
	if (o.json)
		rc = report_json(all.v, all.n, &d, &o, engine_now_us() - t0);
	else
		rc = report_human(all.v, all.n, &d, &o, engine_now_us() - t0);
	probes_free(&all);
	rangeset_free(priv);
	tls_cleanup();
	return rc;
}
