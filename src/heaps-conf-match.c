// SPDX-License-Identifier: MIT
/*
 * heaps.d's section logic once the files are read: whether a [Board] or a
 * [Device] section's Match keys all match (the values of one repeated
 * key being alternatives), and the folding of the sections that apply,
 * in read order, into one value per key ("=" replaces, "+=" appends,
 * "Key =" clears, each remembering the line that changed it).
 */
#include <fnmatch.h>
#include <limits.h>
#include <string.h>

#include "heaps-conf-internal.h"
#include "util.h"

/* ---- matching ---- */

static bool glob_matches(const char *pattern, const char *s)
{
	return s && fnmatch(pattern, s, 0) == 0;
}

static bool glob_matches_any(const char *pattern, const char *const *v)
{
	for (size_t i = 0; v && v[i]; i++)
		if (glob_matches(pattern, v[i]))
			return true;
	return false;
}

static bool udev_property_matches(const char *match, const char *const *props)
{
	size_t key_len = strcspn(match, "=");

	for (size_t i = 0; props && props[i]; i++)
		if (strncmp(props[i], match, key_len) == 0 && props[i][key_len] == '=' &&
		    glob_matches(match + key_len + 1, props[i] + key_len + 1))
			return true;
	return false;
}

static bool board_entry_matches(const struct conf_entry *e, const void *facts)
{
	const struct ion_board_facts *b = facts;
	const char *glob = e->value.v.s;

	if (!b)
		return false;
	switch (e->key) {
	case ION_KEY_MATCH_COMPATIBLE:
		return glob_matches_any(glob, (const char *const *)b->compatible);
	case ION_KEY_MATCH_MODEL:
		return glob_matches(glob, b->model);
	case ION_KEY_MATCH_DMI_VENDOR:
		return glob_matches(glob, b->dmi_vendor);
	case ION_KEY_MATCH_DMI_PRODUCT:
		return glob_matches(glob, b->dmi_product);
	case ION_KEY_MATCH_DMI_BOARD:
		return glob_matches(glob, b->dmi_board);
	default:
		return false;
	}
}

static bool device_entry_matches(const struct conf_entry *e, const void *facts)
{
	const struct ion_device_facts *d = facts;
	const char *glob = e->value.v.s;

	switch (e->key) {
	case ION_KEY_MATCH_SYSFS_PATH:
		return glob_matches(glob, d->syspath) || glob_matches(glob, d->parent_syspath);
	case ION_KEY_MATCH_SUBSYSTEM:
		return glob_matches(glob, d->subsystem) || glob_matches(glob, d->bus);
	case ION_KEY_MATCH_DRIVER:
		return glob_matches(glob, d->driver);
	case ION_KEY_MATCH_OF_COMPATIBLE:
		return glob_matches_any(glob, d->of_compatible);
	case ION_KEY_MATCH_UDEV_PROPERTY:
		return udev_property_matches(glob, d->udev_properties);
	case ION_KEY_MATCH_DRM_DRIVER:
		return glob_matches(glob, d->drm_driver);
	case ION_KEY_MATCH_V4L2_CARD:
		return glob_matches(glob, d->v4l2_card);
	case ION_KEY_MATCH_NAME:
		return glob_matches(glob, d->name);
	default:
		return false;
	}
}

/*
 * Different Match keys must all match; the values of one repeated key
 * are alternatives.  A section without Match keys matches nothing here.
 */
static bool section_matches(const struct conf_section *sec,
			    bool (*entry_matches)(const struct conf_entry *, const void *),
			    const void *facts)
{
	bool present[ION_KEY_COUNT] = { false }, matched[ION_KEY_COUNT] = { false };

	for (size_t i = 0; i < sec->n_entries; i++) {
		const struct conf_entry *e = &sec->entries[i];

		if (!ion_conf_key_is_match(e->key))
			continue;
		present[e->key] = true;
		if (!matched[e->key] && entry_matches(e, facts))
			matched[e->key] = true;
	}
	for (int k = 0; k < ION_KEY_COUNT; k++)
		if (present[k] && !matched[k])
			return false;
	return sec->has_match;
}

bool conf_board_matches(const struct conf_section *sec,
			const struct ion_board_facts *board)
{
	return section_matches(sec, board_entry_matches, board);
}

bool conf_device_matches(const struct conf_section *sec,
			 const struct ion_device_facts *facts)
{
	return section_matches(sec, device_entry_matches, facts);
}


/* ---- folding ---- */

int conf_field_apply(struct ion_conf_field *f, const struct conf_entry *e)
{
	struct ion_conf_field c;
	int r;

	if (e->op == OP_CLEAR) {
		ion_conf_field_clear(e->key, f);
		f->src = e->value.src;	/* explain says who cleared it */
		return 0;
	}
	if (e->op == OP_APPEND && f->set) {
		r = ion_conf_field_append(e->key, f, &e->value);
		if (r < 0)
			return r;
		f->src = e->value.src;
		return 0;
	}
	r = ion_conf_field_copy(e->key, &c, &e->value);
	if (r < 0)
		return r;
	ion_conf_field_clear(e->key, f);
	*f = c;
	return 0;
}


/*
 * Folds the picked sections, in read order, into a copy of *props and
 * swaps it in at the end, so a failure leaves *props as it was.
 */
int conf_fold(const struct conf_section *const *sections, size_t n_sections,
	      section_pick_fn pick, const void *arg, struct ion_conf_props *props,
	      char ***ret_names)
{
	_cleanup_free_ const struct conf_section **picked = NULL;
	struct ion_conf_props c;
	size_t name_bytes = 0, count = 0;

	/* Who matched, once: a device's match runs fnmatch() per glob. */
	picked = malloc((n_sections ? n_sections : 1) * sizeof(*picked));
	if (!picked || ion_conf_props_copy(&c, props) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n_sections; i++) {
		const struct conf_section *sec = sections[i];

		if (!pick(sec, arg))
			continue;
		for (size_t j = 0; j < sec->n_entries; j++) {
			const struct conf_entry *e = &sec->entries[j];

			if (ion_conf_key_is_match(e->key))
				continue;
			if (conf_field_apply(&c.f[e->key], e) < 0) {
				ion_conf_props_clear(&c);
				return -ENOMEM;
			}
		}
		if (ret_names)
			name_bytes += strlen(sec->name) + 1;
		picked[count++] = sec;
	}
	if (ret_names) {
		/* One block, the strings after the pointers: one free(). */
		char **names = malloc((count + 1) * sizeof(char *) + name_bytes);
		char *s;

		if (!names) {
			ion_conf_props_clear(&c);
			return -ENOMEM;
		}
		s = (char *)(names + count + 1);
		for (size_t k = 0; k < count; k++) {
			names[k] = s;
			s = stpcpy(s, picked[k]->name) + 1;
		}
		names[count] = NULL;
		*ret_names = names;
	}
	ion_conf_props_clear(props);
	*props = c;
	return count > INT_MAX ? INT_MAX : (int)count;
}

