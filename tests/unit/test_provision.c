/*
 * test_provision.c -- provision's pure parts: the hardened QEMU command
 * line (every hardening flag present, every dangerous one absent, and a
 * golden copy), address/MAC/tap allocation, the drop-in (it must load),
 * and the cloud-init seed (no passwordless sudo, no default user, quoting).
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"
#include "provision.h"
#include "secretfile.h"
#include "qcow2.h"

static const char base_conf[] =
    "gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";"
    " bridge = \"moat0\"; dns: { upstream = [ \"203.0.113.53\" ]; }; };\n";

static struct moat_config *
load_text(const char *text, const char *dir)
{
	struct moat_errors e = { 0 };
	struct moat_config *c = config_load_buffer("test.conf", text, dir, &e);

	if (c == NULL)
		config_errors_print(stderr, &e);
	config_errors_free(&e);
	return c;
}

static char *
qemu_line(enum pv_mode mode, enum pv_accel accel)
{
	struct guest g = { .name = "web", .mode = mode, .cpus = 2,
	    .memory_mb = 512, .user = "moat-qemu" };
	struct gpaths p = { .disk = "/s/web/disk.qcow2",
	    .seed = "/s/web/seed.iso", .log = "/s/web/console.log",
	    .qmp = "/r/web/qmp.sock", .console = "/r/web/console.sock",
	    .pidfile = "/r/web/qemu.pid" };
	struct qemu_in in = { .g = &g, .p = &p, .accel = accel,
	    .qemu = "/usr/bin/qemu-system-x86_64", .tapfd = 3, .logfd = 4,
	    .mac = "02:6d:74:00:00:0a", .address = "10.77.0.10",
	    .gateway = "10.77.0.1", .netmask = "255.255.255.0" };
	struct strv a = { 0 };
	char *s;

	g.kernel = "/k/vmlinuz";
	g.initrd = "/k/initrd";
	qemu_argv(&in, &a);
	s = strv_join(&a);
	strv_free(&a);
	return s;
}

static void
t_qemu_hardening(void **state)
{
	static const char *const must[] = {
		" -nodefaults ", " -no-user-config ",
		" -machine q35,vmport=off,usb=off,",
		" -sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
		    "resourcecontrol=deny ",
		" -display none ", " -vga none ",
		",-vmx,-svm ",
		" -device virtio-blk-pci,drive=disk0",
		" -netdev tap,id=net0,fd=3 ",
		" -device virtio-net-pci,netdev=net0,mac=02:6d:74:00:00:0a,"
		    "romfile= ",
		" -device virtio-rng-pci,",
		" -add-fd fd=4,set=1 -chardev socket,id=ser0,"
		    "path=/r/web/console.sock,server=on,wait=off,"
		    "logfile=/dev/fdset/1,",
		" -serial chardev:ser0 ",
		"socket,id=qmp0,path=/r/web/qmp.sock,server=on,wait=off",
		" -mon chardev=qmp0,mode=control ",
		" -pidfile /r/web/qemu.pid ",
		" -m 512M,slots=0,maxmem=512M ",
		" -smp 2,sockets=1,cores=2,threads=1,maxcpus=2 ",
	};
	static const char *const never[] = {
		"user,", "-netdev user", "-nic", "hostfwd", "9p", "virtfs",
		"-fsdev", "vnc", "spice", "-vnc", "tcp:", "telnet", "usb-",
		"-usb ", "audio", "-soundhw", "floppy", "-fda", "balloon",
		"-daemonize", "-runas", "ifname=", "script=", "-monitor",
		"websocket", "vhost-user", "-chroot", "kvm-pit",
		"elevateprivileges=allow", "spawn=allow", "smb=",
		"logfile=/s/",	/* a file QEMU would fill (serial.c) */
	};
	enum pv_mode modes[] = { MODE_KERNEL, MODE_IMAGE };
	enum pv_accel accels[] = { ACCEL_TCG, ACCEL_KVM };
	size_t i, m, a;
	char *s;

	for (m = 0; m < 2; m++)
		for (a = 0; a < 2; a++) {
			s = qemu_line(modes[m], accels[a]);
			for (i = 0; i < sizeof(must) / sizeof(must[0]); i++)
				if (strstr(s, must[i]) == NULL)
					fail_msg("missing [%s] in: %s", must[i], s);
			for (i = 0; i < sizeof(never) / sizeof(never[0]); i++)
				if (strstr(s, never[i]) != NULL)
					fail_msg("forbidden [%s] in: %s", never[i], s);
			free(s);
		}
	s = qemu_line(MODE_IMAGE, ACCEL_KVM);
	assert_non_null(strstr(s, " -accel kvm -cpu host,-vmx,-svm "));
	assert_non_null(strstr(s, "file=/s/web/seed.iso,if=none,id=seed0,"
	    "format=raw,readonly=on"));
	assert_null(strstr(s, "-kernel"));
	free(s);
}

