/*
 * cmd_start.c -- `start`, `stop` and `qemu-args`: one code path builds the
 * command line, so what qemu-args prints is what start runs.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"

#define START_WAIT_MS	60000	/* TCG on a loaded host is slow to start */

/* Everything a verb needs about one guest. */
struct target {
	struct guest		 g;
	struct gpaths		 p;
	struct qemu_user	 u;
	const struct moat_sandbox *sb;
};

static void
target_free(struct target *t)
{
	guest_free(&t->g);
	gpaths_free(&t->p);
	free(t->u.name);
	memset(t, 0, sizeof(*t));
}

static int
target_load(struct pv *pv, const char *name, struct target *t, bool need_sb)
{
	memset(t, 0, sizeof(*t));
	if (!name_valid(name)) {
		log_warnx("\"%s\": not a guest name", name);
		return -1;
	}
	if (pv_load(pv) == -1)
		return -1;
	gpaths_init(&t->p, pv, name);
	if (access(t->p.meta, F_OK) == -1) {
		log_warnx("no guest \"%s\" (no %s): create it with provision "
		    "create", name, t->p.meta);
		return -1;
	}
	if (guest_read(t->p.meta, &t->g) == -1)
		return -1;
	if ((t->sb = config_sandbox_by_name(pv->cfg, name)) == NULL &&
	    need_sb) {
		log_warnx("guest \"%s\" has no sandbox in the configuration "
		    "(%s missing?)", name, t->p.dropin);
		return -1;
	}
	return guest_user(&t->g, &t->u);
}

static void
qemu_in_fill(const struct pv *pv, const struct target *t, enum pv_accel a,
    struct qemu_in *in)
{
	memset(in, 0, sizeof(*in));
	in->g = &t->g;
	in->p = &t->p;
	in->qemu = pv->qemu;
	in->accel = a;
	in->tapfd = 3;
	in->logfd = 4;
	mac_fmt(t->sb->mac, in->mac);
	addr_fmt(&t->sb->address, in->address, sizeof(in->address));
	addr_fmt(&pv->cfg->gw.address, in->gateway, sizeof(in->gateway));
	netmask_fmt(pv->cfg->gw.network.plen, in->netmask);
	pv_addr6(pv->cfg, t->sb, in->address6, in->gateway6);
}

