/*
 * gatewayd.h -- the moat appliance daemon, shared between its modules.
 *
 * Process model (the parent touches no hostile input; keys stay where
 * the network is not; messages are typed and size-checked, and each
 * child may send only the types its entry in roles[] lists):
 *
 *   parent (root, CAP_NET_ADMIN)  applies the policy, binds every socket,
 *        |                        owns the audit log, reads the config,
 *        |                        the secret files and the CA; parses no
 *        |                        guest bytes and no control requests,
 *        |                        only typed IPC
 *        +-- nflog     forked, moat-log: the kernel's refusal log from a
 *        |             socket the parent bound; one IPC_AUDIT per refusal
 *        +-- dnsd      exec'ed, moat-dns: guests' DNS on sockets handed
 *        |             over; IPC_SET_ADD for what allowed names resolve to
 *        +-- proxy     exec'ed (moat-proxy), moat-proxy, one per worker:
 *        |    |        gets each secret's value over IPC (IPC_CONF_SECRET)
 *        |    |        and never opens a file
 *        |    +-- signer  moat-ca: holds the CA key, signs its worker's leaves
 *        +-- control   forked, moat-ctl: parses control requests, sends
 *        |             one IPC_CTL_REQ each (control.c)
 *        +-- register  forked, moat-reg: a separate box's TLS endpoint for
 *        |             KVM hosts; one IPC_REG_REQ per line (register.c)
 *        +-- metrics   forked, moat-mon: answers scrapers from the latest
 *        |             rendering the parent sends (metrics.c)
 *        +-- ha-recv   forked, moat-reg: replication from the other box
 *        +-- ha-send   forked, moat-reg: replication to the other box
 *                      (harepl_send.c)
 *
 * Every child drops to its own user and seccomp list (lib/sandbox.c).
 * Children that die are restarted with backoff; the kernel policy stays
 * in place throughout (fail closed).  docs/architecture.md has the same
 * picture with every message.
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
#include "control.h"
#include "ipc.h"
#include "promise.h"
#include "seen.h"

#define GW_SOCK_DEFAULT		"/run/moat/gatewayd.sock"
#define GW_GROUP		"moat"
#define GW_AUDIT_DIR		"/var/log/moat"
#define GW_AUDIT_DEFAULT	GW_AUDIT_DIR "/audit.log"
#define GW_CTL_MAX_LINE		CTL_MAX_LINE	/* request line, plus a value */
#define GW_CTL_MAX_ARGS		IPC_CTL_MAX_ARGS
#define GW_CTL_MAX_FDS		8	/* files a create passes (SCM_RIGHTS) */
#define GW_SECRET_MAX		4096
#define GW_MAX_CLIENTS		CTL_MAX_CLIENTS
#define GW_PROXY_MAX		MOAT_PROXY_WORKERS_MAX
#define GW_MAX_DRAINING		(2 * GW_PROXY_MAX)	/* old proxy workers
						   finishing connections */

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

/* --- children (parent_proc.c) --- */

/* The proxy is a pool: worker i is PROC_PROXY + i. */
enum gw_proc_id { PROC_NFLOG = 0, PROC_DNSD, PROC_PROXY,
    PROC_CONTROL = PROC_PROXY + GW_PROXY_MAX, PROC_REGISTER, PROC_METRICS,
    PROC_HA_RECV, PROC_HA_SEND, PROC_HA_ARP, PROC_WEB, PROC_MAX };
#define PROC_IS_PROXY(id)	((id) >= PROC_PROXY && (id) < PROC_CONTROL)

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

/*
 * What a reload changed, decided once, in the parent, by comparing the
 * configuration in force with the new one (conf_delta, parent_reload.c);
 * each child is told what it means for it (proc_reload).  Names are the
 * delta's own copies.
 */
