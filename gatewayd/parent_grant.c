/*
 * parent_grant.c -- `gatewayd ctl allow` and `gatewayd ctl unallow`.
 */
#include "gatewayd.h"

void
ctl_allow(struct ctl_req *r)
{
	ctl_reply(r, "error: not yet\n");
}

void
ctl_unallow(struct ctl_req *r)
{
	ctl_reply(r, "error: not yet\n");
}
