/*
 * ev.c -- epoll dispatch (see ev.h).
 */
#include <sys/epoll.h>

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"

#define EV_BATCH	256

struct deferred {
	void		(*fn)(void *);
	void		*arg;
	struct deferred	*next;
};

static int epfd = -1;
static struct deferred *defer_head;

void
ev_init(void)
{
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		fatal("epoll_create1");
}

int
ev_add(struct ev *e, int fd, uint32_t want, ev_cb cb, void *arg)
{
	struct epoll_event ee = { .events = want, .data.ptr = e };

	e->fd = fd;
	e->want = want;
	e->cb = cb;
	e->arg = arg;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ee) < 0) {
		e->fd = -1;
		return -1;
	}
	return 0;
}

void
ev_set(struct ev *e, uint32_t want)
{
	struct epoll_event ee = { .events = want, .data.ptr = e };

	if (e->fd < 0 || e->want == want)
		return;
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, e->fd, &ee) < 0)
		log_warn("epoll_ctl mod %d", e->fd);
	e->want = want;
}

void
ev_del(struct ev *e)
{
	if (e->fd < 0)
		return;
	(void)epoll_ctl(epfd, EPOLL_CTL_DEL, e->fd, NULL);
	e->fd = -1;
	e->want = 0;
}

void
ev_defer(void (*fn)(void *), void *arg)
{
	struct deferred *d = xmalloc(sizeof(*d));

	d->fn = fn;
	d->arg = arg;
	d->next = defer_head;
	defer_head = d;
}

static void
run_deferred(void)
{
	struct deferred *d;

	while ((d = defer_head) != NULL) {
		defer_head = d->next;
		d->fn(d->arg);
		free(d);
	}
}

static time_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

void
ev_loop(volatile int *stop, void (*tick)(void))
{
	struct epoll_event evs[EV_BATCH];
	time_t last = now_s();
	int i, n;

	while (!*stop) {
		n = epoll_wait(epfd, evs, EV_BATCH, 1000);
		if (n < 0 && errno != EINTR)
			fatal("epoll_wait");
		for (i = 0; i < n; i++) {
			struct ev *e = evs[i].data.ptr;

			/* closed by an earlier event of this batch */
			if (e->fd >= 0)
				e->cb(e, evs[i].events);
		}
		run_deferred();
		if (now_s() != last) {
			last = now_s();
			tick();
			run_deferred();
		}
	}
}
