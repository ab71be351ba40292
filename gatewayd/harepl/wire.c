/*
 * harepl/wire.c -- the replication line (harepl.h), both ways: pure, so
 * that the fuzz harness runs the parser the receiving process runs on
 * what the other box sends.
 */
#include <netinet/in.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "config.h"
#include "harepl.h"
#include "hex.h"

#define WORDS	6

static int
fail(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -1;
}

static int
parse_addrs(char *s, struct ipc_set_add *m, size_t room)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(s, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		if (m->naddr == IPC_SET_MAX_ADDRS ||
		    sizeof(*m) + (m->naddr + 1) * sizeof(m->addr[0]) > room ||
		    addr_parse(tok, &m->addr[m->naddr]) == -1)
			return -1;
		m->naddr++;
	}
	return m->naddr > 0 ? 0 : -1;
}

static bool
digits(const char *s, size_t max)
{
	return s[0] != '\0' && strlen(s) <= max &&
	    strspn(s, "0123456789") == strlen(s);
}

/* spent SANDBOX WINDOW BYTES */
static int
parse_spent(char **w, int n, struct ipc_ha_spent *m, char *err,
    size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (n != 4)
		return fail(err, errlen, "spent: expected SANDBOX WINDOW BYTES");
	if (strlen(w[1]) >= sizeof(m->sandbox))
		return fail(err, errlen, "sandbox name too long");
	memcpy(m->sandbox, w[1], strlen(w[1]) + 1);
	if (!digits(w[2], 15) || !digits(w[3], 19))
		return fail(err, errlen, "spent: expected numbers");
	m->window = (int64_t)strtoll(w[2], NULL, 10);
	m->bytes = strtoull(w[3], NULL, 10);
	return 0;
}

/* flush SANDBOX, state SANDBOX */
static int
parse_flush(char **w, int n, struct ipc_ha_flush *m, char *err,
    size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (n != 2)
		return fail(err, errlen, "flush, state: expected SANDBOX");
	if (strlen(w[1]) >= sizeof(m->sandbox))
		return fail(err, errlen, "sandbox name too long");
	memcpy(m->sandbox, w[1], strlen(w[1]) + 1);
	m->whole = strcmp(w[0], "state") == 0;
	return 0;
}

/* grant SANDBOX SECS ENTRY, ungrant SANDBOX ENTRY */
static int
parse_grant(char **w, int n, struct ipc_ha_grant *m, char *err,
    size_t errlen)
{
	bool un = strcmp(w[0], "ungrant") == 0;
	const char *entry;
	unsigned long t;

	memset(m, 0, sizeof(*m));
	if (n != (un ? 3 : 4))
		return fail(err, errlen, un ? "ungrant: expected SANDBOX ENTRY" :
		    "grant: expected SANDBOX SECONDS ENTRY");
	entry = w[un ? 2 : 3];
	if (strlen(w[1]) >= sizeof(m->sandbox))
		return fail(err, errlen, "sandbox name too long");
	memcpy(m->sandbox, w[1], strlen(w[1]) + 1);
	if (!un) {
		if (!digits(w[2], 8) || (t = strtoul(w[2], NULL, 10)) == 0 ||
		    t > IPC_HA_GRANT_MAX_S)
			return fail(err, errlen, "grant: expected 1-31622400 "
			    "seconds");
		m->secs = (uint32_t)t;
	}
	if (strlen(entry) >= sizeof(m->entry))
		return fail(err, errlen, "entry too long");
	memcpy(m->entry, entry, strlen(entry) + 1);
	return 0;
}

/* quarantine SANDBOX, unquarantine SANDBOX */
static int
parse_quarantine(char **w, int n, struct ipc_ha_quarantine *m, char *err,
    size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (n != 2)
		return fail(err, errlen, "quarantine, unquarantine: expected "
		    "SANDBOX");
	if (strlen(w[1]) >= sizeof(m->sandbox))
		return fail(err, errlen, "sandbox name too long");
	memcpy(m->sandbox, w[1], strlen(w[1]) + 1);
	m->on = strcmp(w[0], "quarantine") == 0;
	return 0;
}

