/*
 * config.h -- the moat configuration model.
 *
 * config_load() reads moat.conf and the sandboxes.d/NAME.conf beside it with
 * libconfig, validates everything, and yields one plain struct.  Errors
 * are collected as "file:line: what was expected" strings; a config with
 * any error yields no struct at all, so nothing can be half-applied.
 */
#ifndef MOAT_CONFIG_H
#define MOAT_CONFIG_H

#include <sys/types.h>

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ranges.h"

#define MOAT_CONF_DEFAULT	"/etc/moat/moat.conf"
#define MOAT_MAX_SANDBOXES	65536
#define MOAT_PROXY_WORKERS_MAX	16	/* gateway.proxy.workers */

enum moat_egress { EGRESS_OPEN = 0, EGRESS_ALLOWLIST, EGRESS_NONE };
/* gateway.ipv6.uplink_mode: how guests' IPv6 leaves by the uplink. */
enum moat_v6_uplink {
	V6_UPLINK_NAT66 = 0,	/* masqueraded to the uplink's own address */
	V6_UPLINK_ROUTED,	/* forwarded as is (a delegated global /64) */
};
/* gateway.host_access: which of the host's own users may open connections
 * to guests.  Replies to guests' own connections are never affected. */
enum moat_host_access {
	HOST_ACCESS_OWNERS = 0,	/* root, and each owner to their own guests */
	HOST_ACCESS_ROOT,	/* root only */
	HOST_ACCESS_ALL,	/* every local user (no check) */
};

struct moat_where {		/* where a setting came from, for messages */
	const char	*file;	/* points into config->files[] */
	int		 line;
};

struct moat_strlist {
	char	**v;
	size_t	  n;
};

struct moat_exception {
	struct moat_prefix to;
	int		 proto;		/* IPPROTO_TCP, IPPROTO_UDP, 0 = any */
	uint16_t	*ports;		/* empty = every port */
	size_t		 nports;
	struct moat_strlist sandboxes;	/* names it applies to */
	int		*sandbox_lines;	/* line of each name, for messages */
	bool		 sandboxes_given; /* else: every open sandbox */
	struct moat_where where;
};

/* One entry of a sandbox's allow_ports: "tcp/443". */
struct moat_port {
	int		 proto;		/* IPPROTO_TCP or IPPROTO_UDP */
	uint16_t	 port;
};

struct moat_secret {
	char		*name;
	char		*file;		/* the value is read by gatewayd only */
	struct moat_strlist hosts;	/* exact host names it is bound to */
	char		*header;	/* e.g. "Authorization" */
	char		*placeholder;
	char		*owner;		/* optional */
	struct moat_strlist shared_with; /* users who may attach it */
	struct moat_strlist requests;	/* rules "METHOD /path" (pathmatch.h) */
	bool		 has_requests;	/* else any request may carry it */
	long		 per_minute, per_day;	/* budgets, 0 = none */
	bool		 dropin;	/* from secrets.d/NAME.conf */
	struct moat_where where;
};

/* Per-user limits on a team-shared host; -1 means no limit.  The entry
 * for user "*" applies to every user without one of their own. */
struct moat_quota {
	char		*user;
	long		 sandboxes, cpus, memory_mb, disk_gb;
	struct moat_where where;
};

struct moat_sandbox {
	char		*name;
	uint8_t		 mac[6];
	struct moat_addr address;	/* IPv4, inside gateway.network */
	char		 tap[IFNAMSIZ];
	enum moat_egress egress;
	struct moat_strlist allow;	/* lower case, no trailing dot; "*.x" */
	struct moat_strlist secrets;	/* names of config->secrets */
	char		*owner;		/* optional */
	bool		 inspect;
	struct moat_strlist bypass;	/* names not intercepted when inspect */
	long		 dns_rate;	/* queries/s to dnsd; -1: the gateway's */
	long		 dns_burst;	/* -1: twice the rate */
	struct moat_port *allow_ports;	/* what an allowlisted address opens;
					 * default tcp/80, tcp/443 */
	size_t		 nallow_ports;
	long long	 egress_budget;	/* egress_bytes_per_day: bytes, 0 =
					 * "unlimited", -1 = the gateway's */
	char		 trunk[IFNAMSIZ];	/* separate box: the interface its
					 * KVM host's guests arrive on, or "";
					 * its packets must arrive on it */
	char		*registered_by;	/* the host whose registration wrote
					 * its drop-in (MOAT_REG_MARK), or NULL */
	bool		 ipv6;		/* default true; false keeps it v4-only
					 * whatever gateway.ipv6 says */
	unsigned	 reverify_interval;	/* seconds between the guest's
					 * own re-checks; 0: first boot only */
	bool		 quarantine_on_breach;	/* a guest's NOT CONTAINED
					 * moves it to egress "none" */
	bool		 canary;	/* gatewayd's own, from gateway.canary:
					 * never printed among the sandboxes */
	struct moat_where where;
};

