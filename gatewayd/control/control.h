/*
 * control.h -- the control process (control.c): unprivileged, it owns the
 * control socket's clients, parses their request lines and hands the
 * parent one typed IPC_CTL_REQ per request; replies come back the same
 * way.  It decides nothing: every authority check is the parent's.
 */
#ifndef GW_CONTROL_H
#define GW_CONTROL_H

#include <sys/socket.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc.h"

#define CTL_MAX_LINE		8192	/* request line, plus a secret's value */
#define CTL_MAX_CLIENTS		32
#define CTL_ROOT_RESERVE	4	/* of them, slots only root may take */
#define CTL_PER_UID		8	/* connections one other uid may hold */
#define CTL_REQUEST_MS		5000	/* to send a whole request */
#define CTL_USER		"moat-ctl"

struct ctl_client {
	int		 fd;		/* -1: free */
	struct ucred	 cred;		/* SO_PEERCRED at accept */
	uint64_t	 deadline;	/* ms: a whole request by then */
	uint32_t	 id;		/* the request the parent has, or 0 */
	bool		 follow;	/* "log -f": gets IPC_CTL_LOG lines */
	int		 fds[IPC_CTL_MAX_FDS];	/* the client attached these */
	size_t		 nfds;
	size_t		 len;
	char		 buf[CTL_MAX_LINE];
};

struct ctlproc {
	int			 listen;	/* bound by the parent */
	int			 ipc;
	uint32_t		 last_id;
	struct ctl_client	 c[CTL_MAX_CLIENTS];
};

/*
 * Parse one request from buf (len bytes, NUL at buf[len]; full: no room
 * left).  0: a whole request, written to *m (room bytes) as an
 * IPC_CTL_REQ payload of *mlen bytes without the credentials; 1: more
 * bytes are needed; -1: refused, err holds the reply line.  buf is
 * changed in place.
 */
int	ctl_parse(char *buf, size_t len, bool full, struct ipc_ctl_req *m,
	    size_t room, size_t *mlen, char *err, size_t errlen);

void	ctlproc_init(struct ctlproc *, int listen, int ipc);
/*
 * A slot for a new client of uid, or -1: root always finds one while
 * any is free (CTL_ROOT_RESERVE are kept for it); another uid gets one
 * while it holds fewer than CTL_PER_UID and fewer than CTL_MAX_CLIENTS -
 * CTL_ROOT_RESERVE slots are taken by uids other than root.  So no member
 * can lock root (or, alone, everyone else) out of the control socket.
 */
int	ctlproc_slot_for(const struct ctlproc *, uid_t uid);
/* Accept one client; refused (told why, closed) if it gets no slot. */
void	ctlproc_accept(struct ctlproc *);
/* Milliseconds until the first client still owing its request runs out
 * of time (CTL_REQUEST_MS after it connected), or -1 if none does. */
int	ctlproc_next_timeout(const struct ctlproc *, uint64_t now_ms);
/* Answer and drop the clients whose time to send a request is over. */
void	ctlproc_expire(struct ctlproc *, uint64_t now_ms);
uint64_t ctlproc_now_ms(void);		/* CLOCK_MONOTONIC */
/* 0, or -1 if the parent is gone (the process should exit). */
int	ctlproc_client_readable(struct ctlproc *, int slot);
/* 0, or -1 on the parent's EOF or a protocol violation. */
int	ctlproc_ipc_readable(struct ctlproc *);
void	ctlproc_drop(struct ctlproc *, int slot);

/* Forked by the parent: drop to CTL_USER, seccomp, serve; never returns. */
void	control_main(int listen, int ipc, pid_t parent)
	    __attribute__((noreturn));

#endif
