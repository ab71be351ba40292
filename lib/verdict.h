/*
 * verdict.h -- a guest's containment verdict as it reports it on its
 * serial console, and the fixed record the console's reader keeps of it.
 *
 * A guest prints "MOAT-VERDICT: WORD" on a line of its own after every
 * containment-check run (first boot and each re-check).  Everything on
 * that console is the guest's to write, so lines are classified here by
 * a pure function over bytes: a verdict, nothing to do with verdicts, or
 * a rejected attempt (forged, overlong, escaped).  The unprivileged reader
 * turns them into a struct verdict_rec of fixed size; whoever reads that
 * record (root) checks its size, magic and ranges and parses no text.
 */
#ifndef MOAT_VERDICT_H
#define MOAT_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum verdict {
	VERDICT_NONE, VERDICT_CONTAINED, VERDICT_NOT_CONTAINED, VERDICT_ERROR,
	VERDICT_MAX
};
/* "contained", "NOT CONTAINED", "error"; NULL for none. */
const char	*verdict_word(enum verdict);
/* One word of the table, exactly (len bytes), or NONE. */
enum verdict	 verdict_of(const char *, size_t len);

#define VERDICT_TAG	"MOAT-VERDICT: "
/* A verdict line is short: anything longer is not one, whatever it says. */
#define VERDICT_LINE_MAX	40

enum vline {
	VL_NONE,	/* no tag: console output like any other */
	VL_VERDICT,	/* "MOAT-VERDICT: WORD" alone on its line */
	VL_FORGED,	/* the tag elsewhere in a line, or an unknown word */
	VL_OVERLONG,	/* the tag in a line longer than VERDICT_LINE_MAX */
	VL_ESCAPED,	/* the tag with control or non-ASCII bytes */
	VL_MAX
};
#define VL_REJECTED(k)	((k) >= VL_FORGED && (k) < VL_MAX)
/* "forged", "overlong", "escaped" for the rejected kinds, else NULL. */
const char	*vline_reason(enum vline);

/* One line without its "\n", of which only the first len bytes were kept
 * (over: it was longer; tag: the tag appeared anywhere in it). */
enum vline	 vline_classify(const char *line, size_t len, bool over,
		    bool tag, enum verdict *);

/* Lines fed in pieces; fn is called for every line that ends ("\n"). */
struct vline_scan {
	char		 line[VERDICT_LINE_MAX];
	size_t		 len;
	size_t		 tagm;		/* bytes of the tag matched so far */
	bool		 over, tag;
};
typedef void	(*vline_fn)(void *, enum vline, enum verdict);
/* Stops early (returns the bytes used) when fn asks by setting *stop. */
size_t		 vline_feed(struct vline_scan *, const char *, size_t,
		    vline_fn, void *arg, const bool *stop);

/*
 * The reader's record: the latest verdict a guest reported, when (the
 * host's clock, seconds since the epoch), how many it reported and how
 * many lines were rejected, by kind.  Native byte order: written and read
 * on one host.
 */
#define VERDICT_REC_MAGIC	0x3152564dU	/* "MVR1" */
struct verdict_rec {
	uint32_t	 magic;
	uint32_t	 verdict;	/* enum verdict */
	int64_t		 at;		/* of the latest; 0: none yet */
	uint32_t	 reports;	/* verdict lines taken */
	uint32_t	 rejected[3];	/* forged, overlong, escaped */
};
/* 0 and *out when buf is exactly one valid record, else -1. */
int		 verdict_rec_decode(const void *buf, size_t len,
		    struct verdict_rec *out);
/* The record at path (no symlink, a regular file): 0, or -1 if missing
 * or invalid. */
int		 verdict_rec_read(const char *path, struct verdict_rec *out);
/* Counts a line's kind into the record; the time is the caller's. */
void		 verdict_rec_count(struct verdict_rec *, enum vline,
		    enum verdict, int64_t now);

#endif
