/*
 * web.h -- moat-web, the operator's web console: an unprivileged child of
 * gatewayd that serves HTTPS (libh2o with OpenSSL) on the management
 * address gateway.web.listen.  It holds no right of its own: every page's
 * data and every action is a control request it sends the parent with the
 * browser's session secret (IPC_WEB_REQ); the parent maps the session to
 * the user who logged in and checks the request as that user's own.
 */
#ifndef GW_WEB_H
#define GW_WEB_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>

#define WEB_USER		"moat-web"
#define WEB_MAX_FILES		32
#define WEB_MAX_FILE		(512 * 1024)
#define WEB_MAX_BODY		4096	/* a request's body */
#define WEB_RATE		20	/* requests a second from one address */
#define WEB_BURST		60

/* One page, script or style sheet, read by the parent at start. */
struct web_file {
	char	 path[64];	/* "/app.js" */
	char	*data;
	size_t	 len;
	const char *type;	/* its Content-Type */
};

/* What the parent gives the web process: the listener it bound, the
 * certificate and key (PEM, in memory) and the pages. */
struct web_boot {
	int		 listen;
	char		*cert, *key;
	size_t		 certlen, keylen;
	struct web_file	 files[WEB_MAX_FILES];
	size_t		 nfiles;
};

/* Forked by the parent: drop to WEB_USER, seccomp, serve; never returns. */
void	web_main(int listen, int ipc, pid_t parent, struct web_boot *)
	    __attribute__((noreturn));

/*
 * A form field (application/x-www-form-urlencoded, also a query string)
 * by name, percent-decoded into out (room bytes, NUL-terminated).  0, or
 * -1 if it is absent, too long, or decodes to a control character.
 */
int	web_form_get(const char *body, size_t len, const char *name,
	    char *out, size_t room);

/* The SameSite cookie "moat_session"'s value (64 hex digits) from a
 * Cookie header into out (65 bytes); 0, or -1 if there is none. */
int	web_cookie_session(const char *hdr, size_t len, char out[65]);

/*
 * The audit log's last lines (a window of the file, whole lines, no
 * newline at the end) read before, old (NULL: none), and now, now: the
 * lines now has that old had not, as a pointer into now.  When now is
 * not old grown (a line of old is the start of now, and old's rest its
 * beginning), *all is set and now is returned whole.
 */
const char *web_log_added(const char *old, const char *now, bool *all);

#endif
