/*
 * provision.h -- hardened QEMU guests attached to the moat gateway.
 *
 * provision keeps two things per guest: a sandbox drop-in
 * (sandboxes.d/NAME.conf, the gateway's view: address, MAC, tap, egress)
 * and a guest folder (state_dir/guests/NAME: guest.conf with provision's own
 * settings, the qcow2 disk, the cloud-init seed and the console log).
 * Runtime files (QMP and console sockets, pidfile) live in a 0700 folder
 * under the run directory.  Each guest's QEMU runs as a uid of its own
 * (uids.c), which owns that guest's files and nothing else; a member's
 * image, kernel and initrd are imported at create time (import.c).
 */
#ifndef MOAT_PROVISION_H
#define MOAT_PROVISION_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "smallfile.h"
#include "regclient.h"
#include "verdict.h"

/* Exit codes (s6 style): result, usage, system. */
#include "exitcodes.h"

#define PV_RUN_DIR	"/run/moat"
#define PV_QEMU_USER	"moat-qemu"	/* its groups are every guest's */
#define PV_LOGIN	"agent"
#define PV_MAX_FILES	8	/* files one create passes to gatewayd */

enum pv_mode { MODE_IMAGE = 0, MODE_KERNEL };
enum pv_accel { ACCEL_AUTO = 0, ACCEL_KVM, ACCEL_TCG };

