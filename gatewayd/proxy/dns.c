/*
 * dns.c -- asynchronous A and AAAA lookups over UDP with ldns (see
 * dns.h).
 *
 * Each lookup gets its own connected UDP socket, so the source port is
 * fresh per query and replies from anywhere else are dropped by the
 * kernel; the reply must also echo the random id and the question.
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ldns/ldns.h>

#include "dnswire.h"
#include "dns.h"
#include "ev.h"
#include "log.h"

#define DNS_TIMEOUT_S	2
#define DNS_TRIES	3
#define DNS_CACHE	256
#define DNS_TTL_MIN	5
#define DNS_TTL_MAX	300
#define DNS_TTL_NODATA	60	/* a name without records of the type */

struct dnsreq {
	char		 name[256];
	ldns_rr_type	 type;		/* A or AAAA */
	struct ev	 ev;
	uint16_t	 id;
	int		 tries;
	time_t		 deadline;
	dns_cb		 cb;
	void		*arg;
	struct dnsreq	*next, *prev;
};

struct cache_ent {
	char		 name[256];
	ldns_rr_type	 type;
	struct moat_addr addrs[DNS_MAX_ADDRS];
	size_t		 n;
	time_t		 expires;
};

static struct moat_addr *servers;
static size_t nservers;
static uint16_t server_port = 53;
static struct dnsreq *reqs;
static struct cache_ent cache[DNS_CACHE];

/* Seconds on the event loop's clock. */
static time_t
mono(void)
{
	return (time_t)(ev_now() / 1000);
}

void
dns_init(const struct moat_addr *s, size_t n, uint16_t port)
{
	servers = xreallocarray(NULL, n ? n : 1, sizeof(*servers));
	memcpy(servers, s, n * sizeof(*s));
	nservers = n;
	server_port = port ? port : 53;
}

static struct cache_ent *
cache_get(const char *name, ldns_rr_type type)
{
	time_t now = mono();
	size_t i;

	for (i = 0; i < DNS_CACHE; i++)
		if (cache[i].name[0] != '\0' && cache[i].expires > now &&
		    cache[i].type == type && strcmp(cache[i].name, name) == 0)
			return &cache[i];
	return NULL;
}

static void
cache_put(const char *name, ldns_rr_type type, const struct moat_addr *a,
    size_t n, uint32_t ttl)
{
	struct cache_ent *victim = &cache[0];
	size_t i;

	for (i = 0; i < DNS_CACHE; i++)
		if (cache[i].expires < victim->expires)
			victim = &cache[i];
	if (ttl < DNS_TTL_MIN)
		ttl = DNS_TTL_MIN;
	if (ttl > DNS_TTL_MAX)
		ttl = DNS_TTL_MAX;
	snprintf(victim->name, sizeof(victim->name), "%s", name);
	victim->type = type;
	memcpy(victim->addrs, a, n * sizeof(*a));
	victim->n = n;
	victim->expires = mono() + (time_t)ttl;
}

static void
req_free(struct dnsreq *r)
{
	if (r->ev.fd >= 0) {
		int fd = r->ev.fd;

		ev_del(&r->ev);
		close(fd);
	}
	if (r->prev)
		r->prev->next = r->next;
	else
		reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	ev_defer(free, r);
}

static void
req_finish(struct dnsreq *r, const char *err, const struct moat_addr *a,
    size_t n)
{
	dns_cb cb = r->cb;
	void *arg = r->arg;

	req_free(r);
	if (cb != NULL)
		cb(arg, err, a, n);
}

/* Collect the A (or AAAA) records of an answer.  Returns the count, or
 * -1 with *err set, or 0 with *err set when the name has none of the
 * type (NODATA). */
static int
answer_addrs(ldns_pkt *p, ldns_rr_type type, struct moat_addr *a,
    uint32_t *ttl, const char **err)
{
	ldns_rr_list *an = ldns_pkt_answer(p);
	size_t i, n = 0, len = type == LDNS_RR_TYPE_AAAA ? 16 : 4;

	*ttl = DNS_TTL_MAX;
	if (ldns_pkt_get_rcode(p) == LDNS_RCODE_NXDOMAIN)
		return *err = "no such name (NXDOMAIN)", -1;
	if (ldns_pkt_get_rcode(p) != LDNS_RCODE_NOERROR)
		return *err = "resolver refused or failed", -1;
	for (i = 0; an != NULL && i < ldns_rr_list_rr_count(an); i++) {
		ldns_rr *rr = ldns_rr_list_rr(an, i);
		ldns_rdf *rd;

		if (ldns_rr_get_type(rr) != type ||
		    (rd = ldns_rr_rdf(rr, 0)) == NULL ||
		    ldns_rdf_size(rd) != len || n == DNS_MAX_ADDRS)
			continue;
		memset(&a[n], 0, sizeof(a[n]));
		a[n].family = len == 16 ? AF_INET6 : AF_INET;
		memcpy(a[n].a, ldns_rdf_data(rd), len);
		if (ldns_rr_ttl(rr) < *ttl)
			*ttl = ldns_rr_ttl(rr);
		n++;
	}
	if (n == 0)
		return *err = len == 16 ? "no address (no AAAA record)" :
		    "no address (no A record)", 0;
	return (int)n;
}

