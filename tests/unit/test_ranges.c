/*
 * test_ranges.c -- the canonical private-range table and its interval set.
 *
 * Every row is checked at its first and last address and just outside
 * both ends, against an independent oracle (a linear scan of the table
 * with prefix_contains), plus hand-written boundary facts from the IANA
 * special-purpose registries.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ranges.h"

static bool
oracle(const struct moat_addr *a, const struct moat_prefix *pub, size_t npub)
{
	const struct moat_range *tab;
	struct moat_prefix p;
	size_t i, n;

	for (i = 0; i < npub; i++)
		if (prefix_contains(&pub[i], a))
			return false;
	tab = ranges_private_table(&n);
	for (i = 0; i < n; i++) {
		assert_int_equal(prefix_parse(tab[i].cidr, &p), 0);
		if (prefix_contains(&p, a))
			return true;
	}
	return false;
}

static void
addr_add(struct moat_addr *a, int delta)	/* +1 or -1, wrapping */
{
	int i, len = a->family == AF_INET6 ? 16 : 4;

	for (i = len - 1; i >= 0; i--) {
		a->a[i] = (uint8_t)(a->a[i] + delta);
		if ((delta > 0 && a->a[i] != 0) || (delta < 0 && a->a[i] != 0xff))
			break;
	}
}

static void
last_of(const struct moat_prefix *p, struct moat_addr *a)
{
	int bit, bits = p->addr.family == AF_INET6 ? 128 : 32;

	*a = p->addr;
	for (bit = p->plen; bit < bits; bit++)
		a->a[bit / 8] |= (uint8_t)(0x80 >> (bit % 8));
}

static void
check_against_oracle(const struct moat_prefix *pub, size_t npub)
{
	const struct moat_range *tab;
	struct moat_rangeset *rs = rangeset_new_private(pub, npub);
	struct moat_prefix p;
	struct moat_addr probe[4];
	char buf[64];
	size_t i, n, k;

	tab = ranges_private_table(&n);
	for (i = 0; i < n; i++) {
		assert_int_equal(prefix_parse(tab[i].cidr, &p), 0);
		probe[0] = p.addr;
		last_of(&p, &probe[1]);
		probe[2] = probe[0];
		addr_add(&probe[2], -1);
		probe[3] = probe[1];
		addr_add(&probe[3], 1);
		for (k = 0; k < 4; k++)
			if (rangeset_contains(rs, &probe[k]) !=
			    oracle(&probe[k], pub, npub))
				fail_msg("%s (row %s): set and oracle disagree",
				    addr_fmt(&probe[k], buf, sizeof(buf)),
				    tab[i].cidr);
	}
	rangeset_free(rs);
}

static void
every_row_boundary(void **state)
{
	(void)state;
	check_against_oracle(NULL, 0);
}

static void
every_row_boundary_with_public(void **state)
{
	struct moat_prefix pub[3];

	(void)state;
	assert_int_equal(prefix_parse("203.0.113.0/24", &pub[0]), 0);
	assert_int_equal(prefix_parse("10.1.0.0/16", &pub[1]), 0);
	assert_int_equal(prefix_parse("fd00::/8", &pub[2]), 0);
	check_against_oracle(pub, 3);
}

