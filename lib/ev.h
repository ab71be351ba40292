/*
 * ev.h -- the one event loop of moat's daemons: readiness of file
 * descriptors (level- or edge-triggered epoll, as each registration
 * asks), timers, and deferred frees.
 *
 * Time is read through one clock function, milliseconds on a monotonic
 * scale, cached once per loop turn (ev_now).  A test installs its own
 * clock with ev_set_clock() and drives the loop with ev_run_once(0).
 *
 * An object that owns a struct ev must not be freed while the loop may
 * still dispatch to it in the same batch: free it with ev_defer(), which
 * runs after the batch.  ev_del() sets fd to -1, and a deleted ev gets
 * no further events of the batch it was deleted in.
 */
#ifndef MOAT_EV_H
#define MOAT_EV_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/epoll.h>

struct ev;
typedef void (*ev_cb)(struct ev *, uint32_t events);

struct ev {
	int		 fd;		/* -1 when not registered */
	uint32_t	 want;		/* epoll events as registered */
	ev_cb		 cb;
	void		*arg;
};

struct ev_timer {
	uint64_t	 when;		/* ms on the ev clock */
	void		(*cb)(void *);
	void		*arg;
	size_t		 slot;		/* heap index + 1; 0: not armed */
};

/* Create the loop (once; again is a no-op).  0 or -1. */
int	 ev_init(void);
/* In a child just forked from a process that runs the loop: forget its
 * epoll set, timers and deferred calls, which are the parent's; the
 * child's ev_init makes its own. */
void	 ev_forget(void);
/* Register fd with interest want (0 allowed).  0 or -1 (fd stays -1). */
int	 ev_add(struct ev *, int fd, uint32_t want, ev_cb, void *arg);
/* Change interest; a no-op when unchanged or not registered. */
void	 ev_set(struct ev *, uint32_t want);
void	 ev_del(struct ev *);
/* Run fn(arg) after the current batch of events. */
void	 ev_defer(void (*fn)(void *), void *arg);

/* Call cb(arg) once ev_now() >= when_ms; re-arming moves the timer. */
void	 ev_timer_set(struct ev_timer *, uint64_t when_ms, void (*cb)(void *),
	    void *arg);
void	 ev_timer_del(struct ev_timer *);

/* Monotonic milliseconds, read at the start of the loop turn. */
uint64_t ev_now(void);
uint64_t ev_now_update(void);
/* NULL: CLOCK_MONOTONIC. */
void	 ev_set_clock(uint64_t (*clock_ms)(void));

/* Wait for events at most max_ms (-1: no limit but the timers'), then
 * dispatch the ready descriptors, the timers that are due and the
 * deferred calls.  The number of descriptor events, or -1 on error. */
int	 ev_run_once(int max_ms);

/* A daemon's signals as a descriptor: HUP, TERM, INT and USR1 (and CHLD
 * if children) are blocked and read from the signalfd returned (flags:
 * SFD_NONBLOCK and/or SFD_CLOEXEC); SIGPIPE is ignored.  -1 on error. */
int	 ev_signals_fd(bool children, int flags);

#endif
