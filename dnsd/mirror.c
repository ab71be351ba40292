/*
 * mirror.c -- see mirror.h.  An open-addressed table: a key's slot is
 * found within a window of MIRROR_PROBE slots; a new key takes a free
 * slot there, or evicts the one expiring first.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mirror.h"

#define MIRROR_PROBE	8
#define MIRROR_NAME	33	/* sandbox names are at most 32 */

struct slot {
	uint64_t	 expires_ms;	/* 0: free; 1: awaiting confirmation */
	uint64_t	 promised_ms;	/* latest confirmed expiry, kept in flight */
	uint32_t	 last_id;	/* the last request sent for it */
	uint64_t	 planned_ms;	/* ...and how long it makes it live */
	struct moat_addr addr;
	char		 sandbox[MIRROR_NAME];
};

struct mirror {
	struct slot	*slots;
	size_t		 mask;
	uint64_t	 seed;
};

struct mirror *
mirror_new(size_t n)
{
	struct mirror *m = xcalloc(1, sizeof(*m));
	size_t size = 16;

	while (size < n)
		size <<= 1;
	m->slots = xcalloc(size, sizeof(*m->slots));
	m->mask = size - 1;
	m->seed = (uint64_t)random() << 32 ^ (uint64_t)random();
	return m;
}

void
mirror_free(struct mirror *m)
{
	if (m == NULL)
		return;
	free(m->slots);
	free(m);
}

/* Nothing is known to be in the sets any more, but what answers were
 * promised still holds: those keep their slots, covering nothing. */
void
mirror_clear(struct mirror *m)
{
	size_t i;

	for (i = 0; i <= m->mask; i++)
		if (m->slots[i].expires_ms != 0) {
			m->slots[i].expires_ms = 1;
			m->slots[i].last_id = 0;
		}
}

size_t
mirror_forget(struct mirror *m, enum mirror_fate (*judge)(const char *,
    void *), void *arg)
{
	struct slot *s;
	size_t i, n = 0;

	for (i = 0; i <= m->mask; i++) {
		s = &m->slots[i];
		if (s->expires_ms == 0)
			continue;
		switch (judge(s->sandbox, arg)) {
		case MIRROR_KEEP:
			continue;
		case MIRROR_RECHECK:
			s->expires_ms = 1;
			s->last_id = 0;
			break;
		case MIRROR_GONE:
			memset(s, 0, sizeof(*s));
			break;
		}
		n++;
	}
	return n;
}

static size_t
slot_of(const struct mirror *m, const char *sandbox,
    const struct moat_addr *a)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ m->seed;
	const unsigned char *p;
	size_t i;

	for (p = (const unsigned char *)sandbox; *p != '\0'; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	h = (h ^ (uint64_t)a->family) * 0x100000001b3ULL;
	for (i = 0; i < sizeof(a->a); i++)
		h = (h ^ a->a[i]) * 0x100000001b3ULL;
	return (size_t)(h ^ h >> 29) & m->mask;
}

static bool
same(const struct slot *s, const char *sandbox, const struct moat_addr *a)
{
	return s->expires_ms != 0 && s->addr.family == a->family &&
	    memcmp(s->addr.a, a->a, sizeof(a->a)) == 0 &&
	    strcmp(s->sandbox, sandbox) == 0;
}

static struct slot *
find(const struct mirror *m, const char *sandbox, const struct moat_addr *a)
{
	size_t i, at = slot_of(m, sandbox, a);

	for (i = 0; i < MIRROR_PROBE; i++) {
		struct slot *s = &m->slots[(at + i) & m->mask];

		if (same(s, sandbox, a))
			return s;
	}
	return NULL;
}

void
mirror_sent(struct mirror *m, const char *sandbox, const struct moat_addr *a,
    uint32_t id, uint64_t planned_ms)
{
	struct slot *s, *victim = NULL;
	size_t i, at = slot_of(m, sandbox, a);

	if (strlen(sandbox) >= MIRROR_NAME)
		return;
	for (i = 0; i < MIRROR_PROBE; i++) {
		s = &m->slots[(at + i) & m->mask];
		if (same(s, sandbox, a)) {
			victim = s;
			break;
		}
		if (victim == NULL || s->expires_ms < victim->expires_ms)
			victim = s;
	}
	if (!same(victim, sandbox, a)) {
		memset(victim, 0, sizeof(*victim));
		victim->addr = *a;
		memcpy(victim->sandbox, sandbox, strlen(sandbox) + 1);
	}
	victim->expires_ms = 1;
	victim->last_id = id;
	victim->planned_ms = planned_ms;
	if (planned_ms > victim->promised_ms)
		victim->promised_ms = planned_ms;
}

void
mirror_acked(struct mirror *m, const char *sandbox, const struct moat_addr *a,
    uint32_t id, uint64_t expires_ms)
{
	struct slot *s = find(m, sandbox, a);

	/* Evicted meanwhile, or a later request is in flight: say nothing. */
	if (s == NULL || expires_ms <= 1)
		return;
	if (expires_ms > s->promised_ms)
		s->promised_ms = expires_ms;
	if (s->last_id == id)
		s->expires_ms = expires_ms;
}

uint64_t
mirror_promised(const struct mirror *m, const char *sandbox,
    const struct moat_addr *a, size_t n)
{
	const struct slot *s;
	uint64_t max = 0;
	size_t i;

	for (i = 0; i < n; i++)
		if ((s = find(m, sandbox, &a[i])) != NULL &&
		    s->promised_ms > max)
			max = s->promised_ms;
	return max;
}

bool
mirror_covers(const struct mirror *m, const char *sandbox,
    const struct moat_addr *a, size_t n, uint64_t until_ms)
{
	const struct slot *s;
	size_t i;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++)
		if ((s = find(m, sandbox, &a[i])) == NULL ||
		    s->expires_ms < until_ms)
			return false;
	return true;
}

uint32_t
mirror_inflight(const struct mirror *m, const char *sandbox,
    const struct moat_addr *a, size_t n, uint64_t until_ms)
{
	const struct slot *s;
	uint32_t id = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((s = find(m, sandbox, &a[i])) == NULL ||
		    s->expires_ms != 1 || s->last_id == 0 ||
		    s->planned_ms < until_ms || (id != 0 && s->last_id != id))
			return 0;
		id = s->last_id;
	}
	return id;
}
