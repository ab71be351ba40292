/*
 * tlist.h -- intrusive lists ordered by deadline.  Every entry of one
 * list gets the same timeout, so adding at the tail keeps the order and
 * the earliest deadline is always at the head: O(1) timers.
 */
#ifndef DNSD_TLIST_H
#define DNSD_TLIST_H

#include <stddef.h>
#include <stdint.h>

struct tlist;

struct tlink {
	struct tlink	*prev, *next;
	struct tlist	*list;		/* NULL: not on a list */
	uint64_t	 deadline;
};

struct tlist {
	struct tlink	*head, *tail;
	size_t		 n;
};

#define TL_ENTRY(l, type, member) \
	((type *)(void *)((char *)(l) - offsetof(type, member)))

static inline void
tlist_del(struct tlink *l)
{
	struct tlist *t = l->list;

	if (t == NULL)
		return;
	if (l->prev)
		l->prev->next = l->next;
	else
		t->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else
		t->tail = l->prev;
	l->prev = l->next = NULL;
	l->list = NULL;
	t->n--;
}

static inline void
tlist_add(struct tlist *t, struct tlink *l, uint64_t deadline)
{
	tlist_del(l);
	l->deadline = deadline;
	l->list = t;
	l->next = NULL;
	l->prev = t->tail;
	if (t->tail)
		t->tail->next = l;
	else
		t->head = l;
	t->tail = l;
	t->n++;
}

/* The earliest deadline of the lists, or UINT64_MAX when all are empty. */
static inline uint64_t
tlist_next(const struct tlist *a, const struct tlist *b)
{
	uint64_t min = UINT64_MAX;

	if (a->head != NULL)
		min = a->head->deadline;
	if (b != NULL && b->head != NULL && b->head->deadline < min)
		min = b->head->deadline;
	return min;
}

#endif
