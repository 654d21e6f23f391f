// SPDX-License-Identifier: MIT
//
// Preloaded into the tests of a cross build that run under qemu-user
// (tests/meson.build does it through QEMU_SET_ENV): qemu-user answers an
// ioctl it has no translation for with ENOSYS without asking the kernel,
// where the kernel answers an ioctl a file does not know with ENOTTY.
// qemu 7.2 translates none of the dma-buf ioctls, so DMA_BUF_IOCTL_SYNC
// on a memfd (which the library tries first, as Android's callers expect
// from the kernel) would come back ENOSYS and ion_sync() would fail on the
// only heap a host has.  This turns qemu's ENOSYS back into the kernel's
// ENOTTY, or, for an fd that is not open, EBADF, which the kernel checks
// first.  On the host no fd of the tests is a dma-buf, so no ioctl the
// kernel would have served is lost; dma-bufs are tested in the VMs.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdarg.h>
#include <sys/ioctl.h>

int ioctl(int fd, unsigned long request, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;
	int r;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	r = real(fd, request, arg);
	if (r < 0 && errno == ENOSYS) {
		/* The syscall itself: a test's wrappers of libc's fcntl() (the
		 * fault shim) must not see this one. */
#ifdef SYS_fcntl64
		long open = syscall(SYS_fcntl64, fd, F_GETFD);
#else
		long open = syscall(SYS_fcntl, fd, F_GETFD);
#endif
		errno = open < 0 && errno == EBADF ? EBADF : ENOTTY;
	}
	return r;
}
