/*
 * agent-client.c -- the load generator of bench/agent-workload.sh (built
 * there; `make` does not).  One process, a thread per agent; each thread
 * enters its sandbox's network namespace (setns applies to the calling
 * thread only) and loops like a coding agent:
 *
 *   API calls    POST /v1/messages with a 2 KiB JSON body and an
 *                Authorization header, answered with 10-50 KiB of JSON,
 *                on a keep-alive HTTPS connection to the API host;
 *   SSE streams  every SSE_EVERY-th call asks for the answer as an event
 *                stream (chunked, 20 events);
 *   packages     after every PKG_EVERY-th call, a PKG_BYTES download on a
 *                keep-alive HTTPS connection to the package host.
 * (Each agent starts at its own place in these cycles.)
 *
 * A connection is opened again after REUSE requests (handshakes are part
 * of the work).  Each agent draws its answer sizes from its own seeded
 * generator, so every path carries the same bytes.  With --rate the
 * agents together start RATE calls a second on a fixed schedule and a
 * call's latency counts from when it was due (a late start is the path's
 * fault); without it each agent calls again as soon as it has its answer.
 *
 * Nothing is counted during the first WARMUP seconds; then SECS seconds
 * are measured.  At both edges the CPU time (user + system) of the
 * processes in --gw and --srv, of this process and of the whole machine
 * is read, so the result says what each side spent per request.  Prints
 * one line of key=value.  Every socket has a 10 s timeout and the process
 * ends itself (SIGALRM) 60 s after it should have finished.
 *
 *   agent-client --ns NS,... --ca FILE --auth VALUE --api ADDR:NAME
 *       --pkg ADDR:NAME [--agents N] [--secs S] [--warmup S] [--rate R]
 *       [--sse-every K] [--pkg-every M] [--pkg-bytes B] [--reuse R]
 *       [--gw PID,...] [--srv PID,...]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BODY_BYTES	2048
#define MAX_NS		64
#define MAX_PIDS	64

struct host {
	struct sockaddr_in sin;
	char name[256];
};

static struct {
	char *ns[MAX_NS];
	int nns;
	const char *ca, *auth;
	struct host api, pkg;
	int agents, secs, warmup, sse_every, pkg_every, reuse, events;
	long pkg_bytes;
	double rate;
	pid_t gw[MAX_PIDS], srv[MAX_PIDS];
	int ngw, nsrv;
} opt = {
	.agents = 50, .secs = 10, .warmup = 2, .sse_every = 10,
	.pkg_every = 25, .reuse = 100, .events = 20, .pkg_bytes = 1 << 20,
};

static SSL_CTX *ctx;
static char body[BODY_BYTES];
static int64_t t_from, t_to;	/* the measured window, CLOCK_MONOTONIC ns */

/* One kind of request's latencies (µs) and bytes, per agent. */
struct series {
	uint32_t *v;
	size_t n, cap;
	uint64_t bytes;
};
enum { K_API, K_SSE, K_PKG, K_N };
static const char *const kname[K_N] = { "api", "sse", "pkg" };

struct agent {
	int id;
	pthread_t t;
	uint64_t rnd;
	struct series s[K_N];
	unsigned long errors, status_bad;
};

struct conn {
	SSL *ssl;
	int fd;
	int served;
	size_t off, len;
	char buf[16384];
};

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
sleep_until(int64_t t)
{
	struct timespec ts = { t / 1000000000, t % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR)
		;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void
record(struct series *s, int64_t t0, int64_t t1, uint64_t bytes)
{
	if (t0 < t_from || t1 > t_to)
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		if ((s->v = realloc(s->v, s->cap * sizeof(*s->v))) == NULL)
			abort();
	}
	s->v[s->n++] = (uint32_t)((t1 - t0) / 1000);
	s->bytes += bytes;
}

/* ---- connections ---- */

static void
conn_close(struct conn *c)
{
	if (c->ssl != NULL) {
		SSL_free(c->ssl);
		close(c->fd);
	}
	c->ssl = NULL;
	c->off = c->len = 0;
	c->served = 0;
}

