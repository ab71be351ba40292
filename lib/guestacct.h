/*
 * guestacct.h -- what a guest holds, as provision records it: the options
 * `provision create` takes, the sizes it accepts, and the vCPUs, memory
 * and disk a guest's guest.conf says it has.  provision writes guests with
 * these; gatewayd counts them against quotas with the same rules.
 */
#ifndef MOAT_GUESTACCT_H
#define MOAT_GUESTACCT_H

#include <stdbool.h>

#define GUEST_DEFAULT_CPUS	1
#define GUEST_DEFAULT_MEMORY_MB	1024
#define GUEST_KERNEL_DISK	"1G"	/* a kernel-mode guest's scratch disk */

/* How an option of `provision create` takes its value.  GUEST_PATH: a
 * file the caller names (gatewayd opens it as the caller); GUEST_ADMIN:
 * only an administrator may give it through gatewayd. */
enum guest_optkind { GUEST_FLAG, GUEST_ARG, GUEST_PATH, GUEST_ADMIN };

struct guest_opt {
	const char		*name;		/* "--image" */
	enum guest_optkind	 kind;
};

enum guest_optid {
	GO_IMAGE, GO_IMAGE_FORMAT, GO_KERNEL, GO_INITRD, GO_APPEND, GO_CPUS,
	GO_MEMORY, GO_DISK, GO_EGRESS, GO_ALLOW, GO_SECRET, GO_SSH_KEY,
	GO_ACCEL, GO_USER, GO_LOGIN, GO_SUDO, GO_PWHASH, GO_OWNER, GO_CA, GO_AUTOSTART, GO_NO_AUTOSTART,
	GO_REVERIFY, GO_QUARANTINE,
	GO_NOPTS
};

/* Indexed by enum guest_optid, ended by a NULL name. */
extern const struct guest_opt guest_create_opts[GO_NOPTS + 1];

struct guest_usage {
	long	 sandboxes, cpus, memory_mb, disk_gb;
};

/* "1024", "512M", "2G" -> MiB; -1 if malformed. */
long	guestacct_memory_mb(const char *);
/* A disk size as qemu-img reads it ("8G", "512M", "1T", bytes) -> GiB,
 * rounded up; -1 if malformed. */
long	guestacct_disk_gb(const char *);
/* The disk sizes provision accepts: up to 7 digits, one of K M G T. */
bool	guestacct_size_valid(const char *);
/* Add one guest named name under state_dir to u, from its guest.conf.  A
 * sandbox without one (written by hand) counts as a sandbox only. */
void	guestacct_add(const char *state_dir, const char *name,
	    struct guest_usage *u);

#endif