/* A guest re-runs containment-check this often unless told otherwise:
 * six hours.  Shorter than REVERIFY_MIN is refused (a scan takes time). */
#define MOAT_REVERIFY_DEFAULT	21600
#define MOAT_REVERIFY_MIN	10

/* The first line of a drop-in that gatewayd wrote for a KVM host's
 * registration: MOAT_REG_MARK "HOST\n".  The loader records HOST as the
 * sandbox's registered_by; nothing else reads the mark. */
#define MOAT_REG_MARK	"# registered by host "

struct moat_gateway {
	char		 uplink[IFNAMSIZ];
	struct moat_prefix network;	/* IPv4 sandbox network */
	struct moat_addr address;	/* first host address of network */
	char		 bridge[IFNAMSIZ];
	struct moat_addr *upstream;	/* dns.upstream */
	size_t		 nupstream;
	uint16_t	 proxy_port;
	bool		 intercept;
	char		*proxy_upstream_ca;	/* extra CA for upstream TLS, or NULL */
	struct moat_prefix *treat_as_public;
	size_t		 ntreat_as_public;
	struct moat_exception *exceptions;
	size_t		 nexceptions;
	char		*state_dir;	/* default /var/lib/moat */
	uint16_t	 nflog_group;	/* default 77 */
	unsigned	 audit_max_kb;	/* audit file rotated past this */
	long long	 egress_budget;	/* egress_bytes_per_day: the default
					 * per sandbox, in bytes; 0 = none */
	unsigned	 dns_tcp_per_sandbox;	/* TCP clients per source */
	unsigned	 dns_tcp_lifetime;	/* seconds, whatever the traffic */
	unsigned	 proxy_per_sandbox;	/* proxy connections per sandbox */
	unsigned	 proxy_workers;	/* proxy processes; 0: config_proxy_workers */
	char		*admin_group;	/* members manage every sandbox */
	struct moat_strlist member_allow; /* what a member may grant on their
					   own sandboxes (names, "*.x") */
	enum moat_egress member_max_egress; /* the widest a member creates */
	bool		 fast_refusals;	/* lift the kernel's per-host ICMP limit */
	uint32_t	 refusal_rate;	/* global ICMP errors/s kept as a flood guard */
	enum moat_host_access host_access;	/* default HOST_ACCESS_OWNERS */
	long		 dns_rate;	/* dns.rate: per sandbox, 0 = no limit */
	long		 dns_burst;	/* dns.burst; -1: twice the rate */
	long		 dns_cache_size;	/* dns.cache_size, bytes */
	bool		 manage_network; /* gatewayd makes bridge, address, forwarding */
	uid_t		 guest_uid_first, guest_uid_last; /* one uid per guest */
	unsigned	 import_timeout;	/* seconds for one image import */
	char		*reg_listen;	/* registration.listen "ADDR:PORT", or NULL */
	char		*reg_cert, *reg_key;	/* its certificate and key (PEM) */
	struct moat_where reg_where;	/* of listen, for messages */
	char		*metrics_textfile;	/* metrics.textfile, or NULL */
	char		*metrics_listen;	/* metrics.listen "ADDR:PORT", or NULL */
	unsigned	 metrics_interval;	/* seconds between two writes */
	struct moat_prefix *metrics_allow; /* metrics.allow: the scrapers'
					 * addresses and networks; others are
					 * refused (none: any source) */
	size_t		 nmetrics_allow;
	struct moat_where metrics_allow_where;	/* of allow, for messages */
	struct moat_where metrics_where;	/* of listen, for messages */
	char		*web_listen;	/* web.listen "ADDR:PORT", or NULL (off) */
	char		*web_cert, *web_key;	/* web.cert/key (PEM), or NULL:
					 * a certificate of its own */
	struct moat_where web_where;	/* of listen, for messages */
	unsigned	 verify_interval; /* verify.interval: seconds between two
					 * full comparisons of the kernel's
					 * tables with the policy; 0 = none */
	bool		 verify_repair;	/* verify.repair: put moat's own tables
					 * back when they drifted */
	bool		 verify_repair_network; /* verify.repair_network: put
					 * bridge ports' isolation and the
					 * sysctls back too (default false) */
	struct moat_sandbox *canary;	/* gateway.canary while loading; the
					 * loader then appends it to the
					 * sandboxes (config_canary) */
	unsigned	 canary_interval; /* canary.interval: seconds, 0 = only
					 * after commits */
	bool		 ha;	/* ha.enabled: one box of an active/standby pair */
	struct moat_addr ha_uplink_address; /* ha.uplink_address: the guests'
					 * flows are translated to it (snat)
					 * instead of masqueraded; family 0
					 * when not given */
	char		*ha_listen;	/* ha.listen "ADDR:PORT": the peer's replication, or NULL */
	char		*ha_peer;	/* ha.peer "ADDR:PORT": the peer's listen */
	char		*ha_cert, *ha_key;	/* this box's certificate and key (PEM) */
	uint8_t		 ha_peer_key[32];	/* SHA-256 of the peer's SPKI */
	bool		 ha_has_peer_key;
	struct moat_where ha_where;	/* of the ha group, for messages */
	struct moat_where ha_listen_where;
	struct moat_where uplink_where, network_where;	/* for messages */
	bool		 ipv6;		/* gateway.ipv6 given: guests' IPv6 on */
	struct moat_prefix ipv6_network; /* a /64 */
	struct moat_addr ipv6_address;	/* the gateway's: host part ::1 */
	enum moat_v6_uplink ipv6_uplink;
	struct moat_prefix *ipv6_site;	/* ipv6.site_prefixes: refused to guests */
	size_t		 nipv6_site;
	struct moat_where ipv6_where;	/* of ipv6.network, for messages */
};

