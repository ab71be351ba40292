/*
 * msg.c -- DNS messages in and out of dnsd (see msg.h).  All wire format
 * is read and written by ldns; the only bytes looked at directly are the
 * fixed header bits that ldns exposes as macros, and the TLVs inside an
 * SVCB/HTTPS SvcParams field, which ldns keeps as one opaque rdf.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include "dnswire.h"
#include "admit.h"
#include "msg.h"
#include "ranges.h"

/* --- guest queries --------------------------------------------------- */

static bool
qtype_refused(uint16_t t)
{
	return t == LDNS_RR_TYPE_ANY || t == LDNS_RR_TYPE_AXFR ||
	    t == LDNS_RR_TYPE_IXFR || t == LDNS_RR_TYPE_MAILA ||
	    t == LDNS_RR_TYPE_MAILB || t == LDNS_RR_TYPE_OPT;
}

static size_t
client_maxlen(const ldns_pkt *p, bool tcp)
{
	size_t n;

	if (tcp)
		return 65535;
	if (!ldns_pkt_edns(p))
		return 512;
	n = ldns_pkt_edns_udp_size(p);
	if (n < 512)
		n = 512;
	return n > DNSD_EDNS_SIZE ? DNSD_EDNS_SIZE : n;
}

enum dq_status
dq_parse(const uint8_t *buf, size_t len, bool tcp, struct dq *q)
{
	const ldns_rr *rr;
	const ldns_rdf *owner;

	memset(q, 0, sizeof(*q));
	if (len < LDNS_HEADER_SIZE || LDNS_QR_WIRE(buf))
		return DQ_DROP;
	q->id = LDNS_ID_WIRE(buf);
	q->maxlen = 512;
	if (LDNS_OPCODE_WIRE(buf) != LDNS_PACKET_QUERY)
		return DQ_NOTIMP;
	if (LDNS_QDCOUNT(buf) != 1)
		return DQ_FORMERR;
	/* One additional record at most (OPT): ldns loses all but the last
	 * of several TSIG records, never freed (dnswire.h). */
	if (LDNS_ARCOUNT(buf) > 1)
		return DQ_FORMERR;
	if (ldns_wire2pkt(&q->pkt, buf, len) != LDNS_STATUS_OK) {
		q->pkt = NULL;
		return DQ_FORMERR;
	}
	q->edns = ldns_pkt_edns(q->pkt);
	q->maxlen = client_maxlen(q->pkt, tcp);
	if (ldns_pkt_qdcount(q->pkt) != 1 ||
	    ldns_rr_list_rr_count(ldns_pkt_question(q->pkt)) != 1)
		return DQ_FORMERR;
	if (q->edns && ldns_pkt_edns_version(q->pkt) != 0)
		return DQ_BADVERS;
	rr = ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0);
	owner = ldns_rr_owner(rr);
	if (owner == NULL || ldns_rdf_get_type(owner) != LDNS_RDF_TYPE_DNAME ||
	    ldns_rdf_size(owner) > sizeof(q->name))
		return DQ_FORMERR;
	q->qtype = ldns_rr_get_type(rr);
	q->qclass = ldns_rr_get_class(rr);
	memcpy(q->name, ldns_rdf_data(owner), ldns_rdf_size(owner));
	q->namelen = ldns_rdf_size(owner);
	ldns_dname2canonical(&(ldns_rdf){ q->namelen, LDNS_RDF_TYPE_DNAME,
	    q->name });
	if (q->qclass != LDNS_RR_CLASS_IN || qtype_refused(q->qtype))
		return DQ_NOTIMP;
	return DQ_OK;
}

void
dq_clear(struct dq *q)
{
	if (q->pkt != NULL)
		ldns_pkt_free(q->pkt);
	q->pkt = NULL;
}