struct gw_delta {
	bool		 basis;		/* more than sandboxes and secrets */
	bool		 secret_defs;	/* a secret came, went or was redefined */
	char		**sandboxes;	/* in both, with other settings */
	size_t		 nsandboxes;
	char		**secrets;	/* redefined, removed, new, or whose
					 * file changed: whose connections go */
	size_t		 nsecrets;
	size_t		*values;	/* new config's secrets whose value goes
					 * to the proxy: new, or file changed */
	size_t		 nvalues;
	struct gw_secret_id *ids;	/* the new config's secret files */
	size_t		 nids;
	bool		 nflog_view;	/* what the nflog reader knows of
					 * sandboxes (names, addresses,
					 * MACs, the bridge) changed */
};

/* A secret file's identity when its value was read for the proxy: a
 * reload sends again the values of those whose identity changed. */
struct gw_secret_id {
	char		 name[IPC_NAME_LEN];
	bool		 ok;		/* stat succeeded */
	uint64_t	 dev, ino, size;
	int64_t		 mtime_s;
	long		 mtime_ns;
};

struct gw;

void	proc_init(struct gw *);
void	proc_start_all(struct gw *);
void	proc_stop_all(struct gw *);
void	proc_reaped(struct gw *, pid_t, int status);
void	proc_tick(struct gw *, time_t now);
int	proc_next_timeout(struct gw *, time_t now);	/* ms, -1 none */
void	proc_ipc_readable(struct gw *, enum gw_proc_id);
/* After a reload: each child gets the new configuration from the parent
 * (they hold no privilege to read root-only files any more), with what
 * the change d means for it.  dnsd takes it in place (IPC_CONF); the
 * nflog reader is started again.  A proxy worker takes the new sandboxes
 * and secrets in place when nothing else changed (d->basis); otherwise it
 * is told to drain its open connections while a new one takes the
 * listening socket. */
void	proc_reload(struct gw *, const struct gw_delta *d);
/* A grant changed the allow lists of the n sandboxes named in gw->cfg
 * itself: dnsd and every proxy worker take each list alone
 * (IPC_CONF_ALLOW); nothing is restarted and no other sandbox is
 * touched. */
void	proc_reload_sandboxes(struct gw *, const char *const *names, size_t n);
void	proc_drain_readable(struct gw *, int slot);
void	proc_kill(struct gw *, enum gw_proc_id, const char *why);
const char *proc_label(struct gw *, const struct gw_proc *);	/* "proxy 1" */
/* The configuration as printed for children, in a sealed memfd. */
int	proc_config_memfd(struct gw *);

/* One message from a child, already checked against its role: each
 * role's dispatch function (roles[] in parent_proc.c) lives beside the
 * code that speaks to that child; fd is the channel to answer on. */
struct gw_msg {
	const struct ipc_hdr	*h;
	void			*data;
	size_t			 len;
	int			*fds;
	size_t			 nfds;
};
typedef void gw_dispatch_fn(struct gw *, struct gw_proc *, int fd,
    const struct gw_msg *);

/* parent_reload.c: the change, once */
void	conf_delta(struct gw *, const struct moat_config *old,
	    const struct moat_config *ncfg, struct gw_delta *);
void	conf_delta_free(struct gw_delta *);
/* The secret files' identities, now, in cfg's order; *n of them. */
struct gw_secret_id *conf_secret_ids(const struct moat_config *, size_t *n);
/* The IPC_CONF_ALLOW of a sandbox's allow list in gw->cfg, in buf
 * (IPC_MAX_PAYLOAD bytes, aligned), with generation gen (>= 1); its
 * length, or 0 if there is no such sandbox or its list does not fit one
 * message. */
size_t	conf_allow_msg(const struct gw *, const char *sandbox, uint32_t gen,
	    void *buf);

/* parent_dnsd.c */
gw_dispatch_fn dnsd_dispatch;
void	dnsd_reconfigure(struct gw *);	/* a reload's configuration, in place */
int	dnsd_allow(struct gw *, const char *sandbox);	/* -1: send it all */

