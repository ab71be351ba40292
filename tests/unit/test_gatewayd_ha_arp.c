/*
 * test_gatewayd_ha_arp.c -- the ha-arp process's parser: what an ARP
 * frame from the uplink says to the split-brain watch.  Only an
 * Ethernet/IPv4 reply from a unicast sender claiming the shared address
 * is reported, and whether it was addressed to this box.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../gatewayd/ha_arp/ha_arp.h"

static const struct ha_arp_watch w = { 2, { 0x52, 0x54, 0, 0, 0, 1 },
	{ 203, 0, 113, 100 } };

/* An answer to this box's probe, from 02:00:00:00:00:99. */
static void
frame(uint8_t f[28])
{
	static const uint8_t answer[28] = {
		0, 1, 8, 0, 6, 4, 0, 2,
		2, 0, 0, 0, 0, 0x99, 203, 0, 113, 100,
		0x52, 0x54, 0, 0, 0, 1, 0, 0, 0, 0,
	};

	memcpy(f, answer, 28);
}

static void
answer_reported(void **state)
{
	uint8_t f[60] = { 0 };
	struct ipc_ha_arp m;

	(void)state;
	frame(f);
	assert_int_equal(ha_arp_parse(f, 28, &w, &m), 0);
	assert_memory_equal(m.mac, "\x02\0\0\0\0\x99", 6);
	assert_memory_equal(m.ip, w.addr, 4);
	assert_int_equal(m.kind, IPC_HA_ARP_REPLY);
	assert_int_equal(m.pad, 0);
	/* Ethernet's padding after it changes nothing. */
	assert_int_equal(ha_arp_parse(f, sizeof(f), &w, &m), 0);
	/* Addressed to someone else, or to everyone: reported as such. */
	memset(f + 18, 0xff, 6);
	assert_int_equal(ha_arp_parse(f, 28, &w, &m), 0);
	assert_int_equal(m.kind, IPC_HA_ARP_OTHER);
}

static void
others_ignored(void **state)
{
	static const struct { size_t at; uint8_t v; } bad[] = {
		{ 1, 6 },	/* not Ethernet */
		{ 2, 0x86 },	/* not IPv4 */
		{ 4, 8 },	/* hardware address length */
		{ 5, 16 },	/* protocol address length */
		{ 7, 1 },	/* a request */
		{ 17, 101 },	/* another address */
		{ 8, 3 },	/* a group sender */
	};
	uint8_t f[28];
	struct ipc_ha_arp m;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		frame(f);
		f[bad[i].at] = bad[i].v;
		assert_int_equal(ha_arp_parse(f, 28, &w, &m), -1);
	}
	frame(f);
	memset(f + 8, 0, 6);	/* no sender */
	assert_int_equal(ha_arp_parse(f, 28, &w, &m), -1);
	frame(f);
	for (i = 0; i < 28; i++)	/* short */
		assert_int_equal(ha_arp_parse(f, i, &w, &m), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(answer_reported),
		cmocka_unit_test(others_ignored),
	};
	return cmocka_run_group_tests_name("gatewayd_ha_arp", tests, NULL, NULL);
}
