/*
 * test_proxy_secret.c -- placeholder injection (also inside Basic),
 * streaming redaction across every split point, placeholder spotting in
 * escaped forms.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../gatewayd/proxy/secret.h"

#define PH	"moat-PLACEHOLDER"
#define VAL	"sk-real-value-1234567890"

static const struct subst inj = { PH, sizeof(PH) - 1, VAL, sizeof(VAL) - 1 };
static const struct subst red = { VAL, sizeof(VAL) - 1, PH, sizeof(PH) - 1 };

static void
test_inject(void **state)
{
	char out[512], b64[128], want[256];
	ssize_t n;
	int count;

	n = subst_header("Bearer " PH, 7 + sizeof(PH) - 1, &inj, 1, out,
	    sizeof(out), &count);
	assert_int_equal(count, 1);
	assert_memory_equal(out, "Bearer " VAL, (size_t)n);
	b64_encode((const uint8_t *)"user:" PH, 5 + sizeof(PH) - 1, b64);
	snprintf(want, sizeof(want), "Basic %s", b64);
	n = subst_header(want, strlen(want), &inj, 1, out, sizeof(out), &count);
	assert_int_equal(count, 1);
	b64_encode((const uint8_t *)"user:" VAL, 5 + sizeof(VAL) - 1, b64);
	snprintf(want, sizeof(want), "Basic %s", b64);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, (size_t)n);
	n = subst_header("nothing here", 12, &inj, 1, out, sizeof(out), &count);
	assert_int_equal(count, 0);
	assert_int_equal(subst_all("x" PH, 1 + sizeof(PH) - 1, &inj, 1, out, 4,
	    &count), -1);
}

/* One pass over the guest's bytes: a value that holds another secret's
 * placeholder (raw, or inside Basic credentials) goes up as it is, and
 * only the secrets whose placeholders the guest wrote count as carried. */
static void
test_inject_one_pass(void **state)
{
	char chained[256], b64[128], out[512], want[512];
	struct subst s[2] = {
		{ "moat-mine-PH", 12, NULL, 0 },	/* the member's */
		{ PH, sizeof(PH) - 1, VAL, sizeof(VAL) - 1 },	/* shared */
	};
	int count, hits[2];
	ssize_t n;

	(void)state;
	s[0].to = PH;				/* raw chain */
	s[0].tolen = sizeof(PH) - 1;
	n = subst_header_hits("Bearer moat-mine-PH", 19, s, 2, out,
	    sizeof(out), &count, hits);
	assert_int_equal(count, 1);
	assert_int_equal(hits[0], 1);
	assert_int_equal(hits[1], 0);
	assert_int_equal(n, 7 + sizeof(PH) - 1);
	assert_memory_equal(out, "Bearer " PH, (size_t)n);
	b64_encode((const uint8_t *)"u:" PH, 2 + sizeof(PH) - 1, b64);
	snprintf(chained, sizeof(chained), "Basic %s", b64);
	s[0].to = chained;			/* chain through Basic */
	s[0].tolen = strlen(chained);
	n = subst_header_hits("moat-mine-PH", 12, s, 2, out, sizeof(out),
	    &count, hits);
	assert_int_equal(n, strlen(chained));
	assert_memory_equal(out, chained, (size_t)n);
	assert_int_equal(hits[1], 0);
	/* both written by the guest: each replaced once, both carried */
	snprintf(want, sizeof(want), "%s %s", chained, VAL);
	n = subst_header_hits("moat-mine-PH " PH, 13 + sizeof(PH) - 1, s, 2,
	    out, sizeof(out), &count, hits);
	assert_int_equal(count, 2);
	assert_int_equal(hits[0], 1);
	assert_int_equal(hits[1], 1);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, (size_t)n);
	/* inside the guest's Basic pair: counted there */
	b64_encode((const uint8_t *)"u:moat-mine-PH", 14, b64);
	snprintf(want, sizeof(want), "Basic %s", b64);
	n = subst_header_hits(want, strlen(want), s, 2, out, sizeof(out),
	    &count, hits);
	assert_int_equal(hits[0], 1);
	assert_int_equal(hits[1], 0);
}

static int chained_value(void *, const struct moat_secret *, char *,
    size_t *, char *, size_t);

/* A value may hold no placeholder: secret_value_placeholder names the
 * secret whose placeholder it holds. */
