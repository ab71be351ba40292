/*
 * serial.c -- a guest's serial console: its log, kept within a size, and
 * its first-boot verdict.
 *
 * QEMU writes what the guest prints on its serial console into a pipe
 * (its chardev's logfile is the pipe, passed as fd 4; see qemu.c), never
 * into a file: a guest could fill the host's disk through a file.  The
 * other end is the serial logger, a small process started with QEMU that
 * runs as the guest's QEMU user with nothing but five descriptors:
 * the pipe, console.log, console.log.1, until a verdict is recorded the
 * verdict file, and verdict.rec.  The files are root's, in the guest's
 * folder (root's), opened by root before the logger drops to the QEMU
 * user, so a guest that escaped into its QEMU can neither write them
 * directly nor rename them; it can kill its logger, which only ends its
 * own log.
 *
 * console.log never grows past SERIAL_LOG_MAX bytes: before a write
 * would take it past, its last SERIAL_LOG_MAX bytes are copied over
 * console.log.1 and it starts again empty (the logger holds descriptors,
 * not the folder, so it rotates by copying).  The two files hold at most
 * 2 * SERIAL_LOG_MAX.  If the logger cannot keep up, QEMU waits, which
 * slows that guest's serial console alone.
 *
 * Everything on the serial console is written by the guest, so a verdict
 * is the guest's own claim, and is taken only in one shape: a whole line
 * "MOAT-VERDICT: WORD" (carriage returns allowed at its end) whose WORD
 * is one of verdict.h's words.  Anything else -- escape sequences, a
 * verdict inside another line, an unknown word, a line too long -- is no
 * verdict, and a line that carries the tag in any of those shapes is
 * counted as rejected.  The first verdict a guest reports is kept in the
 * verdict file: the check runs at first boot, before anyone logs in, so
 * what a guest prints later cannot replace it.  Every verdict, the first
 * and each scheduled re-check's, also goes into verdict.rec, a fixed
 * record (struct verdict_rec) with the host's time of the latest and the
 * rejected counts: gatewayd reads that record, never the console's text.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"
#include "provision.h"
#include "verdict.h"

/* One line without its "\n": a verdict, or NONE for anything else. */
enum verdict
verdict_line(const char *line, size_t len)
{
	enum verdict v;

	return vline_classify(line, len, false, memmem(line, len, VERDICT_TAG,
	    sizeof(VERDICT_TAG) - 1) != NULL, &v) == VL_VERDICT ? v :
	    VERDICT_NONE;
}

static void
first_verdict(void *arg, enum vline k, enum verdict v)
{
	struct verdict_scan *vs = arg;

	if (k == VL_VERDICT && vs->v == VERDICT_NONE) {
		vs->v = v;
		vs->found = true;
	}
}

/* Only a line's first bytes are kept: a verdict line is short, and a
 * longer one is not a verdict whatever it says. */
void
verdict_feed(struct verdict_scan *vs, const char *buf, size_t n)
{
	bool stop = vs->v != VERDICT_NONE;

	if (!stop)
		vline_feed(&vs->ls, buf, n, first_verdict, vs, &vs->found);
}

/* The recorded verdict: the file holds one word of the table and a
 * newline, nothing else. */
enum verdict
verdict_file_read(const char *path)
{
	enum verdict v = VERDICT_NONE;
	size_t len;
	char *s;

	if ((s = read_small_file(path, 32, &len)) == NULL)
		return VERDICT_NONE;
	if (len > 0 && s[len - 1] == '\n')
		v = verdict_of(s, len - 1);
	free(s);
	return v;
}

/* A guest's console log from its start, at most max bytes: its first
 * verdict.  For guests whose verdict was never recorded on its own. */
enum verdict
verdict_log_scan(const char *path, size_t max)
{
	struct verdict_scan vs = { .v = VERDICT_NONE };
	struct stat st;
	char buf[4096];
	ssize_t r;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1)
		return VERDICT_NONE;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		while (vs.v == VERDICT_NONE && max > 0 && (r = read(fd, buf,
		    max < sizeof(buf) ? max : sizeof(buf))) > 0) {
			verdict_feed(&vs, buf, (size_t)r);
			max -= (size_t)r;
		}
	close(fd);
	return vs.v;
}

