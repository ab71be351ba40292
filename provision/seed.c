/*
 * seed.c -- the cloud-init NoCloud seed of an image-mode guest.
 *
 * Every value is emitted as a JSON string (YAML is a superset of JSON), so
 * an SSH key comment or a placeholder can never break out of its field.
 * The seed carries placeholders only: no real secret ever reaches it.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "log.h"
#include "provision.h"
#include "secretfile.h"

#define CA_PATH		"/usr/local/share/ca-certificates/moat-gateway.crt"
#define BUNDLE		"/etc/ssl/certs/ca-certificates.crt"
#define FIRST_CHECK	"/usr/local/sbin/moat-first-check"
#define RECHECK		"/usr/local/sbin/moat-reverify"
#define RECHECK_UNIT	"/etc/systemd/system/moat-reverify"

/* Run once by cloud-init (runcmd, after the network is up): install
 * containment-check from the seed disk, scan, and print the verdict on the
 * serial console, where `provision list` reads it.  $1: the egress mode,
 * $2: the gateway (named, so a missing route cannot hide it). */
static const char first_check[] =
    "#!/bin/sh\n"
    "# written by moat provision: first-boot containment check\n"
    "m=$(mktemp -d)\n"
    "if mount -o ro LABEL=cidata \"$m\"; then\n"
    "\tinstall -m 0755 \"$m/containment-check\" /usr/local/bin/\n"
    "\tumount \"$m\"\n"
    "fi\n"
    "rmdir \"$m\"\n"
    "log=/var/log/moat-containment.log\n"
    "/usr/local/bin/containment-check --in-guest --expect \"$1\" "
    "--gateway \"$2\" "
    ">\"$log\" 2>&1\n"
    "case $? in 0) v=contained ;; 1) v='NOT CONTAINED' ;; "
    "*) v=error ;; esac\n"
    "{ printf '\\r\\n'; [ \"$v\" = contained ] || "
    "grep -E '^ *(BREACH|FAIL)' \"$log\"; "
    "grep -E ' probes in |^verdict:' \"$log\" || tail -n 3 \"$log\"; "
    "printf 'MOAT-VERDICT: %s\\r\\n' \"$v\"; } >/dev/ttyS0\n";

static void
write_file(FILE *f, const char *path, const char *perm, const char *content)
{
	fprintf(f, "  - path: %s\n    owner: \"root:root\"\n    permissions: "
	    "\"%s\"\n    content: ", path, perm);
	json_fputs(f, content);
	fputc('\n', f);
}

/* Run by a systemd timer every reverify_interval: the bounded scan, and
 * its verdict on the serial console in the first check's shape, where
 * the console's reader takes each one as the guest's latest. */
static const char recheck[] =
    "#!/bin/sh\n"
    "# written by moat provision: scheduled containment re-check\n"
    "log=/var/log/moat-reverify.log\n"
    "/usr/local/bin/containment-check --in-guest --quick --expect \"$1\" "
    "--gateway \"$2\" >\"$log\" 2>&1\n"
    "case $? in 0) v=contained ;; 1) v='NOT CONTAINED' ;; "
    "*) v=error ;; esac\n"
    "{ printf '\\r\\n'; [ \"$v\" = contained ] || "
    "grep -E '^ *(BREACH|FAIL)' \"$log\" | head -n 20; "
    "printf 'MOAT-VERDICT: %s\\r\\n' \"$v\"; } >/dev/ttyS0\n";

/* The re-check's service and timer.  The mode is one of three words and
 * the gateway an IPv4 address (both checked before), so neither needs
 * quoting in ExecStart. */
static void
recheck_units(FILE *f, const struct seed_in *in)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "[Unit]\nDescription=moat containment "
	    "re-check\nAfter=network-online.target\n\n[Service]\n"
	    "Type=oneshot\nExecStart=%s %s %s\nTimeoutStartSec=15min\n",
	    RECHECK, in->cc_expect != NULL ? in->cc_expect : "open",
	    in->gateway);
	write_file(f, RECHECK_UNIT ".service", "0644", buf);
	snprintf(buf, sizeof(buf), "[Unit]\nDescription=moat containment "
	    "re-check every %u s\n\n[Timer]\nOnBootSec=%u\n"
	    "OnUnitInactiveSec=%u\nAccuracySec=1s\n\n[Install]\n"
	    "WantedBy=timers.target\n", in->reverify, in->reverify,
	    in->reverify);
	write_file(f, RECHECK_UNIT ".timer", "0644", buf);
	write_file(f, RECHECK, "0755", recheck);
}

