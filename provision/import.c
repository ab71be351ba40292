/*
 * import.c -- a member's image, kernel and initrd become the guest's own
 * files at create time, so that `start` never opens a member's path again.
 *
 * Every input arrives as an open descriptor (gatewayd passes the ones the
 * member's provision opened as the member; root's own run opens its
 * paths here).  Root never interprets the bytes: a child that has become
 * the guest's uid, in an empty network namespace, with a time and memory
 * limit, copies them into a file root made for it in the guest's folder.
 * An image is then refused unless it stands alone: its qcow2 header
 * (qcow2.c, a pure check) names no backing file and no external data file,
 * and `qemu-img info`, run the same way, agrees.  Only then does
 * `qemu-img convert`, again as the guest's uid, write the guest's disk.
 *
 * What goes back to the member says what was wrong with their file; the
 * tools' own messages are never shown (they could tell a member which
 * hosts and ports answer).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"
#include "qcow2.h"

#define IMPORT_AS_BYTES		(2ULL << 30)	/* qemu-img's address space */
#define IMPORT_SLACK_BYTES	(256ULL << 20)	/* qcow2 metadata over vsize */
#define FILE_MAX_BYTES		(512ULL << 20)	/* a kernel or an initrd */

int
input_open(const char *opt, const char *path)
{
	struct stat sb;
	char *end;
	long n;
	int fd, fl;

	if (strncmp(path, "/dev/fd/", 8) == 0) {
		n = strtol(path + 8, &end, 10);
		if (end == path + 8 || *end != '\0' || n < 3 || n > 1023 ||
		    (fd = fcntl((int)n, F_DUPFD_CLOEXEC, 3)) == -1) {
			log_warnx("%s %s: no such open file", opt, path);
			return -1;
		}
	} else if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK)) == -1) {
		log_warn("%s %s", opt, path);
		return -1;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		log_warnx("%s %s: not a regular file (a FIFO, device or folder "
		    "is refused)", opt, path);
		close(fd);
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFL)) != -1)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

/* Root makes each file the child writes: the guest's uid cannot create
 * anything in its folder, only write what it was given. */