static int
verb_args(int argc, char **argv, const char *usage, enum pv_accel *accel,
    int *timeout, bool *force)
{
	static const struct option lo[] = {
		{ "accel", required_argument, NULL, 'a' },
		{ "timeout", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	int c;

	optind = 0;	/* 0: full re-initialisation after main's "+" scan */
	while ((c = getopt_long(argc, argv, "ft:", lo, NULL)) != -1) {
		if (c == 'a' && accel != NULL && accel_parse(optarg, accel) == 0)
			continue;
		if (c == 't' && timeout != NULL && (*timeout = atoi(optarg)) >= 0)
			continue;
		if (c == 'f' && force != NULL) {
			*force = true;
			continue;
		}
		log_warnx("usage: %s", usage);
		return -1;
	}
	if (optind != argc - 1) {
		log_warnx("usage: %s", usage);
		return -1;
	}
	return 0;
}

int
cmd_qemu_args(struct pv *pv, int argc, char **argv)
{
	struct target t;
	struct qemu_in in;
	struct strv a = { 0 };
	enum pv_accel accel = ACCEL_AUTO;
	char *s, why[256];
	int rc = EXIT_FALSE;

	if (verb_args(argc, argv, "provision qemu-args [--accel A] NAME",
	    &accel, NULL, NULL) == -1)
		return EXIT_USAGE;
	if (target_load(pv, argv[optind], &t, true) == -1)
		goto out;
	if ((pv->qemu = tool_find("qemu-system-x86_64", pv->qemu)) == NULL) {
		log_warnx("QEMU is missing: qemu-system-x86_64 not found");
		goto out;
	}
	if (accel == ACCEL_AUTO)
		accel = t.g.accel;
	/* auto runs start's KVM probe (a throw-away QEMU, a few seconds). */
	qemu_in_fill(pv, &t, accel_resolve(pv, accel, &t.u, why,
	    sizeof(why)), &in);
	fprintf(stderr, "# accelerator %s: %s\n", accel_name(in.accel), why);
	qemu_argv(&in, &a);
	s = strv_join(&a);
	printf("%s\n", s);
	free(s);
	strv_free(&a);
	rc = EXIT_OK;
out:
	target_free(&t);
	return rc;
}

/* provision targets NAME: the targets file a guest of sandbox NAME is
 * given (and the canary, for itself), as this host's interfaces and
 * routes make it now. */
int
cmd_targets(struct pv *pv, int argc, char **argv)
{
	const struct moat_sandbox *sb = NULL;
	char *t;
	size_t i;

	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: provision targets NAME\n");
		return EXIT_USAGE;
	}
	if (pv_load(pv) == -1)
		return EXIT_FALSE;
	for (i = 0; i < pv->cfg->nsandboxes && sb == NULL; i++)
		if (strcmp(pv->cfg->sandboxes[i].name, argv[1]) == 0)
			sb = &pv->cfg->sandboxes[i];
	if (sb == NULL) {
		log_warnx("no sandbox \"%s\" in the configuration", argv[1]);
		return EXIT_FALSE;
	}
	t = targets_text(pv->cfg, sb->name, sb->egress);
	fputs(t, stdout);
	free(t);
	return EXIT_OK;
}

static int
mkdir_owned(const char *path, mode_t mode, uid_t uid, gid_t gid)
{
	struct stat sb;

	if (mkdir(path, mode) == -1 && errno != EEXIST) {
		log_warn("mkdir %s", path);
		return -1;
	}
	if (lstat(path, &sb) == -1 || !S_ISDIR(sb.st_mode) ||
	    chown(path, uid, gid) == -1 || chmod(path, mode) == -1) {
		log_warn("%s", path);
		return -1;
	}
	return 0;
}

/* QMP and console sockets in a 0700 folder of the QEMU user's. */
static int
prepare_rundir(const struct pv *pv, const struct target *t)
{
	char *g;
	int rc;

	if (mkdir_owned(pv->run_dir, 0755, 0, 0) == -1)
		return -1;
	xasprintf(&g, "%s/guests", pv->run_dir);
	rc = mkdir_owned(g, 0755, 0, 0);
	free(g);
	if (rc == -1 || mkdir_owned(t->p.rdir, 0700, t->u.uid, t->u.gid) == -1)
		return -1;
	unlink(t->p.qmp);
	unlink(t->p.console);
	unlink(t->p.pidfile);
	return 0;
}

static bool
alive(pid_t pid)
{
	char path[64], *s, *c;
	bool ok = false;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((s = read_small_file(path, 512, NULL)) == NULL)
		return false;
	if ((c = strrchr(s, ')')) != NULL && c[1] == ' ')
		ok = c[2] != 'Z' && c[2] != 'X';
	free(s);
	return ok;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Ready once QEMU wrote its pidfile and made both sockets. */
static int
wait_ready(const struct target *t, pid_t pid)
{
	long waited;

	for (waited = 0; waited < START_WAIT_MS; waited += 50) {
		if (!alive(pid))
			return -1;
		if (guest_pid(&t->p, &t->g, t->u.uid) == pid &&
		    access(t->p.qmp, F_OK) == 0 &&
		    access(t->p.console, F_OK) == 0)
			return 0;
		sleep_ms(50);
	}
	return -1;
}

static void
show_qemu_log(const char *path)
{
	char *s = read_small_file(path, 4096, NULL);

	if (s != NULL && *s != '\0')
		fprintf(stderr, "%s", s);
	free(s);
}

static int
launch(struct pv *pv, struct target *t, enum pv_accel accel)
{
	struct qemu_in in;
	struct strv a = { 0 };
	int tapfd = -1, errfd, logfd = -1, rc = -1;
	pid_t pid;

	if ((errfd = open(t->p.qemu_log, O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC | O_NOFOLLOW, 0600)) == -1) {
		log_warn("%s", t->p.qemu_log);
		return -1;
	}
	if (serial_logger_start(&t->p, &t->u, &logfd) == -1)
		goto out;
	if ((tapfd = tap_open(t->sb->tap, t->u.uid, t->u.gid)) == -1)
		goto out;
	if (tap_attach(t->sb->tap, pv->cfg->gw.bridge) == -1)
		goto out;
	qemu_in_fill(pv, t, accel, &in);
	qemu_argv(&in, &a);
	pid = spawn_qemu(a.v, &t->u, tapfd, logfd, errfd, true);
	/* Our copies go now: from here the tap lives exactly as long as
	 * QEMU does, and the logger ends when QEMU does. */
	close(tapfd);
	tapfd = -1;
	close(logfd);
	logfd = -1;
	if (pid <= 0 || wait_ready(t, pid) == -1) {
		log_warnx("QEMU did not start; its messages (%s):",
		    t->p.qemu_log);
		show_qemu_log(t->p.qemu_log);
		if (pid > 0 && alive(pid))
			kill(pid, SIGKILL);
		goto out;
	}
	printf("started %s: pid %d, %s, tap %s on %s, console log %s\n",
	    t->g.name, (int)pid, accel == ACCEL_KVM ? "kvm" : "tcg",
	    t->sb->tap, pv->cfg->gw.bridge, t->p.log);
	rc = 0;
out:
	if (tapfd != -1)
		close(tapfd);
	if (logfd != -1)
		close(logfd);
	close(errfd);
	strv_free(&a);
	return rc;
}

/* For `provision list`: the accelerator and why, in the root-owned guest
 * folder (QEMU cannot write there). */
static void
accel_record(const struct target *t, enum pv_accel accel, const char *why)
{
	FILE *fp = fopen(t->p.accel, "we");

	printf("accelerator %s: %s\n", accel_name(accel), why);
	if (fp == NULL) {
		log_warn("%s", t->p.accel);
		return;
	}
	fprintf(fp, "%s\n%s\n", accel_name(accel), why);
	fclose(fp);
}

static void
clean_rundir(const struct target *t)
{
	unlink(t->p.qmp);
	unlink(t->p.console);
	unlink(t->p.pidfile);
	rmdir(t->p.rdir);
}

/* systemd is PID 1: QEMU runs in the guest's own unit, outside the cgroup
 * of whoever asked (gatewayd, for a member), so it outlives a restart of
 * gatewayd; the unit runs `provision --direct start NAME` (launch above). */
static int
start_unit(const struct target *t)
{
	char *why, *nl;

	if (unit_start(t->g.name, unit_autostart(&t->p)) == -1)
		return -1;
	printf("started %s: pid %d in moat-guest@%s.service%s, tap %s, "
	    "console log %s\n", t->g.name, (int)guest_pid(&t->p, &t->g,
	    t->u.uid), t->g.name, unit_autostart(&t->p) ? " (autostart)" : "",
	    t->sb->tap, t->p.log);
	/* The unit's launch recorded it: "tcg\nreason\n". */
	if ((why = read_small_file(t->p.accel, 512, NULL)) != NULL &&
	    (nl = strchr(why, '\n')) != NULL) {
		*nl++ = '\0';
		nl[strcspn(nl, "\n")] = '\0';
		printf("accelerator %s: %s\n", why, nl);
	}
	free(why);
	return 0;
}

int
cmd_start(struct pv *pv, int argc, char **argv)
{
	struct target t;
	enum pv_accel accel = ACCEL_AUTO;
	char why[256];
	int rc = EXIT_FALSE;

	if (verb_args(argc, argv, "provision start [--accel A] NAME", &accel,
	    NULL, NULL) == -1)
		return EXIT_USAGE;
	if (target_load(pv, argv[optind], &t, true) == -1)
		goto out;
	if ((pv->qemu = tool_find("qemu-system-x86_64", pv->qemu)) == NULL) {
		log_warnx("QEMU is missing: qemu-system-x86_64 not found");
		goto out;
	}
	if (guest_pid(&t.p, &t.g, t.u.uid) > 0) {
		log_warnx("guest \"%s\" is already running", t.g.name);
		goto out;
	}
	/* Never a guest the gateway box does not know: it re-registers
	 * (the same request again changes nothing) and must say ok. */
	if (box_set(pv) && box_register_sandbox(pv, t.sb) == -1) {
		log_warnx("guest \"%s\" not started: the gateway box did not "
		    "take it", t.g.name);
		goto out;
	}
	if (unit_managed(pv)) {
		if (accel != ACCEL_AUTO)
			log_warnx("--accel is ignored: the guest's unit starts "
			    "it with its recorded accelerator (%s)",
			    accel_name(t.g.accel));
		rc = start_unit(&t) == 0 ? EXIT_OK : EXIT_FALSE;
		goto out;
	}
	if (accel == ACCEL_AUTO)
		accel = t.g.accel;
	accel = accel_resolve(pv, accel, &t.u, why, sizeof(why));
	if (prepare_rundir(pv, &t) == -1)
		goto out;
	if (launch(pv, &t, accel) == -1) {
		clean_rundir(&t);
		goto out;
	}
	accel_record(&t, accel, why);
	rc = EXIT_OK;
out:
	target_free(&t);
	return rc;
}

/* When pid started (field 22 of /proc/PID/stat, clock ticks after boot),
 * or 0: with the pid, it names one process, never a later one. */
static unsigned long long
started_at(pid_t pid)
{
	char path[64], *s, *c;
	unsigned long long t = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((s = read_small_file(path, 1024, NULL)) == NULL)
		return 0;
	c = strrchr(s, ')');
	for (i = 3; c != NULL && i <= 22; i++)
		c = strchr(c + 1, ' ');
	if (c != NULL)
		t = strtoull(c + 1, NULL, 10);
	free(s);
	return t;
}

/* Gone once the process itself is, whatever the pidfile says: the QEMU
 * user can write the pidfile, so a guest that escaped into QEMU could
 * empty it to be taken for stopped. */
static bool
wait_gone(pid_t pid, unsigned long long start, int seconds)
{
	long ms;

	for (ms = 0; ms <= seconds * 1000L; ms += 100) {
		if (!alive(pid) || started_at(pid) != start)
			return true;
		sleep_ms(100);
	}
	return false;
}

/* Ask nicely (ACPI power button), then tell QEMU to quit, then kill. */
static int
stop_target(const struct target *t, int timeout_s, bool force)
{
	pid_t pid = guest_pid(&t->p, &t->g, t->u.uid);
	unsigned long long start;

	if (pid <= 0 || (start = started_at(pid)) == 0) {
		clean_rundir(t);
		return 0;
	}
	if (!force && qmp_command(t->p.qmp, &t->u, "system_powerdown") == 0 &&
	    wait_gone(pid, start, timeout_s))
		goto done;
	if (qmp_command(t->p.qmp, &t->u, "quit") == 0 &&
	    wait_gone(pid, start, 5))
		goto done;
	kill(pid, SIGKILL);
	if (!wait_gone(pid, start, 5)) {
		log_warnx("guest \"%s\" (pid %d) does not die", t->g.name,
		    (int)pid);
		return -1;
	}
done:
	clean_rundir(t);
	return 0;
}

int
stop_guest(struct pv *pv, const char *name, int timeout_s, bool force)
{
	struct target t;
	int rc = -1;

	bool managed = unit_managed(pv);

	if (target_load(pv, name, &t, false) == 0) {
		if (managed)		/* stopped: not to come back at boot */
			unit_disable(name);
		rc = stop_target(&t, timeout_s, force);
		if (managed)
			unit_stopped(name);
	}
	target_free(&t);
	return rc;
}

int
cmd_stop(struct pv *pv, int argc, char **argv)
{
	int timeout = 30;
	bool force = false;

	if (verb_args(argc, argv, "provision stop [--force] [--timeout S] "
	    "NAME", NULL, &timeout, &force) == -1)
		return EXIT_USAGE;
	if (stop_guest(pv, argv[optind], timeout, force) == -1)
		return EXIT_FALSE;
	printf("stopped %s\n", argv[optind]);
	return EXIT_OK;
}
