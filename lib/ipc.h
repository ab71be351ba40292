/*
 * ipc.h -- typed, size-checked messages between gatewayd and its children.
 *
 * Transport: a SOCK_SEQPACKET socketpair, so one send is one message and
 * framing cannot drift.  Every message is a struct ipc_hdr followed by
 * exactly hdr.len bytes of payload.  ipc_recv() checks the total size, the
 * type and the payload's shape against one table; anything wrong is a
 * protocol violation, which is fatal to the receiver:
 * the caller logs it and exits (or, in gatewayd's parent, kills the child).
 */
#ifndef MOAT_IPC_H
#define MOAT_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "admit.h"
#include "ranges.h"

#define IPC_MAX_PAYLOAD		16384	/* a control request: 8 KiB line + body */
#define IPC_SET_MAX_ADDRS	64
#define IPC_NAME_LEN		33	/* sandbox names are at most 32 */
/* A set-add asking for longer is a protocol violation (dnsd caps TTLs). */
#define IPC_SET_TIMEOUT_MAX_MS	ADMIT_SET_TIMEOUT_MAX_MS

enum ipc_type {
	IPC_SET_ADD = 1,	/* dnsd -> parent: open addresses for a sandbox */
	IPC_SET_ACK,		/* parent -> dnsd: result of an IPC_SET_ADD */
	IPC_AUDIT,		/* child -> parent: audit events, JSON objects */
	IPC_RELOAD,		/* dnsd's own parent -> dnsd: re-read its
				 * file (dnsd run without gatewayd) */
	IPC_SIGN_REQ,		/* proxy -> signer: a leaf certificate, please */
	IPC_SIGN_CERT,		/* signer -> proxy: the leaf and the CA, DER */
	IPC_CONF_SECRET,	/* parent -> proxy: one secret's value */
	IPC_DNS_DROPPED,	/* dnsd -> parent: queries over a sandbox's rate */
	IPC_CTL_REQ,		/* control -> parent: one client's parsed request */
	IPC_CTL_REPLY,		/* parent -> control: reply text for a request */
	IPC_CTL_LOG,		/* parent -> control: an audit line for followers */
	IPC_CTL_GONE,		/* control -> parent: a "log -f" client left */
	IPC_BUDGET_REQ,		/* proxy -> parent: charge a request to budgets */
	IPC_BUDGET_ACK,		/* parent -> proxy: charged, or which is spent */
	IPC_REG_REQ,		/* registration -> parent: a KVM host's request */
	IPC_REG_REPLY,		/* parent -> registration: its answer */
	IPC_CONF,		/* parent -> dnsd, proxy: a new configuration */
	IPC_CONF_ACK,		/* dnsd -> parent: taken, or not */
	IPC_METRICS,		/* parent -> metrics: the latest rendering,
				 * a sealed memfd attached, no payload */
	IPC_DNS_NAME,		/* dnsd -> parent: a name refused or resolved */
	IPC_CONF_ALLOW,		/* parent -> dnsd, proxy: one sandbox's new
				 * allow list (a grant), nothing else */
	IPC_CONF_CHANGED,	/* parent -> proxy: what changed, before an
				 * IPC_CONF */
	IPC_HA_SPENT,		/* parent <-> replication: a sandbox's egress
				 * total this window (gateway.ha.peer) */
	IPC_HA_ARP,		/* ha-arp -> parent: one ARP reply for the
				 * pair's shared uplink address */
	IPC_HA_PROBE,		/* parent -> ha-arp: send one ARP probe of it */
	IPC_HA_FLUSH,		/* parent <-> replication: empty a sandbox's
				 * allowlist sets (they narrowed) */
	IPC_HA_SNAP,		/* ha-send -> parent: connected, send the
				 * whole state (no payload) */
	IPC_HA_GRANT,		/* parent <-> replication: a grant for a
				 * while made, or ended early */
	IPC_WEB_REQ,		/* web -> parent: a login link or one
				 * session's control request */
	IPC_WEB_REPLY,		/* parent -> web: its answer, in chunks */
	IPC_HA_QUARANTINE,	/* parent <-> replication: a sandbox
				 * quarantined, or its quarantine cleared */
	IPC_PROXY_TLS,		/* proxy -> parent: its TLS counters */
	IPC_TYPE_MAX
};

struct ipc_hdr {
	uint16_t	type;
	uint16_t	reserved;	/* must be 0 */
	uint32_t	len;		/* payload bytes after the header */
	uint32_t	id;		/* request id, echoed in the reply */
};