/* The whole kernel-mode TCG line, so any change is seen in review. */
static void
t_qemu_golden(void **state)
{
	static const char golden[] = "/usr/bin/qemu-system-x86_64 "
	    "-name guest=web,process=moat-web,debug-threads=off -nodefaults "
	    "-no-user-config -machine q35,vmport=off,usb=off,"
	    "dump-guest-core=off,mem-merge=off -accel tcg -cpu qemu64,-vmx,-svm "
	    "-smp 2,sockets=1,cores=2,threads=1,maxcpus=2 "
	    "-m 512M,slots=0,maxmem=512M -sandbox on,obsolete=deny,"
	    "elevateprivileges=deny,spawn=deny,resourcecontrol=deny "
	    "-display none -vga none -msg timestamp=on "
	    "-pidfile /r/web/qemu.pid "
	    "-chardev socket,id=qmp0,path=/r/web/qmp.sock,server=on,wait=off "
	    "-mon chardev=qmp0,mode=control -add-fd fd=4,set=1 "
	    "-chardev socket,id=ser0,path=/r/web/console.sock,server=on,"
	    "wait=off,logfile=/dev/fdset/1,logappend=on "
	    "-serial chardev:ser0 "
	    "-object rng-random,id=rng0,filename=/dev/urandom "
	    "-device virtio-rng-pci,rng=rng0,max-bytes=1048576,period=1000 "
	    "-drive file=/s/web/disk.qcow2,if=none,id=disk0,format=qcow2,"
	    "discard=unmap -device virtio-blk-pci,drive=disk0,bootindex=1 "
	    "-netdev tap,id=net0,fd=3 "
	    "-device virtio-net-pci,netdev=net0,mac=02:6d:74:00:00:0a,romfile= "
	    "-kernel /k/vmlinuz -initrd /k/initrd -append 'console=ttyS0 "
	    "panic=-1 ip=10.77.0.10::10.77.0.1:255.255.255.0:web:eth0:off:"
	    "10.77.0.1'";
	char *s = qemu_line(MODE_KERNEL, ACCEL_TCG);

	assert_string_equal(s, golden);
	free(s);
}

static void
t_alloc(void **state)
{
	char text[2048], tap[16], ms[18];
	struct moat_config *c;
	struct moat_addr a;
	uint8_t mac[6];

	snprintf(text, sizeof(text), "%ssandboxes = ( { name = \"a\"; "
	    "mac = \"02:6d:74:00:00:02\"; address = \"10.77.0.2\"; "
	    "tap = \"mt-a\"; egress = \"open\"; }, { name = \"b\"; "
	    "mac = \"52:54:00:00:00:0b\"; address = \"10.77.0.4\"; "
	    "tap = \"mt-verylongname\"; egress = \"none\"; } );", base_conf);
	assert_non_null(c = load_text(text, "/nonexistent"));
	assert_int_equal(alloc_address(c, &a), 0);
	assert_int_equal(a.a[3], 3);		/* .2 taken, .3 free */
	alloc_mac(c, &a, mac);
	mac_fmt(mac, ms);
	assert_string_equal(ms, "02:6d:74:4d:00:03");
	assert_true(mac[0] & 2);		/* locally administered */
	assert_false(mac[0] & 1);		/* unicast */
	/* A hand-written MAC that collides is skipped. */
	a.a[3] = 2;
	alloc_mac(c, &a, mac);
	mac_fmt(mac, ms);
	assert_string_not_equal(ms, "02:6d:74:00:00:02");
	assert_int_equal(alloc_tap(c, "a", NULL, tap), 0);
	assert_string_equal(tap, "mt-a-1");	/* mt-a is taken */
	assert_int_equal(alloc_tap(c, "x", NULL, tap), 0);
	assert_string_equal(tap, "mt-x");
	assert_int_equal(alloc_tap(c, "abcdefghijklmnopqrstuvwxyz", NULL,
	    tap), 0);
	assert_true(strlen(tap) <= 15);
	config_free(c);
}

