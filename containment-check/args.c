/*
 * args.c -- parsing of option values.  Pure functions so the unit tests
 * can drive them; main.c only maps errors to usage messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc.h"

static const char *const mode_names[] = {
	[M_OPEN] = "open", [M_ALLOWLIST] = "allowlist", [M_NONE] = "none",
};

int
args_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (unsigned)v;
	return 0;
}

int
args_mode(const char *s, enum cc_mode *m)
{
	size_t i;

	for (i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++) {
		if (strcmp(s, mode_names[i]) == 0) {
			*m = (enum cc_mode)i;
			return 0;
		}
	}
	return -1;
}

const char *
args_mode_name(enum cc_mode m)
{
	return mode_names[m];
}

/*
 * Split "host", "host:port", "[v6]" or "[v6]:port".  A bare IPv6 address
 * (more than one colon, no brackets) is a host without a port.
 * *port is NULL when none was given.
 */
static int
split_hostport(const char *s, char *host, size_t hostlen, const char **port)
{
	const char *colon, *end;
	size_t n;

	*port = NULL;
	if (*s == '[') {
		if ((end = strchr(s, ']')) == NULL)
			return -1;
		if (end[1] == ':')
			*port = end + 2;
		else if (end[1] != '\0')
			return -1;
		s++;
		n = (size_t)(end - s);
	} else if ((colon = strchr(s, ':')) != NULL &&
	    strchr(colon + 1, ':') == NULL) {
		*port = colon + 1;
		n = (size_t)(colon - s);
	} else
		n = strlen(s);
	if (n == 0 || n >= hostlen)
		return -1;
	memcpy(host, s, n);
	host[n] = '\0';
	return 0;
}

static int
parse_port(const char *s, uint16_t *port)
{
	unsigned v;

	if (args_uint(s, 1, 65535, &v) == -1)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
args_target(const char *s, struct cc_target *t)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port;

	memset(t, 0, sizeof(*t));
	if (split_hostport(s, host, sizeof(host), &port) == -1 ||
	    addr_parse(host, &t->addr) == -1)
		return -1;
	if (port != NULL && parse_port(port, &t->port) == -1)
		return -1;
	return 0;
}

/* A host name: letters, digits, '-', '.', '_' -- nothing a DNS query
 * builder or a report line would have to escape. */
static int
valid_name(const char *s)
{
	for (; *s != '\0'; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' ||
		    *s == '_'))
			return -1;
	}
	return 0;
}

int
args_hostport(const char *s, struct cc_hostport *hp)
{
	struct moat_addr a;
	const char *port;

	memset(hp, 0, sizeof(*hp));
	if (split_hostport(s, hp->host, sizeof(hp->host), &port) == -1 ||
	    port == NULL || parse_port(port, &hp->port) == -1)
		return -1;
	if (addr_parse(hp->host, &a) == 0)
		return 0;
	return valid_name(hp->host);
}

static int
push_target(struct cc_target *v, size_t *n, const char *arg)
{
	if (*n == CC_MAXLIST)
		return -2;
	if (args_target(arg, &v[*n]) == -1)
		return -1;
	(*n)++;
	return 0;
}

/* The host numbers a LAN range is sampled at: its first hosts, where
 * routers and servers are usually numbered by hand, and for IPv6 ::10
 * too (SLAAC addresses cannot be guessed; hand-numbered ones can). */
static const uint8_t lan_hosts4[] = { 1, 2 };
static const uint8_t lan_hosts6[] = { 1, 2, 0x10 };

/* A LAN range, IPv4 up to /30 or IPv6 up to /120: a few of its host
 * addresses as --targets, on the common ports. */
static int
push_lan(struct cc_opts *o, const char *arg)
{
	struct moat_prefix p;
	const uint8_t *hosts;
	size_t k, nhosts;
	int last;

	if (prefix_parse(arg, &p) == -1)
		return -1;
	if (p.addr.family == AF_INET && p.plen <= 30) {
		hosts = lan_hosts4;
		nhosts = sizeof(lan_hosts4);
		last = 3;
	} else if (p.addr.family == AF_INET6 && p.plen <= 120) {
		hosts = lan_hosts6;
		nhosts = sizeof(lan_hosts6);
		last = 15;
	} else
		return -1;
	if (o->ntargets + nhosts > CC_MAXLIST)
		return -2;
	for (k = 0; k < nhosts; k++) {
		o->targets[o->ntargets].addr = p.addr;
		o->targets[o->ntargets].addr.a[last] += hosts[k];
		o->targets[o->ntargets++].port = 0;
	}
	return 0;
}

int
args_routed(const char *arg, struct cc_opts *o)
{
	struct moat_prefix p;

	if (prefix_parse(arg, &p) == -1 || p.addr.family != AF_INET6 ||
	    p.plen < 8 || p.plen > 120)
		return -1;
	if (o->nrouted == CC_MAXLIST)
		return -2;
	o->routed[o->nrouted++] = p;
	return 0;
}

int
args_targets_line(const char *line, struct cc_opts *o)
{
	char key[16], val[80], extra;
	int n;

	line += strspn(line, " \t");
	if (*line == '\0' || *line == '\n' || *line == '#')
		return 0;
	n = sscanf(line, "%15s %79s %c", key, val, &extra);
	if (n != 2)
		return -1;
	if (strcmp(key, "gateway") == 0)
		return push_target(o->gwaddrs, &o->ngwaddrs, val);
	if (strcmp(key, "exception") == 0)
		return push_target(o->closed, &o->nclosed, val);
	if (strcmp(key, "lan") == 0)
		return push_lan(o, val);
	if (strcmp(key, "routed") == 0)
		return args_routed(val, o);
	return -1;
}
