/*
 * http.h -- strict HTTP/1.1 message heads and chunked framing.
 *
 * Every function here is pure over (buffer, length) so each can be fuzzed
 * on its own.  The head parser is deliberately narrower than RFC 9112
 * allows where leniency is what request smuggling feeds on: bare CR or LF,
 * obs-fold, whitespace before the colon, Content-Length together with
 * Transfer-Encoding, duplicate Content-Length or Host, any transfer coding
 * other than a single "chunked", and control bytes in values are all
 * refused rather than interpreted.
 */
#ifndef MOAT_PROXY_HTTP_H
#define MOAT_PROXY_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEAD		16384	/* request or response head, bytes */
#define HTTP_MAX_FIELDS		100
#define HTTP_MAX_CHUNK_LINE	64	/* chunk-size line incl. extensions */
#define HTTP_MAX_TRAILER	4096

enum http_err {
	HTTP_OK = 0,
	HTTP_INCOMPLETE,	/* need more bytes */
	HTTP_E_TOOBIG,		/* head larger than HTTP_MAX_HEAD */
	HTTP_E_FIELDS,		/* more than HTTP_MAX_FIELDS fields */
	HTTP_E_LINE,		/* bad request or status line */
	HTTP_E_VERSION,		/* not HTTP/1.0 or HTTP/1.1 */
	HTTP_E_CRLF,		/* bare CR or bare LF */
	HTTP_E_FOLD,		/* obs-fold continuation line */
	HTTP_E_FIELD,		/* malformed field name or value */
	HTTP_E_CLTE,		/* Content-Length and Transfer-Encoding */
	HTTP_E_CL,		/* invalid or duplicate Content-Length */
	HTTP_E_TE,		/* transfer coding other than "chunked" */
	HTTP_E_HOST,		/* missing (1.1) or duplicate Host */
	HTTP_E_TARGET,		/* request target form not allowed */
};

struct http_field {
	const char	*name;	/* points into the parsed buffer */
	size_t		 namelen;
	const char	*value;	/* OWS trimmed */
	size_t		 valuelen;
};

enum http_body { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_CLOSE };

struct http_head {
	size_t		 headlen;	/* bytes up to and including CRLFCRLF */
	int		 minor;		/* HTTP/1.<minor> */
	/* request */
	const char	*method;
	size_t		 methodlen;
	const char	*target;
	size_t		 targetlen;
	/* response */
	int		 status;
	/* both */
	struct http_field fields[HTTP_MAX_FIELDS];
	size_t		 nfields;
	int		 host;		/* index of Host field, -1 if none */
	enum http_body	 body;
	uint64_t	 length;	/* BODY_LENGTH */
	bool		 close;		/* Connection: close, or 1.0 without keep-alive */
	bool		 upgrade;	/* Connection: upgrade and an Upgrade field */
	bool		 expect100;
};

/* Parse a request head at the start of buf.  HTTP_INCOMPLETE if no
 * CRLFCRLF yet (and len < HTTP_MAX_HEAD). */
enum http_err	http_parse_request(const char *buf, size_t len,
		    struct http_head *);
/* Parse a response head; body framing follows RFC 9112 6.3 given the
 * request method (HEAD) of the request it answers. */
enum http_err	http_parse_response(const char *buf, size_t len,
		    bool head_request, struct http_head *);
const char	*http_strerror(enum http_err);
/* The standard reason phrase of a status code ("Unauthorized"), or its
 * class's ("Client Error") for a code without one. */
const char	*http_reason(int code);

bool	http_field_is(const struct http_field *, const char *name);
/* Index of the first field called name, or -1. */
int	http_field_find(const struct http_head *, const char *name);

/* Could this request make the server do more than its method and path
 * say, past request rules checked on them?  A method override (a header
 * X-HTTP-Method-Override, X-HTTP-Method or X-Method-Override, or a query
 * parameter _method) or an encoded NUL (%00) in the path.  Why, or NULL.
 * The proxy refuses such a request when it carries a secret. */
const char *http_sidestep(const struct http_head *, const char *path,
	    size_t pathlen);

/* Split an authority "host[:port]" (IPv6 in brackets).  The host is copied
 * lower-cased into host (hostlen bytes incl. NUL); port defaults to dport.
 * 0 or -1 when malformed. */
int	http_authority(const char *s, size_t len, char *host, size_t hostlen,
	    uint16_t *port, uint16_t dport);
/* For an absolute-form target "http://authority/path": the authority and
 * the origin-form path (at least "/").  0 or -1. */
int	http_absolute(const char *t, size_t len, const char **auth,
	    size_t *authlen, const char **path, size_t *pathlen);

/* Incremental chunked-body decoder. */
enum chunk_state {
	CH_SIZE = 0, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF,
	CH_TRAILER, CH_TRAILER_LF, CH_END_LF, CH_DONE, CH_ERROR
};

struct chunked {
	enum chunk_state st;
	uint64_t	 remain;	/* data bytes left in this chunk */
	unsigned	 digits;
	size_t		 linelen;	/* size line or trailer bytes so far */
	size_t		 trailer;	/* total trailer bytes */
	bool		 trailer_empty;	/* current trailer line is empty so far */
};

enum chunk_ret { CHUNK_MORE, CHUNK_DONE, CHUNK_ERROR };

/* Feed in[0..len).  Payload bytes are appended to out (which must hold
 * len bytes) unless out is NULL; *outlen gets how many.  *used is how
 * many input bytes were consumed: at CHUNK_DONE the rest belongs to the
 * next message. */
enum chunk_ret	chunked_feed(struct chunked *, const uint8_t *in, size_t len,
		    uint8_t *out, size_t *outlen, size_t *used);

#endif
