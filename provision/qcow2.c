/*
 * qcow2.c -- the verdict on a member's qcow2 header, a pure function over
 * (buffer, length): the image must name no backing file (a path, or a
 * json:/nbd: address the host would open or connect to) and keep no data
 * in an external file.  Read before any tool looks at the image.
 */
#include <stdio.h>
#include <string.h>

#include "qcow2.h"

#define QCOW2_INCOMPAT_DATA_FILE	(1ULL << 2)

static unsigned long long
be64(const unsigned char *p)
{
	unsigned long long v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static unsigned
be32(const unsigned char *p)
{
	return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 |
	    (unsigned)p[2] << 8 | p[3];
}

int
qcow2_header_check(const unsigned char *h, size_t len,
    unsigned long long *vsize, char *why, size_t wlen)
{
	unsigned version;

	if (len < 72 || memcmp(h, "QFI\xfb", 4) != 0) {
		snprintf(why, wlen, "not a qcow2 image");
		return -1;
	}
	version = be32(h + 4);
	if (version != 2 && version != 3) {
		snprintf(why, wlen, "qcow2 version %u is not supported", version);
		return -1;
	}
	if (be64(h + 8) != 0 || be32(h + 16) != 0) {
		snprintf(why, wlen, "the image names a backing file (another "
		    "image, path or json:/nbd: address it reads through); "
		    "give a standalone image (qemu-img convert -O qcow2 IN OUT)");
		return -1;
	}
	if (version == 3 && (len < 104 ||
	    (be64(h + 72) & QCOW2_INCOMPAT_DATA_FILE) != 0)) {
		snprintf(why, wlen, len < 104 ? "truncated qcow2 header" :
		    "the image keeps its data in an external data file; give a "
		    "standalone image (qemu-img convert -O qcow2 IN OUT)");
		return -1;
	}
	*vsize = be64(h + 24);
	return 0;
}

