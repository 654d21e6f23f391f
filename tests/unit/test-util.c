// SPDX-License-Identifier: MIT
/* The strict parsers and small helpers of src/util.c. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/backends/backend.h"
#include "src/solver.h"
#include "src/sysfs.h"

static void test_parse_size(void **state)
{
	uint64_t v = 99;

	(void)state;
	assert_int_equal(ion_parse_size("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(ion_parse_size("4K", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(ion_parse_size("2m", &v), 0);
	assert_int_equal(v, 2 << 20);
	assert_int_equal(ion_parse_size("1G", &v), 0);
	assert_int_equal(v, 1 << 30);
	v = 99;
	assert_int_equal(ion_parse_size("", &v), -EINVAL);
	assert_int_equal(ion_parse_size("-1", &v), -EINVAL);
	assert_int_equal(ion_parse_size(" 1", &v), -EINVAL);
	assert_int_equal(ion_parse_size("1KB", &v), -EINVAL);
	assert_int_equal(ion_parse_size("1T", &v), -EINVAL);
	assert_int_equal(ion_parse_size("0x10", &v), -EINVAL);
	assert_int_equal(ion_parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(ion_parse_size("17179869184G", &v), -ERANGE);
	assert_int_equal(ion_parse_size(NULL, &v), -EINVAL);
	assert_int_equal(v, 99);
}

static void test_parse_u64(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(ion_parse_u64("18446744073709551615", 10, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(ion_parse_u64("ff", 16, &v), 0);
	assert_int_equal(v, 255);
	v = 7;
	assert_int_equal(ion_parse_u64("12abc", 10, &v), -EINVAL);
	assert_int_equal(ion_parse_u64("+5", 10, &v), -EINVAL);
	assert_int_equal(v, 7);
}

static void test_round_len(void **state)
{
	size_t len = 1, page = ion_page_size();

	(void)state;
	assert_int_equal(ion_round_len(1, &len), 0);
	assert_int_equal(len, page);
	assert_int_equal(ion_round_len(page, &len), 0);
	assert_int_equal(len, page);
	assert_int_equal(ion_round_len(page + 1, &len), 0);
	assert_int_equal(len, 2 * page);
	len = 3;
	assert_int_equal(ion_round_len(0, &len), -EINVAL);
	assert_int_equal(ion_round_len(SIZE_MAX, &len), -EINVAL);
	assert_int_equal(ion_round_len(SIZE_MAX - page + 2, &len), -EINVAL);
	assert_int_equal(len, 3);
	assert_int_equal(ion_round_len(SIZE_MAX - page + 1, &len), 0);
}

/* memfds are buffers; tmpfs files, directories and devices are not. */
static void test_fd_kind(void **state)
{
	int memfd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	int plain = memfd_create("t", MFD_CLOEXEC);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int dir = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char path[] = "/dev/shm/libion-test-XXXXXX";
	int shm = mkostemp(path, O_CLOEXEC);

	(void)state;
	assert_int_equal(ion_fd_kind(memfd), ION_FD_MEMFD);
	assert_int_equal(ion_fd_kind(plain), ION_FD_MEMFD);
	assert_int_equal(ion_fd_kind(devnull), ION_FD_OTHER);
	assert_int_equal(ion_fd_kind(dir), ION_FD_OTHER);
	if (shm >= 0) {
		/* tmpfs like a memfd, and even sealable: still no memfd. */
		unlink(path);
		assert_int_equal(ion_fd_kind(shm), ION_FD_OTHER);
		close(shm);
	}
	assert_int_equal(ion_fd_kind(-1), -EBADF);
	close(memfd);
	close(plain);
	close(devnull);
	close(dir);
}

/*
 * The permission hint says what is really wrong: the rule not applied (a
 * root:root 0600 heap), a group the user is not in (video or a vendor's),
 * or, the process being in the group, something else.  Ownership needs
 * root, which CI has; elsewhere the test skips.
 */
static void test_access_hint(void **state)
{
	char dir[] = "/tmp/libion-hint-XXXXXX", heap[64], *hint;
	gid_t other = getegid() == 4242 ? 4243 : 4242;
	int fd, status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(heap, sizeof(heap), "%s/dma_heap", dir);
	assert_int_equal(mkdir(heap, 0755), 0);
	snprintf(heap, sizeof(heap), "%s/dma_heap/system", dir);
	fd = open(heap, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chown(heap, 0, 0), 0);
	hint = ion_access_hint(heap);
	assert_non_null(strstr(hint, "system is root:root 0600; libion's udev rule (70-libion.rules) "
				     "gives DMA-BUF heaps to group video (0660), and it was not applied"));
	free(hint);
	assert_int_equal(chown(heap, 0, other), 0);
	assert_int_equal(chmod(heap, 0660), 0);
	hint = ion_access_hint(heap);
	assert_non_null(strstr(hint, " 0660: add the user to that group"));
	free(hint);
	/* A child that is in the group: then something else refuses it. */
	pid = fork();
	if (pid == 0) {
		hint = setgroups(1, &other) == 0 ? ion_access_hint(heap) : NULL;
		_exit(hint && strstr(hint, ": this process is in that group, so something "
					   "else refuses it") ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_null(ion_access_hint("/nonexistent/dma_heap/system"));
	assert_int_equal(unlink(heap), 0);
	snprintf(heap, sizeof(heap), "%s/dma_heap", dir);
	assert_int_equal(rmdir(heap), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_round_len),
		cmocka_unit_test(test_fd_kind),
		cmocka_unit_test(test_access_hint),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
