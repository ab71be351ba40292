/*
 * parent/budget.c -- the parent keeps every secret's request budget.
 *
 * The proxy asks before it sends a request that carries a budgeted
 * secret; the counts live here so that neither a reload nor a proxy
 * restart (nor a proxy killed to reset them) gives a secret a fresh
 * budget.  One small message each way, only for injected requests.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gw.h"
#include "budgets.h"
#include "log.h"

/* Tests set the budgets' clock with --test-clock FILE (seconds since the
 * epoch, one number) so that a minute passes without waiting for it. */
time_t
gw_budget_now(const struct gw *gw)
{
	FILE *fp;
	long long t;
	int n;

	if (gw->opts.test_clock == NULL ||
	    (fp = fopen(gw->opts.test_clock, "re")) == NULL)
		return time(NULL);
	n = fscanf(fp, "%lld", &t);
	fclose(fp);
	return n == 1 && t > 0 ? (time_t)t : time(NULL);
}

void
gw_budget_answer(struct gw *gw, int fd, uint32_t id,
    const struct ipc_budget_req *m)
{
	const char *names[IPC_BUDGET_MAX];
	struct ipc_budget_ack ack;
	uint32_t i;

	for (i = 0; i < m->nsecret; i++)
		names[i] = m->secret[i];
	budget_charge(&budgets_of(gw)->budgets, gw->cfg, names, m->nsecret,
	    gw_budget_now(gw), &ack);
	if (ipc_send(fd, IPC_BUDGET_ACK, id, &ack, sizeof(ack)) == -1)
		log_warn("proxy: budget-ack");
}

const struct gw_module budgets_module = {
	.name = "budgets",
	.size = sizeof(struct gw_budgets),
};
