/*
 * uids.c -- one uid per guest, like systemd's dynamic users: each guest's
 * QEMU (and the qemu-img that imports its image) runs as a uid of its
 * own, from gateway.guest_uids, with a gid of the same number.  A guest
 * that escapes QEMU holds only that uid, which owns nothing but its own
 * guest's files.
 *
 * The record of who holds which uid is each guest's guest.conf: the uid
 * is written there (under a lock on the guests' folder) before anything
 * is made as that uid, and it is free again once destroy removed the
 * file.  A uid is never handed out while a guest.conf names it, while a
 * process runs as it, or when the host already knows it: a passwd or
 * group entry, or a subordinate range in /etc/subuid or /etc/subgid (a
 * user with such a range can become those uids in a user namespace).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libconfig.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"

struct uidset {
	uid_t	*v;
	size_t	 n;
};

static void
uidset_add(struct uidset *s, uid_t u)
{
	s->v = xreallocarray(s->v, s->n + 1, sizeof(*s->v));
	s->v[s->n++] = u;
}

static bool
uidset_has(const struct uidset *s, uid_t u)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i] == u)
			return true;
	return false;
}

/* The uids every guest.conf under guests_dir names. */
static void
uids_recorded(const char *guests_dir, struct uidset *s)
{
	struct dirent *de;
	config_t lc;
	char *path;
	DIR *dp;
	int v;

	if ((dp = opendir(guests_dir)) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		xasprintf(&path, "%s/%s/guest.conf", guests_dir, de->d_name);
		config_init(&lc);
		if (config_read_file(&lc, path) == CONFIG_TRUE &&
		    config_lookup_int(&lc, "uid", &v) == CONFIG_TRUE && v > 0)
			uidset_add(s, (uid_t)v);
		config_destroy(&lc);
		free(path);
	}
	closedir(dp);
}

/* Any live process's real, effective, saved or fs uid (a zombie, not yet
 * reaped by whoever inherited a stopped QEMU, can do nothing). */
static void
uids_running(struct uidset *s)
{
	struct dirent *de;
	char path[64], *st, *c;
	unsigned long a[4];
	DIR *dp;
	int i;

	if ((dp = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(dp)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/status", de->d_name);
		if ((st = read_small_file(path, 4096, NULL)) == NULL)
			continue;
		if ((c = strstr(st, "\nState:\t")) != NULL &&
		    (c[8] == 'Z' || c[8] == 'X')) {
			free(st);
			continue;
		}
		if ((c = strstr(st, "\nUid:")) != NULL &&
		    sscanf(c + 5, "%lu %lu %lu %lu", &a[0], &a[1], &a[2],
		    &a[3]) == 4)
			for (i = 0; i < 4; i++)
				uidset_add(s, (uid_t)a[i]);
		free(st);
	}
	closedir(dp);
}

/* /etc/subuid and /etc/subgid: "user:first:count" lines. */
static bool
in_subid(const char *file, uid_t u)
{
	unsigned long long first, count;
	char line[512], *c;
	bool hit = false;
	FILE *fp;

	if ((fp = fopen(file, "re")) == NULL)
		return false;
	while (!hit && fgets(line, sizeof(line), fp) != NULL) {
		if ((c = strchr(line, ':')) == NULL ||
		    sscanf(c + 1, "%llu:%llu", &first, &count) != 2)
			continue;
		hit = u >= first && u < first + count;
	}
	fclose(fp);
	return hit;
}

static bool
uid_free(const struct uidset *taken, uid_t u)
{
	return !uidset_has(taken, u) && getpwuid(u) == NULL &&
	    getgrgid((gid_t)u) == NULL && !in_subid("/etc/subuid", u) &&
	    !in_subid("/etc/subgid", u);
}

/* The caller holds the guests' folder lock and has made the guest's
 * folder; the uid is written into guest.conf by the caller before the
 * lock goes. */
static int
uid_pick(const struct pv *pv, uid_t *out)
{
	const struct moat_gateway *gw = &pv->cfg->gw;
	struct uidset taken = { 0 };
	uid_t u;
	int rc = -1;

	uids_recorded(pv->guests_dir, &taken);
	uids_running(&taken);
	for (u = gw->guest_uid_first; u <= gw->guest_uid_last; u++)
		if (uid_free(&taken, u)) {
			*out = u;
			rc = 0;
			break;
		}
	if (rc == -1)
		log_warnx("no free uid left in gateway.guest_uids (%u-%u): "
		    "every one is in use by a guest or known to the host",
		    (unsigned)gw->guest_uid_first,
		    (unsigned)gw->guest_uid_last);
	free(taken.v);
	return rc;
}

int
uid_alloc(const struct pv *pv, const char *meta, struct guest *g)
{
	int lockfd, rc;
	uid_t u;

	if ((lockfd = dir_lock(pv->guests_dir)) == -1)
		return -1;
	if ((rc = uid_pick(pv, &u)) == 0) {
		g->uid = (long)u;
		if ((rc = guest_write(meta, g)) == -1)
			g->uid = -1;
	}
	close(lockfd);
	return rc;
}
