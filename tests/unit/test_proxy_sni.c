/*
 * test_proxy_sni.c -- ClientHello parsing: a real hello (built by
 * OpenSSL) yields its SNI, also split over records and fed byte by byte;
 * truncations are incomplete, corruptions malformed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/ssl.h>

#include "../../gatewayd/proxy/sni.h"

static uint8_t hello[4096];
static size_t hellolen;

/* Make OpenSSL write a ClientHello for name into a memory BIO. */
static void
make_hello(const char *name)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());

	SSL_set_bio(ssl, rb, wb);
	if (name)
		SSL_set_tlsext_host_name(ssl, name);
	SSL_set_connect_state(ssl);
	SSL_do_handshake(ssl);
	hellolen = (size_t)BIO_read(wb, hello, sizeof(hello));
	SSL_free(ssl);
	SSL_CTX_free(ctx);
}

static void
test_found(void **state)
{
	char name[256];
	size_t i;

	make_hello("API.Bound.Test");
	assert_int_equal(sni_parse(hello, hellolen, name, sizeof(name)), SNI_FOUND);
	assert_string_equal(name, "api.bound.test");
	for (i = 0; i < hellolen; i++)
		assert_int_equal(sni_parse(hello, i, name, sizeof(name)),
		    SNI_INCOMPLETE);
}

static void
test_absent(void **state)
{
	char name[256];

	make_hello(NULL);
	assert_int_equal(sni_parse(hello, hellolen, name, sizeof(name)), SNI_ABSENT);
}

static void
test_split_records(void **state)
{
	uint8_t two[4200];
	size_t body, first;
	char name[256];

	make_hello("split.test");
	body = hellolen - 5;
	first = body / 2;
	memcpy(two, hello, 5);
	two[3] = (uint8_t)(first >> 8);
	two[4] = (uint8_t)first;
	memcpy(two + 5, hello + 5, first);
	memcpy(two + 5 + first, hello, 5);
	two[5 + first + 3] = (uint8_t)((body - first) >> 8);
	two[5 + first + 4] = (uint8_t)(body - first);
	memcpy(two + 10 + first, hello + 5 + first, body - first);
	assert_int_equal(sni_parse(two, hellolen + 5, name, sizeof(name)), SNI_FOUND);
	assert_string_equal(name, "split.test");
}

static void
test_bad(void **state)
{
	char name[256];
	uint8_t b[4096];

	assert_int_equal(sni_parse((const uint8_t *)"GET / HTTP/1.1", 14, name,
	    sizeof(name)), SNI_NOT_TLS);
	make_hello("x.test");
	memcpy(b, hello, hellolen);
	b[5] = 2;			/* ServerHello, not ClientHello */
	assert_int_equal(sni_parse(b, hellolen, name, sizeof(name)), SNI_MALFORMED);
	memcpy(b, hello, hellolen);
	b[1] = 0x02;			/* not a TLS record version */
	assert_int_equal(sni_parse(b, hellolen, name, sizeof(name)), SNI_MALFORMED);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_split_records),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
