/*
 * fuzz_dnsd_answer.c -- the upstream-answer path of dnsd: da_parse
 * (match to the question, CNAME chain, rebinding filter incl. SVCB/HTTPS
 * hints, TTLs) over (buffer, length), then the answer a guest would get
 * from it and a round through the cache.  The question is taken from the
 * input itself when it has one, so that matching answers are explored.
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "dnswire.h"
#include "../dnsd/cache.h"
#include "../dnsd/msg.h"
#include "ranges.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct moat_rangeset *priv;
static struct cache *cache;
static struct dq guestq;

static void
init(void)
{
	struct moat_prefix pub;
	ldns_pkt *p = NULL;
	uint8_t *w = NULL;
	size_t len;

	prefix_parse("203.0.113.0/24", &pub);
	priv = rangeset_new_private(&pub, 1);
	cache = cache_new(64 * 1024);
	ldns_pkt_query_new_frm_str(&p, "a.test.", LDNS_RR_TYPE_A,
	    LDNS_RR_CLASS_IN, LDNS_RD);
	ldns_pkt_set_edns_udp_size(p, 1232);
	ldns_pkt2wire(&w, p, &len);
	ldns_pkt_free(p);
	if (dq_parse(w, len, false, &guestq) != DQ_OK)
		abort();
	free(w);
}

/* The question of the input, if ldns can read one. */
static bool
question_of(const uint8_t *data, size_t size, struct dquestion *q,
    uint8_t *name)
{
	ldns_pkt *p = NULL;
	const ldns_rr *rr;
	const ldns_rdf *o;
	bool ok = false;

	if (dnswire_answer(&p, data, size) != LDNS_STATUS_OK)
		return false;
	if (ldns_rr_list_rr_count(ldns_pkt_question(p)) == 1) {
		rr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
		o = ldns_rr_owner(rr);
		if (o != NULL && ldns_rdf_size(o) <= LDNS_MAX_DOMAINLEN + 1) {
			memcpy(name, ldns_rdf_data(o), ldns_rdf_size(o));
			q->name = name;
			q->namelen = ldns_rdf_size(o);
			q->id = ldns_pkt_id(p);
			q->qtype = ldns_rr_get_type(rr);
			q->qclass = ldns_rr_get_class(rr);
			ok = true;
		}
	}
	ldns_pkt_free(p);
	return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t fixed[] = "\001a\004test";
	uint8_t name[LDNS_MAX_DOMAINLEN + 2];
	struct dquestion q = { 0, LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, fixed,
	    sizeof(fixed) };
	struct answer a;
	const struct centry *e;
	uint8_t *out;
	size_t olen, i;

	if (priv == NULL)
		init();
	if (!question_of(data, size, &q, name) && size >= 2)
		q.id = (uint16_t)((data[0] << 8) | data[1]);
	if (da_parse(data, size, &q, priv, &a) != DA_OK)
		return 0;
	/* Only the addresses the question asked for (A: IPv4, AAAA:
	 * IPv6), none of them private, would be opened. */
	for (i = 0; i < a.naddr; i++)
		if (a.addr[i].family != (q.qtype == LDNS_RR_TYPE_AAAA ?
		    AF_INET6 : AF_INET) || addr_is_private(priv, &a.addr[i]))
			abort();
	out = resp_build(&guestq, a.rcode, a.an, a.ns, 1, a.ede, "x", &olen);
	if (out != NULL && olen > guestq.maxlen)
		abort();
	free(out);
	cache_put(cache, q.name, q.namelen, q.qtype, &a, 1);
	if ((e = cache_get(cache, q.name, q.namelen, q.qtype, 1)) != NULL) {
		out = resp_build(&guestq, e->a.rcode, e->a.an, e->a.ns, 0,
		    e->a.ede, NULL, &olen);
		free(out);
	}
	answer_clear(&a);
	return 0;
}
