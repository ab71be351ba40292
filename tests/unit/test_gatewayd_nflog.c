/*
 * test_gatewayd_nflog.c -- the refusal log's rate-limit key: what a guest
 * cannot forge.  Events are built by hand as nflog_parse would fill them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "../../gatewayd/nflog/nflog.h"

#define BRIDGE	3

static struct moat_prefix net;

static const char *
key(uint32_t indev, uint32_t physindev, const char *src)
{
	static char out[64];
	struct nflog_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.indev = indev;
	ev.physindev = physindev;
	snprintf(ev.src, sizeof(ev.src), "%s", src);
	nflog_event_key(&ev, BRIDGE, &net, out, sizeof(out));
	return out;
}

/* A frame refused by the bridge table: its port, whatever it claims. */
static void
test_bridge_port(void **state)
{
	assert_string_equal(key(BRIDGE, 7, "10.99.0.1"), "port:7");
	assert_string_equal(key(BRIDGE, 7, "10.99.0.2"), "port:7");
	assert_string_equal(key(BRIDGE, 7, "10.77.0.11"), "port:7");
	assert_string_equal(key(BRIDGE, 7, ""), "port:7");
}

/* Routed from the bridge: the source, which the bridge table checked, but
 * only inside the sandbox network; anything else shares the bridge's. */
static void
test_routed(void **state)
{
	assert_string_equal(key(BRIDGE, 0, "10.77.0.11"), "addr:10.77.0.11");
	assert_string_equal(key(BRIDGE, 0, "10.99.0.1"), "if:3");
	assert_string_equal(key(BRIDGE, 0, "10.99.0.2"), "if:3");
	assert_string_equal(key(BRIDGE, 0, ""), "if:3");
}

/* From the uplink or the LAN: the interface, never the claimed source. */
static void
test_other_interface(void **state)
{
	assert_string_equal(key(2, 0, "10.77.0.11"), "if:2");
	assert_string_equal(key(2, 0, "198.51.100.7"), "if:2");
	assert_string_equal(key(0, 0, "10.77.0.11"), "if:0");
}

static const char conf[] =
"gateway: { uplink = \"up0\"; network = \"10.77.0.0/24\";\n"
"  dns: { upstream = [ \"203.0.113.53\" ]; };\n"
"  proxy: { port = 3128; intercept = false; }; };\n"
"sandboxes = (\n"
"  { name = \"web\"; mac = \"52:54:00:00:00:0a\"; address = \"10.77.0.10\";\n"
"    tap = \"mt-web\"; egress = \"open\"; } );\n";

static const char *
event_json(const char *reason, const char *src, bool mac)
{
	static const uint8_t web_mac[6] = { 0x52, 0x54, 0, 0, 0, 0x0a };
	static char out[512];
	struct moat_errors errs = { 0 };
	struct moat_config *cfg;
	struct nflog_event ev;

	cfg = config_load_buffer("test.conf", conf, "/nonexistent", &errs);
	assert_non_null(cfg);
	memset(&ev, 0, sizeof(ev));
	snprintf(ev.reason, sizeof(ev.reason), "%s", reason);
	snprintf(ev.src, sizeof(ev.src), "%s", src);
	snprintf(ev.dst, sizeof(ev.dst), "192.168.77.2");
	if (mac) {
		memcpy(ev.mac, web_mac, sizeof(web_mac));
		ev.has_mac = 1;
	}
	nflog_event_json(&ev, cfg, out, sizeof(out));
	config_free(cfg);
	return out;
}

/* A refusal names the sandbox its address or MAC belongs to; a spoof
 * refusal names none, since what it claims is the forgery. */
static void
test_sandbox_named(void **state)
{
	assert_non_null(strstr(event_json("private", "10.77.0.10", false),
	    "\"sandbox\":\"web\""));
	assert_non_null(strstr(event_json("private", "", true),
	    "\"sandbox\":\"web\""));
	assert_non_null(strstr(event_json("spoof", "10.77.0.10", false),
	    "\"sandbox\":\"\""));
	assert_non_null(strstr(event_json("spoof", "", true),
	    "\"sandbox\":\"\""));
	assert_non_null(strstr(event_json("spoof", "10.77.0.10", false),
	    "\"src\":\"10.77.0.10\""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bridge_port),
		cmocka_unit_test(test_routed),
		cmocka_unit_test(test_other_interface),
		cmocka_unit_test(test_sandbox_named),
	};

	if (prefix_parse("10.77.0.0/24", &net) == -1)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