static void
test_value_placeholder(void **state)
{
	struct moat_secret sec[2] = {
		{ .name = "a", .placeholder = "moat-a-PH" },
		{ .name = "b", .placeholder = "moat-b-PH" },
	};
	struct moat_config cfg = { .secrets = sec, .nsecrets = 2 };
	struct secrets ss;
	char err[256];

	(void)state;
	assert_null(secret_value_placeholder(&cfg, "sk-x", 4));
	assert_null(secret_value_placeholder(&cfg, "moat-b-P", 8));
	assert_ptr_equal(secret_value_placeholder(&cfg, "Bearer moat-b-PH", 16),
	    &sec[1]);
	assert_ptr_equal(secret_value_placeholder(&cfg, "xmoat-a-PHx", 11),
	    &sec[0]);
	/* the proxy's own load refuses it too, naming both secrets */
	assert_int_equal(secrets_load_from(&ss, &cfg, chained_value, NULL, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "secret \"b\": its value contains the "
	    "placeholder of secret \"a\""));
	assert_null(strstr(err, "moat-a-PH"));
}

/* A bound host that echoes the Authorization it got hands back the base64
 * of "user:VAL": the scrubber turns it into the guest's own "user:PH"
 * form, at every split of the body, and the raw value too. */
static void
test_scrub_basic_echo(void **state)
{
	struct subst redtab[1] = { red };
	struct secrets ss = { .n = 1, .redact = redtab };
	char orig[256], sent[256], body[512], want[512], b64ph[128], b64v[128];
	uint8_t out[2048];
	struct redactor r;
	struct scrub sc;
	size_t bl, i, o;
	ssize_t n;
	int count;

	b64_encode((const uint8_t *)"alice:" PH, 6 + sizeof(PH) - 1, b64ph);
	b64_encode((const uint8_t *)"alice:" VAL, 6 + sizeof(VAL) - 1, b64v);
	snprintf(orig, sizeof(orig), "Basic %s", b64ph);
	n = subst_header(orig, strlen(orig), &inj, 1, sent, sizeof(sent),
	    &count);
	assert_int_equal(count, 1);
	scrub_init(&sc, &ss, NULL);
	assert_int_equal(scrub_add_basic(&sc, sent, (size_t)n, orig,
	    strlen(orig)), 0);
	assert_int_equal(sc.n, 2);
	/* the same form again is not a second entry */
	assert_int_equal(scrub_add_basic(&sc, sent, (size_t)n, orig,
	    strlen(orig)), 0);
	assert_int_equal(sc.n, 2);
	bl = (size_t)snprintf(body, sizeof(body), "{\"authorization\": "
	    "\"Basic %s\", \"raw\": \"%s\"}", b64v, VAL);
	snprintf(want, sizeof(want), "{\"authorization\": \"Basic %s\", "
	    "\"raw\": \"%s\"}", b64ph, PH);
	for (i = 0; i <= bl; i++) {
		redactor_init(&r, sc.s, sc.n);
		o = redact_feed(&r, (uint8_t *)body, i, out, false);
		o += redact_feed(&r, (uint8_t *)body + i, bl - i, out + o,
		    true);
		assert_int_equal(o, strlen(want));
		assert_memory_equal(out, want, o);
		redactor_free(&r);
	}
	/* a head echo is scrubbed too */
	n = subst_all(body, bl, sc.s, sc.n, (char *)out, sizeof(out), &count);
	assert_int_equal(count, 2);
	assert_memory_equal(out, want, (size_t)n);
	scrub_free(&sc);
}

/* Each distinct credential costs an entry; past the cap the proxy must
 * refuse rather than forward what it could not scrub. */
static void
test_scrub_cap(void **state)
{
	struct secrets ss = { .n = 0 };
	char sent[64], orig[64];
	struct scrub sc;
	int i;

	scrub_init(&sc, &ss, NULL);
	assert_int_equal(scrub_add_basic(&sc, "Bearer x", 8, "Bearer y", 8),
	    0);
	assert_int_equal(sc.n, 0);
	for (i = 0; i < SCRUB_MAX_EXTRA; i++) {
		snprintf(sent, sizeof(sent), "Basic c2VudA%02d", i);
		snprintf(orig, sizeof(orig), "Basic b3JpZw%02d", i);
		assert_int_equal(scrub_add_basic(&sc, sent, strlen(sent), orig,
		    strlen(orig)), 0);
	}
	assert_int_equal(scrub_add_basic(&sc, "Basic bW9yZQ==", 14,
	    "Basic b3JpZw==", 14), -1);
	scrub_free(&sc);
}

