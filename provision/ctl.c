/*
 * ctl.c -- line protocols over unix sockets: gatewayd's control socket
 * (its client is lib/ctlclient.c, shared with `gatewayd ctl`) and QEMU's
 * QMP.
 *
 * gatewayd: connect to RUN_DIR/gatewayd.sock (SOCK_STREAM), send "reload\n",
 * read one line: "ok..." means the new configuration is applied, "error:
 * ..." means it was refused (and nothing changed).  No socket, or nobody
 * listening, means no gatewayd runs: it reads the files when it starts.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlclient.h"
#include "log.h"
#include "privdrop.h"
#include "provision.h"

#define CTL_TIMEOUT_MS	15000

/* Read one line (without the newline) within the timeout. */
static int
read_line(int fd, char *buf, size_t len, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	/* For the whole line, so that a peer sending a byte at a time
	 * cannot hold us past it (-1: no timeout). */
	long long deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	long long left = -1;
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len) {
		if (deadline >= 0 && (left = deadline - mono_ms()) <= 0)
			return -1;
		if (poll(&pfd, 1, (int)left) <= 0)
			return -1;
		if ((r = read(fd, buf + n, 1)) <= 0)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

static int
write_all(int fd, const char *s)
{
	size_t len = strlen(s);
	ssize_t w;

	while (len > 0) {
		if ((w = write(fd, s, len)) <= 0) {
			if (w == -1 && errno == EINTR)
				continue;
			return -1;
		}
		s += w;
		len -= (size_t)w;
	}
	return 0;
}

int
ctl_reload(const struct pv *pv)
{
	struct ctlc c;
	char *path;
	int rc;

	xasprintf(&path, "%s/gatewayd.sock", pv->run_dir);
	if (ctlc_open(&c, path) == -1) {
		if (errno == ENOENT || errno == ECONNREFUSED) {
			log_info("no gatewayd is running (%s): it will read "
			    "the configuration when it starts", path);
			free(path);
			return CTL_ABSENT;
		}
		log_warn("gatewayd control socket %s", path);
		free(path);
		return CTL_REFUSED;
	}
	if (ctlc_send(&c, "reload\n", 7, NULL, 0) == -1 ||
	    ctlc_getline(&c, CTL_TIMEOUT_MS) == -1) {
		log_warnx("gatewayd did not answer the reload request on %s",
		    path);
		rc = CTL_REFUSED;
	} else if (strncmp(c.line, "ok", 2) == 0) {
		log_info("gatewayd reloaded the configuration");
		rc = CTL_OK;
	} else {
		log_warnx("gatewayd refused the reload: %s", c.line);
		rc = CTL_REFUSED;
	}
	ctlc_close(&c);
	free(path);
	return rc;
}

/* The options whose value is a file: the member's provision opens it. */
static bool
file_option(const char *s)
{
	static const char *const opts[] = { "--image", "--kernel", "--initrd",
	    "--ca", "--ssh-key", "--password-hash-file" };
	size_t i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strcmp(s, opts[i]) == 0)
			return true;
	return false;
}

/* Open every file a create names, as the caller: never follow a final
 * symlink, never block on a FIFO, and only a regular file goes.  root
 * (gatewayd) then reads from these descriptors and never by name, so it
 * sees exactly what the caller could open, when they opened it. */
static int
open_files(int argc, char **argv, int *fds, int *nfds)
{
	struct stat sb;
	int i, fd;

	*nfds = 0;
	if (strcmp(argv[0], "create") != 0)
		return 0;
	for (i = 1; i + 1 < argc; i++) {
		if (!file_option(argv[i]))
			continue;
		i++;
		if ((fd = open(argv[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
		    O_NONBLOCK | O_NOCTTY)) == -1) {
			log_warn("%s %s", argv[i - 1], argv[i]);
			return -1;
		}
		fds[(*nfds)++] = fd;
		if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
			log_warnx("%s %s: not a regular file (a FIFO, device or "
			    "folder is refused)", argv[i - 1], argv[i]);
			return -1;
		}
		if (*nfds == PV_MAX_FILES) {
			log_warnx("create: at most %d files", PV_MAX_FILES);
			return -1;
		}
	}
	return 0;
}

/* A member of group moat: gatewayd does the privileged work.  Send the
 * verb and its arguments (and a create's files, opened here), copy the
 * answer's body to stdout, its error to stderr.  gatewayd decides what
 * the caller may do. */
/* The answer's body to stdout, its errors to stderr. */
static void
print_line(const char *line, bool error, bool after_error, void *arg)
{
	if (error)
		log_warnx("%s", line);
	else
		printf("%s\n", line);
}

static void
close_all(int *fds, int nfds)
{
	while (nfds > 0)
		close(fds[--nfds]);
}

/* A member of group moat: gatewayd does the privileged work.  Send the
 * verb and its arguments (and a create's files, opened here), copy the
 * answer's body to stdout, its error to stderr.  gatewayd decides what
 * the caller may do. */
