/*
 * nft-rules -- compile moat's policy into one nftables transaction, and
 * render, apply, verify or flush it.  See nft-rules(8).
 *
 * Exit codes: 0 success; 1 negative result (invalid config,
 * drift found by verify); 2 usage error; 3 system or kernel error (lib/exitcodes.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "nftrules.h"
#include "refusals.h"

#include "exitcodes.h"

struct cli {
	const char	*conf;
	struct nftr_opts opts;
	int		 argc;
	char		**argv;
	struct moat_config *cfg;
	struct nftr_ruleset *rs;
	struct nftr_ctx	*ctx;
	int		 owned;		/* nftr_owned(), for verify's advice */
};

static int	cmd_check(struct cli *);
static int	cmd_render(struct cli *);
static int	cmd_probe(struct cli *);
static int	cmd_apply(struct cli *);
static int	cmd_verify(struct cli *);
static int	cmd_flush(struct cli *);
static int	cmd_add(struct cli *);

static const struct cmd {
	const char	*name;
	bool		 config;	/* needs a config and a ruleset */
	bool		 kernel;	/* needs a netlink socket */
	int		 nargs;		/* extra arguments, -1 = any */
	int		(*fn)(struct cli *);
	const char	*help;
} cmds[] = {
	{ "check", true, false, 0, cmd_check,
	    "validate the config and build the policy; touch nothing" },
	{ "render", true, false, 0, cmd_render,
	    "print the transaction as nft syntax" },
	{ "probe", true, true, 0, cmd_probe,
	    "dry-run the transaction: does the kernel take every part?" },
	{ "apply", true, true, 0, cmd_apply,
	    "replace moat's tables with the policy, atomically" },
	{ "verify", true, true, 0, cmd_verify,
	    "compare the kernel's tables with the policy; diff on drift" },
	{ "flush", false, true, 0, cmd_flush,
	    "delete moat's tables (inet moat, bridge moat) only" },
	{ "add", true, true, -1, cmd_add,
	    "add SANDBOX TIMEOUT_MS ADDR... to its allowlist set" },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: nft-rules [-c FILE] [--host-only [--trunk IF]] "
	    "COMMAND\n\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-7s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n  -c FILE       config (default %s)\n"
	    "  --host-only   only the bridge table, for a KVM host in front "
	    "of a\n                separate gateway box\n"
	    "  --trunk IF    host-only: the port towards the gateway "
	    "(default gateway.uplink)\n"
	    "  --proxy-user U, --dns-user U\n"
	    "                users whose packets the output chain holds to "
	    "the guests'\n                policy (default %s, %s; "
	    "\"-\" for none)\n"
	    "  -v            more messages\n"
	    "  --version     print the version\n\n"
	    "exit: 0 ok, 1 invalid config or drift, 2 usage, "
	    "3 system or kernel error\n", MOAT_CONF_DEFAULT,
	    NFTR_PROXY_USER, NFTR_DNS_USER);
}

static int
cmd_check(struct cli *c)
{
	printf("%s: ok (%zu sandboxes, %zu netlink messages)\n", c->conf,
	    c->cfg->nsandboxes, nftr_ruleset_nmsgs(c->rs));
	return EXIT_OK;
}

static int
cmd_render(struct cli *c)
{
	nftr_render(stdout, c->rs);
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_SYSTEM;
}

static int
cmd_probe(struct cli *c)
{
	unsigned f;

	if (nftr_probe(c->ctx, c->rs, &f) == -1) {
		log_warnx("%s", nftr_error(c->ctx));
		return EXIT_SYSTEM;
	}
	printf("kernel takes the policy; table flags: owner %s, persist %s\n",
	    f & NFTR_F_OWNER ? "yes" : "no", f & NFTR_F_PERSIST ? "yes" : "no");
	return EXIT_OK;
}

/*
 * The gateway's rejects go through the kernel's ICMP rate limits; a
 * host-only bridge table builds its rejects itself, and the KVM host's
 * kernel is left alone.
 */
static bool
refusals_ours(const struct cli *c)
{
	return c->opts.mode != NFTR_MODE_HOST_ONLY && c->cfg->gw.fast_refusals;
}

