/*
 * guestacct.c -- provision's guest accounting, shared with gatewayd's
 * quota checks (see guestacct.h).
 */
#include <libconfig.h>
#include <stdlib.h>
#include <string.h>

#include "guestacct.h"
#include "log.h"

const struct guest_opt guest_create_opts[GO_NOPTS + 1] = {
	[GO_IMAGE] = { "--image", GUEST_PATH },
	[GO_IMAGE_FORMAT] = { "--image-format", GUEST_ARG },
	[GO_KERNEL] = { "--kernel", GUEST_PATH },
	[GO_INITRD] = { "--initrd", GUEST_PATH },
	[GO_APPEND] = { "--append", GUEST_ARG },
	[GO_CPUS] = { "--cpus", GUEST_ARG },
	[GO_MEMORY] = { "--memory", GUEST_ARG },
	[GO_DISK] = { "--disk", GUEST_ARG },
	[GO_EGRESS] = { "--egress", GUEST_ARG },
	[GO_ALLOW] = { "--allow", GUEST_ARG },
	[GO_SECRET] = { "--secret", GUEST_ARG },
	[GO_SSH_KEY] = { "--ssh-key", GUEST_PATH },
	[GO_ACCEL] = { "--accel", GUEST_ARG },
	[GO_USER] = { "--user", GUEST_ADMIN },
	[GO_LOGIN] = { "--login", GUEST_ARG },
	[GO_SUDO] = { "--sudo", GUEST_FLAG },
	[GO_PWHASH] = { "--password-hash-file", GUEST_PATH },
	[GO_OWNER] = { "--owner", GUEST_ADMIN },
	[GO_CA] = { "--ca", GUEST_PATH },
	[GO_AUTOSTART] = { "--autostart", GUEST_FLAG },
	[GO_NO_AUTOSTART] = { "--no-autostart", GUEST_FLAG },
	[GO_REVERIFY] = { "--reverify-interval", GUEST_ARG },
	[GO_QUARANTINE] = { "--quarantine-on-breach", GUEST_FLAG },
	[GO_NOPTS] = { NULL, GUEST_FLAG },
};

long
guestacct_memory_mb(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (end == s || v <= 0)
		return -1;
	if (*end == 'G' || *end == 'g')
		v *= 1024, end++;
	else if (*end == 'M' || *end == 'm')
		end++;
	return *end == '\0' ? v : -1;
}

long
guestacct_disk_gb(const char *s)
{
	char *end;
	long long v = strtoll(s, &end, 10), div;

	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case 'T': v *= 1024; /* FALLTHROUGH */
	case 'G': div = 1; break;
	case 'M': div = 1024; break;
	case 'K': div = 1024 * 1024; break;
	case '\0': div = 1024LL * 1024 * 1024; end--; break;
	default: return -1;
	}
	if (end[1] != '\0')
		return -1;
	return (long)((v + div - 1) / div);
}

bool
guestacct_size_valid(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n < 8 && (s[n] == '\0' ||
	    (strchr("KMGT", s[n]) != NULL && s[n + 1] == '\0'));
}

void
guestacct_add(const char *state_dir, const char *name, struct guest_usage *u)
{
	config_t lc;
	const char *disk = NULL, *mode = NULL;
	char *path;
	int v;

	u->sandboxes++;
	xasprintf(&path, "%s/guests/%s/guest.conf", state_dir, name);
	config_init(&lc);
	if (config_read_file(&lc, path) == CONFIG_TRUE) {
		if (config_lookup_int(&lc, "cpus", &v) == CONFIG_TRUE)
			u->cpus += v;
		if (config_lookup_int(&lc, "memory_mb", &v) == CONFIG_TRUE)
			u->memory_mb += v;
		config_lookup_string(&lc, "mode", &mode);
		if (config_lookup_string(&lc, "disk", &disk) == CONFIG_TRUE &&
		    guestacct_disk_gb(disk) > 0)
			u->disk_gb += guestacct_disk_gb(disk);
		else if (mode != NULL && strcmp(mode, "kernel") == 0)
			u->disk_gb += guestacct_disk_gb(GUEST_KERNEL_DISK);
	}
	config_destroy(&lc);
	free(path);
}
