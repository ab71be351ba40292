/*
 * exitcodes.h -- one set of exit codes for every moat program:
 *
 *   0  done: success, a valid config, "contained"
 *   1  a negative result: an invalid config (each error as FILE:LINE),
 *      drift found by verify, a refused request, a breach
 *   2  usage error: an unknown option, a missing argument
 *   3  system error: the kernel, a socket, a file or another process
 *      failed us
 *
 * Each man page's EXIT STATUS says what 1 means for that program.
 */
#ifndef MOAT_EXITCODES_H
#define MOAT_EXITCODES_H

enum {
	EXIT_OK = 0,
	EXIT_FALSE = 1,
	EXIT_CONFIG = 1,	/* the commonest negative result */
	EXIT_USAGE = 2,
	EXIT_SYSTEM = 3,
};

#endif
