// SPDX-License-Identifier: MIT
/*
 * test-wayland: examples/wayland-dmabuf.c against a real compositor, in
 * the test VM: weston 10's DRM backend on vkms (card1) with its GL
 * renderer (Mesa's kms_swrast: llvmpipe over vkms's dumb buffers) and
 * the desktop shell, started here and stopped here.
 *
 *  1. The sample with no device named: weston 10 offers linux-dmabuf
 *     version 4 (feedback, main device) only when its EGL device is a DRM
 *     device; on kms_swrast it is Mesa's software device, so weston offers
 *     version 3 and the sample must skip (77) saying so; a compositor that
 *     offers version 4 must be answered with a frame (0).
 *  2. The sample with -d card1 (the device weston drives): the compositor
 *     must accept the dma-buf (zwp_linux_buffer_params_v1.created, no
 *     protocol error), show it (a frame callback) and stay alive; the
 *     heap must be the one --expect-heap names.
 *  3. While the sample keeps its window up, the CRTC's framebuffer
 *     (drmModeGetCrtc, drmModeGetFB2, exported with drmPrimeHandleToFD)
 *     is compared with the client's dma-buf by inode: the same inode is
 *     the client's buffer scanned out as it is; another is weston's GL
 *     composition.  Printed, not required (--expect-scanout requires it).
 *
 *   test-wayland [--expect-heap NAME] [--expect-scanout] WESTON SAMPLE
 *
 * The sample's environment carries ION_HEAPS_PATH from ours: the VM gives
 * it tests/vm/heaps.d-wayland (why card1 takes its own buffers here).
 * Exit status: 0 when every check holds, 1 otherwise, 77 outside the VM.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xf86drm.h>
#include <xf86drmMode.h>

#define RUNTIME_DIR "/tmp/wayland-runtime"
#define SOCKET "wayland-libion"
#define CARD "/dev/dri/card1"
#define LOG "/tmp/weston.log"

static int failures;
static int weston_status = -1; /* once reaped */

/* Whether weston has ended (then reaped, its status kept). */
static bool weston_ended(pid_t weston)
{
	if (weston_status == -1 && waitpid(weston, &weston_status, WNOHANG) != weston)
		weston_status = -1;
	return weston_status != -1;
}

static void check(bool ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		failures++;
}

