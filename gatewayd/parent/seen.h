/*
 * seen.h -- what each sandbox was refused, and which names it resolved,
 * in bounded memory: the data behind `gatewayd ctl refused` and
 * `gatewayd ctl names`.
 *
 * A view holds, per sandbox, at most SEEN_PER_SANDBOX entries, one per
 * destination (a name, or an address:port) with a count, the first and
 * the last time it was met, where it was met (dnsd, the kernel, the
 * proxy) and why.  When a sandbox's view is full, the entry met least
 * recently makes room and is counted as dropped.  Views exist only for
 * sandboxes the caller names as configured (seen_prune), and a set of
 * views holds about SEEN_TOTAL entries at most: with many sandboxes each
 * keeps fewer (seen_limit, never under SEEN_PER_SANDBOX_MIN).  Nothing a
 * guest sends can grow the memory past that.
 */
#ifndef GATEWAYD_SEEN_H
#define GATEWAYD_SEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SEEN_PER_SANDBOX	256
#define SEEN_PER_SANDBOX_MIN	16
#define SEEN_TOTAL		65536	/* per set, with many sandboxes */
#define SEEN_WHAT_LEN		264	/* a DNS name, or "host:port" */

enum seen_source { SEEN_DNS = 0, SEEN_KERNEL, SEEN_PROXY, SEEN_NSOURCES };

/* Why, in the operator's words; a fixed vocabulary. */
enum seen_why {
	SEEN_WHY_NONE = 0,	/* resolved, not refused */
	SEEN_WHY_LIST,		/* "not on the allow list" */
	SEEN_WHY_PORT,		/* "port not in allow_ports" */
	SEEN_WHY_EGRESS_NONE,	/* "egress none" */
	SEEN_WHY_PRIVATE,	/* "private address" */
	SEEN_WHY_RULE,		/* "secret request rule" */
	SEEN_WHY_HOST,		/* "the gateway host" */
	SEEN_WHY_GUEST,		/* "another guest" */
	SEEN_WHY_RESOLVER,	/* "a resolver other than the gateway" */
	SEEN_WHY_BUDGET,	/* "egress budget spent" */
	SEEN_WHY_MAX
};

struct seen_entry {
	char		 what[SEEN_WHAT_LEN];
	uint8_t		 source;	/* enum seen_source */
	uint8_t		 why;		/* enum seen_why */
	uint64_t	 count;
	time_t		 first, last;
};

struct seen_view {
	char		 sandbox[33];
	struct seen_entry *e;		/* n used of cap (<= SEEN_PER_SANDBOX) */
	size_t		 n, cap;
	uint64_t	 dropped;	/* entries that made room */
};

/* Views of many sandboxes, sorted by name. */
struct seen_set {
	struct seen_view *v;
	size_t		 n;
	size_t		 per;		/* entries per view; 0: SEEN_PER_SANDBOX */
};

const char *seen_why_str(enum seen_why);
const char *seen_source_str(enum seen_source);
/* Count one more (count >= 1) for what in sandbox's view. */
void	seen_add(struct seen_set *, const char *sandbox, const char *what,
	    enum seen_source, enum seen_why, uint64_t count, time_t now);
struct seen_view *seen_find(struct seen_set *, const char *sandbox);
/* Entries per view for nsandboxes configured: SEEN_TOTAL shared, between
 * SEEN_PER_SANDBOX_MIN and SEEN_PER_SANDBOX; views over it keep their
 * most recent entries. */
void	seen_limit(struct seen_set *, size_t nsandboxes);
size_t	seen_per(const struct seen_set *);
/* Drop the views of sandboxes keep() says are gone. */
void	seen_prune(struct seen_set *, bool (*keep)(void *, const char *),
	    void *arg);
void	seen_clear(struct seen_set *);
/* Bytes held, for the bound's tests and `ctl counters`. */
size_t	seen_bytes(const struct seen_set *);

/*
 * One audit event (a JSON object from nflog or the proxy) as a refusal:
 * the sandbox, what was refused and why.  false if it is not one this
 * view keeps (another event, no sandbox, a reason outside the
 * vocabulary).  Pure: for the unit tests and fuzzing.
 */
bool	seen_parse_audit(const char *json, char *sandbox, size_t sblen,
	    char *what, size_t whatlen, enum seen_source *, enum seen_why *);
/* The value of key in a flat JSON object (string or number), unescaped
 * to printable ASCII; false if absent or too long. */
bool	seen_json_field(const char *json, const char *key, char *out,
	    size_t len);

/*
 * Printing.  A name a guest chose is data: seen_shown() is its one
 * escaped spelling for rows, comments and labels (json_escape's body:
 * printable ASCII, no raw '"', '\' or control character); malloc'ed.
 */
char	*seen_shown(const char *what);
/* what as an allow entry, normalised into out: true only if the config
 * loader takes it as one (config_allow_entry) and it is a plain name
 * (no "*", no "@"). */
bool	seen_allow_name(const char *what, char *out, size_t len);
/* `ctl names --as-allow`: one `allow = [ ... ];` line holding only the
 * names seen_allow_name() takes, sorted, each once; then every other
 * name as an escaped comment line.  malloc'ed. */
char	*seen_as_allow(const char *const *what, size_t n);
/* The length of e->what's destination: a kernel entry's address without
 * its port ("10.77.0.1:22" -> 9, "[2001:db8::1]:22" -> 13); else all. */
size_t	seen_dst_len(const struct seen_entry *e);

#endif