static void
t_alloc_exhausted(void **state)
{
	char text[4096];
	struct moat_config *c;
	struct moat_addr a;
	int i, n;

	/* A /29: .1 is the gateway, .2 to .6 for guests, .7 broadcast. */
	n = snprintf(text, sizeof(text), "gateway: { uplink = \"up0\"; "
	    "network = \"10.77.0.0/29\"; dns: { upstream = [ \"9.9.9.9\" ]; "
	    "}; };\nsandboxes = (");
	for (i = 2; i <= 6; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n,
		    "%s{ name = \"g%d\"; mac = \"02:00:00:00:00:0%d\"; "
		    "address = \"10.77.0.%d\"; tap = \"t%d\"; egress = "
		    "\"open\"; }", i > 2 ? "," : "", i, i, i, i);
	snprintf(text + n, sizeof(text) - (size_t)n, ");\n");
	assert_non_null(c = load_text(text, "/nonexistent"));
	assert_int_equal(alloc_address(c, &a), -1);
	config_free(c);
}

/* A KVM host of a separate gateway box picks addresses in its pool only
 * (box.pool), and the pool's end is its end. */
static void
t_alloc_box_pool(void **state)
{
	char text[2048];
	struct moat_config *c;
	struct moat_addr a;

	snprintf(text, sizeof(text), "%sbox: { address = \"10.0.9.1:7443\"; "
	    "ca = \"/etc/moat/box.crt\"; cert = \"/etc/moat/host.crt\"; "
	    "key = \"/etc/moat/host.key\"; pool = \"10.77.0.16/30\"; };\n"
	    "sandboxes = ( { name = \"a\"; mac = \"02:00:00:00:00:10\"; "
	    "address = \"10.77.0.16\"; tap = \"ta\"; egress = \"open\"; } );\n",
	    base_conf);
	assert_non_null(c = load_text(text, "/nonexistent"));
	assert_true(c->box.has_pool);
	assert_int_equal(alloc_address(c, &a), 0);
	assert_int_equal(a.a[3], 17);		/* .16 taken, not .2 */
	config_free(c);
	snprintf(text, sizeof(text), "%sbox: { address = \"10.0.9.1:7443\"; "
	    "ca = \"/b.crt\"; cert = \"/h.crt\"; key = \"/h.key\"; "
	    "pool = \"10.77.0.16/31\"; };\nsandboxes = ( "
	    "{ name = \"a\"; mac = \"02:00:00:00:00:10\"; address = "
	    "\"10.77.0.16\"; tap = \"ta\"; egress = \"open\"; }, "
	    "{ name = \"b\"; mac = \"02:00:00:00:00:11\"; address = "
	    "\"10.77.0.17\"; tap = \"tb\"; egress = \"open\"; } );\n",
	    base_conf);
	/* /31 is refused by the loader (plen > 30). */
	assert_null(c = load_text(text, "/nonexistent"));
}

static void
t_names(void **state)
{
	assert_true(name_valid("web-1_x"));
	assert_false(name_valid(""));
	assert_false(name_valid("Web"));
	assert_false(name_valid("../etc"));
	assert_false(name_valid("a b"));
	assert_false(name_valid("abcdefghijklmnopqrstuvwxyz0123456"));
}

/* A rendered drop-in, put in a sandboxes.d, loads as that sandbox. */
static void
t_dropin_loads(void **state)
{
	char dir[] = "/tmp/moat-test-pv.XXXXXX", *path;
	struct dropin d = { .name = "web", .mac = "02:6d:74:00:00:05",
	    .address = "10.77.0.5", .tap = "mt-web", .egress = "allowlist",
	    .owner = "alice" };
	const struct moat_sandbox *sb;
	struct moat_config *c;
	FILE *f;

	strv_add(&d.allow, "pypi.org");
	strv_add(&d.allow, "*.github.test");
	assert_non_null(mkdtemp(dir));
	assert_true(asprintf(&path, "%s/web.conf", dir) > 0);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(dropin_render(f, &d), 0);
	fclose(f);
	assert_non_null(c = load_text(base_conf, dir));
	assert_non_null(sb = config_sandbox_by_name(c, "web"));
	assert_int_equal(sb->egress, EGRESS_ALLOWLIST);
	assert_int_equal(sb->allow.n, 2);
	assert_string_equal(sb->tap, "mt-web");
	assert_int_equal(sb->address.a[3], 5);
	config_free(c);
	unlink(path);
	rmdir(dir);
	free(path);
	strv_free(&d.allow);
}

static char *
render(int (*fn)(FILE *, const struct seed_in *), const struct seed_in *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_int_equal(fn(f, in), 0);
	fclose(f);
	return buf;
}