static bool
reply_matches(struct dnsreq *r, ldns_pkt *p)
{
	ldns_rr_list *q = ldns_pkt_question(p);
	ldns_rdf *want;
	bool ok;

	if (!ldns_pkt_qr(p) || ldns_pkt_id(p) != r->id || q == NULL ||
	    ldns_rr_list_rr_count(q) != 1)
		return false;
	if ((want = ldns_dname_new_frm_str(r->name)) == NULL)
		return false;
	ok = ldns_dname_compare(ldns_rr_owner(ldns_rr_list_rr(q, 0)),
	    want) == 0;
	ldns_rdf_deep_free(want);
	return ok;
}

static void
req_readable(struct ev *e, uint32_t events)
{
	struct dnsreq *r = e->arg;
	struct moat_addr a[DNS_MAX_ADDRS];
	const char *err = NULL;
	uint8_t buf[4096];
	ldns_pkt *p = NULL;
	uint32_t ttl;
	ssize_t n;
	int na;

	if ((n = recv(e->fd, buf, sizeof(buf), 0)) <= 0)
		return;		/* ICMP errors etc.: the timer retries */
	if (dnswire_answer(&p, buf, (size_t)n) != LDNS_STATUS_OK)
		return;
	if (!reply_matches(r, p)) {
		ldns_pkt_free(p);
		return;
	}
	if (ldns_pkt_tc(p))
		err = "answer truncated";
	na = err ? -1 : answer_addrs(p, r->type, a, &ttl, &err);
	ldns_pkt_free(p);
	/* An AAAA NODATA too: a sandbox with IPv6 asks AAAA of every name,
	 * most of which have none. */
	if (na > 0 || (na == 0 && r->type == LDNS_RR_TYPE_AAAA))
		cache_put(r->name, r->type, a, (size_t)na, na > 0 ? ttl :
		    DNS_TTL_NODATA);
	req_finish(r, na > 0 ? NULL : err, a, na > 0 ? (size_t)na : 0);
}

static int
req_send(struct dnsreq *r)
{
	const struct moat_addr *s = &servers[(size_t)r->tries % nservers];
	struct sockaddr_storage ss;
	socklen_t sl;
	ldns_pkt *q;
	ldns_rdf *dn;
	uint8_t *wire = NULL;
	size_t wl;
	int fd, rc = -1;

	if (r->ev.fd >= 0) {
		fd = r->ev.fd;
		ev_del(&r->ev);
		close(fd);
	}
	sl = addr_to_sockaddr(s, server_port, &ss);
	if (getrandom(&r->id, sizeof(r->id), 0) != sizeof(r->id))
		return -1;
	if ((dn = ldns_dname_new_frm_str(r->name)) == NULL)
		return -1;
	q = ldns_pkt_query_new(dn, r->type, LDNS_RR_CLASS_IN, LDNS_RD);
	ldns_pkt_set_id(q, r->id);
	if (ldns_pkt2wire(&wire, q, &wl) != LDNS_STATUS_OK)
		goto out;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 ||
	    ev_add(&r->ev, fd, EPOLLIN, req_readable, r) < 0) {
		close(fd);
		goto out;
	}
	(void)send(fd, wire, wl, 0);	/* a lost query is retried */
	r->deadline = mono() + DNS_TIMEOUT_S;
	rc = 0;
out:
	free(wire);
	ldns_pkt_free(q);
	return rc;
}

struct dnsreq *
dns_lookup(const char *name, bool v6, dns_cb cb, void *arg)
{
	ldns_rr_type type = v6 ? LDNS_RR_TYPE_AAAA : LDNS_RR_TYPE_A;
	struct cache_ent *c;
	struct dnsreq *r;

	if ((c = cache_get(name, type)) != NULL) {
		struct moat_addr a[DNS_MAX_ADDRS];
		size_t n = c->n;

		memcpy(a, c->addrs, n * sizeof(*a));
		cb(arg, n > 0 ? NULL : type == LDNS_RR_TYPE_AAAA ?
		    "no address (no AAAA record)" : "no address (no A record)",
		    a, n);
		return NULL;
	}
	if (nservers == 0) {
		cb(arg, "no upstream resolver configured", NULL, 0);
		return NULL;
	}
	r = xcalloc(1, sizeof(*r));
	r->ev.fd = -1;
	r->type = type;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->cb = cb;
	r->arg = arg;
	r->next = reqs;
	if (reqs)
		reqs->prev = r;
	reqs = r;
	if (req_send(r) < 0) {
		req_finish(r, "cannot send the query", NULL, 0);
		return NULL;
	}
	return r;
}

void
dns_cancel(struct dnsreq *r)
{
	if (r != NULL)
		r->cb = NULL;
}

void
dns_tick(void)
{
	struct dnsreq *r, *next;
	time_t now = mono();

	for (r = reqs; r != NULL; r = next) {
		next = r->next;
		if (r->cb == NULL) {
			req_free(r);
			continue;
		}
		if (r->deadline > now)
			continue;
		if (++r->tries >= DNS_TRIES || req_send(r) < 0)
			req_finish(r, "resolver timed out", NULL, 0);
	}
}
