/*
 * refusals.c -- the ICMP rate-limit sysctls of the current network
 * namespace, read and written through /proc/sys (see refusals.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refusals.h"
#include "sysctl.h"

#define SYS_V4_RATELIMIT "/proc/sys/net/ipv4/icmp_ratelimit"
#define SYS_V6_RATELIMIT "/proc/sys/net/ipv6/icmp/ratelimit"
#define SYS_MSGS_PER_SEC "/proc/sys/net/ipv4/icmp_msgs_per_sec"
#define SYS_MSGS_BURST	 "/proc/sys/net/ipv4/icmp_msgs_burst"

void
refusals_want(const struct moat_gateway *gw, struct refusal_sysctls *w)
{
	w->v4_ratelimit = 0;
	w->v6_ratelimit = 0;
	w->msgs_per_sec = gw->refusal_rate;
	/*
	 * The kernel refills the global budget in steps of at least 20 ms
	 * and caps it at the burst: a burst below rate/50 would throttle
	 * below the rate.  A tenth of a second's worth absorbs a guest's
	 * burst of connection attempts.
	 */
	w->msgs_burst = gw->refusal_rate / 10;
}

int
refusals_read(struct refusal_sysctls *s, char *err, size_t errlen)
{
	if (sysctl_read(SYS_V4_RATELIMIT, &s->v4_ratelimit) == -1 ||
	    sysctl_read(SYS_MSGS_PER_SEC, &s->msgs_per_sec) == -1 ||
	    sysctl_read(SYS_MSGS_BURST, &s->msgs_burst) == -1) {
		snprintf(err, errlen, "cannot read the ICMP rate-limit "
		    "sysctls: %s", strerror(errno));
		return -1;
	}
	if (sysctl_read(SYS_V6_RATELIMIT, &s->v6_ratelimit) == -1)
		s->v6_ratelimit = -1;	/* IPv6 disabled on this host */
	return 0;
}

int
refusals_apply(const struct moat_gateway *gw, char *err, size_t errlen)
{
	static const struct { const char *path; size_t off; } knobs[] = {
		{ SYS_V4_RATELIMIT, offsetof(struct refusal_sysctls, v4_ratelimit) },
		{ SYS_MSGS_PER_SEC, offsetof(struct refusal_sysctls, msgs_per_sec) },
		{ SYS_MSGS_BURST, offsetof(struct refusal_sysctls, msgs_burst) },
		{ SYS_V6_RATELIMIT, offsetof(struct refusal_sysctls, v6_ratelimit) },
	};
	struct refusal_sysctls w;
	size_t i;

	if (!gw->fast_refusals)
		return 0;
	refusals_want(gw, &w);
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		long v = *(long *)((char *)&w + knobs[i].off);

		if (sysctl_write(knobs[i].path, v) == 0)
			continue;
		if (errno == ENOENT && strcmp(knobs[i].path, SYS_V6_RATELIMIT) == 0)
			continue;
		snprintf(err, errlen, "cannot set %s to %ld: %s",
		    knobs[i].path + strlen("/proc/sys/"), v, strerror(errno));
		return -1;
	}
	return 0;
}

bool
refusals_fast(const struct moat_gateway *gw, const struct refusal_sysctls *s,
    char *why, size_t whylen)
{
	struct refusal_sysctls w;

	refusals_want(gw, &w);
	if (s->v4_ratelimit != 0)
		snprintf(why, whylen, "net.ipv4.icmp_ratelimit is %ld ms: a "
		    "guest's refusals after the first few each second are "
		    "dropped", s->v4_ratelimit);
	else if (s->v6_ratelimit > 0)
		snprintf(why, whylen, "net.ipv6.icmp.ratelimit is %ld ms",
		    s->v6_ratelimit);
	else if (s->msgs_per_sec < w.msgs_per_sec ||
	    s->msgs_burst < w.msgs_burst)
		snprintf(why, whylen, "net.ipv4.icmp_msgs_per_sec/burst are "
		    "%ld/%ld, below %ld/%ld", s->msgs_per_sec, s->msgs_burst,
		    w.msgs_per_sec, w.msgs_burst);
	else
		return true;
	return false;
}
