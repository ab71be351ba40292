/*
 * cmd_create.c -- `provision create NAME`.
 *
 * Order matters for "nothing half-made": everything that can be checked
 * without side effects is checked first (inputs, opened once, as
 * descriptors), then the guest folder is made (which claims the name), a
 * uid of its own is recorded in it, and the member's files are imported,
 * all with no lock held.  Only then, under the sandboxes.d lock, are the
 * address and tap picked, the seed written and the drop-in put in place,
 * kept only if the whole configuration loads with it (dropin.c); then
 * gatewayd is asked to reload.  Any failure after the folder exists
 * removes it (and so frees its uid); a refused reload also takes the
 * drop-in out again.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfgtxn.h"
#include "guestacct.h"
#include "log.h"
#include "provision.h"
#include "secretfile.h"

struct create_opts {
	struct guest	 g;
	const char	*egress;
	struct strv	 allow, secrets;
	const char	*ssh_key_file, *ca_file, *pw_file, *owner;
	char		*ssh_key, *ca_pem, *pw_hash;
	int		 image_fd, kernel_fd, initrd_fd;	/* or -1 */
	bool		 no_autostart;	/* --no-autostart (see unit.c) */
	unsigned	 reverify;	/* --reverify-interval, seconds */
	bool		 reverify_given;
	bool		 quarantine;	/* --quarantine-on-breach */
};

/* getopt values: provision's option table (lib/guestacct.c) by index. */
#define OPT(id)	(256 + (id))

/* --name for getopt_long, from the shared table. */
static const struct option *
create_longopts(void)
{
	static struct option o[GO_NOPTS + 1];
	int i;

	if (o[0].name != NULL)
		return o;
	for (i = 0; i < GO_NOPTS; i++)
		o[i] = (struct option){ guest_create_opts[i].name + 2,
		    guest_create_opts[i].kind == GUEST_FLAG ? no_argument :
		    required_argument, NULL, OPT(i) };
	return o;
}

/* Seconds, as the sandbox's reverify_interval takes them. */
static int
parse_reverify(const char *s, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtoul(s, &end, 10);
	if (*end != '\0' || v > 604800 || (v > 0 && v < MOAT_REVERIFY_MIN))
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* "1024", "1024M", "2G" -> MiB, within what QEMU is given. */
static int
parse_mem(const char *s, int *mb)
{
	long v = guestacct_memory_mb(s);

	if (v < 64 || v > 1024 * 1024)
		return -1;
	*mb = (int)v;
	return 0;
}

static bool
safe_word(const char *s, const char *extra)
{
	size_t n = strlen(s);

	return n > 0 && n < 256 && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") + strspn(s + strspn(s,
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	    "-_."), extra) == n;
}