static void
t_seed(void **state)
{
	struct seed_in in = { .name = "web", .login = "agent",
	    .ssh_key = "ssh-ed25519 AAAAC3 me@\"x\"\n# comment\nssh-rsa BBB\n",
	    .ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n"
	    "-----END CERTIFICATE-----\n", .mac = "02:6d:74:00:00:05",
	    .address = "10.77.0.5", .plen = 24, .gateway = "10.77.0.1" };
	char *u, *m, *n;

	strv_add(&in.env, "OPENAI_API_KEY=moat-openai-PLACEHOLDER");
	u = render(seed_user_data, &in);
	assert_true(strncmp(u, "#cloud-config\n", 14) == 0);
	assert_null(strstr(u, "default"));
	assert_null(strstr(u, "NOPASSWD"));
	assert_non_null(strstr(u, "lock_passwd: true"));
	assert_null(strstr(u, "sudo:"));	/* none, not the deprecated false */
	assert_non_null(strstr(u, "disable_root: true"));
	assert_non_null(strstr(u, "ssh_pwauth: false"));
	assert_non_null(strstr(u, "usermod, --lock, root"));
	assert_non_null(strstr(u, "\"ssh-ed25519 AAAAC3 me@\\\"x\\\"\""));
	assert_non_null(strstr(u, "\"ssh-rsa BBB\""));
	assert_null(strstr(u, "# comment"));
	assert_non_null(strstr(u, "ca_certs:"));
	assert_non_null(strstr(u, "OPENAI_API_KEY='moat-openai-PLACEHOLDER'"));
	assert_non_null(strstr(u, "SSL_CERT_FILE="));
	assert_non_null(strstr(u, "NODE_EXTRA_CA_CERTS="));
	assert_non_null(strstr(u, "REQUESTS_CA_BUNDLE="));
	assert_non_null(strstr(u, "PasswordAuthentication no"));
	assert_null(strstr(u, "moat-first-check"));	/* no binary, no check */
	free(u);
	in.cc_path = "/usr/bin/containment-check";
	in.cc_expect = "allowlist";
	u = render(seed_user_data, &in);
	assert_non_null(strstr(u, "path: /usr/local/sbin/moat-first-check"));
	assert_non_null(strstr(u, "  - [ /usr/local/sbin/moat-first-check, "
	    "\"allowlist\", \"10.77.0.1\" ]\n"));
	assert_non_null(strstr(u, "MOAT-VERDICT: %s"));
	assert_non_null(strstr(u, "mount -o ro LABEL=cidata"));
	assert_null(strstr(u, "moat-reverify"));	/* reverify 0: none */
	free(u);
	in.reverify = 600;
	u = render(seed_user_data, &in);
	assert_non_null(strstr(u, "path: /etc/systemd/system/"
	    "moat-reverify.timer"));
	assert_non_null(strstr(u, "OnUnitInactiveSec=600\\u000a"));
	assert_non_null(strstr(u, "ExecStart=/usr/local/sbin/moat-reverify "
	    "allowlist 10.77.0.1\\u000a"));
	assert_non_null(strstr(u, "--in-guest --quick --expect"));
	assert_non_null(strstr(u, "  - [ systemctl, enable, --now, "
	    "moat-reverify.timer ]\n"));
	free(u);
	in.reverify = 0;
	in.cc_path = NULL;
	in.sudo = true;
	in.password_hash = "$6$salt$hash";
	u = render(seed_user_data, &in);
	assert_non_null(strstr(u, "sudo: \"ALL=(ALL:ALL) ALL\""));
	assert_non_null(strstr(u, "lock_passwd: false"));
	assert_null(strstr(u, "NOPASSWD"));
	free(u);
	m = render(seed_meta_data, &in);
	assert_string_equal(m, "instance-id: moat-web\nlocal-hostname: web\n");
	n = render(seed_network_config, &in);
	assert_non_null(strstr(n, "addresses: [ \"10.77.0.5/24\" ]"));
	/* cloud-init 22.4 refuses "to: default" and then sets up no network */
	assert_non_null(strstr(n, "gateway4: \"10.77.0.1\""));
	assert_null(strstr(n, "default"));
	assert_non_null(strstr(n, "macaddress: \"02:6d:74:00:00:05\""));
	assert_non_null(strstr(n, "dhcp4: false"));
	free(m);
	free(n);
	in.targets = "gateway 203.0.113.1\nexception 192.168.1.50:3142\n";
	u = render(seed_user_data, &in);
	assert_non_null(strstr(u, "path: /etc/moat/containment-targets"));
	assert_non_null(strstr(u, "exception 192.168.1.50:3142"));
	free(u);
	strv_free(&in.env);
}

/* IPv6 in the seed: the /64 address, the gateway as router and resolver,
 * no router advertisements taken; none of it without an address. */