static int
refusals_set(struct cli *c)
{
	char err[256];

	if (!refusals_ours(c))
		return 0;
	if (refusals_apply(&c->cfg->gw, err, sizeof(err)) == -1) {
		log_warnx("policy applied, but refusals stay rate-limited by "
		    "the kernel: %s", err);
		return -1;
	}
	return 0;
}

/* What repairs drift: while gatewayd holds the tables (flag owner),
 * only it may change them, and a reload makes it replace what differs. */
static const char *
repair(struct cli *c)
{
	static char buf[PATH_MAX + 64];

	if (c->owned)
		return "gatewayd ctl reload (gatewayd holds these tables: "
		    "nothing else may change them)";
	snprintf(buf, sizeof(buf), "nft-rules -c %s%s%s%s apply", c->conf,
	    c->opts.mode == NFTR_MODE_HOST_ONLY ? " --host-only" : "",
	    c->opts.trunk ? " --trunk " : "", c->opts.trunk ? c->opts.trunk :
	    "");
	return buf;
}

static int
refusals_check(struct cli *c)
{
	struct refusal_sysctls now;
	char why[256];

	if (!refusals_ours(c))
		return 0;
	if (refusals_read(&now, why, sizeof(why)) == -1) {
		log_warnx("verify: %s", why);
		return -1;
	}
	if (refusals_fast(&c->cfg->gw, &now, why, sizeof(why)))
		return 0;
	printf("refusals: not fast: %s (repair: %s)\n", why, c->owned ?
	    "gatewayd ctl reload" : "nft-rules apply");
	return 1;
}

static int
cmd_apply(struct cli *c)
{
	if (nftr_apply(c->ctx, c->rs) == -1) {
		log_warnx("apply failed, previous policy unchanged: %s",
		    nftr_error(c->ctx));
		return EXIT_SYSTEM;
	}
	log_info("applied policy for %zu sandboxes", c->cfg->nsandboxes);
	return refusals_set(c) == -1 ? EXIT_SYSTEM : EXIT_OK;
}

static int
cmd_verify(struct cli *c)
{
	char what[512];

	if ((c->owned = nftr_owned(c->ctx)) == -1) {
		log_warnx("verify: %s", nftr_error(c->ctx));
		return EXIT_SYSTEM;
	}
	/* Not moat's state, so not its exit code: a note, as gatewayd's
	 * watch reports it. */
	if (nftr_foreign_hooks(c->ctx, c->rs, what, sizeof(what)) > 0)
		log_warnx("note: %s: another table may accept or change "
		    "guests' packets first", what);
	switch (nftr_verify(c->ctx, c->rs, stdout)) {
	case 0:
		switch (refusals_check(c)) {
		case 0:
			return EXIT_OK;
		case 1:
			log_warnx("kernel state differs from %s", c->conf);
			return EXIT_FALSE;
		default:
			return EXIT_SYSTEM;
		}
	case 1:
		fflush(stdout);		/* the diff, then what to do about it */
		log_warnx("kernel state differs from %s (- the policy, + the "
		    "kernel)", c->conf);
		log_warnx("to repair: %s", repair(c));
		return EXIT_FALSE;
	default:
		log_warnx("verify: %s", nftr_error(c->ctx));
		return EXIT_SYSTEM;
	}
}

static int
cmd_flush(struct cli *c)
{
	if (nftr_flush(c->ctx) == -1) {
		log_warnx("flush: %s", nftr_error(c->ctx));
		return EXIT_SYSTEM;
	}
	return EXIT_OK;
}

static int
cmd_add(struct cli *c)
{
	struct moat_addr *a;
	char *end;
	unsigned long ms;
	int i, n = c->argc - 2, r;

	if (c->argc < 3) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (config_sandbox_by_name(c->cfg, c->argv[0]) == NULL) {
		log_warnx("no sandbox \"%s\" in %s", c->argv[0], c->conf);
		return EXIT_FALSE;
	}
	ms = strtoul(c->argv[1], &end, 10);
	if (*end != '\0' || ms == 0 || ms > UINT32_MAX) {
		log_warnx("timeout must be 1..%u milliseconds", UINT32_MAX);
		return EXIT_USAGE;
	}
	a = xcalloc((size_t)n, sizeof(*a));
	for (i = 0; i < n; i++)
		if (addr_parse(c->argv[i + 2], &a[i]) == -1) {
			log_warnx("bad address %s", c->argv[i + 2]);
			free(a);
			return EXIT_USAGE;
		}
	r = nftr_set_add(c->ctx, c->argv[0], a, (size_t)n, (uint32_t)ms);
	free(a);
	if (r == -1) {
		log_warnx("add: %s", nftr_error(c->ctx));
		return EXIT_SYSTEM;
	}
	return EXIT_OK;
}