static int
set_opt(struct create_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT(GO_IMAGE):	o->g.image = xstrdup(arg); break;
	case OPT(GO_IMAGE_FORMAT): o->g.image_format = xstrdup(arg); break;
	case OPT(GO_KERNEL):	o->g.kernel = xstrdup(arg); break;
	case OPT(GO_INITRD):	o->g.initrd = xstrdup(arg); break;
	case OPT(GO_APPEND):	o->g.append = xstrdup(arg); break;
	case OPT(GO_CPUS):
		o->g.cpus = atoi(arg);
		if (o->g.cpus < 1 || o->g.cpus > 64) {
			log_warnx("--cpus: expected 1 to 64, got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT(GO_MEMORY):
		if (parse_mem(arg, &o->g.memory_mb) == -1) {
			log_warnx("--memory: expected MiB like 1024, 512M or "
			    "2G (at least 64M), got \"%s\"", arg);
			return -1;
		}
		break;
	case OPT(GO_DISK):	o->g.disk = xstrdup(arg); break;
	case OPT(GO_EGRESS):	o->egress = arg; break;
	case OPT(GO_ALLOW):	strv_add(&o->allow, arg); break;
	case OPT(GO_SECRET):	strv_add(&o->secrets, arg); break;
	case OPT(GO_SSH_KEY):	o->ssh_key_file = arg; break;
	case OPT(GO_ACCEL):
		if (accel_parse(arg, &o->g.accel) == -1) {
			log_warnx("--accel: expected auto, kvm or tcg, got "
			    "\"%s\"", arg);
			return -1;
		}
		break;
	case OPT(GO_USER):	free(o->g.user); o->g.user = xstrdup(arg); break;
	case OPT(GO_LOGIN):	free(o->g.login); o->g.login = xstrdup(arg); break;
	case OPT(GO_SUDO):	o->g.sudo = true; break;
	case OPT(GO_PWHASH):	o->pw_file = arg; break;
	case OPT(GO_OWNER):	o->owner = arg; break;
	case OPT(GO_CA):	o->ca_file = arg; break;
	case OPT(GO_AUTOSTART):	o->no_autostart = false; break;
	case OPT(GO_NO_AUTOSTART): o->no_autostart = true; break;
	case OPT(GO_REVERIFY):
		if (parse_reverify(arg, &o->reverify) == -1) {
			log_warnx("--reverify-interval: expected 0 (first boot "
			    "only) or %d to 604800 seconds, got \"%s\"",
			    MOAT_REVERIFY_MIN, arg);
			return -1;
		}
		o->reverify_given = true;
		break;
	case OPT(GO_QUARANTINE): o->quarantine = true; break;
	default:
		return -1;
	}
	return 0;
}

/* The format is never left to QEMU's probing: a raw image whose first
 * bytes look like qcow2 must not become a qcow2 with a chosen backing.
 * What else the image may hold is import_image's to check. */
static int
check_image(struct create_opts *o)
{
	struct guest *g = &o->g;
	char magic[4];

	if ((o->image_fd = input_open("--image", g->image)) == -1)
		return -1;
	if (pread(o->image_fd, magic, 4, 0) != 4) {
		log_warnx("--image %s: too short to be an image", g->image);
		return -1;
	}
	if (g->image_format == NULL) {
		if (memcmp(magic, "QFI\xfb", 4) != 0) {
			log_warnx("--image %s: not a qcow2 image; give "
			    "--image-format raw if it is a raw disk", g->image);
			return -1;
		}
		g->image_format = xstrdup("qcow2");
	} else if (strcmp(g->image_format, "qcow2") != 0 &&
	    strcmp(g->image_format, "raw") != 0) {
		log_warnx("--image-format: expected qcow2 or raw");
		return -1;
	}
	return 0;
}

static int
check_mode(struct create_opts *o)
{
	struct guest *g = &o->g;

	if ((g->image != NULL) == (g->kernel != NULL)) {
		log_warnx("give either --image BASE.qcow2 or --kernel K "
		    "(with --initrd I)");
		return -1;
	}
	if (g->image != NULL) {
		g->mode = MODE_IMAGE;
		if (g->initrd != NULL || g->append != NULL) {
			log_warnx("--initrd and --append go with --kernel");
			return -1;
		}
		if (o->ssh_key_file == NULL) {
			log_warnx("--ssh-key FILE is needed with --image: the "
			    "guest has no password login");
			return -1;
		}
		return check_image(o);
	}
	g->mode = MODE_KERNEL;
	if (g->append != NULL && strpbrk(g->append, "\n\r") != NULL) {
		log_warnx("--append: one line expected");
		return -1;
	}
	if ((o->kernel_fd = input_open("--kernel", g->kernel)) == -1)
		return -1;
	if (g->initrd != NULL &&
	    (o->initrd_fd = input_open("--initrd", g->initrd)) == -1)
		return -1;
	return 0;
}

/* A small text file the member named, read from its descriptor within
 * gateway.import_timeout: the file may sit on a filesystem the member
 * serves (FUSE) and never answer a read. */
static char *
read_input(const char *opt, const char *path, size_t max, unsigned secs)
{
	char *s;
	int fd;

	if ((fd = input_open(opt, path)) == -1)
		return NULL;
	if ((s = read_small_fd_within(fd, max, secs)) == NULL &&
	    errno == ETIMEDOUT)
		log_warnx("%s %s: not read within %u s (gateway.import_timeout)",
		    opt, path, secs);
	close(fd);
	return s;
}

static int
check_lists(struct create_opts *o)
{
	char why[256];
	size_t i;

	if (o->egress == NULL) {
		log_warnx("--egress open|allowlist|none is required: there "
		    "is no silent default");
		return -1;
	}
	if (strcmp(o->egress, "open") != 0 && strcmp(o->egress,
	    "allowlist") != 0 && strcmp(o->egress, "none") != 0) {
		log_warnx("--egress: expected open, allowlist or none, got "
		    "\"%s\"", o->egress);
		return -1;
	}
	for (i = 0; i < o->allow.n; i++)
		if (!hostpattern_why(o->allow.v[i], why, sizeof(why))) {
			log_warnx("--allow: %s", why);
			return -1;
		}
	for (i = 0; i < o->secrets.n; i++)
		if (!name_valid(o->secrets.v[i])) {
			log_warnx("--secret: expected a secret's name, got "
			    "\"%s\"", o->secrets.v[i]);
			return -1;
		}
	if (o->owner != NULL && !safe_word(o->owner, "")) {
		log_warnx("--owner: expected a user name");
		return -1;
	}
	if (!safe_word(o->g.login, "") || strcmp(o->g.login, "root") == 0) {
		log_warnx("--login: expected a user name other than root");
		return -1;
	}
	if (o->g.sudo && o->pw_file == NULL) {
		log_warnx("--sudo needs --password-hash-file FILE: sudo is "
		    "never passwordless");
		return -1;
	}
	if (o->g.disk != NULL && !guestacct_size_valid(o->g.disk)) {
		log_warnx("--disk: expected a size like 8G, got \"%s\"",
		    o->g.disk);
		return -1;
	}
	return 0;
}

static int
read_inputs(struct create_opts *o, const struct pv *pv)
{
	char *ca_default = NULL;

	if (o->ssh_key_file != NULL) {
		o->ssh_key = read_input("--ssh-key", o->ssh_key_file, 16384,
		    pv->cfg->gw.import_timeout);
		if (o->ssh_key == NULL || (strncmp(o->ssh_key, "ssh-", 4) &&
		    strncmp(o->ssh_key, "ecdsa-", 6) &&
		    strncmp(o->ssh_key, "sk-", 3))) {
			log_warnx("--ssh-key %s: expected an OpenSSH public key "
			    "file", o->ssh_key_file);
			return -1;
		}
	}
	if (o->pw_file != NULL) {
		o->pw_hash = read_input("--password-hash-file", o->pw_file,
		    512, pv->cfg->gw.import_timeout);
		if (o->pw_hash == NULL || o->pw_hash[0] != '$') {
			log_warnx("--password-hash-file %s: expected a crypt(3) "
			    "hash such as mkpasswd prints", o->pw_file);
			return -1;
		}
		o->pw_hash[strcspn(o->pw_hash, "\n")] = '\0';
	}
	if (o->g.mode != MODE_IMAGE)
		return 0;
	if (o->ca_file == NULL)
		xasprintf(&ca_default, "%s/proxy-ca.crt", pv->cfg->gw.state_dir);
	o->ca_pem = o->ca_file ? read_input("--ca", o->ca_file, 65536,
	    pv->cfg->gw.import_timeout) :
	    read_small_file(ca_default, 65536, NULL);
	if (o->ca_pem == NULL && o->ca_file != NULL) {
		free(ca_default);
		return -1;
	}
	if (o->ca_pem == NULL)
		log_warnx("no gateway CA at %s yet: the guest will not trust "
		    "the proxy's certificates (give --ca FILE)", ca_default);
	else if (strstr(o->ca_pem, "-----BEGIN CERTIFICATE-----") == NULL) {
		log_warnx("%s: expected a PEM certificate", o->ca_file ?
		    o->ca_file : ca_default);
		free(ca_default);
		return -1;
	}
	free(ca_default);
	return 0;
}

static int
find_tools(struct pv *pv, enum pv_mode mode)
{
	if ((pv->qemu = tool_find("qemu-system-x86_64", pv->qemu)) == NULL) {
		log_warnx("QEMU is missing: qemu-system-x86_64 not found "
		    "(Debian: apt-get install qemu-system-x86)");
		return -1;
	}
	if ((pv->qemu_img = tool_find("qemu-img", pv->qemu_img)) == NULL) {
		log_warnx("qemu-img is missing (Debian: qemu-utils)");
		return -1;
	}
	if (mode == MODE_IMAGE && (pv->genisoimage =
	    tool_find("genisoimage", pv->genisoimage)) == NULL) {
		log_warnx("genisoimage is missing (Debian: genisoimage)");
		return -1;
	}
	if (mode == MODE_IMAGE) {
		const char *given = pv->containment_check;

		pv->containment_check = tool_find("containment-check", given);
		if (pv->containment_check == NULL && given != NULL) {
			log_warnx("--containment-check %s: not executable", given);
			return -1;
		}
		if (pv->containment_check == NULL)
			log_info("containment-check not found: the guest will not "
			    "check itself at first boot");
	}
	return 0;
}

/* A --secret that names no secret: say which ones it could name, only
 * those the sandbox's owner may use (a member never learns the names of
 * another member's secrets). */
static void
secret_unknown(const struct pv *pv, const char *name, const char *owner)
{
	char *list = NULL, *t;
	size_t i;

	for (i = 0; i < pv->cfg->nsecrets; i++) {
		const struct moat_secret *x = &pv->cfg->secrets[i];

		if (x->name == NULL || (owner != NULL && x->owner != NULL &&
		    !secret_usable_by(x, owner)))
			continue;
		xasprintf(&t, "%s%s%s", list ? list : "", list ? ", " : "",
		    x->name);
		free(list);
		list = t;
	}
	if (list != NULL)
		log_warnx("--secret %s: no secret named \"%s\" is defined; "
		    "defined: %s", name, name, list);
	else
		log_warnx("--secret %s: no secret named \"%s\" is defined, "
		    "and there are none (\"secrets\" in moat.conf(5), or "
		    "gatewayd ctl secret set)", name, name);
	free(list);
}

/* Address, MAC and tap, and the drop-in that records them. */
static int
plan_sandbox(struct pv *pv, struct create_opts *o, struct dropin *d,
    struct seed_in *s)
{
	struct moat_sandbox x = { 0 };
	struct moat_addr a;
	uint8_t mac[6];
	size_t i;

	if (config_sandbox_by_name(pv->cfg, o->g.name) != NULL) {
		log_warnx("a sandbox named \"%s\" already exists", o->g.name);
		return -1;
	}
	if (alloc_address(pv->cfg, &a) == -1) {
		log_warnx("address pool exhausted: no free address left in "
		    "gateway.network");
		return -1;
	}
	alloc_mac(pv->cfg, &a, mac);
	memset(d, 0, sizeof(*d));
	d->name = o->g.name;
	addr_fmt(&a, d->address, sizeof(d->address));
	mac_fmt(mac, d->mac);
	if (alloc_tap(pv->cfg, o->g.name, iface_exists, d->tap) == -1) {
		log_warnx("no free tap name for \"%s\"", o->g.name);
		return -1;
	}
	d->egress = o->egress;
	d->allow = o->allow;
	d->secrets = o->secrets;
	d->owner = o->owner;
	d->reverify = o->reverify;
	d->reverify_given = o->reverify_given;
	d->quarantine = o->quarantine;
	memset(s, 0, sizeof(*s));
	s->name = o->g.name;
	s->login = o->g.login;
	s->ssh_key = o->ssh_key;
	s->ca_pem = o->ca_pem;
	s->sudo = o->g.sudo;
	s->password_hash = o->pw_hash;
	s->cc_path = pv->containment_check;
	s->cc_expect = o->egress;
	s->reverify = o->reverify;
	memcpy(s->mac, d->mac, sizeof(s->mac));
	memcpy(s->address, d->address, sizeof(s->address));
	s->plen = pv->cfg->gw.network.plen;
	addr_fmt(&pv->cfg->gw.address, s->gateway, sizeof(s->gateway));
	x.egress = strcmp(o->egress, "open") == 0 ? EGRESS_OPEN :
	    strcmp(o->egress, "allowlist") == 0 ? EGRESS_ALLOWLIST : EGRESS_NONE;
	s->targets = targets_text(pv->cfg, o->g.name, x.egress);
	/* The sandbox as its drop-in will read, for its IPv6 address. */
	x.address = a;
	x.ipv6 = true;
	x.egress_budget = -1;
	x.secrets.v = o->secrets.v;
	x.secrets.n = o->secrets.n;
	pv_addr6(pv->cfg, &x, s->address6, s->gateway6);
	for (i = 0; i < o->secrets.n; i++) {
		const struct moat_secret *sec =
		    config_secret_by_name(pv->cfg, o->secrets.v[i]);
		char var[64];

		if (sec == NULL) {
			secret_unknown(pv, o->secrets.v[i], o->owner);
			return -1;
		}
		if (sec->placeholder == NULL ||
		    strchr(sec->placeholder, '\'') != NULL) {
			log_warnx("--secret %s: its placeholder %s; the guest's "
			    "environment gets it in single quotes", sec->name,
			    sec->placeholder ? "holds a single quote" :
			    "is not set");
			return -1;
		}
		strv_addf(&s->env, "%s=%s", secret_env_name(sec->name, var,
		    sizeof(var)), sec->placeholder);
	}
	return 0;
}

/* Kernel mode: an empty disk; nothing of the member's is read. */
static int
make_disk(const struct pv *pv, const struct guest *g, const char *disk)
{
	char *const argv[] = { (char *)pv->qemu_img, "create", "-q", "-f",
	    "qcow2", (char *)disk, g->disk ? g->disk : GUEST_KERNEL_DISK, NULL };

	if (run_argv(argv, NULL) != 0) {
		log_warnx("qemu-img could not create %s", disk);
		return -1;
	}
	return 0;
}

/* Files QEMU opens are the QEMU user's; the record stays root's. */
static int
give(const char *path, const struct qemu_user *u)
{
	int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd == -1 || fchown(fd, u->uid, u->gid) == -1 ||
	    fchmod(fd, 0600) == -1) {
		log_warn("%s", path);
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int
mkdir_p(const char *path, mode_t mode)
{
	char *p = xstrdup(path), *s;
	int rc = 0;

	for (s = p + 1; rc == 0 && (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(p, 0755) == -1 && errno != EEXIST)
			rc = -1;
		*s = '/';
	}
	if (rc == 0 && mkdir(p, mode) == -1 && errno != EEXIST)
		rc = -1;
	if (rc == -1)
		log_warn("mkdir %s", p);
	free(p);
	return rc;
}

struct open_check {
	const char	*path;
	int		 flags;
};

/* As the QEMU user: open the file; on failure name the first folder on
 * its path the user cannot pass. */
static int
user_opens(const void *arg, char *why, size_t len)
{
	const struct open_check *c = arg;
	char *dir = xstrdup(c->path), *s;
	struct stat sb;
	int fd, err;

	if ((fd = open(c->path, c->flags | O_CLOEXEC)) != -1) {
		close(fd);
		free(dir);
		return 0;
	}
	err = errno;
	snprintf(why, len, "%s: %s", c->path, strerror(err));
	for (s = dir + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (access(dir, X_OK) == -1 && stat(dir, &sb) == 0) {
			snprintf(why, len, "%s: %s (folder %s is mode %04o "
			    "uid %u gid %u: its QEMU user must be able to "
			    "pass through it)", c->path, strerror(err), dir,
			    (unsigned)(sb.st_mode & 07777),
			    (unsigned)sb.st_uid, (unsigned)sb.st_gid);
			break;
		}
		*s = '/';
	}
	free(dir);
	return -1;
}

/* The guest must be able to open what QEMU will open: check it as QEMU's
 * user rather than print "created" for a guest that cannot boot. */
static int
check_qemu_access(const struct guest *g, const struct gpaths *p,
    const struct qemu_user *u)
{
	struct open_check c[] = { { p->disk, O_RDWR }, { p->log, O_WRONLY },
	    { g->kernel, O_RDONLY }, { g->initrd, O_RDONLY },
	    { p->seed, O_RDONLY } };
	char why[512];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (c[i].path == NULL || (c[i].path == p->seed &&
		    g->mode != MODE_IMAGE))
			continue;
		if (as_qemu_user(u, user_opens, &c[i], why, sizeof(why)) == 0)
			continue;
		log_warnx("guest \"%s\" not created: QEMU's user %s cannot "
		    "open %s", g->name, u->name, why);
		return -1;
	}
	return 0;
}

/* The owner's disk quota in bytes, 0 for none: no image may be larger. */
static unsigned long long
quota_bytes(const struct pv *pv, const char *owner)
{
	const struct moat_quota *q = owner ? config_quota_for(pv->cfg, owner) :
	    NULL;

	return q != NULL && q->disk_gb >= 0 ? (unsigned long long)q->disk_gb
	    << 30 : 0;
}

/* The member's files become the guest's own: after this nothing the
 * member named is ever opened again. */
static int
import_inputs(struct pv *pv, struct create_opts *o, const struct gpaths *p,
    const struct qemu_user *u)
{
	struct guest *g = &o->g;

	if (g->mode == MODE_IMAGE) {
		if (import_image(pv, g, p, u, o->image_fd,
		    quota_bytes(pv, o->owner)) == -1)
			return -1;
		return 0;
	}
	if (import_file(pv, "--kernel", o->kernel_fd, p->kernel, u) == -1 ||
	    (g->initrd != NULL && import_file(pv, "--initrd", o->initrd_fd,
	    p->initrd, u) == -1))
		return -1;
	free(g->kernel);
	g->kernel = xstrdup(p->kernel);
	if (g->initrd != NULL) {
		free(g->initrd);
		g->initrd = xstrdup(p->initrd);
	}
	return make_disk(pv, g, p->disk) == -1 || give(p->disk, u) == -1 ?
	    -1 : 0;
}

/* The guest's folder is root's, group the guest's gid, mode 0710: its
 * uid may pass and open the files it owns (0600) but create, rename or
 * remove nothing, so guest.conf, which root trusts, stays root's. */
static int
guest_folder(struct pv *pv, struct create_opts *o, const struct gpaths *p,
    struct qemu_user *u)
{
	if (mkdir_p(pv->guests_dir, 0711) == -1)
		return -1;
	if (mkdir(p->dir, 0700) == -1) {
		log_warn("%s (a guest folder of that name exists)", p->dir);
		return 1;	/* not ours: do not remove it */
	}
	if (o->g.user != NULL) {
		if (qemu_user_lookup(o->g.user, u) == -1 ||
		    guest_write(p->meta, &o->g) == -1)
			return -1;
	} else if (uid_alloc(pv, p->meta, &o->g) == -1)
		return -1;
	else
		sandbox_user((uid_t)o->g.uid, o->g.name, u);
	if (chown(p->dir, 0, u->gid) == -1 || chmod(p->dir, 0710) == -1) {
		log_warn("%s", p->dir);
		return -1;
	}
	return 0;
}

/* Slow work, with no lock held: a stuck import holds up nobody else. */
static int
build_guest(struct pv *pv, struct create_opts *o, const struct gpaths *p,
    struct qemu_user *u)
{
	int rc;

	struct open_check log = { p->log, O_WRONLY };
	char why[512];

	if ((rc = guest_folder(pv, o, p, u)) != 0)
		return rc;
	/* First whether the guest's uid reaches its folder at all: the
	 * import runs as that uid too. */
	if (give(p->log, u) == -1)
		return -1;
	if (as_qemu_user(u, user_opens, &log, why, sizeof(why)) == -1) {
		log_warnx("guest \"%s\" not created: QEMU's user %s cannot "
		    "open %s", o->g.name, u->name, why);
		return -1;
	}
	if (import_inputs(pv, o, p, u) == -1)
		return -1;
	return guest_write(p->meta, &o->g);
}

static void
create_free(struct create_opts *o)
{
	guest_free(&o->g);
	strv_free(&o->allow);
	strv_free(&o->secrets);
	free(o->ssh_key);
	free(o->ca_pem);
	if (o->image_fd != -1)
		close(o->image_fd);
	if (o->kernel_fd != -1)
		close(o->kernel_fd);
	if (o->initrd_fd != -1)
		close(o->initrd_fd);
	if (o->pw_hash != NULL)
		explicit_bzero(o->pw_hash, strlen(o->pw_hash));
	free(o->pw_hash);
}

static int
create_parse(struct create_opts *o, int argc, char **argv)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->image_fd = o->kernel_fd = o->initrd_fd = -1;
	o->g.cpus = GUEST_DEFAULT_CPUS;
	o->g.memory_mb = GUEST_DEFAULT_MEMORY_MB;
	o->g.uid = -1;
	o->g.login = xstrdup(PV_LOGIN);
	o->reverify = MOAT_REVERIFY_DEFAULT;
	optind = 0;	/* 0: full re-initialisation after main's "+" scan */
	while ((c = getopt_long(argc, argv, "", create_longopts(), NULL)) != -1)
		if (set_opt(o, c, optarg) == -1)
			return -1;
	if (optind != argc - 1) {
		log_warnx("usage: provision create NAME (--image BASE | "
		    "--kernel K [--initrd I]) --egress MODE [options]");
		return -1;
	}
	if (!name_valid(argv[optind])) {
		log_warnx("NAME: expected 1 to 32 of a-z, 0-9, '-', '_', "
		    "starting with a letter or digit, got \"%s\"",
		    argv[optind]);
		return -1;
	}
	o->g.name = xstrdup(argv[optind]);
	return check_mode(o) == -1 || check_lists(o) == -1 ? -1 : 0;
}

