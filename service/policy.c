// SPDX-License-Identifier: MIT
/*
 * iond.d: the service's policy files.  The same family as heaps.d (INI
 * sections, "Key = Value", '#' comments, layered folders masked by
 * basename, files in version order, file:line in every report and every
 * refusal), with its own few keys.  The heaps.d parser is the library's,
 * inside it: iond links only the public API, so this small parser is its
 * own.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define LINE_MAX_LEN 4096
#define FILES_MAX 256

enum rule_kind { RULE_DEFAULT, RULE_USER, RULE_GROUP };

struct rule {
	enum rule_kind kind;
	uint32_t id;
	bool set[IOND_LIMIT_COUNT];
	uint64_t max[IOND_LIMIT_COUNT];
	char *source[IOND_LIMIT_COUNT];
	char *heaps, *heaps_source;
};

struct iond_policy {
	struct rule *rules;
	size_t n_rules;
	int errors;
	bool quiet; /* count the problems, print none (text given directly) */
	bool numeric; /* users and groups by number only (no NSS lookups) */
};

static const char *const limit_keys[IOND_LIMIT_COUNT] = {
	[IOND_MAX_BYTES] = "MaxBytes",
	[IOND_MAX_BUFFERS] = "MaxBuffers",
	[IOND_MAX_CONTIGUOUS_BYTES] = "MaxContiguousBytes",
	[IOND_MAX_CONTIGUOUS_BUFFERS] = "MaxContiguousBuffers",
	[IOND_MAX_SCATTERED_BYTES] = "MaxScatteredBytes",
	[IOND_MAX_SCATTERED_BUFFERS] = "MaxScatteredBuffers",
	[IOND_MAX_CONNECTIONS] = "MaxConnections",
};

/* What holds when no file says: generous, never unbounded. */
static const uint64_t builtin_max[IOND_LIMIT_COUNT] = {
	[IOND_MAX_BYTES] = 256ULL << 20,
	[IOND_MAX_BUFFERS] = 1024,
	[IOND_MAX_CONTIGUOUS_BYTES] = 64ULL << 20,
	[IOND_MAX_CONTIGUOUS_BUFFERS] = 64,
	[IOND_MAX_SCATTERED_BYTES] = IOND_UNLIMITED,
	[IOND_MAX_SCATTERED_BUFFERS] = IOND_UNLIMITED,
	[IOND_MAX_CONNECTIONS] = 64,
};

const char *iond_limit_name(enum iond_limit limit)
{
	return (unsigned int)limit < IOND_LIMIT_COUNT ? limit_keys[limit] : NULL;
}

static void report(struct iond_policy *policy, const char *file, unsigned int line,
		   const char *msg, const char *arg)
{
	policy->errors++;
	if (!policy->quiet)
		fprintf(stderr, "%s:%u: %s%s%s\n", file, line, msg, arg ? ": " : "", arg ? arg : "");
}

/* A number with an optional K, M, G or T (powers of 1024), or "infinity". */
static int parse_amount(const char *s, uint64_t *ret)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (strcmp(s, "infinity") == 0) {
		*ret = IOND_UNLIMITED;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'T': shift += 10; /* fall through */
	case 'G': shift += 10; /* fall through */
	case 'M': shift += 10; /* fall through */
	case 'K': shift += 10; end++; break;
	default: break;
	}
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}

static int parse_id(const char *s, bool group, bool numeric, uint32_t *ret)
{
	uint64_t v;
	char *end;

	if (*s >= '0' && *s <= '9') {
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno || *end || v >= UINT32_MAX)
			return -EINVAL;
		*ret = (uint32_t)v;
		return 0;
	}
	if (numeric)
		return -ENOENT;
	if (group) {
		struct group *gr = getgrnam(s);

		if (!gr)
			return -ENOENT;
		*ret = gr->gr_gid;
	} else {
		struct passwd *pw = getpwnam(s);

		if (!pw)
			return -ENOENT;
		*ret = pw->pw_uid;
	}
	return 0;
}