/* parent_proxy.c */
gw_dispatch_fn proxy_dispatch;
int	proxy_send_secrets(struct gw *, int fd);	/* at a worker's start */
/* Every worker, in place or drained, and every one still draining. */
void	proxy_reload(struct gw *, const struct gw_delta *);
/* A grant: every worker (and draining one) takes one sandbox's allow
 * list alone, or, if it does not fit a message, the configuration with
 * only that sandbox changed. */
void	proxy_allow(struct gw *, const char *sandbox);
void	proc_restart(struct gw *, enum gw_proc_id);	/* quietly, now */

/* --- the proxy's workers' listening sockets (parent_pool.c) --- */

/* Attach the steering program to a reuseport group: a connection goes
 * to socket (IPv4 source address) % n. */
int	pool_steer(int fd, unsigned n);
/* The same for an IPv6 group: (net4 | the IPv6 source's last 32 bits) % n,
 * the socket of the guest's IPv4 address. */
int	pool_steer6(int fd, unsigned n, const struct moat_addr *net4);
/* Socket i of n on a:port, SO_REUSEPORT, listening (the first steered).
 * freebind: a may not be on this host yet (a pair's backup). */
int	pool_socket(const struct moat_addr *, uint16_t port, unsigned i,
	    unsigned n, bool freebind);
/* gw->proxy4.fds[0 .. nworkers-1] (and proxy6's with gateway.ipv6),
 * each group steered over nworkers. */
int	pool_sockets(struct gw *);
void	pool_close(struct gw *);

/* --- audit log (parent_audit.c) --- */

int	audit_open(struct gw *);
void	audit_reopen(struct gw *);
void	audit_close(struct gw *);
/* Write one JSON object (already formatted, printable, no newline). */
void	audit_write(struct gw *, const char *json);
/* "audit ..." lines for ctl counters and status; malloc'ed. */
char	*audit_counters(const struct gw *);
enum audit_syslog { AUDIT_SYSLOG, AUDIT_SYSLOG_LIMITED, AUDIT_NO_SYSLOG };
void	audit_write_to(struct gw *, const char *json, enum audit_syslog);
/* A child's audit event, stamped with its source (parent_audit.c). */
void	audit_child(struct gw *, struct gw_proc *, const char *json, size_t);
/* Build and write an event: fields as alternating key, value strings,
 * NULL-terminated; values are JSON-escaped here. */
void	audit_event(struct gw *, const char *event, ...)
	    __attribute__((sentinel));

/* --- registration of KVM hosts' sandboxes (parent_register.c) --- */
struct reg_pem;
int	reg_listen(struct gw *);	/* bind gateway.registration.listen */
int	gw_listen_tcp(const char *addrport, const char *what);
/* The box's certificate and key for a new registration process. */
int	reg_pem_read(const struct gw *, struct reg_pem *);
int	reg_pem_load(const char *, const char *, const char *,
	    struct reg_pem *);
/* An IPC_REG_REQ from the registration process or, forwarded, from the
 * other box of a pair (shape-checked); the answer goes back on fd.  0 if
 * it was answered "ok". */
int	reg_message(struct gw *, int fd, const struct ipc_reg_req *);
gw_dispatch_fn reg_dispatch;
/* Sandboxes host has registered (drop-ins with its mark). */
size_t	reg_count(const struct gw *, const struct moat_host *);
struct ctl_req;
void	ctl_hosts(struct ctl_req *);	/* gatewayd ctl hosts [--json] */
/* `gatewayd register ...` on a KVM host (register_client.c). */
int	register_main(int argc, char *argv[]);

/* --- control requests (parent_ctl.c) --- */

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

/* --- one request and its reply (parent_ctlreq.c) --- */

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

/* --- team-shared host (parent_team.c, parent_secret.c) --- */

