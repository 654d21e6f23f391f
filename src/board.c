// SPDX-License-Identifier: MIT
/*
 * The board's identity, for matching heaps.d [Board] sections: the device
 * tree's compatible list and model, and DMI strings on ACPI machines.
 * Anything missing or unreadable is "not known", never an error: a board
 * file that needs it simply does not match.
 */
#include <stdio.h>
#include <string.h>

#include "heaps-conf.h"
#include "util.h"

/* A compatible list is a few hundred bytes; anything far larger is not one. */
#define BOARD_FILE_MAX (64 * 1024)

static bool is_transient(int r)
{
	return r == -ENOMEM || r == -EMFILE || r == -ENFILE || r == -EINTR;
}

/*
 * sysroot + rel, read whole; *ret_text NULL when the file is missing or
 * not a readable regular file.
 */
static int read_under(const char *sysroot, const char *rel, char **ret_text,
		      size_t *ret_len)
{
	_cleanup_free_ char *path = NULL;
	int r;

	if (asprintf(&path, "%s%s", sysroot, rel) < 0)
		return -ENOMEM;
	r = ion_read_file(path, BOARD_FILE_MAX, ret_text, ret_len);
	if (r < 0 && is_transient(r))
		return r;
	if (r < 0) {
		*ret_text = NULL;
		*ret_len = 0;
	}
	return 0;
}

/* /proc/device-tree is a symlink to the sysfs copy, absent in chroots. */
static int read_dt(const char *sysroot, const char *name, char **ret_text,
		   size_t *ret_len)
{
	char rel[64];
	int r;

	snprintf(rel, sizeof(rel), "/proc/device-tree/%s", name);
	r = read_under(sysroot, rel, ret_text, ret_len);
	if (r < 0 || *ret_text)
		return r;
	snprintf(rel, sizeof(rel), "/sys/firmware/devicetree/base/%s", name);
	return read_under(sysroot, rel, ret_text, ret_len);
}

/* A DT string list: NUL-separated, NUL-terminated; empty entries dropped. */
static int split_nul_list(const char *text, size_t len, char ***ret)
{
	char **v;
	size_t n = 0, i = 0;

	for (size_t pos = 0; pos < len; pos += strlen(text + pos) + 1)
		if (text[pos])
			n++;
	v = calloc(n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t pos = 0; pos < len; pos += strlen(text + pos) + 1) {
		if (!text[pos])
			continue;
		v[i] = strndup(text + pos, len - pos);
		if (!v[i]) {
			while (i--)
				free(v[i]);
			free(v);
			return -ENOMEM;
		}
		i++;
	}
	*ret = v;
	return 0;
}

/* The first string of a file (DT model, DMI attribute), newline stripped;
 * NULL when the file is missing or the string empty. */
static int first_string(char *text, char **ret)
{
	size_t len;

	if (!text) {
		*ret = NULL;
		return 0;
	}
	len = strlen(text);
	if (len && text[len - 1] == '\n')
		text[--len] = '\0';
	if (!len) {
		*ret = NULL;
		return 0;
	}
	*ret = strdup(text);
	return *ret ? 0 : -ENOMEM;
}

void ion_board_facts_clear(struct ion_board_facts *facts)
{
	if (!facts)
		return;
	for (size_t i = 0; facts->compatible && facts->compatible[i]; i++)
		free(facts->compatible[i]);
	free(facts->compatible);
	free(facts->model);
	free(facts->dmi_vendor);
	free(facts->dmi_product);
	free(facts->dmi_board);
	memset(facts, 0, sizeof(*facts));
}

int ion_board_read(const char *sysroot, struct ion_board_facts *ret)
{
	static const char *const dmi[] = {
		"/sys/class/dmi/id/sys_vendor",
		"/sys/class/dmi/id/product_name",
		"/sys/class/dmi/id/board_name",
	};
	struct ion_board_facts f = { 0 };
	char **dmi_fields[] = { &f.dmi_vendor, &f.dmi_product, &f.dmi_board };
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r;

	if (!ret)
		return -EINVAL;
	if (!sysroot || strcmp(sysroot, "/") == 0)
		sysroot = "";

	r = read_dt(sysroot, "compatible", &text, &len);
	if (r < 0)
		goto fail;
	r = split_nul_list(text ? text : "", text ? len : 0, &f.compatible);
	if (r < 0)
		goto fail;
	free(steal_ptr(&text));

	r = read_dt(sysroot, "model", &text, &len);
	if (r == 0)
		r = first_string(text, &f.model);
	if (r < 0)
		goto fail;
	free(steal_ptr(&text));

	for (size_t i = 0; i < sizeof(dmi) / sizeof(dmi[0]); i++) {
		r = read_under(sysroot, dmi[i], &text, &len);
		if (r == 0)
			r = first_string(text, dmi_fields[i]);
		if (r < 0)
			goto fail;
		free(steal_ptr(&text));
	}
	*ret = f;
	return 0;
fail:
	ion_board_facts_clear(&f);
	return r;
}
