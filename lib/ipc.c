/*
 * ipc.c -- typed, size-checked messages over SOCK_SEQPACKET.
 */
#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ipc.h"

typedef int (*ipc_shape)(const void *, size_t, char *, size_t);

static int shape_set_add(const void *, size_t, char *, size_t);
static int shape_set_ack(const void *, size_t, char *, size_t);
static int shape_audit(const void *, size_t, char *, size_t);
static int shape_empty(const void *, size_t, char *, size_t);
static int shape_sign_req(const void *, size_t, char *, size_t);
static int shape_sign_cert(const void *, size_t, char *, size_t);
static int shape_conf_secret(const void *, size_t, char *, size_t);
static int shape_dns_dropped(const void *, size_t, char *, size_t);
static int shape_budget_req(const void *, size_t, char *, size_t);
static int shape_budget_ack(const void *, size_t, char *, size_t);
static int shape_ctl_req(const void *, size_t, char *, size_t);
static int shape_ctl_reply(const void *, size_t, char *, size_t);
static int shape_ctl_log(const void *, size_t, char *, size_t);
static int shape_reg_req(const void *, size_t, char *, size_t);
static int shape_reg_reply(const void *, size_t, char *, size_t);
static int shape_conf(const void *, size_t, char *, size_t);
static int shape_conf_ack(const void *, size_t, char *, size_t);
static int shape_conf_changed(const void *, size_t, char *, size_t);
static int shape_dns_name(const void *, size_t, char *, size_t);
static int shape_conf_allow(const void *, size_t, char *, size_t);
static int shape_ha_spent(const void *, size_t, char *, size_t);
static int shape_ha_arp(const void *, size_t, char *, size_t);
static int shape_ha_probe(const void *, size_t, char *, size_t);
static int shape_ha_flush(const void *, size_t, char *, size_t);
static int shape_ha_grant(const void *, size_t, char *, size_t);
static int shape_web_req(const void *, size_t, char *, size_t);
static int shape_ha_quarantine(const void *, size_t, char *, size_t);
static int shape_proxy_tls(const void *, size_t, char *, size_t);

static const struct {
	const char	*name;
	ipc_shape	 shape;
} ipc_types[IPC_TYPE_MAX] = {
	[IPC_SET_ADD] = { "set-add", shape_set_add },
	[IPC_SET_ACK] = { "set-ack", shape_set_ack },
	[IPC_AUDIT] = { "audit", shape_audit },
	[IPC_RELOAD] = { "reload", shape_empty },
	[IPC_SIGN_REQ] = { "sign-req", shape_sign_req },
	[IPC_SIGN_CERT] = { "sign-cert", shape_sign_cert },
	[IPC_CONF_SECRET] = { "conf-secret", shape_conf_secret },
	[IPC_DNS_DROPPED] = { "dns-dropped", shape_dns_dropped },
	[IPC_CTL_REQ] = { "ctl-req", shape_ctl_req },
	[IPC_CTL_REPLY] = { "ctl-reply", shape_ctl_reply },
	[IPC_CTL_LOG] = { "ctl-log", shape_ctl_log },
	[IPC_CTL_GONE] = { "ctl-gone", shape_empty },
	[IPC_BUDGET_REQ] = { "budget-req", shape_budget_req },
	[IPC_BUDGET_ACK] = { "budget-ack", shape_budget_ack },
	[IPC_REG_REQ] = { "reg-req", shape_reg_req },
	[IPC_REG_REPLY] = { "reg-reply", shape_reg_reply },
	[IPC_CONF] = { "conf", shape_conf },
	[IPC_CONF_ACK] = { "conf-ack", shape_conf_ack },
	[IPC_METRICS] = { "metrics", shape_empty },
	[IPC_DNS_NAME] = { "dns-name", shape_dns_name },
	[IPC_CONF_ALLOW] = { "conf-allow", shape_conf_allow },
	[IPC_CONF_CHANGED] = { "conf-changed", shape_conf_changed },
	[IPC_HA_SPENT] = { "ha-spent", shape_ha_spent },
	[IPC_HA_ARP] = { "ha-arp", shape_ha_arp },
	[IPC_HA_PROBE] = { "ha-probe", shape_ha_probe },
	[IPC_HA_FLUSH] = { "ha-flush", shape_ha_flush },
	[IPC_HA_SNAP] = { "ha-snap", shape_empty },
	[IPC_HA_GRANT] = { "ha-grant", shape_ha_grant },
	[IPC_WEB_REQ] = { "web-req", shape_web_req },
	[IPC_WEB_REPLY] = { "web-reply", shape_ctl_reply },
	[IPC_HA_QUARANTINE] = { "ha-quarantine", shape_ha_quarantine },
	[IPC_PROXY_TLS] = { "proxy-tls", shape_proxy_tls },
};