static int
parse_words(char **w, struct ipc_set_add *m, size_t room, char *err,
    size_t errlen)
{
	char why[128], *end;
	unsigned long t;
	int np;

	if (strlen(w[1]) >= sizeof(m->sandbox))
		return fail(err, errlen, "sandbox name too long");
	memcpy(m->sandbox, w[1], strlen(w[1]) + 1);
	t = strtoul(w[2], &end, 10);
	if (w[2][0] < '0' || w[2][0] > '9' || *end != '\0' || t == 0 ||
	    t > IPC_SET_TIMEOUT_MAX_MS)
		return fail(err, errlen, "timeout: expected 1-3600000 ms");
	m->timeout_ms = (uint32_t)t;
	if (strcmp(w[3], "plain") != 0 && strcmp(w[3], "-") != 0)
		return fail(err, errlen, "expected \"plain\" or \"-\"");
	m->plain = strcmp(w[3], "plain") == 0;
	if (strcmp(w[4], "-") != 0) {
		if ((np = config_ports_parse(w[4], strlen(w[4]), m->ports, why,
		    sizeof(why))) <= 0)
			return fail(err, errlen, "ports: expected tcp/N,udp/N");
		m->nports = (uint8_t)np;
	}
	if (!m->plain && m->nports == 0)
		return fail(err, errlen, "neither plain nor ports");
	if (parse_addrs(w[5], m, room) == -1)
		return fail(err, errlen, "addresses: expected 1-64 IP "
		    "addresses, comma-separated");
	return 0;
}

/* reg HOSTKEY REQUEST: the request as the host sent it (reg_parse). */
static int
parse_reg(const char *line, size_t len, union harepl_msg *u, size_t *mlen,
    char *err, size_t errlen)
{
	size_t i;
	int rc;

	if (len < 4 + 64 + 1 || line[4 + 64] != ' ')
		return fail(err, errlen, "reg: expected HOSTKEY REQUEST");
	for (i = 4; i < 4 + 64; i++)	/* line is not NUL-terminated */
		if (!((line[i] >= '0' && line[i] <= '9') ||
		    (line[i] >= 'a' && line[i] <= 'f')))
			return fail(err, errlen, "reg: expected HOSTKEY "
			    "REQUEST");
	rc = reg_parse(line + 69, len - 69, &u->reg, sizeof(*u), mlen, err,
	    errlen);
	if (rc != 0 || (u->reg.verb != REG_REGISTER &&
	    u->reg.verb != REG_REMOVE && u->reg.verb != REG_SYNC))
		return rc == -1 ? -1 : fail(err, errlen, "reg: expected "
		    "register, remove or sync");
	/* Digit by digit: sscanf would first run strlen over a line that
	 * has no NUL (the fuzzer's SEGV past its buffer). */
	for (i = 0; i < 32; i++)
		u->reg.key[i] = (uint8_t)(hex_digit(line[4 + 2 * i]) << 4 |
		    hex_digit(line[5 + 2 * i]));
	return 0;
}

int
harepl_parse(const char *line, size_t len, union harepl_msg *u, int *type,
    size_t *mlen, char *err, size_t errlen)
{
	char buf[REG_LINE_MAX + 1], *w[WORDS], *tok, *save = NULL;
	struct ipc_set_add *m = &u->add;
	size_t i;
	int n = 0;

	memset(m, 0, sizeof(*m));
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len > REG_LINE_MAX)
		return fail(err, errlen, "request too long");
	for (i = 0; i < len; i++)
		if (line[i] < 0x20 || line[i] > 0x7e)
			return fail(err, errlen, "malformed request");
	if (len > 4 && strncmp(line, "reg ", 4) == 0) {
		*type = IPC_REG_REQ;
		return parse_reg(line, len, u, mlen, err, errlen);
	}
	memcpy(buf, line, len);
	buf[len] = '\0';
	for (tok = strtok_r(buf, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if (n == WORDS)
			return fail(err, errlen, "too many words");
		w[n++] = tok;
	}
	if (n > 0 && strcmp(w[0], "spent") == 0) {
		if (parse_spent(w, n, &u->spent, err, errlen) == -1)
			return -1;
		*type = IPC_HA_SPENT;
		*mlen = sizeof(u->spent);
		return 0;
	}
	if (n > 0 && (strcmp(w[0], "grant") == 0 ||
	    strcmp(w[0], "ungrant") == 0)) {
		if (parse_grant(w, n, &u->grant, err, errlen) == -1)
			return -1;
		*type = IPC_HA_GRANT;
		*mlen = sizeof(u->grant);
		return 0;
	}
	if (n > 0 && (strcmp(w[0], "quarantine") == 0 ||
	    strcmp(w[0], "unquarantine") == 0)) {
		if (parse_quarantine(w, n, &u->quarantine, err, errlen) == -1)
			return -1;
		*type = IPC_HA_QUARANTINE;
		*mlen = sizeof(u->quarantine);
		return 0;
	}
	if (n > 0 && (strcmp(w[0], "flush") == 0 ||
	    strcmp(w[0], "state") == 0)) {
		if (parse_flush(w, n, &u->flush, err, errlen) == -1)
			return -1;
		*type = IPC_HA_FLUSH;
		*mlen = sizeof(u->flush);
		return 0;
	}
	if (n == 1 && strcmp(w[0], "ping") == 0)
		return HAREPL_PING;
	if (n == 0 || strcmp(w[0], "elem") != 0)
		return fail(err, errlen, "unknown request");
	if (n != WORDS)
		return fail(err, errlen, "elem: expected SANDBOX TIMEOUT_MS "
		    "plain|- PORTS|- ADDRESSES");
	if (parse_words(w, m, sizeof(*u), err, errlen) == -1)
		return -1;
	*type = IPC_SET_ADD;
	*mlen = sizeof(*m) + m->naddr * sizeof(m->addr[0]);
	return 0;
}

