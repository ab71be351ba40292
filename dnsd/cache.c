/*
 * cache.c -- a hash table of answers with an LRU list and a byte cap.
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "log.h"

struct cnode {
	struct cnode	*hnext;			/* hash chain */
	struct cnode	*prev, *next;		/* LRU, most recent first */
	uint64_t	 hash;
	size_t		 size;			/* accounted bytes */
	uint16_t	 qtype;
	size_t		 namelen;
	uint8_t		 name[LDNS_MAX_DOMAINLEN + 1];
	struct centry	 e;
};

struct cache {
	struct cnode	**b;
	size_t		  nb;
	struct cnode	 *head, *tail;
	uint64_t	  seed;
	struct cache_stats st;
};

static uint64_t
key_hash(uint64_t seed, const uint8_t *name, size_t len, uint16_t qtype)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ seed ^ qtype;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= name[i];
		h *= 0x100000001b3ULL;
	}
	return h ^ (h >> 31);
}

struct cache *
cache_new(size_t maxbytes)
{
	struct cache *c = xcalloc(1, sizeof(*c));

	c->nb = 1024;
	c->b = xcalloc(c->nb, sizeof(*c->b));
	arc4random_buf(&c->seed, sizeof(c->seed));
	c->st.maxbytes = maxbytes;
	return c;
}

static void
lru_unlink(struct cache *c, struct cnode *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		c->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		c->tail = n->prev;
	n->prev = n->next = NULL;
}

static void
lru_push(struct cache *c, struct cnode *n)
{
	n->prev = NULL;
	n->next = c->head;
	if (c->head)
		c->head->prev = n;
	c->head = n;
	if (c->tail == NULL)
		c->tail = n;
}

static void
node_remove(struct cache *c, struct cnode *n)
{
	struct cnode **pp;

	for (pp = &c->b[n->hash & (c->nb - 1)]; *pp != NULL;
	    pp = &(*pp)->hnext)
		if (*pp == n) {
			*pp = n->hnext;
			break;
		}
	lru_unlink(c, n);
	c->st.entries--;
	c->st.bytes -= n->size;
	answer_clear(&n->e.a);
	free(n->e.memo.wire);
	free(n);
}

void
cache_free(struct cache *c)
{
	if (c == NULL)
		return;
	while (c->head != NULL)
		node_remove(c, c->head);
	free(c->b);
	free(c);
}

static struct cnode *
find(struct cache *c, const uint8_t *name, size_t len, uint16_t qtype,
    uint64_t h)
{
	struct cnode *n;

	for (n = c->b[h & (c->nb - 1)]; n != NULL; n = n->hnext)
		if (n->hash == h && n->qtype == qtype && n->namelen == len &&
		    memcmp(n->name, name, len) == 0)
			return n;
	return NULL;
}

struct centry *
cache_get(struct cache *c, const uint8_t *name, size_t len, uint16_t qtype,
    uint64_t now)
{
	uint64_t h = key_hash(c->seed, name, len, qtype);
	struct cnode *n = find(c, name, len, qtype, h);

	if (n != NULL && n->e.expires <= now) {
		node_remove(c, n);
		c->st.expired++;
		n = NULL;
	}
	if (n == NULL) {
		c->st.misses++;
		return NULL;
	}
	c->st.hits++;
	lru_unlink(c, n);
	lru_push(c, n);
	return &n->e;
}

static void
grow(struct cache *c)
{
	size_t nb = c->nb * 2, i;
	struct cnode **b = xcalloc(nb, sizeof(*b)), *n, *next;

	for (i = 0; i < c->nb; i++)
		for (n = c->b[i]; n != NULL; n = next) {
			next = n->hnext;
			n->hnext = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
		}
	free(c->b);
	c->b = b;
	c->nb = nb;
}

static size_t
list_size(const ldns_rr_list *l)
{
	size_t i, n = 0;

	for (i = 0; l != NULL && i < ldns_rr_list_rr_count(l); i++)
		n += ldns_rr_uncompressed_size(ldns_rr_list_rr(l, i)) + 64;
	return n;
}

void
cache_put(struct cache *c, const uint8_t *name, size_t len, uint16_t qtype,
    struct answer *a, uint64_t now)
{
	uint64_t h = key_hash(c->seed, name, len, qtype);
	struct cnode *n;

	if (a->ttl == 0 || len > sizeof(n->name))
		return;
	if ((n = find(c, name, len, qtype, h)) != NULL)
		node_remove(c, n);
	n = xcalloc(1, sizeof(*n));
	n->hash = h;
	n->qtype = qtype;
	n->namelen = len;
	memcpy(n->name, name, len);
	n->e.a = *a;
	memset(a, 0, sizeof(*a));
	n->e.stored = now;
	n->e.expires = now + n->e.a.ttl;
	/* Room for the memo (query.c keeps it at most one UDP answer). */
	n->size = sizeof(*n) + list_size(n->e.a.an) + list_size(n->e.a.ns) +
	    DNSD_EDNS_SIZE;
	if (n->size > c->st.maxbytes) {
		answer_clear(&n->e.a);
		free(n);
		return;
	}
	while (c->st.bytes + n->size > c->st.maxbytes && c->tail != NULL) {
		node_remove(c, c->tail);
		c->st.evictions++;
	}
	if (c->st.entries >= c->nb)
		grow(c);
	n->hnext = c->b[h & (c->nb - 1)];
	c->b[h & (c->nb - 1)] = n;
	lru_push(c, n);
	c->st.entries++;
	c->st.bytes += n->size;
	c->st.inserts++;
}

void
cache_stats(const struct cache *c, struct cache_stats *st)
{
	*st = c->st;
}