static void
env_lines(FILE *f, const struct seed_in *in, bool shell)
{
	size_t i;
	const char *eq;

	for (i = 0; i < in->env.n; i++) {
		eq = strchr(in->env.v[i], '=');
		/* Placeholders are printable without quotes (the loader's
		 * rule); single quotes are refused by the caller. */
		fprintf(f, "%s%.*s='%s'\n", shell ? "export " : "",
		    (int)(eq - in->env.v[i]), in->env.v[i], eq + 1);
	}
	if (in->ca_pem != NULL)
		fprintf(f, "%sSSL_CERT_FILE=%s\n%sREQUESTS_CA_BUNDLE=%s\n"
		    "%sNODE_EXTRA_CA_CERTS=%s\n%sCURL_CA_BUNDLE=%s\n",
		    shell ? "export " : "", BUNDLE, shell ? "export " : "",
		    BUNDLE, shell ? "export " : "", CA_PATH,
		    shell ? "export " : "", BUNDLE);
}

static char *
env_text(const struct seed_in *in, bool shell)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		fatal("open_memstream");
	if (shell)
		fprintf(f, "# written by moat provision: placeholders only\n");
	env_lines(f, in, shell);
	fclose(f);
	return buf;
}

static void
user_block(FILE *f, const struct seed_in *in)
{
	const char *s, *e;

	/* No "default" entry: Debian's default user has NOPASSWD sudo. */
	fprintf(f, "users:\n  - name: ");
	json_fputs(f, in->login);
	fprintf(f, "\n    shell: /bin/bash\n");
	if (in->sudo && in->password_hash != NULL) {
		fprintf(f, "    lock_passwd: false\n    hashed_passwd: ");
		json_fputs(f, in->password_hash);
		fprintf(f, "\n    sudo: \"ALL=(ALL:ALL) ALL\"\n");
	} else	/* no sudo key at all: "sudo: false" is deprecated */
		fprintf(f, "    lock_passwd: true\n");
	fprintf(f, "    ssh_authorized_keys:\n");
	for (s = in->ssh_key; s != NULL && *s != '\0'; s = e) {
		e = strchr(s, '\n');
		if (e == NULL)
			e = s + strlen(s);
		if (e > s && *s != '#') {
			char *line = strndup(s, (size_t)(e - s));

			fprintf(f, "      - ");
			json_fputs(f, line);
			fputc('\n', f);
			free(line);
		}
		if (*e == '\n')
			e++;
	}
}

int
seed_user_data(FILE *f, const struct seed_in *in)
{
	char *sh = env_text(in, true), *env = env_text(in, false);

	fprintf(f, "#cloud-config\n");
	user_block(f, in);
	fprintf(f, "disable_root: true\nssh_pwauth: false\n"
	    "ssh_deletekeys: true\n");
	if (in->ca_pem != NULL) {
		fprintf(f, "ca_certs:\n  trusted:\n    - ");
		json_fputs(f, in->ca_pem);
		fputc('\n', f);
	}
	fprintf(f, "write_files:\n");
	write_file(f, "/etc/profile.d/moat.sh", "0644", sh);
	write_file(f, "/etc/environment.d/90-moat.conf", "0644", env);
	if (in->ca_pem != NULL)
		write_file(f, CA_PATH, "0644", in->ca_pem);
	if (in->targets != NULL)
		write_file(f, PV_TARGETS_PATH, "0644", in->targets);
	write_file(f, "/etc/ssh/sshd_config.d/90-moat.conf", "0644",
	    "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
	    "PermitRootLogin no\n");
	if (in->cc_path != NULL)
		write_file(f, FIRST_CHECK, "0755", first_check);
	if (in->cc_path != NULL && in->reverify > 0)
		recheck_units(f, in);
	/* Root locked on every boot, not just the first. */
	fprintf(f, "bootcmd:\n  - [ usermod, --lock, root ]\n");
	fprintf(f, "runcmd:\n  - [ sh, -c, \"cat /etc/environment.d/"
	    "90-moat.conf >> /etc/environment\" ]\n");
	if (in->cc_path != NULL) {
		fprintf(f, "  - [ %s, ", FIRST_CHECK);
		json_fputs(f, in->cc_expect != NULL ? in->cc_expect : "open");
		fprintf(f, ", ");
		json_fputs(f, in->gateway);
		fprintf(f, " ]\n");
	}
	/* After the first check, so that the two never scan at once. */
	if (in->cc_path != NULL && in->reverify > 0)
		fprintf(f, "  - [ systemctl, enable, --now, "
		    "moat-reverify.timer ]\n");
	free(sh);
	free(env);
	return ferror(f) ? -1 : 0;
}