/* What to open for the addresses (admit_name_ports): plain, the
 * sandbox's allow_ports (set allow_<sandbox>); and each of nports ports
 * (set allowp_<sandbox>).  At least one of the two. */
#define IPC_SET_MAX_PORTS	MOAT_NAME_PORTS_MAX
struct ipc_set_add {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[3];
	uint32_t	timeout_ms;	/* at most IPC_SET_TIMEOUT_MAX_MS */
	uint32_t	naddr;		/* 1 .. IPC_SET_MAX_ADDRS */
	uint8_t		plain;		/* 0 or 1 */
	uint8_t		nports;		/* 0 .. IPC_SET_MAX_PORTS */
	uint8_t		pad2[2];
	uint32_t	gen;		/* the IPC_CONF or IPC_CONF_ALLOW whose
					 * allow list judged the name (0: the
					 * one dnsd started with) */
	struct moat_port ports[IPC_SET_MAX_PORTS];	/* tcp or udp, 1.. */
	struct moat_addr addr[];	/* naddr entries */
};

/* What a sandbox's guest sent in egress budget window `window` (its
 * index: seconds since the epoch / the window's length), as the master
 * counted it; the other box keeps the larger of its own and this. */
struct ipc_ha_spent {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[7];
	int64_t		window;
	uint64_t	bytes;
};

/*
 * The split-brain watch (gatewayd/ha_arp/ha_arp.c, gatewayd/parent/ha_dup.c).  The
 * parent asks for each probe of the shared uplink address (IPC_HA_PROBE:
 * broadcast, or unicast to one MAC to confirm an answer); the ha-arp
 * process reads the uplink's ARP and sends one IPC_HA_ARP per reply that
 * claims the address.  REPLY: addressed to this box's uplink MAC, as an
 * answer to its probe is; OTHER: any other reply claiming the address
 * (broadcast, or to someone else), which the parent never counts.
 */
enum ipc_ha_arp_kind { IPC_HA_ARP_REPLY = 1, IPC_HA_ARP_OTHER,
	IPC_HA_ARP_KIND_MAX };
struct ipc_ha_arp {
	uint8_t		mac[6];		/* the sender's hardware address */
	uint8_t		ip[4];		/* its protocol address */
	uint8_t		kind;		/* enum ipc_ha_arp_kind */
	uint8_t		pad;		/* 0 */
};

struct ipc_ha_probe {
	uint8_t		dst[6];		/* ff:ff:ff:ff:ff:ff, or one MAC */
	uint8_t		pad[2];		/* 0 */
};

/* A sandbox's allowlist sets were emptied on the master (its list
 * narrowed: a grant ended, unallow, a reload), or a snapshot of them
 * begins: the other box empties its own. */
struct ipc_ha_flush {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		whole;	/* 1: the sandbox's whole state follows (its
				 * grants from the peer go too); else 0 */
};

/* A grant for a while of entry ("NAME" or "NAME:PORTS", as ctl allow
 * records it) to a sandbox, secs more seconds from now; secs 0: it was
 * taken back (ctl unallow). */
#define IPC_HA_ENTRY_LEN	384
#define IPC_HA_GRANT_MAX_S	(366u * 86400)
struct ipc_ha_grant {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[3];
	uint32_t	secs;		/* 0 .. IPC_HA_GRANT_MAX_S */
	char		entry[IPC_HA_ENTRY_LEN];	/* NUL-terminated */
};

/* A sandbox quarantined on one box (its guest reported NOT CONTAINED),
 * or that quarantine cleared there (on 0). */
struct ipc_ha_quarantine {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		on;		/* 1 quarantined, 0 cleared */
};

struct ipc_set_ack {
	int32_t		status;		/* >= 0 addresses added, -1 refused */
};

/*
 * A change of configuration: the IPC_CONF family.  The parent alone
 * decides what changed (gatewayd/parent/reload.c compares the old configuration
 * with the new once) and tells each child what that means for it:
 *
 *   IPC_CONF_SECRET   the value of each secret that is new or whose file
 *                     changed (and every value at a proxy's start);
 *   IPC_CONF_CHANGED  the names of the sandboxes whose settings changed
 *                     and of the secrets redefined, removed or given a new
 *                     value: the connections of those the proxy cuts;
 *   IPC_CONF          the new configuration itself, attached (SCM_RIGHTS)
 *                     as one sealed memfd of the parent's validated,
 *                     normalised text, and whether to take it in place or
 *                     drain; the values and names sent just before it
 *                     belong to it;
 *   IPC_CONF_ALLOW    a grant: one sandbox's new allow list, nothing else,
 *                     taken without a configuration;
 *   IPC_CONF_ACK      dnsd's answer to IPC_CONF and IPC_CONF_ALLOW: the
 *                     same gen, status 0 taken, -1 not (still on the old
 *                     configuration: the parent restarts it).
 *
 * dnsd always takes a configuration in place.  A proxy worker takes it in
 * place (IPC_CONF_KEEP) when only sandboxes and secrets changed; else it
 * cuts what the new one refuses and drains (IPC_CONF_DRAIN, sent also to
 * workers already draining).  IPC_CONF to a proxy without a memfd only
 * drains.
 */