static int
conn_open(struct conn *c, const struct host *h)
{
	struct timeval tv = { 10, 0 };
	int one = 1;

	if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (const struct sockaddr *)&h->sin,
	    sizeof(h->sin)) == -1) {
		close(c->fd);
		return -1;
	}
	c->ssl = SSL_new(ctx);
	SSL_set_fd(c->ssl, c->fd);
	SSL_set_tlsext_host_name(c->ssl, h->name);
	SSL_set1_host(c->ssl, h->name);
	if (SSL_connect(c->ssl) != 1) {
		conn_close(c);
		return -1;
	}
	return 0;
}

static int
conn_fill(struct conn *c)
{
	int n;

	if (c->off == c->len)
		c->off = c->len = 0;
	else if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len == sizeof(c->buf))
		return -1;
	n = SSL_read(c->ssl, c->buf + c->len, (int)(sizeof(c->buf) - c->len));
	if (n <= 0)
		return -1;
	c->len += (size_t)n;
	return 0;
}

/* The next line, CRLF cut off; valid until the next read. */
static char *
conn_line(struct conn *c)
{
	char *p, *l;

	for (;;) {
		p = memmem(c->buf + c->off, c->len - c->off, "\r\n", 2);
		if (p != NULL) {
			*p = '\0';
			l = c->buf + c->off;
			c->off = (size_t)(p + 2 - c->buf);
			return l;
		}
		if (conn_fill(c) == -1)
			return NULL;
	}
}

static int
conn_skip(struct conn *c, uint64_t n)
{
	while (n > 0) {
		size_t k = c->len - c->off;

		if (k == 0) {
			if (conn_fill(c) == -1)
				return -1;
			continue;
		}
		if (k > n)
			k = (size_t)n;
		c->off += k;
		n -= k;
	}
	return 0;
}

/* A chunked body to its end; returns its size or -1. */
static int64_t
read_chunked(struct conn *c)
{
	int64_t total = 0;
	uint64_t n;
	char *l;

	for (;;) {
		if ((l = conn_line(c)) == NULL)
			return -1;
		n = strtoull(l, NULL, 16);
		if (n == 0)
			break;
		if (conn_skip(c, n) == -1 || (l = conn_line(c)) == NULL ||
		    *l != '\0')
			return -1;
		total += (int64_t)n;
	}
	while ((l = conn_line(c)) != NULL && *l != '\0')
		;	/* trailers */
	return l == NULL ? -1 : total;
}

/* A whole response; returns its body size, -1 on a broken stream, -2 on a
 * status other than 200 (the stream is still in step). */