static const char *const ctl_verbs[CTL_VERB_MAX] = {
	[CTL_STATUS] = "status", [CTL_SANDBOXES] = "sandboxes",
	[CTL_LIST] = "list", [CTL_RELOAD] = "reload",
	[CTL_COUNTERS] = "counters", [CTL_LOG] = "log",
	[CTL_CREATE] = "create", [CTL_START] = "start", [CTL_STOP] = "stop",
	[CTL_DESTROY] = "destroy", [CTL_SECRET] = "secret",
	[CTL_CONSOLE] = "console", [CTL_HOSTS] = "hosts",
	[CTL_REFUSED] = "refused", [CTL_NAMES] = "names",
	[CTL_ALLOW] = "allow", [CTL_UNALLOW] = "unallow",
	[CTL_HA] = "ha", [CTL_GRANTS] = "grants",
	[CTL_WEB_LOGIN] = "web-login", [CTL_WEB_SESSIONS] = "web-sessions",
	[CTL_CLEAR_QUARANTINE] = "clear-quarantine",
};

const char *
ipc_ctl_verb_name(int verb)
{
	return verb > 0 && verb < CTL_VERB_MAX ? ctl_verbs[verb] : NULL;
}

int
ipc_ctl_verb(const char *name)
{
	int v;

	for (v = 1; v < CTL_VERB_MAX; v++)
		if (strcmp(ctl_verbs[v], name) == 0)
			return v;
	return 0;
}

const char *
ipc_type_name(int type)
{
	if (type <= 0 || type >= IPC_TYPE_MAX || ipc_types[type].name == NULL)
		return "unknown";
	return ipc_types[type].name;
}

static int
shape_set_add(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_set_add *m = p;
	size_t i;

	if (len < sizeof(*m)) {
		snprintf(err, errlen, "set-add: %zu bytes, header needs %zu",
		    len, sizeof(*m));
		return -1;
	}
	if (m->naddr == 0 || m->naddr > IPC_SET_MAX_ADDRS ||
	    len != sizeof(*m) + m->naddr * sizeof(struct moat_addr)) {
		snprintf(err, errlen, "set-add: %u addresses do not match %zu "
		    "bytes", m->naddr, len);
		return -1;
	}
	if (memchr(m->sandbox, '\0', sizeof(m->sandbox)) == NULL ||
	    m->sandbox[0] == '\0') {
		snprintf(err, errlen, "set-add: sandbox name not terminated");
		return -1;
	}
	if (m->timeout_ms > IPC_SET_TIMEOUT_MAX_MS) {
		snprintf(err, errlen, "set-add: timeout %u ms exceeds %u ms",
		    m->timeout_ms, IPC_SET_TIMEOUT_MAX_MS);
		return -1;
	}
	if (m->plain > 1 || m->nports > IPC_SET_MAX_PORTS ||
	    (!m->plain && m->nports == 0)) {
		snprintf(err, errlen, "set-add: plain %u with %u ports",
		    m->plain, m->nports);
		return -1;
	}
	for (i = 0; i < m->nports; i++)
		if ((m->ports[i].proto != IPPROTO_TCP &&
		    m->ports[i].proto != IPPROTO_UDP) || m->ports[i].port == 0) {
			snprintf(err, errlen, "set-add: port %zu is not tcp or "
			    "udp 1-65535", i);
			return -1;
		}
	for (i = 0; i < m->naddr; i++)
		if (m->addr[i].family != AF_INET &&
		    m->addr[i].family != AF_INET6) {
			snprintf(err, errlen, "set-add: address %zu has family "
			    "%d", i, m->addr[i].family);
			return -1;
		}
	return 0;
}