int
seed_meta_data(FILE *f, const struct seed_in *in)
{
	/* Fixed per sandbox: cloud-init runs once per instance-id. */
	fprintf(f, "instance-id: moat-%s\nlocal-hostname: %s\n", in->name,
	    in->name);
	return ferror(f) ? -1 : 0;
}

/* IPv6, when the sandbox has it, is static too: the gateway sends no
 * router advertisements, and the guest takes none (accept-ra false), so
 * that its only IPv6 router is the one written here. */
int
seed_network_config(FILE *f, const struct seed_in *in)
{
	bool v6 = in->address6[0] != '\0';

	fprintf(f, "version: 2\nethernets:\n  eth0:\n    match:\n"
	    "      macaddress: \"%s\"\n    set-name: eth0\n"
	    "    dhcp4: false\n    dhcp6: false\n", in->mac);
	if (v6)
		fprintf(f, "    accept-ra: false\n");
	fprintf(f, "    addresses: [ \"%s/%d\"", in->address, in->plen);
	if (v6)
		fprintf(f, ", \"%s/64\"", in->address6);
	/* gateway4, not a route "to: default": cloud-init 22.4 (Debian 12)
	 * rejects "default" and then sets up no network at all, and its
	 * ifupdown renderer writes other routes as `route add` commands
	 * (net-tools, absent from cloud images).  gateway6 likewise. */
	fprintf(f, " ]\n    gateway4: \"%s\"\n", in->gateway);
	if (v6)
		fprintf(f, "    gateway6: \"%s\"\n", in->gateway6);
	fprintf(f, "    nameservers:\n      addresses: [ \"%s\"",
	    in->gateway);
	if (v6)
		fprintf(f, ", \"%s\"", in->gateway6);
	fprintf(f, " ]\n");
	return ferror(f) ? -1 : 0;
}

static int
emit(const char *dir, const char *name, const struct seed_in *in,
    int (*fn)(FILE *, const struct seed_in *))
{
	char *p;
	FILE *f;
	int rc = -1;

	xasprintf(&p, "%s/%s", dir, name);
	if ((f = fopen(p, "wx")) == NULL)
		log_warn("%s", p);
	else {
		rc = fn(f, in);
		if (fclose(f) == EOF)
			rc = -1;
	}
	free(p);
	return rc;
}

/* Files in a private temporary folder, packed by genisoimage with the
 * volume label NoCloud looks for; the folder is removed either way. */
int
seed_build(const struct pv *pv, const struct seed_in *in, const char *iso)
{
	char dir[] = "/tmp/moat-seed.XXXXXX", *u, *m, *n;
	int rc = -1;

	if (mkdtemp(dir) == NULL) {
		log_warn("mkdtemp");
		return -1;
	}
	xasprintf(&u, "%s/user-data", dir);
	xasprintf(&m, "%s/meta-data", dir);
	xasprintf(&n, "%s/network-config", dir);
	if (emit(dir, "user-data", in, seed_user_data) == 0 &&
	    emit(dir, "meta-data", in, seed_meta_data) == 0 &&
	    emit(dir, "network-config", in, seed_network_config) == 0) {
		char *cc = NULL, *argv[] = { (char *)pv->genisoimage,
		    "-quiet", "-output", (char *)iso, "-volid", "cidata",
		    "-joliet", "-rock", "-graft-points", u, m, n, NULL, NULL };

		if (in->cc_path != NULL) {
			xasprintf(&cc, "containment-check=%s", in->cc_path);
			argv[12] = cc;
		}
		if (run_argv(argv, NULL) == 0)
			rc = 0;
		else
			log_warnx("genisoimage failed to build %s", iso);
		free(cc);
	}
	unlink(u);
	unlink(m);
	unlink(n);
	rmdir(dir);
	free(u);
	free(m);
	free(n);
	return rc;
}
