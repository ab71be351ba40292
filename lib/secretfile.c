/*
 * secretfile.c -- see secretfile.h.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "secretfile.h"
#include "smallfile.h"

int
secret_file_read(const struct moat_secret *s, char *buf, size_t *len, char *err,
    size_t errlen)
{
	struct stat st;
	ssize_t n;
	char more;
	size_t i;
	int fd;

	if ((fd = open(s->file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "secret \"%s\": cannot read %s: %s",
		    s->name, s->file, strerror(errno ? errno : EINVAL));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	n = read_whole_fd(fd, buf, SECRET_FILE_MAX + 2);
	if (n == SECRET_FILE_MAX + 2 && read_whole_fd(fd, &more, 1) != 0)
		n = -1;		/* more follows: too long, not cut short */
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n <= 0 || n > SECRET_FILE_MAX) {
		snprintf(err, errlen, "secret \"%s\": %s: the value must be 1 "
		    "to %d bytes", s->name, s->file, SECRET_FILE_MAX);
		return -1;
	}
	for (i = 0; i < (size_t)n; i++)
		if (buf[i] == '\r' || buf[i] == '\n' || buf[i] == '\0') {
			/* would split a header: request smuggling by config */
			snprintf(err, errlen, "secret \"%s\": %s: the value "
			    "contains CR, LF or NUL", s->name, s->file);
			return -1;
		}
	*len = (size_t)n;
	return 0;
}

const struct moat_secret *
secret_value_placeholder(const struct moat_config *cfg, const char *v,
    size_t len)
{
	const char *ph;
	size_t i;

	for (i = 0; i < cfg->nsecrets; i++)
		if ((ph = cfg->secrets[i].placeholder) != NULL &&
		    memmem(v, len, ph, strlen(ph)) != NULL)
			return &cfg->secrets[i];
	return NULL;
}

/* The variable names tools look for; anything else NAME_API_KEY. */
static const struct {
	const char *secret, *var;
} env_names[] = {
	{ "openai", "OPENAI_API_KEY" },
	{ "anthropic", "ANTHROPIC_API_KEY" },
	{ "github", "GITHUB_TOKEN" },
	{ "gitlab", "GITLAB_TOKEN" },
	{ "huggingface", "HF_TOKEN" },
	{ "hf", "HF_TOKEN" },
	{ "gemini", "GEMINI_API_KEY" },
	{ "google", "GOOGLE_API_KEY" },
	{ "mistral", "MISTRAL_API_KEY" },
	{ "groq", "GROQ_API_KEY" },
	{ "openrouter", "OPENROUTER_API_KEY" },
};

const char *
secret_env_name(const char *secret, char *buf, size_t len)
{
	size_t i, j;

	for (i = 0; i < sizeof(env_names) / sizeof(env_names[0]); i++)
		if (strcmp(secret, env_names[i].secret) == 0) {
			snprintf(buf, len, "%s", env_names[i].var);
			return buf;
		}
	snprintf(buf, len, "%s_API_KEY", secret);
	for (j = 0; buf[j] != '\0'; j++)
		buf[j] = buf[j] == '-' ? '_' : (char)toupper((unsigned char)buf[j]);
	return buf;
}