static int
shape_ha_spent(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ha_spent *m = p;

	if (len != sizeof(*m)) {
		snprintf(err, errlen, "ha-spent: %zu bytes, expected %zu", len,
		    sizeof(*m));
		return -1;
	}
	if (memchr(m->sandbox, '\0', sizeof(m->sandbox)) == NULL ||
	    m->sandbox[0] == '\0' || m->window < 0) {
		snprintf(err, errlen, "ha-spent: bad sandbox name or window");
		return -1;
	}
	return 0;
}

static int
shape_ha_arp(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ha_arp *m = p;

	if (len != sizeof(*m)) {
		snprintf(err, errlen, "ha-arp: %zu bytes, expected %zu", len,
		    sizeof(*m));
		return -1;
	}
	if (m->kind == 0 || m->kind >= IPC_HA_ARP_KIND_MAX || m->pad != 0) {
		snprintf(err, errlen, "ha-arp: kind %u", m->kind);
		return -1;
	}
	return 0;
}

static int
shape_ha_flush(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ha_flush *m = p;

	if (len != sizeof(*m) || memchr(m->sandbox, '\0',
	    sizeof(m->sandbox)) == NULL || m->sandbox[0] == '\0' ||
	    m->whole > 1) {
		snprintf(err, errlen, "ha-flush: %zu bytes, a bad sandbox name "
		    "or flag", len);
		return -1;
	}
	return 0;
}

static int
shape_ha_quarantine(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ha_quarantine *m = p;

	if (len != sizeof(*m) || memchr(m->sandbox, '\0',
	    sizeof(m->sandbox)) == NULL || m->sandbox[0] == '\0' ||
	    m->on > 1) {
		snprintf(err, errlen, "ha-quarantine: %zu bytes, a bad sandbox "
		    "name or flag", len);
		return -1;
	}
	return 0;
}

static int
shape_ha_probe(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ha_probe *m = p;

	if (len != sizeof(*m)) {
		snprintf(err, errlen, "ha-probe: %zu bytes, expected %zu", len,
		    sizeof(*m));
		return -1;
	}
	if (m->pad[0] != 0 || m->pad[1] != 0) {
		snprintf(err, errlen, "ha-probe: padding not zero");
		return -1;
	}
	return 0;
}

static int
shape_ha_grant(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ha_grant *m = p;

	if (len != sizeof(*m) || memchr(m->sandbox, '\0',
	    sizeof(m->sandbox)) == NULL || m->sandbox[0] == '\0' ||
	    memchr(m->entry, '\0', sizeof(m->entry)) == NULL ||
	    m->entry[0] == '\0' || m->secs > IPC_HA_GRANT_MAX_S) {
		snprintf(err, errlen, "ha-grant: %zu bytes, a bad sandbox name, "
		    "entry or time", len);
		return -1;
	}
	return 0;
}

static int
shape_set_ack(const void *p, size_t len, char *err, size_t errlen)
{
	if (len != sizeof(struct ipc_set_ack)) {
		snprintf(err, errlen, "set-ack: %zu bytes, expected %zu", len,
		    sizeof(struct ipc_set_ack));
		return -1;
	}
	return 0;
}

static int
shape_audit(const void *p, size_t len, char *err, size_t errlen)
{
	const unsigned char *s = p;
	size_t i;

	if (len < 2 || s[0] != '{' || s[len - 1] != '}') {
		snprintf(err, errlen, "audit: not a JSON object");
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (s[i] == '\n' && s[i - 1] == '}' && s[i + 1] == '{')
			continue;	/* the next event's line */
		if (s[i] < 0x20 || s[i] > 0x7e) {
			snprintf(err, errlen, "audit: byte 0x%02x at %zu", s[i],
			    i);
			return -1;
		}
	}
	return 0;
}

