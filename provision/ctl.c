/*
 * ctl.c -- line protocols over unix sockets: gatewayd's control socket and
 * QEMU's QMP.
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

#include "log.h"
#include "privdrop.h"
#include "provision.h"

#define CTL_TIMEOUT_MS	15000

static int
unix_connect(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

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
	char *path, line[512];
	int fd, rc;

	xasprintf(&path, "%s/gatewayd.sock", pv->run_dir);
	if ((fd = unix_connect(path)) == -1) {
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
	if (write_all(fd, "reload\n") == -1 ||
	    read_line(fd, line, sizeof(line), CTL_TIMEOUT_MS) == -1) {
		log_warnx("gatewayd did not answer the reload request on %s",
		    path);
		rc = CTL_REFUSED;
	} else if (strncmp(line, "ok", 2) == 0) {
		log_info("gatewayd reloaded the configuration");
		rc = CTL_OK;
	} else {
		log_warnx("gatewayd refused the reload: %s", line);
		rc = CTL_REFUSED;
	}
	close(fd);
	free(path);
	return rc;
}

/* Percent-encode one word of a control request (gatewayd's ctl.c does
 * the same): space, '%' and control characters become %XX. */
static void
encode_word(FILE *fp, const char *w)
{
	const unsigned char *p = (const unsigned char *)w;

	for (; *p; p++)
		if (*p <= ' ' || *p == '%' || *p == 0x7f)
			fprintf(fp, "%%%02X", *p);
		else
			fputc(*p, fp);
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

/* The request, with the files' descriptors on its first byte. */
static int
send_request(int fd, const char *req, const int *fds, int nfds)
{
	union {
		char		buf[CMSG_SPACE(PV_MAX_FILES * sizeof(int))];
		struct cmsghdr	align;
	} cbuf;
	struct iovec iov = { (void *)req, strlen(req) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	ssize_t n;

	if (nfds == 0)
		return write_all(fd, req);
	memset(&cbuf, 0, sizeof(cbuf));
	m.msg_control = cbuf.buf;
	m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	while ((n = sendmsg(fd, &m, MSG_NOSIGNAL)) == -1 && errno == EINTR)
		;
	if (n <= 0)
		return -1;
	return write_all(fd, req + n);
}

/* A member of group moat: gatewayd does the privileged work.  Send the
 * verb and its arguments (and a create's files, opened here), copy the
 * answer's body to stdout, its error to stderr.  gatewayd decides what
 * the caller may do. */
int
ctl_forward(const struct pv *pv, int argc, char **argv)
{
	char *path, *req = NULL, line[4096];
	size_t len = 0;
	int fd, i, rc = EXIT_FALSE, fds[PV_MAX_FILES], nfds = 0;
	FILE *fp;

	if (open_files(argc, argv, fds, &nfds) == -1) {
		while (nfds > 0)
			close(fds[--nfds]);
		return EXIT_FALSE;
	}

	if ((fp = open_memstream(&req, &len)) == NULL)
		fatal("open_memstream");
	for (i = 0; i < argc; i++) {
		if (argv[i][0] == '\0') {
			fclose(fp);
			free(req);
			log_warnx("empty argument");
			return EXIT_USAGE;
		}
		if (i > 0)
			fputc(' ', fp);
		encode_word(fp, argv[i]);
	}
	fputc('\n', fp);
	fclose(fp);
	xasprintf(&path, "%s/gatewayd.sock", pv->run_dir);
	if ((fd = unix_connect(path)) == -1) {
		log_warn("%s: gatewayd runs privileged work for group moat, "
		    "and its control socket %s", argv[0], path);
		free(path);
		free(req);
		while (nfds > 0)
			close(fds[--nfds]);
		return EXIT_FALSE;
	}
	if (send_request(fd, req, fds, nfds) == -1)
		log_warn("%s", path);
	while (nfds > 0)
		close(fds[--nfds]);
	/* A create may take minutes (qemu-img, the seed): no timeout. */
	while (read_line(fd, line, sizeof(line), -1) == 0) {
		if (strcmp(line, "ok") == 0) {
			rc = EXIT_OK;
			break;
		}
		/* An error may span lines (a configuration's FILE:LINE
		 * errors, one a line); gatewayd closes after the last. */
		if (strncmp(line, "error: ", 7) == 0) {
			log_warnx("%s", line + 7);
			continue;
		}
		printf("%s\n", line);
	}
	close(fd);
	free(path);
	free(req);
	return rc;
}

/* One line, a byte at a time (nothing past it is consumed); a descriptor
 * that came with it (SCM_RIGHTS) goes to *rfd. */
static int
read_line_fd(int fd, char *buf, size_t len, int *rfd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov;
	struct msghdr m;
	struct cmsghdr *cm;
	size_t n = 0;
	int got;

	while (n + 1 < len) {
		iov.iov_base = buf + n;
		iov.iov_len = 1;
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		if (recvmsg(fd, &m, MSG_CMSG_CLOEXEC) <= 0)
			return -1;
		for (cm = CMSG_FIRSTHDR(&m); cm != NULL;
		    cm = CMSG_NXTHDR(&m, cm))
			if (cm->cmsg_level == SOL_SOCKET &&
			    cm->cmsg_type == SCM_RIGHTS &&
			    cm->cmsg_len == CMSG_LEN(sizeof(int))) {
				memcpy(&got, CMSG_DATA(cm), sizeof(int));
				if (*rfd != -1)
					close(*rfd);
				*rfd = got;
			}
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

/* A member's console: gatewayd opens the guest's console socket if the
 * caller owns the guest and passes it back with "ok".  The descriptor,
 * or -1 (gatewayd's reason was shown). */
int
ctl_console(const struct pv *pv, const char *name)
{
	char *path, line[512];
	int fd, cfd = -1;

	xasprintf(&path, "%s/gatewayd.sock", pv->run_dir);
	if ((fd = unix_connect(path)) == -1) {
		log_warn("console: gatewayd opens consoles for group moat, and "
		    "its control socket %s", path);
		free(path);
		return -1;
	}
	free(path);
	if (write_all(fd, "console ") == -1 || write_all(fd, name) == -1 ||
	    write_all(fd, "\n") == -1) {
		log_warn("console");
		close(fd);
		return -1;
	}
	while (read_line_fd(fd, line, sizeof(line), &cfd) == 0) {
		if (strcmp(line, "ok") == 0 && cfd != -1) {
			close(fd);
			return cfd;
		}
		if (strncmp(line, "error: ", 7) == 0) {
			log_warnx("%s", line + 7);
			break;
		}
	}
	if (cfd != -1)
		close(cfd);
	close(fd);
	return -1;
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