static int64_t
read_response(struct conn *c)
{
	int status = 0, chunked = 0, keep = 1;
	int64_t cl = -1, n;
	char *l;

	if ((l = conn_line(c)) == NULL ||
	    sscanf(l, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	while ((l = conn_line(c)) != NULL && *l != '\0') {
		if (strncasecmp(l, "Content-Length:", 15) == 0)
			cl = strtoll(l + 15, NULL, 10);
		else if (strncasecmp(l, "Transfer-Encoding:", 18) == 0)
			chunked = strcasestr(l, "chunked") != NULL;
		else if (strncasecmp(l, "Connection:", 11) == 0)
			keep = strcasestr(l, "close") == NULL;
	}
	if (l == NULL)
		return -1;
	if (chunked)
		n = read_chunked(c);
	else if (cl >= 0)
		n = conn_skip(c, (uint64_t)cl) == -1 ? -1 : cl;
	else
		return -1;	/* our server always frames its answers */
	if (!keep)
		c->served = opt.reuse;	/* opened again before the next */
	return n < 0 ? -1 : status != 200 ? -2 : n;
}

/* One request on c (opened to h first if it has to be); returns the
 * answer's body size or -1, and closes c on any error. */
static int64_t
exchange(struct conn *c, const struct host *h, const char *req, size_t len)
{
	int64_t n;

	if (c->ssl != NULL && c->served >= opt.reuse)
		conn_close(c);
	if (c->ssl == NULL && conn_open(c, h) == -1)
		return -1;
	c->served++;
	if (SSL_write(c->ssl, req, (int)len) != (int)len ||
	    (n = read_response(c)) == -1) {
		conn_close(c);
		return -1;
	}
	return n;
}

/* ---- an agent ---- */

static int
enter_ns(const char *ns)
{
	char path[256];
	int fd, rc;

	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

static void
count(struct agent *a, int k, int64_t t0, int64_t n)
{
	if (n == -2)
		a->status_bad++;
	if (n < 0) {
		a->errors++;
		return;
	}
	record(&a->s[k], t0, now_ns(), (uint64_t)n);
}

static void *
agent_main(void *arg)
{
	struct agent *a = arg;
	struct conn *api = calloc(1, sizeof(*api)), *pkg = calloc(1, sizeof(*pkg));
	char req[BODY_BYTES + 1024];
	int64_t gap = opt.rate > 0 ? (int64_t)(1e9 * opt.agents / opt.rate) : 0;
	int64_t due = t_from - (int64_t)opt.warmup * 1000000000 +
	    gap * a->id / opt.agents, t0, n;
	unsigned long k;
	int hl, sse, size;

	if (api == NULL || pkg == NULL ||
	    enter_ns(opt.ns[a->id % opt.nns]) == -1) {
		perror("agent");
		exit(1);
	}
	for (k = 0; now_ns() < t_to; k++) {
		if (gap > 0) {
			if (due >= t_to)
				break;
			sleep_until(due);
			t0 = due;
			due += gap;
		} else
			t0 = now_ns();
		size = 10240 + (int)(xorshift(&a->rnd) % 40961);
		/* Agents are staggered (k + id) so that the mix is the same
		 * from the first calls on, however few a slow path allows. */
		sse = opt.sse_every > 0 && (k + (unsigned)a->id) %
		    (unsigned)opt.sse_every == (unsigned)opt.sse_every - 1;
		/* "%.0d" of 0 prints nothing: no stream= on a plain call */
		hl = snprintf(req, sizeof(req), "POST /v1/messages?n=%d%s%.0d "
		    "HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\n"
		    "Content-Type: application/json\r\nAccept: %s\r\n"
		    "Content-Length: %d\r\n\r\n", size, sse ? "&stream=" : "",
		    sse ? opt.events : 0, opt.api.name, opt.auth,
		    sse ? "text/event-stream" : "application/json", BODY_BYTES);
		memcpy(req + hl, body, BODY_BYTES);
		n = exchange(api, &opt.api, req, (size_t)hl + BODY_BYTES);
		count(a, sse ? K_SSE : K_API, t0, n);
		if (n < 0)
			usleep(10000);	/* a broken path is not hammered */
		if (opt.pkg_every > 0 && (k + (unsigned)a->id) %
		    (unsigned)opt.pkg_every == (unsigned)opt.pkg_every - 1) {
			hl = snprintf(req, sizeof(req), "GET /big?n=%ld HTTP/1.1\r\n"
			    "Host: %s\r\n\r\n", opt.pkg_bytes, opt.pkg.name);
			t0 = now_ns();
			count(a, K_PKG, t0, exchange(pkg, &opt.pkg, req, (size_t)hl));
		}
	}
	conn_close(api);
	conn_close(pkg);
	free(api);
	free(pkg);
	return NULL;
}

/* ---- CPU accounting ---- */

static uint64_t
pid_ticks(const pid_t *p, int n)
{
	uint64_t sum = 0, ut, st;
	char path[64], line[1024], *r;
	FILE *f;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p[i]);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		if (fgets(line, sizeof(line), f) != NULL &&
		    (r = strrchr(line, ')')) != NULL &&
		    sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
		    "%lu %lu", &ut, &st) == 2)
			sum += ut + st;
		fclose(f);
	}
	return sum;
}

