/*
 * secret.h -- real secret values, and the byte-level work done with them:
 * placeholder -> value in request headers (also inside Basic credentials),
 * value -> placeholder in responses (streaming, across any split), and
 * spotting a placeholder sent where it does not belong (also
 * percent-encoded or JSON-escaped).
 *
 * The transformations are pure over (buffer, length); the values live in
 * memory that is locked, excluded from core dumps and wiped on exit.
 */
#ifndef MOAT_PROXY_SECRET_H
#define MOAT_PROXY_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "secretfile.h"

#define SECRET_MAX_LEN	SECRET_FILE_MAX

struct subst {			/* replace from with to */
	const char	*from;
	size_t		 fromlen;
	const char	*to;
	size_t		 tolen;
};

struct secret {
	const struct moat_secret *cfg;
	char		*value;		/* in the locked arena */
	size_t		 len;
};

struct secrets {
	struct secret	*v;
	size_t		 n;
	uint8_t		*arena;		/* mlock'd, MADV_DONTDUMP */
	size_t		 arenalen;
	struct subst	*redact;	/* value -> placeholder, one per secret */
	size_t		 maxvalue;	/* longest value */
	size_t		 maxph;		/* longest placeholder */
	int		 refs;		/* secrets_hold: a generation */
	struct secrets	*next;		/* every generation, for the exit */
	struct moat_config *retired;	/* freed with it (secrets_retire) */
};

/* Read every cfg->secrets[i].file.  Values may end in one newline (it is
 * dropped); CR, LF or NUL inside, an empty value or one over
 * SECRET_MAX_LEN is refused with a message naming the secret, never the
 * value.  0 or -1 (err filled). */
int	secrets_load(struct secrets *, const struct moat_config *,
	    char *err, size_t errlen);
/* The same, with each value from get (0, or -1 with err filled) instead
 * of its file: under gatewayd the values come over IPC. */
typedef int (*secret_getter)(void *arg, const struct moat_secret *,
	    char *buf, size_t *len, char *err, size_t errlen);
int	secrets_load_from(struct secrets *, const struct moat_config *,
	    secret_getter get, void *arg, char *err, size_t errlen);
void	secrets_wipe(struct secrets *);

/*
 * Generations.  Values and definitions can change while the proxy runs
 * (`gatewayd ctl secret set`, a secret added or edited): the proxy then
 * makes a new generation and goes on.  Every connection whose requests it
 * reads holds the generation it started with, because its scrubber points
 * into that generation's values; a generation is wiped and freed (with
 * the configuration its definitions came from, if retired) when its last
 * holder lets go.  secrets_adopt makes a loaded set the first generation
 * (one reference, the proxy's own).
 */
struct secrets *secrets_adopt(struct secrets *);
struct secrets *secrets_hold(struct secrets *);
void	secrets_release(struct secrets *);
/* At exit: wipe every generation still held. */
void	secrets_wipe_all(void);

/* New values gatewayd sends ahead of a reload, kept by name in locked
 * memory until secrets_rebuild takes them or secrets_unstage wipes them.
 * 0, or -1 if name was already staged or the value is empty or too long. */
int	secrets_stage(const char *name, const char *value, size_t len);
bool	secrets_staged(const char *name);
void	secrets_unstage(void);
/* A generation for cfg's secrets: each one's value as staged for its
 * name, or else as old has it under that name.  NULL (err says which
 * secret) when a secret has neither.  One reference. */
struct secrets *secrets_rebuild(const struct secrets *old,
	    const struct moat_config *cfg, char *err, size_t errlen);
/* g's definitions point into cfg: free cfg with g. */
void	secrets_retire(struct secrets *g, struct moat_config *cfg);

const struct secret *secrets_by_name(const struct secrets *, const char *);

/* Replace every occurrence of each subst's from in src by its to, in one
 * pass over src: what a replacement wrote is never scanned again, so a to
 * that holds another subst's from is sent as it is.  Writes at most cap
 * bytes to dst; returns the length or -1 if it would not fit.  *count (may
 * be NULL) gets the number of replacements. */
ssize_t	subst_all(const char *src, size_t len, const struct subst *, size_t n,
	    char *dst, size_t cap, int *count);
/* Like subst_all, and inside an "Authorization: Basic" style value
 * ("Basic " + base64) the decoded credentials are substituted and
 * re-encoded. */
