/*
 * fuzz_config.c -- libFuzzer harness for the config loader: any bytes as
 * moat.conf must yield a model or file:line errors, never a crash, leak or
 * hang.  Drop-ins are pointed at a folder that does not exist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct moat_errors errs;
	struct moat_config *cfg;
	char *text;

	if (len > 65536)
		return 0;
	if ((text = malloc(len + 1)) == NULL)
		return 0;
	memcpy(text, data, len);
	text[len] = '\0';
	cfg = config_load_buffer("fuzz.conf", text, "/nonexistent", &errs);
	if (cfg != NULL) {
		FILE *fp = fopen("/dev/null", "w");
		if (fp != NULL) {
			config_print(fp, cfg);
			config_summary(fp, cfg);
			fclose(fp);
		}
	}
	config_free(cfg);
	config_errors_free(&errs);
	free(text);
	return 0;
}