char *
dq_name(const struct dq *q, char *buf, size_t len)
{
	ldns_rdf d = { q->namelen, LDNS_RDF_TYPE_DNAME, (void *)q->name };
	char *s;

	if (q->namelen == 0 || (s = ldns_rdf2str(&d)) == NULL) {
		snprintf(buf, len, "?");
		return buf;
	}
	/* Names from guests are hostile: keep the log line printable. */
	for (char *c = s; *c != '\0'; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	snprintf(buf, len, "%s", s);
	free(s);
	return buf;
}

/* --- answers to guests ----------------------------------------------- */

/* Render into one reusable buffer (ldns_pkt2wire allocates a 64 KiB
 * buffer per call) and return a malloc'd copy of just the bytes. */
static uint8_t *
render(const ldns_pkt *p, size_t *len)
{
	static ldns_buffer *buf;
	uint8_t *out;

	if (buf == NULL && (buf = ldns_buffer_new(LDNS_MAX_PACKETLEN)) == NULL)
		return NULL;
	ldns_buffer_clear(buf);
	if (ldns_pkt2buffer_wire(buf, p) != LDNS_STATUS_OK ||
	    (*len = ldns_buffer_position(buf)) == 0 ||
	    (out = malloc(*len)) == NULL)
		return NULL;
	memcpy(out, ldns_buffer_begin(buf), *len);
	return out;
}

static ldns_rr_list *
clone_aged(const ldns_rr_list *l, uint32_t age)
{
	ldns_rr_list *out = ldns_rr_list_new();
	size_t i;

	if (out == NULL)
		return NULL;
	for (i = 0; l != NULL && i < ldns_rr_list_rr_count(l); i++) {
		ldns_rr *rr = ldns_rr_clone(ldns_rr_list_rr(l, i));
		uint32_t ttl;

		if (rr == NULL)
			continue;
		ttl = ldns_rr_ttl(rr);
		ldns_rr_set_ttl(rr, ttl > age ? ttl - age : 0);
		ldns_rr_list_push_rr(out, rr);
	}
	return out;
}

/*
 * RFC 8914 bounds EXTRA-TEXT only by the option's 16-bit length; what
 * bounds it here is the answer: a text longer than the largest answer we
 * send by UDP could never go whole, so it is cut there (a TCP client
 * still gets that much).  A refusal's text names the whole command for
 * a 253-character name; resp_build falls back to the code alone where
 * the client's payload size leaves no room.
 */
#define EDE_TEXT_MAX	DNSD_EDNS_SIZE

static void
set_ede(ldns_pkt *p, uint16_t code, const char *text)
{
	ldns_edns_option_list *ol;
	ldns_edns_option *o;
	size_t tlen = text ? strlen(text) : 0;
	uint8_t data[2 + EDE_TEXT_MAX];

	if (tlen > EDE_TEXT_MAX)
		tlen = EDE_TEXT_MAX;
	ldns_write_uint16(data, code);
	if (tlen)
		memcpy(data + 2, text, tlen);
	if ((o = ldns_edns_new_from_data(LDNS_EDNS_EDE, 2 + tlen, data)) ==
	    NULL)
		return;
	/* A second call replaces the packet's one option in place. */
	if ((ol = ldns_pkt_edns_get_option_list(p)) != NULL) {
		ldns_edns_deep_free(ldns_edns_option_list_pop(ol));
		if (!ldns_edns_option_list_push(ol, o))
			ldns_edns_deep_free(o);
		return;
	}
	if ((ol = ldns_edns_option_list_new()) == NULL ||
	    !ldns_edns_option_list_push(ol, o)) {
		ldns_edns_deep_free(o);
		ldns_edns_option_list_deep_free(ol);
		return;
	}
	ldns_pkt_set_edns_option_list(p, ol);
}

static ldns_pkt *
resp_skeleton(const struct dq *q, int rcode)
{
	ldns_pkt *p = ldns_pkt_new();
	ldns_rr *qr;

	if (p == NULL)
		return NULL;
	ldns_pkt_set_id(p, q->id);
	ldns_pkt_set_qr(p, true);
	ldns_pkt_set_opcode(p, LDNS_PACKET_QUERY);
	ldns_pkt_set_rd(p, ldns_pkt_rd(q->pkt));
	ldns_pkt_set_cd(p, ldns_pkt_cd(q->pkt));
	ldns_pkt_set_ra(p, true);
	ldns_pkt_set_rcode(p, (uint8_t)(rcode & 0x0f));
	/* The question goes back exactly as asked (case included). */
	qr = ldns_rr_clone(ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0));
	if (qr == NULL || !ldns_pkt_push_rr(p, LDNS_SECTION_QUESTION, qr)) {
		ldns_rr_free(qr);
		ldns_pkt_free(p);
		return NULL;
	}
	if (q->edns) {
		ldns_pkt_set_edns_udp_size(p, DNSD_EDNS_SIZE);
		ldns_pkt_set_edns_extended_rcode(p, (uint8_t)(rcode >> 4));
	}
	return p;
}