/* provision's verbs run by gatewayd for members of group moat. */
void	team_provision(struct ctl_req *);	/* create|start|stop|destroy */
/* The same with the descriptors the client attached to its request. */
void	team_provision_fds(struct ctl_req *, const int *fds, size_t nfds);
void	team_secret(struct ctl_req *);		/* secret set|list */
void	secret_attach(struct ctl_req *);	/* secret attach|detach */
void	team_list(struct ctl_req *);		/* provision list, filtered */
bool	team_is_admin(const struct moat_config *, uid_t, const char *user);
char	*team_config_warnings(const struct moat_config *,
	    const struct moat_errors *);	/* malloc'ed lines, or NULL */

/* --- console (parent_console.c) --- */

/* Who asked, from SO_PEERCRED (the control protocol's caller). */
struct ctl_creds {
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;		/* login name, or "#UID" */
	bool		 admin;		/* root or gateway.admin_group */
};
/* Where a console is: its socket, to be connected as its folder's owner
 * (connect_as_start, privdrop.h). */
struct console_target {
	char		 path[108];
	uid_t		 uid;
	gid_t		 gid;
};
/* "console NAME": (request, caller) -> where the guest's serial console
 * is, or -1 with err set (one answer for missing and not yours). */
int	console_verb(const struct moat_config *, const char *run_dir, int argc,
	    char *const argv[], const struct ctl_creds *,
	    struct console_target *, char *err, size_t len);
/* The answer for a guest whose console cannot be reached. */
void	console_gone(const char *name, char *err, size_t len);

/* --- client side (ctl_client.c) --- */

int	ctl_main(const char *sock, int argc, char *argv[]);
void	ctl_usage(FILE *);

/* --- policy (parent_policy.c) --- */

void	policy_refusals(const struct moat_config *);
bool	policy_refusals_state(const struct moat_config *, char *, size_t);
int	policy_apply(struct gw *, const struct moat_config *, char *err,
	    size_t errlen);
/* A set addition dnsd judged by an allow list older than the sandbox's
 * last narrowing is refused; one judged by the new list (its gen is
 * later) is not, so the sandbox's other names never stop resolving.
 * freeze at the narrowing, before the new list is sent (it marks the
 * last gen sent); thaw once dnsd has acknowledged the newest one, or a
 * new dnsd starts (gens start again from 0); frozen per set-add. */
void	policy_dns_freeze(struct gw *, const char *sandbox);
void	policy_dns_thaw(struct gw *);
bool	policy_dns_frozen(const struct gw *, const char *sandbox,
	    uint32_t gen);
/* Take over what the kernel's allowlist sets hold as promised (start). */
void	policy_promises_seed(struct gw *);
/* Replace moat's tables with the policy in force, whole (not a delta
 * from what gatewayd believes the kernel holds): the repair of drift. */
int	policy_reapply(struct gw *, char *err, size_t errlen);
/* CLOCK_MONOTONIC in milliseconds (promises, set additions). */
uint64_t gw_mono_ms(void);
/* Its allow list lost a name: empty its set, and refuse dnsd's additions
 * judged by the list before. */
void	policy_flush_sandbox(struct gw *, const char *sandbox);
int	policy_flush_peer(struct gw *, const char *sandbox, const char **why);
/* Empty the allowlist sets of sandboxes whose allow list lost a name. */
void	policy_flush_narrowed(struct gw *, const struct moat_config *old,
	    const struct moat_config *new);
/* Delete conntrack entries of sandboxes whose egress narrowed or that
 * were removed between old and new.  Returns entries deleted or -1. */
int	policy_cut_flows(const struct moat_config *old,
	    const struct moat_config *new);
/* The same, after grants narrowed the lists of these sandboxes of cfg in
 * place (an expiry, an unallow). */
int	policy_cut_narrowed(const struct moat_config *cfg,
	    const char *const *sandboxes, size_t n);
int	policy_counters(struct gw *, bool json, char **out);	/* malloc'ed text */
/* dnsd's IPC_SET_ADD, decided by nftr_allow_add, answered on p->ipc. */
/* Admit and add a set addition (dnsd's, or the other box's): what
 * nftr_allow_add returns. */
