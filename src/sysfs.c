// SPDX-License-Identifier: MIT
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysfs.h"
#include "util.h"

int ion_sysfs_open_dir(int dirfd, const char *path)
{
	int fd = openat(dirfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? neg_errno() : fd;
}

int ion_sysfs_read_at(int dirfd, const char *name, char **ret, size_t *ret_len)
{
	size_t len;
	int r = ion_read_file_at(dirfd, name, ION_SYSFS_MAX, ret, &len);

	if (r < 0)
		return r == -EBADFD || r == -EISDIR ? -EINVAL : r;
	if (ret_len)
		*ret_len = len;
	if (len && (*ret)[len - 1] == '\n')
		(*ret)[len - 1] = '\0';
	return 0;
}

int ion_sysfs_read_u64_at(int dirfd, const char *name, uint64_t *ret)
{
	_cleanup_free_ char *text = NULL;
	int r = ion_sysfs_read_at(dirfd, name, &text, NULL);

	return r < 0 ? r : ion_parse_u64(text, 10, ret);
}

int ion_sysfs_link_name_at(int dirfd, const char *name, char **ret)
{
	char target[PATH_MAX];
	const char *base;
	ssize_t n;

	n = readlinkat(dirfd, name, target, sizeof(target) - 1);
	if (n < 0)
		return neg_errno();
	target[n] = '\0';
	base = strrchr(target, '/');
	*ret = strdup(base ? base + 1 : target);
	return *ret ? 0 : -ENOMEM;
}

bool ion_sysfs_exists_at(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

char **ion_split_nul_list(const char *text, size_t len)
{
	size_t n = 0, k = 0;
	char **strv;

	for (size_t i = 0; i < len; i++)
		if (text[i] == '\0' || i + 1 == len)
			n++;
	strv = calloc(n + 1, sizeof(*strv));
	if (!strv)
		return NULL;
	for (size_t i = 0; i < len && k < n;) {
		size_t l = strnlen(text + i, len - i);

		if (l && !(strv[k++] = strndup(text + i, l))) {
			ion_strv_free(strv);
			return NULL;
		}
		i += l + 1;
	}
	return strv;
}

void ion_strv_free(char **strv)
{
	for (char **s = strv; s && *s; s++)
		free(*s);
	free(strv);
}