enum ipc_conf_how { IPC_CONF_KEEP = 0, IPC_CONF_DRAIN, IPC_CONF_HOW_MAX };
#define IPC_CONF_BASIS		0x01	/* more than sandboxes and secrets */
#define IPC_CONF_SECRETS	0x02	/* a secret came, went, was redefined
					 * or has a new value */
struct ipc_conf {
	uint32_t	gen;		/* >= 1, echoed in dnsd's ack */
	uint8_t		how;		/* enum ipc_conf_how */
	uint8_t		flags;		/* IPC_CONF_BASIS | IPC_CONF_SECRETS */
	uint8_t		pad[2];		/* 0 */
};

struct ipc_conf_ack {
	uint32_t	gen;
	int32_t		status;		/* 0 or -1 */
};

/* names: len bytes, each a sandbox's or a secret's name, NUL-terminated,
 * printable, shorter than IPC_NAME_LEN; as many messages as it takes. */
enum ipc_conf_kind { IPC_CHANGED_SANDBOX = 0, IPC_CHANGED_SECRET,
	IPC_CHANGED_MAX };
struct ipc_conf_changed {
	uint8_t		kind;		/* enum ipc_conf_kind */
	uint8_t		pad[3];		/* 0 */
	uint32_t	len;		/* bytes of names, >= 1 */
	char		names[];
};

/* names: len bytes, each name or "*.name" NUL-terminated, printable. */
#define IPC_CONF_ALLOW_MAX	1024	/* names; more go as IPC_CONF */
struct ipc_conf_allow {
	uint32_t	gen;		/* >= 1, echoed in dnsd's ack */
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[3];
	uint32_t	len;		/* bytes of names */
	char		names[];
};

/*
 * What a sandbox asked dnsd for, for `gatewayd ctl refused` and `ctl
 * names`: one message per name refused or resolved, sent at most once a
 * second per name (count: the queries since the last) and within a rate
 * for all names together, so that a guest cannot make dnsd flood its
 * parent.  reason: for REFUSED, enum ipc_dns_why.
 */
enum ipc_dns_name_kind { IPC_DNS_REFUSED = 0, IPC_DNS_RESOLVED };
enum ipc_dns_why { IPC_DNS_WHY_NONE = 0, IPC_DNS_WHY_LIST, IPC_DNS_WHY_EGRESS,
	IPC_DNS_WHY_MAX };
#define IPC_DNS_NAME_LEN	256
struct ipc_dns_name {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		kind;		/* enum ipc_dns_name_kind */
	uint8_t		reason;		/* enum ipc_dns_why */
	uint8_t		pad;
	uint32_t	count;		/* >= 1 */
	char		name[IPC_DNS_NAME_LEN];	/* printable, NUL-terminated */
};

#define IPC_HOST_LEN		254	/* a DNS name or an address literal */
#define IPC_SIGN_MAX_KEY	1024	/* DER SubjectPublicKeyInfo */

struct ipc_sign_req {
	char		host[IPC_HOST_LEN];	/* NUL-terminated */
	uint16_t	keylen;
	uint8_t		key[];		/* the leaf's public key, DER */
};

struct ipc_sign_cert {
	int32_t		status;		/* 0 signed, -1 refused */
	uint16_t	leaflen;
	uint16_t	calen;
	uint8_t		der[];		/* leaf then CA certificate, DER */
};

#define IPC_SECRET_MAX		4096	/* SECRET_FILE_MAX */

/* The parent sends one per configured secret, in the configuration's
 * order, before the proxy serves anything; and before an IPC_CONF, one per
 * secret that is new or whose file changed. */