static uint64_t
machine_busy_ticks(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	if (f == NULL)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
	    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) != 8)
		v[3] = v[4] = 0;
	fclose(f);
	return v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
}

struct cpu {
	uint64_t gw, srv, busy, self_us;
};

static void
cpu_read(struct cpu *c)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	c->gw = pid_ticks(opt.gw, opt.ngw);
	c->srv = pid_ticks(opt.srv, opt.nsrv);
	c->busy = machine_busy_ticks();
	c->self_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec +
	    (uint64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
}

/* ---- results ---- */

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void
report(struct agent *ag, const struct cpu *c0, const struct cpu *c1)
{
	double secs = (double)(t_to - t_from) / 1e9, tick = 1e6 / (double)sysconf(_SC_CLK_TCK);
	unsigned long errors = 0, bad = 0, reqs = 0;
	double gw_us, srv_us, self_us, busy_us;

	for (int k = 0; k < K_N; k++) {
		struct series all = { 0 };

		for (int i = 0; i < opt.agents; i++) {
			struct series *s = &ag[i].s[k];

			all.v = realloc(all.v, (all.n + s->n + 1) * sizeof(*all.v));
			if (all.v == NULL)
				abort();
			memcpy(all.v + all.n, s->v, s->n * sizeof(*s->v));
			all.n += s->n;
			all.bytes += s->bytes;
		}
		qsort(all.v, all.n, sizeof(*all.v), cmp_u32);
		reqs += all.n;
		printf("%s=%zu %s_p50_ms=%.3f %s_p99_ms=%.3f %s_mib_s=%.1f ",
		    kname[k], all.n, kname[k],
		    all.n ? all.v[all.n / 2] / 1000.0 : 0, kname[k],
		    all.n ? all.v[all.n * 99 / 100] / 1000.0 : 0, kname[k],
		    (double)all.bytes / 1048576.0 / secs);
		free(all.v);
	}
	for (int i = 0; i < opt.agents; i++) {
		errors += ag[i].errors;
		bad += ag[i].status_bad;
	}
	gw_us = (double)(c1->gw - c0->gw) * tick;
	srv_us = (double)(c1->srv - c0->srv) * tick;
	self_us = (double)(c1->self_us - c0->self_us);
	busy_us = (double)(c1->busy - c0->busy) * tick;
	printf("requests=%lu rps=%.1f errors=%lu non200=%lu "
	    "gw_cpu_us=%.1f srv_cpu_us=%.1f client_cpu_us=%.1f "
	    "client_cpu_pct=%.0f machine_busy_pct=%.0f rest_cpu_pct=%.0f "
	    "secs=%.2f\n",
	    reqs, reqs / secs, errors, bad,
	    reqs ? gw_us / reqs : 0, reqs ? srv_us / reqs : 0,
	    reqs ? self_us / reqs : 0, 100 * self_us / 1e6 / secs,
	    100 * busy_us / 1e6 / secs,
	    100 * (busy_us - gw_us - srv_us - self_us) / 1e6 / secs, secs);
}

/* ---- options ---- */

static int
parse_host(struct host *h, const char *s)
{
	const char *c = strchr(s, ':');
	char a[64];

	if (c == NULL || (size_t)(c - s) >= sizeof(a) ||
	    strlen(c + 1) >= sizeof(h->name))
		return -1;
	snprintf(a, sizeof(a), "%.*s", (int)(c - s), s);
	h->sin.sin_family = AF_INET;
	h->sin.sin_port = htons(443);
	strcpy(h->name, c + 1);
	return inet_pton(AF_INET, a, &h->sin.sin_addr) == 1 ? 0 : -1;
}

