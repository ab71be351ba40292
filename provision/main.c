/*
 * main.c -- provision(8): create, start, stop, list and destroy hardened
 * QEMU guests attached to the moat gateway.  Global options, then one verb
 * from a table.
 */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confpath.h"
#include "log.h"
#include "provision.h"

struct verb {
	const char	*name;
	int		(*fn)(struct pv *, int, char **);
	bool		 needs_root;	/* taps, files of other users */
	const char	*usage;
	bool		 forward;	/* members: gatewayd does it for them */
};

static const struct verb verbs[] = {
	{ "create", cmd_create, true, "create NAME (--image BASE | --kernel K "
	    "[--initrd I] [--append A]) --egress open|allowlist|none [...]", true },
	{ "start", cmd_start, true, "start [--accel auto|kvm|tcg] NAME", true },
	{ "stop", cmd_stop, true, "stop [--force] [--timeout S] NAME", true },
	{ "destroy", cmd_destroy, true, "destroy [--force] [--timeout S] NAME", true },
	{ "list", cmd_list, false, "list [--json] [--owner USER]", true },
	{ "console", cmd_console, false, "console NAME", false },
	{ "qemu-args", cmd_qemu_args, false, "qemu-args [--accel A] NAME", false },
	{ "targets", cmd_targets, false, "targets NAME", false },
	{ "sync-box", cmd_sync_box, true, "sync-box", false },
};

static void __attribute__((noreturn))
usage(int code)
{
	size_t i;

	fprintf(code ? stderr : stdout,
	    "usage: provision [-v] [-c FILE] [--run-dir DIR] [--qemu PATH]\n"
	    "                 [--qemu-img PATH] [--genisoimage PATH]\n"
	    "                 [--containment-check PATH] [--direct] VERB ...\n"
	    "Hardened QEMU guests on the moat gateway.\n\n");
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(code ? stderr : stdout, "  provision %s\n",
		    verbs[i].usage);
	fprintf(code ? stderr : stdout,
	    "\ncreate options: --cpus N --memory MB --disk SIZE --allow NAME "
	    "--secret NAME\n  --ssh-key FILE --accel A --user QEMU_USER "
	    "--login USER --sudo\n  --password-hash-file FILE --owner USER "
	    "--ca FILE --image-format qcow2|raw\n"
	    "--version prints the version.\n"
	    "exit: 0 done, 1 failed (nothing half-made), 2 usage\n"
	    "See provision(8).\n");
	exit(code);
}

static bool
in_moat_group(void)
{
	struct group *gr;
	gid_t groups[256];
	int i, n;

	if ((gr = getgrnam("moat")) == NULL)
		return false;
	n = getgroups(256, groups);
	for (i = 0; i < n; i++)
		if (groups[i] == gr->gr_gid)
			return true;
	return getegid() == gr->gr_gid;
}

/* Root, or the moat group for the verbs that change nothing.  The verbs
 * gatewayd does for members (create, start, ...) reach here only for a
 * user outside the group: joining it is the answer, not becoming root. */
static int
permitted(const struct verb *v)
{
	struct passwd *pw;

	if (geteuid() == 0)
		return 0;
	if (!v->needs_root && in_moat_group())
		return 0;
	if (v->needs_root && !v->forward) {
		log_warnx("%s: permission denied: provision %s needs root",
		    v->name, v->name);
		return -1;
	}
	pw = getpwuid(geteuid());
	log_warnx("%s: permission denied: you are not in group moat; an "
	    "admin adds you with: usermod -aG moat %s (then log in again)",
	    v->name, pw != NULL ? pw->pw_name : "USER");
	return -1;
}

static void
set_sbdir(struct pv *pv)
{
	pv->sbdir = confpath_dir(pv->conf_path, "sandboxes.d");
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "run-dir", required_argument, NULL, 'R' },
		{ "qemu", required_argument, NULL, 'Q' },
		{ "qemu-img", required_argument, NULL, 'I' },
		{ "genisoimage", required_argument, NULL, 'G' },
		{ "version", no_argument, NULL, 'V' },
		{ "containment-check", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ "direct", no_argument, NULL, 'D' },
		{ NULL, 0, NULL, 0 }
	};
	struct pv pv = { .conf_path = MOAT_CONF_DEFAULT, .run_dir = PV_RUN_DIR };
	int c, verbose = 0, rc;
	size_t i;

	log_init("provision", 0, 0);
	/* '+': stop at the verb; its options are its own. */
	while ((c = getopt_long(argc, argv, "+c:hv", lo, NULL)) != -1) {
		switch (c) {
		case 'c': pv.conf_path = optarg; break;
		case 'R': pv.run_dir = optarg; break;
		case 'Q': pv.qemu = optarg; break;
		case 'I': pv.qemu_img = optarg; break;
		case 'G': pv.genisoimage = optarg; break;
		case 'K': pv.containment_check = optarg; break;
		case 'v': verbose++; break;
		case 'D': pv_direct = true; break;
		case 'V':
			printf("%s %s\n", "provision", MOAT_VERSION);
			exit(EXIT_OK);
		case 'h': usage(0);
		default: usage(EXIT_USAGE);
		}
	}
	log_setverbose(verbose + 1);	/* notices (info) are shown */
	if (optind >= argc)
		usage(EXIT_USAGE);
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(argv[optind], verbs[i].name) == 0)
			break;
	if (i == sizeof(verbs) / sizeof(verbs[0])) {
		log_warnx("unknown verb \"%s\"", argv[optind]);
		usage(EXIT_USAGE);
	}
	/* A member of group moat: gatewayd checks ownership and quotas and
	 * does the privileged work; the tool paths are then gatewayd's. */
	if (geteuid() != 0 && verbs[i].forward && in_moat_group()) {
		if (pv.qemu || pv.qemu_img || pv.genisoimage ||
		    pv.containment_check) {
			log_warnx("--qemu, --qemu-img, --genisoimage and "
			    "--containment-check are for root only");
			return EXIT_USAGE;
		}
		return ctl_forward(&pv, argc - optind, argv + optind);
	}
	if (permitted(&verbs[i]) == -1)
		return EXIT_FALSE;
	umask(022);
	set_sbdir(&pv);
	rc = verbs[i].fn(&pv, argc - optind, argv + optind);
	config_free(pv.cfg);
	free(pv.sbdir);
	free(pv.guests_dir);
	return rc;
}
