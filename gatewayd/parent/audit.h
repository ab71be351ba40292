/*
 * audit.h -- the audit log (audit.c).
 */
#ifndef GW_PARENT_AUDIT_H
#define GW_PARENT_AUDIT_H

#include "gw.h"

/* --- audit log (parent/audit.c) --- */

int	audit_open(struct gw *);
void	audit_reopen(struct gw *);
void	audit_close(struct gw *);
/* Write one JSON object (already formatted, printable, no newline). */
void	audit_write(struct gw *, const char *json);
/* "audit ..." lines for ctl counters and status; malloc'ed. */
char	*audit_counters(const struct gw *);
enum audit_syslog { AUDIT_SYSLOG, AUDIT_SYSLOG_LIMITED, AUDIT_NO_SYSLOG };
void	audit_write_to(struct gw *, const char *json, enum audit_syslog);
/* A child's audit event, stamped with its source (parent/audit.c). */
void	audit_child(struct gw *, struct gw_proc *, const char *json, size_t);
/* Build and write an event: fields as alternating key, value strings,
 * NULL-terminated; values are JSON-escaped here. */
void	audit_event(struct gw *, const char *event, ...)
	    __attribute__((sentinel));

struct gw_audit {
	int		 auditfd;
	char		*audit_path;
	struct audit_stats {
		off_t		 size;		/* of the current file */
		uint64_t	 lines;		/* written since start */
		uint64_t	 rotations;	/* by size (audit_max_kb) */
		uint64_t	 dropped;	/* lines rotated away for good */
		uint64_t	 suppressed;	/* refusals left out (rate) */
		uint64_t	 lost;		/* refusal log overruns */
	}		 audit;
	/* Each line written, wired by gw_run ("log -f" clients). */
	void		(*on_audit_line)(struct gw *, const char *);
};
static inline struct gw_audit *audit_of(const struct gw *gw)
{ return gw_mod(gw, MOD_AUDIT); }

#endif
