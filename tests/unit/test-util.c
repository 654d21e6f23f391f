// SPDX-License-Identifier: MIT
/* The strict parsers and small helpers of src/util.c. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/backends/backend.h"
#include "src/solver.h"

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

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_u64),
		cmocka_unit_test(test_round_len),
		cmocka_unit_test(test_fd_kind),
	};

	return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