/* Under the sandboxes.d lock, and quick: the address, MAC and tap are
 * picked from the configuration as it is now, the seed (which carries
 * them) is written, and the drop-in is put in place if the configuration
 * loads with it (*t: its transaction, for a later step that fails). */
static int
commit_locked(struct pv *pv, struct create_opts *o, const struct gpaths *p,
    const struct qemu_user *u, struct dropin *d, struct cfgtxn **t)
{
	struct seed_in s = { 0 };
	int rc = -1;

	if (pv_load(pv) == -1 || plan_sandbox(pv, o, d, &s) == -1)
		goto out;
	if (o->g.mode == MODE_IMAGE && (seed_build(pv, &s, p->seed) == -1 ||
	    give(p->seed, u) == -1))
		goto out;
	if (check_qemu_access(&o->g, p, u) == 0 &&
	    (*t = dropin_add(pv, d, p->dropin)) != NULL)
		rc = 0;
out:
	strv_free(&s.env);
	free(s.targets);
	return rc;
}

static int
create_guest(struct pv *pv, struct create_opts *o)
{
	struct dropin d;
	struct gpaths p;
	struct qemu_user u = { 0 };
	struct cfgtxn *t = NULL;
	int rc = EXIT_FALSE, b, lockfd;

	if (pv_load(pv) == -1 || read_inputs(o, pv) == -1 ||
	    find_tools(pv, o->g.mode) == -1)
		return EXIT_FALSE;
	if (config_sandbox_by_name(pv->cfg, o->g.name) != NULL) {
		log_warnx("a sandbox named \"%s\" already exists", o->g.name);
		return EXIT_FALSE;
	}
	gpaths_init(&p, pv, o->g.name);
	if ((b = build_guest(pv, o, &p, &u)) != 0) {
		if (b == -1)
			rm_rf_guest(&p);
		goto out;
	}
	if (mkdir(pv->sbdir, 0755) == -1 && errno != EEXIST)
		log_warn("mkdir %s", pv->sbdir);
	if ((lockfd = dir_lock(pv->sbdir)) == -1) {
		rm_rf_guest(&p);
		goto out;
	}
	b = commit_locked(pv, o, &p, &u, &d, &t);
	/* A separate box must take the sandbox before it exists here; still
	 * under the lock, so that a sync-box never sends a list without it
	 * while it is being registered. */
	if (b == 0 && box_set(pv) && box_register(pv, &(struct box_sandbox){
	    o->g.name, d.address, d.mac, d.egress, o->allow.v, o->allow.n,
	    o->secrets.v, o->secrets.n }) == -1) {
		cfgtxn_rollback(t);
		log_warnx("guest \"%s\" not created: the gateway box did not "
		    "take it", o->g.name);
		b = -1;
	}
	close(lockfd);
	if (b == -1) {
		rm_rf_guest(&p);
		goto out;
	}
	if (ctl_reload(pv) == CTL_REFUSED) {
		cfgtxn_rollback(t);
		rm_rf_guest(&p);
		log_warnx("guest \"%s\" not created: gatewayd refused it",
		    o->g.name);
		goto out;
	}
	unit_autostart_set(&p, !o->no_autostart);
	printf("created %s: %s mode, address %s, mac %s, tap %s, egress %s, "
	    "uid %u\n", o->g.name, mode_name(o->g.mode), d.address, d.mac,
	    d.tap, d.egress, (unsigned)u.uid);
	rc = EXIT_OK;
out:
	cfgtxn_end(t);
	gpaths_free(&p);
	free(u.name);
	return rc;
}

int
cmd_create(struct pv *pv, int argc, char **argv)
{
	struct create_opts o;
	int rc;

	if (create_parse(&o, argc, argv) == -1) {
		create_free(&o);
		return EXIT_USAGE;
	}
	rc = create_guest(pv, &o);
	create_free(&o);
	return rc;
}