/* A KVM host that may register sandboxes on a separate gateway box:
 * known only by the SHA-256 of its certificate's public key. */
struct moat_host {
	char		*name;
	uint8_t		 key[32];	/* sha256 of the SubjectPublicKeyInfo */
	struct moat_prefix pool;	/* its sandboxes' addresses */
	char		 trunk[IFNAMSIZ];
	enum moat_egress max_egress;	/* the widest it may register */
	struct moat_strlist secrets;	/* its sandboxes may be bound to */
	struct moat_where where;
};
/* On a KVM host: the separate gateway box provision registers its
 * sandboxes with (box = { address; ca; cert; key; }). */
struct moat_box {
	char		*address;	/* "ADDRESS:PORT", or NULL: no box */
	char		*ca;		/* the box's certificate, or NULL: */
	uint8_t		 pin[32];	/* sha256 of the box's public key */
	bool		 has_pin;
	char		*cert, *key;	/* this host's certificate and key */
	struct moat_prefix pool;	/* where provision picks addresses */
	bool		 has_pool;	/* else all of gateway.network */
	struct moat_where where;
};
/* Far above useradd's subordinate ranges (100000 + 65536 per user). */
#define MOAT_GUEST_UID_FIRST	2100000000u
#define MOAT_GUEST_UID_LAST	2100065535u

struct moat_config {
	char		*path;		/* main file as given */
	char		**files;	/* every file read, for moat_where */
	size_t		 nfiles;
	struct moat_gateway gw;
	struct moat_host *hosts;	/* hosts = ( ... ) */
	size_t		 nhosts;
	struct moat_box	 box;		/* a KVM host's gateway box, or all NULL */
	struct moat_secret *secrets;
	size_t		 nsecrets;
	struct moat_sandbox *sandboxes;
	size_t		 nsandboxes;
	struct moat_quota *quotas;
	size_t		 nquotas;
	struct moat_rangeset *private;	/* private table minus treat_as_public,
					 * plus gateway.network */
};

struct moat_errors {
	char	**msg;			/* "file:line: message" */
	size_t	  n;
	char	**warn;			/* "file:line: warning: message": */
	size_t	  nwarn;		/* the config is still valid */
};

/* Load and validate.  On success returns the model and errs->n == 0; on
 * failure returns NULL and errs holds every problem found.  sandboxes_dir
 * may be NULL for "sandboxes.d beside path"; secrets.d/NAME.conf (one
 * secret per file, written by `gatewayd ctl secret set`) is always read
 * from beside path. */
struct moat_config *config_load(const char *path, const char *sandboxes_dir,
	    struct moat_errors *errs);
/* From now on, config_load also reads each secret's value and refuses one
 * that holds a placeholder (secret_value_placeholder in secretfile.h),
 * naming the secret's file:line.  Only gatewayd turns this on: it reads
 * the values as root anyway; no other program needs to hold one. */
void	config_check_values(bool on);
/* The same, with the main file's text given in memory (NUL-terminated);
 * name is used in messages.  For fuzzing and for tests. */
