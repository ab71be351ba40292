/*
 * seccomp_allow.c -- see seccomp_allow.h.
 */
#include <seccomp.h>

#include "seccomp_allow.h"

int
seccomp_allow(const int *calls, size_t n)
{
	scmp_filter_ctx ctx;
	size_t i;
	int rc = -1;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i], 0) < 0)
			goto out;
	rc = seccomp_load(ctx) < 0 ? -1 : 0;
out:
	seccomp_release(ctx);
	return rc;
}
