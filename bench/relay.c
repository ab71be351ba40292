/*
 * relay.c -- the simplest relay of one TCP connection to another, as a
 * lower bound for what any proxy in the middle costs (bench/proxy-bench.sh
 * builds it; `make` does not): for each connection accepted, a connection
 * to TARGET and a thread a direction doing blocking read(2) then write(2)
 * of what it read.  No parsing, no policy, no event loop: what is left is
 * the kernel's cost of the second TCP connection and of one hop through
 * user space.  As each connection ends, it prints the CPU time its
 * threads have used so far, all connections together ("cpu_ns N"), which
 * the bench reads: the threads are gone by then.  It stops by itself
 * after LIFETIME_S seconds.
 *
 *   relay LISTEN_ADDR PORT TARGET_ADDR TARGET_PORT LIFETIME_S
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in target = { .sin_family = AF_INET };

static unsigned long long cpu_total;	/* ns, threads that have ended */

static void
add_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	__atomic_add_fetch(&cpu_total, (unsigned long long)ts.tv_sec *
	    1000000000ULL + (unsigned long long)ts.tv_nsec, __ATOMIC_RELAXED);
}

struct pair {
	int	from, to;
};

static void *
pump(void *arg)
{
	struct pair *p = arg;
	char buf[65536];
	ssize_t n, w, off;

	while ((n = read(p->from, buf, sizeof(buf))) > 0)
		for (off = 0; off < n; off += w)
			if ((w = write(p->to, buf + off, (size_t)(n - off))) <= 0)
				goto out;
out:
	shutdown(p->to, SHUT_WR);
	return NULL;
}

static void *
pump_thread(void *arg)
{
	pump(arg);
	add_cpu();
	return NULL;
}

static void *
conn_main(void *arg)
{
	int g = (int)(intptr_t)arg, u, one = 1;
	struct pair up, down;
	pthread_t t;

	if ((u = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    connect(u, (struct sockaddr *)&target, sizeof(target)) == -1)
		goto out;
	setsockopt(g, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	up = (struct pair){ g, u };
	down = (struct pair){ u, g };
	if (pthread_create(&t, NULL, pump_thread, &up) != 0)
		goto out;
	pump(&down);
	pthread_join(t, NULL);
out:
	if (u >= 0)
		close(u);
	close(g);
	add_cpu();
	fprintf(stderr, "cpu_ns %llu\n",
	    __atomic_load_n(&cpu_total, __ATOMIC_RELAXED));
	return NULL;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	pthread_attr_t at;
	pthread_t t;
	int lfd, fd, one = 1;

	if (argc != 6) {
		fprintf(stderr, "usage: relay LISTEN_ADDR PORT TARGET_ADDR "
		    "TARGET_PORT LIFETIME_S\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)atoi(argv[5]));		/* stops by itself */
	sin.sin_port = htons((uint16_t)atoi(argv[2]));
	target.sin_port = htons((uint16_t)atoi(argv[4]));
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[3], &target.sin_addr) != 1 ||
	    (lfd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 4096) == -1) {
		perror("relay");
		return 1;
	}
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 * 1024);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		if (pthread_create(&t, &at, conn_main, (void *)(intptr_t)fd))
			close(fd);
	}
}
