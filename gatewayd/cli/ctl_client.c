/*
 * ctl_client.c -- `gatewayd ctl VERB [--json] [ARGS]`: send one request
 * line to the control socket, print the body, exit 0 on "ok" and 1 on
 * "error:" (those lines, and any after them, go to stderr).  The protocol
 * is lib/ctlclient.c's, shared with provision.
 *
 * Words are percent-encoded (space, '%' and control characters), so an
 * argument may hold spaces.  `secret set` sends the value read from
 * standard input as a second line; it never appears in argv.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlclient.h"
#include "exitcodes.h"
#include "../gatewayd.h"
#include "log.h"

/* Say why we cannot connect in the caller's terms: a socket we may not
 * open means "not a member", not "the daemon is down". */
static void
ctl_connect_failed(const char *sock, int err)
{
	if (err == EACCES || err == EPERM)
		fprintf(stderr, "gatewayd ctl: %s: permission denied: you are not "
		    "in group " GW_GROUP " (or root); log in again after being "
		    "added\n", sock);
	else if (err == ENOENT || err == ECONNREFUSED)
		fprintf(stderr, "gatewayd ctl: %s: %s (is gatewayd running?)\n",
		    sock, strerror(err));
	else
		fprintf(stderr, "gatewayd ctl: %s: %s\n", sock, strerror(err));
}

/* The secret's value: all of standard input, one line, its final newline
 * dropped.  Appended to req as the request's second line. */
static int
read_value(char *req, size_t cap, size_t *len)
{
	char buf[GW_SECRET_MAX + 2];
	size_t n = 0;
	ssize_t r;
	int rc = -1;

	while (n < sizeof(buf) && (r = read(0, buf + n, sizeof(buf) - n)) != 0) {
		if (r == -1) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		n += (size_t)r;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n == 0 || n > GW_SECRET_MAX || memchr(buf, '\n', n) != NULL ||
	    memchr(buf, '\0', n) != NULL) {
		fprintf(stderr, "gatewayd ctl: secret set: expected the value on "
		    "standard input, 1 to %d characters on one line\n",
		    GW_SECRET_MAX);
		goto out;
	}
	if (n + 1 < cap - *len) {
		memcpy(req + *len, buf, n);
		*len += n;
		req[(*len)++] = '\n';
		rc = 0;
	}
out:
	explicit_bzero(buf, sizeof(buf));
	return rc;
}

void
ctl_usage(FILE *fp)
{
	fprintf(fp,
"usage: gatewayd ctl [-s SOCKET] VERB [--json] [ARGS]\n"
"\n"
"  status                  the daemon, its policy and its children\n"
"  sandboxes               configured sandboxes you may see (admins: all)\n"
"  list                    guests you may see, as provision list shows them\n"
"  counters                refusal counters, DNS queries dropped (admins)\n"
"  hosts                   a separate box's KVM hosts: key, pool, trunk,\n"
"                          last seen, sandboxes, refusals (admins)\n"
"  log [-f]                the audit log's tail; -f follows it (admins)\n"
"  reload                  re-read the configuration; exit 1 and the\n"
"                          file:line errors if it is invalid\n"
"  create|start|stop|destroy [OPTIONS] NAME\n"
"                          provision's verbs, run for you by gatewayd\n"
"  secret set NAME --host H [--header X] [--share USER] <VALUE\n"
"  secret list             secrets you own or that are shared with you\n"
"  secret attach|detach SANDBOX NAME\n"
"                          put a secret on your sandbox, or take it off\n"
"  refused [SANDBOX] [--since DURATION] [--kind dns|proxy|kernel]\n"
"                          what your sandboxes were refused: names first\n"
"  names SANDBOX [--since DURATION] [--as-allow | --json]\n"
"                          the names it resolved; --as-allow: as allow = [..];\n"
"  allow SANDBOX NAME... [--for DURATION] [--ports tcp/22,...]\n"
"                          let it reach NAME (for a while, or in its file;\n"
"                          --ports: on those ports only)\n"
"  unallow SANDBOX NAME... take back what allow gave\n"
"  grants [SANDBOX]        live grants: who, when, until when\n"
"  ha master|backup|fault  this box's role in a pair, from keepalived's\n"
"                          notify script (admins; gateway.ha only)\n"
"  web-login [--for 5m] [--session 8h]\n"
"                          a one-time link into the web console, and its\n"
"                          certificate's fingerprint (gateway.web only)\n"
"  web-sessions [revoke ID] the web console's sessions; end one\n"
"  clear-quarantine SANDBOX  end the quarantine of a guest that reported\n"
"                          NOT CONTAINED (admins)\n"
"\n"
"--json (status, sandboxes, list, counters, hosts, secret list, refused,\n"
"names, grants, web-sessions; log is JSON already) prints one JSON\n"
"document; other verbs refuse it.  -s: the control socket\n"
"(default " GW_SOCK_DEFAULT ").\n"
"Exit status: 0 ok, 1 the daemon refused, 2 usage, 3 cannot reach the\n"
"daemon.\n");
}

