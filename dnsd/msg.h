/*
 * msg.h -- everything dnsd does to DNS messages, as pure functions over
 * (buffer, length) built on ldns: parsing a guest's query, building the
 * answer a guest gets, making the upstream query, and checking, matching
 * and filtering an upstream's answer.  Nothing here does I/O, so the
 * fuzz harnesses (fuzz/fuzz_dnsd_*.c) and unit tests drive it directly.
 */
#ifndef DNSD_MSG_H
#define DNSD_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ldns/ldns.h>

#include "ipc.h"
#include "ranges.h"

#define DNSD_EDNS_SIZE	1232	/* advertised, and the most we send by UDP */
#define DNSD_MAX_ADDRS	IPC_SET_MAX_ADDRS
#define DNSD_MAX_CHAIN	16	/* CNAME hops followed in an answer */
#define DNSD_TTL_MAX	3600	/* answers, cache entries and set timeouts */
#define DNSD_NEG_TTL_MAX 300	/* negative answers (RFC 2308 SOA minimum) */

/* Extended DNS Errors (RFC 8914) that dnsd attaches. */
#define EDE_BLOCKED	15

enum dq_status {
	DQ_OK = 0,
	DQ_DROP,	/* not a query at all (a response, too short): ignore */
	DQ_FORMERR,	/* malformed, no or several questions */
	DQ_NOTIMP,	/* opcode other than QUERY, or ANY/AXFR/IXFR */
	DQ_BADVERS,	/* EDNS version other than 0 */
};

/* A parsed guest query.  Owns pkt. */
struct dq {
	ldns_pkt	*pkt;
	uint16_t	 id;
	uint16_t	 qtype, qclass;
	uint8_t		 name[LDNS_MAX_DOMAINLEN + 1];	/* lower-case wire */
	size_t		 namelen;
	bool		 edns;
	size_t		 maxlen;	/* the largest answer the client takes */
};

enum dq_status dq_parse(const uint8_t *buf, size_t len, bool tcp,
	    struct dq *);
void	dq_clear(struct dq *);
/* Move a parsed query (the destination takes ownership of pkt). */
/* The name as text for logs, "example.com." (into buf; returns buf). */
char	*dq_name(const struct dq *, char *buf, size_t len);

/* An upstream answer after checking and filtering: what is cached and
 * what guests are given. */
struct answer {
	ldns_pkt_rcode	 rcode;
	ldns_rr_list	*an;		/* the CNAME chain and its records */
	ldns_rr_list	*ns;		/* the SOA of a negative answer */
	uint32_t	 ttl;		/* clamped lifetime */
	uint16_t	 ede;		/* 0 or EDE_* */
	size_t		 removed;	/* records or hints removed */
	struct moat_addr addr[DNSD_MAX_ADDRS];	/* A/AAAA records of the chain */
	size_t		 naddr;
};

void	answer_clear(struct answer *);

enum da_status {
	DA_OK = 0,
	DA_TRUNCATED,	/* TC set: ask again over TCP */
	DA_MISMATCH,	/* not an answer to our question: keep waiting */
	DA_BAD,		/* malformed: try another upstream */
	DA_FAIL,	/* SERVFAIL, REFUSED...: try another upstream */
};

/* The question an upstream answer must match. */
struct dquestion {
	uint16_t	 id;
	uint16_t	 qtype, qclass;
	const uint8_t	*name;		/* lower-case wire */
	size_t		 namelen;
};

/* Check buf against q and filter it into *out (cleared first).  priv is
 * the private rangeset (lib's table minus treat_as_public). */
enum da_status da_parse(const uint8_t *buf, size_t len,
	    const struct dquestion *q, const struct moat_rangeset *priv,
	    struct answer *out);

/* The query dnsd sends upstream: our own random id, RD, EDNS0 with
 * DNSD_EDNS_SIZE and no DO.  Returns malloc'd wire (caller frees) or
 * NULL. */
uint8_t	*upq_build(const struct dquestion *, size_t *len);

/* The answer a guest gets for q.  an/ns may be NULL; age is subtracted
 * from every TTL (not below 0); ede 0 means none.  If the result does not
 * fit q->maxlen, the sections are dropped and TC is set.  Returns malloc'd
 * wire (caller frees) or NULL. */
uint8_t	*resp_build(const struct dq *q, ldns_pkt_rcode rcode,
	    const ldns_rr_list *an, const ldns_rr_list *ns, uint32_t age,
	    uint16_t ede, const char *ede_text, size_t *len);
/* FORMERR/NOTIMP for a query that did not parse (id from the header if
 * there is one).  NULL if the packet has no header to answer. */
uint8_t	*resp_error(const uint8_t *buf, size_t len, ldns_pkt_rcode,
	    size_t *outlen);

/* Is this address one a guest must never be pointed at? */
bool	addr_is_private(const struct moat_rangeset *, const struct moat_addr *);

#endif
