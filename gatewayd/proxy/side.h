/*
 * side.h -- one side of a proxied connection (the guest's or the
 * upstream's): a socket, TLS on it or not, and an input and an output
 * buffer.  Buffers are wiped before they are freed: a request head may
 * have held a real secret.
 */
#ifndef MOAT_PROXY_SIDE_H
#define MOAT_PROXY_SIDE_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "ev.h"

#define CONN_BUF	(32 * 1024)

struct buf {
	uint8_t		*d;
	size_t		 off, len, cap;
};

struct conn;

struct side {
	struct ev	 ev;
	int		 fd;
	SSL		*ssl;
	struct buf	 in, out;
	bool		 eof;		/* peer finished sending */
	bool		 shut;		/* we finished sending */
	bool		 want_r, want_w; /* what SSL asked for */
	bool		 err;
	/* perf: the guest's side.  What it sends is bound for the guest,
	 * which then holds it anyway (responses are scrubbed before they
	 * get here), so its output is not wiped as it goes; the upstream
	 * side's is (requests carry the real values). */
	bool		 to_guest;
	/* perf, splice: readiness epoll reported and no short read has
	 * consumed since; a drained socket is not asked again (one splice
	 * that would say EAGAIN per direction and wakeup). */
	bool		 rd_ready;
	struct conn	*c;
	const char	*who;		/* for log lines: the guest */
};

/* Side I/O over a socket or TLS.  >0 bytes, 0 EOF, -1 would block (want_*
 * set), -2 error. */
ssize_t	side_read(struct side *, void *, size_t);
ssize_t	side_write(struct side *, const void *, size_t);
/* Fill s->in / flush s->out; true if any byte moved. */
bool	side_fill(struct side *);
bool	side_flush(struct side *);
/* perf: over TLS, flush only whole full records' worth (the caller flushes
 * the tail with side_flush once it has nothing more to add): a body then
 * goes out in 16 KiB records, one write each, not a full and a partial
 * record per batch. */
#define TLS_RECORD_MAX	16384
bool	side_flush_records(struct side *);
void	side_interest(struct side *, bool rd, bool wr);
/* Free the TLS state, unregister and close the socket, wipe buffers. */
void	side_close(struct side *);

void	buf_alloc(struct buf *);
void	buf_free(struct buf *);
size_t	buf_room(struct buf *);		/* compacts first */
void	buf_consume(struct buf *, size_t);
int	buf_put(struct buf *, const void *, size_t);	/* 0 or -1 if no room */
/* "NAME: VALUE\r\n", copied; 0 or -1 if no room */
int	buf_field(struct buf *, const char *, size_t, const char *, size_t);
int	buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

#endif
