/*
 * test_budget.c -- per-secret request budgets (lib/budget.c): counted per
 * calendar minute and UTC day, charged all-or-nothing, Retry-After exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "budget.h"

static struct moat_secret secs[3];
static struct moat_config cfg;

static int
setup(void **state)
{
	(void)state;
	memset(secs, 0, sizeof(secs));
	secs[0].name = "gh";
	secs[0].per_minute = 2;
	secs[0].per_day = 3;
	secs[1].name = "openai";
	secs[1].per_minute = 10;
	secs[2].name = "free";		/* no budget: never counted */
	memset(&cfg, 0, sizeof(cfg));
	cfg.secrets = secs;
	cfg.nsecrets = 3;
	return 0;
}

static void
minute_then_day(void **state)
{
	const char *gh[] = { "gh" };
	struct budget_set b = { NULL, 0 };
	struct ipc_budget_ack a;
	time_t t = 1800000000 - 1800000000 % 86400 + 5;	/* 00:00:05 UTC */
	uint64_t m, d;

	(void)state;
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t, &a), 0);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 1, &a), 0);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 2, &a), 1);
	assert_string_equal(a.secret, "gh");
	assert_string_equal(a.window, "minute");
	assert_int_equal(a.retry_after, 53);
	budget_usage(&b, "gh", t + 2, &m, &d);
	assert_int_equal(m, 2);
	assert_int_equal(d, 2);
	/* The next minute: one more, then the day is spent. */
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 60, &a), 0);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 61, &a), 1);
	assert_string_equal(a.window, "day");
	assert_int_equal(a.retry_after, 86400 - 66);
	/* The next day. */
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 86400, &a), 0);
	budget_usage(&b, "gh", t + 86400, &m, &d);
	assert_int_equal(m, 1);
	assert_int_equal(d, 1);
	budget_set_free(&b);
}

static void
all_or_nothing(void **state)
{
	const char *both[] = { "openai", "gh" }, *free_[] = { "free", "gone" };
	struct budget_set b = { NULL, 0 };
	struct ipc_budget_ack a;
	time_t t = 1800000000 - 1800000000 % 60;
	uint64_t m, d;
	int i;

	(void)state;
	assert_int_equal(budget_charge(&b, &cfg, both, 2, t, &a), 0);
	assert_int_equal(budget_charge(&b, &cfg, both, 2, t, &a), 0);
	/* gh is spent: openai is not charged for the refused request. */
	assert_int_equal(budget_charge(&b, &cfg, both, 2, t, &a), 1);
	assert_string_equal(a.secret, "gh");
	budget_usage(&b, "openai", t, &m, &d);
	assert_int_equal(m, 2);
	/* No budget, or a secret the configuration no longer has. */
	for (i = 0; i < 100; i++)
		assert_int_equal(budget_charge(&b, &cfg, free_, 2, t, &a), 0);
	budget_usage(&b, "free", t, &m, &d);
	assert_int_equal(m, 0);
	budget_set_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(minute_then_day, setup),
		cmocka_unit_test_setup(all_or_nothing, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
