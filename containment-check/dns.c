/*
 * dns.c -- the DNS wire format, through ldns (linked statically).
 *
 * cc_dns_parse is the only code that reads bytes a possibly hostile
 * resolver sent: a pure function over (buffer, length), fuzzed by
 * fuzz/fuzz_cc_dns.c.  Sockets are the engine's business, never ldns's,
 * so no resolver code (and no NSS) runs in this static binary.
 */
#include <string.h>

#include <ldns/ldns.h>

#include "cc.h"
#include "dnswire.h"

int
cc_dns_query(const char *name, uint16_t qtype, uint16_t id, uint8_t *buf,
    size_t len)
{
	ldns_pkt *pkt = NULL;
	uint8_t *wire = NULL;
	size_t n = 0;
	int ret = -1;

	if (ldns_pkt_query_new_frm_str(&pkt, name, (ldns_rr_type)qtype,
	    LDNS_RR_CLASS_IN, LDNS_RD) != LDNS_STATUS_OK)
		return -1;
	ldns_pkt_set_id(pkt, id);
	if (ldns_pkt2wire(&wire, pkt, &n) == LDNS_STATUS_OK && n <= len) {
		memcpy(buf, wire, n);
		ret = (int)n;
	}
	free(wire);
	ldns_pkt_free(pkt);
	return ret;
}

static void
keep_addr(struct cc_dns_reply *r, const ldns_rr *rr)
{
	const ldns_rdf *rd;
	struct moat_addr *a;
	size_t want;
	int family;

	switch (ldns_rr_get_type(rr)) {
	case LDNS_RR_TYPE_A:
		family = AF_INET;
		want = 4;
		break;
	case LDNS_RR_TYPE_AAAA:
		family = AF_INET6;
		want = 16;
		break;
	default:
		return;
	}
	if (ldns_rr_rd_count(rr) != 1 || (rd = ldns_rr_rdf(rr, 0)) == NULL ||
	    ldns_rdf_size(rd) != want || r->naddr >= CC_DNS_MAXADDR)
		return;
	a = &r->addr[r->naddr++];
	memset(a, 0, sizeof(*a));
	a->family = family;
	memcpy(a->a, ldns_rdf_data(rd), want);
}

/* 0 and *r filled for a well-formed response (QR set), -1 otherwise. */
int
cc_dns_parse(const uint8_t *buf, size_t len, struct cc_dns_reply *r)
{
	ldns_pkt *pkt = NULL;
	ldns_rr_list *an;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (len < LDNS_HEADER_SIZE || len > 65535 ||
	    dnswire_answer(&pkt, buf, len) != LDNS_STATUS_OK)
		return -1;
	if (!ldns_pkt_qr(pkt)) {
		ldns_pkt_free(pkt);
		return -1;
	}
	r->id = ldns_pkt_id(pkt);
	r->rcode = ldns_pkt_get_rcode(pkt);
	r->tc = ldns_pkt_tc(pkt);
	an = ldns_pkt_answer(pkt);
	r->nanswer = an == NULL ? 0 : ldns_rr_list_rr_count(an);
	for (i = 0; i < r->nanswer; i++)
		keep_addr(r, ldns_rr_list_rr(an, i));
	ldns_pkt_free(pkt);
	return 0;
}

const char *
cc_dns_rcode_name(int rcode)
{
	static const char *const names[] = {
		"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
		"REFUSED",
	};

	if (rcode >= 0 && (size_t)rcode < sizeof(names) / sizeof(names[0]))
		return names[rcode];
	return "RCODE?";
}