int	policy_set_add(struct gw *, const struct ipc_set_add *);
void	policy_set_add_request(struct gw *, struct gw_proc *, uint32_t id,
	    const struct ipc_set_add *);
typedef void policy_counter_fn(void *arg, const char *family, const char *name,
    const char *what, uint64_t packets);
int	policy_counters_each(struct gw *, policy_counter_fn *, void *arg);

/* --- what sandboxes were refused and resolved (parent_refused.c) --- */

void	refused_dns_name(struct gw *, const struct ipc_dns_name *);
/* An audit line from a child (its source stamped): kept if a refusal. */
void	refused_audit(struct gw *, const char *line);
void	refused_prune(struct gw *);	/* after a reload */
void	refused_free(struct gw *);
void	ctl_refused(struct ctl_req *);	/* refused [SANDBOX] [--since D] */
void	ctl_names(struct ctl_req *);	/* names SANDBOX [--as-allow] */
/* "90s", "10m", "2h", "1d" or plain seconds, at most a year; -1 if not. */
int	gw_duration(const char *, long *secs);

/* --- grants: allow and unallow (parent_grant.c) --- */

/* A grant for a while (--for): kept in memory, laid over every
 * configuration loaded until it expires. */
struct gw_grant {
	char		 sandbox[IPC_NAME_LEN];
	char		*name;		/* normalised, checked */
	uint64_t	 until_ms;	/* gw_mono_ms() */
	time_t		 until;		/* the same, wall clock, for ctl */
	bool		 added;		/* it added name to the list (the
					   file did not have it) */
	bool		 next_added;	/* the same for a configuration a
					   reload is trying (grants_overlay) */
	bool		 next_gone;	/* its sandbox is not in that one */
	char		 by[33];
	uid_t		 uid;		/* who granted it */
	time_t		 since;		/* when */
	char		 from[IPC_NAME_LEN + 1];	/* "@LIST" it came
					   with, or "" for a name given */
};
#define GW_GRANTS_MAX		4096
#define GW_GRANTS_PER_SANDBOX	64

void	ctl_allow(struct ctl_req *);
void	ctl_unallow(struct ctl_req *);
void	ctl_grants(struct ctl_req *);
/* For the metrics: each sandbox with live grants for a while, how many,
 * and the seconds until the soonest ends; *out malloc'ed, sorted by name. */
struct grant_sum {
	const char	*sandbox;	/* in gw->grants: valid until it changes */
	size_t		 n;
	long		 left;
};
size_t	grants_sums(const struct gw *, struct grant_sum **out);
/* After a reload loaded cfg (not yet in force): lay the grants over it;
 * grants_commit once cfg is in force (a reload that fails leaves the
 * grants as they were for the configuration still in force). */
void	grants_overlay(struct gw *, struct moat_config *cfg);
void	grants_commit(struct gw *);
/* ms until the next grant expires, capped at timeout (ms, -1: none). */
int	grants_timeout(const struct gw *, int timeout);
void	grants_tick(struct gw *);	/* expire what is due */
/* Grants for a while on both boxes of a pair (harepl.h): the other box's
 * grant or ungrant taken, its grants for a sandbox ended before its whole
 * state, and ours for a sandbox sent as part of ours. */
int	grants_peer(struct gw *, const struct ipc_ha_grant *, const char **why);
void	grants_peer_state(struct gw *, const char *sandbox);
void	grants_snapshot(struct gw *, const char *sandbox, bool own_only);
void	grants_free(struct gw *);

/* --- nflog child (nflog.c) --- */

int	nflog_open(uint16_t group);		/* parent, privileged */
void	nflog_child(int nlfd, int ipc, const struct moat_config *, pid_t parent)
	    __attribute__((noreturn));

/* --- the gateway's own network (parent_network.c; rtnetlink in parent_rtnl.c) --- */

