/*
 * test_cc_report.c -- the judgement table: for every expectation, which
 * verdicts are a breach, a failed control or fine.  This is the heart of
 * the exit code, so every cell is spelt out.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../containment-check/cc.h"

static struct moat_rangeset *priv;

static enum cc_outcome
judge(enum cc_expect e, enum cc_verdict v)
{
	struct cc_probe p;

	memset(&p, 0, sizeof(p));
	p.kind = K_TCP;
	p.expect = e;
	p.verdict = v;
	report_judge(&p, 1, priv);
	return p.outcome;
}

static void
transport_table(void **state)
{
	static const struct {
		enum cc_expect	e;
		/* reachable closed blocked filtered proxy-refused connected:
		 * a connection where the gateway's proxy may answer, without
		 * telling who did, is no proof of reach and no refusal. */
		enum cc_outcome	o[6];
	} rows[] = {
		{ E_DENY, { O_BREACH, O_BREACH, O_OK, O_OK, O_OK, O_BREACH } },
		{ E_REACH, { O_PASS, O_FAILED, O_FAILED, O_FAILED, O_FAILED,
		    O_FAILED } },
		{ E_UNREACH, { O_BREACH, O_BREACH, O_PASS, O_PASS, O_PASS,
		    O_BREACH } },
		{ E_INFO, { O_INFO, O_INFO, O_INFO, O_INFO, O_INFO, O_INFO } },
	};
	static const enum cc_verdict vs[6] = {
		V_REACHABLE, V_CLOSED, V_BLOCKED, V_FILTERED, V_PROXY,
		V_CONNECTED,
	};
	size_t i, j;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		for (j = 0; j < 6; j++)
			if (judge(rows[i].e, vs[j]) != rows[i].o[j])
				fail_msg("expect %d verdict %s", rows[i].e,
				    verdict_name(vs[j]));
	assert_int_equal(judge(E_ABSENT, V_FOUND), O_BREACH);
	assert_int_equal(judge(E_ABSENT, V_ABSENT), O_OK);
	assert_int_equal(judge(E_ABSENT, V_SKIPPED), O_OK);
	assert_int_equal(judge(E_DENY, V_SKIPPED), O_OK);
}

static enum cc_outcome
judge_dns(enum cc_expect e, int rcode, const char *addr)
{
	struct cc_dns_reply r;
	struct cc_probe p;

	memset(&p, 0, sizeof(p));
	memset(&r, 0, sizeof(r));
	p.kind = K_UDP;
	p.app = A_DNS;
	p.expect = e;
	p.verdict = V_REACHABLE;
	r.rcode = rcode;
	if (addr != NULL) {
		assert_int_equal(addr_parse(addr, &r.addr[0]), 0);
		r.naddr = r.nanswer = 1;
	}
	p.dns = &r;
	report_judge(&p, 1, priv);
	return p.outcome;
}

static void
dns_table(void **state)
{
	assert_int_equal(judge_dns(E_DNS_DENY, 5, NULL), O_OK);
	assert_int_equal(judge_dns(E_DNS_DENY, 3, NULL), O_OK);
	assert_int_equal(judge_dns(E_DNS_DENY, 0, "203.0.113.10"), O_BREACH);
	assert_int_equal(judge_dns(E_DNS_ALLOW, 0, "198.51.100.7"), O_BREACH);
	assert_int_equal(judge_dns(E_DNS_ALLOW, 0, "203.0.113.10"), O_PASS);
	assert_int_equal(judge_dns(E_DNS_ALLOW, 5, NULL), O_FAILED);
	assert_int_equal(judge_dns(E_DNS_REBIND, 0, "192.168.77.2"), O_BREACH);
	assert_int_equal(judge_dns(E_DNS_REBIND, 0, "::ffff:10.0.0.1"),
	    O_BREACH);
	assert_int_equal(judge_dns(E_DNS_REBIND, 0, "fd00::1"), O_BREACH);
	assert_int_equal(judge_dns(E_DNS_REBIND, 0, "203.0.113.10"), O_OK);
	assert_int_equal(judge_dns(E_DNS_REBIND, 3, NULL), O_OK);
	assert_int_equal(judge_dns(E_DNS_ANSWER, 5, NULL), O_PASS);
}