static char *trim(char *s)
{
	char *end;

	s += strspn(s, " \t");
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

static char *where(const char *file, unsigned int line)
{
	char *s;

	return asprintf(&s, "%s:%u", file, line) < 0 ? NULL : s;
}

/* "[Default]", "[User ID|NAME]", "[Group ID|NAME]": a new rule, or NULL
 * (reported) so that the section's lines are skipped. */
static struct rule *section(struct iond_policy *policy, char *text, const char *file,
			    unsigned int line)
{
	size_t n = strlen(text);
	struct rule rule = { .kind = RULE_DEFAULT }, *grown;
	char *arg;

	if (n < 2 || text[n - 1] != ']') {
		report(policy, file, line, "a section header must end with ']'", NULL);
		return NULL;
	}
	text[n - 1] = '\0';
	text = trim(text + 1);
	arg = strchr(text, ' ');
	if (arg)
		*arg++ = '\0';
	if (strcmp(text, "Default") == 0 && !arg) {
		rule.kind = RULE_DEFAULT;
	} else if ((strcmp(text, "User") == 0 || strcmp(text, "Group") == 0) && arg) {
		rule.kind = text[0] == 'U' ? RULE_USER : RULE_GROUP;
		if (parse_id(trim(arg), rule.kind == RULE_GROUP, policy->numeric, &rule.id) < 0) {
			report(policy, file, line, "no such user or group", trim(arg));
			return NULL;
		}
	} else {
		report(policy, file, line, "unknown section (Default, User ID, Group ID)", text);
		return NULL;
	}
	grown = realloc(policy->rules, (policy->n_rules + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	policy->rules = grown;
	grown[policy->n_rules] = rule;
	return &grown[policy->n_rules++];
}

static int set_heaps(struct rule *rule, const char *value, char *source)
{
	char *copy = strdup(value);

	if (!copy) {
		free(source);
		return -ENOMEM;
	}
	for (char *p = copy; *p; p++)
		if (*p == ',' || *p == '\t')
			*p = ' ';
	free(rule->heaps);
	free(rule->heaps_source);
	rule->heaps = copy;
	rule->heaps_source = source;
	return 0;
}

static int entry(struct iond_policy *policy, struct rule *rule, char *text,
		 const char *file, unsigned int line)
{
	char *eq = strchr(text, '='), *key, *value, *source;
	uint64_t v;

	if (!eq) {
		report(policy, file, line, "expected Key = Value", NULL);
		return 0;
	}
	*eq = '\0';
	key = trim(text);
	value = trim(eq + 1);
	source = where(file, line);
	if (!source)
		return -ENOMEM;
	if (strcmp(key, "Heaps") == 0)
		return set_heaps(rule, value, source);
	for (int i = 0; i < IOND_LIMIT_COUNT; i++) {
		if (strcmp(key, limit_keys[i]) != 0)
			continue;
		if (parse_amount(value, &v) < 0) {
			report(policy, file, line, "not an amount (a number, K, M, G, T, infinity)", value);
			free(source);
			return 0;
		}
		rule->set[i] = true;
		rule->max[i] = v;
		free(rule->source[i]);
		rule->source[i] = source;
		return 0;
	}
	report(policy, file, line, "unknown key", key);
	free(source);
	return 0;
}

static int parse_text(struct iond_policy *policy, char *text, const char *file)
{
	struct rule *rule = NULL;
	bool skipping = true;
	unsigned int line = 0;
	char *raw;
	int r = 0;

	/* one line at a time, empty ones counted, so that numbers stay true */
	for (raw = text; raw && r == 0; ) {
		char *next = strchr(raw, '\n'), *s;

		if (next)
			*next++ = '\0';
		line++;
		s = trim(raw);
		raw = next;
		if (strlen(s) > LINE_MAX_LEN) {
			report(policy, file, line, "line too long", NULL);
			continue;
		}
		if (*s == '\0' || *s == '#')
			continue;
		if (*s == '[') {
			rule = section(policy, s, file, line);
			skipping = !rule;
			continue;
		}
		if (skipping) {
			if (!rule)
				report(policy, file, line, "entry outside a valid section", NULL);
			continue;
		}
		r = entry(policy, rule, s, file, line);
	}
	return r;
}

int iond_policy_load_text(const char *text, const char *name, struct iond_policy **ret_policy)
{
	struct iond_policy *policy;
	char *copy;
	int r;

	if (!text || !name || !ret_policy)
		return -EINVAL;
	policy = calloc(1, sizeof(*policy));
	copy = strdup(text);
	if (!policy || !copy) {
		free(policy);
		free(copy);
		return -ENOMEM;
	}
	policy->quiet = true;
	policy->numeric = true;
	r = parse_text(policy, copy, name);
	free(copy);
	if (r < 0) {
		iond_policy_free(policy);
		return r;
	}
	*ret_policy = policy;
	return 0;
}

static int read_file(struct iond_policy *policy, const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!f) {
		report(policy, path, 0, "cannot open", strerror(errno));
		return 0;
	}
	r = getdelim(&text, &len, '\0', f) < 0 && ferror(f) ? -EIO : 0;
	fclose(f);
	if (r == 0 && text)
		r = parse_text(policy, text, path);
	free(text);
	return r == -EIO ? 0 : r;
}

struct conf_file {
	char name[256];
	char path[4096];
};

static int by_version(const void *a, const void *b)
{
	return strverscmp(((const struct conf_file *)a)->name, ((const struct conf_file *)b)->name);
}

/* The folder's *.conf files not masked by a higher folder's, appended. */
static void list_folder(const char *dir, struct conf_file *files, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) && *n < FILES_MAX) {
		size_t len = strlen(de->d_name);
		bool masked = false;

		if (len < 6 || strcmp(de->d_name + len - 5, ".conf") != 0 || de->d_name[0] == '.' ||
		    len >= sizeof(files[0].name))
			continue;
		for (size_t i = 0; i < *n && !masked; i++)
			masked = strcmp(files[i].name, de->d_name) == 0;
		if (masked)
			continue;
		snprintf(files[*n].name, sizeof(files[0].name), "%s", de->d_name);
		if ((size_t)snprintf(files[*n].path, sizeof(files[0].path), "%s/%s", dir,
				     de->d_name) < sizeof(files[0].path))
			(*n)++;
	}
	closedir(d);
}

