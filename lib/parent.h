/*
 * parent.h -- a child dies with the process that started it.
 *
 * The kernel sends the parent-death signal when the parent exits, but it
 * clears the setting on every change of credentials: a child that drops
 * privileges must ask again afterwards.  A parent that died before the
 * request is caught by comparing getppid() with the pid it was forked
 * from.
 */
#ifndef MOAT_PARENT_H
#define MOAT_PARENT_H

#include <sys/types.h>

/* Call after the last credential change.  Exits at once if parent is
 * already gone; otherwise the kernel kills us when it goes. */
void	die_with_parent(pid_t parent);

#endif
