/* SPDX-License-Identifier: MIT */
/*
 * heaps.d: what the board files say, with file:line for every value, and
 * nothing else.  The parser neither reads sysfs nor knows the registry:
 * discovery hands it the board's identity (struct ion_board_facts), and
 * later asks what applies to a heap name or to a device's facts.
 *
 * The format is specified in heaps.d/README.md.  In short: INI-like
 * sections ([Board NAME], [Heap NAME], [Device NAME]); "Key = value" sets,
 * "Key += value" extends a list, "Key =" clears; files are read in version
 * order of their names across layered folders, where a same-named file in
 * a higher folder masks the lower one; later settings win.
 */
#ifndef LIBION_HEAPS_CONF_H
#define LIBION_HEAPS_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vocabulary.h"


/* The board's identity as discovery read it (board.c); NULL members and
 * an empty compatible list mean "not known". */
struct ion_board_facts {
	char **compatible;	/* NULL-terminated, from /proc/device-tree */
	char *model;
	char *dmi_vendor;
	char *dmi_product;
	char *dmi_board;
};

/*
 * board.c: reads the board's identity under sysroot ("" for "/"):
 * /proc/device-tree/{compatible,model} (else /sys/firmware/devicetree/base)
 * and /sys/class/dmi/id/{sys_vendor,product_name,board_name}.  Missing
 * files are no error.  0, or -ENOMEM and the transient -EMFILE, -ENFILE,
 * -EINTR; *ret is written only on success.
 */
int ion_board_read(const char *sysroot, struct ion_board_facts *ret);
void ion_board_facts_clear(struct ion_board_facts *facts);

/* The machine's memory, as far as files tell (0: not known). */
struct ion_board_memory {
	uint64_t end;		/* where it ends: DT memory nodes, x86's memmap,
				 * or memory hotplug's blocks */
	uint64_t total;		/* /proc/meminfo MemTotal */
	uint64_t cma_total;	/* /proc/meminfo CmaTotal */
};

/* What a device section is matched against (device.c fills it). */
struct ion_device_facts {
	const char *syspath;		/* e.g. /sys/devices/platform/vivid.0/video4linux/video0 */
	const char *parent_syspath;	/* the bus device that does DMA, or NULL */
	const char *subsystem;		/* "video4linux", "drm", ... */
	const char *bus;		/* the parent's subsystem: "platform", "pci" */
	const char *driver;		/* the parent's driver */
	const char *const *of_compatible; /* NULL-terminated, or NULL */
	const char *drm_driver;
	const char *v4l2_card;
	const char *name;		/* the class device's "name" attribute */
	const char *const *udev_properties; /* "KEY=VALUE", NULL-terminated, or NULL */
};

/* Reports one problem: "file:line: message" (line 0: the file as a whole). */
typedef void (*ion_conf_error_fn)(void *userdata, const char *file,
				  unsigned int line, const char *message);

/* What the device tree says that cannot be (a reg range past 2^64 or of
 * size 0, a value wider than 64 bits) is ignored and said through log_fn
 * (may be NULL; the property's path, line 0).  0, or the transient
 * -ENOMEM, -EMFILE, -ENFILE, -EINTR. */
int ion_board_read_memory(const char *sysroot, ion_conf_error_fn log_fn, void *userdata,
			  struct ion_board_memory *ret);

struct ion_conf;

/*
 * Reads every *.conf of the folders in paths (highest priority first; an
 * entry may also name a single file), masks same-named files of lower
 * folders, parses them in version order of their names, and keeps the
 * sections that apply to this board.  Problems in the files are reported
 * through error_fn and skip only what is broken.  Returns 0, or a negative
 * errno for what the files cannot cause: -ENOMEM, and the transient
 * -EMFILE, -ENFILE, -EINTR (discovery fails then and runs again later).
 */
int ion_conf_load(const char *const *paths, size_t n_paths,
		  const struct ion_board_facts *board, ion_conf_error_fn error_fn,
		  void *userdata, struct ion_conf **ret_conf);
/* The same for one file's text in memory (tests, the fuzzer). */
int ion_conf_load_string(const char *name, const char *text, size_t len,
			 const struct ion_board_facts *board,
			 ion_conf_error_fn error_fn, void *userdata,
			 struct ion_conf **ret_conf);
void ion_conf_free(struct ion_conf *conf);

/* How many problems loading reported. */
unsigned int ion_conf_error_count(const struct ion_conf *conf);
/* The i-th problem: its file, line (0: the whole file) and words, which
 * the conf owns; 0, -ENOENT past the last, or -ENOMEM for one there was
 * no memory to keep (it was still counted and reported). */
int ion_conf_error(const struct ion_conf *conf, size_t i, const char **ret_file,
		   unsigned int *ret_line, const char **ret_message);

/* The board sections that matched, in file order: name and where. */
size_t ion_conf_board_count(const struct ion_conf *conf);
const char *ion_conf_board(const struct ion_conf *conf, size_t i,
			   struct ion_conf_src *ret_src);

/* The files read, in the order they were read. */
size_t ion_conf_file_count(const struct ion_conf *conf);
const char *ion_conf_file(const struct ion_conf *conf, size_t i);

/* The [Heap] names that apply, in first-appearance order. */
size_t ion_conf_heap_count(const struct ion_conf *conf);
const char *ion_conf_heap_name(const struct ion_conf *conf, size_t i);

/*
 * Folds every applicable [Heap name] section into *props (which the
 * caller cleared); returns how many sections applied, or -ENOMEM.
 */
int ion_conf_apply_heap(const struct ion_conf *conf, const char *name,
			struct ion_conf_props *props);
/*
 * Folds every applicable [Device] section whose Match keys all match the
 * facts (sections without Match keys never match facts) into *props;
 * returns how many applied, or -ENOMEM.  ret_names (may be NULL) gets
 * the names of the sections that applied, NULL-terminated, in one
 * malloc'ed block with the strings: free() it alone.  On failure *props
 * and *ret_names are left as they were (the same for every apply call).
 */
int ion_conf_apply_device(const struct ion_conf *conf,
			  const struct ion_device_facts *facts,
			  struct ion_conf_props *props, char ***ret_names);
/* The same for every applicable [Device name] section, with or without
 * Match keys (a device made from its heaps.d name); -ENOENT when no
 * section has that name. */
int ion_conf_apply_device_name(const struct ion_conf *conf, const char *name,
			       struct ion_conf_props *props);
/* The CookieAttribute of the matched board, or NULL. */
const char *ion_conf_cookie_attribute(const struct ion_conf *conf,
				      struct ion_conf_src *ret_src);

/*
 * A sysfs cookie's text: "Key = value" lines of [Device] requirement
 * keys, as in a device section.  Folds them into *props with src (file:
 * path itself, so the caller keeps path alive as long as props); 0,
 * -EINVAL (reported through error_fn, nothing applied) or -ENOMEM.
 */
int ion_conf_parse_cookie(const char *path, const char *text,
			  ion_conf_error_fn error_fn, void *userdata,
			  struct ion_conf_props *props);

#endif
