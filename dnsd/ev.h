/*
 * ev.h -- the one event interface of dnsd: readiness of file descriptors
 * (epoll) and a cached monotonic clock.  Timers are kept by their owners
 * as lists ordered by deadline (every timeout of a kind has the same
 * length, so appending keeps the order); the loop asks for the earliest.
 *
 * Objects that own an evh must not be freed while the loop may still
 * dispatch to them in the same batch: ev_defer_free() frees after it.
 */
#ifndef DNSD_EV_H
#define DNSD_EV_H

#include <stdint.h>

struct evh;
typedef void (*ev_cb)(struct evh *, uint32_t events);

struct evh {
	int	 fd;
	ev_cb	 cb;
	void	*arg;
	int	 dead;		/* set by ev_del: skip further events */
};

int	 ev_init(void);
int	 ev_add(struct evh *, uint32_t events);
int	 ev_mod(struct evh *, uint32_t events);
void	 ev_del(struct evh *);
/* Free p after the current dispatch batch. */
void	 ev_defer_free(void *p);
/* Wait at most timeout_ms (-1: forever) and dispatch. */
int	 ev_run_once(int timeout_ms);
/* Monotonic milliseconds, refreshed once per loop turn. */
uint64_t ev_now(void);
uint64_t ev_now_update(void);

#endif