static int
shape_sign_req(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_sign_req *m = p;

	if (len < sizeof(*m) || m->keylen == 0 ||
	    m->keylen > IPC_SIGN_MAX_KEY || len != sizeof(*m) + m->keylen) {
		snprintf(err, errlen, "sign-req: %zu bytes do not hold the "
		    "key length they claim", len);
		return -1;
	}
	if (memchr(m->host, '\0', sizeof(m->host)) == NULL ||
	    m->host[0] == '\0') {
		snprintf(err, errlen, "sign-req: host name not terminated");
		return -1;
	}
	return 0;
}

static int
shape_sign_cert(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_sign_cert *m = p;

	if (len < sizeof(*m) ||
	    len != sizeof(*m) + (size_t)m->leaflen + m->calen ||
	    (m->status == 0) != (m->leaflen > 0 && m->calen > 0)) {
		snprintf(err, errlen, "sign-cert: %zu bytes do not match the "
		    "lengths they claim", len);
		return -1;
	}
	return 0;
}

static int
shape_conf_secret(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_conf_secret *m = p;

	if (len < sizeof(*m) || m->len == 0 || m->len > IPC_SECRET_MAX ||
	    len != sizeof(*m) + m->len) {
		snprintf(err, errlen, "conf-secret: %zu bytes do not hold the "
		    "value length they claim", len);
		return -1;
	}
	if (memchr(m->name, '\0', sizeof(m->name)) == NULL ||
	    m->name[0] == '\0') {
		snprintf(err, errlen, "conf-secret: name not terminated");
		return -1;
	}
	return 0;
}

static int
shape_conf(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_conf *m = p;

	if (len != sizeof(*m) || m->gen == 0 || m->how >= IPC_CONF_HOW_MAX ||
	    (m->flags & ~(IPC_CONF_BASIS | IPC_CONF_SECRETS)) != 0 ||
	    m->pad[0] || m->pad[1]) {
		snprintf(err, errlen, "conf: %zu bytes (expected %zu), "
		    "generation 0 or a field out of range", len, sizeof(*m));
		return -1;
	}
	return 0;
}

static int
shape_conf_ack(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_conf_ack *m = p;

	if (len != sizeof(*m) || m->gen == 0 ||
	    (m->status != 0 && m->status != -1)) {
		snprintf(err, errlen, "conf-ack: %zu bytes (expected %zu), "
		    "generation 0 or status out of range", len, sizeof(*m));
		return -1;
	}
	return 0;
}

/* A printable name, not empty, NUL-terminated inside the field. */
static bool
field_printable(const char *s, size_t cap)
{
	const char *nul = memchr(s, '\0', cap);
	const char *q;

	if (nul == NULL || nul == s)
		return false;
	for (q = s; q < nul; q++)
		if (*q <= ' ' || *q > '~')
			return false;
	return true;
}

static int
shape_dns_name(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_dns_name *m = p;

	if (len != sizeof(*m) || m->kind > IPC_DNS_RESOLVED ||
	    m->reason >= IPC_DNS_WHY_MAX || m->pad != 0 || m->count == 0 ||
	    !field_printable(m->sandbox, sizeof(m->sandbox)) ||
	    !field_printable(m->name, sizeof(m->name))) {
		snprintf(err, errlen, "dns-name: %zu bytes (expected %zu), or "
		    "a field out of range", len, sizeof(*m));
		return -1;
	}
	return 0;
}

/* Names: each printable, not empty, NUL-terminated, shorter than a
 * sandbox's or secret's name may be; none past len. */
