# Unit tests of lib/.  Each program's module.mk adds its own to UNIT_TESTS.
CMOCKA_LIBS = $(call pkglibs,cmocka)

LIB_TESTS := $(BUILD)/tests/test_ranges $(BUILD)/tests/test_config $(BUILD)/tests/test_ipc \
	$(BUILD)/tests/test_json $(BUILD)/tests/test_ev $(BUILD)/tests/test_addr \
	$(BUILD)/tests/test_pathmatch $(BUILD)/tests/test_budget $(BUILD)/tests/test_admit_reg \
	$(BUILD)/tests/test_smallfile $(BUILD)/tests/test_cfgtxn \
	$(BUILD)/tests/test_allowlists $(BUILD)/tests/test_ctlclient \
	$(BUILD)/tests/test_conftext $(BUILD)/tests/test_confpath
UNIT_TESTS += $(LIB_TESTS)

$(LIB_TESTS): $(BUILD)/tests/%: $(OBJ)/tests/unit/%.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS)

# The registration client against a scripted TLS box on loopback.
UNIT_TESTS += $(BUILD)/tests/test_regclient
$(BUILD)/tests/test_regclient: $(OBJ)/tests/unit/test_regclient.o $(LIBMOAT)
	@mkdir -p $(dir $@)
	$(QLINK)$(CC) $(LDHARDEN) -o $@ $^ $(LIBMOAT_LIBS) $(CMOCKA_LIBS) $(call pkglibs,libssl libcrypto)
