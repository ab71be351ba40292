/*
 * splice.h -- a connection the proxy passes through undecrypted: two
 * pipes, one a direction, between the guest's and the upstream's
 * sockets.
 */
#ifndef MOAT_PROXY_SPLICE_H
#define MOAT_PROXY_SPLICE_H

#include <stddef.h>

#include "side.h"

struct splice {
	int		 p_gu[2], p_ug[2];	/* guest->upstream, back */
	size_t		 in_gu, in_ug;		/* bytes in each pipe */
};

void	splice_init(struct splice *);		/* no pipes yet */
int	splice_open(struct splice *);		/* 0 or -1 */
void	splice_close(struct splice *);
/* Move what can move both ways, shut a side down once its peer is done,
 * and ask for the readiness each side needs next.  -1 when the
 * connection is over (an error, or both directions finished). */
int	splice_pump(struct splice *, struct side *g, struct side *u);

#endif