static void
section_set(ldns_pkt *p, ldns_pkt_section s, ldns_rr_list *l)
{
	switch (s) {
	case LDNS_SECTION_ANSWER:
		ldns_rr_list_deep_free(ldns_pkt_answer(p));
		ldns_pkt_set_answer(p, l);
		ldns_pkt_set_ancount(p, (uint16_t)ldns_rr_list_rr_count(l));
		break;
	case LDNS_SECTION_AUTHORITY:
		ldns_rr_list_deep_free(ldns_pkt_authority(p));
		ldns_pkt_set_authority(p, l);
		ldns_pkt_set_nscount(p, (uint16_t)ldns_rr_list_rr_count(l));
		break;
	default:
		ldns_rr_list_deep_free(l);
		break;
	}
}

uint8_t *
resp_build(const struct dq *q, ldns_pkt_rcode rcode, const ldns_rr_list *an,
    const ldns_rr_list *ns, uint32_t age, uint16_t ede, const char *ede_text,
    size_t *len)
{
	ldns_pkt *p;
	uint8_t *wire = NULL;
	ldns_rr_list *l;

	if (q->pkt == NULL || (p = resp_skeleton(q, (int)rcode)) == NULL)
		return NULL;
	if (an != NULL && (l = clone_aged(an, age)) != NULL)
		section_set(p, LDNS_SECTION_ANSWER, l);
	if (ns != NULL && (l = clone_aged(ns, age)) != NULL)
		section_set(p, LDNS_SECTION_AUTHORITY, l);
	if (q->edns && ede != 0)
		set_ede(p, ede, ede_text);
	wire = render(p, len);
	if (wire != NULL && *len > q->maxlen) {
		/* Too big for the client: an empty truncated answer makes
		 * it retry over TCP, and never hands it a partial RRset. */
		free(wire);
		wire = NULL;
		section_set(p, LDNS_SECTION_ANSWER, ldns_rr_list_new());
		section_set(p, LDNS_SECTION_AUTHORITY, ldns_rr_list_new());
		ldns_pkt_set_tc(p, true);
		wire = render(p, len);
		if (wire != NULL && *len > q->maxlen && ede != 0) {
			/* Even empty, the text does not fit: the code alone
			 * goes by UDP, the whole text over TCP. */
			free(wire);
			set_ede(p, ede, NULL);
			wire = render(p, len);
		}
	}
	ldns_pkt_free(p);
	return wire;
}

uint8_t *
resp_error(const uint8_t *buf, size_t len, ldns_pkt_rcode rcode,
    size_t *outlen)
{
	ldns_pkt *p;
	uint8_t *wire = NULL;

	if (len < LDNS_HEADER_SIZE || LDNS_QR_WIRE(buf))
		return NULL;
	if ((p = ldns_pkt_new()) == NULL)
		return NULL;
	ldns_pkt_set_id(p, LDNS_ID_WIRE(buf));
	ldns_pkt_set_qr(p, true);
	ldns_pkt_set_opcode(p, (ldns_pkt_opcode)LDNS_OPCODE_WIRE(buf));
	ldns_pkt_set_rcode(p, rcode);
	wire = render(p, outlen);
	ldns_pkt_free(p);
	return wire;
}

/* --- upstream queries ------------------------------------------------ */

