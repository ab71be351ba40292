/*
 * proc.c -- running programs without a shell (fork + execve of a resolved
 * path with an argument vector and a fixed environment), starting QEMU as
 * the unprivileged user, and finding a running guest.
 */
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "privdrop.h"
#include "provision.h"

static const char *const search_path[] = {
	"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
	"/sbin", "/bin",
};
static char *const clean_env[] = {
	"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/", "LC_ALL=C", NULL
};

/* A fixed search path, never the caller's $PATH: provision runs as root. */
const char *
tool_find(const char *name, const char *override)
{
	static char buf[8][256];
	static int slot;
	char *b;
	size_t i;

	if (override != NULL)
		return access(override, X_OK) == 0 ? override : NULL;
	b = buf[slot++ % 8];
	for (i = 0; i < sizeof(search_path) / sizeof(search_path[0]); i++) {
		snprintf(b, sizeof(buf[0]), "%s/%s", search_path[i], name);
		if (access(b, X_OK) == 0)
			return b;
	}
	return NULL;
}

static void
child_stdio(int errfd)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd != -1) {
		dup2(fd, STDIN_FILENO);
		if (errfd >= 0) {
			dup2(errfd, STDOUT_FILENO);
			dup2(errfd, STDERR_FILENO);
		}
		if (fd > 2)
			close(fd);
	}
}

