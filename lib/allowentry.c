/*
 * allowentry.c -- an allow entry with ports of its own:
 * "git.example.com:tcp/22,tcp/2222".
 *
 * A plain entry ("github.com", "*.example.com") opens the addresses its
 * names resolve to for the sandbox's allow_ports.  An entry with ports
 * opens them for exactly those ports instead.  The spelling of the ports
 * is allow_ports' own ("tcp/443"), comma-separated, and `gatewayd ctl
 * allow --ports` takes the same text.  Entries are kept normalised (name
 * lower case, ports sorted and each once), so that two spellings of the
 * same entry compare equal as strings.
 */
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_int.h"
#include "log.h"

/* "tcp/443" in len bytes: proto and port 1..65535, no leading zero. */
bool
config_port_parse(const char *s, size_t len, struct moat_port *p)
{
	unsigned long v = 0;
	size_t i;

	if (len < 5 || len > 9 || s[3] != '/' || s[4] == '0')
		return false;
	if (strncmp(s, "tcp", 3) == 0)
		p->proto = IPPROTO_TCP;
	else if (strncmp(s, "udp", 3) == 0)
		p->proto = IPPROTO_UDP;
	else
		return false;
	for (i = 4; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return false;
	p->port = (uint16_t)v;
	return true;
}

static int
port_cmp(const void *a, const void *b)
{
	const struct moat_port *x = a, *y = b;

	if (x->proto != y->proto)
		return x->proto < y->proto ? -1 : 1;
	return x->port < y->port ? -1 : x->port > y->port;
}

int
config_ports_parse(const char *s, size_t len, struct moat_port *out,
    char *why, size_t whylen)
{
	struct moat_port p;
	size_t n = 0, i, j, end;

	for (i = 0; i <= len; i = end + 1) {
		for (end = i; end < len && s[end] != ','; end++)
			;
		if (!config_port_parse(s + i, end - i, &p)) {
			snprintf(why, whylen, "expected ports such as "
			    "\"tcp/22\" or \"tcp/22,udp/443\" (tcp or udp, a "
			    "port from 1 to 65535), got \"%.*s\"",
			    (int)(end - i > 40 ? 40 : end - i), s + i);
			return -1;
		}
		for (j = 0; j < n; j++)
			if (port_cmp(&out[j], &p) == 0)
				break;
		if (j < n)
			continue;
		if (n == MOAT_NAME_PORTS_MAX) {
			snprintf(why, whylen, "at most %d ports for one name",
			    MOAT_NAME_PORTS_MAX);
			return -1;
		}
		out[n++] = p;
	}
	qsort(out, n, sizeof(*out), port_cmp);
	return (int)n;
}

void
config_ports_fmt(const struct moat_port *p, size_t n, char *buf, size_t len)
{
	size_t i, off = 0;
	int w;

	buf[0] = '\0';
	for (i = 0; i < n && off < len; i++) {
		w = snprintf(buf + off, len - off, "%s%s/%u", i ? "," : "",
		    p[i].proto == IPPROTO_TCP ? "tcp" : "udp", p[i].port);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}

size_t
config_allow_namelen(const char *entry)
{
	const char *c = strchr(entry, ':');

	return c != NULL ? (size_t)(c - entry) : strlen(entry);
}

int
config_allow_ports(const char *entry, struct moat_port *out)
{
	const char *c = strchr(entry, ':');
	char why[128];
	int n;

	if (c == NULL)
		return 0;
	n = config_ports_parse(c + 1, strlen(c + 1), out, why, sizeof(why));
	return n < 0 ? 0 : n;
}

bool
config_allow_entry_ports(char *v, char *why, size_t whylen)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	char *c = strchr(v, ':'), ports[MOAT_NAME_PORTS_MAX * 10 + 1];
	int n;

	if (c == NULL)
		return config_allow_entry(v, why, whylen);
	*c = '\0';
	if (!config_allow_entry(v, why, whylen)) {
		*c = ':';
		return false;
	}
	for (char *s = c + 1; *s != '\0'; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
	if ((n = config_ports_parse(c + 1, strlen(c + 1), p, why,
	    whylen)) < 0) {
		*c = ':';
		return false;
	}
	/* Never longer than what was written: sorted, each once, no
	 * leading zeros. */
	config_ports_fmt(p, (size_t)n, ports, sizeof(ports));
	*c = ':';
	if (strlen(ports) <= strlen(c + 1))
		memcpy(c + 1, ports, strlen(ports) + 1);
	return true;
}

bool
config_allow_has_ports(const struct moat_strlist *allow)
{
	size_t i;

	for (i = 0; i < allow->n; i++)
		if (strchr(allow->v[i], ':') != NULL)
			return true;
	return false;
}

/* Each distinct port of the entries with ports of their own, into out
 * (room for MOAT_NAME_PORTS_MAX); -1 when there are more. */
int
config_named_ports(const struct moat_strlist *allow, struct moat_port *out)
{
	struct moat_port p[MOAT_NAME_PORTS_MAX];
	size_t i, j, k, n = 0;
	int m;

	for (i = 0; i < allow->n; i++) {
		m = config_allow_ports(allow->v[i], p);
		for (j = 0; j < (size_t)m; j++) {
			for (k = 0; k < n; k++)
				if (port_cmp(&out[k], &p[j]) == 0)
					break;
			if (k < n)
				continue;
			if (n == MOAT_NAME_PORTS_MAX)
				return -1;
			out[n++] = p[j];
		}
	}
	qsort(out, n, sizeof(*out), port_cmp);
	return (int)n;
}

/* Empty l, freeing its entries. */
void
config_strlist_clear(struct moat_strlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/*
 * The entries of a grant as gatewayd sends them to its children (entries
 * NUL-terminated, back to back, len bytes in all), each checked again as
 * the loader checks an allow entry, ports included: gatewayd did; this is
 * the receiving child's second line of defence.  On a bad entry l is left
 * empty, why says which, and -1 is returned.
 */
int
config_allow_unpack(const char *names, size_t len, struct moat_strlist *l,
    char *why, size_t whylen)
{
	const char *s, *end = names + len;
	char *v;

	for (s = names; s < end; s += strlen(s) + 1) {
		v = strdup(s);
		if (v == NULL) {
			snprintf(why, whylen, "out of memory");
			config_strlist_clear(l);
			return -1;
		}
		if (!config_allow_entry_ports(v, why, whylen)) {
			free(v);
			config_strlist_clear(l);
			return -1;
		}
		l->v = xreallocarray(l->v, l->n + 1, sizeof(*l->v));
		l->v[l->n++] = v;
	}
	return 0;
}