static void
test_b64(void **state)
{
	uint8_t out[16];

	assert_int_equal(b64_decode("aGk=", 4, out), 2);
	assert_memory_equal(out, "hi", 2);
	assert_int_equal(b64_decode("aGk", 3, out), -1);
	assert_int_equal(b64_decode("a=Gk", 4, out), -1);
	assert_int_equal(b64_decode("a*Gk", 4, out), -1);
}

/* "[" VAL "][" VAL "]" VAL, fed in three pieces split at every pair of
 * points: the value is always replaced, whatever the split. */
static void
test_redact_splits(void **state)
{
	char in[256], got[1024];
	struct redactor r;
	size_t len, i, j, o;

	len = (size_t)snprintf(in, sizeof(in), "[%s][%s]%s", VAL, VAL, VAL);
	for (i = 0; i <= len; i++)
		for (j = i; j <= len; j++) {
			redactor_init(&r, &red, 1);
			o = redact_feed(&r, (uint8_t *)in, i, (uint8_t *)got,
			    false);
			o += redact_feed(&r, (uint8_t *)in + i, j - i,
			    (uint8_t *)got + o, false);
			o += redact_feed(&r, (uint8_t *)in + j, len - j,
			    (uint8_t *)got + o, true);
			got[o] = '\0';
			assert_string_equal(got, "[" PH "][" PH "]" PH);
			redactor_free(&r);
		}
}

/* redact_inmax: its input always fits the room (redact_outmax), and a
 * short value with a long placeholder (output many times the input) still
 * lets some input through a response buffer instead of none (which
 * stalled every response on such a connection). */
static void
test_redact_inmax(void **state)
{
	static const struct subst shortv = { "k9", 2,
	    "moat-a-rather-long-PLACEHOLDER", 30 };
	const struct subst *cases[] = { &red, &shortv };
	struct redactor r;
	size_t c, room, in;

	(void)state;
	for (c = 0; c < 2; c++) {
		redactor_init(&r, cases[c], 1);
		for (room = 0; room < 40000; room += 97) {
			in = redact_inmax(&r, room);
			assert_true(in <= REDACT_CHUNK);
			if (in > 0)
				assert_true(redact_outmax(&r, in) <= room);
		}
		assert_true(redact_inmax(&r, 32 * 1024 - 16) > 0);
		redactor_free(&r);
	}
}

/* Streaming redaction equals the one-shot substitution, for 1 to 9
 * values with distinct first bytes (up to REDACT_FEW of them are found
 * with memchr, more with the bitmap), on pseudo-random text dense in
 * near-misses, fed in pieces of pseudo-random sizes. */
static void
test_redact_many_firsts(void **state)
{
	static const char alpha[] = "abcdefghiXYZ123";
	char from[9][8], to[9][8], in[4096], want[8192], got[8192];
	struct subst s[9];
	struct redactor r;
	unsigned seed = 1;
	size_t n, i, o, p, k;
	ssize_t wl;

	for (n = 1; n <= 9; n++) {
		for (i = 0; i < n; i++) {
			snprintf(from[i], sizeof(from[i]), "%cXYZ%zu",
			    'a' + (int)i, i + 1);
			snprintf(to[i], sizeof(to[i]), "<%zu>", i);
			s[i] = (struct subst){ from[i], 5, to[i], 3 };
		}
		for (i = 0; i < sizeof(in); i++) {
			seed = seed * 1103515245 + 12345;
			in[i] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
			if ((seed >> 8) % 7 == 0 && i + 5 < sizeof(in)) {
				memcpy(in + i, from[(seed >> 20) % n], 5);
				i += 4;
			}
		}
		wl = subst_all(in, sizeof(in), s, n, want, sizeof(want), NULL);
		assert_true(wl > 0);
		redactor_init(&r, s, n);
		for (p = 0, o = 0; p < sizeof(in); p += k) {
			seed = seed * 1103515245 + 12345;
			k = 1 + (seed >> 16) % 97;
			if (k > sizeof(in) - p)
				k = sizeof(in) - p;
			o += redact_feed(&r, (uint8_t *)in + p, k,
			    (uint8_t *)got + o, p + k == sizeof(in));
		}
		redactor_free(&r);
		assert_int_equal(o, (size_t)wl);
		assert_memory_equal(got, want, o);
	}
}