static int
shape_conf_changed(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_conf_changed *m = p;
	const char *s, *end;

	if (len <= sizeof(*m) || m->kind >= IPC_CHANGED_MAX ||
	    m->len != len - sizeof(*m) || m->pad[0] || m->pad[1] || m->pad[2])
		goto bad;
	for (s = m->names, end = m->names + m->len; s < end;
	    s += strlen(s) + 1)
		if (!field_printable(s, (size_t)(end - s)) ||
		    strlen(s) >= IPC_NAME_LEN)
			goto bad;
	return 0;
bad:
	snprintf(err, errlen, "conf-changed: %zu bytes: a field out of range "
	    "or names not terminated", len);
	return -1;
}

/* Names: each printable, not empty, NUL-terminated; none past len. */
static int
shape_conf_allow(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_conf_allow *m = p;
	const char *s, *end;
	size_t n = 0;

	if (len < sizeof(*m) || m->gen == 0 || m->len != len - sizeof(*m) ||
	    m->pad[0] || m->pad[1] || m->pad[2] ||
	    !field_printable(m->sandbox, sizeof(m->sandbox)))
		goto bad;
	for (s = m->names, end = m->names + m->len; s < end; n++) {
		if (n >= IPC_CONF_ALLOW_MAX ||
		    !field_printable(s, (size_t)(end - s)))
			goto bad;
		s += strlen(s) + 1;
	}
	return 0;
bad:
	snprintf(err, errlen, "conf-allow: %zu bytes: a field out of range or "
	    "names not terminated", len);
	return -1;
}

static int
shape_dns_dropped(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_dns_dropped *m = p;

	if (len != sizeof(*m)) {
		snprintf(err, errlen, "dns-dropped: %zu bytes, expected %zu",
		    len, sizeof(*m));
		return -1;
	}
	if (memchr(m->sandbox, '\0', sizeof(m->sandbox)) == NULL ||
	    m->sandbox[0] == '\0' || m->count == 0) {
		snprintf(err, errlen, "dns-dropped: sandbox name not "
		    "terminated, or a count of 0");
		return -1;
	}
	return 0;
}

/* Words: argc of them, each non-empty and NUL-terminated, the first the
 * verb's name; then the body, if any: one NUL-terminated string, and
 * only for "secret". */
static int
shape_ctl_req(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ctl_req *m = p;
	const char *w, *end;
	const char *verb;
	unsigned i;

	if (len < sizeof(*m) || (verb = ipc_ctl_verb_name(m->verb)) == NULL ||
	    m->json > 1 || m->nfds > IPC_CTL_MAX_FDS || m->pad != 0 ||
	    m->argc == 0 || m->argc > IPC_CTL_MAX_ARGS ||
	    m->bodylen > len - sizeof(*m) ||
	    (m->bodylen > 0 && m->verb != CTL_SECRET)) {
		snprintf(err, errlen, "ctl-req: header fields out of range");
		return -1;
	}
	w = m->data;
	end = (const char *)p + len - m->bodylen;
	for (i = 0; i < m->argc; i++) {
		const char *nul = w < end ? memchr(w, '\0', (size_t)(end - w)) :
		    NULL;
		if (nul == NULL || nul == w) {
			snprintf(err, errlen, "ctl-req: word %u not terminated "
			    "or empty", i);
			return -1;
		}
		if (i == 0 && strcmp(w, verb) != 0) {
			snprintf(err, errlen, "ctl-req: first word is not the "
			    "verb");
			return -1;
		}
		w = nul + 1;
	}
	if (w != end) {
		snprintf(err, errlen, "ctl-req: %zu bytes after the words",
		    (size_t)(end - w));
		return -1;
	}
	/* The value's own rules (printable, its length) are the parent's
	 * to check and to refuse with a reason; here: one string. */
	if (m->bodylen > 0 && (end[m->bodylen - 1] != '\0' ||
	    memchr(end, '\0', m->bodylen - 1U) != NULL)) {
		snprintf(err, errlen, "ctl-req: body not one string");
		return -1;
	}
	return 0;
}

/* A login (the head alone) or a control request after the head, with
 * no credentials, descriptors or body: the parent supplies the user. */
