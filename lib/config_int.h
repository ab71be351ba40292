/*
 * config_int.h -- what the parts of the config loader share, and nothing
 * outside lib/config*.c may include.
 *
 *	config_load.c		files, drop-ins, errors, the table walker
 *	config_schema.c		the key tables and their object setters
 *	config_validate.c	value validators and the generic typed setters
 *	config_check.c		cross-checks once every file is read
 *	config.c		freeing and look-ups
 */
#ifndef MOAT_CONFIG_INT_H
#define MOAT_CONFIG_INT_H

#include <libconfig.h>
#include <stddef.h>

#include "config.h"

struct loader {
	struct moat_config	*cfg;
	struct moat_errors	*errs;
	const char		*file;	/* current file, owned by cfg->files */
	const char		*buf;	/* main file's text, if given in memory */
	const char		*secrets_dir;	/* secrets.d beside the main file */
	bool			 normalised;	/* from gatewayd: no files read */
	char			 first_line[128];	/* the file being read's */
};

enum ktype { K_STR, K_INT, K_BOOL, K_STRLIST, K_INTLIST, K_GROUP, K_GROUPLIST };

struct key;
typedef void (*setter)(struct loader *, const config_setting_t *, void *obj,
    const char *ctx, const struct key *);

struct key {
	const char	*name;
	enum ktype	 type;
	int		 required;
	setter		 set;
	size_t		 off;		/* field for the generic setters */
};

/* An integer key's bounds, what its error calls the unit, and the width
 * of the field it lands in (unsigned up to 4 bytes, else long). */
struct irange {
	const char	*key;
	long long	 min, max;
	const char	*unit;		/* after "expected MIN to MAX" */
	size_t		 size;
};

/* One of the words a string key may name, and the int it stands for. */
struct kword {
	const char	*key;
	const char	*word;
	int		 value;
};

#define FIELD(obj, k, type)	((type *)((char *)(obj) + (k)->off))
#define NKEYS(t)		(sizeof(t) / sizeof((t)[0]))

/* config_load.c */
void	adderr(struct loader *, const char *file, int line, const char *fmt,
	    ...) __attribute__((format(printf, 4, 5)));
void	addwarn(struct loader *, const char *file, int line, const char *fmt,
	    ...) __attribute__((format(printf, 4, 5)));
const char *sfile(struct loader *, const config_setting_t *);
int	sline(const config_setting_t *);
void	where(struct loader *, const config_setting_t *, struct moat_where *);
const char *ktype_name(enum ktype);
bool	ktype_ok(const config_setting_t *, enum ktype);
void	walk(struct loader *, const config_setting_t *, const struct key *,
	    size_t, void *obj, const char *ctx);
void	load_entry(struct loader *, const config_setting_t *, const char *kind,
	    size_t index, const char *default_name, const struct key *,
	    size_t nkeys, void *obj, char **namep, char *ctx, size_t ctxlen);
void	load_dropins(struct loader *, const char *dir,
	    void (*)(struct loader *, const config_setting_t *, const char *));

#define serr(ld, s, ...) \
	adderr((ld), sfile((ld), (s)), sline(s), __VA_ARGS__)

/* config_schema.c */
struct top_key {
	const char	*name;
	enum ktype	 type;
	int		 required;
	void		(*load)(struct loader *, const config_setting_t *);
};
extern const struct top_key config_top_keys[];
extern const size_t config_ntop_keys;
extern const struct irange config_ranges[];	/* ended by a NULL key */
extern const struct kword config_words[];	/* ended by a NULL key */
void	load_secret(struct loader *, const config_setting_t *,
	    const char *default_name);
void	load_sandbox(struct loader *, const config_setting_t *,
	    const char *default_name);
void	set_defaults(struct moat_config *);

/* config_validate.c: values */
bool	ifname_valid(const char *);
bool	ident_valid(const char *, size_t max);
bool	username_valid(const char *);
bool	label_valid(const char *, size_t);
void	hostname_normalise(char *);
bool	token_valid(const char *);
bool	placeholder_valid(const char *);
int	mac_parse(const char *, uint8_t mac[6]);
bool	network_is_private(const struct moat_prefix *);

/* config_validate.c: setters driven by the key's row */
void	set_ifname(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_bool(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_port(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_int(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_word(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_name(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_owner(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_users(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_allow(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_patterns(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_hosts(struct loader *, const config_setting_t *, void *,
	    const char *, const struct key *);
void	set_prefixes(struct loader *, const config_setting_t *,
	    struct moat_prefix **, size_t *, const char *ctx, const char *name);

/* config_check.c */
void	load_canary(struct loader *);
void	check_sandbox(struct loader *, const config_setting_t *,
	    const struct moat_sandbox *, const char *ctx, bool keys_ok);
void	check_all(struct loader *);

#endif
