/*
 * unit.c -- guests as systemd units: moat-guest@NAME.service.
 *
 * A QEMU started by gatewayd (a member's `provision start` runs as its
 * child) would live in gatewayd's cgroup, and `systemctl restart
 * moat-gatewayd` would kill it.  When systemd is PID 1 and provision
 * drives the system's configuration, `start` asks systemd to start the
 * guest's own unit instead, whose ExecStart is `provision --direct start
 * NAME` (the launch below the unit, in its own cgroup).  Without systemd
 * (the namespace test harness, a container) or with --direct, provision
 * launches QEMU itself, as it always did.
 *
 * Autostart: the unit is enabled while the guest is meant to run (start
 * enables it when the guest was created with --autostart, stop and destroy
 * disable it), so after a host reboot exactly the guests that were running
 * come back, behind the policy (the unit is ordered after gatewayd and
 * checks that gatewayd enforces the sandbox before QEMU starts).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"

bool pv_direct;		/* --direct: never through systemd */

/* sd_booted(): systemd is PID 1.  The unit runs provision with the default
 * configuration and run directory, so only those are driven through it. */
bool
unit_managed(const struct pv *pv)
{
	struct stat st;

	return !pv_direct && lstat("/run/systemd/system", &st) == 0 &&
	    S_ISDIR(st.st_mode) &&
	    strcmp(pv->conf_path, MOAT_CONF_DEFAULT) == 0 &&
	    strcmp(pv->run_dir, PV_RUN_DIR) == 0;
}

static char *
autostart_path(const struct gpaths *p)
{
	char *s;

	xasprintf(&s, "%s/autostart", p->dir);
	return s;
}

/* create --autostart (the default) leaves a marker in the guest folder. */
int
unit_autostart_set(const struct gpaths *p, bool on)
{
	char *path = autostart_path(p);
	int fd, rc = 0;

	if (!on)
		unlink(path);
	else if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0644)) == -1) {
		log_warn("%s", path);
		rc = -1;
	} else
		close(fd);
	free(path);
	return rc;
}

bool
unit_autostart(const struct gpaths *p)
{
	char *path = autostart_path(p);
	bool on = access(path, F_OK) == 0;

	free(path);
	return on;
}

/* systemctl [--quiet] VERB moat-guest@NAME.service; its exit status. */
static int
systemctl(const char *verb, const char *name)
{
	const char *prog = tool_find("systemctl", NULL);
	char unit[96];
	char *argv[] = { NULL, "--quiet", (char *)verb, unit, NULL };

	if (prog == NULL) {
		log_warnx("systemd is PID 1 but systemctl is missing");
		return -1;
	}
	argv[0] = (char *)prog;
	snprintf(unit, sizeof(unit), "moat-guest@%s.service", name);
	return run_argv(argv, NULL);
}

int
unit_start(const char *name, bool enable)
{
	if (enable && systemctl("enable", name) != 0)
		log_warnx("guest \"%s\": cannot enable moat-guest@%s.service; "
		    "it will not come back after a reboot", name, name);
	if (systemctl("start", name) != 0) {
		log_warnx("guest \"%s\": moat-guest@%s.service did not start "
		    "(journalctl -u moat-guest@%s.service).  It starts only "
		    "while gatewayd enforces its sandbox", name, name, name);
		systemctl("disable", name);
		return -1;
	}
	return 0;
}

/* Before the guest is stopped: it is not to come back at boot. */
void
unit_disable(const char *name)
{
	systemctl("disable", name);
}

/* After QEMU is gone: the unit's own state follows (a no-op when QEMU's
 * exit already ended it; a guest killed by stop --force leaves it failed). */
void
unit_stopped(const char *name)
{
	systemctl("stop", name);
	systemctl("reset-failed", name);
}
