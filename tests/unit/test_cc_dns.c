/*
 * test_cc_dns.c -- containment-check's DNS wire handling: queries it
 * builds parse back, hand-made replies yield the right rcode and
 * addresses, and malformed or hostile replies are rejected, not trusted.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "../../containment-check/cc.h"

/* A reply to "a.test" with the given rcode and A records (4 bytes each,
 * pointer-compressed owner names). */
static size_t
reply(uint8_t *b, uint16_t id, int rcode, const uint8_t (*a)[4], size_t na)
{
	static const uint8_t q[] = { 1, 'a', 4, 't', 'e', 's', 't', 0,
	    0, 1, 0, 1 };
	size_t off = 12, i;

	memset(b, 0, 12);
	b[0] = id >> 8;
	b[1] = id & 0xff;
	b[2] = 0x81;
	b[3] = 0x80 | rcode;
	b[5] = 1;
	b[7] = (uint8_t)na;
	memcpy(b + off, q, sizeof(q));
	off += sizeof(q);
	for (i = 0; i < na; i++) {
		static const uint8_t rr[] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 0,
		    60, 0, 4 };
		memcpy(b + off, rr, sizeof(rr));
		off += sizeof(rr);
		memcpy(b + off, a[i], 4);
		off += 4;
	}
	return off;
}

static void
query_round_trip(void **state)
{
	uint8_t buf[512];
	struct cc_dns_reply r;
	int n;

	n = cc_dns_query("example.test", 28, 0x1234, buf, sizeof(buf));
	assert_true(n > 12);
	assert_int_equal(buf[0], 0x12);
	assert_int_equal(buf[1], 0x34);
	assert_int_equal(buf[2] & 0x80, 0);	/* a query, QR clear */
	assert_int_equal(buf[2] & 0x01, 1);	/* RD */
	/* A query is not a reply: the parser refuses it. */
	assert_int_equal(cc_dns_parse(buf, (size_t)n, &r), -1);
	assert_int_equal(cc_dns_query("x.test", 1, 1, buf, 10), -1);
}

static void
parses_addresses(void **state)
{
	static const uint8_t a[2][4] = { { 192, 168, 77, 2 }, { 8, 8, 4, 4 } };
	uint8_t b[512];
	struct cc_dns_reply r;
	size_t n = reply(b, 0xbeef, 0, a, 2);

	assert_int_equal(cc_dns_parse(b, n, &r), 0);
	assert_int_equal(r.id, 0xbeef);
	assert_int_equal(r.rcode, 0);
	assert_int_equal(r.nanswer, 2);
	assert_int_equal(r.naddr, 2);
	assert_int_equal(r.addr[0].family, AF_INET);
	assert_memory_equal(r.addr[0].a, a[0], 4);
	assert_memory_equal(r.addr[1].a, a[1], 4);
}

static void
rcodes(void **state)
{
	uint8_t b[512];
	struct cc_dns_reply r;
	size_t n;

	n = reply(b, 7, 5, NULL, 0);
	assert_int_equal(cc_dns_parse(b, n, &r), 0);
	assert_int_equal(r.rcode, 5);
	assert_string_equal(cc_dns_rcode_name(r.rcode), "REFUSED");
	assert_int_equal(r.naddr, 0);
	assert_string_equal(cc_dns_rcode_name(3), "NXDOMAIN");
	assert_string_equal(cc_dns_rcode_name(99), "RCODE?");
}

static void
rejects_malformed(void **state)
{
	static const uint8_t a[1][4] = { { 10, 0, 0, 1 } };
	uint8_t b[512];
	struct cc_dns_reply r;
	size_t n = reply(b, 1, 0, a, 1), cut;

	assert_int_equal(cc_dns_parse(b, 0, &r), -1);
	assert_int_equal(cc_dns_parse(b, 11, &r), -1);
	/* Every truncation of a valid reply is rejected or parsed safely;
	 * none may yield an address that was not fully present. */
	for (cut = 12; cut < n; cut++) {
		if (cc_dns_parse(b, cut, &r) == 0)
			assert_int_equal(r.naddr, 0);
	}
	/* An A record whose rdata is 3 bytes is not an address. */
	b[n - 5] = 3;
	assert_true(cc_dns_parse(b, n - 1, &r) == -1 || r.naddr == 0);
	/* A compression pointer loop. */
	n = reply(b, 1, 0, a, 1);
	b[12 + 12] = 0xc0;
	b[12 + 13] = 12 + 12;
	assert_true(cc_dns_parse(b, n, &r) == -1 || r.naddr == 0);
}

static void
caps_addresses(void **state)
{
	uint8_t a[20][4], b[2048];
	struct cc_dns_reply r;
	size_t i, n;

	for (i = 0; i < 20; i++) {
		a[i][0] = 203; a[i][1] = 0; a[i][2] = 113; a[i][3] = (uint8_t)i;
	}
	n = reply(b, 2, 0, (const uint8_t (*)[4])a, 20);
	assert_int_equal(cc_dns_parse(b, n, &r), 0);
	assert_int_equal(r.nanswer, 20);
	assert_int_equal(r.naddr, CC_DNS_MAXADDR);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(query_round_trip),
		cmocka_unit_test(parses_addresses),
		cmocka_unit_test(rcodes),
		cmocka_unit_test(rejects_malformed),
		cmocka_unit_test(caps_addresses),
	};
	return cmocka_run_group_tests_name("cc_dns", tests, NULL, NULL);
}
