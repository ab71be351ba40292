/*
 * cmd_list.c -- `provision list [--json]` and `provision console NAME`.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "provision.h"

struct row {
	char	 name[40];
	char	 owner[40];
	char	 address[16];
	char	 tap[16];
	char	 egress[12];
	char	 mode[8];
	char	 state[12];
	enum verdict verdict;	/* the guest's latest containment-check */
	long long at;		/* when it was reported, or 0: unknown */
	unsigned rejected;	/* console lines refused as verdicts */
	long	 uptime;
	int	 pid;
	char	 accel[8];		/* running guests: accelerator, why */
	char	 accel_why[256];
};

/* The guest's own report (serial.c): the recorded word, else the first
 * verdict line of its console log.  Never the log's text itself. */
static enum verdict
verdict_read(const struct gpaths *p)
{
	enum verdict v = verdict_file_read(p->verdict);

	return v != VERDICT_NONE ? v : verdict_log_scan(p->log,
	    VERDICT_SCAN_MAX);
}

/* The latest verdict and its time from the serial reader's record (any
 * guest whose console printed one), else the first-boot one, untimed. */
static void
latest_read(const struct gpaths *p, const struct guest *g, struct row *r)
{
	struct verdict_rec rec;

	if (verdict_rec_read(p->latest, &rec) == 0) {
		r->rejected = rec.rejected[0] + rec.rejected[1] +
		    rec.rejected[2];
		if (rec.verdict != VERDICT_NONE) {
			r->verdict = (enum verdict)rec.verdict;
			r->at = rec.at;
			return;
		}
	}
	if (g->mode == MODE_IMAGE)
		r->verdict = verdict_read(p);
}

/* "42s", "3m05s", "5h59m", "2d03h". */
static void
age_fmt(long long s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, len, "%llds", s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lldh%02lldm", s / 3600, s / 60 % 60);
	else
		snprintf(buf, len, "%lldd%02lldh", s / 86400, s / 3600 % 24);
}

static void
accel_read(const struct gpaths *p, struct row *r)
{
	char *s = read_small_file(p->accel, 300, NULL), *nl;

	if (s == NULL)
		return;
	if ((nl = strchr(s, '\n')) != NULL) {
		*nl = '\0';
		snprintf(r->accel, sizeof(r->accel), "%s", s);
		nl[strcspn(nl + 1, "\n") + 1] = '\0';
		snprintf(r->accel_why, sizeof(r->accel_why), "%s", nl + 1);
	}
	free(s);
}

static void
row_fill(const struct pv *pv, const char *name, struct row *r)
{
	const struct moat_sandbox *sb;
	struct gpaths p;
	struct guest g;
	struct passwd *pw;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->state, sizeof(r->state), "broken");
	r->uptime = -1;
	if ((sb = config_sandbox_by_name(pv->cfg, name)) != NULL) {
		addr_fmt(&sb->address, r->address, sizeof(r->address));
		snprintf(r->tap, sizeof(r->tap), "%s", sb->tap);
		snprintf(r->egress, sizeof(r->egress), "%s",
		    egress_name(sb->egress));
		if (sb->owner != NULL)
			snprintf(r->owner, sizeof(r->owner), "%s", sb->owner);
	}
	gpaths_init(&p, pv, name);
	if (guest_read(p.meta, &g) == 0) {
		snprintf(r->mode, sizeof(r->mode), "%s", mode_name(g.mode));
		pw = g.uid > 0 ? NULL : getpwnam(g.user);
		pid = g.uid > 0 ? guest_pid(&p, &g, (uid_t)g.uid) :
		    pw != NULL ? guest_pid(&p, &g, pw->pw_uid) : 0;
		snprintf(r->state, sizeof(r->state), "%s", pid > 0 ?
		    "running" : sb != NULL ? "stopped" : "no-sandbox");
		if (pid > 0) {
			r->pid = (int)pid;
			r->uptime = proc_uptime(pid);
			accel_read(&p, r);
		}
		latest_read(&p, &g, r);
		guest_free(&g);
	}
	gpaths_free(&p);
}

/* One field; an empty string is unknown, written null. */
static void
field(const char *key, const char *v)
{
	printf(", \"%s\": ", key);
	if (v[0] == '\0')
		printf("null");
	else
		json_fputs(stdout, v);
}

/* The schema is the same for root and for members (whose list gatewayd
 * runs as this, with --owner): see provision(8). */
static void
row_json(const struct row *r, bool first)
{
	printf("%s\n  {\"name\": ", first ? "" : ",");
	json_fputs(stdout, r->name);
	field("owner", r->owner);
	field("address", r->address);
	field("tap", r->tap);
	field("egress", r->egress);
	field("mode", r->mode);
	field("state", r->state);
	/* Where the verdict came from: the guest said so. */
	field("verdict", verdict_word(r->verdict) ? verdict_word(r->verdict) :
	    "");
	field("verdict_source", r->verdict != VERDICT_NONE ? "guest" : "");
	if (r->at > 0)
		printf(", \"verdict_at\": %lld, \"verdict_age\": %lld", r->at,
		    (long long)time(NULL) - r->at);
	else
		printf(", \"verdict_at\": null, \"verdict_age\": null");
	printf(", \"verdict_rejected\": %u", r->rejected);
	printf(", \"accel\": ");
	r->accel[0] ? json_fputs(stdout, r->accel) : (void)printf("null");
	printf(", \"accel_reason\": ");
	r->accel[0] ? json_fputs(stdout, r->accel_why) : (void)printf("null");
	if (r->pid > 0)
		printf(", \"pid\": %d, \"uptime\": %ld}", r->pid,
		    r->uptime >= 0 ? r->uptime : 0);
	else
		printf(", \"pid\": null, \"uptime\": null}");
}

