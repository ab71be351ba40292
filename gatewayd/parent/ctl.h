/*
 * ctl.h -- control requests, their replies, and the jobs they start (ctl.c,
 * ctlreq.c).
 */
#ifndef GW_PARENT_CTL_H
#define GW_PARENT_CTL_H

#include "gw.h"

/* --- control requests (parent/ctl.c) --- */

/* Bind the control socket; the control process is handed it. */
int	control_listen(struct gw *);
void	control_unlink(struct gw *);
/* An IPC_CTL_REQ from the control process, fds[0] the client's
 * connection and the client's own descriptors after it; they are all
 * closed here.  The request is checked again in full: the credentials
 * against the connection's, then who may do what. */
void	ctl_message(struct gw *, const struct ipc_hdr *, void *payload,
	    size_t len, int *fds, size_t nfds);
/* An audit line, for "log -f" clients. */
void	ctl_log_line(struct gw *, const char *line);
/* A job ended: the control client waiting for it gets its verdict. */
bool	ctl_job_reaped(struct gw *, pid_t, int status);
void	ctl_job_stopped(struct gw *, pid_t);

/* --- one request and its reply (parent/ctlreq.c) --- */

/* A request, typed and checked: the strings point into the message. */
struct ctl_req {
	struct gw	*gw;
	uint32_t	 id;		/* the control process's, for replies */
	uid_t		 uid;		/* checked against the connection */
	gid_t		 gid;
	pid_t		 pid;
	int		 conn;		/* the client's connection */
	int		 verb;		/* enum ipc_ctl_verb */
	bool		 json;
	int		 argc;
	char		*argv[IPC_CTL_MAX_ARGS];
	char		*body;		/* "secret set": the value line */
	const char	*user;		/* the caller's login name */
	bool		 admin;		/* root or gateway.admin_group */
	bool		 has_login;	/* the uid has a passwd entry */
	bool		 may_own;	/* its name is one the config takes */
	char		 userbuf[33];
	enum ipc_ctl_end end;		/* how the reply ends */
	bool		 job;		/* a provision job answers later */
	int		 reply_fd;	/* goes to the client with the reply */
	FILE		*out;		/* the reply so far */
	char		*outbuf;
	size_t		 outlen;
};

void	ctl_req_open(struct ctl_req *);
/* Send what was replied, in chunks; the last one says how it ends. */
void	ctl_req_flush(struct ctl_req *, enum ipc_ctl_end);
void	ctl_reply(struct ctl_req *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	ctl_reply_jstr(struct ctl_req *, const char *);	/* "..." or null */
/* Reply "error: MSG" and audit the refusal with the caller's identity. */
void	ctl_refuse(struct ctl_req *, const char *sandbox, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
bool	ctl_may_see(const struct ctl_req *, const char *owner);
/* Whether the caller's login name can own a sandbox or secret (the
 * configuration would hold it); if not, refuse with the reason. */
bool	ctl_may_own(struct ctl_req *, const char *sandbox);
/* A refused configuration's errors (lines "file:line: message"), each
 * replied as "error: LINE" (the client prints error lines on its stderr):
 * all of them for admins; a member sees only the lines about their own
 * drop-ins or the files given (those their request wrote), and a pointer
 * to the journal for the rest. */
void	ctl_reply_errors(struct ctl_req *, const char *errors,
	    const char *const *mine, size_t nmine);
/* Hand the client fd (ours to close) with the reply; the reply must
 * have some text, which the descriptor travels with. */
void	ctl_req_attach_fd(struct ctl_req *, int fd);
/* Send reply text for request id to the control process, in chunks, fd
 * (or -1) attached to the first. */
int	ctl_send(struct gw *, uint32_t id, enum ipc_ctl_end, const char *text,
	    size_t len, int fd);
/* --- the daemon's state --- */

/* A provision job run for a control client (parent/team.c). */
struct gw_job {
	pid_t		 pid;		/* 0: free */
	uint32_t	 id;		/* the request, for the verdict */
	unsigned	 gen;		/* of the control process that asked */
	uid_t		 uid;
	char		 user[33];	/* login name, for the job's audit */
	char		 verb[16];
	char		 sandbox[33];
	bool		 console;	/* a console's connection, not provision */
	int		 back;		/* its connect_as end */
	uid_t		 peer;		/* its server's uid, the QEMU user */
};

struct gw_ctl {
	int		 ctlfd;		/* listening; the control process's */
	unsigned	 ctl_gen;	/* control processes started */
	unsigned	 ctl_followers;	/* "log -f" clients */
	struct gw_job	 jobs[GW_MAX_CLIENTS];
	/* An IPC_CTL_* message from the control process, wired by gw_run. */
	void		(*on_ctl_msg)(struct gw *, const struct ipc_hdr *,
			    void *, size_t, int *, size_t);
};
static inline struct gw_ctl *ctl_of(const struct gw *gw)
{ return gw_mod(gw, MOD_CTL); }

#endif
