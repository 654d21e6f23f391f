// SPDX-License-Identifier: MIT
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <grp.h>
#include <pwd.h>
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

/* 0 when sysfs places the char device rdev as wanted (or cannot say),
 * else -ENOTTY with the reason, or -ENOMEM. */
static int check_class(const char *sysroot, dev_t rdev, const char *subsystem,
		       const char *name, const char **ret_why)
{
	_cleanup_free_ char *dir = NULL, *class = NULL, *real = NULL;
	_cleanup_close_ int fd = -1;
	const char *base;
	int r;

	if (asprintf(&dir, "%s/sys/dev/char/%u:%u", sysroot, major(rdev), minor(rdev)) < 0)
		return -ENOMEM;
	fd = ion_sysfs_open_dir(AT_FDCWD, dir);
	if (fd == -ENOMEM || fd == -EMFILE || fd == -ENFILE)
		return fd;
	if (fd < 0)
		return 0; /* no sysfs to ask: the caller's ioctl will tell */
	r = ion_sysfs_link_name_at(fd, "subsystem", &class);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || strcmp(class, subsystem) != 0) {
		*ret_why = "is a device of another class";
		return -ENOTTY;
	}
	if (!name)
		return 0;
	real = realpath(dir, NULL);
	if (!real)
		return errno == ENOMEM ? -ENOMEM : 0;
	base = strrchr(real, '/');
	if (strcmp(base ? base + 1 : real, name) != 0) {
		*ret_why = "is another device of its class";
		return -ENOTTY;
	}
	return 0;
}

int ion_open_device_node(const char *sysroot, const char *path, int flags,
			 const char *subsystem, const char *name,
			 const char **ret_why)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	int r;

	/* Looked at before it is opened: a socket or a folder would answer
	 * the open with an errno that hides what it is. */
	if (stat(path, &st) == 0 && !S_ISCHR(st.st_mode)) {
		*ret_why = "is not a character device";
		return -ENOTTY;
	}
	fd = open(path, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return neg_errno();
	/* ... and again once open: it may have been replaced meanwhile. */
	if (fstat(fd, &st) < 0)
		return neg_errno();
	if (!S_ISCHR(st.st_mode)) {
		*ret_why = "is not a character device";
		return -ENOTTY;
	}
	if (subsystem) {
		r = check_class(sysroot, st.st_rdev, subsystem, name, ret_why);
		if (r < 0)
			return r;
	}
	return steal_fd(&fd);
}

/* Whether this process is in group gid (its own or a supplementary). */
static bool in_group(gid_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups);

	if (getegid() == gid)
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* Whether the group's entry (/etc/group) lists this process's user. */
static bool listed_in(const struct group *gr)
{
	struct passwd pw, *pwp = NULL;
	char buf[4096];

	if (getpwuid_r(geteuid(), &pw, buf, sizeof(buf), &pwp) != 0 || !pwp)
		return false;
	for (char **m = gr->gr_mem; m && *m; m++)
		if (strcmp(*m, pwp->pw_name) == 0)
			return true;
	return false;
}

/* Whether the node's group may use it at all (no: the rule is not there). */
static bool group_may(const struct stat *st)
{
	return st->st_gid != 0 && (st->st_mode & 060) == 060;
}

/* What would let this user in through the node's group. */
static const char *group_advice(const struct stat *st, bool listed)
{
	if (!group_may(st))
		return "";
	if (in_group(st->st_gid))
		return ": this process is in that group, so something else refuses it "
		       "(an ACL, a security module, a sandbox)";
	if (listed)
		return ": the user is in that group, but this session is not yet: log in again";
	return ": add the user to that group";
}

char *ion_access_hint(const char *path)
{
	char user[64], group[64], *hint;
	struct passwd pw, *pwp = NULL;
	struct group gr, *grp = NULL;
	char buf[4096];
	const char *kind = strstr(path, "/dma_heap/") ? "DMA-BUF heaps"
			   : strstr(path, "/dri/") ? "DRM nodes"
			   : strstr(path, "udmabuf") ? "/dev/udmabuf"
			   : strstr(path, "/ion") ? "/dev/ion" : NULL;
	struct stat st;
	int r;

	if (stat(path, &st) < 0)
		return NULL;
	if (getpwuid_r(st.st_uid, &pw, buf, sizeof(buf), &pwp) == 0 && pwp)
		snprintf(user, sizeof(user), "%s", pwp->pw_name);
	else
		snprintf(user, sizeof(user), "%u", (unsigned int)st.st_uid);
	if (getgrgid_r(st.st_gid, &gr, buf, sizeof(buf), &grp) == 0 && grp)
		snprintf(group, sizeof(group), "%s", grp->gr_name);
	else
		snprintf(group, sizeof(group), "%u", (unsigned int)st.st_gid);
	if (kind && !group_may(&st))
		r = asprintf(&hint, "%s is %s:%s %04o; libion's udev rule (70-libion.rules) gives %s "
			     "to group video (0660), and it was not applied here: install it where "
			     "udev reads rules (/etc/udev/rules.d) and run udevadm trigger",
			     path, user, group, (unsigned int)(st.st_mode & 07777), kind);
	else
		r = asprintf(&hint, "%s is %s:%s %04o%s", path, user, group,
			     (unsigned int)(st.st_mode & 07777),
			     group_advice(&st, grp && listed_in(grp)));
	return r < 0 ? NULL : hint;
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