#define GW_NET_MAX	16
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
struct moat_config *net_config_load(const char *path, struct moat_errors *);
void	net_walk(const struct moat_config *, bool apply, struct gw_net *);
void	net_log(const struct gw_net *);
void	net_print_warnings(FILE *, const struct gw_net *);
void	net_status(struct ctl_req *, const struct gw_net *);
/* Watch moat's own tables (parent_drift.c): nf_tables notifications and
 * a timed comparison (gateway.verify); drift is reported and repaired. */
struct drift;
void	drift_start(struct gw *);
int	drift_fd(const struct gw *);
void	drift_readable(struct gw *);
int	drift_timeout(const struct gw *, int timeout);	/* ms, -1 */
void	drift_tick(struct gw *);
void	drift_status(struct ctl_req *);
void	drift_metrics(FILE *, const struct gw *);
void	drift_stop(struct gw *);

/* Follow the host's IPv6 networks (parent_hostnet.c): the policy's set
 * lan6 gets a network the moment an interface gains it, without a
 * reload.  fd -1 when not following. */
struct hostnet;
void	hostnet_start(struct gw *);
int	hostnet_fd(const struct gw *);
void	hostnet_readable(struct gw *);
void	hostnet_stop(struct gw *);
/* gatewayd --teardown; refused while a gatewayd answers on sock. */
int	net_teardown(const struct moat_config *, const char *sock);
/* Record a sysctl's value before gatewayd changes it (one of the ICMP
 * rate limits, refusals.h), for --teardown to set back. */
void	net_undo_sysctl(const struct moat_config *, const char *name, long old);

/* --- the daemon's state --- */

/* A provision job run for a control client (parent_team.c). */
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

/* A sandbox's egress budget in the current window (parent_egress.c). */
struct gw_egress {
	char		 name[IPC_NAME_LEN];
	char		 owner[IPC_NAME_LEN];	/* "" without one */
	struct moat_addr addr;
	uint64_t	 budget;	/* bytes a window, 0: none */
	uint64_t	 spent;		/* bytes sent this window */
	uint64_t	 last;		/* acct_out's counter at the last read */
	bool		 audited;	/* "egress-budget-spent" this window */
	bool		 in_set;	/* in the kernel's budget_spent */
	bool		 configured;	/* else kept for its total only */
	uint64_t	 replicated;	/* spent as the other box last heard it */
};

/* One reuseport group of the proxy's listening sockets (parent_pool.c):
 * socket i is worker i's. */
struct pool_group {
	int		 fds[GW_PROXY_MAX];
	unsigned	 n;
	unsigned	 steer;		/* workers the group steers over */
	struct moat_addr addr;		/* what its sockets are bound to */
};

