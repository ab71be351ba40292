/*
 * cmd_destroy.c -- `provision destroy NAME`: stop the guest, then remove its
 * tap (if one outlived QEMU), its folder, its runtime folder and its
 * drop-in, and ask gatewayd to reload.  Nothing of the guest is left.
 *
 * The drop-in goes first, through lib/cfgtxn.h: if the configuration
 * does not load without it (an admin's exception names the sandbox, say)
 * it is put back and nothing is destroyed; it is put back too if the
 * guest cannot be stopped.  The configuration on disk always loads.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "log.h"
#include "provision.h"

/* Remove the drop-in, and keep it removed only if the configuration
 * loads without it: the open transaction, or NULL (nothing changed). */
static struct cfgtxn *
dropin_remove(const struct pv *pv, const char *name, const char *dropin)
{
	struct cfgtxn *t = cfgtxn_begin(pv->conf_path);
	char *errors = NULL, *line, *save = NULL;

	if (cfgtxn_stage_remove(t, dropin) == 0 &&
	    cfgtxn_commit_and_check(t, NULL, NULL, &errors) == 0)
		return t;
	for (line = errors ? strtok_r(errors, "\n", &save) : NULL;
	    line != NULL; line = strtok_r(NULL, "\n", &save))
		log_warnx("%s", line);
	log_warnx("guest \"%s\" not destroyed: the configuration would not "
	    "load without it; nothing was changed", name);
	free(errors);
	cfgtxn_end(t);
	return NULL;
}

static int
destroy_locked(struct pv *pv, const char *name, int timeout, bool force)
{
	const struct moat_sandbox *sb;
	struct cfgtxn *t = NULL;
	struct gpaths p;
	char tap[16] = "";
	int rc = EXIT_FALSE;

	if (pv_load(pv) == -1)
		return EXIT_FALSE;
	gpaths_init(&p, pv, name);
	if (access(p.meta, F_OK) == -1) {
		log_warnx("no guest \"%s\" made by provision (%s missing); "
		    "sandboxes written by hand are removed by hand", name,
		    p.meta);
		goto out;
	}
	if ((sb = config_sandbox_by_name(pv->cfg, name)) != NULL)
		snprintf(tap, sizeof(tap), "%s", sb->tap);
	if ((t = dropin_remove(pv, name, p.dropin)) == NULL)
		goto out;
	if (stop_guest(pv, name, timeout, force) == -1) {
		log_warnx("guest \"%s\" is still running: not destroyed",
		    name);
		goto put_back;
	}
	if (tap[0] != '\0' && tap_delete_stale(tap) == -1)
		goto put_back;
	/* Applied before anything of the guest goes: if gatewayd refuses
	 * the configuration without it, the drop-in comes back as it was
	 * and the guest can be started again. */
	if (ctl_reload(pv) == CTL_REFUSED) {
		log_warnx("guest \"%s\" not destroyed: gatewayd refused the "
		    "configuration without it; its drop-in is back, the guest "
		    "is stopped (provision start %s)", name, name);
		if (cfgtxn_rollback(t) == -1)
			log_warnx("the drop-in of \"%s\" could not be put back",
			    name);
		goto out;
	}
	cfgtxn_end(t);			/* from here on the guest goes */
	t = NULL;
	unit_autostart_set(&p, false);	/* the marker is ours (unit.c) */
	if (rm_rf_guest(&p) == -1)
		goto out;
	if (box_set(pv) && box_remove(pv, name) == -1) {
		log_warnx("guest \"%s\" removed here; the gateway box still "
		    "lists it until `provision sync-box` reaches it", name);
		goto out;
	}
	printf("destroyed %s\n", name);
	rc = EXIT_OK;
	goto out;
put_back:
	/* A reload meanwhile may have dropped the guest's policy. */
	if (cfgtxn_rollback(t) == 0)
		(void)ctl_reload(pv);
out:
	cfgtxn_end(t);
	gpaths_free(&p);
	return rc;
}

int
cmd_destroy(struct pv *pv, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "timeout", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 }
	};
	int c, lockfd, rc, timeout = 10;
	bool force = false;

	optind = 0;	/* 0: full re-initialisation after main's "+" scan */
	while ((c = getopt_long(argc, argv, "ft:", lo, NULL)) != -1) {
		if (c == 'f')
			force = true;
		else if (c == 't' && (timeout = atoi(optarg)) >= 0)
			continue;
		else
			goto usage;
	}
	if (optind != argc - 1 || !name_valid(argv[optind]))
		goto usage;
	if (access(pv->sbdir, F_OK) == -1) {
		log_warnx("no guest \"%s\": %s does not exist", argv[optind],
		    pv->sbdir);
		return EXIT_FALSE;
	}
	if ((lockfd = dir_lock(pv->sbdir)) == -1)
		return EXIT_FALSE;
	rc = destroy_locked(pv, argv[optind], timeout, force);
	close(lockfd);
	return rc;
usage:
	log_warnx("usage: provision destroy [--force] [--timeout S] NAME");
	return EXIT_USAGE;
}
