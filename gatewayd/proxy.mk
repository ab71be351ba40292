# proxy.mk -- gatewayd's proxy child, built as its own binary moat-proxy
# (included from gatewayd/module.mk).
PROXY_SRCS := gatewayd/proxy/main.c gatewayd/proxy/conn.c \
	gatewayd/proxy/side.c gatewayd/proxy/splice.c gatewayd/proxy/kpath.c \
	gatewayd/proxy/engine.c gatewayd/proxy/http.c gatewayd/proxy/sni.c \
	gatewayd/proxy/secret.c gatewayd/proxy/policy.c gatewayd/proxy/dns.c \
	gatewayd/proxy/tls.c gatewayd/proxy/audit.c gatewayd/proxy/pipes.c \
	gatewayd/proxy/reqrule.c gatewayd/proxy/reload.c gatewayd/signer/ca.c \
	gatewayd/signer/signer.c
PROXY_OBJS := $(PROXY_SRCS:%.c=$(OBJ)/%.o)
PROXY_LIBS = $(call pkglibs,libssl libcrypto ldns libseccomp libmnl)
PROGRAMS += $(BUILD)/moat-proxy
INSTALL_SBIN += $(BUILD)/moat-proxy

$(BUILD)/moat-proxy: $(PROXY_OBJS) $(LIBMOAT)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(PROXY_LIBS)

# Unit tests link the pure parts (everything but main.c and reload.c,
# which drains through it).
PROXY_TEST_OBJS := $(filter-out $(OBJ)/gatewayd/proxy/main.o \
	$(OBJ)/gatewayd/proxy/reload.o,$(PROXY_OBJS))
PROXY_TESTS := $(BUILD)/tests/test_proxy_http $(BUILD)/tests/test_proxy_secret \
	$(BUILD)/tests/test_proxy_sni $(BUILD)/tests/test_proxy_policy
UNIT_TESTS += $(PROXY_TESTS)

$(PROXY_TESTS): $(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(PROXY_TEST_OBJS) $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(PROXY_LIBS) $(call pkglibs,cmocka)
