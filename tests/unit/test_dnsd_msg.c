/*
 * test_dnsd_msg.c -- dnsd's DNS message functions over (buffer, length):
 * which guest queries are answered how, how answers fit the client, and
 * how upstream answers are matched to the question and filtered.
 */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ldns/ldns.h>

#include "msg.h"
#include "ranges.h"

static struct moat_rangeset *priv;

static int
setup(void **state)
{
	struct moat_prefix pub;

	(void)state;
	assert_int_equal(prefix_parse("203.0.113.0/24", &pub), 0);
	priv = rangeset_new_private(&pub, 1);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rangeset_free(priv);
	return 0;
}

/* A query for name/type as a stub would send it; edns 0 = none. */
static uint8_t *
query(const char *name, ldns_rr_type t, uint16_t edns, size_t *len)
{
	ldns_pkt *p = NULL;
	uint8_t *w = NULL;

	assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, t,
	    LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_id(p, 0x1234);
	if (edns)
		ldns_pkt_set_edns_udp_size(p, edns);
	assert_int_equal(ldns_pkt2wire(&w, p, len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	return w;
}

/* An upstream answer with the given records (NULL-terminated). */
static uint8_t *
answer(uint16_t id, const char *name, ldns_rr_type t, ldns_pkt_rcode rc,
    bool tc, size_t *len, ...)
{
	ldns_pkt *p = NULL;
	uint8_t *w = NULL;
	const char *s;
	va_list ap;

	assert_int_equal(ldns_pkt_query_new_frm_str(&p, name, t,
	    LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_id(p, id);
	ldns_pkt_set_qr(p, true);
	ldns_pkt_set_tc(p, tc);
	ldns_pkt_set_rcode(p, rc);
	va_start(ap, len);
	while ((s = va_arg(ap, const char *)) != NULL) {
		ldns_rr *rr = NULL;
		bool auth = strncmp(s, "AUTH ", 5) == 0;

		assert_int_equal(ldns_rr_new_frm_str(&rr, auth ? s + 5 : s,
		    0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(p, auth ? LDNS_SECTION_AUTHORITY :
		    LDNS_SECTION_ANSWER, rr);
	}
	va_end(ap);
	assert_int_equal(ldns_pkt2wire(&w, p, len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	return w;
}

static struct dquestion dqn;
static ldns_rdf *dqn_name;

static const struct dquestion *
question(uint16_t id, const char *name, uint16_t t)
{
	ldns_rdf_deep_free(dqn_name);
	assert_int_equal(ldns_str2rdf_dname(&dqn_name, name), LDNS_STATUS_OK);
	ldns_dname2canonical(dqn_name);
	dqn = (struct dquestion){ id, t, LDNS_RR_CLASS_IN,
	    ldns_rdf_data(dqn_name), ldns_rdf_size(dqn_name) };
	return &dqn;
}

/* --- guest queries --------------------------------------------------- */

static void
test_query_ok(void **state)
{
	struct dq q;
	size_t len;
	uint8_t *w = query("PyPI.org.", LDNS_RR_TYPE_A, 0, &len);

	(void)state;
	assert_int_equal(dq_parse(w, len, false, &q), DQ_OK);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.qtype, LDNS_RR_TYPE_A);
	assert_int_equal(q.maxlen, 512);
	assert_memory_equal(q.name, "\004pypi\003org\000", 10);
	dq_clear(&q);
	free(w);
	w = query("a.test.", LDNS_RR_TYPE_A, 4096, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_OK);
	assert_int_equal(q.maxlen, DNSD_EDNS_SIZE);	/* never more */
	dq_clear(&q);
	assert_int_equal(dq_parse(w, len, true, &q), DQ_OK);
	assert_int_equal(q.maxlen, 65535);
	dq_clear(&q);
	free(w);
}

static void
test_query_bad(void **state)
{
	struct dq q;
	size_t len;
	uint8_t *w = query("a.test.", LDNS_RR_TYPE_A, 0, &len);
	uint8_t buf[512];
	/* header + a name whose pointer points at itself */
	static const uint8_t loop[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0,
	    0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1 };

	(void)state;
	assert_int_equal(dq_parse(w, 5, false, &q), DQ_DROP);
	dq_clear(&q);
	memcpy(buf, w, len);
	buf[2] |= 0x80;				/* a response */
	assert_int_equal(dq_parse(buf, len, false, &q), DQ_DROP);
	dq_clear(&q);
	memcpy(buf, w, len);
	buf[2] = (uint8_t)((buf[2] & ~0x78) | (4 << 3));	/* NOTIFY */
	assert_int_equal(dq_parse(buf, len, false, &q), DQ_NOTIMP);
	dq_clear(&q);
	memcpy(buf, w, len);
	buf[5] = 0;				/* no question */
	assert_int_equal(dq_parse(buf, len, false, &q), DQ_FORMERR);
	dq_clear(&q);
	buf[5] = 2;				/* two, one present */
	assert_int_equal(dq_parse(buf, len, false, &q), DQ_FORMERR);
	dq_clear(&q);
	assert_int_equal(dq_parse(w, len - 3, false, &q), DQ_FORMERR);
	dq_clear(&q);
	assert_int_equal(dq_parse(loop, sizeof(loop), false, &q), DQ_FORMERR);
	dq_clear(&q);
	/* Two TSIG records (type 250) after the question: more than one
	 * additional record is refused before ldns, which would lose the
	 * first one's memory. */
	{
		static const uint8_t tsig[] = { 0, 0, 250, 0, 255, 0, 0, 0, 0,
		    0, 0 };
		size_t k;

		memcpy(buf, w, len);
		buf[11] = 2;
		for (k = 0; k < 2; k++)
			memcpy(buf + len + k * sizeof(tsig), tsig, sizeof(tsig));
		assert_int_equal(dq_parse(buf, len + 2 * sizeof(tsig), false,
		    &q), DQ_FORMERR);
		dq_clear(&q);
	}
	free(w);
	w = query("a.test.", LDNS_RR_TYPE_ANY, 0, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_NOTIMP);
	dq_clear(&q);
	free(w);
	w = query("a.test.", LDNS_RR_TYPE_AXFR, 0, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_NOTIMP);
	dq_clear(&q);
	free(w);
}

static void
test_resp_truncates(void **state)
{
	struct dq q;
	ldns_rr_list *an = ldns_rr_list_new();
	ldns_pkt *p = NULL;
	uint8_t *w, *r;
	size_t len, rlen;
	char s[64];
	int i;

	(void)state;
	for (i = 0; i < 40; i++) {
		ldns_rr *rr = NULL;

		snprintf(s, sizeof(s), "big.test. 300 IN A 203.0.113.%d", i);
		ldns_rr_new_frm_str(&rr, s, 0, NULL, NULL);
		ldns_rr_list_push_rr(an, rr);
	}
	w = query("big.test.", LDNS_RR_TYPE_A, 0, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_OK);
	r = resp_build(&q, LDNS_RCODE_NOERROR, an, NULL, 0, 0, NULL, &rlen);
	assert_non_null(r);
	assert_true(rlen <= 512);
	assert_int_equal(ldns_wire2pkt(&p, r, rlen), LDNS_STATUS_OK);
	assert_true(ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_ancount(p), 0);
	ldns_pkt_free(p);
	free(r);
	dq_clear(&q);
	/* Over TCP it all fits, TTLs aged. */
	assert_int_equal(dq_parse(w, len, true, &q), DQ_OK);
	r = resp_build(&q, LDNS_RCODE_NOERROR, an, NULL, 100, 0, NULL, &rlen);
	assert_int_equal(ldns_wire2pkt(&p, r, rlen), LDNS_STATUS_OK);
	assert_false(ldns_pkt_tc(p));
	assert_int_equal(ldns_pkt_ancount(p), 40);
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(ldns_pkt_answer(p), 0)),
	    200);
	ldns_pkt_free(p);
	free(r);
	dq_clear(&q);
	free(w);
	ldns_rr_list_deep_free(an);
}

static void
test_resp_ede(void **state)
{
	struct dq q;
	ldns_pkt *p = NULL;
	ldns_edns_option_list *ol;
	ldns_edns_option *o;
	uint8_t *w, *r;
	size_t len, rlen;

	(void)state;
	w = query("Denied.test.", LDNS_RR_TYPE_A, 1232, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_OK);
	r = resp_build(&q, LDNS_RCODE_REFUSED, NULL, NULL, 0, EDE_BLOCKED,
	    "not on the allow list", &rlen);
	assert_int_equal(ldns_wire2pkt(&p, r, rlen), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
	assert_int_equal(ldns_pkt_id(p), 0x1234);
	ol = ldns_pkt_edns_get_option_list(p);
	assert_non_null(ol);
	o = ldns_edns_option_list_get_option(ol, 0);
	assert_int_equal(ldns_edns_get_code(o), LDNS_EDNS_EDE);
	assert_int_equal(ldns_read_uint16(ldns_edns_get_data(o)), 15);
	/* The question is echoed as asked, case included. */
	assert_int_equal(ldns_rdf_data(ldns_rr_owner(ldns_rr_list_rr(
	    ldns_pkt_question(p), 0)))[1], 'D');
	ldns_pkt_free(p);
	free(r);
	dq_clear(&q);
	free(w);
}

/* A refusal's text for a 253-character name goes whole where the client
 * takes it (RFC 8914 sets no 128-byte limit); where its EDNS size cannot,
 * TC is set and the EDE code goes alone, within that size. */
static void
test_resp_ede_long(void **state)
{
	char name[256], text[1024];
	struct dq q;
	ldns_pkt *p = NULL;
	ldns_edns_option *o;
	uint8_t *w, *r;
	size_t len, rlen, i;

	(void)state;
	for (i = 0; i < 253; i++)
		name[i] = (i + 1) % 64 == 0 ? '.' : 'a';
	memcpy(name + 248, ".test", 6);	/* 253 characters */
	snprintf(text, sizeof(text), "sandbox web may not resolve %s (not on "
	    "the allow list); ask the operator: gatewayd ctl allow web %s",
	    name, name);
	strcat(name, ".");
	w = query(name, LDNS_RR_TYPE_A, 1232, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_OK);
	r = resp_build(&q, LDNS_RCODE_REFUSED, NULL, NULL, 0, EDE_BLOCKED,
	    text, &rlen);
	assert_true(rlen <= 1232);
	assert_int_equal(ldns_wire2pkt(&p, r, rlen), LDNS_STATUS_OK);
	assert_false(ldns_pkt_tc(p));
	o = ldns_edns_option_list_get_option(ldns_pkt_edns_get_option_list(p),
	    0);
	assert_int_equal(ldns_edns_get_size(o), 2 + strlen(text));
	assert_memory_equal(ldns_edns_get_data(o) + 2, text, strlen(text));
	ldns_pkt_free(p);
	p = NULL;
	free(r);
	dq_clear(&q);
	free(w);

	w = query(name, LDNS_RR_TYPE_A, 512, &len);
	assert_int_equal(dq_parse(w, len, false, &q), DQ_OK);
	r = resp_build(&q, LDNS_RCODE_REFUSED, NULL, NULL, 0, EDE_BLOCKED,
	    text, &rlen);
	assert_true(rlen <= 512);
	assert_int_equal(ldns_wire2pkt(&p, r, rlen), LDNS_STATUS_OK);
	assert_true(ldns_pkt_tc(p));
	o = ldns_edns_option_list_get_option(ldns_pkt_edns_get_option_list(p),
	    0);
	assert_int_equal(ldns_edns_get_size(o), 2);
	assert_int_equal(ldns_read_uint16(ldns_edns_get_data(o)), 15);
	ldns_pkt_free(p);
	free(r);
	dq_clear(&q);
	free(w);
}

/* --- upstream answers ------------------------------------------------ */

static void
test_answer_match(void **state)
{
	struct answer a;
	size_t len;
	uint8_t *w;

	(void)state;
	w = answer(7, "a.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, false,
	    &len, "a.test. 60 IN A 203.0.113.5", NULL);
	assert_int_equal(da_parse(w, len, question(8, "a.test.", 1), priv,
	    &a), DA_MISMATCH);
	assert_int_equal(da_parse(w, len, question(7, "b.test.", 1), priv,
	    &a), DA_MISMATCH);
	assert_int_equal(da_parse(w, len, question(7, "a.test.", 16), priv,
	    &a), DA_MISMATCH);
	assert_int_equal(da_parse(w, len, question(7, "A.TEST.", 1), priv,
	    &a), DA_OK);
	assert_int_equal(a.naddr, 1);
	assert_int_equal(a.ttl, 60);
	answer_clear(&a);
	assert_int_equal(da_parse(w, len - 2, question(7, "a.test.", 1),
	    priv, &a), DA_BAD);
	free(w);
	w = answer(7, "a.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, true,
	    &len, NULL);
	assert_int_equal(da_parse(w, len, question(7, "a.test.", 1), priv,
	    &a), DA_TRUNCATED);
	free(w);
	w = answer(7, "a.test.", LDNS_RR_TYPE_A, LDNS_RCODE_SERVFAIL, false,
	    &len, NULL);
	assert_int_equal(da_parse(w, len, question(7, "a.test.", 1), priv,
	    &a), DA_FAIL);
	free(w);
}

static void
test_answer_chain(void **state)
{
	struct answer a;
	size_t len;
	uint8_t *w;

	(void)state;
	w = answer(1, "www.x.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR,
	    false, &len,
	    "c2.cdn.test. 50 IN A 203.0.113.31",	/* order is free */
	    "www.x.test. 300 IN CNAME c1.cdn.test.",
	    "evil.test. 300 IN A 203.0.113.99",	/* not on the chain */
	    "c1.cdn.test. 9000 IN CNAME c2.cdn.test.",
	    NULL);
	assert_int_equal(da_parse(w, len, question(1, "www.x.test.", 1),
	    priv, &a), DA_OK);
	assert_int_equal(ldns_rr_list_rr_count(a.an), 3);
	assert_int_equal(a.naddr, 1);
	assert_int_equal(a.addr[0].a[3], 31);
	assert_int_equal(a.ttl, 50);
	/* Every TTL is clamped. */
	assert_int_equal(ldns_rr_ttl(ldns_rr_list_rr(a.an, 1)), DNSD_TTL_MAX);
	answer_clear(&a);
	free(w);
}

static void
test_answer_rebinding(void **state)
{
	struct answer a;
	size_t len;
	uint8_t *w;

	(void)state;
	w = answer(1, "r.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, false,
	    &len, "r.test. 300 IN A 192.168.77.2",
	    "r.test. 300 IN A 10.0.0.1", NULL);
	assert_int_equal(da_parse(w, len, question(1, "r.test.", 1), priv,
	    &a), DA_OK);
	assert_int_equal(ldns_rr_list_rr_count(a.an), 0);
	assert_int_equal(a.removed, 2);
	assert_int_equal(a.ede, EDE_BLOCKED);
	assert_int_equal(a.naddr, 0);
	assert_true(a.ttl <= 60);
	answer_clear(&a);
	free(w);
	w = answer(1, "m.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NOERROR, false,
	    &len, "m.test. 300 IN A 127.0.0.1",
	    "m.test. 300 IN A 203.0.113.7", "m.test. 300 IN A 0.1.2.3", NULL);
	assert_int_equal(da_parse(w, len, question(1, "m.test.", 1), priv,
	    &a), DA_OK);
	assert_int_equal(ldns_rr_list_rr_count(a.an), 1);
	assert_int_equal(a.naddr, 1);
	assert_int_equal(a.removed, 2);
	answer_clear(&a);
	free(w);
	/* IPv4-mapped IPv6 is judged as its IPv4. */
	w = answer(1, "v6.test.", LDNS_RR_TYPE_AAAA, LDNS_RCODE_NOERROR,
	    false, &len, "v6.test. 300 IN AAAA ::ffff:192.168.1.1",
	    "v6.test. 300 IN AAAA ::ffff:8.8.8.8", NULL);
	assert_int_equal(da_parse(w, len, question(1, "v6.test.", 28), priv,
	    &a), DA_OK);
	assert_int_equal(ldns_rr_list_rr_count(a.an), 1);
	assert_int_equal(a.removed, 1);
	answer_clear(&a);
	free(w);
	/* NAT64's well-known prefix is judged as its IPv4 too; its
	 * local-use /48 stays private. */
	w = answer(1, "n64.test.", LDNS_RR_TYPE_AAAA, LDNS_RCODE_NOERROR,
	    false, &len, "n64.test. 300 IN AAAA 64:ff9b::192.168.1.1",
	    "n64.test. 300 IN AAAA 64:ff9b::169.254.169.254",
	    "n64.test. 300 IN AAAA 64:ff9b:1::cb00:7107",
	    "n64.test. 300 IN AAAA 64:ff9b::203.0.113.7", NULL);
	assert_int_equal(da_parse(w, len, question(1, "n64.test.", 28), priv,
	    &a), DA_OK);
	assert_int_equal(ldns_rr_list_rr_count(a.an), 1);
	assert_int_equal(a.naddr, 1);
	assert_int_equal(a.removed, 3);
	assert_int_equal(a.ede, EDE_BLOCKED);
	answer_clear(&a);
	free(w);
	/* AAAA, record by record as A: unique-local, link-local and
	 * documentation space go, with the EDE; the public one stays and is
	 * the address the set-add opens. */
	w = answer(1, "six.test.", LDNS_RR_TYPE_AAAA, LDNS_RCODE_NOERROR,
	    false, &len, "six.test. 300 IN AAAA fd00::1",
	    "six.test. 300 IN AAAA 2606:4700::1111",
	    "six.test. 300 IN AAAA fe80::1",
	    "six.test. 300 IN AAAA 2001:db8::1", NULL);
	assert_int_equal(da_parse(w, len, question(1, "six.test.", 28), priv,
	    &a), DA_OK);
	assert_int_equal(ldns_rr_list_rr_count(a.an), 1);
	assert_int_equal(a.removed, 3);
	assert_int_equal(a.ede, EDE_BLOCKED);
	assert_int_equal(a.naddr, 1);
	assert_int_equal(a.addr[0].family, AF_INET6);
	assert_int_equal(a.addr[0].a[0], 0x26);
	assert_int_equal(a.addr[0].a[15], 0x11);
	answer_clear(&a);
	free(w);
}

static void
test_answer_https_hints(void **state)
{
	struct answer a;
	size_t len;
	uint8_t *w;
	char *s;

	(void)state;
	w = answer(1, "h.test.", LDNS_RR_TYPE_HTTPS, LDNS_RCODE_NOERROR,
	    false, &len, "h.test. 300 IN HTTPS 1 . alpn=h2 "
	    "ipv4hint=192.168.1.1,203.0.113.9 ipv6hint=fd00::1", NULL);
	assert_int_equal(da_parse(w, len, question(1, "h.test.", 65), priv,
	    &a), DA_OK);
	assert_int_equal(a.removed, 2);
	s = ldns_rr2str(ldns_rr_list_rr(a.an, 0));
	assert_non_null(strstr(s, "ipv4hint=203.0.113.9"));
	assert_null(strstr(s, "192.168"));
	assert_null(strstr(s, "ipv6hint"));
	free(s);
	answer_clear(&a);
	free(w);
}

static void
test_answer_negative(void **state)
{
	struct answer a;
	size_t len;
	uint8_t *w;

	(void)state;
	w = answer(1, "nx.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, false,
	    &len, "AUTH test. 900 IN SOA ns.test. r.test. 1 2 3 4 120", NULL);
	assert_int_equal(da_parse(w, len, question(1, "nx.test.", 1), priv,
	    &a), DA_OK);
	assert_int_equal(a.rcode, LDNS_RCODE_NXDOMAIN);
	assert_int_equal(ldns_rr_list_rr_count(a.ns), 1);
	assert_int_equal(a.ttl, 120);		/* SOA minimum */
	answer_clear(&a);
	free(w);
	/* Without an SOA a negative answer is not cached. */
	w = answer(1, "nx.test.", LDNS_RR_TYPE_A, LDNS_RCODE_NXDOMAIN, false,
	    &len, NULL);
	assert_int_equal(da_parse(w, len, question(1, "nx.test.", 1), priv,
	    &a), DA_OK);
	assert_int_equal(a.ttl, 0);
	answer_clear(&a);
	free(w);
}

static void
test_answer_addr_cap(void **state)
{
	struct answer a;
	ldns_pkt *p = NULL;
	uint8_t *w = NULL;
	size_t len;
	char s[64];
	int i;

	(void)state;
	ldns_pkt_query_new_frm_str(&p, "many.test.", LDNS_RR_TYPE_A,
	    LDNS_RR_CLASS_IN, LDNS_RD);
	ldns_pkt_set_id(p, 3);
	ldns_pkt_set_qr(p, true);
	for (i = 0; i < 100; i++) {
		ldns_rr *rr = NULL;

		snprintf(s, sizeof(s), "many.test. 60 IN A 203.0.%d.1", i);
		ldns_rr_new_frm_str(&rr, s, 0, NULL, NULL);
		ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
	}
	ldns_pkt2wire(&w, p, &len);
	ldns_pkt_free(p);
	assert_int_equal(da_parse(w, len, question(3, "many.test.", 1), priv,
	    &a), DA_OK);
	/* Never more addresses told than can be opened in one update. */
	assert_int_equal(a.naddr, DNSD_MAX_ADDRS);
	assert_int_equal(ldns_rr_list_rr_count(a.an), DNSD_MAX_ADDRS);
	answer_clear(&a);
	free(w);
}

static void
test_upq(void **state)
{
	ldns_pkt *p = NULL;
	uint8_t *w;
	size_t len;

	(void)state;
	w = upq_build(question(0xbeef, "a.test.", 1), &len);
	assert_int_equal(ldns_wire2pkt(&p, w, len), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_id(p), 0xbeef);
	assert_true(ldns_pkt_rd(p));
	assert_int_equal(ldns_pkt_edns_udp_size(p), DNSD_EDNS_SIZE);
	assert_false(ldns_pkt_edns_do(p));
	ldns_pkt_free(p);
	free(w);
	ldns_rdf_deep_free(dqn_name);
	dqn_name = NULL;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_ok),
		cmocka_unit_test(test_query_bad),
		cmocka_unit_test(test_resp_truncates),
		cmocka_unit_test(test_resp_ede),
		cmocka_unit_test(test_resp_ede_long),
		cmocka_unit_test(test_answer_match),
		cmocka_unit_test(test_answer_chain),
		cmocka_unit_test(test_answer_rebinding),
		cmocka_unit_test(test_answer_https_hints),
		cmocka_unit_test(test_answer_negative),
		cmocka_unit_test(test_answer_addr_cap),
		cmocka_unit_test(test_upq),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
