/*
 * ctlclient.h -- the client side of gatewayd's control socket, for
 * `gatewayd ctl` and provision.
 *
 * The protocol: a unix stream socket; one request line of words, each
 * percent-encoded (space, '%' and control characters become %XX) and
 * separated by one space, ended by a newline (`secret set` adds its value
 * as a second line).  A create's files travel as descriptors
 * (SCM_RIGHTS) on the request's first byte.  The answer: body lines, then
 * "ok" alone on a line (a console's descriptor comes with it), or one or
 * more "error: ..." lines after which gatewayd closes the connection.
 */
#ifndef MOAT_CTLCLIENT_H
#define MOAT_CTLCLIENT_H

#include <stdbool.h>
#include <stddef.h>

struct ctlc {
	int	 fd;
	int	 rfd;		/* a descriptor the answer carried, or -1 */
	char	 buf[4096];	/* read, not yet split into lines */
	size_t	 off, len;
	char	*line;		/* the last line read, without its newline */
	size_t	 cap;
	int	 first_ms;	/* ctlc_answer's wait for its first line;
				   0 (ctlc_open's): no limit */
	bool	 timedout;	/* the last wait for more ran out */
};

/* The request line for argv[0..argc-1], newline included, in a new
 * string (*len its length); NULL if a word is empty. */
char	*ctlc_request(int argc, char *const argv[], size_t *len);

/* Connect to the control socket at path: 0, or -1 with errno set. */
int	 ctlc_open(struct ctlc *c, const char *path);
/* Send len bytes of req, fds[0..nfds-1] with the first: 0 or -1. */
int	 ctlc_send(struct ctlc *c, const char *req, size_t len,
	    const int *fds, int nfds);
/* The next line of the answer into c->line: 0, or -1 at its end, on an
 * error, or after timeout_ms without a byte (-1: wait for ever). */
int	 ctlc_getline(struct ctlc *c, int timeout_ms);
/* Read the whole answer, handing each body line and each error line
 * (error: true, without "error: ") to fn.  CTLC_OK on "ok", CTLC_REFUSED
 * if errors came, CTLC_UNANSWERED if the connection ended before either,
 * CTLC_SILENT if nothing came within c->first_ms (when set). */
enum { CTLC_OK, CTLC_REFUSED, CTLC_UNANSWERED, CTLC_SILENT };
int	 ctlc_answer(struct ctlc *c, void (*fn)(const char *line, bool error,
	    bool after_error, void *arg), void *arg);
/* Close the connection (and c->rfd, unless the caller took it). */
void	 ctlc_close(struct ctlc *c);

#endif