static void
t_seed_ipv6(void **state)
{
	struct seed_in in = { .name = "web", .mac = "02:6d:74:00:00:05",
	    .address = "10.77.0.5", .plen = 24, .gateway = "10.77.0.1" };
	char *n;

	(void)state;
	n = render(seed_network_config, &in);
	assert_null(strstr(n, "gateway6"));
	assert_null(strstr(n, "accept-ra"));
	assert_null(strstr(n, "fd77"));
	assert_non_null(strstr(n, "addresses: [ \"10.77.0.5/24\" ]"));
	assert_non_null(strstr(n, "nameservers:\n      addresses: "
	    "[ \"10.77.0.1\" ]\n"));
	free(n);
	snprintf(in.address6, sizeof(in.address6), "fd77:0:0:1::5");
	snprintf(in.gateway6, sizeof(in.gateway6), "fd77:0:0:1::1");
	n = render(seed_network_config, &in);
	assert_string_equal(n, "version: 2\nethernets:\n  eth0:\n"
	    "    match:\n      macaddress: \"02:6d:74:00:00:05\"\n"
	    "    set-name: eth0\n    dhcp4: false\n    dhcp6: false\n"
	    "    accept-ra: false\n"
	    "    addresses: [ \"10.77.0.5/24\", \"fd77:0:0:1::5/64\" ]\n"
	    "    gateway4: \"10.77.0.1\"\n"
	    "    gateway6: \"fd77:0:0:1::1\"\n"
	    "    nameservers:\n      addresses: [ \"10.77.0.1\", "
	    "\"fd77:0:0:1::1\" ]\n");
	free(n);
}

/* The addresses provision gives: derived from the IPv4 one, none for a
 * sandbox kept to IPv4, none without gateway.ipv6; and the kernel-mode
 * command line carries them as moat.ip6= after ip=. */
static void
t_addr6(void **state)
{
	struct moat_config *c = load_text("gateway: { uplink = \"up0\"; "
	    "network = \"10.77.0.0/24\"; bridge = \"moat0\"; dns: { upstream "
	    "= [ \"203.0.113.53\" ]; }; ipv6 = { network = \"fd77:0:0:1::/64\";"
	    " uplink_mode = \"nat66\"; }; };\nsandboxes = ( { name = \"a\"; "
	    "mac = \"52:54:00:00:00:0b\"; address = \"10.77.0.11\"; tap = "
	    "\"mt-a\"; egress = \"open\"; }, { name = \"b\"; mac = "
	    "\"52:54:00:00:00:0c\"; address = \"10.77.0.12\"; tap = \"mt-b\"; "
	    "egress = \"open\"; ipv6 = false; } );\n", "/nonexistent");
	struct moat_config *c4 = load_text(base_conf, "/nonexistent");
	struct guest g = { .name = "a", .mode = MODE_KERNEL, .cpus = 1,
	    .memory_mb = 256, .kernel = "/k", .append = "quiet" };
	struct gpaths p = { .qmp = "/q", .console = "/c", .pidfile = "/p",
	    .log = "/l" };
	struct qemu_in in = { .g = &g, .p = &p, .accel = ACCEL_TCG,
	    .qemu = "/q", .mac = "02:6d:74:00:00:0b", .address = "10.77.0.11",
	    .gateway = "10.77.0.1", .netmask = "255.255.255.0" };
	struct strv a = { 0 };
	char a6[46], g6[46], *s;

	(void)state;
	assert_non_null(c);
	assert_non_null(c4);
	pv_addr6(c, &c->sandboxes[0], a6, g6);
	assert_string_equal(a6, "fd77:0:0:1::b");
	assert_string_equal(g6, "fd77:0:0:1::1");
	pv_addr6(c, &c->sandboxes[1], a6, g6);
	assert_string_equal(a6, "");
	assert_string_equal(g6, "");
	c->sandboxes[0].ipv6 = true;
	pv_addr6(c4, &c->sandboxes[0], a6, g6);	/* gateway.ipv6 off */
	assert_string_equal(a6, "");

	pv_addr6(c, &c->sandboxes[0], in.address6, in.gateway6);
	qemu_argv(&in, &a);
	s = strv_join(&a);
	assert_non_null(strstr(s, ":eth0:off:10.77.0.1 moat.ip6="
	    "fd77:0:0:1::b/64,fd77:0:0:1::1 quiet'"));
	free(s);
	strv_free(&a);
	in.address6[0] = in.gateway6[0] = '\0';
	qemu_argv(&in, &a);
	s = strv_join(&a);
	assert_null(strstr(s, "moat.ip6"));
	free(s);
	strv_free(&a);
	config_free(c);
	config_free(c4);
}

