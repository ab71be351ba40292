/*
 * splice.h -- a connection the proxy passes through undecrypted: small
 * messages copied through the stack as they arrive, bulk through two
 * pipes (one a direction) between the guest's and the upstream's sockets
 * with splice(2).
 */
#ifndef MOAT_PROXY_SPLICE_H
#define MOAT_PROXY_SPLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ev.h"
#include "kpath.h"
#include "side.h"

struct splice {
	int		 p_gu[2], p_ug[2];	/* guest->upstream, back */
	size_t		 in_gu, in_ug;		/* bytes in each pipe */
	bool		 bulk_gu, bulk_ug;	/* splice, not copy, next */
	/* The kernel carries the bytes (kpath.h): the pump then sees only
	 * what the kernel left, and the ends. */
	bool		 kernel;
	struct kpath_dir k_gu, k_ug;
	/* A direction ended while the kernel still held some of its bytes
	 * for the peer: look again when this fires. */
	struct ev_timer	 drain;
	unsigned	 drain_ms;
	uint64_t	 drain_since;	/* since the sockets last moved */
	uint64_t	 drain_w;
	bool		 gaveup;	/* waited 10 s with no progress */
	void		(*wake)(void *);
	void		*arg;
	uint64_t	 seen;		/* bytes received both ways, last look */
};

/* A read this long (a full copy buffer, or more through a pipe) makes a
 * direction bulk: it splices until a read comes back shorter.  At most
 * the smallest pipe the kernel gives an unprivileged user past its pipe
 * limit (2 pages), which holds what a copy could not send. */
#define COPY_MAX	(8 * 1024)

void	splice_init(struct splice *);		/* no pipes yet */
int	splice_open(struct splice *);		/* 0 or -1 */
void	splice_close(struct splice *);
/* Move what can move both ways, shut a side down once its peer is done,
 * and ask for the readiness each side needs next.  -1 when the
 * connection is over (an error, or both directions finished). */
int	splice_pump(struct splice *, struct side *g, struct side *u);
/* Hand the tunnel to the kernel when it can take it (kpath.h): once its
 * pipes are empty.  wake(arg) pumps again when a direction's end waits
 * for the kernel to finish, or the tunnel's close for its last bytes to
 * be acknowledged (either path).  true if the kernel has it. */
bool	splice_kernel(struct splice *, struct side *g, struct side *u,
	    void (*wake)(void *), void *arg);
/* A tunnel in the kernel wakes the worker only at its end: true if it
 * carried bytes since the last call (its idle timeout starts again). */
bool	splice_kernel_moved(struct splice *, const struct side *g,
	    const struct side *u);
/* The bytes each way so far, as the sockets count them: guest to
 * upstream, and back (the kernel's share included). */
void	splice_bytes(const struct splice *, const struct side *g,
	    const struct side *u, uint64_t *out, uint64_t *in);

#endif
