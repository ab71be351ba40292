/*
 * ctl.c -- `gatewayd ctl VERB [--json] [ARGS]`: send one request line to
 * the control socket, print the body, exit 0 on "ok" and 1 on "error:".
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gatewayd.h"
#include "log.h"

enum { CTL_OK = 0, CTL_ERROR = 1, CTL_USAGE = 2, CTL_SYSTEM = 3 };

static int
ctl_connect(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int
ctl_main(const char *sock, int argc, char *argv[])
{
	char req[GW_CTL_MAX_LINE], *line = NULL;
	size_t cap = 0, len = 0;
	ssize_t n;
	FILE *fp;
	int fd, i, rc = CTL_SYSTEM;

	if (argc < 1) {
		fprintf(stderr, "usage: gatewayd ctl status|sandboxes|reload|"
		    "counters|log [-f] [--json]\n");
		return CTL_USAGE;
	}
	for (i = 0; i < argc; i++) {
		n = snprintf(req + len, sizeof(req) - len, "%s%s", i ? " " : "",
		    argv[i]);
		if (n < 0 || (size_t)n >= sizeof(req) - len - 1 ||
		    strpbrk(argv[i], "\r\n") != NULL) {
			fprintf(stderr, "gatewayd ctl: request too long\n");
			return CTL_USAGE;
		}
		len += (size_t)n;
	}
	req[len++] = '\n';
	if ((fd = ctl_connect(sock)) == -1) {
		fprintf(stderr, "gatewayd ctl: %s: %s (is gatewayd running?)\n",
		    sock, strerror(errno));
		return CTL_SYSTEM;
	}
	/* The daemon may refuse us before reading the request; its answer
	 * is still there to read, so a failed write is not the end. */
	signal(SIGPIPE, SIG_IGN);
	(void)!write(fd, req, len);
	if ((fp = fdopen(fd, "r")) == NULL) {
		close(fd);
		return CTL_SYSTEM;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((n = getline(&line, &cap, fp)) > 0) {
		if (strcmp(line, "ok\n") == 0) {
			rc = CTL_OK;
			break;
		}
		if (strncmp(line, "error: ", 7) == 0) {
			fputs(line + 7, stderr);
			rc = CTL_ERROR;
			break;
		}
		fputs(line, stdout);
	}
	free(line);
	fclose(fp);
	return rc;
}