/* The scanner's targets: exceptions that do not apply to this guest must
 * be probed as closed; the host's own addresses are listed. */
static void
t_targets(void **state)
{
	struct moat_config *c = load_text("gateway: { uplink = \"up0\"; "
	    "network = \"10.77.0.0/24\"; bridge = \"moat0\"; dns: { upstream "
	    "= [ \"203.0.113.53\" ]; }; exceptions = ( { to = "
	    "\"192.168.1.50/32\"; proto = \"tcp\"; ports = [ 3142 ]; } ); };\n",
	    "/nonexistent");
	char *t;

	assert_non_null(c);
	t = targets_text(c, "new", EGRESS_NONE);
	assert_non_null(strstr(t, "exception 192.168.1.50:3142\n"));
	free(t);
	t = targets_text(c, "new", EGRESS_ALLOWLIST);
	assert_non_null(strstr(t, "exception 192.168.1.50:3142\n"));
	free(t);
	t = targets_text(c, "new", EGRESS_OPEN);	/* applies by default */
	assert_null(strstr(t, "exception"));
	assert_null(strstr(t, "gateway 127.0.0.1"));
	free(t);
	config_free(c);
	/* The site's own IPv6 prefixes are routed networks to probe; the
	 * guests' /64 is not, even when a site prefix holds it. */
	c = load_text("gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\"; "
	    "bridge = \"moat0\"; dns: { upstream = [ \"203.0.113.53\" ]; }; "
	    "ipv6 = { network = \"2001:db8:5600:ff::/64\"; uplink_mode = "
	    "\"routed\"; site_prefixes = [ \"2001:db8:5600::/56\", "
	    "\"2001:db8:5600:1::/64\", \"2001:db8:5600:ff::/64\" ]; }; };\n",
	    "/nonexistent");
	assert_non_null(c);
	t = targets_text(c, "new", EGRESS_OPEN);
	assert_non_null(strstr(t, "routed 2001:db8:5600::/56\n"));
	assert_null(strstr(t, "routed 2001:db8:5600:1::/64"));	/* inside */
	assert_null(strstr(t, "routed 2001:db8:5600:ff::/64"));
	free(t);
	config_free(c);
}

static void
t_env_names(void **state)
{
	char b[64];

	assert_string_equal(secret_env_name("openai", b, sizeof(b)),
	    "OPENAI_API_KEY");
	assert_string_equal(secret_env_name("github", b, sizeof(b)),
	    "GITHUB_TOKEN");
	assert_string_equal(secret_env_name("my-svc", b, sizeof(b)),
	    "MY_SVC_API_KEY");
}

static void
t_join(void **state)
{
	struct strv a = { 0 };
	char *s;

	strv_add(&a, "a");
	strv_add(&a, "b c");
	strv_add(&a, "it's");
	strv_add(&a, "");
	s = strv_join(&a);
	assert_string_equal(s, "a 'b c' 'it'\\''s' ''");
	free(s);
	strv_free(&a);
}

/* A qcow2 v3 header as qemu-img writes it: 64 MiB, standalone. */
static void
qcow2_fill(unsigned char *h, size_t len)
{
	memset(h, 0, len);
	memcpy(h, "QFI\xfb", 4);
	h[7] = 3;			/* version */
	h[24 + 4] = 0x04;		/* size: 0x04000000 = 64 MiB */
	h[20 + 3] = 16;			/* cluster_bits */
	h[99] = 104;			/* header_length */
}