int iond_policy_load(const char *paths, struct iond_policy **ret_policy)
{
	struct iond_policy *policy;
	struct conf_file *files;
	char *copy, *dir, *save = NULL;
	size_t n = 0;
	int r = 0;

	if (!paths || !ret_policy)
		return -EINVAL;
	policy = calloc(1, sizeof(*policy));
	files = calloc(FILES_MAX, sizeof(*files));
	copy = strdup(paths);
	if (!policy || !files || !copy) {
		free(policy);
		free(files);
		free(copy);
		return -ENOMEM;
	}
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
		list_folder(dir, files, &n);
	qsort(files, n, sizeof(*files), by_version);
	for (size_t i = 0; i < n && r == 0; i++)
		r = read_file(policy, files[i].path);
	free(files);
	free(copy);
	if (r < 0) {
		iond_policy_free(policy);
		return r;
	}
	*ret_policy = policy;
	return 0;
}

void iond_policy_free(struct iond_policy *policy)
{
	if (!policy)
		return;
	for (size_t i = 0; i < policy->n_rules; i++) {
		for (int k = 0; k < IOND_LIMIT_COUNT; k++)
			free(policy->rules[i].source[k]);
		free(policy->rules[i].heaps);
		free(policy->rules[i].heaps_source);
	}
	free(policy->rules);
	free(policy);
}

int iond_policy_error_count(const struct iond_policy *policy)
{
	return policy ? policy->errors : -EINVAL;
}

static bool in_groups(uint32_t id, gid_t gid, const gid_t *groups, int n)
{
	if (id == gid)
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == id)
			return true;
	return false;
}

/* The rule that applies to the client at this rank (user 0, group 1,
 * default 2), for key k (-1: Heaps): the last one of its kind in reading
 * order, so that a later file overrides an earlier one. */
static const struct rule *pick(const struct iond_policy *policy, int rank, int k, uid_t uid,
			       gid_t gid, const gid_t *groups, int n_groups)
{
	const struct rule *found = NULL;

	for (size_t i = 0; i < policy->n_rules; i++) {
		const struct rule *r = &policy->rules[i];
		bool has = k < 0 ? r->heaps != NULL : r->set[k];

		if (!has)
			continue;
		if ((rank == 0 && r->kind == RULE_USER && r->id == uid) ||
		    (rank == 1 && r->kind == RULE_GROUP && in_groups(r->id, gid, groups, n_groups)) ||
		    (rank == 2 && r->kind == RULE_DEFAULT))
			found = r;
	}
	return found;
}

void iond_policy_resolve(const struct iond_policy *policy, uid_t uid, gid_t gid,
			 const gid_t *groups, int n_groups, struct iond_limits *ret)
{
	const struct rule *r;

	for (int k = 0; k < IOND_LIMIT_COUNT; k++) {
		ret->max[k] = builtin_max[k];
		ret->source[k] = "built-in";
		for (int rank = 0; policy && rank < 3; rank++) {
			r = pick(policy, rank, k, uid, gid, groups, n_groups);
			if (r) {
				ret->max[k] = r->max[k];
				ret->source[k] = r->source[k];
				break;
			}
		}
	}
	ret->heaps = "*";
	ret->heaps_source = "built-in";
	for (int rank = 0; policy && rank < 3; rank++) {
		r = pick(policy, rank, -1, uid, gid, groups, n_groups);
		if (r) {
			ret->heaps = r->heaps;
			ret->heaps_source = r->heaps_source;
			break;
		}
	}
}

bool iond_limits_allow_heap(const struct iond_limits *limits, const char *heap)
{
	const char *p = limits->heaps;
	size_t n = strlen(heap);

	while (*p) {
		size_t len;

		p += strspn(p, " ");
		len = strcspn(p, " ");
		if ((len == 1 && *p == '*') || (len == n && len && strncmp(p, heap, n) == 0))
			return true;
		p += len;
	}
	return false;
}
