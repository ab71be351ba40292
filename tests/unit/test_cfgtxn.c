/*
 * test_cfgtxn.c -- configuration files changed all or nothing
 * (lib/cfgtxn.c), and one setting of a drop-in's text changed in place
 * (lib/conftext.c).  Real files in a temporary folder.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cfgtxn.h"
#include "conftext.h"
#include "smallfile.h"

static char dir[] = "/tmp/moat-test-cfgtxn.XXXXXX";
static char conf[256], a[256], b[256], c[256];

static void
put(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void
assert_file(const char *path, const char *text, mode_t mode)
{
	struct stat st;
	char *s = read_small_file(path, 4096, NULL);

	assert_non_null(s);
	assert_string_equal(s, text);
	free(s);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, mode);
}

/* Nothing hidden is left behind: no staged file, no old copy. */
static void
assert_no_dotfiles(void)
{
	DIR *dp = opendir(dir);
	struct dirent *de;

	assert_non_null(dp);
	while ((de = readdir(dp)) != NULL)
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			fail_msg("left behind: %s", de->d_name);
	closedir(dp);
}

static int
setup(void **state)
{
	(void)state;
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	snprintf(a, sizeof(a), "%s/a.conf", dir);
	snprintf(b, sizeof(b), "%s/b.conf", dir);
	snprintf(c, sizeof(c), "%s/c.conf", dir);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(conf);
	unlink(a);
	unlink(b);
	unlink(c);
	return rmdir(dir);
}

/* The check the caller gives: it sees the new files, and says no. */
static int
check_no(void *arg, const char *conf_path, char **errors)
{
	char *s = read_small_file(b, 4096, NULL);

	assert_string_equal(conf_path, conf);
	assert_non_null(s);
	assert_string_equal(s, "new b\n");	/* the new files are in place */
	assert_int_equal(access(c, F_OK), -1);
	free(s);
	(*(int *)arg)++;
	*errors = strdup("b.conf:1: no\n");
	return -1;
}

static int
check_yes(void *arg, const char *conf_path, char **errors)
{
	(void)conf_path;
	(void)errors;
	(*(int *)arg)++;
	return 0;
}

/* a: changed, b: new, c: removed. */
static struct cfgtxn *
stage_three(void)
{
	struct cfgtxn *t;

	put(a, "old a\n", 0640);
	unlink(b);
	put(c, "old c\n", 0600);
	t = cfgtxn_begin(conf);
	assert_int_equal(cfgtxn_stage_write(t, a, "new a\n", 6, 0644,
	    getuid(), getgid()), 0);
	assert_int_equal(cfgtxn_stage_write(t, b, "new b\n", 6, 0600,
	    getuid(), getgid()), 0);
	assert_int_equal(cfgtxn_stage_remove(t, c), 0);
	assert_int_equal(cfgtxn_count(t), 3);
	assert_string_equal(cfgtxn_path(t, 1), b);
	/* Staged is not yet in place. */
	assert_file(a, "old a\n", 0640);
	assert_int_equal(access(b, F_OK), -1);
	return t;
}

