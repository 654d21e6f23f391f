// SPDX-License-Identifier: MIT
/* fork(): the order of the library's locks and its atfork handlers. */
#include <pthread.h>
#include <stdbool.h>

#include "compat.h"
#include "fork.h"
#include "monitor.h"
#include "pool.h"
#include "registry.h"

/*
 * fork() and the library's locks.  Every context's lock is taken inside a
 * reader's share of fork_lock; fork() waits until no share is out and
 * holds fork_lock's mutex across the fork, so that the child never
 * inherits a lock some other thread held.  (A mutex, a count and a
 * condition rather than a rwlock: the forking thread unlocks it in parent
 * and child alike, which a rwlock does not allow.)
 *
 * One set of handlers, here, orders every lock of the library, outermost
 * first: the compat layer's client table, fork_lock, then the pools' locks
 * (pool.c).  Handlers registered apart by each layer would run in the
 * reverse order of their registration, whatever that happened to be; so
 * this file is the one that knows every layer's fork hooks, and no layer
 * calls another about a fork.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t idle;	/* readers fell to 0, or the fork is done */
	unsigned int readers;
	bool forking;		/* a fork() waits: no new entries */
} fork_lock = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false };
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
/*
 * How deep this thread is inside the library's locks.  A fork() that
 * waits holds back only new outermost entries: a thread already inside
 * (the compat layer's lock held, say, and on its way into discovery) goes
 * on, or the fork would wait for it for ever.  Without the gate, threads
 * that keep entering would starve the fork: glibc's locks are not fair.
 */
static __thread unsigned int depth;

void ion_fork_gate_enter(void)
{
	if (depth++ == 0) {
		pthread_mutex_lock(&fork_lock.lock);
		while (fork_lock.forking)
			pthread_cond_wait(&fork_lock.idle, &fork_lock.lock);
		pthread_mutex_unlock(&fork_lock.lock);
	}
}

void ion_fork_gate_leave(void)
{
	depth--;
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&fork_lock.lock);
	fork_lock.forking = true;
	pthread_mutex_unlock(&fork_lock.lock);
	ion_compat_fork_prepare();
	pthread_mutex_lock(&fork_lock.lock);
	while (fork_lock.readers)
		pthread_cond_wait(&fork_lock.idle, &fork_lock.lock);
	ion_pools_fork_prepare();
}

static void fork_done(void)
{
	fork_lock.forking = false;
	pthread_cond_broadcast(&fork_lock.idle);
	pthread_mutex_unlock(&fork_lock.lock);
	ion_compat_fork_done();
}

static void fork_parent(void)
{
	ion_pools_fork_parent();
	fork_done();
}

/* The child's one thread: no reader is left, and none is inside. */
static void fork_child(void)
{
	ion_pools_fork_child();
	ion_registry_fork_child();
	ion_monitor_fork_child();
	fork_lock.readers = 0;
	depth = 0;
	fork_lock.forking = false;
	/* Its waiters were the parent's threads, which the child has not. */
	pthread_cond_init(&fork_lock.idle, NULL);
	pthread_mutex_unlock(&fork_lock.lock);
	ion_compat_fork_done();
}

static void register_fork_handlers(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void ion_fork_handlers_register(void)
{
	pthread_once(&fork_once, register_fork_handlers);
}

void ion_fork_share_take(void)
{
	pthread_mutex_lock(&fork_lock.lock);
	while (fork_lock.forking && depth == 0)
		pthread_cond_wait(&fork_lock.idle, &fork_lock.lock);
	fork_lock.readers++;
	depth++;
	pthread_mutex_unlock(&fork_lock.lock);
}

void ion_fork_share_give(void)
{
	pthread_mutex_lock(&fork_lock.lock);
	depth--;
	if (--fork_lock.readers == 0)
		pthread_cond_broadcast(&fork_lock.idle);
	pthread_mutex_unlock(&fork_lock.lock);
}