static int
shape_web_req(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_web_req *m = p;

	if (len < IPC_WEB_REQ_HEAD || m->kind == 0 ||
	    m->kind >= IPC_WEB_KIND_MAX || m->pad[0] || m->pad[1] ||
	    m->pad[2] || m->pad2[0] || m->pad2[1] ||
	    memchr(m->token, '\0', sizeof(m->token)) == NULL ||
	    memchr(m->csrf, '\0', sizeof(m->csrf)) == NULL ||
	    memchr(m->from, '\0', sizeof(m->from)) == NULL) {
		snprintf(err, errlen, "web-req: malformed head");
		return -1;
	}
	if (m->kind != IPC_WEB_CTL) {
		if (len == IPC_WEB_REQ_HEAD)
			return 0;
		snprintf(err, errlen, "web-req: %zu bytes after a login",
		    len - IPC_WEB_REQ_HEAD);
		return -1;
	}
	if (len < sizeof(*m) || m->req.uid || m->req.gid || m->req.pid ||
	    m->req.nfds || m->req.bodylen) {
		snprintf(err, errlen, "web-req: credentials, descriptors or a "
		    "body in a web request");
		return -1;
	}
	return shape_ctl_req(&m->req, len - IPC_WEB_REQ_HEAD, err, errlen);
}

static int
shape_ctl_reply(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_ctl_reply *m = p;

	if (len < sizeof(*m) || m->end > IPC_CTL_FOLLOW || m->pad[0] ||
	    m->pad[1] || m->pad[2]) {
		snprintf(err, errlen, "ctl-reply: malformed header");
		return -1;
	}
	return 0;
}

/* One audit line for "log -f": no NUL, one newline, at the end. */
static int
shape_ctl_log(const void *p, size_t len, char *err, size_t errlen)
{
	const char *s = p;

	if (len < 2 || s[len - 1] != '\n' || memchr(s, '\n', len - 1) != NULL ||
	    memchr(s, '\0', len) != NULL) {
		snprintf(err, errlen, "ctl-log: not one line");
		return -1;
	}
	return 0;
}

static bool
name_ok(const char *s, size_t cap)
{
	return memchr(s, '\0', cap) != NULL && s[0] != '\0';
}

static int
shape_budget_req(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_budget_req *m = p;
	uint32_t i;

	if (len != sizeof(*m) || m->nsecret == 0 ||
	    m->nsecret > IPC_BUDGET_MAX) {
		snprintf(err, errlen, "budget-req: %zu bytes (expected %zu) or "
		    "a secret count outside 1..%d", len, sizeof(*m),
		    IPC_BUDGET_MAX);
		return -1;
	}
	for (i = 0; i < m->nsecret; i++)
		if (!name_ok(m->secret[i], sizeof(m->secret[i]))) {
			snprintf(err, errlen, "budget-req: secret %u not "
			    "terminated", i);
			return -1;
		}
	return 0;
}

static int
shape_proxy_tls(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_proxy_tls *m = p;

	if (len != sizeof(*m) || m->pid == 0 || m->ktls_kernel > 1 ||
	    m->ktls_send > m->conns || m->ktls_recv > m->conns) {
		snprintf(err, errlen, "proxy-tls: %zu bytes (expected %zu) or "
		    "counts that do not add up", len, sizeof(*m));
		return -1;
	}
	return 0;
}

static int
shape_budget_ack(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_budget_ack *m = p;

	if (len != sizeof(*m) || (m->status != 0 && m->status != 1)) {
		snprintf(err, errlen, "budget-ack: %zu bytes (expected %zu) or "
		    "a status other than 0 and 1", len, sizeof(*m));
		return -1;
	}
	if (m->status == 1 && (!name_ok(m->secret, sizeof(m->secret)) ||
	    !name_ok(m->window, sizeof(m->window)) || m->retry_after == 0 ||
	    m->retry_after > 86400)) {
		snprintf(err, errlen, "budget-ack: a spent budget without a "
		    "secret, a window or a retry delay of 1..86400 s");
		return -1;
	}
	return 0;
}

