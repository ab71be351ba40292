/*
 * ev.c -- epoll, a binary heap of timers and deferred calls (ev.h).
 */
#include <sys/epoll.h>
#include <sys/signalfd.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ev.h"
#include "log.h"

#define EV_BATCH	256

struct deferred {
	void		(*fn)(void *);
	void		*arg;
};

static int		  epfd = -1;
static pid_t		  epfd_pid;	/* the process that made epfd */
static uint64_t		  now_ms;
static uint64_t		(*clock_fn)(void);
static struct deferred	 *dq;
static size_t		  ndq, cdq;
static struct ev_timer	**heap;
static size_t		  nheap, cheap;

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
ev_set_clock(uint64_t (*fn)(void))
{
	clock_fn = fn;
	ev_now_update();
}

uint64_t
ev_now_update(void)
{
	now_ms = clock_fn != NULL ? clock_fn() : mono_ms();
	return now_ms;
}

uint64_t
ev_now(void)
{
	return now_ms;
}

/*
 * A process forked from one that runs the loop gets a loop of its own:
 * the epoll instance, timers and deferred calls it inherited are its
 * parent's, and a registration there would reach the parent.  The
 * inherited descriptor is left alone (the child may have closed it and
 * given its number to another).
 */
int
ev_init(void)
{
	if (epfd != -1 && epfd_pid != getpid()) {
		epfd = -1;
		nheap = ndq = 0;
	}
	if (epfd == -1) {
		if ((epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
			return -1;
		epfd_pid = getpid();
	}
	ev_now_update();
	return 0;
}

void
ev_forget(void)
{
	if (epfd != -1)
		close(epfd);
	epfd = -1;
	free(heap);
	heap = NULL;
	nheap = cheap = 0;
	free(dq);
	dq = NULL;
	ndq = cdq = 0;
}

int
ev_add(struct ev *e, int fd, uint32_t want, ev_cb cb, void *arg)
{
	struct epoll_event ee = { .events = want, .data.ptr = e };

	e->want = want;
	e->cb = cb;
	e->arg = arg;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ee) == -1) {
		e->fd = -1;
		return -1;
	}
	e->fd = fd;
	return 0;
}

void
ev_set(struct ev *e, uint32_t want)
{
	struct epoll_event ee = { .events = want, .data.ptr = e };

	if (e->fd < 0 || e->want == want)
		return;
	if (epoll_ctl(epfd, EPOLL_CTL_MOD, e->fd, &ee) == -1)
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
	if (ndq == cdq) {
		cdq = cdq ? cdq * 2 : 64;
		dq = xreallocarray(dq, cdq, sizeof(*dq));
	}
	dq[ndq++] = (struct deferred){ fn, arg };
}

static void
run_deferred(void)
{
	size_t i;

	/* A deferred call may defer another: that one runs too. */
	for (i = 0; i < ndq; i++)
		dq[i].fn(dq[i].arg);
	ndq = 0;
}

/* --- timers: a binary min-heap on (when), slot kept in each timer --- */

static void
heap_put(size_t i, struct ev_timer *t)
{
	heap[i] = t;
	t->slot = i + 1;
}

static void
heap_up(size_t i)
{
	struct ev_timer *t = heap[i];

	while (i > 0 && heap[(i - 1) / 2]->when > t->when) {
		heap_put(i, heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_put(i, t);
}

static void
heap_down(size_t i)
{
	struct ev_timer *t = heap[i];
	size_t c;

	while ((c = 2 * i + 1) < nheap) {
		if (c + 1 < nheap && heap[c + 1]->when < heap[c]->when)
			c++;
		if (heap[c]->when >= t->when)
			break;
		heap_put(i, heap[c]);
		i = c;
	}
	heap_put(i, t);
}

void
ev_timer_del(struct ev_timer *t)
{
	size_t i;

	if (t->slot == 0)
		return;
	i = t->slot - 1;
	t->slot = 0;
	if (i == --nheap)
		return;
	heap_put(i, heap[nheap]);
	if (i > 0 && heap[(i - 1) / 2]->when > heap[i]->when)
		heap_up(i);
	else
		heap_down(i);
}

void
ev_timer_set(struct ev_timer *t, uint64_t when, void (*cb)(void *),
    void *arg)
{
	ev_timer_del(t);
	t->when = when;
	t->cb = cb;
	t->arg = arg;
	if (nheap == cheap) {
		cheap = cheap ? cheap * 2 : 16;
		heap = xreallocarray(heap, cheap, sizeof(*heap));
	}
	heap_put(nheap++, t);
	heap_up(nheap - 1);
}

static void
run_timers(void)
{
	struct ev_timer *t;

	while (nheap > 0 && (t = heap[0])->when <= now_ms) {
		ev_timer_del(t);
		t->cb(t->arg);
	}
}

/* How long epoll may sleep: until the earliest timer, at most max_ms. */
static int
wait_ms(int max_ms)
{
	uint64_t d;

	if (nheap == 0)
		return max_ms;
	if (heap[0]->when <= now_ms)
		return 0;
	d = heap[0]->when - now_ms;
	if (max_ms >= 0 && d > (uint64_t)max_ms)
		return max_ms;
	return d > 3600000 ? 3600000 : (int)d;
}

int
ev_run_once(int max_ms)
{
	struct epoll_event evs[EV_BATCH];
	int n, i;

	n = epoll_wait(epfd, evs, EV_BATCH, wait_ms(max_ms));
	ev_now_update();
	if (n == -1) {
		if (errno != EINTR)
			return -1;
		n = 0;
	}
	for (i = 0; i < n; i++) {
		struct ev *e = evs[i].data.ptr;

		/* closed by an earlier event of this batch */
		if (e->fd >= 0)
			e->cb(e, evs[i].events);
	}
	run_deferred();
	run_timers();
	run_deferred();
	return n;
}

int
ev_signals_fd(bool children, int flags)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	if (children)
		sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, flags);
}
