/*
 * test_ev.c -- lib/ev.c driven by a fake clock: timers fire in deadline
 * order and only when due, descriptors report readiness, a descriptor
 * deleted during a batch gets no more events, deferred calls run after.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ev.h"

static uint64_t fake_now;
static uint64_t fired_when[512];
static int nfired;

static uint64_t
fake_clock(void)
{
	return fake_now;
}

static void
advance(uint64_t to)
{
	fake_now = to;
	ev_now_update();
}

static void
on_timer(void *arg)
{
	struct ev_timer *t = arg;

	assert_true(nfired < 512);
	assert_true(t->when <= fake_now);
	fired_when[nfired++] = t->when;
}

static int
setup(void **state)
{
	(void)state;
	assert_int_equal(ev_init(), 0);
	ev_set_clock(fake_clock);
	advance(1000);
	nfired = 0;
	return 0;
}

static void
timers_fire_in_order(void **state)
{
	struct ev_timer t[4] = { 0 };

	(void)state;
	ev_timer_set(&t[2], 1030, on_timer, &t[2]);
	ev_timer_set(&t[0], 1010, on_timer, &t[0]);
	ev_timer_set(&t[1], 1020, on_timer, &t[1]);
	ev_timer_set(&t[3], 1040, on_timer, &t[3]);
	ev_timer_del(&t[3]);
	ev_run_once(0);
	assert_int_equal(nfired, 0);		/* nothing due yet */
	advance(1025);
	ev_run_once(0);
	assert_int_equal(nfired, 2);
	assert_int_equal(fired_when[0], 1010);
	assert_int_equal(fired_when[1], 1020);
	ev_timer_set(&t[2], 1060, on_timer, &t[2]);	/* moved later */
	advance(1059);
	ev_run_once(0);
	assert_int_equal(nfired, 2);
	advance(5000);
	ev_run_once(0);
	assert_int_equal(nfired, 3);
	assert_int_equal(fired_when[2], 1060);	/* t[3] was deleted */
}

/* Many timers, some deleted or moved: what fires is exactly what is
 * armed, never early, in deadline order. */
static void
timers_heap_order(void **state)
{
	static struct ev_timer t[400];
	uint32_t x = 12345;
	int i, armed = 0;

	(void)state;
	memset(t, 0, sizeof(t));
	for (i = 0; i < 400; i++) {
		x = x * 1103515245 + 12345;
		ev_timer_set(&t[i], 2000 + (x >> 8) % 5000, on_timer, &t[i]);
	}
	for (i = 0; i < 400; i += 3)
		ev_timer_del(&t[i]);
	for (i = 1; i < 400; i += 7) {
		x = x * 1103515245 + 12345;
		ev_timer_set(&t[i], 2000 + (x >> 8) % 5000, on_timer, &t[i]);
	}
	for (i = 0; i < 400; i++)
		armed += t[i].slot != 0;
	for (uint64_t now = 2000; now <= 7000; now += 250) {
		advance(now);
		ev_run_once(0);
		for (i = 0; i < 400; i++)
			if (t[i].slot != 0)
				assert_true(t[i].when > now);
	}
	assert_int_equal(nfired, armed);
	for (i = 1; i < nfired; i++)
		assert_true(fired_when[i - 1] <= fired_when[i]);
}

/* A due timer bounds the wait: ev_run_once(-1) must not block. */
static void
due_timer_bounds_wait(void **state)
{
	struct ev_timer t = { 0 };

	(void)state;
	alarm(10);		/* a hang is a failure, not a stuck test */
	ev_timer_set(&t, 1000, on_timer, &t);
	assert_int_equal(ev_run_once(-1), 0);
	assert_int_equal(nfired, 1);
	alarm(0);
}

static int ncalls;
static uint32_t last_events;
static struct ev *pair[2];	/* the first of these to run deletes the other */

static void
on_fd(struct ev *e, uint32_t events)
{
	ncalls++;
	last_events = events;
	if (pair[0] != NULL && ncalls == 1)
		ev_del(pair[e == pair[0] ? 1 : 0]);
}

static void
fd_readiness(void **state)
{
	struct ev e;
	int p[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	ncalls = 0;
	pair[0] = pair[1] = NULL;
	assert_int_equal(ev_add(&e, p[0], EPOLLIN, on_fd, NULL), 0);
	assert_int_equal(ev_run_once(0), 0);
	assert_int_equal(ncalls, 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(ev_run_once(1000), 1);
	assert_int_equal(ncalls, 1);
	assert_true(last_events & EPOLLIN);
	ev_set(&e, 0);			/* no interest: no event */
	assert_int_equal(ev_run_once(0), 0);
	ev_set(&e, EPOLLIN);
	assert_int_equal(ev_run_once(0), 1);
	ev_del(&e);
	assert_int_equal(e.fd, -1);
	assert_int_equal(ev_run_once(0), 0);
	assert_int_equal(ncalls, 2);
	close(p[0]);
	close(p[1]);
}

static int deferred_at;

static void
on_deferred(void *arg)
{
	deferred_at = *(int *)arg;
}

static void
on_fd_defer(struct ev *e, uint32_t events)
{
	on_fd(e, events);
	ev_defer(on_deferred, &ncalls);
}

/* Two readable descriptors; whichever runs first deletes the other,
 * which then gets nothing from the same batch.  The deferred call runs
 * once the batch is over. */
static void
delete_during_batch(void **state)
{
	struct ev a, b;
	int p[2], q[2];

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(write(q[1], "x", 1), 1);
	ncalls = 0;
	deferred_at = -1;
	assert_int_equal(ev_add(&a, p[0], EPOLLIN, on_fd_defer, NULL), 0);
	assert_int_equal(ev_add(&b, q[0], EPOLLIN, on_fd_defer, NULL), 0);
	pair[0] = &a;
	pair[1] = &b;
	assert_int_equal(ev_run_once(1000), 2);	/* both were ready */
	assert_int_equal(ncalls, 1);
	assert_int_equal(deferred_at, 1);
	assert_true(a.fd == -1 || b.fd == -1);
	pair[0] = pair[1] = NULL;
	ev_del(&a);
	ev_del(&b);
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
}

static void
on_nothing(struct ev *e, uint32_t events)
{
	(void)e;
	(void)events;
}

/* A forked child's ev_init makes its own loop: the parent's readable
 * descriptor is not in it, the child's own works, and the parent's loop
 * sees only its own. */
static void
fork_gets_own_loop(void **state)
{
	struct ev a, b;
	int p[2], q[2], status;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(ev_add(&a, p[0], EPOLLIN, on_nothing, NULL), 0);
	if ((pid = fork()) == 0) {
		if (ev_init() != 0)
			_exit(2);
		if (ev_run_once(0) != 0)
			_exit(3);	/* the parent's descriptor */
		if (ev_add(&b, q[0], EPOLLIN, on_nothing, NULL) != 0 ||
		    write(q[1], "y", 1) != 1 || ev_run_once(0) != 1)
			_exit(4);
		_exit(0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(ev_run_once(0), 1);	/* p only, not the child's q */
	ev_del(&a);
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(timers_fire_in_order, setup),
		cmocka_unit_test_setup(timers_heap_order, setup),
		cmocka_unit_test_setup(due_timer_bounds_wait, setup),
		cmocka_unit_test_setup(fd_readiness, setup),
		cmocka_unit_test_setup(delete_during_batch, setup),
		cmocka_unit_test_setup(fork_gets_own_loop, setup),
	};
	return cmocka_run_group_tests_name("ev", tests, NULL, NULL);
}