/* A field of a registration request: terminated, printable, and filled
 * exactly when the verb has it. */
static bool
reg_field_ok(const char *f, size_t cap, bool want)
{
	const char *nul = memchr(f, '\0', cap);
	const char *c;

	if (nul == NULL || (nul != f) != want)
		return false;
	for (c = f; c < nul; c++)
		if (*c <= 0x20 || *c > 0x7e)
			return false;
	return true;
}

static int
shape_reg_req(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_reg_req *m = p;
	size_t tlen;
	bool reg;

	if (len <= sizeof(*m) || len - sizeof(*m) > IPC_REG_TEXT_MAX ||
	    m->verb == 0 || m->verb >= REG_VERB_MAX || m->pad[0] || m->pad[1] ||
	    m->pad[2] || m->pad2[0] || m->pad2[1] || m->pad2[2]) {
		snprintf(err, errlen, "reg-req: header fields out of range");
		return -1;
	}
	reg = m->verb == REG_REGISTER;
	tlen = len - sizeof(*m);
	if (!reg_field_ok(m->name, sizeof(m->name), reg ||
	    m->verb == REG_REMOVE) ||
	    !reg_field_ok(m->address, sizeof(m->address), reg) ||
	    !reg_field_ok(m->mac, sizeof(m->mac), reg) ||
	    !reg_field_ok(m->egress, sizeof(m->egress), reg) ||
	    !reg_field_ok(m->secrets, sizeof(m->secrets), reg &&
	    m->secrets[0] != '\0') ||
	    !reg_field_ok(m->text, tlen, (reg && m->text[0] != '\0') ||
	    m->verb == REG_SYNC) || strnlen(m->text, tlen) != tlen - 1) {
		snprintf(err, errlen, "reg-req: a field not terminated, not "
		    "printable, or not the verb's");
		return -1;
	}
	return 0;
}

static int
shape_reg_reply(const void *p, size_t len, char *err, size_t errlen)
{
	const struct ipc_reg_reply *m = p;
	const char *t = m->text;
	size_t i;

	if (len < sizeof(*m) || (m->status != 0 && m->status != 1) ||
	    (m->status == 1 && len == sizeof(*m))) {
		snprintf(err, errlen, "reg-reply: a status other than 0 and 1, "
		    "or a refusal without a reason");
		return -1;
	}
	for (i = 0; i < len - sizeof(*m); i++)
		if ((t[i] < 0x20 && t[i] != '\n') || t[i] > 0x7e) {
			snprintf(err, errlen, "reg-reply: byte 0x%02x", t[i]);
			return -1;
		}
	return 0;
}

static int
shape_empty(const void *p, size_t len, char *err, size_t errlen)
{
	if (len != 0) {
		snprintf(err, errlen, "payload of %zu bytes where none is "
		    "expected", len);
		return -1;
	}
	return 0;
}

int
ipc_check(const struct ipc_hdr *h, const void *payload, size_t len,
    char *err, size_t errlen)
{
	if (h->type == 0 || h->type >= IPC_TYPE_MAX ||
	    ipc_types[h->type].shape == NULL) {
		snprintf(err, errlen, "unknown message type %u", h->type);
		return -1;
	}
	if (h->reserved != 0 || h->len != len || len > IPC_MAX_PAYLOAD) {
		snprintf(err, errlen, "%s: header says %u bytes, got %zu",
		    ipc_type_name(h->type), h->len, len);
		return -1;
	}
	return ipc_types[h->type].shape(payload, len, err, errlen);
}

int
ipc_pair(int fds[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds);
}