/* A growing NULL-terminated argument vector. */
struct strv {
	char	**v;
	size_t	  n;
};
void	 strv_add(struct strv *, const char *);
void	 strv_addf(struct strv *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 strv_free(struct strv *);
char	*strv_join(const struct strv *);	/* shell-quoted, for review */

/* provision's own record of a guest: state_dir/guests/NAME/guest.conf. */
struct guest {
	char		*name;
	enum pv_mode	 mode;
	char		*image;		/* base image, absolute */
	char		*image_format;	/* "qcow2" or "raw" */
	char		*kernel, *initrd, *append;
	int		 cpus;
	int		 memory_mb;
	char		*disk;		/* qemu-img size, e.g. "8G" */
	enum pv_accel	 accel;
	char		*user;		/* a named QEMU user (root's --user), or NULL */
	long		 uid;		/* the guest's own uid and gid, or -1 */
	char		*login;		/* image mode: the guest's login user */
	bool		 sudo;
};
void	 guest_free(struct guest *);
int	 guest_write(const char *path, const struct guest *);
int	 guest_read(const char *path, struct guest *);
const char *mode_name(enum pv_mode);
const char *accel_name(enum pv_accel);
int	 accel_parse(const char *, enum pv_accel *);

/* Global state of one invocation. */
struct pv {
	const char	*conf_path;
	const char	*run_dir;
	const char	*qemu;		/* qemu-system-x86_64 */
	const char	*qemu_img;
	const char	*genisoimage;
	const char	*containment_check;	/* copied into image guests */
	char		*sbdir;		/* sandboxes.d beside conf_path */
	char		*guests_dir;	/* state_dir/guests */
	struct moat_config *cfg;
	bool		 json;
};

/* Per-guest paths. */
struct gpaths {
	char	*dir, *meta, *disk, *seed, *log, *qemu_log;	/* state */
	char	*log_old;	/* console.log.1: the log's previous part */
	char	*accel;	/* accelerator in use and why: written by start */
	char	*verdict;	/* the first-boot verdict, one word */
	char	*latest;	/* verdict.rec: the latest (struct verdict_rec) */
	char	*kernel, *initrd, *import;	/* imported copies, scratch */
	char	*rdir, *qmp, *console, *pidfile;		/* runtime */
	char	*dropin;
};
void	 gpaths_init(struct gpaths *, const struct pv *, const char *name);
void	 gpaths_free(struct gpaths *);

/* alloc.c -- pure allocation from a loaded config. */
int	 alloc_address(const struct moat_config *, struct moat_addr *);
void	 alloc_mac(const struct moat_config *, const struct moat_addr *,
	    uint8_t mac[6]);
int	 alloc_tap(const struct moat_config *, const char *name,
	    bool (*in_use)(const char *), char tap[16]);
bool	 name_valid(const char *);
void	 mac_fmt(const uint8_t mac[6], char out[18]);
void	 netmask_fmt(int plen, char out[16]);
/* The sandbox's IPv6 address and the gateway's, as text, when
 * config_sandbox_addr6 gives it one; else both "". */
void	 pv_addr6(const struct moat_config *, const struct moat_sandbox *,
	    char addr[46], char gw[46]);

/* dropin.c */
struct dropin {
	const char	*name;
	char		 mac[18];
	char		 address[16];
	char		 tap[16];
	const char	*egress;
	struct strv	 allow;
	struct strv	 secrets;
	const char	*owner;
	bool		 reverify_given;	/* else the default */
	unsigned	 reverify;	/* reverify_interval, seconds */
	bool		 quarantine;	/* quarantine_on_breach */
};
int	 dropin_render(FILE *, const struct dropin *);
/* Write path (which must not exist) from d, kept only if the whole
 * configuration loads with it: the open transaction, which the caller
 * rolls back if a later step fails and ends either way; or NULL, nothing
 * changed. */
struct cfgtxn;
struct cfgtxn *dropin_add(struct pv *, const struct dropin *, const char *path);
int	 dir_lock(const char *dir);

/* serial.c -- the guest's serial console: its log and first-boot verdict. */
struct qemu_user;
/* One line without its "\n": "MOAT-VERDICT: WORD" with a known word, or
 * NONE. */
enum verdict	 verdict_line(const char *line, size_t len);
/* Lines fed in pieces: v is the first verdict line seen, then stays. */
struct verdict_scan {
	struct vline_scan ls;
	enum verdict	 v;
	bool		 found;
};
void		 verdict_feed(struct verdict_scan *, const char *, size_t);
enum verdict	 verdict_file_read(const char *path);
enum verdict	 verdict_log_scan(const char *path, size_t max);
/* How far into a log from before the verdict had a file it is looked for:
 * it is printed at first boot. */
#define VERDICT_SCAN_MAX	(4u << 20)

/* The serial console's log: console.log at most max bytes, the part
 * before in console.log.1, the first verdict in the verdict file. */
#define SERIAL_LOG_MAX	(1 << 20)
#define SERIAL_LOG_MIN	65536
struct serial_log {
	int			 cur;		/* console.log, O_APPEND */
	int			 old;		/* console.log.1 */
	int			 verdict;	/* until one is recorded, else -1 */
	int			 latest;	/* the record of the latest */
	struct verdict_rec	 rec;
	struct vline_scan	 ls;
	off_t			 size;		/* of cur */
	off_t			 max;
	struct verdict_scan	 vs;
};
/* Opened by root, made root's 0600; max at least SERIAL_LOG_MIN. */
int	 serial_log_open(const struct gpaths *, off_t max, struct serial_log *);
void	 serial_log_write(struct serial_log *, const char *, size_t);
void	 verdict_record(struct serial_log *);
void	 serial_log_close(struct serial_log *);
/* The logger process (as the QEMU user, detached), reading a pipe whose
 * other end, *qemu_end, goes to QEMU as its chardev's logfile.  0 or -1. */
int	 serial_logger_start(const struct gpaths *, const struct qemu_user *,
	    int *qemu_end);

/* qemu.c -- the hardened command line (pure). */
struct qemu_in {
	const struct guest	*g;
	const struct gpaths	*p;
	const char		*qemu;
	enum pv_accel		 accel;		/* KVM or TCG, resolved */
	char			 mac[18];
	char			 address[16];
	char			 gateway[16];
	char			 netmask[16];
	/* The guest's IPv6 address and the gateway's (moat.ip6= on a
	 * kernel-mode command line); "" when it has none. */
	char			 address6[46];
	char			 gateway6[46];
	int			 tapfd;
	int			 logfd;		/* the serial logger's pipe */
};
void	 qemu_argv(const struct qemu_in *, struct strv *);
const char *qemu_cpu_model(enum pv_accel);

/* seed.c -- cloud-init NoCloud seed (render is pure). */
struct seed_in {
	const char	*name;
	const char	*login;
	const char	*ssh_key;	/* one or more lines */
	const char	*ca_pem;	/* may be NULL */
	bool		 sudo;
	const char	*password_hash;	/* with sudo only */
	char		 mac[18];
	char		 address[16];
	int		 plen;
	char		 gateway[16];
	/* The guest's IPv6 address (a /64) and the gateway's, its router
	 * and resolver; "" when the sandbox has no IPv6. */
	char		 address6[46];
	char		 gateway6[46];
	struct strv	 env;		/* "VAR=value" placeholders */
	const char	*cc_path;	/* containment-check, or NULL */
	const char	*cc_expect;	/* its --expect: the egress mode */
	unsigned	 reverify;	/* seconds between re-checks; 0: none */
	char		*targets;	/* containment-check's targets, or NULL */
};
int	 seed_user_data(FILE *, const struct seed_in *);
/* targets.c: the text of the guest's containment-check targets file. */
#define PV_TARGETS_PATH	"/etc/moat/containment-targets"
char	*targets_text(const struct moat_config *, const char *name,
	    enum moat_egress);
int	 seed_meta_data(FILE *, const struct seed_in *);
int	 seed_network_config(FILE *, const struct seed_in *);
int	 seed_build(const struct pv *, const struct seed_in *, const char *iso);

/* proc.c -- running helpers without a shell. */
const char *tool_find(const char *name, const char *override);
int	 run_argv(char *const argv[], const char *quiet_log);
#define PV_MAX_GROUPS	32
struct qemu_user {
	uid_t	 uid;
	gid_t	 gid;
	char	*name;
	int	 ngroups;		/* the user's own groups, e.g. kvm */
	gid_t	 groups[PV_MAX_GROUPS];
};
int	 qemu_user_lookup(const char *, struct qemu_user *);
/* The guest's own identity: uid and gid both id, no passwd entry, plus
 * the groups /dev/kvm needs (moat-qemu's supplementary groups, or kvm). */
void	 sandbox_user(uid_t id, const char *name, struct qemu_user *);
int	 guest_user(const struct guest *, struct qemu_user *);
/* The one place a child becomes a guest's user: groups, gid, uid, for
 * good (privdrop_groups).  -1 with a message logged on failure. */
int	 become(const struct qemu_user *);
/* Run fn in a child that has become u, under limits: no network (a new,
 * empty network namespace), at most as_bytes of address space and
 * fsize_bytes per written file, killed after timeout_s.  fn's stdout goes
 * to out (up to outlen - 1 bytes, NUL-terminated) when out is not NULL.
 * 0 if fn exited 0; RUN_TIMEOUT; otherwise -1. */
#define RUN_TIMEOUT	(-2)
struct run_limits {
	unsigned	 timeout_s;
	unsigned long long as_bytes, fsize_bytes;
};
int	 run_limited(const struct qemu_user *, const struct run_limits *,
	    int (*fn)(void *), void *arg, char *out, size_t outlen);
/* Run fn in a child that has become the QEMU user (uid, gid and its own
 * supplementary groups); fn fills why on failure.  0 if fn returned 0. */
int	 as_qemu_user(const struct qemu_user *,
	    int (*fn)(const void *, char *, size_t), const void *arg,
	    char *why, size_t len);
/* tapfd becomes QEMU's fd 3, logfd its fd 4 (each if >= 0). */
pid_t	 spawn_qemu(char *const argv[], const struct qemu_user *, int tapfd,
	    int logfd, int errfd, bool detach);
pid_t	 guest_pid(const struct gpaths *, const struct guest *, uid_t);
long	 proc_uptime(pid_t);
/* CLOCK_MONOTONIC in milliseconds, for deadlines. */
long long mono_ms(void);
int	 rm_rf_guest(const struct gpaths *);
/* read_small_fd (smallfile.h) in a child killed after secs; NULL, errno
 * ETIMEDOUT then. */
char	*read_small_fd_within(int fd, size_t max, unsigned secs);

/* uids.c -- one uid per guest from gateway.guest_uids. */
/* Pick a free uid and record it in the guest's guest.conf (meta). */
int	 uid_alloc(const struct pv *, const char *meta, struct guest *);

/* import.c -- a member's files, from descriptors, into the guest folder. */
/* "/dev/fd/N" is descriptor N (what gatewayd passes); any other path is
 * opened by root as given.  Refuses what is not a regular file. */
int	 input_open(const char *opt, const char *path);
int	 import_image(const struct pv *, struct guest *, const struct gpaths *,
	    const struct qemu_user *, int fd, unsigned long long max_bytes);
int	 import_file(const struct pv *, const char *opt, int fd,
	    const char *dest, const struct qemu_user *);


/* tap.c -- the guest's tap, created with TUNSETIFF, bridged by netlink. */
int	 tap_open(const char *name, uid_t, gid_t);
int	 tap_attach(const char *name, const char *bridge);
bool	 iface_exists(const char *name);
int	 tap_delete_stale(const char *name);

/* ctl.c -- gatewayd's control socket and QEMU's QMP. */
enum { CTL_OK = 0, CTL_ABSENT = 1, CTL_REFUSED = -1 };
int	 ctl_reload(const struct pv *);
int	 ctl_forward(const struct pv *, int argc, char **argv);
int	 ctl_console(const struct pv *, const char *name);	/* fd or -1 */
int	 qmp_command(const char *sock, const struct qemu_user *,
	    const char *command);
/* A socket in a guest's runtime folder (QEMU's user owns it, so it may be
 * a symlink to anything that user can open): connected by a child that
 * has become uid/gid, never by root, and only if its server runs as uid
 * (connect_as_start, privdrop.h).  The connected socket, or -1. */
int	 guest_connect(const char *path, uid_t uid, gid_t gid);

/* box.c -- the separate gateway box (moat.conf's box section). */
bool	 box_set(const struct pv *);
/* What a registration tells the box; allow and secrets may be empty. */
struct box_sandbox {
	const char	*name, *address, *mac, *egress;
	char *const	*allow;
	size_t		 nallow;
	char *const	*secrets;
	size_t		 nsecrets;
};
#define BOX_LINE_MAX	(REG_REQUEST_MAX + 1)	/* a request and its NUL */
int	 box_register(const struct pv *, const struct box_sandbox *);
int	 box_register_sandbox(const struct pv *, const struct moat_sandbox *);
int	 box_remove(const struct pv *, const char *name);

/* accel.c */
/* why gets the reason for the choice: "requested", or why KVM fell back. */
enum pv_accel accel_resolve(const struct pv *, enum pv_accel,
	    const struct qemu_user *, char *why, size_t len);

/* unit.c -- guests as moat-guest@NAME.service when systemd is PID 1. */
extern bool pv_direct;		/* --direct: launch QEMU here, never via systemd */
bool	 unit_managed(const struct pv *);
int	 unit_autostart_set(const struct gpaths *, bool);
bool	 unit_autostart(const struct gpaths *);
int	 unit_start(const char *name, bool enable);
void	 unit_disable(const char *name);
void	 unit_stopped(const char *name);

/* The verbs. */
int	 cmd_create(struct pv *, int, char **);
int	 cmd_start(struct pv *, int, char **);
int	 cmd_stop(struct pv *, int, char **);
int	 cmd_destroy(struct pv *, int, char **);
int	 cmd_list(struct pv *, int, char **);
int	 cmd_console(struct pv *, int, char **);
int	 cmd_qemu_args(struct pv *, int, char **);
int	 cmd_targets(struct pv *, int, char **);
int	 cmd_sync_box(struct pv *, int, char **);
int	 stop_guest(struct pv *, const char *name, int timeout_s, bool force);
int	 pv_load(struct pv *);

#endif