static int
load(struct cli *c)
{
	struct moat_errors errs = { 0 };
	char err[512];

	if ((c->cfg = config_load(c->conf, NULL, &errs)) == NULL) {
		config_errors_print(stderr, &errs);
		config_errors_free(&errs);
		return EXIT_FALSE;
	}
	config_errors_free(&errs);
	if ((c->rs = nftr_build(c->cfg, &c->opts, err, sizeof(err))) == NULL) {
		log_warnx("%s: %s", c->conf, err);
		return EXIT_FALSE;
	}
	return EXIT_OK;
}

/* A user name or a numeric uid; "-" for none. */
static int
user_opt(const char *v, bool *has, uint32_t *uid)
{
	struct passwd *pw;
	char *end;
	unsigned long n;

	*has = false;
	if (strcmp(v, "-") == 0)
		return 0;
	if ((pw = getpwnam(v)) != NULL) {
		*uid = (uint32_t)pw->pw_uid;
		*has = true;
		return 0;
	}
	errno = 0;
	n = strtoul(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno != 0 || n >= UINT32_MAX) {
		log_warnx("%s: not a user name or uid", v);
		return -1;
	}
	*uid = (uint32_t)n;
	*has = true;
	return 0;
}

static int
run(struct cli *c, const struct cmd *cmd)
{
	int r;

	if (cmd->nargs >= 0 && c->argc != cmd->nargs) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (cmd->config && (r = load(c)) != EXIT_OK)
		return r;
	if (cmd->kernel && (c->ctx = nftr_ctx_new()) == NULL) {
		log_warn("netlink socket to nf_tables");
		return EXIT_SYSTEM;
	}
	return cmd->fn(c);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "host-only", no_argument, NULL, 'H' },
		{ "trunk", required_argument, NULL, 'T' },
		{ "version", no_argument, NULL, 'V' },
		{ "proxy-user", required_argument, NULL, 'P' },
		{ "dns-user", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c = { .conf = MOAT_CONF_DEFAULT };
	int ch, verbose = 0, r = EXIT_USAGE;
	size_t i;

	log_init("nft-rules", 0, 0);
	nftr_opts_users(&c.opts);
	while ((ch = getopt_long(argc, argv, "c:hv", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			c.conf = optarg;
			break;
		case 'H':
			c.opts.mode = NFTR_MODE_HOST_ONLY;
			break;
		case 'T':
			c.opts.trunk = optarg;
			break;
		case 'P':
			if (user_opt(optarg, &c.opts.has_proxy_uid,
			    &c.opts.proxy_uid) == -1)
				return EXIT_USAGE;
			break;
		case 'D':
			if (user_opt(optarg, &c.opts.has_dns_uid,
			    &c.opts.dns_uid) == -1)
				return EXIT_USAGE;
			break;
		case 'v':
			verbose++;
			break;
		case 'V':
			printf("%s %s\n", "nft-rules", MOAT_VERSION);
			exit(EXIT_OK);
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	log_setverbose(verbose);
	/* A trunk only means something to the host-only ruleset; silently
	 * ignoring it would leave the gateway port unprotected. */
	if (c.opts.trunk != NULL && c.opts.mode != NFTR_MODE_HOST_ONLY) {
		fprintf(stderr, "nft-rules: --trunk needs --host-only\n");
		return EXIT_USAGE;
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	c.argc = argc - optind - 1;
	c.argv = argv + optind + 1;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[optind], cmds[i].name) == 0)
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0]))
		usage(stderr);
	else
		r = run(&c, &cmds[i]);
	nftr_ctx_free(c.ctx);
	nftr_ruleset_free(c.rs);
	config_free(c.cfg);
	return r;
}