static void
t_qcow2_header(void **state)
{
	unsigned char h[512];
	unsigned long long vsize = 0;
	char why[256];

	(void)state;
	qcow2_fill(h, sizeof(h));
	assert_int_equal(qcow2_header_check(h, sizeof(h), &vsize, why,
	    sizeof(why)), 0);
	assert_int_equal(vsize, 64ULL << 20);
	h[7] = 2;			/* v2 stands alone too */
	assert_int_equal(qcow2_header_check(h, 72, &vsize, why,
	    sizeof(why)), 0);
	qcow2_fill(h, sizeof(h));
	h[15] = 0xa0;			/* backing_file_offset */
	h[19] = 12;			/* backing_file_size */
	assert_int_equal(qcow2_header_check(h, sizeof(h), &vsize, why,
	    sizeof(why)), -1);
	assert_non_null(strstr(why, "backing file"));
	qcow2_fill(h, sizeof(h));
	h[19] = 12;			/* a size alone also names one */
	assert_int_equal(qcow2_header_check(h, sizeof(h), &vsize, why,
	    sizeof(why)), -1);
	qcow2_fill(h, sizeof(h));
	h[79] = 0x04;			/* incompatible: external data file */
	assert_int_equal(qcow2_header_check(h, sizeof(h), &vsize, why,
	    sizeof(why)), -1);
	assert_non_null(strstr(why, "external data file"));
	qcow2_fill(h, sizeof(h));
	assert_int_equal(qcow2_header_check(h, 100, &vsize, why,
	    sizeof(why)), -1);		/* v3 cut short */
	h[7] = 4;
	assert_int_equal(qcow2_header_check(h, sizeof(h), &vsize, why,
	    sizeof(why)), -1);
	memcpy(h, "QFI\xfa", 4);
	assert_int_equal(qcow2_header_check(h, sizeof(h), &vsize, why,
	    sizeof(why)), -1);
	assert_int_equal(qcow2_header_check(h, 0, &vsize, why,
	    sizeof(why)), -1);
}

/* The verdict is the guest's claim in one exact shape: a whole line with
 * a known word.  Escapes, a verdict inside another line, an unknown or
 * longer word are none; the first verdict line wins, however the bytes
 * are cut. */
static void
t_verdict(void **state)
{
	static const char log[] =
	    "boot\r\nGOT:MOAT-VERDICT: contained\r\n"
	    "MOAT-VERDICT: contained\x1b[2J\x1b]0;x\a\r\n"
	    "MOAT-VERDICT: containedXX\r\n"
	    "MOAT-VERDICT: NOT CONTAINED\r\r\n"
	    "MOAT-VERDICT: contained\r\n";
	struct verdict_scan vs;
	size_t i, cut;

	(void)state;
	assert_int_equal(verdict_line("MOAT-VERDICT: contained", 23),
	    VERDICT_CONTAINED);
	assert_int_equal(verdict_line("MOAT-VERDICT: error\r", 20),
	    VERDICT_ERROR);
	assert_int_equal(verdict_line(" MOAT-VERDICT: error", 20),
	    VERDICT_NONE);
	assert_int_equal(verdict_line("MOAT-VERDICT: ", 14), VERDICT_NONE);
	assert_string_equal(verdict_word(VERDICT_NOT_CONTAINED),
	    "NOT CONTAINED");
	assert_null(verdict_word(VERDICT_NONE));
	for (cut = 1; cut < 40; cut++) {
		memset(&vs, 0, sizeof(vs));
		for (i = 0; i < sizeof(log) - 1; i += cut)
			verdict_feed(&vs, log + i, sizeof(log) - 1 - i < cut ?
			    sizeof(log) - 1 - i : cut);
		assert_int_equal(vs.v, VERDICT_NOT_CONTAINED);
	}
	/* A long line that ends in a verdict is not one. */
	memset(&vs, 0, sizeof(vs));
	for (i = 0; i < 100; i++)
		verdict_feed(&vs, "x", 1);
	verdict_feed(&vs, "MOAT-VERDICT: contained\n", 24);
	assert_int_equal(vs.v, VERDICT_NONE);
	verdict_feed(&vs, "MOAT-VERDICT: contained\n", 24);
	assert_int_equal(vs.v, VERDICT_CONTAINED);
}