static int
parse_pids(pid_t *p, int *n, char *s)
{
	for (char *t = strtok(s, ","); t != NULL; t = strtok(NULL, ","))
		if (*n < MAX_PIDS)
			p[(*n)++] = (pid_t)atoi(t);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: agent-client --ns NS,... --ca FILE --auth VALUE "
	    "--api ADDR:NAME --pkg ADDR:NAME [--agents N] [--secs S] "
	    "[--warmup S] [--rate R] [--sse-every K] [--pkg-every M] "
	    "[--pkg-bytes B] [--reuse R] [--gw PID,...] [--srv PID,...]\n");
	exit(2);
}

static void
parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ns", 1, NULL, 'n' }, { "ca", 1, NULL, 'c' },
		{ "auth", 1, NULL, 'a' }, { "api", 1, NULL, 'A' },
		{ "pkg", 1, NULL, 'P' }, { "agents", 1, NULL, 'g' },
		{ "secs", 1, NULL, 's' }, { "warmup", 1, NULL, 'w' },
		{ "rate", 1, NULL, 'r' }, { "sse-every", 1, NULL, 'e' },
		{ "pkg-every", 1, NULL, 'p' }, { "pkg-bytes", 1, NULL, 'b' },
		{ "reuse", 1, NULL, 'u' }, { "gw", 1, NULL, 'G' },
		{ "srv", 1, NULL, 'S' }, { NULL, 0, NULL, 0 }
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'n':
			for (char *t = strtok(optarg, ","); t != NULL && opt.nns < MAX_NS;
			    t = strtok(NULL, ","))
				opt.ns[opt.nns++] = t;
			break;
		case 'c': opt.ca = optarg; break;
		case 'a': opt.auth = optarg; break;
		case 'A': if (parse_host(&opt.api, optarg)) usage(); break;
		case 'P': if (parse_host(&opt.pkg, optarg)) usage(); break;
		case 'g': opt.agents = atoi(optarg); break;
		case 's': opt.secs = atoi(optarg); break;
		case 'w': opt.warmup = atoi(optarg); break;
		case 'r': opt.rate = atof(optarg); break;
		case 'e': opt.sse_every = atoi(optarg); break;
		case 'p': opt.pkg_every = atoi(optarg); break;
		case 'b': opt.pkg_bytes = atol(optarg); break;
		case 'u': opt.reuse = atoi(optarg); break;
		case 'G': parse_pids(opt.gw, &opt.ngw, optarg); break;
		case 'S': parse_pids(opt.srv, &opt.nsrv, optarg); break;
		default: usage();
		}
	}
	if (opt.nns == 0 || opt.ca == NULL || opt.auth == NULL ||
	    opt.api.name[0] == '\0' || opt.pkg.name[0] == '\0' ||
	    opt.agents < 1 || opt.secs < 1 || opt.warmup < 0 || opt.reuse < 1)
		usage();
}

int
main(int argc, char **argv)
{
	struct agent *ag;
	struct cpu c0, c1;
	int64_t start;

	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)(opt.warmup + opt.secs + 60));	/* ends by itself */
	snprintf(body, sizeof(body), "{\"model\":\"bench\",\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"");
	for (size_t i = strlen(body); i < sizeof(body) - 4; i++)
		body[i] = (char)('a' + i % 26);
	memcpy(body + sizeof(body) - 4, "\"}]}", 4);
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_load_verify_locations(ctx, opt.ca, NULL) != 1) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if ((ag = calloc((size_t)opt.agents, sizeof(*ag))) == NULL)
		return 1;
	start = now_ns();
	t_from = start + (int64_t)opt.warmup * 1000000000;
	t_to = t_from + (int64_t)opt.secs * 1000000000;
	for (int i = 0; i < opt.agents; i++) {
		ag[i].id = i;
		ag[i].rnd = 0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);
		if (pthread_create(&ag[i].t, NULL, agent_main, &ag[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	sleep_until(t_from);
	cpu_read(&c0);
	sleep_until(t_to);
	cpu_read(&c1);
	for (int i = 0; i < opt.agents; i++)
		pthread_join(ag[i].t, NULL);
	report(ag, &c0, &c1);
	return 0;
}
