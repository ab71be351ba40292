/*
 * qemu.c -- the one hardened QEMU command line.  A pure function of the
 * guest record and its sandbox, so `provision qemu-args` prints exactly
 * what `start` runs and the unit tests can assert every flag.
 *
 * What is deliberately absent: user-mode networking, 9p/virtfs, a display
 * (VNC/SPICE), USB, audio, floppy, a balloon, any monitor on a TCP port.
 * -nodefaults keeps QEMU from adding devices of its own.  QEMU does not
 * -daemonize: that forks and calls setsid(), which the sandbox's spawn and
 * elevateprivileges filters forbid; provision detaches it instead.
 */
#include <string.h>

#include "provision.h"

/* Nested virtualisation off.  TCG: qemu64 with vmx/svm removed -- on QEMU
 * 7.2 "max,svm=off" under TCG breaks static glibc binaries in the guest
 * (readlink of /proc/self/exe comes back wrong), qemu64 does not. */
const char *
qemu_cpu_model(enum pv_accel a)
{
	return a == ACCEL_KVM ? "host,-vmx,-svm" : "qemu64,-vmx,-svm";
}

static void
add_machine(struct strv *a, const struct qemu_in *in)
{
	strv_add(a, "-machine");
	strv_add(a, "q35,vmport=off,usb=off,dump-guest-core=off,"
	    "mem-merge=off");
	strv_add(a, "-accel");
	strv_add(a, in->accel == ACCEL_KVM ? "kvm" : "tcg");
	strv_add(a, "-cpu");
	strv_add(a, qemu_cpu_model(in->accel));
	strv_add(a, "-smp");
	strv_addf(a, "%d,sockets=1,cores=%d,threads=1,maxcpus=%d",
	    in->g->cpus, in->g->cpus, in->g->cpus);
	strv_add(a, "-m");
	strv_addf(a, "%dM,slots=0,maxmem=%dM", in->g->memory_mb,
	    in->g->memory_mb);
}

static void
add_sandbox(struct strv *a, const struct qemu_in *in)
{
	strv_add(a, "-sandbox");
	strv_add(a, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
	    "resourcecontrol=deny");
	strv_add(a, "-display");
	strv_add(a, "none");
	strv_add(a, "-vga");
	strv_add(a, "none");
	strv_add(a, "-msg");
	strv_add(a, "timestamp=on");
	strv_add(a, "-pidfile");
	strv_add(a, in->p->pidfile);
}

static void
add_chardevs(struct strv *a, const struct qemu_in *in)
{
	strv_add(a, "-chardev");
	strv_addf(a, "socket,id=qmp0,path=%s,server=on,wait=off", in->p->qmp);
	strv_add(a, "-mon");
	strv_add(a, "chardev=qmp0,mode=control");
	/* The serial log goes to a pipe (fd set 1), never to a file QEMU
	 * opens: the logger on the other end keeps it within a size. */
	strv_add(a, "-add-fd");
	strv_addf(a, "fd=%d,set=1", in->logfd);
	strv_add(a, "-chardev");
	strv_addf(a, "socket,id=ser0,path=%s,server=on,wait=off,"
	    "logfile=/dev/fdset/1,logappend=on", in->p->console);
	strv_add(a, "-serial");
	strv_add(a, "chardev:ser0");
}

static void
add_devices(struct strv *a, const struct qemu_in *in)
{
	strv_add(a, "-object");
	strv_add(a, "rng-random,id=rng0,filename=/dev/urandom");
	strv_add(a, "-device");
	strv_add(a, "virtio-rng-pci,rng=rng0,max-bytes=1048576,period=1000");
	strv_add(a, "-drive");
	strv_addf(a, "file=%s,if=none,id=disk0,format=qcow2,discard=unmap",
	    in->p->disk);
	strv_add(a, "-device");
	strv_add(a, "virtio-blk-pci,drive=disk0,bootindex=1");
	if (in->g->mode == MODE_IMAGE) {
		strv_add(a, "-drive");
		strv_addf(a, "file=%s,if=none,id=seed0,format=raw,"
		    "readonly=on", in->p->seed);
		strv_add(a, "-device");
		strv_add(a, "virtio-blk-pci,drive=seed0");
	}
	strv_add(a, "-netdev");
	strv_addf(a, "tap,id=net0,fd=%d", in->tapfd);
	strv_add(a, "-device");
	strv_addf(a, "virtio-net-pci,netdev=net0,mac=%s,romfile=", in->mac);
}

/* Kernel mode: static addressing in the kernel's own ip= syntax, which
 * initramfs-tools and the test initramfs both honour.  The kernel's ip=
 * knows no IPv6: a guest with IPv6 gets moat.ip6=ADDRESS/64,GATEWAY,
 * for its init to set up (the kernel itself ignores it). */
static void
add_boot(struct strv *a, const struct qemu_in *in)
{
	const struct guest *g = in->g;

	if (g->mode == MODE_IMAGE) {
		strv_add(a, "-boot");
		strv_add(a, "strict=on");
		return;
	}
	strv_add(a, "-kernel");
	strv_add(a, g->kernel);
	if (g->initrd != NULL) {
		strv_add(a, "-initrd");
		strv_add(a, g->initrd);
	}
	strv_add(a, "-append");
	strv_addf(a, "console=ttyS0 panic=-1 ip=%s::%s:%s:%s:eth0:off:%s%s%s%s"
	    "%s%s%s", in->address, in->gateway, in->netmask, g->name,
	    in->gateway, in->address6[0] ? " moat.ip6=" : "", in->address6,
	    in->address6[0] ? "/64," : "", in->gateway6,
	    g->append != NULL ? " " : "", g->append != NULL ? g->append : "");
}

void
qemu_argv(const struct qemu_in *in, struct strv *a)
{
	strv_add(a, in->qemu);
	strv_add(a, "-name");
	strv_addf(a, "guest=%s,process=moat-%s,debug-threads=off",
	    in->g->name, in->g->name);
	strv_add(a, "-nodefaults");
	strv_add(a, "-no-user-config");
	add_machine(a, in);
	add_sandbox(a, in);
	add_chardevs(a, in);
	add_devices(a, in);
	add_boot(a, in);
}