struct gw {
	struct gw_opts		 opts;
	struct moat_config	*cfg;
	struct nftr_ctx		*nft;
	struct nftr_ruleset	*applied;	/* in the kernel, for deltas */
	bool			 probed;
	unsigned		 features;	/* NFTR_F_* */
	pid_t			 signer_pid[GW_PROXY_MAX];	/* each worker's */
	struct gw_net		 net;		/* last walk, for ctl status */
	struct hostnet		*hostnet;	/* the host's IPv6 networks */
	struct drift		*drift;		/* parent_drift.c */
	bool			 policy_full;	/* policy_reapply: no delta */
	struct gw_proc		 procs[PROC_MAX];
	struct {
		pid_t	 pid;
		int	 ipc;
		int	 worker;
		time_t	 since;
	}			 draining[GW_MAX_DRAINING];
	int			 nlfd;		/* nflog socket, kept for restarts */
	int			 dns_udp, dns_tcp;	/* bound by the parent */
	int			 dns_udp6, dns_tcp6;	/* gateway.ipv6, or -1 */
	unsigned		 nworkers;	/* proxy workers wanted now */
	struct pool_group	 proxy4, proxy6;	/* the proxy's
					   listening sockets, bound by the
					   parent; proxy6 on the gateway's
					   IPv6 (gateway.ipv6) */
	int			 ctlfd;		/* listening; the control process's */
	unsigned		 ctl_gen;	/* control processes started */
	unsigned		 ctl_followers;	/* "log -f" clients */
	struct gw_job		 jobs[GW_MAX_CLIENTS];
	/* Wired by gw_run, so that the modules below call no module above
	 * them: an IPC_CTL_* message from the control process, and each
	 * audit line written. */
	void			(*on_ctl_msg)(struct gw *, const struct ipc_hdr *,
				    void *, size_t, int *, size_t);
	void			(*on_audit_line)(struct gw *, const char *);
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
	/* Active/standby pair (parent_ha.c): gateway.ha as read at start,
	 * the role keepalived last gave (enum gw_ha_role) and since when. */
	bool			 ha_on;
	int			 ha_role;
	time_t			 ha_since;
	struct ha_dup		*ha_dup;	/* split-brain watch, or NULL */
	/* Replication to and from the other box (parent_harepl.c). */
	int			 hafd;		/* gateway.ha.listen, or -1 */
	uint64_t		 ha_queued, ha_dropped;	/* to the sender */
	uint64_t		 ha_received, ha_refused, ha_unknown;
	time_t			 started;
	time_t			 last_reload;
	unsigned		 reloads, reload_failures;
	struct {		/* config_print of cfg, for children's memfds */
		const struct moat_config *of;	/* printed from, */
		unsigned	 reloads;	/* at this many reloads */
		char		*text;
		size_t		 len;
	}			 cfgtext;
	uint64_t		 set_adds, set_refused;
	struct promises		*promises;	/* parent_promise.c */
	struct gw_dns_frozen {		/* narrowed at gen, sorted by */
		char		*sandbox;	/* name, until dnsd acks */
		uint32_t	 gen;		/* the newest gen */
	}			*dns_frozen;
	size_t			 ndns_frozen;
	uint32_t		 dns_gen;	/* dnsd reconfigurations sent */
	struct gw_secret_id	*secret_ids;	/* as the proxy workers have */
	size_t			 nsecret_ids;	/* their values (NULL: none) */
	struct gw_dnsdrop {		/* dnsd's queries over the rate */
		char		 sandbox[IPC_NAME_LEN];
		uint64_t	 count;
	}			*dnsdrops;
	size_t			 ndnsdrops;
	struct budget_set	 budgets;	/* per secret, kept across reloads */
	int			 regfd;		/* registration, listening, or -1 */
	struct gw_hoststat {		/* per KVM host, kept across reloads */
		char		 name[IPC_NAME_LEN];
		time_t		 last_seen;	/* last authenticated request */
		uint64_t	 refusals;
	}			*hoststats;
	size_t			 nhoststats;
	uint64_t		 reg_unknown;	/* connections with unknown keys */
	struct metrics		*metrics;	/* parent_metrics.c */
	int			 metricsfd;	/* metrics.listen, or -1 */
	time_t			 metrics_due;	/* next rendering */
	time_t			 metrics_sent;	/* to the metrics process */
	double			 reload_ms;	/* the last reload took */
	struct seen_set		 seen_refused;	/* ctl refused (parent_refused.c) */
	struct seen_set		 seen_names;	/* ctl names */
	struct gw_grant		*grants;	/* parent_grant.c */
	size_t			 ngrants;
	struct gw_egress	*egress;	/* parent_egress.c */
	size_t			 negress;
	int64_t			 egress_window;	/* index of the current one */
	uint64_t		 egress_next_ms;	/* next read, gw_mono_ms() */
	time_t			 egress_saved;
	bool			 egress_loaded, egress_dirty, egress_resync;
	bool			 egress_policy;	/* the policy has budget_spent */
	bool			 quit;
};

/* parent.c */
/* parent_budget.c: answer the proxy's IPC_BUDGET_REQ on fd. */
void	gw_budget_answer(struct gw *, int fd, uint32_t id,
	    const struct ipc_budget_req *);
time_t	gw_budget_now(const struct gw *);


int	gw_run(struct gw_opts *);
int	gw_sealed_memfd(const char *name, const char *text, size_t len);

