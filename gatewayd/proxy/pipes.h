/*
 * pipes.h -- a pool of empty pipes for splice(2).
 *
 * A spliced tunnel needs a pipe per direction only while bytes are in
 * flight: it takes one when it reads and gives it back once the pipe is
 * drained.  An idle tunnel holds two descriptors (its sockets) instead of
 * six, and no pipe buffers.
 */
#ifndef MOAT_PROXY_PIPES_H
#define MOAT_PROXY_PIPES_H

#define PIPE_CAP	(256 * 1024)	/* asked for; the kernel may say less */
#define PIPE_POOL	64		/* empty pipes kept for reuse */

/* An empty pipe into p (from the pool or new); -1 with errno. */
int	pipe_get(int p[2]);
/* Give back p, which must be empty; p becomes { -1, -1 }. */
void	pipe_put(int p[2]);
/* Empty pipes held by the pool (tests). */

#endif
