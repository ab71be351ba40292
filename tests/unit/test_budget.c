/*
 * test_budget.c -- per-secret request budgets (lib/budget.c): sliding
 * windows of 60 s and 24 h, no burst across a window's edge, charged
 * all-or-nothing, Retry-After when enough requests have aged out.
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
	assert_int_equal(a.retry_after, 58);	/* the one at t ages out */
	budget_usage(&b, "gh", t + 2, &m, &d);
	assert_int_equal(m, 2);
	assert_int_equal(d, 2);
	/* 59 s after the first, it still counts; at 60 s it does not. */
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 59, &a), 1);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 60, &a), 0);
	/* The day's three are spent: the first two are in the minute that
	 * began at 00:00:00, which counts until 23:59:59 has passed a day
	 * later; the day's window errs on the strict side by that minute. */
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 121, &a), 1);
	assert_string_equal(a.window, "day");
	assert_int_equal(a.retry_after, (t - 5) + 86459 - (t + 121));
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 86400, &a), 1);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t - 5 + 86459, &a), 0);
	budget_usage(&b, "gh", t - 5 + 86459, &m, &d);
	assert_int_equal(m, 1);
	assert_int_equal(d, 2);		/* the one at t + 60, and this one */
	budget_set_free(&b);
}

/* Fixed windows let twice a budget through across an edge; these do not. */
static void
no_burst_across_edges(void **state)
{
	const char *gh[] = { "gh" };
	struct budget_set b = { NULL, 0 };
	struct ipc_budget_ack a;
	time_t day = 1800000000 - 1800000000 % 86400;
	time_t t = day + 3600 - 1;		/* 00:59:59 */
	int i;

	(void)state;
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t, &a), 0);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t, &a), 0);
	/* 01:00:00, a new calendar minute: still two in the last 60 s */
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 1, &a), 1);
	assert_string_equal(a.window, "minute");
	assert_int_equal(a.retry_after, 59);
	budget_set_free(&b);
	/* The day: three before midnight UTC (a minute apart, within the
	 * minute budget), none more just after it. */
	t = day + 86400 - 200;
	for (i = 0; i < 3; i++)
		assert_int_equal(budget_charge(&b, &cfg, gh, 1, t + 61 * i,
		    &a), 0);
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, day + 86400 + 1, &a),
	    1);
	assert_string_equal(a.window, "day");
	assert_int_equal(a.retry_after, t / 60 * 60 + 86459 - (day + 86401));
	/* A clock that went back still sees them. */
	assert_int_equal(budget_charge(&b, &cfg, gh, 1, t - 3600, &a), 1);
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
		cmocka_unit_test_setup(no_burst_across_edges, setup),
		cmocka_unit_test_setup(all_or_nothing, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