/* --- the log ------------------------------------------------------------ */

/* A file of root's in the guest's folder, for writing: never through a
 * symlink, only a regular file, made ours (root's) and 0600 whoever had
 * it (guests made before the logger gave console.log to QEMU's user). */
static int
root_file(const char *path, int flags)
{
	struct stat st;
	int fd;

	if ((fd = open(path, O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
	    flags, 0600)) == -1) {
		log_warn("%s", path);
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    ((st.st_uid != geteuid() || st.st_gid != getegid()) &&
	    fchown(fd, geteuid(), getegid()) == -1) || fchmod(fd, 0600) == -1 ||
	    fcntl(fd, F_SETFL, flags & O_APPEND) == -1) {
		log_warnx("%s: not a regular file of root's", path);
		close(fd);
		return -1;
	}
	return fd;
}

static void
write_at(int fd, const char *buf, size_t n, off_t off)
{
	ssize_t w;

	while (n > 0) {
		if ((w = pwrite(fd, buf, n, off)) == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return;		/* a full disk: the log loses it */
		buf += w;
		n -= (size_t)w;
		off += w;
	}
}

/* console.log's last max bytes over console.log.1; console.log empty. */
static void
rotate(struct serial_log *l)
{
	char buf[8192];
	off_t from = l->size > l->max ? l->size - l->max : 0, to = 0;
	ssize_t r;

	if (ftruncate(l->old, 0) == 0)
		while ((r = pread(l->cur, buf, sizeof(buf), from)) > 0) {
			write_at(l->old, buf, (size_t)r, to);
			from += r;
			to += r;
		}
	if (ftruncate(l->cur, 0) == -1)
		log_warn("truncating the console log");
	l->size = 0;
}

int
serial_log_open(const struct gpaths *p, off_t max, struct serial_log *l)
{
	struct stat st;
	enum verdict v;

	memset(l, 0, sizeof(*l));
	l->old = l->verdict = l->latest = -1;
	l->max = max < SERIAL_LOG_MIN ? SERIAL_LOG_MIN : max;
	/* console.log is read back when it is rotated. */
	if ((l->cur = root_file(p->log, O_RDWR | O_APPEND)) == -1 ||
	    (l->old = root_file(p->log_old, O_WRONLY)) == -1 ||
	    (l->latest = root_file(p->latest, O_RDWR)) == -1 ||
	    fstat(l->cur, &st) == -1) {
		serial_log_close(l);
		return -1;
	}
	/* The counts go on from the last run's record, if it is one. */
	if (verdict_rec_read(p->latest, &l->rec) == -1)
		memset(&l->rec, 0, sizeof(l->rec));
	l->size = st.st_size;
	/* The first verdict ever: recorded already, or in an old log from
	 * before it had a file (so read before the log is cut), or still to
	 * come. */
	if ((v = verdict_file_read(p->verdict)) == VERDICT_NONE) {
		if ((l->verdict = root_file(p->verdict, O_WRONLY | O_TRUNC)) ==
		    -1) {
			serial_log_close(l);
			return -1;
		}
		if ((v = verdict_log_scan(p->log_old, VERDICT_SCAN_MAX)) ==
		    VERDICT_NONE)
			v = verdict_log_scan(p->log, VERDICT_SCAN_MAX);
		l->vs.v = v;
		verdict_record(l);
	}
	if (l->size > l->max)	/* a log from before the cap */
		rotate(l);
	return 0;
}

/* Once the guest reported a verdict: written, and never again. */
void
verdict_record(struct serial_log *l)
{
	const char *w = verdict_word(l->vs.v);
	char line[32];
	int n;

	if (w == NULL || l->verdict == -1)
		return;
	n = snprintf(line, sizeof(line), "%s\n", w);
	write_at(l->verdict, line, (size_t)n, 0);
	close(l->verdict);
	l->verdict = -1;
}

/* Every line that concerns verdicts: the first verdict goes to its
 * file once, and each one, or each rejected line, into the record. */
static void
log_line(void *arg, enum vline k, enum verdict v)
{
	struct serial_log *l = arg;

	if (k == VL_NONE)
		return;
	if (k == VL_VERDICT && l->verdict != -1 && l->vs.v == VERDICT_NONE) {
		l->vs.v = v;
		verdict_record(l);
	}
	verdict_rec_count(&l->rec, k, v, (int64_t)time(NULL));
	if (l->latest != -1)
		write_at(l->latest, (const char *)&l->rec, sizeof(l->rec), 0);
}

void
serial_log_write(struct serial_log *l, const char *buf, size_t n)
{
	ssize_t w;

	vline_feed(&l->ls, buf, n, log_line, l, NULL);
	while (n > 0) {
		if (l->size + (off_t)n > l->max)
			rotate(l);
		w = write(l->cur, buf, n > (size_t)l->max ? (size_t)l->max : n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		l->size += w;
		buf += w;
		n -= (size_t)w;
	}
}

void
serial_log_close(struct serial_log *l)
{
	if (l->cur != -1)
		close(l->cur);
	if (l->old != -1)
		close(l->old);
	if (l->verdict != -1)
		close(l->verdict);
	if (l->latest != -1)
		close(l->latest);
	l->cur = l->old = l->verdict = l->latest = -1;
}

/* --- the logger process ---------------------------------------------------- */

/* Only fds[0..n-1] stay open, as 3, 4, ...; 0-2 are /dev/null. */
static int
keep_only(int *fds, int n)
{
	int i, tmp[5], null;

	for (i = 0; i < n; i++)
		if (fds[i] != -1 && (tmp[i] = fcntl(fds[i], F_DUPFD, 64)) == -1)
			return -1;
	for (i = 0; i < n; i++) {
		if (fds[i] == -1)
			close(3 + i);		/* whatever was there */
		else if (dup2(tmp[i], 3 + i) == -1)
			return -1;
		else
			fds[i] = 3 + i;
	}
	if ((null = open("/dev/null", O_RDWR)) == -1 || dup2(null, 0) == -1 ||
	    dup2(null, 1) == -1 || dup2(null, 2) == -1)
		return -1;
	return close_range(3 + (unsigned)n, ~0U, 0);
}

static void __attribute__((noreturn))
logger_run(struct serial_log *l, int in, const struct qemu_user *u)
{
	int fds[5] = { in, l->cur, l->old, l->verdict, l->latest };
	char buf[4096];
	sigset_t none;
	ssize_t r;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (keep_only(fds, 5) == -1 || privdrop_ids(u->uid, u->gid,
	    "the serial logger") == -1)
		_exit(1);
	in = fds[0];
	l->cur = fds[1];
	l->old = fds[2];
	l->verdict = fds[3];
	l->latest = fds[4];
	prctl(PR_SET_NAME, "moat-serial", 0, 0, 0);
	while ((r = read(in, buf, sizeof(buf))) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			break;
		serial_log_write(l, buf, (size_t)r);
	}
	_exit(0);
}

int
serial_logger_start(const struct gpaths *p, const struct qemu_user *u,
    int *qemu_end)
{
	struct serial_log l;
	int pfd[2], st, rc = -1;
	pid_t pid;

	*qemu_end = -1;
	if (serial_log_open(p, SERIAL_LOG_MAX, &l) == -1)
		return -1;
	if (pipe2(pfd, O_CLOEXEC) == -1) {
		log_warn("pipe");
		serial_log_close(&l);
		return -1;
	}
	/* Detached like QEMU (its own session, reparented), so that it
	 * lives as long as QEMU holds the pipe and no longer. */
	if ((pid = fork()) == 0) {
		setsid();
		if (fork() == 0) {
			close(pfd[1]);
			logger_run(&l, pfd[0], u);
		}
		_exit(0);
	}
	if (pid != -1) {
		while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
			;
		rc = 0;
	} else
		log_warn("fork");
	close(pfd[0]);
	serial_log_close(&l);
	if (rc == 0)
		*qemu_end = pfd[1];
	else
		close(pfd[1]);
	return rc;
}
