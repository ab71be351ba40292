/*
 * local.c -- host exposure seen from inside the guest, without a packet:
 * a table of checks, each one K_LOCAL probe found or absent with evidence.
 *
 * The network-shape checks (NICs, default routes) read /proc/net, which
 * follows the network namespace, so they always run.  The others read the
 * kernel and file system, which a network namespace shares with the host:
 * they run only when the caller says this is a guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

#include "cc.h"

extern char **environ;

struct local_check {
	const char	*what;
	bool		 host_only;
	bool		(*found)(const struct cc_disc *, char *, size_t);
};

static bool
nested_virt(const struct cc_disc *d, char *ev, size_t len)
{
	char line[4096];
	bool vmx = false, svm = false;
	FILE *f;

	if ((f = fopen("/proc/cpuinfo", "re")) != NULL) {
		while (fgets(line, sizeof(line), f) != NULL) {
			if (strncmp(line, "flags", 5) != 0)
				continue;
			vmx |= strstr(line, " vmx") != NULL;
			svm |= strstr(line, " svm") != NULL;
		}
		fclose(f);
	}
	snprintf(ev, len, "%s%s%s", vmx ? "cpu flag vmx " : "",
	    svm ? "cpu flag svm " : "",
	    access("/dev/kvm", F_OK) == 0 ? "/dev/kvm present" : "");
	return vmx || svm || access("/dev/kvm", F_OK) == 0;
}

static bool
shared_mounts(const struct cc_disc *d, char *ev, size_t len)
{
	static const char *const fstypes[] = {
		"9p", "virtiofs", "nfs", "nfs4", "cifs", "smb3", "fuse.sshfs",
	};
	char dev[256], dir[256], type[64];
	size_t i, off = 0;
	FILE *f;

	ev[0] = '\0';
	if ((f = fopen("/proc/self/mounts", "re")) == NULL)
		return false;
	while (fscanf(f, "%255s %255s %63s %*[^\n]", dev, dir, type) == 3) {
		for (i = 0; i < sizeof(fstypes) / sizeof(fstypes[0]); i++) {
			if (strcmp(type, fstypes[i]) != 0 || off >= len)
				continue;
			off += (size_t)snprintf(ev + off, len - off, "%s%s on %s",
			    off ? ", " : "", type, dir);
		}
	}
	fclose(f);
	return ev[0] != '\0';
}

/* A vsock transport to the host exists if the guest has a context id. */
static bool
vsock_host(const struct cc_disc *d, char *ev, size_t len)
{
	unsigned cid = 0;
	int fd;

	if ((fd = open("/dev/vsock", O_RDONLY | O_CLOEXEC)) == -1)
		return false;
	if (ioctl(fd, IOCTL_VM_SOCKETS_GET_LOCAL_CID, &cid) == -1)
		cid = VMADDR_CID_ANY;
	close(fd);
	if (cid == VMADDR_CID_ANY || cid <= VMADDR_CID_HOST)
		return false;
	snprintf(ev, len, "/dev/vsock, local CID %u", cid);
	return true;
}

/* sudo -n true: succeeds only when no password is needed.  Bounded by
 * an alarm in the child so a hung sudo cannot hang the scan. */
