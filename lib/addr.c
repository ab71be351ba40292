/*
 * addr.c -- addresses to and from text and socket addresses (addr.h).
 */
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include "addr.h"

int
addr_parse(const char *s, struct moat_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, s, a->a) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, a->a) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	return -1;
}

char *
addr_fmt(const struct moat_addr *a, char *buf, size_t len)
{
	if (inet_ntop(a->family == AF_INET6 ? AF_INET6 : AF_INET, a->a, buf,
	    (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

bool
addr_eq(const struct moat_addr *a, const struct moat_addr *b)
{
	return a->family == b->family && memcmp(a->a, b->a,
	    a->family == AF_INET ? 4 : 16) == 0;
}

int
addr_from_sockaddr(const struct sockaddr_storage *ss, struct moat_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		a->family = AF_INET;
		memcpy(a->a, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return 0;
	}
	if (ss->ss_family == AF_INET6) {
		a->family = AF_INET6;
		memcpy(a->a, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		return 0;
	}
	return -1;
}

socklen_t
addr_to_sockaddr(const struct moat_addr *a, uint16_t port,
    struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a->a, 4);
		return sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, a->a, 16);
		return sizeof(*sin6);
	}
}

int
addr_mask_plen(const struct sockaddr *m, int family)
{
	const uint8_t *b;
	size_t i, n = family == AF_INET ? 4 : 16;
	int len = 0;

	if (m == NULL)
		return -1;
	b = family == AF_INET ?
	    (const uint8_t *)&((const struct sockaddr_in *)m)->sin_addr :
	    (const uint8_t *)&((const struct sockaddr_in6 *)m)->sin6_addr;
	for (i = 0; i < n; i++)
		len += __builtin_popcount(b[i]);
	return len;
}

bool
addr_unmap(struct moat_addr *a)
{
	static const uint8_t mapped[12] =
	    { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	uint8_t v4[4];

	if (a->family != AF_INET6 || memcmp(a->a, mapped, 12) != 0)
		return false;
	memcpy(v4, a->a + 12, 4);
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	memcpy(a->a, v4, 4);
	return true;
}

bool
addr_nat64_v4(const struct moat_addr *a, struct moat_addr *v4)
{
	static const uint8_t wkp[12] =
	    { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };

	if (a->family != AF_INET6 || memcmp(a->a, wkp, 12) != 0)
		return false;
	memset(v4, 0, sizeof(*v4));
	v4->family = AF_INET;
	memcpy(v4->a, a->a + 12, 4);
	return true;
}