/* A refused check leaves every file as it was: contents, mode, inode. */
static void
refused_puts_back(void **state)
{
	struct cfgtxn *t;
	struct stat before, after;
	char *errors = NULL;
	int calls = 0;

	(void)state;
	t = stage_three();
	assert_int_equal(stat(a, &before), 0);
	assert_int_equal(cfgtxn_commit_and_check(t, check_no, &calls, &errors),
	    -1);
	assert_int_equal(calls, 1);
	assert_string_equal(errors, "b.conf:1: no\n");
	free(errors);
	assert_file(a, "old a\n", 0640);
	assert_int_equal(stat(a, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(access(b, F_OK), -1);
	assert_file(c, "old c\n", 0600);
	assert_int_equal(cfgtxn_rollback(t), 0);	/* already done */
	cfgtxn_end(t);
	assert_no_dotfiles();
}

static void
accepted_stays(void **state)
{
	struct cfgtxn *t;
	char *errors = NULL;
	int calls = 0;

	(void)state;
	t = stage_three();
	assert_int_equal(cfgtxn_commit_and_check(t, check_yes, &calls, &errors),
	    0);
	assert_null(errors);
	cfgtxn_end(t);
	assert_file(a, "new a\n", 0644);
	assert_file(b, "new b\n", 0600);
	assert_int_equal(access(c, F_OK), -1);
	assert_no_dotfiles();
}

/* A later step failed (the kernel refused the policy, say): roll back. */
static void
rollback_after_commit(void **state)
{
	struct cfgtxn *t;
	char *errors = NULL;
	int calls = 0;

	(void)state;
	t = stage_three();
	assert_int_equal(cfgtxn_commit_and_check(t, check_yes, &calls, &errors),
	    0);
	assert_int_equal(cfgtxn_rollback(t), 0);
	cfgtxn_end(t);
	assert_file(a, "old a\n", 0640);
	assert_int_equal(access(b, F_OK), -1);
	assert_file(c, "old c\n", 0600);
	assert_no_dotfiles();
}

/* Ended before a commit: nothing changes, nothing is left. */
static void
abandoned(void **state)
{
	struct cfgtxn *t;

	(void)state;
	t = stage_three();
	cfgtxn_end(t);
	assert_file(a, "old a\n", 0640);
	assert_int_equal(access(b, F_OK), -1);
	assert_file(c, "old c\n", 0600);
	assert_no_dotfiles();
}

/* --- a process killed in the middle: cfgtxn_recover() undoes its change */

enum kill_at { KILL_STAGED, KILL_IN_CHECK, KILL_COMMITTED };

static int
check_dies(void *arg, const char *conf_path, char **errors)
{
	(void)arg;
	(void)conf_path;
	(void)errors;
	_exit(0);	/* the new files are in place, the check never ends */
}

/* A child stages the three changes and dies at the given point. */
static void
die_at(enum kill_at when)
{
	pid_t pid;
	int status;

	if ((pid = fork()) == 0) {
		struct cfgtxn *t = stage_three();
		char *errors = NULL;
		int calls = 0;

		if (when == KILL_STAGED)
			_exit(0);
		if (cfgtxn_commit_and_check(t, when == KILL_IN_CHECK ?
		    check_dies : check_yes, &calls, &errors) == 0)
			_exit(0);	/* committed, never ended */
		_exit(3);
	}
	assert_int_not_equal(pid, -1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
assert_as_before(void)
{
	assert_file(a, "old a\n", 0640);
	assert_int_equal(access(b, F_OK), -1);
	assert_file(c, "old c\n", 0600);
	assert_no_dotfiles();
}

/* Named files are in place: the journal is the only trace of the old. */
static void
killed_after_commit(void **state)
{
	(void)state;
	die_at(KILL_COMMITTED);
	assert_file(a, "new a\n", 0644);
	assert_file(b, "new b\n", 0600);
	assert_int_equal(access(c, F_OK), -1);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_as_before();
}

static void
killed_in_check(void **state)
{
	(void)state;
	die_at(KILL_IN_CHECK);
	assert_file(b, "new b\n", 0600);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_as_before();
}

/* Staged copies (of a secret, say) do not outlive their process. */
static void
killed_while_staged(void **state)
{
	(void)state;
	die_at(KILL_STAGED);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_as_before();
}

/* A transaction still going on (its journal locked) is left alone. */
static void
live_left_alone(void **state)
{
	struct cfgtxn *t;
	char *errors = NULL;
	int calls = 0;

	(void)state;
	t = stage_three();
	assert_int_equal(cfgtxn_commit_and_check(t, check_yes, &calls,
	    &errors), 0);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_file(a, "new a\n", 0644);
	assert_file(b, "new b\n", 0600);
	cfgtxn_end(t);
	assert_no_dotfiles();
	unlink(b);
}

/* A dot-file by the journal's name that is not one: left, and said. */
static void
foreign_journal(void **state)
{
	char path[300];
	FILE *fp;

	(void)state;
	put(a, "old a\n", 0640);
	snprintf(path, sizeof(path), "%s/.moat-txn.zzzzzz", dir);
	put(path, "W nonsense\n", 0600);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), -1);
	assert_int_equal(access(path, F_OK), 0);
	assert_file(a, "old a\n", 0640);
	unlink(path);
	/* A staging that failed stands for nothing put in place: a is
	 * not removed for it. */
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp, "W %s/.a.conf.new.x\t%s\nD %s/.a.conf.new.x\t%s\n", dir,
	    a, dir, a);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_file(a, "old a\n", 0640);
	/* A line cut short was never acted on. */
	put(path, "W /x/.t\t/x/t", 0600);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_int_equal(access(path, F_OK), -1);
}

/* --- recovery reaches the state folder, and trusts no planted journal - */

struct reports {
	int	n;
	char	why[256];
};

static void
report(void *arg, const char *journal, const char *why)
{
	struct reports *r = arg;

	(void)journal;
	r->n++;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

/* A journal of its own at path, naming what the test wants. */
static void
plant(const char *path, const char *fmt, ...)
{
	va_list ap;
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(chmod(path, 0600), 0);
}

/* `secret set` stages the value in state_dir/secrets first, so its
 * journal lies there: found when recovery is told the state folder. */
static void
state_dir_journal(void **state)
{
	char sdir[] = "/tmp/moat-test-cfgtxn-state.XXXXXX", val[300];
	struct reports r = { 0 };
	struct cfgtxn *t;
	pid_t pid;
	int status;

	(void)state;
	assert_non_null(mkdtemp(sdir));
	snprintf(val, sizeof(val), "%s/k", sdir);
	put(val, "old value\n", 0600);
	put(a, "old a\n", 0640);
	if ((pid = fork()) == 0) {
		char *errors = NULL;
		int calls = 0;

		t = cfgtxn_begin(conf);
		if (cfgtxn_stage_write(t, val, "new value\n", 10, 0600,
		    getuid(), getgid()) == 0 &&
		    cfgtxn_stage_write(t, a, "new a\n", 6, 0644, getuid(),
		    getgid()) == 0)
			cfgtxn_commit_and_check(t, check_dies, &calls, &errors);
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_file(val, "new value\n", 0600);
	/* Without the state folder the journal is not seen at all. */
	assert_int_equal(cfgtxn_recover(conf, NULL, report, &r), 0);
	assert_file(a, "new a\n", 0644);
	assert_int_equal(cfgtxn_recover(conf, sdir, report, &r), 0);
	assert_int_equal(r.n, 0);
	assert_file(val, "old value\n", 0600);
	assert_file(a, "old a\n", 0640);
	assert_no_dotfiles();
	unlink(val);
	assert_int_equal(rmdir(sdir), 0);	/* the journal is gone too */
}

/* A verb given a relative moat.conf (gatewayd -c moat.conf) journals
 * absolute paths, which recovery acts on from anywhere. */
static void
relative_paths_journaled_absolute(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	put(a, "old a\n", 0640);
	if ((pid = fork()) == 0) {
		char *errors = NULL;
		int calls = 0;
		struct cfgtxn *t;

		if (chdir(dir) == -1)
			_exit(3);
		t = cfgtxn_begin("moat.conf");
		if (cfgtxn_stage_write(t, "a.conf", "new a\n", 6, 0644,
		    getuid(), getgid()) == 0)
			cfgtxn_commit_and_check(t, check_dies, &calls, &errors);
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_file(a, "new a\n", 0644);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_file(a, "old a\n", 0640);
	assert_no_dotfiles();
}

/* Recovery learns state_dir from moat.conf alone, even when the whole
 * configuration would not load. */
static void
state_dir_from_conf(void **state)
{
	char *s;

	(void)state;
	put(conf, "gateway: { nonsense = 1; state_dir = \"/srv/moat\"; };\n",
	    0644);
	s = cfgtxn_state_dir(conf);
	assert_non_null(s);
	assert_string_equal(s, "/srv/moat");
	free(s);
	put(conf, "gateway: { uplink = \"eth0\"; };\n", 0644);
	s = cfgtxn_state_dir(conf);
	assert_non_null(s);
	assert_string_equal(s, CFGTXN_STATE_DIR_DEFAULT);
	free(s);
	put(conf, "gateway: { state_dir = \"rel\"; };\n", 0644);
	assert_null(cfgtxn_state_dir(conf));
	put(conf, "gateway: { state_dir = \n", 0644);
	assert_null(cfgtxn_state_dir(conf));
	unlink(conf);
	assert_null(cfgtxn_state_dir(conf));
}

/* A journal refused leaves every file as it was, stays, is reported. */
static void
assert_refused(const char *jpath, const char *target, const char *text,
    const char *why)
{
	struct reports r = { 0 };

	assert_int_equal(cfgtxn_recover(conf, NULL, report, &r), -1);
	assert_int_equal(r.n, 1);
	assert_non_null(strstr(r.why, why));
	assert_int_equal(access(jpath, F_OK), 0);
	assert_file(target, text, 0640);
	unlink(jpath);
}

static void
untrusted_journals(void **state)
{
	char out[] = "/tmp/moat-test-cfgtxn-out.XXXXXX", victim[300];
	char jpath[300], link_[300], old[300];

	(void)state;
	assert_non_null(mkdtemp(out));
	snprintf(victim, sizeof(victim), "%s/victim", out);
	snprintf(jpath, sizeof(jpath), "%s/.moat-txn.planted", dir);
	snprintf(link_, sizeof(link_), "%s/escape", dir);
	snprintf(old, sizeof(old), "%s/.a.conf.old.000000000000", dir);
	put(victim, "victim\n", 0640);
	put(a, "old a\n", 0640);

	/* A path outside moat's folders: "created" there, so recovery would
	 * remove it. */
	plant(jpath, "W %s/.victim.new.x\t%s\n", out, victim);
	assert_refused(jpath, victim, "victim\n", "outside");
	/* The same through "..", and through a symlinked folder. */
	plant(jpath, "W %s/../%s/.victim.new.x\t%s/../%s/victim\n", dir,
	    out + 5, dir, out + 5);
	assert_refused(jpath, victim, "victim\n", "outside");
	assert_int_equal(symlink(out, link_), 0);
	plant(jpath, "W %s/.victim.new.x\t%s/victim\n", link_, link_);
	assert_refused(jpath, victim, "victim\n", "outside");
	unlink(link_);
	/* An "old file" that is some other file, renamed over the target. */
	put(old, "not a's\n", 0640);
	plant(jpath, "W %s/.a.conf.new.x\t%s\nO %s/b.conf\t%s\n", dir, a, dir,
	    a);
	assert_refused(jpath, a, "old a\n", "not beside");
	unlink(old);
	/* A journal others may write. */
	plant(jpath, "W %s/.a.conf.new.x\t%s\n", dir, a);
	assert_int_equal(chmod(jpath, 0622), 0);
	assert_refused(jpath, a, "old a\n", "written by others");
	/* A journal of another user (root only can make one). */
	if (geteuid() == 0) {
		plant(jpath, "W %s/.a.conf.new.x\t%s\n", dir, a);
		assert_int_equal(chown(jpath, 65534, 65534), 0);
		assert_refused(jpath, a, "old a\n", "not owned by root");
	}
	/* A FIFO by that name: no wait, refused. */
	assert_int_equal(mkfifo(jpath, 0600), 0);
	assert_refused(jpath, a, "old a\n", "not a regular file");
	/* Its own journal in its own folder is acted on (the a it "created"
	 * is removed): the checks above refused for their reason only. */
	plant(jpath, "W %s/.a.conf.new.x\t%s\n", dir, a);
	assert_int_equal(cfgtxn_recover(conf, NULL, NULL, NULL), 0);
	assert_int_equal(access(a, F_OK), -1);
	unlink(victim);
	assert_int_equal(rmdir(out), 0);
	assert_no_dotfiles();
}

/* The default check is the loader's: an unreadable config is refused
 * with its message, and the change undone. */
static void
loader_check(void **state)
{
	struct cfgtxn *t;
	char *errors = NULL;

	(void)state;
	put(conf, "gateway = { nonsense = 1; };\n", 0644);
	put(a, "old a\n", 0640);
	t = cfgtxn_begin(conf);
	assert_int_equal(cfgtxn_stage_write(t, a, "x", 1, 0644, getuid(),
	    getgid()), 0);
	assert_int_equal(cfgtxn_commit_and_check(t, NULL, NULL, &errors), -1);
	assert_non_null(errors);
	assert_non_null(strstr(errors, conf));
	free(errors);
	cfgtxn_end(t);
	assert_file(a, "old a\n", 0640);
	assert_no_dotfiles();
}

/* A file to create is never written over: if it exists by the commit,
 * nothing changes; else a rollback removes it. */
static void
create_never_clobbers(void **state)
{
	struct cfgtxn *t;
	char *errors = NULL;
	int calls = 0;

	(void)state;
	put(a, "old a\n", 0640);
	unlink(b);
	put(c, "theirs\n", 0644);
	t = cfgtxn_begin(conf);
	assert_int_equal(cfgtxn_stage_write(t, a, "new a\n", 6, 0644,
	    getuid(), getgid()), 0);
	assert_int_equal(cfgtxn_stage_create(t, c, "mine\n", 5, 0644,
	    getuid(), getgid()), 0);
	assert_int_equal(cfgtxn_commit_and_check(t, check_yes, &calls, &errors),
	    -1);
	assert_int_equal(calls, 0);
	assert_non_null(strstr(errors, "File exists"));
	free(errors);
	cfgtxn_end(t);
	assert_file(a, "old a\n", 0640);
	assert_file(c, "theirs\n", 0644);
	assert_no_dotfiles();
	t = cfgtxn_begin(conf);
	assert_int_equal(cfgtxn_stage_create(t, b, "mine\n", 5, 0600,
	    getuid(), getgid()), 0);
	assert_int_equal(cfgtxn_commit_and_check(t, check_yes, &calls, &errors),
	    0);
	assert_file(b, "mine\n", 0600);
	assert_int_equal(cfgtxn_rollback(t), 0);
	cfgtxn_end(t);
	assert_int_equal(access(b, F_OK), -1);
	assert_no_dotfiles();
}

/* --- conftext ------------------------------------------------------------ */

static void
set_keeps_the_rest(void **state)
{
	static const char in[] =
	    "# an admin's note\n"
	    "name = \"k\";\n"
	    "hosts = [ \"a.test\",\n    \"b.test\" ];  # two\n"
	    "header = \"X-Key; #not a comment\";\n"
	    "requests = ( \"GET /v1/*\" /* reads */, \"POST /x\" );\n"
	    "budget = { requests_per_minute = 5; };\n"
	    "shared_with = [ \"bob\" ]\n";
	char *out;

	(void)state;
	out = conftext_set(in, "hosts", "[ \"c.test\" ]");
	assert_non_null(out);
	assert_string_equal(out,
	    "# an admin's note\n"
	    "name = \"k\";\n"
	    "hosts = [ \"c.test\" ];  # two\n"
	    "header = \"X-Key; #not a comment\";\n"
	    "requests = ( \"GET /v1/*\" /* reads */, \"POST /x\" );\n"
	    "budget = { requests_per_minute = 5; };\n"
	    "shared_with = [ \"bob\" ]\n");
	free(out);
	out = conftext_set(in, "shared_with", "[ \"carol\" ]");
	assert_non_null(strstr(out, "shared_with = [ \"carol\" ];\n"));
	assert_null(strstr(out, "bob"));
	free(out);
	out = conftext_set(in, "header", "\"Authorization\"");
	assert_non_null(strstr(out, "\nheader = \"Authorization\";\nrequests"));
	free(out);
	assert_int_equal(conftext_has(in, "budget"), 1);
	assert_int_equal(conftext_has(in, "requests_per_minute"), 0);
	assert_int_equal(conftext_has(in, "owner"), 0);
}

static void
set_appends(void **state)
{
	char *out;

	(void)state;
	out = conftext_set("name = \"k\";", "owner", "\"alice\"");
	assert_string_equal(out, "name = \"k\";\nowner = \"alice\";\n");
	free(out);
	out = conftext_set("", "owner", "\"alice\"");
	assert_string_equal(out, "owner = \"alice\";\n");
	free(out);
	out = conftext_set("a: 1\nb = \"x\" \"y\"\n", "b", "2");
	assert_string_equal(out, "a: 1\nb = 2;\n");
	free(out);
}

static void
set_refuses_what_it_cannot_scan(void **state)
{
	static const char *bad[] = {
		"name = \"k;\n", "hosts = [ \"a\";\n", "/* open\nname = 1;",
		"{ name = 1; }", "name 1;", "name = ;",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_null(conftext_set(bad[i], "hosts", "[]"));
		assert_int_equal(conftext_has(bad[i], "x"), -1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(refused_puts_back),
		cmocka_unit_test(accepted_stays),
		cmocka_unit_test(rollback_after_commit),
		cmocka_unit_test(abandoned),
		cmocka_unit_test(loader_check),
		cmocka_unit_test(killed_after_commit),
		cmocka_unit_test(killed_in_check),
		cmocka_unit_test(killed_while_staged),
		cmocka_unit_test(live_left_alone),
		cmocka_unit_test(foreign_journal),
		cmocka_unit_test(state_dir_journal),
		cmocka_unit_test(untrusted_journals),
		cmocka_unit_test(relative_paths_journaled_absolute),
		cmocka_unit_test(state_dir_from_conf),
		cmocka_unit_test(create_never_clobbers),
		cmocka_unit_test(set_keeps_the_rest),
		cmocka_unit_test(set_appends),
		cmocka_unit_test(set_refuses_what_it_cannot_scan),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
