/*
 * gatewayd -- the moat appliance daemon.
 *
 * This version is the first user of the config loader: `gatewayd -n`
 * validates a configuration and prints a summary (or, with -v, the
 * normalised configuration).  Applying, supervision, reload and the
 * control socket arrive with the gatewayd issue.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "log.h"

enum { EXIT_OK = 0, EXIT_CONFIG = 1, EXIT_USAGE = 2 };

static void
usage(FILE *fp)
{
	fprintf(fp,
"usage: gatewayd [-dnv] [-c FILE]\n"
"\n"
"The moat gateway daemon.\n"
"\n"
"  -c, --config FILE  configuration (default " MOAT_CONF_DEFAULT ");\n"
"                     sandboxes.d/*.conf beside it is read too\n"
"  -n, --check        check the configuration, print a summary, and exit\n"
"  -v, --verbose      with -n: print the normalised configuration;\n"
"                     otherwise: more log output\n"
"  -d, --foreground   stay in the foreground and log to stderr\n"
"  -h, --help         this help\n"
"\n"
"Exit status: 0 valid, 1 invalid configuration (each error is printed as\n"
"FILE:LINE: what was expected), 2 usage error.\n");
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "foreground", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf = MOAT_CONF_DEFAULT;
	struct moat_errors errs;
	struct moat_config *cfg;
	int ch, check = 0, verbose = 0;

	log_init("gatewayd", 0, 0);
	while ((ch = getopt_long(argc, argv, "c:nvdh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			conf = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			verbose++;
			break;
		case 'd':
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
	if (!check) {
		log_warnx("running as a daemon is not implemented in this "
		    "version; use -n to check a configuration");
		return EXIT_USAGE;
	}
	cfg = config_load(conf, NULL, &errs);
	if (cfg == NULL) {
		config_errors_print(stderr, &errs);
		fprintf(stderr, "%s: configuration invalid (%zu error%s)\n",
		    conf, errs.n, errs.n == 1 ? "" : "s");
		config_errors_free(&errs);
		return EXIT_CONFIG;
	}
	if (verbose)
		config_print(stdout, cfg);
	else
		config_summary(stdout, cfg);
	config_free(cfg);
	return EXIT_OK;
}