static off_t
fsize(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static char *
slurp(const char *path, size_t *len)
{
	char *s = read_small_file(path, 1 << 20, len);

	assert_non_null(s);
	return s;
}

/* The serial log never passes its cap: console.log at most max bytes,
 * the part before in console.log.1, nothing lost between the two; an old
 * log over the cap is cut at open; the first verdict is recorded once. */
static void
t_serial_log(void **state)
{
	char dir[] = "/tmp/moat-test-serial.XXXXXX", line[64], *all, *a, *b;
	struct gpaths p = { 0 };
	struct serial_log l;
	struct verdict_rec rec;
	size_t n = 0, la, lb, cap = 1 << 20;
	FILE *f;
	int i;

	(void)state;
	assert_non_null(mkdtemp(dir));
	xasprintf(&p.log, "%s/console.log", dir);
	xasprintf(&p.log_old, "%s/console.log.1", dir);
	xasprintf(&p.verdict, "%s/verdict", dir);
	xasprintf(&p.latest, "%s/verdict.rec", dir);
	/* An old log from before the cap, without a verdict file. */
	assert_non_null(f = fopen(p.log, "w"));
	fputs("MOAT-VERDICT: contained\r\n", f);
	for (i = 0; i < 20000; i++)
		fprintf(f, "old %d\n", i);
	fclose(f);
	assert_true(fsize(p.log) > SERIAL_LOG_MIN);
	assert_int_equal(serial_log_open(&p, 1000, &l), 0);
	assert_int_equal(l.max, SERIAL_LOG_MIN);
	assert_int_equal(fsize(p.log), 0);
	assert_int_equal(fsize(p.log_old), SERIAL_LOG_MIN);
	/* Its verdict, from before it had a file, is the one kept. */
	assert_int_equal(verdict_file_read(p.verdict), VERDICT_CONTAINED);
	assert_int_equal(l.verdict, -1);
	serial_log_close(&l);

	unlink(p.log);
	unlink(p.log_old);
	unlink(p.verdict);
	unlink(p.latest);
	assert_int_equal(serial_log_open(&p, SERIAL_LOG_MIN, &l), 0);
	all = xmalloc(cap);
	for (i = 0; n + sizeof(line) < cap; i++) {
		snprintf(line, sizeof(line), i == 50 ? "MOAT-VERDICT: NOT "
		    "CONTAINED\r\n" : i == 60 ? "MOAT-VERDICT: contained\r\n" :
		    "line %d of the guest's console\r\n", i);
		memcpy(all + n, line, strlen(line));
		n += strlen(line);
		serial_log_write(&l, line, strlen(line));
		assert_true(fsize(p.log) <= SERIAL_LOG_MIN);
		assert_true(fsize(p.log_old) <= SERIAL_LOG_MIN);
	}
	serial_log_close(&l);
	assert_int_equal(verdict_file_read(p.verdict), VERDICT_NOT_CONTAINED);
	/* console.log.1 then console.log: the end of what was written. */
	a = slurp(p.log_old, &la);
	b = slurp(p.log, &lb);
	assert_true(la > 0 && lb > 0);
	assert_memory_equal(all + n - lb, b, lb);
	assert_memory_equal(all + n - lb - la, a, la);
	free(a);
	free(b);
	/* The record: the latest of the two, with a time. */
	assert_int_equal(verdict_rec_read(p.latest, &rec), 0);
	assert_int_equal(rec.verdict, VERDICT_CONTAINED);
	assert_int_equal(rec.reports, 2);
	assert_true(rec.at > 0);
	/* Reopened: the recorded verdict stays, whatever comes later; the
	 * record takes the later ones and counts what it refuses. */
	assert_int_equal(serial_log_open(&p, SERIAL_LOG_MIN, &l), 0);
	assert_int_equal(l.verdict, -1);
	serial_log_write(&l, "MOAT-VERDICT: contained\n", 24);
	serial_log_write(&l, "MOAT-VERDICT: NOT CONTAINED\n", 28);
	serial_log_write(&l, "x MOAT-VERDICT: contained\n", 26);
	serial_log_write(&l, "MOAT-VERDICT: contained\x1b[2J\n", 28);
	for (i = 0; i < 50; i++)
		serial_log_write(&l, "MOAT-VERDICT: contained ", 24);
	serial_log_write(&l, "\n", 1);
	serial_log_close(&l);
	assert_int_equal(verdict_file_read(p.verdict), VERDICT_NOT_CONTAINED);
	assert_int_equal(verdict_rec_read(p.latest, &rec), 0);
	assert_int_equal(rec.verdict, VERDICT_NOT_CONTAINED);
	assert_int_equal(rec.reports, 4);
	assert_int_equal(rec.rejected[0], 1);	/* forged */
	assert_int_equal(rec.rejected[1], 1);	/* overlong */
	assert_int_equal(rec.rejected[2], 1);	/* escaped */
	unlink(p.latest);
	free(p.latest);
	free(all);
	unlink(p.log);
	unlink(p.log_old);
	unlink(p.verdict);
	rmdir(dir);
	free(p.log);
	free(p.log_old);
	free(p.verdict);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_qemu_hardening),
		cmocka_unit_test(t_qemu_golden),
		cmocka_unit_test(t_alloc),
		cmocka_unit_test(t_alloc_exhausted),
		cmocka_unit_test(t_alloc_box_pool),
		cmocka_unit_test(t_names),
		cmocka_unit_test(t_dropin_loads),
		cmocka_unit_test(t_seed),
		cmocka_unit_test(t_seed_ipv6),
		cmocka_unit_test(t_addr6),
		cmocka_unit_test(t_targets),
		cmocka_unit_test(t_env_names),
		cmocka_unit_test(t_join),
		cmocka_unit_test(t_qcow2_header),
		cmocka_unit_test(t_verdict),
		cmocka_unit_test(t_serial_log),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
