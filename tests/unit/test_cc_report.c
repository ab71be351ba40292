/*
 * test_cc_report.c -- the judgement table: for every expectation, which
 * verdicts are a breach, a failed control or fine.  This is the heart of
 * the exit code, so every cell is spelt out.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

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
	};
	return cmocka_run_group_tests_name("cc_report", tests, setup, teardown);
}