static int
give_new(const char *path, const struct qemu_user *u)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
	    O_NOFOLLOW, 0600);

	if (fd == -1 || fchown(fd, u->uid, u->gid) == -1) {
		log_warn("%s", path);
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

struct copy_job {
	int		 in;
	const char	*dest;
};

/* In the child, as the guest's uid.  pread and an explicit offset: the
 * member may still hold the same open file, and its offset is theirs. */
static int
copy_fd(void *arg)
{
	const struct copy_job *j = arg;
	char buf[65536];
	off_t off = 0;
	ssize_t r, w;
	int out;

	if ((out = open(j->dest, O_WRONLY | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW)) == -1)
		return -1;
	while ((r = pread(j->in, buf, sizeof(buf), off)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		for (w = 0; w < r; ) {
			ssize_t k = write(out, buf + w, (size_t)(r - w));
			if (k == -1 && errno == EINTR)
				continue;
			if (k <= 0)
				return -1;
			w += k;
		}
		off += r;
	}
	return close(out);
}

static int
limited_verdict(int rc, const char *opt, const char *what,
    const struct pv *pv)
{
	if (rc == RUN_TIMEOUT)
		log_warnx("%s: %s did not finish within %u s "
		    "(gateway.import_timeout)", opt, what,
		    pv->cfg->gw.import_timeout);
	return rc == 0 ? 0 : -1;
}

static int
copy_in(const struct pv *pv, const char *opt, int fd, const char *dest,
    const struct qemu_user *u, unsigned long long max)
{
	struct run_limits l = { pv->cfg->gw.import_timeout, IMPORT_AS_BYTES,
	    max };
	struct copy_job j = { fd, dest };
	struct stat sb;
	int rc;

	if (fstat(fd, &sb) == -1 || (unsigned long long)sb.st_size > max) {
		log_warnx("%s: the file is larger than the %llu MiB allowed "
		    "here", opt, max >> 20);
		return -1;
	}
	if (give_new(dest, u) == -1)
		return -1;
	rc = run_limited(u, &l, copy_fd, &j, NULL, 0);
	if (rc == -1)
		log_warnx("%s: the file could not be read in full", opt);
	return limited_verdict(rc, opt, "reading the file", pv);
}

int
import_file(const struct pv *pv, const char *opt, int fd, const char *dest,
    const struct qemu_user *u)
{
	return copy_in(pv, opt, fd, dest, u, FILE_MAX_BYTES);
}

struct tool_job {
	char *const	*argv;
};

static int
exec_tool(void *arg)
{
	static char *const env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
	    "HOME=/", "LC_ALL=C", NULL };
	const struct tool_job *j = arg;

	execve(j->argv[0], j->argv, env);
	return -1;
}

/* The header of our own copy (root-made, in root's folder). */
static int
check_header(const struct guest *g, const char *src,
    unsigned long long *vsize)
{
	unsigned char h[512];
	char why[256];
	struct stat sb;
	ssize_t n;
	int fd;

	if ((fd = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    fstat(fd, &sb) == -1) {
		log_warn("%s", src);
		if (fd != -1)
			close(fd);
		return -1;
	}
	n = pread(fd, h, sizeof(h), 0);
	close(fd);
	if (strcmp(g->image_format, "raw") == 0) {
		*vsize = (unsigned long long)sb.st_size;
		return 0;
	}
	if (qcow2_header_check(h, n > 0 ? (size_t)n : 0, vsize, why,
	    sizeof(why)) == -1) {
		log_warnx("--image %s: %s", g->image, why);
		return -1;
	}
	return 0;
}

/* qemu-img's own reading, as the guest's uid, with no network: the image
 * must parse as its format and name neither backing nor data file. */
static int
check_info(const struct pv *pv, const struct guest *g, const char *src,
    const struct qemu_user *u)
{
	char *const argv[] = { (char *)pv->qemu_img, "info", "--output=json",
	    "-f", g->image_format, (char *)src, NULL };
	struct run_limits l = { pv->cfg->gw.import_timeout, IMPORT_AS_BYTES,
	    1 << 20 };
	struct tool_job j = { argv };
	char out[16384];
	int rc;

	rc = run_limited(u, &l, exec_tool, &j, out, sizeof(out));
	if (rc == -1) {
		log_warnx("--image %s: not a readable %s image", g->image,
		    g->image_format);
		return -1;
	}
	if (rc != 0)
		return limited_verdict(rc, "--image", "qemu-img info", pv);
	if (strstr(out, "\"backing-filename\"") != NULL ||
	    strstr(out, "\"data-file\"") != NULL) {
		log_warnx("--image %s: the image refers to another file "
		    "(backing or data file); give a standalone image",
		    g->image);
		return -1;
	}
	return 0;
}

static int
run_tool(const struct pv *pv, const struct qemu_user *u, char *const argv[],
    unsigned long long fsize, const char *what)
{
	struct run_limits l = { pv->cfg->gw.import_timeout, IMPORT_AS_BYTES,
	    fsize };
	struct tool_job j = { argv };
	int rc = run_limited(u, &l, exec_tool, &j, NULL, 0);

	if (rc == -1)
		log_warnx("--image: %s failed", what);
	return limited_verdict(rc, "--image", what, pv);
}

/* "8G", "512M", "1048576" -> bytes (the caller checked the syntax). */
static unsigned long long
disk_bytes(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'T': v <<= 10; /* FALLTHROUGH */
	case 'G': v <<= 10; /* FALLTHROUGH */
	case 'M': v <<= 10; /* FALLTHROUGH */
	case 'K': v <<= 10; break;
	}
	return v;
}

static int
check_size(const struct guest *g, unsigned long long vsize,
    unsigned long long max)
{
	if (max != 0 && vsize > max) {
		log_warnx("--image %s: its virtual size (%llu MiB) is more than "
		    "the owner's disk quota (%llu MiB)", g->image, vsize >> 20,
		    max >> 20);
		return -1;
	}
	if (g->disk != NULL && vsize > disk_bytes(g->disk)) {
		log_warnx("--image %s: its virtual size (%llu MiB) is more than "
		    "--disk %s", g->image, vsize >> 20, g->disk);
		return -1;
	}
	return 0;
}

/* max_bytes: the owner's disk quota, 0 for none.  Leaves the guest's
 * disk.qcow2 (the converted image, grown to --disk); removes its scratch
 * copy either way. */
int
import_image(const struct pv *pv, struct guest *g, const struct gpaths *p,
    const struct qemu_user *u, int fd, unsigned long long max_bytes)
{
	char *const convert[] = { (char *)pv->qemu_img, "convert", "-q", "-f",
	    g->image_format, "-O", "qcow2", p->import, p->disk, NULL };
	char *const resize[] = { (char *)pv->qemu_img, "resize", "-q", "-f",
	    "qcow2", p->disk, g->disk, NULL };
	unsigned long long vsize, cap = max_bytes ? max_bytes +
	    IMPORT_SLACK_BYTES : ~0ULL;
	int rc = -1;

	if (copy_in(pv, "--image", fd, p->import, u, cap) == -1 ||
	    check_header(g, p->import, &vsize) == -1 ||
	    check_size(g, vsize, max_bytes) == -1 ||
	    check_info(pv, g, p->import, u) == -1 || give_new(p->disk, u) == -1)
		goto out;
	if (run_tool(pv, u, convert, cap, "converting the image") == -1)
		goto out;
	if (g->disk != NULL && disk_bytes(g->disk) > vsize &&
	    run_tool(pv, u, resize, cap, "growing the disk to --disk") == -1)
		goto out;
	if (g->disk == NULL)	/* quotas count what guest.conf says */
		xasprintf(&g->disk, "%lluM", (vsize + (1ULL << 20) - 1) >> 20);
	rc = 0;
out:
	unlink(p->import);
	return rc;
}