static bool
passwordless_sudo(const struct cc_disc *d, char *ev, size_t len)
{
	static const char *const paths[] = { "/usr/bin/sudo", "/bin/sudo" };
	const char *sudo = NULL;
	size_t i;
	pid_t pid;
	int st, null;

	if (geteuid() == 0) {
		snprintf(ev, len, "running as root");
		return false;
	}
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			sudo = paths[i];
	if (sudo == NULL || (pid = fork()) == -1)
		return false;
	if (pid == 0) {
		null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		alarm(3);
		execl(sudo, "sudo", "-n", "true", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) == -1 || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return false;
	snprintf(ev, len, "sudo -n true succeeded");
	return true;
}

/* Values shaped like real provider keys.  Placeholders say PLACEHOLDER
 * (a guest only ever holds those; real values stay on the gateway). */
static const struct keyshape {
	const char	*prefix;
	size_t		 minlen;
} keyshapes[] = {
	{ "sk-ant-", 40 }, { "sk-proj-", 40 }, { "sk-", 40 }, { "ghp_", 36 },
	{ "gho_", 36 }, { "github_pat_", 40 }, { "glpat-", 20 },
	{ "xoxb-", 30 }, { "xoxp-", 30 }, { "AKIA", 20 }, { "AIza", 39 },
	{ "hf_", 30 },
};

static bool
looks_real(const char *v)
{
	size_t i, n = strlen(v);

	if (strstr(v, "PLACEHOLDER") != NULL)
		return false;
	for (i = 0; i < sizeof(keyshapes) / sizeof(keyshapes[0]); i++)
		if (strncmp(v, keyshapes[i].prefix,
		    strlen(keyshapes[i].prefix)) == 0 &&
		    n >= keyshapes[i].minlen)
			return true;
	return false;
}

/* Names only: the value itself never goes into the report. */
static bool
real_keys_in_env(const struct cc_disc *d, char *ev, size_t len)
{
	char **e;
	size_t off = 0, nlen;
	const char *eq;

	ev[0] = '\0';
	for (e = environ; *e != NULL; e++) {
		if ((eq = strchr(*e, '=')) == NULL || !looks_real(eq + 1) ||
		    off >= len)
			continue;
		nlen = (size_t)(eq - *e);
		off += (size_t)snprintf(ev + off, len - off, "%s%.*s",
		    off ? ", " : "", (int)(nlen > 40 ? 40 : nlen), *e);
	}
	return ev[0] != '\0';
}

static bool
many_nics(const struct cc_disc *d, char *ev, size_t len)
{
	size_t i, off = 0;

	for (i = 0; i < d->nnics && off < len; i++)
		off += (size_t)snprintf(ev + off, len - off, "%s%s",
		    i ? " " : "interfaces: ", d->nics[i]);
	return d->nnics > 1;
}

static bool
many_defaults(const struct cc_disc *d, char *ev, size_t len)
{
	snprintf(ev, len, "%zu IPv4 and %zu IPv6 default routes",
	    d->ndefault4, d->ndefault6);
	/* One per family: a guest with IPv6 on has its own default route
	 * through the gateway, as it has one for IPv4. */
	return d->ndefault4 > 1 || d->ndefault6 > 1;
}

static bool
foreign_resolver(const struct cc_disc *d, char *ev, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	size_t i;

	for (i = 0; i < d->nns; i++) {
		if (disc_is_gateway(d, &d->ns[i]))
			continue;
		snprintf(ev, len, "resolv.conf names %s",
		    addr_fmt(&d->ns[i], a, sizeof(a)));
		return true;
	}
	snprintf(ev, len, d->nns ? "only the gateway" : "no nameserver");
	return false;
}

static const struct local_check local_checks_tab[] = {
	{ "more than one network interface", false, many_nics },
	{ "more than one default route of a family", false,
	    many_defaults },
	{ "nested virtualisation", true, nested_virt },
	{ "host file system shared in (9p, virtiofs, NFS, ...)", true,
	    shared_mounts },
	{ "vsock to the host", true, vsock_host },
	{ "passwordless sudo", true, passwordless_sudo },
	{ "real-looking API keys in the environment", true,
	    real_keys_in_env },
	{ "a resolver other than the gateway", true, foreign_resolver },
};

void
local_checks(struct cc_probes *v, const struct cc_disc *d, bool host)
{
	const struct local_check *c;
	struct cc_probe *p;
	size_t i;

	for (i = 0; i < sizeof(local_checks_tab) / sizeof(local_checks_tab[0]);
	    i++) {
		c = &local_checks_tab[i];
		p = probes_add(v);
		p->cls = C_HOST;
		p->kind = K_LOCAL;
		p->expect = E_ABSENT;
		p->what = c->what;
		if (c->host_only && !host) {
			p->verdict = V_SKIPPED;
			snprintf(p->evidence, sizeof(p->evidence),
			    "not a guest: the host's kernel and files");
			continue;
		}
		p->verdict = c->found(d, p->evidence, sizeof(p->evidence)) ?
		    V_FOUND : V_ABSENT;
	}
}