static const struct {
	const char	*addr;
	bool		 private;
} facts[] = {
	{ "0.0.0.0", true }, { "0.255.255.255", true }, { "1.0.0.0", false },
	{ "9.255.255.255", false }, { "10.0.0.0", true },
	{ "10.255.255.255", true }, { "11.0.0.0", false },
	{ "100.63.255.255", false }, { "100.64.0.0", true },
	{ "100.127.255.255", true }, { "100.128.0.0", false },
	{ "126.255.255.255", false }, { "127.0.0.1", true },
	{ "169.253.255.255", false }, { "169.254.169.254", true },
	{ "169.255.0.0", false }, { "172.15.255.255", false },
	{ "172.16.0.0", true }, { "172.31.255.255", true },
	{ "172.32.0.0", false }, { "192.0.0.0", true }, { "192.0.0.255", true },
	{ "192.0.1.0", false }, { "192.0.2.0", true }, { "192.0.2.255", true },
	{ "192.0.3.0", false }, { "192.88.98.255", false },
	{ "192.88.99.0", true }, { "192.88.100.0", false },
	{ "192.167.255.255", false }, { "192.168.0.0", true },
	{ "192.168.255.255", true }, { "192.169.0.0", false },
	{ "198.17.255.255", false }, { "198.18.0.0", true },
	{ "198.19.255.255", true }, { "198.20.0.0", false },
	{ "198.51.100.0", true }, { "198.51.100.255", true },
	{ "203.0.112.255", false }, { "203.0.113.0", true },
	{ "203.0.113.255", true }, { "203.0.114.0", false },
	{ "223.255.255.255", false }, { "224.0.0.0", true },
	{ "255.255.255.255", true }, { "8.8.8.8", false },
	{ "::", true }, { "::1", true }, { "::2", true },
	{ "::ffff:8.8.8.8", true }, { "::8.8.8.8", true },
	{ "64:ff9b::8.8.8.8", true }, { "64:ff9b:1::1", true },
	{ "100::1", true }, { "2001::1", true }, { "2001:1ff:ffff::", true },
	{ "2001:200::", false }, { "2001:db8::1", true }, { "2002::1", true },
	{ "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "2000::", false }, { "2606:4700::1111", false },
	{ "3ffe:ffff::", false }, { "3fff::1", true },
	{ "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", true },
	{ "3fff:1000::", false }, { "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	    false }, { "4000::", true }, { "5f00::1", true },
	{ "fc00::1", true }, { "fdff:ffff::", true }, { "fe80::1", true },
	{ "fec0::1", true }, { "ff02::1", true },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true },
};

static void
boundary_facts(void **state)
{
	struct moat_rangeset *rs = rangeset_new_private(NULL, 0);
	struct moat_addr a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
		assert_int_equal(addr_parse(facts[i].addr, &a), 0);
		if (rangeset_contains(rs, &a) != facts[i].private)
			fail_msg("%s: expected %s", facts[i].addr,
			    facts[i].private ? "private" : "public");
	}
	rangeset_free(rs);
}

static void
treat_as_public_subtracts(void **state)
{
	struct moat_prefix pub[2];
	struct moat_rangeset *rs;
	struct moat_addr a;
	const struct moat_interval *iv;
	char lo[64], hi[64];
	size_t n, i;

	(void)state;
	assert_int_equal(prefix_parse("10.1.0.0/16", &pub[0]), 0);
	assert_int_equal(prefix_parse("203.0.113.0/24", &pub[1]), 0);
	rs = rangeset_new_private(pub, 2);
	addr_parse("10.0.255.255", &a); assert_true(rangeset_contains(rs, &a));
	addr_parse("10.1.0.0", &a); assert_false(rangeset_contains(rs, &a));
	addr_parse("10.1.255.255", &a); assert_false(rangeset_contains(rs, &a));
	addr_parse("10.2.0.0", &a); assert_true(rangeset_contains(rs, &a));
	addr_parse("203.0.113.10", &a); assert_false(rangeset_contains(rs, &a));
	addr_parse("198.51.100.10", &a); assert_true(rangeset_contains(rs, &a));
	/* The intervals are sorted and disjoint, and 10/8 is split in two. */
	iv = rangeset_intervals(rs, AF_INET, &n);
	for (i = 1; i < n; i++)
		assert_true(addr_cmp(&iv[i - 1].hi, &iv[i].lo) < 0);
	assert_string_equal(addr_fmt(&iv[1].lo, lo, sizeof(lo)), "10.0.0.0");
	assert_string_equal(addr_fmt(&iv[1].hi, hi, sizeof(hi)),
	    "10.0.255.255");
	assert_string_equal(addr_fmt(&iv[2].lo, lo, sizeof(lo)), "10.2.0.0");
	rangeset_free(rs);
}

static void
adjacent_rows_merge(void **state)
{
	struct moat_rangeset *rs = rangeset_new_private(NULL, 0);
	const struct moat_interval *iv;
	char lo[64], hi[64];
	size_t n, i;

	(void)state;
	/* 224/4 and 240/4 are one interval up to the broadcast address. */
	iv = rangeset_intervals(rs, AF_INET, &n);
	assert_string_equal(addr_fmt(&iv[n - 1].lo, lo, sizeof(lo)), "224.0.0.0");
	assert_string_equal(addr_fmt(&iv[n - 1].hi, hi, sizeof(hi)),
	    "255.255.255.255");
	/* IPv6: everything outside 2000::/3 plus the holes inside it. */
	iv = rangeset_intervals(rs, AF_INET6, &n);
	assert_string_equal(addr_fmt(&iv[0].lo, lo, sizeof(lo)), "::");
	assert_string_equal(addr_fmt(&iv[0].hi, hi, sizeof(hi)),
	    "1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff");
	assert_string_equal(addr_fmt(&iv[n - 1].lo, lo, sizeof(lo)), "4000::");
	for (i = 1; i < n; i++)
		assert_true(addr_cmp(&iv[i - 1].hi, &iv[i].lo) < 0);
	rangeset_free(rs);
}

