// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the heaps.d parser: any bytes as one board file,
 * then every question discovery will ask of the result, and a round trip
 * through the formatter for every value folded: parse(format(x)) must
 * give back x, or the fuzzer stops.  The same bytes go through the cookie
 * parser too.  Built with -DFUZZ_REPLAY it is a plain program that runs
 * the files (or folders of files) it is given, so every build replays the
 * seed corpus as a test.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/heaps-conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *compatible[] = { "raspberrypi,4-model-b", "brcm,bcm2711", NULL };
static const struct ion_board_facts board = {
	.compatible = compatible,
	.model = "Raspberry Pi 4 Model B Rev 1.4",
	.dmi_vendor = "QEMU",
	.dmi_product = "Standard PC (Q35 + ICH9, 2009)",
	.dmi_board = "board",
};
static const char *const of_compatible[] = { "brcm,bcm2711-hvs", NULL };
static const char *const udev_properties[] = { "ID_PATH=platform-vivid.0", "ION_HEAPS=a b", NULL };
static const struct ion_device_facts device = {
	.syspath = "/sys/devices/platform/vivid.0/video4linux/video0",
	.parent_syspath = "/sys/devices/platform/vivid.0",
	.subsystem = "video4linux",
	.bus = "platform",
	.driver = "vivid",
	.of_compatible = of_compatible,
	.drm_driver = "vc4",
	.v4l2_card = "vivid",
	.udev_properties = udev_properties,
};

static void count_error(void *userdata, const char *file, unsigned int line,
			const char *message)
{
	unsigned int *n = userdata;

	/* The message must be a string: reading it all finds what isn't. */
	if (!file || strlen(message) == SIZE_MAX)
		abort();
	(*n)++;
}

/* A field the formatter printed must parse back to the same text. */
static void check_round_trip(const struct ion_conf_props *props)
{
	for (int k = 0; k < ION_KEY_COUNT; k++) {
		struct ion_conf_props back = { 0 };
		char *s = ion_conf_field_format(k, &props->f[k]), *t;

		if (!s) {
			if (props->f[k].set)
				abort();	/* set, and nothing to say: a bug, or ENOMEM */
			continue;
		}
		if (ion_conf_field_parse(k, s, props->f[k].src, &back.f[k], NULL) < 0)
			abort();
		t = ion_conf_field_format(k, &back.f[k]);
		if (!t || strcmp(s, t) != 0)
			abort();
		free(s);
		free(t);
		ion_conf_props_clear(&back);
	}
}

static void exercise(const struct ion_conf *conf)
{
	struct ion_conf_props props = { 0 };
	struct ion_conf_src src;
	char **names = NULL;
	int n;

	for (size_t i = 0; i < ion_conf_board_count(conf); i++)
		if (!ion_conf_board(conf, i, &src) || !src.file || !src.line)
			abort();
	for (size_t i = 0; i < ion_conf_file_count(conf); i++)
		if (!ion_conf_file(conf, i))
			abort();
	if (ion_conf_cookie_attribute(conf, &src) && !src.file)
		abort();
	for (size_t i = 0; i < ion_conf_heap_count(conf); i++) {
		const char *name = ion_conf_heap_name(conf, i);

		if (ion_conf_apply_heap(conf, name, &props) < 1)
			abort();
		check_round_trip(&props);
		ion_conf_props_clear(&props);
	}
	n = ion_conf_apply_device(conf, &device, &props, &names);
	if (n < 0)
		return;
	check_round_trip(&props);
	ion_conf_props_clear(&props);
	for (int i = 0; i < n; i++) {
		if (ion_conf_apply_device_name(conf, names[i], &props) < 1)
			abort();
		check_round_trip(&props);
		ion_conf_props_clear(&props);
	}
	if (names[n])
		abort();
	free(names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ion_conf_props props = { 0 };
	struct ion_conf *conf = NULL;
	unsigned int n_errors = 0;
	char *text;

	if (ion_conf_load_string("fuzz.conf", (const char *)data, size, &board,
				 count_error, &n_errors, &conf) == 0) {
		if (ion_conf_error_count(conf) != n_errors)
			abort();
		exercise(conf);
		ion_conf_free(conf);
	}

	/* The same bytes as a cookie, which is a C string. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (ion_conf_parse_cookie("cookie", text, count_error, &n_errors, &props) == 0)
		check_round_trip(&props);
	ion_conf_props_clear(&props);
	free(text);
	return 0;
}

#ifdef FUZZ_REPLAY
#include <dirent.h>

static int replay_file(const char *path)
{
	static uint8_t buf[2 * 1024 * 1024];
	FILE *f = fopen(path, "rbe");
	size_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0, count = 0;

	for (int i = 1; i < argc; i++) {
		DIR *dir = opendir(argv[i]);
		struct dirent *de;

		if (!dir) {
			failed |= replay_file(argv[i]);
			count++;
			continue;
		}
		while ((de = readdir(dir))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			failed |= replay_file(path);
			count++;
		}
		closedir(dir);
	}
	printf("%d inputs replayed\n", count);
	return failed || count == 0;
}
#endif
