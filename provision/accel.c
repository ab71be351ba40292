/*
 * accel.c -- does KVM actually work?  An openable /dev/kvm is not enough:
 * on some hosts QEMU aborts on its first MSR write or hangs after the BIOS.
 * So after the kernel interface answers, a throw-away QEMU (as the QEMU
 * user, with the guest's CPU model) must run SeaBIOS to its boot attempt
 * within a few seconds; anything else means TCG.
 */
#include <sys/ioctl.h>
#include <sys/wait.h>

#include <linux/kvm.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "provision.h"

#define PROBE_MS	10000

/* Run as the QEMU user, with its groups: that is who opens /dev/kvm. */
static int
kvm_interface(const void *unused, char *why, size_t len)
{
	int fd, vm, v;

	if ((fd = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1) {
		snprintf(why, len, "/dev/kvm: %s", strerror(errno));
		return -1;
	}
	if ((v = ioctl(fd, KVM_GET_API_VERSION, 0)) != KVM_API_VERSION) {
		snprintf(why, len, "KVM API version %d", v);
		close(fd);
		return -1;
	}
	if ((vm = ioctl(fd, KVM_CREATE_VM, 0)) == -1) {
		snprintf(why, len, "KVM_CREATE_VM: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(vm);
	close(fd);
	return 0;
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* True once SeaBIOS reports a boot attempt on its debug port. */
static bool
probe_output(int fd)
{
	char buf[8192];
	size_t n = 0;
	ssize_t r;
	long end = now_ms() + PROBE_MS;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (now_ms() < end && n + 1 < sizeof(buf)) {
		if (poll(&pfd, 1, (int)(end - now_ms())) <= 0)
			return false;
		if ((r = read(fd, buf + n, sizeof(buf) - 1 - n)) <= 0)
			return false;	/* QEMU exited (or aborted) */
		n += (size_t)r;
		buf[n] = '\0';
		if (memmem(buf, n, "Booting from", 12) != NULL ||
		    memmem(buf, n, "No bootable device", 18) != NULL)
			return true;
	}
	return false;
}

static bool
kvm_qemu_probe(const struct pv *pv, const struct qemu_user *u)
{
	char *const argv[] = { (char *)pv->qemu, "-nodefaults",
	    "-no-user-config", "-machine", "q35,vmport=off,usb=off",
	    "-accel", "kvm", "-cpu", (char *)qemu_cpu_model(ACCEL_KVM),
	    "-m", "64M", "-display", "none", "-sandbox",
	    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	    "resourcecontrol=deny", "-chardev", "stdio,id=dbg,signal=off",
	    "-device", "isa-debugcon,iobase=0x402,chardev=dbg", NULL };
	int pfd[2];
	pid_t pid;
	bool ok;

	if (pipe2(pfd, O_CLOEXEC) == -1)
		return false;
	pid = spawn_qemu(argv, u, -1, -1, pfd[1], false);
	close(pfd[1]);
	if (pid == -1) {
		close(pfd[0]);
		return false;
	}
	ok = probe_output(pfd[0]);
	close(pfd[0]);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
	return ok;
}

enum pv_accel
accel_resolve(const struct pv *pv, enum pv_accel want,
    const struct qemu_user *u, char *why, size_t len)
{
	char kvm[200];

	if (want != ACCEL_AUTO) {
		snprintf(why, len, "requested with --accel %s",
		    accel_name(want));
		return want;
	}
	if (as_qemu_user(u, kvm_interface, NULL, kvm, sizeof(kvm)) == -1) {
		snprintf(why, len, "KVM not usable by %s: %s", u->name, kvm);
		log_warnx("%s: falling back to TCG (software emulation, much "
		    "slower)", why);
		return ACCEL_TCG;
	}
	if (!kvm_qemu_probe(pv, u)) {
		snprintf(why, len, "KVM is present but QEMU cannot run a "
		    "guest with it on this machine");
		log_warnx("%s: falling back to TCG (software emulation, much "
		    "slower)", why);
		return ACCEL_TCG;
	}
	snprintf(why, len, "KVM works");
	return ACCEL_KVM;
}
