/* SPDX-License-Identifier: MIT */
/*
 * The psync backend: pread(2)/pwrite(2) at queue depth 1, for kernels or sandboxes without
 * io_uring. Timing a single blocking pread is the classic method of disk benchmarks (bonnie++,
 * fio's psync engine): submit_ns and complete_ns bracket exactly one system call.
 *
 * The call is made on a reader thread, never on the caller's: a read from a device that stalls
 * sleeps uninterruptibly in the kernel, and the thread that made it can neither run a signal
 * handler nor write a partial profile until the device answers. The caller hands a slot over and
 * waits on a condition variable in slices of e->wait_ns, so that it sees its stop flag in time
 * whatever the device does. The reader thread blocks every signal (they go to the caller).
 * The hand-over costs two thread wake-ups per I/O (microseconds): nothing beside a disk's
 * milliseconds, but a fast SSD read through psync shows it as fewer IOPS than io_uring.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "engine_priv.h"
#include "util.h"

struct psync {
	int fd;
	pthread_t thread;
	bool thread_ok, mutex_ok, work_ok, done_ok;
	pthread_mutex_t mu;
	pthread_cond_t work_cv; /* todo became non-empty, or quit */
	pthread_cond_t done_cv; /* done became non-empty */
	bool quit;
	/* FIFOs of capacity qd, under mu */
	struct dg_slot **todo;
	unsigned todo_head, todo_count;
	struct dg_slot **done;
	unsigned head, count;
	/* per slot, written by the reader thread under mu, copied into the slot by reap */
	uint64_t *start_ns, *end_ns;
	int64_t *result;
};

static uint64_t psync_now_ns(struct dg_engine *e)
{
	(void)e;
	return dg_monotonic_ns();
}

/* One pread/pwrite, retried when interrupted before any byte moved. A short transfer is returned
 * as it is (at the end of the device it is the truth). */
static int64_t do_io(int fd, struct dg_slot *s)
{
	ssize_t r;

	do {
		if (s->io.op == DG_IO_WRITE)
			r = pwrite(fd, s->buf, s->io.length_bytes, (off_t)s->io.offset_bytes);
		else
			r = pread(fd, s->buf, s->io.length_bytes, (off_t)s->io.offset_bytes);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -(int64_t)errno : (int64_t)r;
}

static void *reader(void *arg)
{
	struct dg_engine *e = arg;
	struct psync *p = e->priv;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->todo_count == 0 && !p->quit)
			pthread_cond_wait(&p->work_cv, &p->mu);
		if (p->todo_count == 0)
			break; /* quit with nothing left to do */
		struct dg_slot *s = p->todo[p->todo_head];
		p->todo_head = (p->todo_head + 1) % e->qd;
		p->todo_count--;
		pthread_mutex_unlock(&p->mu);

		uint64_t t0 = psync_now_ns(e);
		int64_t r = do_io(p->fd, s);
		uint64_t t1 = psync_now_ns(e);

		pthread_mutex_lock(&p->mu);
		p->start_ns[s->index] = t0;
		p->end_ns[s->index] = t1;
		p->result[s->index] = r;
		p->done[(p->head + p->count++) % e->qd] = s;
		pthread_cond_signal(&p->done_cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static int psync_init(struct dg_engine *e, char *err, size_t errlen)
{
	struct psync *p = calloc(1, sizeof(*p));
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	(void)err;
	(void)errlen;
	if (!p)
		return -ENOMEM;
	e->priv = p;
	p->fd = dg_device_fd(e->dev);
	p->todo = calloc(e->qd, sizeof(*p->todo));
	p->done = calloc(e->qd, sizeof(*p->done));
	p->start_ns = calloc(e->qd, sizeof(*p->start_ns));
	p->end_ns = calloc(e->qd, sizeof(*p->end_ns));
	p->result = calloc(e->qd, sizeof(*p->result));
	if (!p->todo || !p->done || !p->start_ns || !p->end_ns || !p->result)
		return -ENOMEM;
	if ((rc = pthread_mutex_init(&p->mu, NULL)))
		return -rc;
	p->mutex_ok = true;
	if ((rc = pthread_cond_init(&p->work_cv, NULL)))
		return -rc;
	p->work_ok = true;
	/* timed waits on CLOCK_MONOTONIC: a change of the wall clock must not stretch them */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&p->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc)
		return -rc;
	p->done_ok = true;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&p->thread, NULL, reader, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	p->thread_ok = true;
	return 0;
}

static int psync_submit(struct dg_engine *e, struct dg_slot **slots, unsigned n)
{
	struct psync *p = e->priv;
	uint64_t now = psync_now_ns(e);

	pthread_mutex_lock(&p->mu);
	for (unsigned i = 0; i < n; i++) {
		/* the hand-over time; reap replaces it with the time of the system call */
		slots[i]->submit_ns = now;
		p->todo[(p->todo_head + p->todo_count++) % e->qd] = slots[i];
	}
	pthread_cond_signal(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	return (int)n;
}

static int psync_reap(struct dg_engine *e, struct dg_slot **done, unsigned min, unsigned max)
{
	struct psync *p = e->priv;
	struct timespec deadline;
	unsigned n;

	if (e->wait_ns) {
		uint64_t t = psync_now_ns(e) + e->wait_ns;
		deadline.tv_sec = (time_t)(t / DG_NS_PER_S);
		deadline.tv_nsec = (long)(t % DG_NS_PER_S);
	}
	pthread_mutex_lock(&p->mu);
	while (p->count < min) {
		if (!e->wait_ns)
			pthread_cond_wait(&p->done_cv, &p->mu);
		else if (pthread_cond_timedwait(&p->done_cv, &p->mu, &deadline) == ETIMEDOUT)
			break;
	}
	n = p->count < max ? p->count : max;
	for (unsigned i = 0; i < n; i++) {
		struct dg_slot *s = p->done[p->head];
		p->head = (p->head + 1) % e->qd;
		s->submit_ns = p->start_ns[s->index];
		s->complete_ns = p->end_ns[s->index];
		s->result = p->result[s->index];
		done[i] = s;
	}
	p->count -= n;
	pthread_mutex_unlock(&p->mu);
	return (int)n;
}

/* Joins the reader thread: it finishes the I/O it holds first (the generic layer reaps every
 * I/O before cleanup, so normally it is idle). */
static void psync_cleanup(struct dg_engine *e)
{
	struct psync *p = e->priv;

	if (!p)
		return;
	if (p->thread_ok) {
		pthread_mutex_lock(&p->mu);
		p->quit = true;
		pthread_cond_signal(&p->work_cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
	}
	if (p->done_ok)
		pthread_cond_destroy(&p->done_cv);
	if (p->work_ok)
		pthread_cond_destroy(&p->work_cv);
	if (p->mutex_ok)
		pthread_mutex_destroy(&p->mu);
	free(p->todo);
	free(p->done);
	free(p->start_ns);
	free(p->end_ns);
	free(p->result);
	free(p);
	e->priv = NULL;
}

const struct dg_engine_ops dg_engine_psync_ops = {
    .version = DG_ENGINE_OPS_VERSION,
    .name = "psync",
    .flags = DG_ENGINE_F_FD,
    .init = psync_init,
    .submit = psync_submit,
    .reap = psync_reap,
    .now_ns = psync_now_ns,
    .idle_until = NULL, /* the generic layer sleeps on CLOCK_MONOTONIC */
    .cleanup = psync_cleanup,
    .cancel = NULL, /* a pread in the kernel cannot be taken back */
};