static int
format_reg(const struct ipc_reg_req *r, char *buf, size_t len)
{
	char hex[65];
	size_t i;
	int n;

	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", r->key[i]);
	if (r->verb == REG_REGISTER)
		n = snprintf(buf, len, "reg %s register %s %s %s %s%s%s%s%s",
		    hex, r->name, r->address, r->mac, r->egress,
		    r->text[0] ? " allow=" : "", r->text,
		    r->secrets[0] ? " secrets=" : "", r->secrets);
	else if (r->verb == REG_REMOVE)
		n = snprintf(buf, len, "reg %s remove %s", hex, r->name);
	else if (r->verb == REG_SYNC)
		n = snprintf(buf, len, "reg %s sync %s", hex, r->text);
	else
		return -1;
	return n < 0 || (size_t)n >= len || n > REG_LINE_MAX ? -1 : 0;
}

int
harepl_format(int type, const union harepl_msg *u, char *buf, size_t len)
{
	const struct ipc_set_add *m = &u->add;
	char ports[MOAT_NAME_PORTS_MAX * 10 + 2], a[64];
	size_t i, off;
	int n;

	if (type == IPC_HA_SPENT) {
		n = snprintf(buf, len, "spent %s %lld %llu", u->spent.sandbox,
		    (long long)u->spent.window,
		    (unsigned long long)u->spent.bytes);
		return n < 0 || (size_t)n >= len || n > REG_LINE_MAX ? -1 : 0;
	}
	if (type == IPC_REG_REQ)
		return format_reg(&u->reg, buf, len);
	if (type == IPC_HA_FLUSH) {
		n = snprintf(buf, len, "%s %s", u->flush.whole ? "state" :
		    "flush", u->flush.sandbox);
		return n < 0 || (size_t)n >= len || n > REG_LINE_MAX ? -1 : 0;
	}
	if (type == IPC_HA_GRANT) {
		if (u->grant.secs == 0)
			n = snprintf(buf, len, "ungrant %s %s",
			    u->grant.sandbox, u->grant.entry);
		else
			n = snprintf(buf, len, "grant %s %u %s",
			    u->grant.sandbox, u->grant.secs, u->grant.entry);
		return n < 0 || (size_t)n >= len || n > REG_LINE_MAX ? -1 : 0;
	}
	if (type == IPC_HA_QUARANTINE) {
		n = snprintf(buf, len, "%s %s", u->quarantine.on ?
		    "quarantine" : "unquarantine", u->quarantine.sandbox);
		return n < 0 || (size_t)n >= len || n > REG_LINE_MAX ? -1 : 0;
	}
	if (type != IPC_SET_ADD)
		return -1;

	if (m->nports > 0)
		config_ports_fmt(m->ports, m->nports, ports, sizeof(ports));
	else
		snprintf(ports, sizeof(ports), "-");
	n = snprintf(buf, len, "elem %s %u %s %s ", m->sandbox, m->timeout_ms,
	    m->plain ? "plain" : "-", ports);
	if (n < 0 || (size_t)n >= len)
		return -1;
	off = (size_t)n;
	for (i = 0; i < m->naddr; i++) {
		addr_fmt(&m->addr[i], a, sizeof(a));
		n = snprintf(buf + off, len - off, "%s%s", i ? "," : "", a);
		if (n < 0 || (size_t)n >= len - off)
			return -1;
		off += (size_t)n;
	}
	return off > REG_LINE_MAX ? -1 : 0;
}
