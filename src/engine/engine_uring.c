/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend: one ring of qd entries over the device's O_DIRECT descriptor, with the
 * slot buffers and the descriptor registered (fixed buffers, fixed file) so the kernel neither
 * maps pages nor looks up the file per I/O. A batch is prepared in full and handed over with one
 * io_uring_submit(); completions are collected in batches. Timestamps: one CLOCK_MONOTONIC read
 * right before io_uring_submit() is every I/O of the batch's submit_ns; one right after the wait
 * for completions returns is the complete_ns of every completion collected then (liburing's
 * io_uring_submit(3), io_uring_wait_cqe_nr(3), io_uring_peek_batch_cqe(3)).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include <liburing.h>

#include "diskgeo/device.h"
#include "engine_priv.h"
#include "util.h"

#define SUBMIT_RETRIES 10000	  /* EAGAIN/EBUSY from the kernel: short of request memory */
#define CANCEL_TAG     UINT64_MAX /* user_data of our cancel requests (slots use their index) */

struct uring {
	struct io_uring ring;
	bool ring_ok;
	bool fixed_bufs;    /* io_uring_register_buffers() worked (it can fail on RLIMIT_MEMLOCK) */
	bool fixed_file;    /* io_uring_register_files() worked */
	bool defer_taskrun; /* completions are posted only when we ask for events */
	int fd;
	struct io_uring_cqe **cqes; /* qd entries */
};

static uint64_t uring_now_ns(struct dg_engine *e)
{
	(void)e;
	return dg_monotonic_ns();
}

/* Setup flags, best first; a kernel that does not know one answers -EINVAL and we try the next.
 * SINGLE_ISSUER + DEFER_TASKRUN (6.1) run completion work only when we wait, on our own task:
 * fewer interrupts of the submitting thread (io_uring_setup(2)). */
static const unsigned setup_flags[] = {
    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
	IORING_SETUP_DEFER_TASKRUN,
    IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN,
    0,
};

static int uring_init(struct dg_engine *e, char *err, size_t errlen)
{
	struct uring *u = calloc(1, sizeof(*u));
	struct iovec *iov = NULL;
	int rc = -EINVAL;

	if (!u)
		return -ENOMEM;
	e->priv = u;
	u->fd = dg_device_fd(e->dev);
	u->cqes = calloc(e->qd, sizeof(*u->cqes));
	if (!u->cqes)
		return -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(setup_flags); i++) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		p.flags = setup_flags[i];
		rc = io_uring_queue_init_params(e->qd, &u->ring, &p);
		if (rc == 0) {
			u->defer_taskrun = (setup_flags[i] & IORING_SETUP_DEFER_TASKRUN) != 0;
			break;
		}
		if (rc != -EINVAL)
			break;
	}
	if (rc < 0) {
		snprintf(err, errlen, "io_uring unavailable (%s)", strerror(-rc));
		return rc;
	}
	u->ring_ok = true;

	/* Optional speed-ups: without them the same I/O goes through plain read/write SQEs. */
	iov = calloc(e->qd, sizeof(*iov));
	if (!iov)
		return -ENOMEM;
	for (unsigned i = 0; i < e->qd; i++) {
		iov[i].iov_base = e->slots[i].buf;
		iov[i].iov_len = e->max_io_bytes;
	}
	u->fixed_bufs = io_uring_register_buffers(&u->ring, iov, e->qd) == 0;
	free(iov);
	u->fixed_file = io_uring_register_files(&u->ring, &u->fd, 1) == 0;
	return 0;
}

static void prep_slot(struct uring *u, struct io_uring_sqe *sqe, struct dg_slot *s)
{
	int fd = u->fixed_file ? 0 : u->fd;
	unsigned len = s->io.length_bytes;
	uint64_t off = s->io.offset_bytes;

	if (s->io.op == DG_IO_WRITE) {
		if (u->fixed_bufs)
			io_uring_prep_write_fixed(sqe, fd, s->buf, len, off, (int)s->index);
		else
			io_uring_prep_write(sqe, fd, s->buf, len, off);
	} else {
		if (u->fixed_bufs)
			io_uring_prep_read_fixed(sqe, fd, s->buf, len, off, (int)s->index);
		else
			io_uring_prep_read(sqe, fd, s->buf, len, off);
	}
	if (u->fixed_file)
		io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
	io_uring_sqe_set_data64(sqe, s->index);
}

/*
 * Prepares all n SQEs, then one io_uring_submit(). The ring has qd entries and at most qd I/Os
 * are in flight, so an SQE is always free. A kernel that takes only part of the batch keeps the
 * rest in the submission ring; we submit again until all are in. Returns n or -errno (nothing
 * was submitted).
 */
