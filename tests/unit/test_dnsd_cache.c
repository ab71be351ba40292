/*
 * test_dnsd_cache.c -- dnsd's cache: hits until the TTL runs out, a TTL
 * of 0 is never stored, the byte cap evicts the least recently used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ldns/ldns.h>

#include "cache.h"

static void
make(struct answer *a, const char *rr_s, uint32_t ttl)
{
	ldns_rr *rr = NULL;

	memset(a, 0, sizeof(*a));
	a->an = ldns_rr_list_new();
	a->ns = ldns_rr_list_new();
	assert_int_equal(ldns_rr_new_frm_str(&rr, rr_s, 0, NULL, NULL),
	    LDNS_STATUS_OK);
	ldns_rr_list_push_rr(a->an, rr);
	a->ttl = ttl;
}

static const uint8_t n1[] = "\001a\004test";
static const uint8_t n2[] = "\001b\004test";

static void
test_ttl(void **state)
{
	struct cache *c = cache_new(1 << 20);
	struct answer a;

	(void)state;
	make(&a, "a.test. 30 IN A 203.0.113.1", 30);
	cache_put(c, n1, sizeof(n1), 1, &a, 100);
	assert_null(a.an);			/* moved in */
	assert_non_null(cache_get(c, n1, sizeof(n1), 1, 100));
	assert_non_null(cache_get(c, n1, sizeof(n1), 1, 129));
	assert_null(cache_get(c, n1, sizeof(n1), 16, 110));	/* type */
	assert_null(cache_get(c, n1, sizeof(n1), 1, 130));	/* expired */
	make(&a, "b.test. 0 IN A 203.0.113.2", 0);
	cache_put(c, n2, sizeof(n2), 1, &a, 100);
	assert_null(cache_get(c, n2, sizeof(n2), 1, 100));
	answer_clear(&a);
	cache_free(c);
}

static void
test_cap(void **state)
{
	struct cache *c = cache_new(64 * 1024);
	struct cache_stats st;
	struct answer a;
	uint8_t name[32];
	int i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		name[0] = 4;
		snprintf((char *)name + 1, sizeof(name) - 1, "%04d", i);
		name[5] = 0;
		make(&a, "x.test. 300 IN A 203.0.113.1", 300);
		cache_put(c, name, 6, 1, &a, 1);
		if (i == 10)	/* keep an early one in use */
			assert_non_null(cache_get(c, (const uint8_t *)
			    "\0040000", 6, 1, 1));
	}
	cache_stats(c, &st);
	assert_true(st.bytes <= 64 * 1024);
	assert_true(st.evictions > 0);
	assert_null(cache_get(c, (const uint8_t *)"\0040001", 6, 1, 1));
	assert_non_null(cache_get(c, (const uint8_t *)"\0041999", 6, 1, 1));
	cache_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ttl),
		cmocka_unit_test(test_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