static int
namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t
guest_names(const struct pv *pv, char ***out)
{
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;

	if ((d = opendir(pv->guests_dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (!name_valid(de->d_name))
				continue;
			v = xreallocarray(v, n + 1, sizeof(char *));
			v[n++] = xstrdup(de->d_name);
		}
		closedir(d);
	}
	if (n > 0)
		qsort(v, n, sizeof(char *), namecmp);
	*out = v;
	return n;
}

int
cmd_list(struct pv *pv, int argc, char **argv)
{
	const char *owner = NULL;
	char **names, up[32], verdict[48], age[24];
	struct row r;
	size_t i, n, shown = 0;
	int a;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--json") == 0)
			pv->json = true;
		else if (strcmp(argv[a], "--owner") == 0 && a + 1 < argc)
			owner = argv[++a];
		else {
			log_warnx("usage: provision list [--json] [--owner USER]");
			return EXIT_USAGE;
		}
	}
	if (pv_load(pv) == -1)
		return EXIT_FALSE;
	n = guest_names(pv, &names);
	if (pv->json)
		printf("[");
	else
		printf("%-20s %-15s %-7s %-10s %-9s %-9s %-26s %s\n", "NAME",
		    "ADDRESS", "MODE", "EGRESS", "STATE", "UPTIME", "VERDICT",
		    "ACCEL");
	for (i = 0; i < n; i++) {
		row_fill(pv, names[i], &r);
		free(names[i]);
		if (owner != NULL && strcmp(r.owner, owner) != 0)
			continue;
		if (pv->json) {
			row_json(&r, shown++ == 0);
			continue;
		}
		if (r.uptime >= 0)
			snprintf(up, sizeof(up), "%ldh%02ldm%02lds",
			    r.uptime / 3600, r.uptime / 60 % 60, r.uptime % 60);
		else
			snprintf(up, sizeof(up), "-");
		age_fmt((long long)time(NULL) - r.at, age, sizeof(age));
		if (r.at > 0)
			snprintf(verdict, sizeof(verdict), "%s, %s ago",
			    verdict_word(r.verdict), age);
		else
			snprintf(verdict, sizeof(verdict), "%s%s", verdict_word(
			    r.verdict) ? verdict_word(r.verdict) : "-",
			    r.verdict != VERDICT_NONE ? " (guest)" : "");
		printf("%-20s %-15s %-7s %-10s %-9s %-9s %-26s %s%s%s%s\n",
		    r.name, r.address[0] ? r.address : "-", r.mode[0] ? r.mode :
		    "-", r.egress[0] ? r.egress : "-", r.state, up,
		    verdict, r.accel[0] ? r.accel : "-",
		    r.accel[0] ? " (" : "", r.accel[0] ? r.accel_why : "",
		    r.accel[0] ? ")" : "");
	}
	free(names);
	if (pv->json)
		printf("%s]\n", shown > 0 ? "\n" : "");
	return EXIT_OK;
}

/* --- console ---------------------------------------------------------- */

#define ESCAPE_CHAR	0x1d	/* Ctrl-] */

static int
relay(int sock)
{
	struct pollfd pfd[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
	    { .fd = sock, .events = POLLIN } };
	char buf[4096];
	ssize_t n;

	for (;;) {
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (pfd[1].revents & (POLLIN | POLLHUP)) {
			if ((n = read(sock, buf, sizeof(buf))) <= 0)
				return 0;
			if (write(STDOUT_FILENO, buf, (size_t)n) != n)
				return -1;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP)) {
			if ((n = read(STDIN_FILENO, buf, sizeof(buf))) <= 0)
				pfd[0].fd = -1;	/* keep showing output */
			else if (isatty(STDIN_FILENO) &&
			    memchr(buf, ESCAPE_CHAR, (size_t)n) != NULL)
				return 0;
			else if (write(sock, buf, (size_t)n) != n)
				return -1;
		}
	}
}

/* Root connects to QEMU's socket itself, but as its folder's owner (the
 * QEMU user, see connect_as_start), never as root: the folder is QEMU's,
 * so the socket may be a symlink put there by a guest that escaped into
 * it.  Anyone else asks gatewayd, which does the same for the guest's
 * owner and passes the connected socket back. */
static int
console_connect(struct pv *pv, const char *name)
{
	struct gpaths p;
	struct stat st;
	int fd = -1;

	if (geteuid() != 0)
		return ctl_console(pv, name);
	if (pv_load(pv) == -1)
		return -1;
	gpaths_init(&p, pv, name);
	if (lstat(p.rdir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != 0)
		fd = guest_connect(p.console, st.st_uid, st.st_gid);
	if (fd == -1)
		log_warnx("guest \"%s\" console %s: cannot connect as its "
		    "QEMU user (is it running?)", name, p.console);
	gpaths_free(&p);
	return fd;
}

int
cmd_console(struct pv *pv, int argc, char **argv)
{
	struct termios saved, raw;
	bool tty = isatty(STDIN_FILENO);
	int fd, rc = EXIT_FALSE;

	if (argc != 2 || !name_valid(argv[1])) {
		log_warnx("usage: provision console NAME");
		return EXIT_USAGE;
	}
	if ((fd = console_connect(pv, argv[1])) == -1)
		return EXIT_FALSE;
	if (tty) {
		fprintf(stderr, "connected to %s's serial console; Ctrl-] "
		    "leaves\r\n", argv[1]);
		tcgetattr(STDIN_FILENO, &saved);
		raw = saved;
		cfmakeraw(&raw);
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	rc = relay(fd) == 0 ? EXIT_OK : EXIT_FALSE;
	if (tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	close(fd);
	return rc;
}
