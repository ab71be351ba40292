/*
 * fuzz_verdict.c -- libFuzzer harness for a guest's verdict lines and the
 * record kept of them (lib/verdict.c).  The guest writes every byte of its
 * serial console: the line scanner must classify, never crash or read past
 * a line's kept bytes, and count exactly one kind per line; the record's
 * decoder must refuse any buffer that is not one valid record.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct tally {
	struct verdict_rec	rec;
	size_t			lines;
};

static void
count(void *arg, enum vline k, enum verdict v)
{
	struct tally *t = arg;

	if (k < VL_NONE || k >= VL_MAX)
		abort();
	if (k == VL_VERDICT && verdict_word(v) == NULL)
		abort();
	if (k != VL_VERDICT && v != VERDICT_NONE)
		abort();
	t->lines++;
	verdict_rec_count(&t->rec, k, v, 1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct vline_scan s;
	struct verdict_rec r;
	struct tally t;
	char *p = malloc(len ? len : 1);
	size_t i, cut = len > 0 ? (size_t)data[0] % 17 + 1 : 1, nl = 0;

	if (p == NULL)
		return 0;
	memcpy(p, data, len);	/* exact size: ASan sees any overread */
	memset(&s, 0, sizeof(s));
	memset(&t, 0, sizeof(t));
	for (i = 0; i < len; i += cut)
		vline_feed(&s, p + i, len - i < cut ? len - i : cut, count, &t,
		    NULL);
	for (i = 0; i < len; i++)
		nl += p[i] == '\n';
	if (t.lines != nl)
		abort();
	if (t.rec.magic != 0 && verdict_rec_decode(&t.rec, sizeof(t.rec),
	    &r) == -1 && t.rec.reports > 0)
		abort();	/* what the reader wrote, the decoder takes */
	(void)verdict_rec_decode(p, len, &r);
	free(p);
	return 0;
}
