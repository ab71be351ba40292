/*
 * ev.h -- the proxy's one event interface: level-triggered epoll, a
 * one-second tick for timeouts, and deferred frees so that an object
 * closed while handling one event is never touched by the next.
 */
#ifndef MOAT_PROXY_EV_H
#define MOAT_PROXY_EV_H

#include <stdint.h>
#include <sys/epoll.h>

struct ev;
typedef void (*ev_cb)(struct ev *, uint32_t events);

struct ev {
	int		 fd;		/* -1 when not registered */
	uint32_t	 want;		/* EPOLLIN | EPOLLOUT as registered */
	ev_cb		 cb;
	void		*arg;
};

void	ev_init(void);
/* Register fd with interest want (0 allowed).  0 or -1. */
int	ev_add(struct ev *, int fd, uint32_t want, ev_cb, void *arg);
/* Change interest; a no-op when unchanged. */
void	ev_set(struct ev *, uint32_t want);
void	ev_del(struct ev *);
/* Run fn(arg) after the current batch of events (for frees). */
void	ev_defer(void (*fn)(void *), void *arg);
/* Dispatch until *stop; tick() about once a second. */
void	ev_loop(volatile int *stop, void (*tick)(void));

#endif