/*
 * The normalised configuration (config_print's output) gatewayd hands a
 * child on fd: every sandbox inline, nothing on disk read or checked (the
 * parent did that).  name: for messages.  NULL on a read error or an
 * invalid text (errs).
 */
struct moat_config *config_load_normalised(const char *name, int fd,
	    struct moat_errors *);
struct moat_config *config_load_buffer(const char *name, const char *text,
	    const char *sandboxes_dir, struct moat_errors *errs);
void	config_free(struct moat_config *);
/* Only its sandboxes (none left after). */
void	config_free_sandboxes(struct moat_config *);
void	config_errors_free(struct moat_errors *);
void	config_errors_print(FILE *, const struct moat_errors *);
/* The same as text, one error a line; malloc'ed. */
char	*config_errors_text(const struct moat_errors *);
/* Is s one of l's strings? */
bool	config_strlist_has(const struct moat_strlist *, const char *s);
void	config_warnings_print(FILE *, const struct moat_errors *);

/* The DNS query rate and burst that apply to a sandbox: its own if set,
 * else the gateway's; a burst not set is twice the rate. */
void	config_dns_rate(const struct moat_config *, const struct moat_sandbox *,
	    double *qps, double *burst);

/* The egress budget that applies to a sandbox, in bytes a day: its own
 * egress_bytes_per_day if set, else the gateway's; 0 = none. */
long long config_egress_budget(const struct moat_config *,
	    const struct moat_sandbox *);
/* Whether some sandbox has an egress budget (then the policy has its
 * budget set and rules, and gatewayd counts). */
bool	config_any_egress_budget(const struct moat_config *);

/* gateway.proxy.workers, or when not set the online CPUs: at least 2
 * (one worker's crash leaves the others serving), at most
 * MOAT_PROXY_WORKERS_MAX. */
unsigned config_proxy_workers(const struct moat_config *);

/* Write the normalised config in libconfig syntax (one file, sandboxes
 * inline, defaults spelled out).  Loading the output yields the same model. */
void	config_print(FILE *, const struct moat_config *);
/* config_print's text of everything but the sandboxes and the secrets
 * (malloc'ed): two configs whose texts are equal differ at most in
 * those. */
char	*config_text_but_sandboxes_secrets(const struct moat_config *);
/* Do two secrets have the same definition (config_print's text)? */
bool	config_secret_same(const struct moat_secret *,
	    const struct moat_secret *);
/* Do two sandboxes have the same settings (config_print's text of each)? */
bool	config_sandbox_same(const struct moat_sandbox *,
	    const struct moat_sandbox *);
/* One of the host's interfaces, once per IPv4 or IPv6 address it has
 * (net.plen 0: an interface without one). */
struct moat_hostif {
	char		 name[IFNAMSIZ];
	struct moat_addr addr;		/* IPv4 or IPv6, or family 0 */
	struct moat_prefix net;		/* the network addr is on */
	bool		 default_route;	/* the IPv4 default route leaves here */
};
/* The host's interfaces (getifaddrs), each marked if the IPv4 default
 * route leaves through it.  0, or -1 with errno. */
int	config_host_read(struct moat_hostif **, size_t *n);
/* The interface the IPv4 default route (the lowest metric's) leaves
 * through, from /proc/net/route: 0, or -1 if there is none. */
int	config_host_default_if(char *name, size_t len);
/* Check a loaded config against a host's interfaces: gateway.uplink is
 * one of them, and gateway.network overlaps no network on any but the
 * bridge.  Adds "file:line: message" errors to errs; returns how many. */
size_t	config_check_host(const struct moat_config *,
	    const struct moat_hostif *, size_t n, struct moat_errors *errs);

/*
 * A sandbox's IPv6 address: gateway.ipv6.network's 64 bits, then 32 zero
 * bits, then the low 32 bits of its IPv4 address masked to the host part
 * of gateway.network (10.77.0.5 in 10.77.0.0/24 with fd77::/64: fd77::5).
 * False, out untouched, when the sandbox has no IPv6: gateway.ipv6 off,
 * its ipv6 = false, egress "none", or secrets.
 */
bool	config_sandbox_addr6(const struct moat_config *,
	    const struct moat_sandbox *, struct moat_addr *out);

/* A short summary for humans: sandboxes, modes, secrets by name only. */
void	config_summary(FILE *, const struct moat_config *);

