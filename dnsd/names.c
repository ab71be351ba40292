/*
 * names.c -- tell gatewayd which names each sandbox was refused or had
 * resolved, for `gatewayd ctl refused` and `ctl names`.
 *
 * This is not the log (whose lines are capped at a few a second): every
 * name a guest is refused should reach the operator's view, so a refused
 * name is reported whatever the log's budget.  A guest must still not be
 * able to make dnsd flood its parent: a name already reported in the last
 * second is only counted (a direct-mapped table of recent names), and all
 * reports together stay within NAMES_PER_SEC.  The IPC socket does not
 * block: a parent that is behind loses reports, never stalls dnsd.
 */
#include <ctype.h>
#include <string.h>

#include "ev.h"
#include "resolver.h"

#define NAMES_SLOTS	4096
#define NAMES_PER_SEC	5000
#define NAMES_EVERY_MS	1000	/* one report per name and second at most */

static struct {
	struct {
		uint64_t hash;		/* 0: empty */
		uint64_t sent_ms;
		uint32_t pending;	/* queries not yet reported */
	}		 slot[NAMES_SLOTS];
	double		 tokens;
	uint64_t	 last_ms;
	uint64_t	 dropped;	/* reports left out (rate, socket) */
} N = { .tokens = NAMES_PER_SEC };

/* FNV-1a over sandbox, kind and the name's wire form in lower case;
 * never 0.  The name is only turned into text when it is sent. */
static uint64_t
names_hash(const char *sandbox, int kind, const struct dq *q)
{
	uint64_t h = 14695981039346656037ULL;
	const char *p;
	size_t i;

	for (p = sandbox; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	h = (h ^ (uint8_t)(kind + 1)) * 1099511628211ULL;
	for (i = 0; i < q->namelen; i++)
		h = (h ^ (uint8_t)tolower(q->name[i])) * 1099511628211ULL;
	return h ? h : 1;
}

static bool
names_take(uint64_t now)
{
	N.tokens += (double)(now - N.last_ms) * NAMES_PER_SEC / 1000.0;
	if (N.tokens > NAMES_PER_SEC)
		N.tokens = NAMES_PER_SEC;
	N.last_ms = now;
	if (N.tokens < 1.0)
		return false;
	N.tokens -= 1.0;
	return true;
}

uint64_t
names_dropped(void)
{
	return N.dropped;
}

/* The query's name as text: dq_name's escaped form, in lower case,
 * without the root's dot; 0 if it does not fit. */
static size_t
names_text(const struct dq *q, char *out, size_t cap)
{
	char buf[LDNS_MAX_DOMAINLEN * 4 + 8];
	size_t i, len;

	dq_name(q, buf, sizeof(buf));
	len = strlen(buf);
	if (len > 1 && buf[len - 1] == '.')
		buf[--len] = '\0';
	if (len == 0 || len >= cap)
		return 0;
	for (i = 0; i < len; i++)
		out[i] = buf[i] <= ' ' || buf[i] > '~' ? '?' :
		    (char)tolower((unsigned char)buf[i]);
	out[len] = '\0';
	return len;
}

void
names_report(const char *sandbox, enum ipc_dns_name_kind kind,
    enum ipc_dns_why why, const struct dq *q)
{
	struct ipc_dns_name m;
	uint64_t h, now = ev_now();
	size_t i;

	if (R.opts->ipc_fd == -1 || R.ipcfd == -1 || q->namelen == 0 ||
	    sandbox[0] == '\0' || sandbox[0] == '?')
		return;
	h = names_hash(sandbox, (int)kind, q);
	i = (size_t)(h % NAMES_SLOTS);
	if (N.slot[i].hash != h) {
		N.slot[i].hash = h;
		N.slot[i].sent_ms = 0;
		N.slot[i].pending = 0;
	}
	if (N.slot[i].pending < UINT32_MAX)
		N.slot[i].pending++;
	if (N.slot[i].sent_ms != 0 && now - N.slot[i].sent_ms < NAMES_EVERY_MS)
		return;
	if (!names_take(now)) {
		N.dropped++;
		return;
	}
	memset(&m, 0, sizeof(m));
	if (names_text(q, m.name, sizeof(m.name)) == 0)
		return;
	snprintf(m.sandbox, sizeof(m.sandbox), "%s", sandbox);
	m.kind = (uint8_t)kind;
	m.reason = (uint8_t)why;
	m.count = N.slot[i].pending;
	if (ipc_send(R.ipcfd, IPC_DNS_NAME, 0, &m, sizeof(m)) == -1) {
		N.dropped++;
		return;
	}
	N.slot[i].sent_ms = now ? now : 1;
	N.slot[i].pending = 0;
}