static void
parse_rejects(void **state)
{
	static const char *bad[] = {
		"", "10.0.0.0/", "10.0.0.0/33", "/24", "10.0.0.1/24", "::/129",
		"10.0.0.0/-1", "10.0.0.0/+8", "10.0.0", "fe80::1%eth0",
		"1.2.3.4/08x", "::1/ 128", "10.0.0.0/8/8",
	};
	struct moat_prefix p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (prefix_parse(bad[i], &p) != -1)
			fail_msg("\"%s\" parsed", bad[i]);
	assert_int_equal(prefix_parse("10.0.0.5", &p), 0);
	assert_int_equal(p.plen, 32);
	assert_int_equal(prefix_parse("2001:db8::/32", &p), 0);
	assert_int_equal(p.plen, 32);
	assert_int_equal(p.addr.family, AF_INET6);
}

static void
unmap(void **state)
{
	struct moat_addr a;
	char buf[64];

	(void)state;
	addr_parse("::ffff:192.168.1.1", &a);
	assert_true(addr_unmap(&a));
	assert_int_equal(a.family, AF_INET);
	assert_string_equal(addr_fmt(&a, buf, sizeof(buf)), "192.168.1.1");
	addr_parse("2001:db8::1", &a);
	assert_false(addr_unmap(&a));
	addr_parse("10.0.0.1", &a);
	assert_false(addr_unmap(&a));
}

/* NAT64's well-known /96 carries an IPv4 address in its last 32 bits;
 * the local-use /48 and anything else does not. */
static void
nat64(void **state)
{
	struct moat_addr a, v4;
	char buf[64];

	(void)state;
	addr_parse("64:ff9b::10.1.2.3", &a);
	assert_true(addr_nat64_v4(&a, &v4));
	assert_int_equal(v4.family, AF_INET);
	assert_string_equal(addr_fmt(&v4, buf, sizeof(buf)), "10.1.2.3");
	addr_parse("64:ff9b:1::a01:203", &a);
	assert_false(addr_nat64_v4(&a, &v4));
	addr_parse("64:ff9b::1:a01:203", &a);
	assert_false(addr_nat64_v4(&a, &v4));
	addr_parse("::ffff:10.1.2.3", &a);
	assert_false(addr_nat64_v4(&a, &v4));
	addr_parse("100.100.255.155", &a);
	assert_false(addr_nat64_v4(&a, &v4));
}

/* The sandbox network is denied whatever it is: a public prefix given
 * as denied stays in the set even where treat_as_public covers it. */
static void
deny_wins_over_public(void **state)
{
	struct moat_prefix pub, net;
	struct moat_rangeset *rs;
	struct moat_addr a;

	assert_int_equal(prefix_parse("44.0.0.0/8", &pub), 0);
	assert_int_equal(prefix_parse("44.1.2.0/24", &net), 0);
	rs = rangeset_new_deny(&pub, 1, &net, 1);
	assert_int_equal(addr_parse("44.1.2.7", &a), 0);
	assert_true(rangeset_contains(rs, &a));
	assert_int_equal(addr_parse("44.1.3.7", &a), 0);
	assert_false(rangeset_contains(rs, &a));
	assert_int_equal(addr_parse("10.1.2.3", &a), 0);
	assert_true(rangeset_contains(rs, &a));
	rangeset_free(rs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_row_boundary),
		cmocka_unit_test(every_row_boundary_with_public),
		cmocka_unit_test(boundary_facts),
		cmocka_unit_test(treat_as_public_subtracts),
		cmocka_unit_test(adjacent_rows_merge),
		cmocka_unit_test(parse_rejects),
		cmocka_unit_test(unmap),
		cmocka_unit_test(nat64),
		cmocka_unit_test(deny_wins_over_public),
	};
	return cmocka_run_group_tests_name("ranges", tests, NULL, NULL);
}