struct ipc_conf_secret {
	char		name[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[3];
	uint32_t	len;			/* 1 .. IPC_SECRET_MAX */
	char		value[];
};

/* Sent at most once a second per sandbox, with the count since the last. */
struct ipc_dns_dropped {
	char		sandbox[IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[7];
	uint64_t	count;		/* >= 1 */
};

/*
 * The control protocol, parsed by the unprivileged control process and
 * sent to the parent as one IPC_CTL_REQ per request.  The header carries
 * the client's SO_PEERCRED; the parent re-reads them from the client's
 * connection, which comes attached (SCM_RIGHTS) as the first descriptor,
 * followed by nfds descriptors the client itself attached.  Then argc
 * NUL-terminated words (argv[0] is the verb's name, "--json" removed),
 * then bodylen bytes of body, NUL-terminated ("secret set" only).
 */
enum ipc_ctl_verb {
	CTL_STATUS = 1, CTL_SANDBOXES, CTL_LIST, CTL_RELOAD, CTL_COUNTERS,
	CTL_LOG, CTL_CREATE, CTL_START, CTL_STOP, CTL_DESTROY, CTL_SECRET,
	CTL_CONSOLE, CTL_HOSTS, CTL_REFUSED, CTL_NAMES, CTL_ALLOW, CTL_UNALLOW,
	CTL_HA, CTL_GRANTS, CTL_WEB_LOGIN, CTL_WEB_SESSIONS,
	CTL_CLEAR_QUARANTINE,
	CTL_VERB_MAX
};
#define IPC_CTL_MAX_ARGS	64
#define IPC_CTL_MAX_FDS		8	/* a client may attach this many */

struct ipc_ctl_req {
	uint32_t	uid;
	uint32_t	gid;
	int32_t		pid;
	uint8_t		verb;		/* enum ipc_ctl_verb */
	uint8_t		json;		/* 0 or 1 */
	uint8_t		nfds;		/* the client's, after its connection */
	uint8_t		pad;
	uint16_t	argc;		/* 1 .. IPC_CTL_MAX_ARGS */
	uint16_t	bodylen;	/* 0, or the body with its NUL */
	char		data[];
};

/* One chunk of a reply.  MORE: more follows; END: the last, close the
 * client; FOLLOW: the last, then keep the client for IPC_CTL_LOG lines.
 * At most one descriptor may come attached, for the client. */
enum ipc_ctl_end { IPC_CTL_MORE = 0, IPC_CTL_END, IPC_CTL_FOLLOW };
struct ipc_ctl_reply {
	uint8_t		end;		/* enum ipc_ctl_end */
	uint8_t		pad[3];
	char		text[];		/* the rest of the payload, no NUL */
};

/*
 * The web console (moat-web) holds no rights of its own.  It sends the
 * parent a login link's token (IPC_WEB_LOGIN) or a session's secret with
 * one control request in the same shape as IPC_CTL_REQ (IPC_WEB_CTL,
 * credentials and descriptors zero: the parent knows the session's user)
 * and the CSRF token the page sent.  from is the browser's address, for
 * the audit.  The answer is IPC_WEB_REPLY chunks, shaped as
 * IPC_CTL_REPLY's.
 */
enum ipc_web_kind { IPC_WEB_LOGIN = 1, IPC_WEB_CTL, IPC_WEB_LOGOUT,
	IPC_WEB_KIND_MAX };
#define IPC_WEB_TOKEN_LEN	65	/* 64 hex digits and a NUL */
#define IPC_WEB_FROM_LEN	64
struct ipc_web_req {
	uint8_t		kind;		/* enum ipc_web_kind */
	uint8_t		pad[3];
	char		token[IPC_WEB_TOKEN_LEN];	/* NUL-terminated */
	char		csrf[IPC_WEB_TOKEN_LEN];	/* NUL-terminated */
	char		from[IPC_WEB_FROM_LEN];		/* NUL-terminated */
	uint8_t		pad2[2];
	struct ipc_ctl_req req;		/* IPC_WEB_CTL only */
};
#define IPC_WEB_REQ_HEAD	offsetof(struct ipc_web_req, req)

/* The verb's name on the wire, or NULL. */
const char *ipc_ctl_verb_name(int verb);
/* The verb for a name, or 0. */
int	ipc_ctl_verb(const char *name);

/* One request that carries the placeholders of secrets with a budget:
 * the parent charges every named secret, or none if any is spent. */
#define IPC_BUDGET_MAX		8
struct ipc_budget_req {
	uint32_t	nsecret;		/* 1 .. IPC_BUDGET_MAX */
	char		secret[IPC_BUDGET_MAX][IPC_NAME_LEN];	/* NUL-terminated */
	uint8_t		pad[4];
};

/* A proxy worker's TLS counters since it started, sent once a second
 * when they moved.  pid tells one worker process from the next. */
struct ipc_proxy_tls {
	uint64_t	resumed;		/* upstream handshakes resumed */
	uint64_t	full;			/* upstream handshakes in full */
	uint64_t	conns;			/* TLS sides set up, both ways */
	uint64_t	ktls_send;		/* of them, sending with kernel TLS */
	uint64_t	ktls_recv;		/* receiving with it */
	uint32_t	pid;
	uint32_t	ktls_kernel;		/* 1: the kernel has TLS */
};

struct ipc_budget_ack {
	int32_t		status;		/* 0 charged, 1 a budget is spent */
	uint32_t	retry_after;	/* seconds, 1 .. 86400 when spent */
	char		secret[IPC_NAME_LEN];	/* the spent one, or "" */
	char		window[8];	/* "minute" or "day", or "" */
	uint8_t		pad[3];
};

/*
 * The registration endpoint (gatewayd/register/register.c): the unprivileged
 * registration process does the TLS handshake with a KVM host, parses its
 * request lines and sends one IPC_REG_REQ per line, stamped with the
 * SHA-256 of the peer's public key; the parent finds the host by that key
 * in its own configuration, decides, applies and answers IPC_REG_REPLY.
 * HELLO comes first on every connection (the parent says whether it knows
 * the key); text is the allow list (REGISTER) or the host's full list of
 * names (SYNC), comma-separated.
 */
enum ipc_reg_verb {
	REG_HELLO = 1, REG_REGISTER, REG_REMOVE, REG_SYNC, REG_LIST,
	REG_VERB_MAX
};
#define IPC_REG_TEXT_MAX	2048	/* with its NUL; a line is shorter */
#define IPC_REG_SECRETS_LEN	256

struct ipc_reg_req {
	uint8_t		key[32];	/* SHA-256 of the peer's SPKI */
	uint8_t		verb;		/* enum ipc_reg_verb */
	uint8_t		pad[3];		/* 0 */
	char		name[IPC_NAME_LEN];	/* each field NUL-terminated, */
	char		address[16];		/* "" where the verb has none */
	char		mac[18];
	char		egress[12];
	char		secrets[IPC_REG_SECRETS_LEN];	/* NAME,NAME or "" */
	uint8_t		pad2[3];	/* 0 */
	char		text[];		/* 1 .. IPC_REG_TEXT_MAX, one string */
};

/* status 0: "ok", text the body lines before it (list); 1: refused, text
 * the reason.  Printable text and newlines, no NUL. */
struct ipc_reg_reply {
	int32_t		status;
	char		text[];
};

/* An IPC_AUDIT payload is one or more JSON objects of printable ASCII, a
 * line each (separated by a newline, none after the last), without NUL,
 * at most IPC_MAX_PAYLOAD bytes in all. */

/* Create the pair (SOCK_SEQPACKET, close-on-exec on both ends). */
int	ipc_pair(int fds[2]);
/* Send one message.  0 or -1 (errno set). */
int	ipc_send(int fd, enum ipc_type, uint32_t id, const void *payload,
	    size_t len);
/* ipc_send with nfds descriptors attached (SCM_RIGHTS); they stay open
 * here.  nfds <= IPC_MAX_FDS. */
#define IPC_MAX_FDS		(IPC_CTL_MAX_FDS + 1)
int	ipc_send_fds(int fd, enum ipc_type, uint32_t id, const void *payload,
	    size_t len, const int *fds, size_t nfds);
/* ipc_recv that also takes up to maxfds descriptors (close-on-exec) into
 * fds, their count in *nfds.  More than maxfds is a protocol violation;
 * on any failure no descriptor is left open. */
ssize_t	ipc_recv_fds(int fd, struct ipc_hdr *hdr, void *buf, size_t buflen,
	    int *fds, size_t maxfds, size_t *nfds, char *err, size_t errlen);
/* Receive one message into buf (at least IPC_MAX_PAYLOAD bytes).
 * Returns the payload length, 0 on orderly EOF with *hdr zeroed, -1 on
 * a socket error (errno) and -2 on a protocol violation (message in err). */
ssize_t	ipc_recv(int fd, struct ipc_hdr *hdr, void *buf, size_t buflen,
	    char *err, size_t errlen);
/* The shape check ipc_recv applies; exposed for tests and fuzzing.
 * 0 valid, -1 invalid (message in err). */
int	ipc_check(const struct ipc_hdr *, const void *payload, size_t len,
	    char *err, size_t errlen);
const char *ipc_type_name(int type);

#endif
