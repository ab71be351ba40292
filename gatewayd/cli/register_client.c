/*
 * register_client.c -- `gatewayd register`: a KVM host's side of the
 * registration endpoint (register.c), by hand.  Sends one request with
 * the host's key pair through lib/regclient.c (which provision uses
 * too), prints the box's answer and exits 0 only on "ok".
 *
 *   gatewayd register --box ADDR:PORT --ca BOX.crt --cert HOST.crt
 *       --key HOST.key REQUEST...
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "exitcodes.h"
#include "../gatewayd.h"
#include "regclient.h"

#define REGISTER_TIMEOUT_S	30

static int
usage(void)
{
	fputs("usage: gatewayd register --box ADDR:PORT --ca BOX.crt "
	    "--cert HOST.crt --key HOST.key\n"
	    "           (register NAME ADDRESS MAC EGRESS | remove NAME | "
	    "sync NAME,...|- | list)\n", stderr);
	return EXIT_USAGE;
}

static void
print_line(const char *line, void *arg)
{
	printf("%s\n", line);
}

/* The request words joined by spaces: one line. */
static int
join(char *req, size_t len, int argc, char *argv[])
{
	size_t n = 0;
	int i, w;

	for (i = 0; i < argc; i++) {
		w = snprintf(req + n, len - n, "%s%s", i ? " " : "", argv[i]);
		if (w < 0 || (size_t)w >= len - n)
			return -1;
		n += (size_t)w;
	}
	return 0;
}

int
register_main(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "box", required_argument, NULL, 'b' },
		{ "ca", required_argument, NULL, 'a' },
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 }
	};
	const char *box = NULL, *ca = NULL, *cert = NULL, *key = NULL;
	char req[1024], why[512];
	struct regclient *rc;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (c) {
		case 'b': box = optarg; break;
		case 'a': ca = optarg; break;
		case 'c': cert = optarg; break;
		case 'k': key = optarg; break;
		default: return usage();
		}
	}
	if (!box || !ca || !cert || !key || optind >= argc ||
	    join(req, sizeof(req), argc - optind, argv + optind) == -1)
		return usage();
	rc = regclient_open(box, ca, NULL, cert, key, REGISTER_TIMEOUT_S, why,
	    sizeof(why));
	if (rc == NULL) {
		fprintf(stderr, "gatewayd register: %s\n", why);
		return EXIT_SYSTEM;
	}
	r = regclient_request(rc, req, print_line, NULL, why, sizeof(why));
	regclient_close(rc);
	if (r == REG_OK)
		puts("ok");
	else if (r == REG_REFUSED)
		printf("error %s\n", why);
	else
		fprintf(stderr, "gatewayd register: %s\n", why);
	fflush(stdout);
	return r == REG_OK ? EXIT_OK : r == REG_REFUSED ? EXIT_FALSE :
	    EXIT_SYSTEM;
}