int
run_argv(char *const argv[], const char *unused)
{
	pid_t pid;
	int st;

	(void)unused;
	if ((pid = fork()) == -1) {
		log_warn("fork");
		return -1;
	}
	if (pid == 0) {
		child_stdio(-1);
		execve(argv[0], argv, clean_env);
		fprintf(stderr, "provision: exec %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR) {
			log_warn("waitpid");
			return -1;
		}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
qemu_user_lookup(const char *name, struct qemu_user *u)
{
	struct passwd *pw = getpwnam(name);

	if (pw == NULL) {
		log_warnx("user \"%s\" does not exist: create it (useradd "
		    "--system --no-create-home --shell /usr/sbin/nologin %s) "
		    "or choose another with --user", name, name);
		return -1;
	}
	if (pw->pw_uid == 0 || pw->pw_gid == 0) {
		log_warnx("user \"%s\": QEMU must not run as root or group "
		    "root", name);
		return -1;
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
	u->name = xstrdup(name);
	/* Its own groups go with it: on Debian /dev/kvm is root:kvm 0660. */
	u->ngroups = PV_MAX_GROUPS;
	if (getgrouplist(name, pw->pw_gid, u->groups, &u->ngroups) == -1) {
		u->groups[0] = pw->pw_gid;
		u->ngroups = 1;
	}
	return 0;
}

/* /dev/kvm access is managed in one place: a guest's uid gets the
 * supplementary groups of the moat-qemu user (install-users.sh puts it in
 * kvm), never its primary group; without that user, the kvm group. */
static void
kvm_groups(struct qemu_user *u)
{
	struct passwd *pw = getpwnam(PV_QEMU_USER);
	struct group *gr;
	gid_t g[PV_MAX_GROUPS];
	int i, n = PV_MAX_GROUPS;

	if (pw != NULL && getgrouplist(PV_QEMU_USER, pw->pw_gid, g, &n) != -1) {
		for (i = 0; i < n && u->ngroups < PV_MAX_GROUPS; i++)
			if (g[i] != pw->pw_gid && g[i] != 0)
				u->groups[u->ngroups++] = g[i];
		return;
	}
	if ((gr = getgrnam("kvm")) != NULL && gr->gr_gid != 0)
		u->groups[u->ngroups++] = gr->gr_gid;
}

void
sandbox_user(uid_t id, const char *name, struct qemu_user *u)
{
	u->uid = id;
	u->gid = (gid_t)id;
	xasprintf(&u->name, "uid %u (guest %s)", (unsigned)id, name);
	u->groups[0] = (gid_t)id;
	u->ngroups = 1;
	kvm_groups(u);
}

/* Guests made before per-guest uids name a shared user instead. */
int
guest_user(const struct guest *g, struct qemu_user *u)
{
	if (g->uid > 0) {
		sandbox_user((uid_t)g->uid, g->name, u);
		return 0;
	}
	return qemu_user_lookup(g->user, u);
}

/* lib/privdrop.c's drop, keeping the user's groups (kvm): no way back
 * to root, no_new_privs, no core file. */
int
become(const struct qemu_user *u)
{
	return privdrop_groups(u->uid, u->gid, u->groups,
	    (size_t)u->ngroups, u->name);
}

int
as_qemu_user(const struct qemu_user *u, int (*fn)(const void *, char *,
    size_t), const void *arg, char *why, size_t len)
{
	int pfd[2], st;
	ssize_t n;
	pid_t pid;

	snprintf(why, len, "could not run a check as %s", u->name);
	if (pipe2(pfd, O_CLOEXEC) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		char buf[256] = "";
		int rc = -1;

		if (become(u) == -1)
			snprintf(buf, sizeof(buf), "cannot become user %s: %s",
			    u->name, strerror(errno));
		else
			rc = fn(arg, buf, sizeof(buf));

		if (rc != 0)
			(void)!write(pfd[1], buf, strlen(buf));
		_exit(rc == 0 ? 0 : 1);
	}
	close(pfd[1]);
	n = read(pfd[0], why, len - 1);
	why[n > 0 ? n : 0] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* In the child: limits, no network, then the guest's user for good. */
static void __attribute__((noreturn))
limited_child(const struct qemu_user *u, const struct run_limits *l,
    int (*fn)(void *), void *arg, int outfd)
{
	struct rlimit as = { l->as_bytes, l->as_bytes };
	struct rlimit fs = { l->fsize_bytes, l->fsize_bytes };
	int fd = open("/dev/null", O_RDWR);

	setpgid(0, 0);
	/* qemu-img must not reach any host: an image that names nbd: or
	 * json: finds no network.  Best effort: where namespaces are
	 * forbidden the header check (import.c) already refused those. */
	(void)unshare(CLONE_NEWNET);
	/* Its stderr is never shown: no oracle about what it tried. */
	if (fd == -1 || dup2(fd, 0) == -1 || dup2(outfd >= 0 ? outfd : fd,
	    1) == -1 || dup2(fd, 2) == -1)
		_exit(126);
	signal(SIGXFSZ, SIG_IGN);	/* past the limit: EFBIG, not death */
	if (setrlimit(RLIMIT_AS, &as) == -1 || setrlimit(RLIMIT_FSIZE,
	    &fs) == -1 || chdir("/") == -1 || become(u) == -1)
		_exit(126);
	_exit(fn(arg) == 0 ? 0 : 1);
}

static int
wait_limited(pid_t pid, int outfd, unsigned timeout_s, char *out,
    size_t outlen)
{
	struct timespec t0, now;
	struct pollfd pfd[2];
	size_t n = 0;
	ssize_t r;
	int pidfd, st, left, np;

	if ((pidfd = (int)syscall(SYS_pidfd_open, pid, 0)) == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = (int)((long)timeout_s * 1000 - ((now.tv_sec - t0.tv_sec) *
		    1000 + (now.tv_nsec - t0.tv_nsec) / 1000000));
		if (left <= 0)
			break;
		pfd[0] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = outfd, .events = POLLIN };
		np = outfd >= 0 ? 2 : 1;
		if (poll(pfd, (nfds_t)np, left) == -1 && errno != EINTR)
			break;
		if (np == 2 && pfd[1].revents != 0) {
			char sink[512];
			r = n + 1 < outlen ? read(outfd, out + n, outlen - 1 -
			    n) : read(outfd, sink, sizeof(sink));
			if (r > 0 && n + 1 < outlen)
				n += (size_t)r;
			else if (r <= 0)
				outfd = -1;
		}
		if (pfd[0].revents != 0 && outfd < 0)
			break;
	}
	if (out != NULL)
		out[n] = '\0';
	close(pidfd);
	if (left <= 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	if (left <= 0)
		return RUN_TIMEOUT;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int
run_limited(const struct qemu_user *u, const struct run_limits *l,
    int (*fn)(void *), void *arg, char *out, size_t outlen)
{
	int pfd[2] = { -1, -1 }, rc;
	pid_t pid;

	if (out != NULL && pipe2(pfd, O_CLOEXEC) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		if (out != NULL) {
			close(pfd[0]);
			close(pfd[1]);
		}
		return -1;
	}
	if (pid == 0)
		limited_child(u, l, fn, arg, pfd[1]);
	if (out != NULL)
		close(pfd[1]);
	rc = wait_limited(pid, pfd[0], l->timeout_s, out, outlen);
	if (out != NULL)
		close(pfd[0]);
	return rc;
}

/* In the child: the tap on fd 3 and the serial log's pipe on fd 4 (each
 * when given), nothing else open, no way back to root. */
static void
child_drop(const struct qemu_user *u, int tapfd, int logfd, int errfd)
{
	int keep[2] = { tapfd, logfd }, i;

	child_stdio(errfd);
	/* Out of the way first, so that neither lands on the other. */
	for (i = 0; i < 2; i++)
		if (keep[i] >= 0 && (keep[i] = fcntl(keep[i], F_DUPFD, 64)) ==
		    -1)
			_exit(126);
	for (i = 0; i < 2; i++)
		if (keep[i] >= 0 ? dup2(keep[i], 3 + i) == -1 :
		    close(3 + i) == -1 && errno != EBADF)
			_exit(126);
	if (close_range(5, ~0u, 0) == -1)
		_exit(126);
	umask(077);
	/* become() also keeps guest memory out of any core file. */
	if (chdir("/") == -1 || become(u) == -1)
		_exit(126);
}

/* detach: QEMU ends up in its own session, reparented to init, so it
 * outlives provision; the returned pid is QEMU's. */
pid_t
spawn_qemu(char *const argv[], const struct qemu_user *u, int tapfd,
    int logfd, int errfd, bool detach)
{
	int pfd[2], st;
	pid_t pid, q = -1;

	if (pipe2(pfd, O_CLOEXEC) == -1) {
		log_warn("pipe");
		return -1;
	}
	if ((pid = fork()) == -1) {
		log_warn("fork");
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		if (detach) {
			setsid();
			if ((q = fork()) != 0) {
				(void)!write(pfd[1], &q, sizeof(q));
				_exit(q == -1);
			}
		}
		child_drop(u, tapfd, logfd, errfd);
		execve(argv[0], argv, clean_env);
		_exit(127);
	}
	close(pfd[1]);
	if (!detach) {
		close(pfd[0]);
		return pid;
	}
	if (read(pfd[0], &q, sizeof(q)) != sizeof(q))
		q = -1;
	close(pfd[0]);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	return q;
}

long long
mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The child: read, hand the bytes over, exit.  It keeps nothing of
 * ours but the two descriptors, and runs as nobody: a read stuck in a
 * FUSE filesystem cannot be killed, so the child may outlive us. */
static void __attribute__((noreturn))
reader_child(int fd, size_t max, int out)
{
	unsigned lo = (unsigned)(fd < out ? fd : out);
	unsigned hi = (unsigned)(fd < out ? out : fd);
	size_t n, off = 0;
	ssize_t w;
	char *s;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* Not even our stdout and stderr: a child stuck in a read nobody
	 * answers would hold them open, and whoever reads our output
	 * (gatewayd, for a member's create) would wait for it too. */
	if (null == -1 || null <= 2 || dup2(null, 0) == -1 ||
	    dup2(null, 1) == -1 || dup2(null, 2) == -1)
		_exit(1);
	if ((lo > 3 && close_range(3, lo - 1, 0) == -1) ||
	    (hi > lo + 1 && close_range(lo + 1, hi - 1, 0) == -1) ||
	    close_range(hi + 1, ~0U, 0) == -1 ||
	    privdrop_ids(65534, 65534, "nobody") == -1)
		_exit(1);
	if ((s = read_small_fd(fd, max, NULL)) == NULL)
		_exit(1);
	n = strlen(s);
	while (off < n) {
		if ((w = write(out, s + off, n - off)) == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		off += (size_t)w;
	}
	_exit(0);
}

/* Collect what the child sends until it closes the pipe, or the deadline.
 * 1 when the deadline passed first. */
static int
reader_collect(int in, char *buf, size_t max, size_t *n, long long deadline)
{
	struct pollfd pfd = { .fd = in, .events = POLLIN };
	long long left;
	ssize_t r;

	while (*n < max) {
		if ((left = deadline - mono_ms()) <= 0)
			return 1;
		if ((r = poll(&pfd, 1, (int)(left > 60000 ? 60000 : left))) == -1 &&
		    errno == EINTR)
			continue;
		if (r == 0)
			continue;
		if ((r = read(in, buf + *n, max - *n)) == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		*n += (size_t)r;
	}
	return 0;
}

char *
read_small_fd_within(int fd, size_t max, unsigned secs)
{
	char *buf;
	size_t n = 0;
	int p[2], st = 0, late;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1)
		return NULL;
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return NULL;
	}
	if (pid == 0) {
		close(p[0]);
		reader_child(fd, max, p[1]);
	}
	close(p[1]);
	buf = xmalloc(max + 1);
	late = reader_collect(p[0], buf, max, &n, mono_ms() + secs * 1000LL);
	close(p[0]);
	if (late) {
		/* Once FUSE has the request, even SIGKILL waits for its
		 * answer: do not wait for the child, it is nobody's now. */
		kill(pid, SIGKILL);
		free(buf);
		errno = ETIMEDOUT;
		return NULL;
	}
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

/* The pidfile sits in a folder the QEMU user can write, so its content is
 * not trusted: the pid must belong to the QEMU user and carry the guest's
 * process name before anyone signals it. */
pid_t
guest_pid(const struct gpaths *p, const struct guest *g, uid_t uid)
{
	char path[64], want[16], *s, *c;
	long v;
	pid_t pid = 0;

	if ((s = read_small_file(p->pidfile, 32, NULL)) == NULL)
		return 0;
	v = strtol(s, &c, 10);
	if (*c != '\n' && *c != '\0')
		v = 0;
	free(s);
	if (v <= 1 || v > 0x400000)
		return 0;
	/* Status, not the owner of /proc/PID: that turns root once QEMU
	 * makes itself non-dumpable. */
	snprintf(path, sizeof(path), "/proc/%ld/status", v);
	if ((s = read_small_file(path, 4096, NULL)) == NULL)
		return 0;
	c = strstr(s, "\nUid:");
	if (c == NULL || strtoul(c + 5, NULL, 10) != (unsigned long)uid) {
		free(s);
		return 0;
	}
	free(s);
	snprintf(path, sizeof(path), "/proc/%ld/stat", v);
	if ((s = read_small_file(path, 512, NULL)) == NULL)
		return 0;
	c = strrchr(s, ')');
	/* QEMU renames itself (-name process=) only once it is set up. */
	snprintf(want, sizeof(want), "(moat-%s", g->name);
	if (c != NULL && c[1] == ' ' && c[2] != 'Z' && c[2] != 'X' &&
	    (strncmp(s + strcspn(s, "("), want, strlen(want)) == 0 ||
	    strncmp(s + strcspn(s, "("), "(qemu-system", 12) == 0))
		pid = (pid_t)v;
	free(s);
	return pid;
}

long
proc_uptime(pid_t pid)
{
	char path[64], *s, *c;
	unsigned long long start = 0;
	double up;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((s = read_small_file(path, 1024, NULL)) == NULL)
		return -1;
	c = strrchr(s, ')');
	/* starttime is field 22; after ')' come fields 3.. */
	for (i = 3; c != NULL && i <= 22; i++)
		c = strchr(c + 1, ' ');
	if (c != NULL)
		start = strtoull(c + 1, NULL, 10);
	free(s);
	if ((s = read_small_file("/proc/uptime", 64, NULL)) == NULL)
		return -1;
	up = strtod(s, NULL);
	free(s);
	return (long)(up - (double)start / (double)sysconf(_SC_CLK_TCK));
}

static int
rm_one(const char *path)
{
	if (unlink(path) == -1 && errno != ENOENT) {
		log_warn("remove %s", path);
		return -1;
	}
	return 0;
}

/* Only the names provision itself creates: a stray file makes rmdir fail
 * loudly rather than be deleted unseen. */
int
rm_rf_guest(const struct gpaths *p)
{
	const char *const files[] = { p->meta, p->disk, p->seed, p->log,
	    p->log_old, p->qemu_log, p->accel, p->verdict, p->latest, p->kernel,
	    p->initrd, p->import, p->qmp, p->console, p->pidfile };
	size_t i;
	int rc = 0;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		rc |= rm_one(files[i]);
	if (rmdir(p->rdir) == -1 && errno != ENOENT) {
		log_warn("remove %s", p->rdir);
		rc = -1;
	}
	if (rmdir(p->dir) == -1 && errno != ENOENT) {
		log_warn("remove %s", p->dir);
		rc = -1;
	}
	return rc;
}