static pid_t start_weston(const char *weston)
{
	static const char ini[] = "[core]\nrequire-input=false\nshell=desktop-shell.so\n"
				  "idle-time=0\n[shell]\npanel-position=none\n"
				  "startup-animation=none\n";
	FILE *f = fopen("/tmp/weston.ini", "we");
	pid_t pid;

	if (!f)
		return -1;
	fputs(ini, f);
	fclose(f);
	pid = fork();
	if (pid == 0) {
		/* No VM keyboard: xkbcommon only needs a folder that exists.
		 * No logind either: weston's direct launcher, as root, wants a
		 * VT (the VM's kernel has CONFIG_VT, /dev/tty0 exists), and
		 * our stdin is the serial console: --tty names one. */
		setenv("XKB_CONFIG_ROOT", "/tmp", 1);
		execl(weston, weston, "--config=/tmp/weston.ini", "--backend=drm-backend.so",
		      "--drm-device=card1", "--tty=2", "--socket=" SOCKET, "--log=" LOG,
		      "--logger-scopes=log,drm-backend", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The socket, within 120 s (the GL renderer's start is slow under TCG). */
static bool wait_socket(pid_t weston)
{
	struct stat st;

	for (int i = 0; i < 1200; i++) {
		if (stat(RUNTIME_DIR "/" SOCKET, &st) == 0)
			return true;
		if (weston_ended(weston))
			return false;
		usleep(100000);
	}
	return false;
}

/* The inode of the dma-buf behind the CRTC's framebuffer, or 0. */
static unsigned long crtc_fb_inode(void)
{
	int card = open(CARD, O_RDWR | O_CLOEXEC);
	drmModeRes *res = card >= 0 ? drmModeGetResources(card) : NULL;
	unsigned long ino = 0;

	for (int i = 0; res && i < res->count_crtcs && !ino; i++) {
		drmModeCrtc *crtc = drmModeGetCrtc(card, res->crtcs[i]);
		drmModeFB2 *fb = crtc && crtc->buffer_id ? drmModeGetFB2(card, crtc->buffer_id) : NULL;
		struct stat st;
		int fd;

		if (fb && fb->handles[0] &&
		    drmPrimeHandleToFD(card, fb->handles[0], DRM_CLOEXEC, &fd) == 0) {
			if (fstat(fd, &st) == 0)
				ino = (unsigned long)st.st_ino;
			close(fd);
		}
		if (fb && fb->handles[0])
			drmCloseBufferHandle(card, fb->handles[0]);
		drmModeFreeFB2(fb);
		drmModeFreeCrtc(crtc);
	}
	drmModeFreeResources(res);
	if (card >= 0)
		close(card);
	return ino;
}

/* Runs the sample, echoing its output; *out gets it, *fb_ino the CRTC's
 * framebuffer's inode read once it said "frame shown".  Its exit status. */
static int run_sample(const char *sample, const char *device, char *out, size_t len,
		      unsigned long *fb_ino)
{
	int p[2], status;
	size_t used = 0;
	pid_t pid;
	FILE *f;
	char line[512];

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		setenv("WAYLAND_DISPLAY", SOCKET, 1);
		if (device)
			execl(sample, sample, "-d", device, "-t", "3", (char *)NULL);
		else
			execl(sample, sample, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		printf("  sample: %s", line);
		if (used + strlen(line) < len) {
			strcpy(out + used, line);
			used += strlen(line);
		}
		if (strcmp(line, "frame shown\n") == 0 && fb_ino) {
			usleep(1500000); /* a repaint or two after the frame */
			*fb_ino = crtc_fb_inode();
		}
	}
	if (f)
		fclose(f);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "expect-heap", required_argument, NULL, 'h' },
		{ "expect-scanout", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *expect_heap = NULL;
	bool expect_scanout = false;
	unsigned long client_ino = 0, fb_ino = 0;
	char out[4096] = "", want[128];
	const char *at;
	pid_t weston;
	int opt, r, status;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1)
		if (opt == 'h')
			expect_heap = optarg;
		else if (opt == 's')
			expect_scanout = true;
		else
			return 1;
	if (argc - optind != 2) {
		fprintf(stderr, "usage: test-wayland [--expect-heap NAME] [--expect-scanout] "
				"WESTON SAMPLE\n");
		return 1;
	}
	if (!getenv("LIBION_IN_VM")) {
		printf("test-wayland: runs only in the test VM (it drives card1)\n");
		return 77;
	}
	mkdir(RUNTIME_DIR, 0700);
	setenv("XDG_RUNTIME_DIR", RUNTIME_DIR, 1);
	weston = start_weston(argv[optind]);
	check(weston > 0 && wait_socket(weston), "weston (DRM backend on card1, GL renderer) is up");
	if (failures)
		goto out;

	r = run_sample(argv[optind + 1], NULL, out, sizeof(out), NULL);
	if (strstr(out, "linux-dmabuf v4"))
		check(r == 0, "linux-dmabuf v4: the sample showed a frame on the main device");
	else
		check(r == 77, "no linux-dmabuf v4 (weston 10 on kms_swrast): the sample skipped");

	out[0] = '\0';
	r = run_sample(argv[optind + 1], "card1", out, sizeof(out), &fb_ino);
	check(r == 0, "-d card1: the sample exited 0");
	check(strstr(out, "wl_buffer created") != NULL, "weston created a wl_buffer from the dma-buf");
	check(strstr(out, "frame shown\n") != NULL, "a frame callback came");
	if (expect_heap) {
		snprintf(want, sizeof(want), "from heap %s for card1", expect_heap);
		check(strstr(out, want) != NULL, want);
	}
	at = strstr(out, "dma-buf inode ");
	if (at)
		client_ino = strtoul(at + strlen("dma-buf inode "), NULL, 10);
	if (client_ino && fb_ino == client_ino)
		printf("scanout: the CRTC shows the client's dma-buf itself (inode %lu): no copy\n",
		       fb_ino);
	else
		printf("scanout: the CRTC shows another buffer (inode %lu, the client's %lu): "
		       "weston composited the client's buffer with GL\n", fb_ino, client_ino);
	if (expect_scanout)
		check(client_ino && fb_ino == client_ino, "the client's buffer was scanned out");
	check(!weston_ended(weston), "weston is still running");

out:
	if (weston > 0) {
		if (!weston_ended(weston)) {
			kill(weston, SIGTERM);
			waitpid(weston, &weston_status, 0);
		}
		status = weston_status;
		check(!WIFSIGNALED(status) || WTERMSIG(status) == SIGTERM, "weston ended without a crash");
	}
	if (failures) { /* weston's log, for the reason */
		FILE *f = fopen(LOG, "re");
		char line[512];

		while (f && fgets(line, sizeof(line), f))
			if (line[0] == '[' && !strstr(line, "GL_"))
				printf("  weston: %s", line);
		if (f)
			fclose(f);
	}
	printf("test-wayland: %d failure(s)\n", failures);
	return failures ? 1 : 0;
}
