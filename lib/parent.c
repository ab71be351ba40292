/*
 * parent.c -- see parent.h.
 */
#include <sys/prctl.h>

#include <signal.h>
#include <unistd.h>

#include "log.h"
#include "parent.h"

void
die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		fatal("prctl(PR_SET_PDEATHSIG)");
	if (getppid() != parent) {
		log_warnx("parent %d is gone: exiting", (int)parent);
		_exit(1);
	}
}