uint8_t *
upq_build(const struct dquestion *q, size_t *len)
{
	ldns_rdf *name;
	ldns_rr *rr;
	ldns_pkt *p;
	uint8_t *wire = NULL;

	if ((p = ldns_pkt_new()) == NULL)
		return NULL;
	name = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME, q->namelen, q->name);
	rr = ldns_rr_new();
	if (name == NULL || rr == NULL) {
		ldns_rdf_deep_free(name);
		ldns_rr_free(rr);
		ldns_pkt_free(p);
		return NULL;
	}
	ldns_rr_set_owner(rr, name);
	ldns_rr_set_type(rr, q->qtype);
	ldns_rr_set_class(rr, q->qclass);
	ldns_rr_set_question(rr, true);
	ldns_pkt_push_rr(p, LDNS_SECTION_QUESTION, rr);
	ldns_pkt_set_id(p, q->id);
	ldns_pkt_set_rd(p, true);
	ldns_pkt_set_edns_udp_size(p, DNSD_EDNS_SIZE);
	wire = render(p, len);
	ldns_pkt_free(p);
	return wire;
}

/* --- upstream answers ------------------------------------------------ */

bool
addr_is_private(const struct moat_rangeset *priv, const struct moat_addr *a)
{
	/* ::ffff:a.b.c.d and 64:ff9b::a.b.c.d are judged as a.b.c.d; other
	 * IPv6 forms that embed IPv4 are in the table themselves. */
	return admit_private(priv, a);
}

void
answer_clear(struct answer *a)
{
	ldns_rr_list_deep_free(a->an);
	ldns_rr_list_deep_free(a->ns);
	memset(a, 0, sizeof(*a));
}

static bool
dname_is(const ldns_rdf *d, const uint8_t *name, size_t len)
{
	ldns_rdf want = { len, LDNS_RDF_TYPE_DNAME, (void *)name };

	return d != NULL && ldns_rdf_get_type(d) == LDNS_RDF_TYPE_DNAME &&
	    ldns_dname_compare(d, &want) == 0;
}

static enum da_status
da_match(const ldns_pkt *p, const struct dquestion *q)
{
	const ldns_rr *rr;

	if (!ldns_pkt_qr(p) || ldns_pkt_id(p) != q->id ||
	    ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY ||
	    ldns_rr_list_rr_count(ldns_pkt_question(p)) != 1)
		return DA_MISMATCH;
	rr = ldns_rr_list_rr(ldns_pkt_question(p), 0);
	if (ldns_rr_get_type(rr) != q->qtype ||
	    ldns_rr_get_class(rr) != q->qclass ||
	    !dname_is(ldns_rr_owner(rr), q->name, q->namelen))
		return DA_MISMATCH;
	return DA_OK;
}

static bool
rdf_addr(const ldns_rdf *d, int family, struct moat_addr *a)
{
	size_t n = family == AF_INET ? 4 : 16;

	if (d == NULL || ldns_rdf_size(d) != n)
		return false;
	memset(a, 0, sizeof(*a));
	a->family = family;
	memcpy(a->a, ldns_rdf_data(d), n);
	return true;
}

/* Keep the public addresses of one ipv4hint/ipv6hint value; returns the
 * bytes kept in out. */
static size_t
hint_filter(const uint8_t *v, size_t vlen, int family,
    const struct moat_rangeset *priv, uint8_t *out, size_t *removed)
{
	size_t n = family == AF_INET ? 4 : 16, i, kept = 0;
	struct moat_addr a;

	for (i = 0; i + n <= vlen; i += n) {
		memset(&a, 0, sizeof(a));
		a.family = family;
		memcpy(a.a, v + i, n);
		if (addr_is_private(priv, &a)) {
			(*removed)++;
			continue;
		}
		memcpy(out + kept, v + i, n);
		kept += n;
	}
	return kept;
}

/* Rewrite the SvcParams of an SVCB/HTTPS record without private hints.
 * Returns false if the record must go (malformed). */
