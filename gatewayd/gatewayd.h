/*
 * gatewayd.h -- the moat appliance daemon, shared between its modules.
 *
 * Process model (STYLE.md points 2-4):
 *
 *   parent (root, CAP_NET_ADMIN)  applies the policy, owns the control
 *        |                        socket and the audit log; parses no
 *        |                        guest bytes, only typed IPC
 *        +-- dnsd     exec'ed, own user, sockets handed over, IPC fd
 *        +-- proxy    exec'ed (moat-proxy), drops to its own user after
 *        |            reading the secrets it needs
 *        +-- nflog    forked, own user, no capabilities, seccomp: reads
 *                     the kernel's refusal log from a socket the parent
 *                     bound, sends one IPC_AUDIT per refusal
 *
 * Children that die are restarted with backoff; the kernel policy stays
 * in place throughout (fail closed).
 */
#ifndef GATEWAYD_H
#define GATEWAYD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "budget.h"
#include "config.h"
#include "ipc.h"

#define GW_SOCK_DEFAULT		"/run/moat/gatewayd.sock"
#define GW_GROUP		"moat"
#define GW_AUDIT_DIR		"/var/log/moat"
#define GW_AUDIT_DEFAULT	GW_AUDIT_DIR "/audit.log"
#define GW_CTL_MAX_LINE		8192	/* request line, plus a secret's value */
#define GW_CTL_MAX_ARGS		64
#define GW_SECRET_MAX		4096
#define GW_MAX_CLIENTS		32
#define GW_MAX_DRAINING		4	/* old proxies finishing connections */

struct gw_opts {
	const char	*conf;
	const char	*sock;		/* control socket path */
	const char	*audit_path;	/* JSON lines file; NULL = state_dir */
	const char	*bindir;	/* where dnsd and moat-proxy live */
	const char	*upstream_ca;	/* passed to the proxy, for tests */
	bool		 foreground;
	bool		 no_children;	/* -X: policy, control, audit only */
	int		 verbose;
	const char	*test_clock;	/* budgets' clock from a file (tests) */
};

/* --- children (proc.c) --- */

enum gw_proc_id { PROC_NFLOG = 0, PROC_DNSD, PROC_PROXY, PROC_MAX };

struct gw_proc {
	const char	*name;
	pid_t		 pid;
	int		 ipc;		/* parent's end, -1 when down */
	unsigned	 restarts;
	unsigned	 backoff_s;	/* next restart delay */
	time_t		 started;
	time_t		 restart_at;	/* 0 = not scheduled */
	bool		 enabled;
	bool		 expected;	/* we stopped it: restart at once */
};

struct gw;

void	proc_init(struct gw *);
void	proc_start_all(struct gw *);
void	proc_stop_all(struct gw *);
void	proc_reaped(struct gw *, pid_t, int status);
void	proc_tick(struct gw *, time_t now);
int	proc_next_timeout(struct gw *, time_t now);	/* ms, -1 none */
void	proc_ipc_readable(struct gw *, enum gw_proc_id);
/* After a reload: children re-read the config by being started again
 * (they hold no privilege to read root-only files any more).  dnsd is
 * restarted at once; the proxy is told to drain its open connections
 * while a new one takes the listening socket. */
void	proc_reload(struct gw *);
void	proc_drain_readable(struct gw *, int slot);
void	proc_kill(struct gw *, enum gw_proc_id, const char *why);
void	proc_restart(struct gw *, enum gw_proc_id);	/* quietly, now */

/* --- audit log (audit.c) --- */

int	audit_open(struct gw *);
void	audit_reopen(struct gw *);
void	audit_close(struct gw *);
/* Write one JSON object (already formatted, printable, no newline). */
void	audit_write(struct gw *, const char *json);
/* "audit ..." lines for ctl counters and status; malloc'ed. */
char	*audit_counters(const struct gw *);
enum audit_syslog { AUDIT_SYSLOG, AUDIT_SYSLOG_LIMITED, AUDIT_NO_SYSLOG };
void	audit_write_to(struct gw *, const char *json, enum audit_syslog);
/* Build and write an event: fields as alternating key, value strings,
 * NULL-terminated; values are JSON-escaped here. */
void	audit_event(struct gw *, const char *event, ...)
	    __attribute__((sentinel));

/* --- control socket (control.c) --- */

int	control_listen(struct gw *);
void	control_accept(struct gw *);
void	control_readable(struct gw *, int slot);
void	control_broadcast_log(struct gw *, const char *line);
void	control_close_all(struct gw *);

/* The request line's words are percent-encoded by clients (space, '%'
 * and control characters as %XX) so arguments may hold spaces.
 * Decodes in place; -1 on a malformed escape or a decoded NUL. */
int	ctl_word_decode(char *);

/* A parsed request; the connection's buffer owns the strings. */
struct ctl_req {
	struct gw	*gw;
	struct gw_client *c;
	bool		 json;
	int		 argc;
	char		*argv[GW_CTL_MAX_ARGS];
	char		*body;		/* "secret set": the value line */
	const char	*user;		/* the caller's login name */
	bool		 admin;		/* root or gateway.admin_group */
};

