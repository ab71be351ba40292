/*
 * test_addr.c -- lib/addr.c: text <-> struct moat_addr <-> sockaddr.
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "addr.h"

/* text -> addr -> sockaddr(port) -> addr -> text is the identity. */
static void
round_trip(const char *text, int family, socklen_t want_len)
{
	struct sockaddr_storage ss;
	struct moat_addr a, b;
	char buf[64];

	assert_int_equal(addr_parse(text, &a), 0);
	assert_int_equal(a.family, family);
	assert_int_equal(addr_to_sockaddr(&a, 5353, &ss), want_len);
	assert_int_equal(ss.ss_family, family);
	assert_int_equal(ntohs(family == AF_INET ?
	    ((struct sockaddr_in *)&ss)->sin_port :
	    ((struct sockaddr_in6 *)&ss)->sin6_port), 5353);
	assert_int_equal(addr_from_sockaddr(&ss, &b), 0);
	assert_true(addr_eq(&a, &b));
	assert_string_equal(addr_fmt(&b, buf, sizeof(buf)), text);
}

static void
conversions(void **state)
{
	(void)state;
	round_trip("10.77.0.1", AF_INET, sizeof(struct sockaddr_in));
	round_trip("2001:db8::53", AF_INET6, sizeof(struct sockaddr_in6));
	round_trip("::ffff:192.0.2.1", AF_INET6, sizeof(struct sockaddr_in6));
}

static void
rejects_and_equality(void **state)
{
	struct sockaddr_storage ss = { .ss_family = AF_UNIX };
	struct moat_addr a, b;

	(void)state;
	assert_int_equal(addr_parse("10.0.0.256", &a), -1);
	assert_int_equal(addr_parse("example.com", &a), -1);
	assert_int_equal(addr_parse("", &a), -1);
	assert_int_equal(addr_from_sockaddr(&ss, &a), -1);
	assert_int_equal(addr_parse("::ffff:192.0.2.1", &a), 0);
	assert_int_equal(addr_parse("192.0.2.1", &b), 0);
	assert_false(addr_eq(&a, &b));		/* mapped is not the same */
	assert_true(addr_unmap(&a));
	assert_true(addr_eq(&a, &b));
	assert_false(addr_unmap(&b));		/* already IPv4 */
	assert_int_equal(addr_parse("192.0.2.2", &a), 0);
	assert_false(addr_eq(&a, &b));
}

static void
netmask_plen(void **state)
{
	struct sockaddr_in m4 = { .sin_family = AF_INET };
	struct sockaddr_in6 m6 = { .sin6_family = AF_INET6 };

	(void)state;
	assert_int_equal(inet_pton(AF_INET, "255.255.240.0", &m4.sin_addr), 1);
	assert_int_equal(addr_mask_plen((struct sockaddr *)&m4, AF_INET), 20);
	assert_int_equal(inet_pton(AF_INET6, "ffff:ffff:ffff:ffff::",
	    &m6.sin6_addr), 1);
	assert_int_equal(addr_mask_plen((struct sockaddr *)&m6, AF_INET6), 64);
	assert_int_equal(addr_mask_plen(NULL, AF_INET), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(conversions),
		cmocka_unit_test(rejects_and_equality),
		cmocka_unit_test(netmask_plen),
	};
	return cmocka_run_group_tests_name("addr", tests, NULL, NULL);
}
