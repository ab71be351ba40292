/*
 * test_gatewayd_harepl.c -- the replication lines (gatewayd/harepl/wire.c)
 * that carry removals, grants and the heartbeat: each parses into the
 * typed message the parent checks (ipc_check), formats back to the same
 * line, and a malformed one is refused with one line of reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../gatewayd/harepl/harepl.h"

static int
parse(const char *line, union harepl_msg *u, int *type, size_t *mlen,
    char *err, size_t errlen)
{
	return harepl_parse(line, strlen(line), u, type, mlen, err, errlen);
}

/* line parses as type, passes ipc_check, and formats back to itself. */
static void
round_trip(const char *line, int want)
{
	static union harepl_msg u;
	struct ipc_hdr h = { 0, 0, 0, 0 };
	char err[160], out[REG_LINE_MAX + 1];
	size_t mlen = 0;
	int type = 0;

	assert_int_equal(parse(line, &u, &type, &mlen, err, sizeof(err)), 0);
	assert_int_equal(type, want);
	h.type = (uint16_t)type;
	h.len = (uint32_t)mlen;
	assert_int_equal(ipc_check(&h, &u, mlen, err, sizeof(err)), 0);
	assert_int_equal(harepl_format(type, &u, out, sizeof(out)), 0);
	assert_string_equal(out, line);
}

static void
refused(const char *line, const char *why)
{
	static union harepl_msg u;
	char err[160];
	size_t mlen = 0;
	int type = 0;

	assert_int_equal(parse(line, &u, &type, &mlen, err, sizeof(err)), -1);
	assert_non_null(strstr(err, why));
}

static void
test_flush_and_state(void **state)
{
	static union harepl_msg u;
	char err[160];
	size_t mlen;
	int type;

	(void)state;
	round_trip("flush web", IPC_HA_FLUSH);
	round_trip("state web", IPC_HA_FLUSH);
	assert_int_equal(parse("state web\n", &u, &type, &mlen, err,
	    sizeof(err)), 0);
	assert_int_equal(u.flush.whole, 1);
	assert_int_equal(parse("flush web\n", &u, &type, &mlen, err,
	    sizeof(err)), 0);
	assert_int_equal(u.flush.whole, 0);
	refused("flush", "expected SANDBOX");
	refused("flush web dev", "expected SANDBOX");
	refused("state aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "too long");
}

static void
test_grants(void **state)
{
	static union harepl_msg u;
	char err[160];
	size_t mlen;
	int type;

	(void)state;
	round_trip("grant web 3600 open.test", IPC_HA_GRANT);
	round_trip("grant web 60 open.test:tcp/7000,udp/443", IPC_HA_GRANT);
	round_trip("ungrant web open.test", IPC_HA_GRANT);
	assert_int_equal(parse("ungrant web open.test", &u, &type, &mlen, err,
	    sizeof(err)), 0);
	assert_int_equal(u.grant.secs, 0);
	refused("grant web 0 open.test", "seconds");
	refused("grant web 31622401 open.test", "seconds");
	refused("grant web 1h open.test", "seconds");
	refused("grant web open.test", "expected SANDBOX SECONDS ENTRY");
	refused("grant web", "expected SANDBOX SECONDS ENTRY");
	refused("ungrant web", "expected SANDBOX ENTRY");
	refused("ungrant web 60 open.test", "expected SANDBOX ENTRY");
}

static void
test_quarantine(void **state)
{
	static union harepl_msg u;
	char err[160];
	size_t mlen;
	int type;

	(void)state;
	round_trip("quarantine web", IPC_HA_QUARANTINE);
	round_trip("unquarantine web", IPC_HA_QUARANTINE);
	assert_int_equal(parse("quarantine web\n", &u, &type, &mlen, err,
	    sizeof(err)), 0);
	assert_int_equal(u.quarantine.on, 1);
	assert_int_equal(parse("unquarantine web", &u, &type, &mlen, err,
	    sizeof(err)), 0);
	assert_int_equal(u.quarantine.on, 0);
	refused("quarantine", "expected SANDBOX");
	refused("unquarantine web dev", "expected SANDBOX");
	refused("quarantine aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "too long");
}

static void
test_ping(void **state)
{
	static union harepl_msg u;
	char err[160];
	size_t mlen;
	int type;

	(void)state;
	assert_int_equal(parse("ping\n", &u, &type, &mlen, err, sizeof(err)),
	    HAREPL_PING);
	refused("ping 1", "unknown request");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flush_and_state),
		cmocka_unit_test(test_grants),
		cmocka_unit_test(test_quarantine),
		cmocka_unit_test(test_ping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
