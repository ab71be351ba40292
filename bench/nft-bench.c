/*
 * nft-bench.c -- timing driver for bench/nft-apply.sh: the library's side
 * of the comparison, without process start-up or config parsing.
 *
 *   nft-bench apply CONF RUNS        median ms of nftr_apply()
 *   nft-bench add CONF SANDBOX RUNS  p50/p99 us of one nftr_set_add()
 *   nft-bench update CONF NEWCONF RUNS
 *                                    median ms of nftr_update() from CONF
 *                                    to NEWCONF (and back, untimed), its
 *                                    message count, and "full" if it fell
 *                                    back to replacing everything
 *   nft-bench render CONF            nft syntax of the policy as gatewayd
 *                                    builds it (per-sandbox sets mutable),
 *                                    for nft to load and then increment
 *
 * Run it only inside a network namespace of the benchmark's own.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "log.h"
#include "nftrules.h"

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct nftr_ruleset *
load_opts(const char *path, struct moat_config **cfgp,
    const struct nftr_opts *opts)
{
	struct moat_errors errs = { 0 };
	struct nftr_ruleset *rs;
	char err[256];

	if ((*cfgp = config_load(path, NULL, &errs)) == NULL) {
		config_errors_print(stderr, &errs);
		exit(1);
	}
	if ((rs = nftr_build(*cfgp, opts, err, sizeof(err))) == NULL)
		fatalx("%s", err);
	return rs;
}

static struct nftr_ruleset *
load(const char *path, struct moat_config **cfgp)
{
	return load_opts(path, cfgp, NULL);
}

/* Timed old -> new, untimed new -> old, runs times: one sandbox added
 * (or whatever the two configs differ by) on a policy in the kernel. */
static void
bench_update(struct nftr_ctx *ctx, const char *oldp, const char *newp,
    double *t, int runs)
{
	struct nftr_opts o = { .mode = NFTR_MODE_GATEWAY, .incremental = true };
	struct nftr_update_stats st;
	struct moat_config *c1, *c2;
	struct nftr_ruleset *a, *b;
	int i;

	a = load_opts(oldp, &c1, &o);
	b = load_opts(newp, &c2, &o);
	if (nftr_apply(ctx, a) == -1)
		fatalx("%s", nftr_error(ctx));
	for (i = 0; i < runs; i++) {
		double t0 = now_us();

		if (nftr_update(ctx, a, b, &st) == -1)
			fatalx("%s", nftr_error(ctx));
		t[i] = (now_us() - t0) / 1000;
		if (st.full)
			fatalx("update fell back to a full replace: %s", st.why);
		if (nftr_update(ctx, b, a, NULL) == -1)
			fatalx("%s", nftr_error(ctx));
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_d);
	printf("%.2f %zu\n", t[runs / 2], st.nmsgs);
	nftr_ruleset_free(a);
	nftr_ruleset_free(b);
	config_free(c1);
	config_free(c2);
}

int
main(int argc, char *argv[])
{
	struct moat_config *cfg;
	struct nftr_ruleset *rs;
	struct nftr_ctx *ctx;
	double *t;
	int i, runs;
	unsigned f;

	log_init("nft-bench", 0, 0);
	if (argc == 3 && strcmp(argv[1], "render") == 0) {
		struct nftr_opts o = { .mode = NFTR_MODE_GATEWAY,
		    .incremental = true };

		rs = load_opts(argv[2], &cfg, &o);
		nftr_render(stdout, rs);
		nftr_ruleset_free(rs);
		config_free(cfg);
		return 0;
	}
	if (argc < 4)
		fatalx("usage: nft-bench apply CONF RUNS | add CONF SANDBOX RUNS | "
		    "update CONF NEWCONF RUNS");
	rs = load(argv[2], &cfg);
	if ((ctx = nftr_ctx_new()) == NULL)
		fatal("netlink");
	if (nftr_probe(ctx, NULL, &f) == -1)
		fatalx("%s", nftr_error(ctx));
	runs = atoi(argv[argc - 1]);
	if (runs < 1 || runs > 100000)
		fatalx("bad run count");
	t = xcalloc((size_t)runs, sizeof(*t));
	if (strcmp(argv[1], "apply") == 0) {
		for (i = 0; i < runs; i++) {
			double t0 = now_us();

			if (nftr_apply(ctx, rs) == -1)
				fatalx("%s", nftr_error(ctx));
			t[i] = (now_us() - t0) / 1000;
		}
		qsort(t, (size_t)runs, sizeof(*t), cmp_d);
		printf("%.1f\n", t[runs / 2]);
	} else if (strcmp(argv[1], "add") == 0 && argc == 5) {
		if (nftr_apply(ctx, rs) == -1)
			fatalx("%s", nftr_error(ctx));
		for (i = 0; i < runs; i++) {
			struct moat_addr a = { .family = AF_INET };
			uint32_t v = htonl(0xcb007100u + (uint32_t)(i % 250) + 1);
			double t0;

			memcpy(a.a, &v, 4);
			t0 = now_us();
			if (nftr_set_add(ctx, argv[3], &a, 1, 60000) == -1)
				fatalx("%s", nftr_error(ctx));
			t[i] = now_us() - t0;
		}
		qsort(t, (size_t)runs, sizeof(*t), cmp_d);
		printf("%.0f %.0f\n", t[runs / 2], t[runs * 99 / 100]);
	} else if (strcmp(argv[1], "update") == 0 && argc == 5) {
		bench_update(ctx, argv[2], argv[3], t, runs);
	} else
		fatalx("unknown mode %s", argv[1]);
	free(t);
	nftr_ctx_free(ctx);
	nftr_ruleset_free(rs);
	config_free(cfg);
	return 0;
}