static bool
svcb_filter(ldns_rr *rr, const struct moat_rangeset *priv, size_t *removed)
{
	ldns_rdf *d = ldns_rr_rdf(rr, 2), *nd;
	const uint8_t *p;
	uint8_t *out;
	size_t len, off = 0, olen = 0, before = *removed;

	if (ldns_rr_rd_count(rr) < 2)
		return true;		/* AliasMode without params */
	if (d == NULL || ldns_rdf_get_type(d) != LDNS_RDF_TYPE_SVCPARAMS)
		return false;
	p = ldns_rdf_data(d);
	len = ldns_rdf_size(d);
	if ((out = malloc(len ? len : 1)) == NULL)
		return false;
	while (off + 4 <= len) {
		uint16_t key = ldns_read_uint16(p + off);
		uint16_t vlen = ldns_read_uint16(p + off + 2);
		const uint8_t *v = p + off + 4;
		size_t kept;

		if (off + 4 + vlen > len)
			break;
		off += 4 + (size_t)vlen;
		if (key != LDNS_SVCPARAM_KEY_IPV4HINT &&
		    key != LDNS_SVCPARAM_KEY_IPV6HINT) {
			memcpy(out + olen, v - 4, 4 + (size_t)vlen);
			olen += 4 + (size_t)vlen;
			continue;
		}
		kept = hint_filter(v, vlen, key == LDNS_SVCPARAM_KEY_IPV4HINT ?
		    AF_INET : AF_INET6, priv, out + olen + 4, removed);
		if (kept == 0)
			continue;	/* an empty hint is not allowed */
		ldns_write_uint16(out + olen, key);
		ldns_write_uint16(out + olen + 2, (uint16_t)kept);
		olen += 4 + kept;
	}
	if (off != len) {
		free(out);
		return false;
	}
	if (*removed != before) {
		nd = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_SVCPARAMS, olen, out);
		if (nd == NULL) {
			free(out);
			return false;
		}
		ldns_rdf_deep_free(ldns_rr_set_rdf(rr, nd, 2));
	}
	free(out);
	return true;
}

/* One record of the chain: keep (true) or remove (false) it, collecting
 * the public A and AAAA addresses that will be opened for the sandbox. */
static bool
filter_rr(ldns_rr *rr, const struct moat_rangeset *priv, struct answer *a)
{
	struct moat_addr addr;

	switch (ldns_rr_get_type(rr)) {
	case LDNS_RR_TYPE_A:
	case LDNS_RR_TYPE_AAAA:
		if (!rdf_addr(ldns_rr_rdf(rr, 0), ldns_rr_get_type(rr) ==
		    LDNS_RR_TYPE_A ? AF_INET : AF_INET6, &addr) ||
		    addr_is_private(priv, &addr)) {
			a->removed++;
			return false;
		}
		/* Never tell the guest an address that was not opened
		 * for it. */
		if (a->naddr == DNSD_MAX_ADDRS)
			return false;
		a->addr[a->naddr++] = addr;
		return true;
	case LDNS_RR_TYPE_SVCB:
	case LDNS_RR_TYPE_HTTPS:
		if (!svcb_filter(rr, priv, &a->removed)) {
			a->removed++;
			return false;
		}
		return true;
	default:
		return true;
	}
}

static void
ttl_clamp(ldns_rr *rr, uint32_t max, uint32_t *min)
{
	uint32_t t = ldns_rr_ttl(rr);

	if (t > max)
		t = max;
	ldns_rr_set_ttl(rr, t);
	if (t < *min)
		*min = t;
}

/* Follow the CNAME chain from the question; keep the records on it that
 * answer the question, drop everything else the upstream sent. */
static void
take_chain(const ldns_pkt *p, const struct dquestion *q,
    const struct moat_rangeset *priv, struct answer *a, uint32_t *minttl)
{
	const ldns_rr_list *an = ldns_pkt_answer(p);
	ldns_rdf *target = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME,
	    q->namelen, q->name);
	size_t hop, i;

	for (hop = 0; target != NULL && hop < DNSD_MAX_CHAIN; hop++) {
		ldns_rdf *next = NULL;

		for (i = 0; i < ldns_rr_list_rr_count(an); i++) {
			ldns_rr *rr = ldns_rr_list_rr(an, i), *c;
			uint16_t t = ldns_rr_get_type(rr);

			if (ldns_rr_get_class(rr) != q->qclass ||
			    ldns_dname_compare(ldns_rr_owner(rr), target) != 0)
				continue;
			if (t == LDNS_RR_TYPE_CNAME && q->qtype !=
			    LDNS_RR_TYPE_CNAME) {
				if (next != NULL || ldns_rr_rd_count(rr) != 1)
					continue;	/* one CNAME per name */
				next = ldns_rdf_clone(ldns_rr_rdf(rr, 0));
			} else if (t != q->qtype)
				continue;
			if ((c = ldns_rr_clone(rr)) == NULL)
				continue;
			if (!filter_rr(c, priv, a)) {
				ldns_rr_free(c);
				continue;
			}
			ttl_clamp(c, DNSD_TTL_MAX, minttl);
			ldns_rr_list_push_rr(a->an, c);
		}
		ldns_rdf_deep_free(target);
		target = next;
	}
	ldns_rdf_deep_free(target);
}