int
ipc_send(int fd, enum ipc_type type, uint32_t id, const void *payload,
    size_t len)
{
	struct ipc_hdr h = { (uint16_t)type, 0, (uint32_t)len, id };
	struct iovec iov[2] = {
		{ &h, sizeof(h) }, { (void *)(uintptr_t)payload, len },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	ssize_t n;

	if (len > IPC_MAX_PAYLOAD) {
		errno = EMSGSIZE;
		return -1;
	}
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	if ((size_t)n != sizeof(h) + len) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

int
ipc_send_fds(int fd, enum ipc_type type, uint32_t id, const void *payload,
    size_t len, const int *fds, size_t nfds)
{
	struct ipc_hdr h = { (uint16_t)type, 0, (uint32_t)len, id };
	struct iovec iov[2] = {
		{ &h, sizeof(h) }, { (void *)(uintptr_t)payload, len },
	};
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
	} cm;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (len > IPC_MAX_PAYLOAD || nfds > IPC_MAX_FDS) {
		errno = EMSGSIZE;
		return -1;
	}
	if (nfds > 0) {
		memset(&cm, 0, sizeof(cm));
		msg.msg_control = cm.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	if ((size_t)n != sizeof(h) + len) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

/* Every descriptor in the control data, into fds (up to max); the count
 * of all of them, or -1 if any arrived other than as SCM_RIGHTS. */
static int
take_fds(struct msghdr *msg, int *fds, size_t max, size_t *got)
{
	struct cmsghdr *c;
	size_t i, k;
	int bad = 0, fd;

	*got = 0;
	for (c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			bad = 1;
			continue;
		}
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*got < max)
				fds[(*got)++] = fd;
			else {
				close(fd);
				bad = 1;
			}
		}
	}
	return bad ? -1 : 0;
}

static void
close_fds(int *fds, size_t *n)
{
	while (*n > 0)
		close(fds[--*n]);
}

ssize_t
ipc_recv_fds(int fd, struct ipc_hdr *hdr, void *buf, size_t buflen,
    int *fds, size_t maxfds, size_t *nfds, char *err, size_t errlen)
{
	struct iovec iov[2] = { { hdr, sizeof(*hdr) }, { buf, buflen } };
	union {
		struct cmsghdr hdr;
		char buf[CMSG_SPACE(sizeof(int) * IPC_MAX_FDS)];
	} cm;
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2,
	    .msg_control = cm.buf, .msg_controllen = sizeof(cm.buf) };
	ssize_t n;

	memset(hdr, 0, sizeof(*hdr));
	*nfds = 0;
	if (maxfds > IPC_MAX_FDS)
		maxfds = IPC_MAX_FDS;
	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return n;
	if (take_fds(&msg, fds, maxfds, nfds) == -1 ||
	    (msg.msg_flags & MSG_CTRUNC)) {
		close_fds(fds, nfds);
		snprintf(err, errlen, "more than %zu descriptors attached",
		    maxfds);
		return -2;
	}
	if (msg.msg_flags & MSG_TRUNC) {
		close_fds(fds, nfds);
		snprintf(err, errlen, "message larger than %zu bytes",
		    sizeof(*hdr) + buflen);
		return -2;
	}
	n = (size_t)n < sizeof(*hdr) ? -1 : n - (ssize_t)sizeof(*hdr);
	if (n < 0 || ipc_check(hdr, buf, (size_t)n, err, errlen) == -1) {
		if (n < 0)
			snprintf(err, errlen, "short message");
		close_fds(fds, nfds);
		return -2;
	}
	return n;
}

ssize_t
ipc_recv(int fd, struct ipc_hdr *hdr, void *buf, size_t buflen, char *err,
    size_t errlen)
{
	struct iovec iov[2] = { { hdr, sizeof(*hdr) }, { buf, buflen } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n;

	memset(hdr, 0, sizeof(*hdr));
	do
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return n;
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		snprintf(err, errlen, "message larger than %zu bytes",
		    sizeof(*hdr) + buflen);
		return -2;
	}
	if ((size_t)n < sizeof(*hdr)) {
		snprintf(err, errlen, "short message of %zd bytes", n);
		return -2;
	}
	n -= (ssize_t)sizeof(*hdr);
	if (ipc_check(hdr, buf, (size_t)n, err, errlen) == -1)
		return -2;
	return n;
}