int
ctl_forward(const struct pv *pv, int argc, char **argv)
{
	char *path, *req;
	size_t len = 0;
	int rc, fds[PV_MAX_FILES], nfds = 0;
	struct ctlc c;

	if (open_files(argc, argv, fds, &nfds) == -1) {
		close_all(fds, nfds);
		return EXIT_FALSE;
	}
	if ((req = ctlc_request(argc, argv, &len)) == NULL) {
		close_all(fds, nfds);
		log_warnx("empty argument");
		return EXIT_USAGE;
	}
	xasprintf(&path, "%s/gatewayd.sock", pv->run_dir);
	if (ctlc_open(&c, path) == -1) {
		log_warn("%s: gatewayd runs privileged work for group moat, "
		    "and its control socket %s", argv[0], path);
		free(path);
		free(req);
		close_all(fds, nfds);
		return EXIT_FALSE;
	}
	if (ctlc_send(&c, req, len, fds, nfds) == -1)
		log_warn("%s", path);
	close_all(fds, nfds);
	/* A create may take minutes (qemu-img, the seed): no timeout. */
	rc = ctlc_answer(&c, print_line, NULL) == CTLC_OK ? EXIT_OK :
	    EXIT_FALSE;
	ctlc_close(&c);
	free(path);
	free(req);
	return rc;
}

/* A member's console: gatewayd opens the guest's console socket if the
 * caller owns the guest and passes it back with "ok".  The descriptor,
 * or -1 (gatewayd's reason was shown). */
int
ctl_console(const struct pv *pv, const char *name)
{
	char *path, *argv[] = { "console", (char *)name }, *req;
	struct ctlc c;
	size_t len;
	int cfd = -1;

	xasprintf(&path, "%s/gatewayd.sock", pv->run_dir);
	if (ctlc_open(&c, path) == -1) {
		log_warn("console: gatewayd opens consoles for group moat, and "
		    "its control socket %s", path);
		free(path);
		return -1;
	}
	free(path);
	if ((req = ctlc_request(2, argv, &len)) == NULL ||
	    ctlc_send(&c, req, len, NULL, 0) == -1) {
		log_warn("console");
		free(req);
		ctlc_close(&c);
		return -1;
	}
	free(req);
	while (ctlc_getline(&c, -1) == 0) {
		if (strcmp(c.line, "ok") == 0 && c.rfd != -1) {
			cfd = c.rfd;
			c.rfd = -1;
			break;
		}
		if (strncmp(c.line, "error: ", 7) == 0) {
			log_warnx("%s", c.line + 7);
			break;
		}
	}
	ctlc_close(&c);
	return cfd;
}

#define QMP_TIMEOUT_MS	10000	/* one QMP command, greeting to answer */

/* Milliseconds left before deadline (a mono_ms() time), at least 0. */
static int
ms_left(long long deadline)
{
	long long left = deadline - mono_ms();

	return left > 0 ? (int)left : 0;
}

/* Wait for a line holding "return" (or "error"), skipping events, until
 * deadline: the socket is in the QEMU user's folder, so a guest that
 * escaped into QEMU could answer with events (or bytes) for ever. */
static int
qmp_reply(int fd, long long deadline)
{
	char line[4096];

	for (;;) {
		if (read_line(fd, line, sizeof(line), ms_left(deadline)) == -1)
			return -1;
		if (strstr(line, "\"return\"") != NULL)
			return 0;
		if (strstr(line, "\"error\"") != NULL)
			return -1;
	}
}

int
guest_connect(const char *path, uid_t uid, gid_t gid)
{
	int fd = -1, back, status;
	pid_t pid;

	if ((pid = connect_as_start(path, uid, gid, &back)) == -1)
		return -1;
	/* The child runs as the guest's uid, which may stop it (SIGSTOP):
	 * stopped, it would never exit, nor its alarm fire.  It is killed. */
	for (;;) {
		if (waitpid(pid, &status, WUNTRACED) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!WIFSTOPPED(status))
			break;
		kill(pid, SIGKILL);
	}
	fd = connect_as_take(back, uid);
	close(back);
	return fd;
}

/* command: a QMP command name without arguments ("quit",
 * "system_powerdown").  0 if QEMU accepted it.  The socket is in the
 * QEMU user's folder: connected as that user (guest_connect). */
int
qmp_command(const char *sock, const struct qemu_user *u, const char *command)
{
	char line[4096], *req;
	int fd, rc = -1, sent = 0;
	long long deadline;

	if ((fd = guest_connect(sock, u->uid, u->gid)) == -1)
		return -1;
	/* The whole exchange: QEMU itself answers in milliseconds. */
	deadline = mono_ms() + QMP_TIMEOUT_MS;
	xasprintf(&req, "{\"execute\":\"%s\"}\n", command);
	if (read_line(fd, line, sizeof(line), ms_left(deadline)) == 0 &&
	    strstr(line, "\"QMP\"") != NULL &&
	    write_all(fd, "{\"execute\":\"qmp_capabilities\"}\n") == 0 &&
	    qmp_reply(fd, deadline) == 0 && write_all(fd, req) == 0) {
		sent = 1;
		rc = qmp_reply(fd, deadline);
	}
	/* "quit" may close the socket before answering. */
	if (rc == -1 && sent && strcmp(command, "quit") == 0)
		rc = 0;
	free(req);
	close(fd);
	return rc;
}