/* RFC 2308: a negative answer lives min(SOA TTL, SOA MINIMUM). */
static void
take_soa(const ldns_pkt *p, struct answer *a, uint32_t *minttl)
{
	const ldns_rr_list *ns = ldns_pkt_authority(p);
	size_t i;

	for (i = 0; i < ldns_rr_list_rr_count(ns); i++) {
		ldns_rr *rr = ldns_rr_list_rr(ns, i), *c;
		uint32_t t;

		if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_SOA ||
		    ldns_rr_rd_count(rr) != 7 ||
		    ldns_rdf_size(ldns_rr_rdf(rr, 6)) != 4)
			continue;
		if ((c = ldns_rr_clone(rr)) == NULL)
			return;
		t = ldns_rdf2native_int32(ldns_rr_rdf(c, 6));
		if (ldns_rr_ttl(c) > t)
			ldns_rr_set_ttl(c, t);
		ttl_clamp(c, DNSD_NEG_TTL_MAX, minttl);
		ldns_rr_list_push_rr(a->ns, c);
		return;
	}
	*minttl = 0;	/* no SOA: do not cache */
}

static size_t
count_type(const ldns_rr_list *l, uint16_t t)
{
	size_t i, n = 0;

	for (i = 0; i < ldns_rr_list_rr_count(l); i++)
		n += ldns_rr_get_type(ldns_rr_list_rr(l, i)) == t;
	return n;
}

enum da_status
da_parse(const uint8_t *buf, size_t len, const struct dquestion *q,
    const struct moat_rangeset *priv, struct answer *a)
{
	ldns_pkt *p = NULL;
	enum da_status st;
	uint32_t minttl = DNSD_TTL_MAX;

	memset(a, 0, sizeof(*a));
	if (len < LDNS_HEADER_SIZE || LDNS_ID_WIRE(buf) != q->id)
		return DA_MISMATCH;
	if (dnswire_answer(&p, buf, len) != LDNS_STATUS_OK)
		return LDNS_TC_WIRE(buf) ? DA_TRUNCATED : DA_BAD;
	if ((st = da_match(p, q)) != DA_OK)
		goto out;
	if (ldns_pkt_tc(p)) {
		st = DA_TRUNCATED;
		goto out;
	}
	a->rcode = ldns_pkt_get_rcode(p);
	if (a->rcode != LDNS_RCODE_NOERROR && a->rcode != LDNS_RCODE_NXDOMAIN) {
		st = DA_FAIL;
		goto out;
	}
	a->an = ldns_rr_list_new();
	a->ns = ldns_rr_list_new();
	if (a->an == NULL || a->ns == NULL) {
		st = DA_FAIL;
		goto out;
	}
	take_chain(p, q, priv, a, &minttl);
	if (a->removed > 0 && count_type(a->an, q->qtype) == 0) {
		/* Nothing public left: an empty answer, marked. */
		ldns_rr_list_deep_free(a->an);
		a->an = ldns_rr_list_new();
		if (minttl > 60)
			minttl = 60;
	}
	if (a->removed > 0)
		a->ede = EDE_BLOCKED;
	if (ldns_rr_list_rr_count(a->an) == 0 && a->removed == 0)
		take_soa(p, a, &minttl);
	a->ttl = minttl;
	st = DA_OK;
out:
	ldns_pkt_free(p);
	if (st != DA_OK)
		answer_clear(a);
	return st;
}