static void
dns_no_reply(void **state)
{
	struct cc_probe p;

	memset(&p, 0, sizeof(p));
	p.kind = K_UDP;
	p.app = A_DNS;
	p.verdict = V_FILTERED;
	p.expect = E_DNS_ANSWER;
	report_judge(&p, 1, priv);
	assert_int_equal(p.outcome, O_FAILED);
	p.expect = E_DNS_ALLOW;
	report_judge(&p, 1, priv);
	assert_int_equal(p.outcome, O_FAILED);
}

static void
proxy_status(void **state)
{
	struct cc_probe p;

	memset(&p, 0, sizeof(p));
	p.kind = K_TCP;
	p.app = A_HTTP;
	p.expect = E_DENY;
	p.verdict = V_REACHABLE;
	p.http_status = 200;
	report_judge(&p, 1, priv);
	assert_int_equal(p.outcome, O_BREACH);
	p.http_status = 403;
	report_judge(&p, 1, priv);
	assert_int_equal(p.outcome, O_OK);
	p.verdict = V_CLOSED;	/* no proxy listening */
	p.http_status = 0;
	report_judge(&p, 1, priv);
	assert_int_equal(p.outcome, O_OK);
}

/* A probe of the families test: about address s, seen as verdict v. */
static void
fam_probe(struct cc_probe *p, enum cc_class cls, enum cc_expect e,
    const char *s, enum cc_verdict v)
{
	struct moat_addr a;

	memset(p, 0, sizeof(*p));
	assert_int_equal(addr_parse(s, &a), 0);
	p->cls = cls;
	p->kind = K_TCP;
	p->expect = e;
	p->verdict = v;
	p->fam = (sa_family_t)a.family;
	sockaddr_set(&p->dst, &p->dstlen, &a, 22, 0);
}

/* The report's output, run with stdout sent to a temporary file. */
static void
capture(int (*fn)(const struct cc_probe *, size_t, const struct cc_disc *,
    const struct cc_opts *, uint64_t), const struct cc_probe *p, size_t n,
    const struct cc_disc *d, char *buf, size_t len)
{
	struct cc_opts o;
	FILE *f = tmpfile();
	int saved;
	size_t got;

	memset(&o, 0, sizeof(o));
	assert_non_null(f);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	assert_int_not_equal(dup2(fileno(f), STDOUT_FILENO), -1);
	(void)fn(p, n, d, &o, 1000);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(f);
	got = fread(buf, 1, len - 1, f);
	buf[got] = '\0';
	fclose(f);
}

/* Per family: a probe counts for the address it is about (an IPv6
 * literal asked of the IPv4 proxy is IPv6), and the IPv6 line says
 * whether the guest has IPv6. */