static int uring_submit(struct dg_engine *e, struct dg_slot **slots, unsigned n)
{
	struct uring *u = e->priv;
	unsigned submitted = 0, tries = 0;
	uint64_t now;

	for (unsigned i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
		if (!sqe)
			return -EBUSY; /* cannot happen with inflight <= qd; refuse rather than lose
					  I/O */
		prep_slot(u, sqe, slots[i]);
	}
	now = uring_now_ns(e);
	for (unsigned i = 0; i < n; i++)
		slots[i]->submit_ns = now;
	while (submitted < n) {
		int rc = io_uring_submit(&u->ring);
		if (rc > 0) {
			submitted += (unsigned)rc;
			continue;
		}
		if ((rc == -EINTR || rc == -EAGAIN || rc == -EBUSY || rc == 0) &&
		    ++tries < SUBMIT_RETRIES) {
			sched_yield();
			continue;
		}
		/* The SQEs already in the ring would still run on a later submit: only report
		 * failure when nothing went in, so no slot is released under a live request. */
		if (submitted == 0)
			return rc < 0 ? rc : -EIO;
		break;
	}
	return (int)submitted;
}

/*
 * Waits (in the kernel) until `min` completions are posted, at most e->wait_ns when that is set
 * (io_uring_wait_cqes(3) with a timeout: the caller looks at its stop flag in between), takes
 * one timestamp, then collects up to `max` in one batch. Returns the count (fewer than `min`
 * after a timeout) or -errno; -EINTR when a signal interrupted the wait (nothing collected).
 * The completions of our own cancel requests are consumed here and not counted.
 */
static int uring_reap(struct dg_engine *e, struct dg_slot **done, unsigned min, unsigned max)
{
	struct uring *u = e->priv;
	struct io_uring_cqe *cqe;
	unsigned got = 0, n;
	uint64_t now;
	int rc;

	if (min > 0 && e->wait_ns) {
		struct __kernel_timespec ts = {
		    .tv_sec = (long long)(e->wait_ns / DG_NS_PER_S),
		    .tv_nsec = (long long)(e->wait_ns % DG_NS_PER_S),
		};
		rc = io_uring_wait_cqes(&u->ring, &cqe, min, &ts, NULL);
		if (rc < 0 && rc != -ETIME)
			return rc;
	} else if (min > 0) {
		rc = io_uring_wait_cqe_nr(&u->ring, &cqe, min);
		if (rc < 0)
			return rc;
	}
	if (io_uring_cq_ready(&u->ring) == 0 && u->defer_taskrun) {
		/* With DEFER_TASKRUN nothing is posted until we enter the kernel for events. */
		rc = io_uring_get_events(&u->ring);
		if (rc < 0 && rc != -EAGAIN && rc != -EBUSY && rc != -EINTR)
			return rc;
	}
	now = uring_now_ns(e);
	n = io_uring_peek_batch_cqe(&u->ring, u->cqes, max);
	for (unsigned i = 0; i < n; i++) {
		uint64_t idx = io_uring_cqe_get_data64(u->cqes[i]);
		if (idx == CANCEL_TAG)
			continue;
		if (idx >= e->qd || !e->slots[idx].busy) {
			io_uring_cq_advance(&u->ring, i);
			return -EIO; /* a completion we never asked for */
		}
		struct dg_slot *s = &e->slots[idx];
		s->result = u->cqes[i]->res;
		s->complete_ns = now;
		done[got++] = s;
	}
	io_uring_cq_advance(&u->ring, n);
	return (int)got;
}

/* IORING_ASYNC_CANCEL_ANY (5.19): every request of the ring. A read already issued to the block
 * layer usually cannot be cancelled (the kernel answers -EALREADY or -ENOENT); one still queued
 * or punted to a worker can. */
static int uring_cancel(struct dg_engine *e)
{
	struct uring *u = e->priv;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	int rc;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
	io_uring_sqe_set_data64(sqe, CANCEL_TAG);
	rc = io_uring_submit(&u->ring);
	return rc < 0 ? rc : 0;
}

static void uring_cleanup(struct dg_engine *e)
{
	struct uring *u = e->priv;

	if (!u)
		return;
	if (u->ring_ok) {
		/* The ring is torn down asynchronously after exit; a registered file would keep
		 * its O_EXCL claim on the device for a while (a second --write run right after
		 * would find it busy), so the file is let go of now. */
		if (u->fixed_file)
			io_uring_unregister_files(&u->ring);
		io_uring_queue_exit(&u->ring); /* also drops the registered buffers */
	}
	free(u->cqes);
	free(u);
	e->priv = NULL;
}

const struct dg_engine_ops dg_engine_io_uring_ops = {
    .version = DG_ENGINE_OPS_VERSION,
    .name = "io_uring",
    .flags = DG_ENGINE_F_QUEUED | DG_ENGINE_F_FD,
    .init = uring_init,
    .submit = uring_submit,
    .reap = uring_reap,
    .now_ns = uring_now_ns,
    .idle_until = NULL, /* the generic layer sleeps on CLOCK_MONOTONIC */
    .cleanup = uring_cleanup,
    .cancel = uring_cancel,
};
