/*
 * pipes.c -- see pipes.h.
 */
#include <fcntl.h>
#include <unistd.h>

#include "pipes.h"

static int pool[PIPE_POOL][2];
static int npool;

int
pipe_get(int p[2])
{
	if (npool > 0) {
		npool--;
		p[0] = pool[npool][0];
		p[1] = pool[npool][1];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return -1;
	(void)fcntl(p[1], F_SETPIPE_SZ, PIPE_CAP);
	return 0;
}

void
pipe_put(int p[2])
{
	if (npool < PIPE_POOL) {
		pool[npool][0] = p[0];
		pool[npool][1] = p[1];
		npool++;
	} else {
		close(p[0]);
		close(p[1]);
	}
	p[0] = p[1] = -1;
}