static void
test_redact_holds_prefix_only(void **state)
{
	struct redactor r;
	uint8_t out[256];
	size_t o;

	redactor_init(&r, &red, 1);
	/* "sk-" could start the value: held back; "x" could not */
	o = redact_feed(&r, (const uint8_t *)"data sk-", 8, out, false);
	assert_int_equal(o, 5);
	o = redact_feed(&r, (const uint8_t *)"x\n", 2, out, false);
	assert_int_equal(o, 5);
	assert_memory_equal(out, "sk-x\n", 5);
	redactor_free(&r);
}

/* A new stream on the same connection (redactor_reset): what the last
 * one held back, perhaps the start of a secret, is wiped and never sent;
 * the same set keeps its tables, a grown set gets new ones. */
static void
test_redactor_reset(void **state)
{
	struct subst two[2] = { red, { "k9-other-value", 14, PH, sizeof(PH) - 1 } };
	struct redactor r;
	uint8_t out[256], *hold;
	size_t o, i;

	redactor_init(&r, &red, 1);
	o = redact_feed(&r, (const uint8_t *)"data sk-real", 12, out, false);
	assert_int_equal(o, 5);
	hold = r.hold;
	redactor_reset(&r, &red, 1);
	assert_ptr_equal(r.hold, hold);		/* kept, not rebuilt */
	assert_int_equal(r.holdlen, 0);
	for (i = 0; i <= r.maxfrom; i++)
		assert_int_equal(r.hold[i], 0);
	o = redact_feed(&r, (const uint8_t *)"x " VAL, 2 + sizeof(VAL) - 1,
	    out, true);
	out[o] = '\0';
	assert_string_equal((char *)out, "x " PH);	/* no "sk-real" */
	redactor_reset(&r, two, 2);
	assert_int_equal(r.n, 2);
	o = redact_feed(&r, (const uint8_t *)"k9-other-value", 14, out, true);
	out[o] = '\0';
	assert_string_equal((char *)out, PH);
	redactor_free(&r);
}

static void
test_placeholder_spotting(void **state)
{
	static const struct subst nd = { PH, sizeof(PH) - 1, NULL, 0 };
	const char *enc = "q=moat-%50LACEHOLDER";
	const char *json = "{\"k\":\"moat-\\u0050LACEHOLDER\"}";
	struct phwatch w;
	size_t i;

	assert_int_equal(ph_find((const uint8_t *)enc, strlen(enc), &nd, 1), 0);
	assert_int_equal(ph_find((const uint8_t *)json, strlen(json), &nd, 1), 0);
	assert_int_equal(ph_find((const uint8_t *)"moat-PLACE", 10, &nd, 1), -1);
	for (i = 1; i < strlen(json); i++) {
		phwatch_init(&w, &nd, 1);
		int r1 = phwatch_feed(&w, (const uint8_t *)json, i);
		int r2 = phwatch_feed(&w, (const uint8_t *)json + i,
		    strlen(json) - i);

		assert_true(r1 == 0 || r2 == 0);	/* seen, wherever split */
		phwatch_free(&w);
	}
}

/* b's value holds a's placeholder. */
static int
chained_value(void *arg, const struct moat_secret *s, char *buf,
    size_t *len, char *err, size_t errlen)
{
	const char *v = strcmp(s->name, "a") == 0 ? "va-1" : "x moat-a-PH";

	(void)arg;
	(void)err;
	(void)errlen;
	*len = strlen(v);
	memcpy(buf, v, *len);
	return 0;
}

/* Values and definitions changed in place: the new generation has the
 * staged value and every other one by name; the old one stays whole for
 * the connections that hold it. */
static int
two_values(void *arg, const struct moat_secret *s, char *buf, size_t *len,
    char *err, size_t errlen)
{
	const char *v = strcmp(s->name, "a") == 0 ? "va-1" : "vb-1";

	(void)arg;
	(void)err;
	(void)errlen;
	memcpy(buf, v, 4);
	*len = 4;
	return 0;
}