void	ctl_reply(struct ctl_req *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	ctl_reply_jstr(struct ctl_req *, const char *);	/* "..." or null */
/* Reply "error: MSG" and audit the refusal with the caller's identity. */
void	ctl_refuse(struct ctl_req *, const char *sandbox, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
bool	ctl_may_see(const struct ctl_req *, const char *owner);
/* A job ended: the control client waiting for it gets its verdict. */
bool	control_job_reaped(struct gw *, pid_t, int status);

/* --- team-shared host (team.c, secret.c) --- */

/* provision's verbs run by gatewayd for members of group moat. */
void	team_provision(struct ctl_req *);	/* create|start|stop|destroy */
void	team_secret(struct ctl_req *);
void	team_list(struct ctl_req *);		/* provision list, filtered */		/* secret set|list */
bool	team_is_admin(const struct moat_config *, uid_t, const char *user);
char	*team_config_warnings(const struct moat_config *,
	    const struct moat_errors *);	/* malloc'ed lines, or NULL */
void	gw_log_warnings(const struct moat_config *, const struct moat_errors *);

/* --- client side (ctl.c) --- */

int	ctl_main(const char *sock, int argc, char *argv[]);
void	ctl_usage(FILE *);

/* --- policy (policy.c) --- */

void	policy_refusals(const struct moat_config *);
bool	policy_refusals_state(const struct moat_config *, char *, size_t);
int	policy_apply(struct gw *, const struct moat_config *, char *err,
	    size_t errlen);
int	policy_set_add(struct gw *, const char *sandbox,
	    const struct moat_addr *, size_t, uint32_t timeout_ms);
/* Delete conntrack entries of sandboxes whose egress narrowed or that
 * were removed between old and new.  Returns entries deleted or -1. */
int	policy_cut_flows(const struct moat_config *old,
	    const struct moat_config *new);
int	policy_counters(struct gw *, bool json, char **out);	/* malloc'ed text */

/* --- nflog child (nflog.c) --- */

int	nflog_open(uint16_t group);		/* parent, privileged */
void	nflog_child(int nlfd, int ipc, const struct moat_config *, pid_t parent)
	    __attribute__((noreturn));

/* --- the gateway's own network (network.c; rtnetlink in rtnl.c) --- */

#define GW_NET_MAX	8
struct gw_net_item {
	char	 what[48];		/* "bridge moat0", "forwarding up0" */
	char	 state[160];		/* "created", "on", "missing ..." */
	bool	 warn;
};
struct gw_net {
	bool			 managed;	/* gateway.manage_network */
	size_t			 n;
	unsigned		 warnings;
	struct gw_net_item	 item[GW_NET_MAX];
};

/* Walk bridge, address, forwarding and uplink; with apply (and
 * manage_network) make what is missing, else only report it. */
void	net_walk(const struct moat_config *, bool apply, struct gw_net *);
void	net_log(const struct gw_net *);
void	net_print_warnings(FILE *, const struct gw_net *);
void	net_status(struct ctl_req *, const struct gw_net *);
/* gatewayd --teardown; refused while a gatewayd answers on sock. */
int	net_teardown(const struct moat_config *, const char *sock);

/* --- sandboxing helpers (sandbox.c) --- */

int	seccomp_nflog(void);			/* allowlist for nflog child */

/* --- the daemon's state --- */

struct gw_client {
	int		 fd;
	uid_t		 uid;
	gid_t		 gid;
	pid_t		 job;		/* provision run for this client, or 0 */
	char		 user[33];	/* login name, for the job's audit */
	char		 verb[16];
	char		 sandbox[33];
	bool		 follow;	/* "log -f" */
	size_t		 len;
	char		 buf[GW_CTL_MAX_LINE];
};

struct gw {
	struct gw_opts		 opts;
	struct moat_config	*cfg;
	struct nftr_ctx		*nft;
	bool			 probed;
	unsigned		 features;	/* NFTR_F_* */
	pid_t			 signer_pid;	/* the current proxy's signer */
	struct gw_net		 net;		/* last walk, for ctl status */
	struct gw_proc		 procs[PROC_MAX];
	struct {
		pid_t	 pid;
		int	 ipc;
	}			 draining[GW_MAX_DRAINING];
	int			 nlfd;		/* nflog socket, kept for restarts */
	int			 dns_udp, dns_tcp;	/* bound by the parent */
	int			 proxy_fd;	/* listening, bound by the parent */
	int			 ctlfd;
	struct gw_client	 clients[GW_MAX_CLIENTS];
	int			 auditfd;
	char			*audit_path;
	struct audit_stats {
		off_t		 size;		/* of the current file */
		uint64_t	 lines;		/* written since start */
		uint64_t	 rotations;	/* by size (audit_max_kb) */
		uint64_t	 dropped;	/* lines rotated away for good */
		uint64_t	 suppressed;	/* refusals left out (rate) */
		uint64_t	 lost;		/* refusal log overruns */
	}			 audit;
	gid_t			 moat_gid;	/* (gid_t)-1 if no such group */
	time_t			 started;
	time_t			 last_reload;
	unsigned		 reloads, reload_failures;
	uint64_t		 set_adds, set_refused;
	struct gw_dnsdrop {		/* dnsd's queries over the rate */
		char		 sandbox[IPC_NAME_LEN];
		uint64_t	 count;
	}			*dnsdrops;
	size_t			 ndnsdrops;
	struct budget_set	 budgets;	/* per secret, kept across reloads */
	bool			 quit;
};

/* budget.c: answer the proxy's IPC_BUDGET_REQ on fd. */
void	gw_budget_answer(struct gw *, int fd, uint32_t id,
	    const struct ipc_budget_req *);
time_t	gw_budget_now(const struct gw *);

/* daemon.c */
int	gw_run(struct gw_opts *);
int	gw_reload(struct gw *, char **errors);	/* 0 ok; errors malloc'ed */
char	*json_escape(const char *);		/* malloc'ed */

#endif