static void
families(void **state)
{
	static char out[16384];
	struct cc_probe p[4];
	struct cc_disc d;

	fam_probe(&p[0], C_PRIVATE, E_DENY, "192.168.1.1", V_REACHABLE);
	fam_probe(&p[1], C_IPV6, E_DENY, "10.77.0.1", V_REACHABLE);
	p[1].app = A_HTTP;	/* CONNECT [64:ff9b::a00:1]:443, answered 200 */
	p[1].http_status = 200;
	p[1].fam = AF_INET6;
	fam_probe(&p[2], C_CONTROL, E_INFO, "2001:db8::10", V_SKIPPED);
	p[2].kind = K_LOCAL;
	fam_probe(&p[3], C_CONTROL, E_REACH, "203.0.113.10", V_REACHABLE);
	report_judge(p, 4, priv);
	memset(&d, 0, sizeof(d));
	d.gateway.family = AF_UNSPEC;
	d.gw6.family = AF_UNSPEC;
	capture(report_json, p, 4, &d, out, sizeof(out));
	assert_non_null(strstr(out, "\"ipv4\": {\"probes\": 2, \"breaches\": 1, "
	    "\"failed_controls\": 0, \"controls_passed\": 1, \"not_run\": 0}"));
	assert_non_null(strstr(out, "\"ipv6\": {\"probes\": 2, \"breaches\": 1, "
	    "\"failed_controls\": 0, \"controls_passed\": 0, \"not_run\": 1, "
	    "\"guest_has_ipv6\": false, \"state\": \"the guest is IPv4-only"));
	/* The skipped IPv6 control is not run, never a failed control. */
	assert_int_equal(p[2].outcome, O_INFO);
	capture(report_human, p, 4, &d, out, sizeof(out));
	assert_non_null(strstr(out, "IPv6: 2 probes, 1 breach, 0 failed "
	    "controls, 0 controls passed, 1 not run; the guest is IPv4-only"));
	assert_non_null(strstr(out, "[2001:db8::10]:22"));

	/* A global address and a route beyond the link: IPv6 is on. */
	assert_false(disc_has_v6(&d));
	d.nv6 = 1;
	assert_int_equal(addr_parse("2001:db8::10", &d.v6[0].addr), 0);
	d.nglobal6 = 1;		/* the on-link /64 alone */
	assert_false(disc_has_v6(&d));
	d.nout6 = 1;
	snprintf(d.route6, sizeof(d.route6), "2000::/3 via 2001:db8::1 dev eth0");
	assert_true(disc_has_v6(&d));
	/* A ULA with a route beyond the link: nat66 behind the gateway. */
	assert_int_equal(addr_parse("fd00::10", &d.v6[0].addr), 0);
	assert_true(disc_has_v6(&d));
	d.nout6 = 0;		/* a ULA network and nothing beyond it */
	assert_false(disc_has_v6(&d));
	d.nout6 = 1;
	assert_int_equal(addr_parse("fe80::10", &d.v6[0].addr), 0);
	assert_false(disc_has_v6(&d));	/* link-local is not a way out */
	assert_int_equal(addr_parse("2001:db8::10", &d.v6[0].addr), 0);
	capture(report_json, p, 4, &d, out, sizeof(out));
	assert_non_null(strstr(out, "\"guest_has_ipv6\": true, \"state\": "
	    "\"the guest has IPv6 (2000::/3 via 2001:db8::1 dev eth0), no "
	    "IPv6 control given (--internet [ADDR]:PORT)\""));
	p[2].kind = K_TCP;	/* with IPv6 on, the IPv6 control runs */
	p[2].expect = E_REACH;
	p[2].verdict = V_REACHABLE;
	report_judge(p, 4, priv);
	capture(report_json, p, 4, &d, out, sizeof(out));
	assert_non_null(strstr(out, "\"controls_passed\": 1, \"not_run\": 0, "
	    "\"guest_has_ipv6\": true, \"state\": \"the guest has IPv6 "
	    "(2000::/3 via 2001:db8::1 dev eth0)\""));
}

/* A clean scan's summary says what each count is and nothing in it
 * reads like a warning: refusals without an answer are "filtered
 * (expected)", never "silent drops". */
static void
summary_words(void **state)
{
	static char out[16384];
	struct cc_probe p[4];
	struct cc_disc d;

	fam_probe(&p[0], C_GATEWAY, E_DENY, "10.77.0.1", V_BLOCKED);
	fam_probe(&p[1], C_PRIVATE, E_DENY, "192.168.1.1", V_BLOCKED);
	fam_probe(&p[2], C_GATEWAY, E_DENY, "10.77.0.1", V_FILTERED);
	fam_probe(&p[3], C_CONTROL, E_REACH, "203.0.113.10", V_REACHABLE);
	report_judge(p, 4, priv);
	memset(&d, 0, sizeof(d));
	d.gateway.family = AF_UNSPEC;
	d.gw6.family = AF_UNSPEC;
	capture(report_human, p, 4, &d, out, sizeof(out));
	assert_non_null(strstr(out, "4 probes in 0.00 s: 0 breaches, 0 failed "
	    "controls, 1 controls passed, 2 refused by the gateway, 1 filtered "
	    "(expected), 0 not run\n"));
	assert_null(strstr(out, "silent"));
	assert_non_null(strstr(out, "verdict: contained\n"));
	capture(report_json, p, 4, &d, out, sizeof(out));
	assert_non_null(strstr(out, "\"controls_passed\": 1,\n  \"refused\": 2,"
	    "\n  \"filtered\": 1,\n  \"not_run\": 0,"));
}

static int
setup(void **state)
{
	struct moat_prefix pub;

	assert_int_equal(prefix_parse("203.0.113.0/24", &pub), 0);
	priv = rangeset_new_private(&pub, 1);
	return priv == NULL;
}

static int
teardown(void **state)
{
	rangeset_free(priv);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(transport_table),
		cmocka_unit_test(dns_table),
		cmocka_unit_test(dns_no_reply),
		cmocka_unit_test(proxy_status),
		cmocka_unit_test(families),
		cmocka_unit_test(summary_words),
	};
	return cmocka_run_group_tests_name("cc_report", tests, setup, teardown);
}
