/*
 * test_smallfile.c -- reading small files whole (lib/smallfile.c) and a
 * secret's file (lib/secretfile.c): short reads, symlinks, too long.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "secretfile.h"
#include "smallfile.h"

static char dir[] = "/tmp/moat-test-smallfile.XXXXXX";
static char path[256], link_path[256];

static void
put(const char *text, size_t len)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fwrite(text, 1, len, fp), len);
	assert_int_equal(fclose(fp), 0);
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(link_path, sizeof(link_path), "%s/l", dir);
	return symlink(path, link_path);
}

static int
teardown(void **state)
{
	(void)state;
	unlink(link_path);
	unlink(path);
	return rmdir(dir);
}

/* Whole, NUL-terminated, cut at max; never through a symlink. */
static void
small_file(void **state)
{
	size_t len = 99;
	char *s;

	(void)state;
	put("hello\n", 6);
	s = read_small_file(path, 64, &len);
	assert_string_equal(s, "hello\n");
	assert_int_equal(len, 6);
	free(s);
	s = read_small_file(path, 3, &len);
	assert_string_equal(s, "hel");
	assert_int_equal(len, 3);
	free(s);
	assert_null(read_small_file(link_path, 64, &len));
	assert_null(read_small_file("/nonexistent/x", 64, NULL));
}

/* A FIFO where a file was expected (a pidfile in a folder its guest's
 * uid can write) is refused at once, with or without a writer: it must
 * never make root wait.  A device and a folder are refused too.  On a
 * hang the alarm kills the test. */
static void
not_regular(void **state)
{
	char fifo[300], *s;
	int w;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(10);
	assert_null(read_small_file(fifo, 64, NULL));
	assert_int_equal(errno, EINVAL);
	w = open(fifo, O_RDWR | O_CLOEXEC);	/* a writer that never writes */
	assert_true(w != -1);
	assert_null(read_small_file(fifo, 64, NULL));
	close(w);
	assert_null(read_small_file("/dev/zero", 64, NULL));
	assert_null(read_small_file(dir, 64, NULL));
	alarm(0);
	unlink(fifo);
	s = read_small_file("/proc/self/status", 4096, NULL);
	assert_non_null(s);		/* /proc's files are regular */
	assert_non_null(strstr(s, "Uid:"));
	free(s);
}

/* The longest value, with or without CRLF, is read whole; one byte more,
 * or anything after the line end, is refused rather than cut short. */
static void
secret_lengths(void **state)
{
	static char text[SECRET_FILE_MAX + 8], buf[SECRET_FILE_MAX + 2];
	struct moat_secret s = { .name = "t", .file = path };
	char err[256];
	size_t len;

	(void)state;
	memset(text, 'k', sizeof(text));
	put(text, SECRET_FILE_MAX);
	assert_int_equal(secret_file_read(&s, buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, SECRET_FILE_MAX);
	memcpy(text + SECRET_FILE_MAX, "\r\n", 2);
	put(text, SECRET_FILE_MAX + 2);
	assert_int_equal(secret_file_read(&s, buf, &len, err, sizeof(err)), 0);
	assert_int_equal(len, SECRET_FILE_MAX);
	memcpy(text + SECRET_FILE_MAX, "\r\nx", 3);
	put(text, SECRET_FILE_MAX + 3);
	assert_int_equal(secret_file_read(&s, buf, &len, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "the value must be 1 to 4096 bytes"));
	memset(text, 'k', sizeof(text));
	put(text, SECRET_FILE_MAX + 1);
	assert_int_equal(secret_file_read(&s, buf, &len, err, sizeof(err)), -1);
	s.file = link_path;
	put("short", 5);
	assert_int_equal(secret_file_read(&s, buf, &len, err, sizeof(err)), -1);
	assert_null(strstr(err, "short"));	/* no value in the error */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(small_file),
		cmocka_unit_test(not_regular),
		cmocka_unit_test(secret_lengths),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
