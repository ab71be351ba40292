/*
 * reqrule.h -- what a secret may be used for, decided on the request head.
 *
 * A request that carries a secret's placeholder where the proxy would
 * inject it (the engine says which: the same pass as the injection) must
 * not override its method or put %00 in its path (403), must match one of
 * the secret's request rules (403 otherwise) and fit in its budget (429
 * with Retry-After otherwise), for every secret it carries.  The budget is
 * charged by gatewayd's parent over IPC, so the connection waits for the
 * answer; a proxy run on its own counts by itself.  Every injected
 * request is audited once its response ends: method, normalised path
 * (never the query), status and response size.  Bodies are never looked
 * at, so streaming is untouched.
 *
 * Its place: the engine (engine.c) calls it; it calls the connection
 * layer (conn.h) and never the engine.  A request that waits leaves its
 * connection in S_BUDGET; gatewayd's answer (reqrule_ipc) resumes the
 * connection through conn_budget_answer, and the engine takes the answer
 * with reqrule_answer, on the head it parsed before the wait.
 */
#ifndef MOAT_PROXY_REQRULE_H
#define MOAT_PROXY_REQRULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc.h"
#include "pathmatch.h"

struct conn;
struct http_head;
struct secret;
struct secrets;

enum rr_state { RR_IDLE, RR_WAITING, RR_GRANTED, RR_SPENT };

#define RR_PATH_MAX	256	/* of the path kept for the audit */
#define RR_NAMES_MAX	(IPC_BUDGET_MAX * IPC_NAME_LEN)

/* Per connection (one request at a time), inside the engine's state. */
struct rr_req {
	enum rr_state	 st;
	uint32_t	 id;		/* of the budget request awaited */
	struct conn	*c;
	struct rr_req	*next;		/* waiting for the parent */
	struct ipc_budget_ack ack;
	bool		 open;		/* injected; audited at its end */
	char		 method[PM_MAX_METHOD + 1];
	char		 path[RR_PATH_MAX];
	char		 host[256];
	char		 secrets[RR_NAMES_MAX];	/* names, comma-separated */
	int		 status;
	uint64_t	 bytes;
};

/* gatewayd's IPC socket, or -1 when the proxy runs on its own. */
void	reqrule_init(int ipcfd);
/* For a head that carries the secrets marked in carried (by index in ss,
 * the connection's generation): 0 send the request on; 1 waiting for
 * gatewayd to charge a budget (the connection is resumed when it
 * answers: reqrule_answer); -1 refused (answered). */
int	reqrule_check(struct conn *, struct rr_req *, const struct secrets *ss,
	    const struct http_head *, const char *host, const char *path,
	    size_t pathlen, const bool *carried);
/* After gatewayd's answer: 0 send the request on; -1 over budget
 * (answered 429); 1 no answer yet. */
int	reqrule_answer(struct conn *, struct rr_req *);
void	reqrule_status(struct rr_req *, int status);
void	reqrule_bytes(struct rr_req *, size_t);
void	reqrule_done(struct rr_req *);		/* the response ended */
void	reqrule_forget(struct rr_req *);	/* the connection ends */
/* An IPC_BUDGET_ACK from gatewayd. */
void	reqrule_ipc(const struct ipc_hdr *, const void *, size_t);

#endif
