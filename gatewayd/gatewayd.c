/*
 * gatewayd -- the moat appliance daemon, and its control client.
 *
 *   gatewayd [-dnvX] [-c FILE] [-s SOCKET] [-a AUDITLOG]
 *   gatewayd ctl [-s SOCKET] VERB [--json] [ARGS]
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "parent/gw.h"
#include "parent/team.h"
#include "parent/network.h"
#include "log.h"
#include "parent/sockmap.h"

#include "exitcodes.h"

static void
usage(FILE *fp)
{
	fprintf(fp,
"usage: gatewayd [-dnvX] [-c FILE] [-s SOCKET] [-a FILE]\n"
"       gatewayd --teardown [-c FILE] [-s SOCKET]\n"
"       gatewayd ctl [-s SOCKET] VERB [--json] [ARGS]   (gatewayd ctl --help)\n"
"       gatewayd register --box ADDR:PORT --ca F --cert F --key F REQUEST...\n"
"\n"
"The moat gateway daemon: applies the policy, sets up its bridge, address\n"
"and forwarding (gateway.manage_network), supervises dnsd and the proxy,\n"
"reloads on SIGHUP, keeps an audit log, answers a control socket.\n"
"\n"
"  -c, --config FILE  configuration (default " MOAT_CONF_DEFAULT ")\n"
"  -n, --check        check the configuration, print a summary, exit\n"
"  -v, --verbose      with -n: print the normalised configuration;\n"
"                     otherwise: debug log output, dnsd's and the\n"
"                     proxy's too\n"
"  -d, --foreground   stay in the foreground, log to stderr\n"
"  -s, --socket PATH  control socket (default " GW_SOCK_DEFAULT ")\n"
"  -a, --audit FILE   audit log (default " GW_AUDIT_DEFAULT ")\n"
"  -B, --bindir DIR   where dnsd and moat-proxy are (default: beside gatewayd)\n"
"  -X, --no-children  do not start dnsd or the proxy\n"
"      --teardown     undo the network changes gatewayd made, then exit\n"
"      --tunnels auto|splice  spliced tunnels through the kernel's socket\n"
"                     map where it can (auto), or splice(2) (the default)\n"
"      --upstream-ca FILE  extra CA the proxy trusts upstream (tests)\n"
"      --test-clock FILE   secrets' budgets read the time from FILE (tests)\n"
"  -h, --help         this help\n"
"      --version      print the version\n"
"\n"
"ctl verbs: status, sandboxes, list, counters, log [-f], reload,\n"
"create, start, stop, destroy, secret set, secret list.\n"
"\n"
"Exit status: 0 ok, 1 invalid configuration or start-up failure, 2 usage;\n"
"ctl: 0 ok, 1 the daemon refused, 2 usage, 3 cannot reach the daemon.\n");
}

static int
check(const char *conf, int verbose, const char *teardown_sock)
{
	struct moat_errors errs;
	struct moat_config *cfg;
	char *warnings;
	struct gw_net net;
	int rc;

	/* --teardown undoes what was recorded whatever the host has now. */
	cfg = teardown_sock ? config_load(conf, NULL, &errs) :
	    net_config_load(conf, &errs);
	if (cfg == NULL) {
		config_errors_print(stderr, &errs);
		fprintf(stderr, "%s: configuration invalid (%zu error%s)\n",
		    conf, errs.n, errs.n == 1 ? "" : "s");
		config_errors_free(&errs);
		return EXIT_CONFIG;
	}
	if (teardown_sock != NULL) {
		config_errors_free(&errs);
		rc = net_teardown(cfg, teardown_sock) == 0 ? EXIT_OK : EXIT_CONFIG;
		config_free(cfg);
		return rc;
	}
	if ((warnings = team_config_warnings(cfg, &errs)) != NULL)
		fputs(warnings, stderr);
	free(warnings);
	config_errors_free(&errs);
	if (verbose)
		config_print(stdout, cfg);
	else
		config_summary(stdout, cfg);
	/* What is wrong with the network here, without changing it. */
	net_walk(cfg, false, &net);
	net_print_warnings(stderr, &net);
	config_free(cfg);
	return EXIT_OK;
}

static char *
self_dir(void)
{
	char buf[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return xstrdup("/usr/sbin");
	buf[n] = '\0';
	if ((slash = strrchr(buf, '/')) != NULL)
		*slash = '\0';
	return xstrdup(buf);
}

static const char *
absolute(const char *path)
{
	char cwd[PATH_MAX], *out;

	if (path[0] == '/' || getcwd(cwd, sizeof(cwd)) == NULL)
		return path;
	xasprintf(&out, "%s/%s", cwd, path);
	return out;
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "foreground", no_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "audit", required_argument, NULL, 'a' },
		{ "bindir", required_argument, NULL, 'B' },
		{ "no-children", no_argument, NULL, 'X' },
		{ "upstream-ca", required_argument, NULL, 'U' },
		{ "test-clock", required_argument, NULL, 'K' },
		{ "version", no_argument, NULL, 'V' },
		{ "teardown", no_argument, NULL, 'T' },
		{ "tunnels", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gw_opts o = { MOAT_CONF_DEFAULT, GW_SOCK_DEFAULT, NULL, NULL,
	    NULL, false, false, 0, NULL };
	int ch, checkonly = 0, teardown = 0;

	log_init("gatewayd", 0, 0);
	if (argc > 1 && strcmp(argv[1], "register") == 0)
		return register_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "ctl") == 0) {
		int i = 2;
		if (argc > 3 && strcmp(argv[2], "-s") == 0) {
			o.sock = argv[3];
			i = 4;
		}
		if (argc > i && (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0)) {
			ctl_usage(stdout);
			return EXIT_OK;
		}
		return ctl_main(o.sock, argc - i, argv + i);
	}
	while ((ch = getopt_long(argc, argv, "c:nvds:a:B:Xh", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c': o.conf = optarg; break;
		case 'n': checkonly = 1; break;
		case 'v': o.verbose++; break;
		case 'd': o.foreground = true; break;
		case 's': o.sock = optarg; break;
		case 'a': o.audit_path = optarg; break;
		case 'B': o.bindir = optarg; break;
		case 'X': o.no_children = true; break;
		case 'U': o.upstream_ca = optarg; break;
		case 'K': o.test_clock = optarg; break;
		case 'V':
			printf("%s %s\n", "gatewayd", MOAT_VERSION);
			exit(0);
		case 'T': teardown = 1; break;
		case 'P':
			if (sockmap_choose(optarg) == -1) {
				fprintf(stderr, "gatewayd: --tunnels: expected "
				    "auto or splice, not %s\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* Here the values are read as root anyway: a value that holds a
	 * placeholder is a configuration error, with its file and line. */
	config_check_values(true);
	if (checkonly || teardown)
		return check(o.conf, o.verbose, teardown ? o.sock : NULL);
	if (o.bindir == NULL)
		o.bindir = self_dir();
	/* daemon(3) changes to "/": every path must be absolute by then. */
	o.conf = absolute(o.conf);
	o.sock = absolute(o.sock);
	o.bindir = absolute(o.bindir);
	if (o.audit_path != NULL)
		o.audit_path = absolute(o.audit_path);
	if (o.upstream_ca != NULL)
		o.upstream_ca = absolute(o.upstream_ca);
	if (o.test_clock != NULL)
		o.test_clock = absolute(o.test_clock);
	return gw_run(&o) == 0 ? EXIT_OK : EXIT_CONFIG;
}