/* Body lines to stdout; an error, and anything after it, to stderr. */
static void
print_line(const char *line, bool error, bool after_error, void *arg)
{
	fprintf(after_error ? stderr : stdout, "%s\n", line);
}

/* The request in req (cap bytes), the secret's value after it: its
 * length, or -1 after saying why not. */
static int
build(char *req, size_t cap, int argc, char *argv[], size_t *len)
{
	char *line = ctlc_request(argc, argv, len);

	if (line == NULL || *len >= cap) {
		fprintf(stderr, "gatewayd ctl: request too long or an "
		    "empty argument\n");
		free(line);
		return -1;
	}
	memcpy(req, line, *len);
	free(line);
	if (argc >= 2 && strcmp(argv[0], "secret") == 0 &&
	    strcmp(argv[1], "set") == 0 && read_value(req, cap, len) == -1)
		return -1;
	return 0;
}

/* How long a verb's first line may take (a reload of thousands of
 * sandboxes takes seconds). */
#define CTL_ANSWER_WAIT_S	60

int
ctl_main(const char *sock, int argc, char *argv[])
{
	static const int exits[] = { [CTLC_OK] = EXIT_OK,
	    [CTLC_REFUSED] = EXIT_FALSE, [CTLC_UNANSWERED] = EXIT_SYSTEM,
	    [CTLC_SILENT] = EXIT_SYSTEM };
	char req[GW_CTL_MAX_LINE];
	struct ctlc c;
	size_t len = 0;
	int rc;

	if (argc < 1) {
		ctl_usage(stderr);
		return EXIT_USAGE;
	}
	if (build(req, sizeof(req), argc, argv, &len) == -1) {
		explicit_bzero(req, sizeof(req));
		return EXIT_USAGE;
	}
	if (ctlc_open(&c, sock) == -1) {
		explicit_bzero(req, sizeof(req));
		ctl_connect_failed(sock, errno);
		return EXIT_SYSTEM;
	}
	/* The daemon may refuse us before reading the request; its answer
	 * is still there to read, so a failed write is not the end. */
	signal(SIGPIPE, SIG_IGN);
	(void)ctlc_send(&c, req, len, NULL, 0);
	explicit_bzero(req, sizeof(req));
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A daemon whose control process is down still takes the connection
	 * (the socket is the parent's): do not wait for it for ever.  Every
	 * verb answers at once but "log -f", which may wait for an event. */
	if (!(argc >= 2 && strcmp(argv[0], "log") == 0 &&
	    strcmp(argv[1], "-f") == 0))
		c.first_ms = CTL_ANSWER_WAIT_S * 1000;
	rc = ctlc_answer(&c, print_line, NULL);
	if (rc == CTLC_SILENT)
		fprintf(stderr, "gatewayd ctl: %s: no answer in %d s (is "
		    "gatewayd's control process running? see its log)\n",
		    sock, CTL_ANSWER_WAIT_S);
	rc = exits[rc];
	ctlc_close(&c);
	return rc;
}
