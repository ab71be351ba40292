/*
 * register.h -- the registration process (register.c): a separate
 * gateway box's TLS endpoint for KVM hosts, unprivileged; and its pure
 * request parser, shared with the fuzz harness.
 */
#ifndef GATEWAYD_REGISTER_H
#define GATEWAYD_REGISTER_H

#include <sys/types.h>

#include <stddef.h>

#include "ipc.h"
#include "regclient.h"

#define REG_USER		"moat-reg"
#define REG_LINE_MAX		REG_REQUEST_MAX	/* a request line, without its newline */
#define REG_HANDSHAKE_S		5	/* from accept to a finished TLS handshake */
#define REG_IO_TIMEOUT_S	10	/* silence after the handshake */
#define REG_CONN_MAX_S		60	/* one connection, all told */
#define REG_CONNS_MAX		128	/* connections at once */
#define REG_PER_SOURCE		8	/* connections at once from one address */

/* The box's certificate chain and key, PEM, read by the parent. */
struct reg_pem {
	char	*cert, *key;
	size_t	 certlen, keylen;
};

enum { REG_PARSE_QUIT = 1, REG_PARSE_EMPTY = 2 };

/*
 * One request line (its newline optional) into m, which has room bytes:
 * 0 with the message's length in *mlen; REG_PARSE_QUIT, REG_PARSE_EMPTY;
 * or -1 with the reason for the host in err.  Anything it accepts passes
 * ipc_check as an IPC_REG_REQ once the key is filled in.
 */
int	reg_parse(const char *line, size_t len, struct ipc_reg_req *m,
	    size_t room, size_t *mlen, char *err, size_t errlen);

/* In the forked child: build the TLS context, wipe pem, drop to
 * REG_USER, narrow, serve listen's connections in an event loop. */
void	regproc_main(int listen, int ipc, pid_t parent, struct reg_pem *)
	    __attribute__((noreturn));
void	reg_pem_wipe(struct reg_pem *);

#endif