/* parent_egress.c: egress budgets.  Around every policy change (cur the
 * configuration in force, cfg the one applied), once a second, and when
 * gatewayd stops. */
void	egress_before_apply(struct gw *, const struct moat_config *cur);
void	egress_after_apply(struct gw *, const struct moat_config *cfg);
void	egress_tick(struct gw *);
/* The other box's total for a sandbox (replication): the larger counts. */
void	egress_merge(struct gw *, const struct ipc_ha_spent *);
void	egress_snapshot(struct gw *);
int	egress_timeout(const struct gw *, int timeout);	/* ms, -1 */
void	egress_stop(struct gw *);
/* Sandbox i of gw->cfg's budget, or NULL if it has none to show. */
const struct gw_egress *egress_of(const struct gw *, size_t i);

/* parent_metrics.c */
int	metrics_listen(struct gw *);	/* bind gateway.metrics.listen */
void	metrics_tick(struct gw *, time_t now);
int	metrics_next_timeout(const struct gw *, time_t now);	/* ms, -1 */
char	*metrics_render(struct gw *, size_t *len);
/* A reload: bind a new or moved metrics.listen before the policy goes in
 * (-1 and err: refused), let go of it if the reload is refused after
 * all, and put it and metrics.allow to use once the new config is in. */
int	metrics_reload_check(struct gw *, const struct moat_config *,
	    char *err, size_t errlen);
void	metrics_reload_abort(void);
void	metrics_reload(struct gw *, const struct moat_config *old);
/* A label value of our own text, escaped as the exposition format asks. */
void	metrics_lvalue(FILE *, const char *);

/* parent_reload.c */
int	gw_reload(struct gw *, char **errors);	/* 0 ok; errors malloc'ed */
/* gw_reload as a transaction's check (lib/cfgtxn.h), arg the gw: every
 * verb that writes the configuration keeps its files only if the new
 * configuration loads and applies. */
int	gw_reload_check(void *gw, const char *conf_path, char **errors);
void	gw_log_warnings(const struct moat_config *, const struct moat_errors *);

/* parent_ha.c: the role of a box in an active/standby pair. */
enum gw_ha_role { HA_UNKNOWN, HA_MASTER, HA_BACKUP, HA_FAULT };
int	ha_start(struct gw *, char *err, size_t errlen);
void	ha_stop(struct gw *);
void	ha_dup_start(struct gw *);	/* parent_ha_dup.c */
void	ha_dup_stop(struct gw *);
enum { HA_DUP_NONE = 0, HA_DUP_UNCONFIRMED, HA_DUP_CONFIRMED };
int	ha_dup_state(const struct gw *, char *mac, size_t, time_t *first);
int	ha_dup_timeout(const struct gw *, int timeout);	/* ms, -1 */
void	ha_dup_tick(struct gw *);
/* What the ha-arp process watches, or NULL: no watch. */
const struct ha_arp_watch *ha_dup_watch(const struct gw *);
gw_dispatch_fn ha_arp_dispatch;	/* its IPC_HA_ARP */
void	ctl_ha(struct ctl_req *);	/* ha master|backup|fault */
void	ha_status(struct ctl_req *);
int	ha_gate_again(struct gw *);	/* the gate as the role wants it */
/* parent_harepl.c: replication between the boxes of a pair. */
int	harepl_listen(struct gw *);	/* bind gateway.ha.listen */
int	harepl_pem_read(const struct gw *, struct reg_pem *);
void	harepl_forward(struct gw *, int type, const void *, size_t);
/* The same whatever this box's role: an operator's grants. */
void	harepl_forward_any(struct gw *, int type, const void *, size_t);
/* The whole state to the other box (harepl.h), while master. */
void	harepl_snapshot(struct gw *);
void	harepl_status(struct ctl_req *);
gw_dispatch_fn harepl_recv_dispatch, harepl_send_dispatch;
void	ha_metrics(FILE *, const struct gw *);

#endif