ssize_t	subst_header(const char *src, size_t len, const struct subst *,
	    size_t n, char *dst, size_t cap, int *count);
/* The same, and hits[i] (n entries) gets how many times subst i was
 * replaced: which secrets a request header actually carries. */
ssize_t	subst_header_hits(const char *src, size_t len, const struct subst *,
	    size_t n, char *dst, size_t cap, int *count, int *hits);

size_t	b64_encode(const uint8_t *in, size_t len, char *out);	/* out: 4*ceil(len/3)+1 */
/* -1 on invalid input; out needs 3*len/4 bytes. */
ssize_t	b64_decode(const char *in, size_t len, uint8_t *out);

/* What a connection's responses are scrubbed of: every secret's raw value
 * and, once the proxy has sent them, the other forms it produced from a
 * value (the base64 of a "user:value" Basic pair), each mapped back to
 * the form the guest sent.  Extra forms are derived from secrets: they
 * are wiped when dropped. */
#define SCRUB_MAX_EXTRA	16
struct scrub {
	struct subst	*s;		/* extras first (the longer forms must
					 * win), then the secrets' values */
	size_t		 n, nextra;
};
/* The values of the secrets sb holds (all, when sb is NULL): only those
 * can have been put on this connection's wire by the proxy, and scrubbing
 * another member's value would let that member rewrite this sandbox's
 * responses by choosing a value that is ordinary text. */
void	scrub_init(struct scrub *, const struct secrets *,
	    const struct moat_sandbox *sb);
void	scrub_free(struct scrub *);
/* Record that "Basic <sent>" went upstream where the guest wrote "Basic
 * <orig>".  0 (added, or already known, or not Basic), -1 when the
 * connection already holds SCRUB_MAX_EXTRA forms. */
int	scrub_add_basic(struct scrub *, const char *sent, size_t sentlen,
	    const char *orig, size_t origlen);

/* Streaming value -> placeholder for a response body.  A tail that could
 * start a value is held back until the next feed shows whether it does. */
#define REDACT_CHUNK	16384	/* most input bytes per redact_feed */
struct redactor {
	const struct subst *s;
	size_t		 n;
	size_t		 maxfrom;
	uint8_t		*hold;		/* maxfrom bytes */
	size_t		 holdlen;
	uint8_t		 first[32];	/* bitmap of the first bytes of from */
	/* perf: up to REDACT_FEW distinct first bytes are found with
	 * memchr (SIMD) instead of a byte-at-a-time bitmap walk */
#define REDACT_FEW	6
	uint8_t		 few[REDACT_FEW];
	size_t		 nfew;		/* 0: more than REDACT_FEW */
};

void	redactor_init(struct redactor *, const struct subst *, size_t n);
void	redactor_free(struct redactor *);
/* Ready for a new stream over s[0..n): the tables are built again only
 * when the set is not the one r was built for. */
void	redactor_reset(struct redactor *, const struct subst *, size_t n);
/* Growth bound: out must hold redact_outmax(r, len) bytes. */
size_t	redact_outmax(const struct redactor *, size_t len);
/* The most input bytes (up to REDACT_CHUNK) whose output surely fits in
 * room bytes; 0 when not even one does. */
size_t	redact_inmax(const struct redactor *, size_t room);
/* Feed len (<= REDACT_CHUNK) bytes; final flushes what was held back.
 * Returns the bytes written to out. */
size_t	redact_feed(struct redactor *, const uint8_t *in, size_t len,
	    uint8_t *out, bool final);

/* Decode %XX, \uXXXX (ASCII), \xXX and backslash escapes into out (len
 * bytes); returns the decoded length.  Used only for matching. */
size_t	ph_normalize(const uint8_t *in, size_t len, uint8_t *out);

/* Watching a request for placeholders: which of the n needles (by index)
 * occurs in buf, normalised, or -1.  The stream variant keeps a tail so a
 * needle split across feeds is still seen. */
int	ph_find(const uint8_t *buf, size_t len, const struct subst *needles,
	    size_t n);
struct phwatch {
	const struct subst *needles;	/* from = placeholder */
	size_t		 n;
	uint8_t		*tail;
	size_t		 taillen, tailcap;
};
void	phwatch_init(struct phwatch *, const struct subst *, size_t n);
void	phwatch_free(struct phwatch *);
int	phwatch_feed(struct phwatch *, const uint8_t *in, size_t len);

#endif
