/*
 * udp-blast.c -- small UDP datagrams as fast as one process sends them,
 * for bench/nft-acct.sh (which builds it; `make` does not).  A veth
 * delivers in the sender's own softirq, so the time taken includes the
 * gateway's forwarding path, nftables hooks and all: the per-packet cost
 * of a rule shows in the rate.  No segmentation offload merges datagrams,
 * unlike bulk TCP.  Prints datagrams per second (wall clock) and the
 * sender's CPU time per datagram in nanoseconds (user and system: the
 * forwarding done in its softirq is charged to it), which other load on
 * the machine disturbs far less than the rate.
 *
 *   udp-blast ADDR PORT SIZE COUNT
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double
cpu(const struct rusage *r)
{
	return (double)(r->ru_utime.tv_sec + r->ru_stime.tv_sec) +
	    (double)(r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1e6;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct sockaddr *sa = (struct sockaddr *)&sin;
	socklen_t salen = sizeof(sin);
	struct timespec t0, t1;
	struct rusage r0, r1;
	static char buf[1472];
	long size, count, i, sent = 0;
	double s;
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: udp-blast ADDR PORT SIZE COUNT\n");
		return 2;
	}
	if (inet_pton(AF_INET6, argv[1], &sin6.sin6_addr) == 1) {
		sa = (struct sockaddr *)&sin6;
		salen = sizeof(sin6);
	} else if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
		fprintf(stderr, "udp-blast: not an address: %s\n", argv[1]);
		return 2;
	}
	sin.sin_port = sin6.sin6_port = htons((unsigned short)atoi(argv[2]));
	size = atol(argv[3]);
	count = atol(argv[4]);
	if (size < 1 || size > (long)sizeof(buf) || count < 1)
		return 2;
	if ((fd = socket(sa->sa_family, SOCK_DGRAM, 0)) == -1 ||
	    connect(fd, sa, salen) == -1) {
		perror("udp-blast");
		return 1;
	}
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < count; i++)
		if (send(fd, buf, (size_t)size, 0) == size)
			sent++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &r1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%.0f %.0f\n", sent / s, (cpu(&r1) - cpu(&r0)) * 1e9 /
	    (double)(sent ? sent : 1));
	close(fd);
	return sent == count ? 0 : 1;
}