static void
test_generations(void **state)
{
	struct moat_secret sec[2] = {
		{ .name = "a", .placeholder = "ph-a" },
		{ .name = "b", .placeholder = "ph-b" },
	};
	/* the new configuration: b, a new c, and a is gone */
	struct moat_secret nsec[2] = {
		{ .name = "c", .placeholder = "ph-c" },
		{ .name = "b", .placeholder = "ph-b" },
	};
	struct moat_config cfg = { .secrets = sec, .nsecrets = 2 };
	struct moat_config ncfg = { .secrets = nsec, .nsecrets = 2 };
	struct secrets ss, *g1, *g2;
	char err[256];

	assert_int_equal(secrets_load_from(&ss, &cfg, two_values, NULL, err,
	    sizeof(err)), 0);
	g1 = secrets_adopt(&ss);
	assert_int_equal(g1->refs, 1);
	assert_null(ss.arena);			/* moved, not copied */
	assert_ptr_equal(secrets_hold(g1), g1);	/* a connection */
	/* c has no value yet: no generation */
	assert_null(secrets_rebuild(g1, &ncfg, err, sizeof(err)));
	assert_non_null(strstr(err, "\"c\""));
	assert_int_equal(secrets_stage("c", "vc-1", 4), 0);
	assert_int_equal(secrets_stage("b", "vb-2-longer", 11), 0);
	assert_int_equal(secrets_stage("b", "again", 5), -1);
	assert_int_equal(secrets_stage("d", "", 0), -1);
	assert_true(secrets_staged("c") && secrets_staged("b"));
	g2 = secrets_rebuild(g1, &ncfg, err, sizeof(err));
	assert_non_null(g2);
	secrets_unstage();
	assert_false(secrets_staged("b"));
	assert_int_equal(g2->refs, 1);
	assert_int_equal(g2->n, 2);
	assert_memory_equal(g2->v[0].value, "vc-1", 4);
	assert_int_equal(g2->v[1].len, 11);
	assert_memory_equal(g2->v[1].value, "vb-2-longer", 11);
	assert_ptr_equal(g2->redact[1].from, g2->v[1].value);
	assert_int_equal(g2->maxvalue, 11);
	assert_ptr_equal(g2->v[1].cfg, &nsec[1]);
	/* unstaged: a value comes from the old generation by name */
	ncfg.secrets = &nsec[1];
	ncfg.nsecrets = 1;
	secrets_release(g2);
	g2 = secrets_rebuild(g1, &ncfg, err, sizeof(err));
	assert_non_null(g2);
	assert_memory_equal(g2->v[0].value, "vb-1", 4);
	/* the proxy lets go of g1; the connection still scrubs with it */
	secrets_release(g1);
	assert_int_equal(g1->refs, 1);
	assert_memory_equal(g1->v[0].value, "va-1", 4);
	assert_memory_equal(g1->v[1].value, "vb-1", 4);
	assert_int_equal(g1->redact[1].fromlen, 4);
	secrets_release(g1);			/* the connection closes */
	secrets_release(g2);
	secrets_wipe_all();
}

/* A connection scrubs only the values of the secrets its sandbox holds:
 * another member's value may be ordinary text ("e", "function"), and
 * scrubbing it would let that member rewrite everyone's responses. */
static void
test_scrub_own(void **state)
{
	struct moat_secret sec[2] = {
		{ .name = "a", .placeholder = "ph-a" },
		{ .name = "b", .placeholder = "ph-b" },
	};
	struct moat_config cfg = { .secrets = sec, .nsecrets = 2 };
	char *holds_b[] = { "b" };
	struct moat_sandbox sb = { .name = "s" };
	struct secrets ss, *g;
	struct scrub sc;
	char err[256];

	sb.secrets.v = holds_b;
	sb.secrets.n = 1;
	assert_int_equal(secrets_load_from(&ss, &cfg, two_values, NULL, err,
	    sizeof(err)), 0);
	g = secrets_adopt(&ss);
	scrub_init(&sc, g, &sb);
	assert_int_equal(sc.n, 1);
	assert_memory_equal(sc.s[0].from, "vb-1", 4);
	scrub_free(&sc);
	sb.secrets.n = 0;		/* holds none: scrubs none */
	scrub_init(&sc, g, &sb);
	assert_int_equal(sc.n, 0);
	scrub_free(&sc);
	scrub_init(&sc, g, NULL);	/* no sandbox: every value */
	assert_int_equal(sc.n, 2);
	scrub_free(&sc);
	secrets_release(g);
	secrets_wipe_all();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inject),
		cmocka_unit_test(test_inject_one_pass),
		cmocka_unit_test(test_value_placeholder),
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_b64),
		cmocka_unit_test(test_scrub_basic_echo),
		cmocka_unit_test(test_scrub_cap),
		cmocka_unit_test(test_scrub_own),
		cmocka_unit_test(test_redact_splits),
		cmocka_unit_test(test_redact_inmax),
		cmocka_unit_test(test_redact_many_firsts),
		cmocka_unit_test(test_redact_holds_prefix_only),
		cmocka_unit_test(test_redactor_reset),
		cmocka_unit_test(test_placeholder_spotting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