/* The canary sandbox gatewayd keeps for itself (gateway.canary), or NULL. */
#define MOAT_CANARY_NAME	"canary"
#define MOAT_CANARY_TAP		"mt-canary"
const struct moat_sandbox *config_canary(const struct moat_config *);
const struct moat_sandbox *config_sandbox_by_name(const struct moat_config *,
	    const char *);
/* The sandbox with IPv4 address a, or with IPv6 address a
 * (config_sandbox_addr6); NULL if none. */
const struct moat_sandbox *config_sandbox_by_addr(const struct moat_config *,
	    const struct moat_addr *);
const struct moat_secret *config_secret_by_name(const struct moat_config *,
	    const char *);
const char *egress_name(enum moat_egress);
const char *host_access_name(enum moat_host_access);
/* The quota for user (their own entry, else "*"), or NULL for none. */
const struct moat_quota *config_quota_for(const struct moat_config *,
	    const char *user);
/* May user attach secret x to a sandbox they own?  (Owner, shared_with,
 * or a secret without owner, which only admins' sandboxes may use.) */
bool	secret_usable_by(const struct moat_secret *, const char *user);
bool	config_username_valid(const char *);

/* Host-name helpers shared by the loader, dnsd and the proxy. */
bool	hostname_valid(const char *);		/* RFC 1123, no wildcard */
bool	hostpattern_valid(const char *);	/* name or "*.name" */
/* An allow entry as the loader takes it: v is normalised in place; false
 * with why set when it is not a host name or "*." and one, or when the
 * wildcard covers a whole top-level domain ("*.com"). */
bool	config_allow_entry(char *v, char *why, size_t whylen);
/*
 * Allow entries with ports of their own: "NAME:PORTS", PORTS being
 * "tcp/22" or "tcp/22,udp/443" (allowentry.c).  Such an entry opens the
 * addresses of the names it covers for exactly those ports, not for the
 * sandbox's allow_ports.  At most MOAT_NAME_PORTS_MAX distinct ports
 * among all of one sandbox's entries.
 */
#define MOAT_NAME_PORTS_MAX	16
/* config_allow_entry, also taking ":PORTS" (normalised: sorted, each
 * once). */
bool	config_allow_entry_ports(char *v, char *why, size_t whylen);
/* A grant's entries as gatewayd sends them (NUL-terminated, back to
 * back), each checked again; -1 and why on a bad one (l left empty). */
int	config_allow_unpack(const char *names, size_t len,
	    struct moat_strlist *l, char *why, size_t whylen);
void	config_strlist_clear(struct moat_strlist *l);
/* The length of an entry's name part (up to ':'). */
size_t	config_allow_namelen(const char *entry);
/* The ports of a normalised entry into out (room for
 * MOAT_NAME_PORTS_MAX); 0 for a plain entry. */
int	config_allow_ports(const char *entry, struct moat_port *out);
/* "tcp/443" (len bytes, not NUL-terminated). */
bool	config_port_parse(const char *s, size_t len, struct moat_port *);
/* "tcp/22,udp/443" (len bytes): sorted, each once, into out (room for
 * MOAT_NAME_PORTS_MAX); the count, or -1 with why set. */
int	config_ports_parse(const char *s, size_t len, struct moat_port *out,
	    char *why, size_t whylen);
/* The normalised text of n ports ("tcp/22,udp/443"). */
void	config_ports_fmt(const struct moat_port *, size_t n, char *buf,
	    size_t len);
/* Has some entry of allow ports of its own?  (Then the sandbox's policy
 * has the set allowp_NAME.) */
bool	config_allow_has_ports(const struct moat_strlist *allow);
/* The distinct ports of allow's entries with ports, sorted, into out
 * (room for MOAT_NAME_PORTS_MAX); -1 when there are more. */
int	config_named_ports(const struct moat_strlist *allow,
	    struct moat_port *out);
/* The names of the baseline list ref ("@NAME", allowlists.c) appended to
 * out (without repeats): NAME.list from allow.d beside confpath, else
 * from config_allow_datadir().  -1 with err set ("no list ...", or
 * "FILE:LINE: why" for a bad line). */
int	config_allow_list(const char *confpath, const char *ref,
	    struct moat_strlist *out, char *err, size_t errlen);
const char *config_allow_datadir(void);
/* Does the allow list l (names and "*.x" patterns) cover name (or, for
 * a pattern, every name it matches)? */
bool	config_allow_covers(const struct moat_strlist *l, const char *name);
/* The same; when false and why is not NULL, why says what is wrong
 * ("wildcard \"*.com\" is too broad: ..."), for every caller's message. */
bool	hostpattern_why(const char *, char *why, size_t len);

#endif
