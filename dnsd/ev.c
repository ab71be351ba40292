/*
 * ev.c -- epoll behind ev.h.
 */
#include <sys/epoll.h>

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"

#define EV_BATCH	64

static int	 epfd = -1;
static uint64_t	 now_ms;
static void	**deferred;
static size_t	 ndeferred, cdeferred;

uint64_t
ev_now_update(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	return now_ms;
}

uint64_t
ev_now(void)
{
	return now_ms;
}

int
ev_init(void)
{
	if (epfd == -1 && (epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return -1;
	ev_now_update();
	return 0;
}

static int
ctl(int op, struct evh *h, uint32_t events)
{
	struct epoll_event e = { .events = events, .data.ptr = h };

	return epoll_ctl(epfd, op, h->fd, &e);
}

int
ev_add(struct evh *h, uint32_t events)
{
	h->dead = 0;
	return ctl(EPOLL_CTL_ADD, h, events);
}

int
ev_mod(struct evh *h, uint32_t events)
{
	return ctl(EPOLL_CTL_MOD, h, events);
}

void
ev_del(struct evh *h)
{
	if (h->fd != -1)
		(void)epoll_ctl(epfd, EPOLL_CTL_DEL, h->fd, NULL);
	h->dead = 1;
}

void
ev_defer_free(void *p)
{
	if (ndeferred == cdeferred) {
		cdeferred = cdeferred ? cdeferred * 2 : 64;
		deferred = xreallocarray(deferred, cdeferred, sizeof(*deferred));
	}
	deferred[ndeferred++] = p;
}

static void
run_deferred(void)
{
	size_t i;

	for (i = 0; i < ndeferred; i++)
		free(deferred[i]);
	ndeferred = 0;
}

int
ev_run_once(int timeout_ms)
{
	struct epoll_event ev[EV_BATCH];
	int n, i;

	n = epoll_wait(epfd, ev, EV_BATCH, timeout_ms);
	ev_now_update();
	if (n == -1)
		return errno == EINTR ? 0 : -1;
	for (i = 0; i < n; i++) {
		struct evh *h = ev[i].data.ptr;

		if (!h->dead)
			h->cb(h, ev[i].events);
	}
	run_deferred();
	return n;
}
