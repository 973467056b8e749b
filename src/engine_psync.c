/* SPDX-License-Identifier: MIT */
/*
 * The psync backend: pread(2)/pwrite(2) at queue depth 1, for kernels or sandboxes without
 * io_uring. The I/O is performed synchronously inside submit (so submit_ns and complete_ns
 * bracket exactly one system call); reap only hands back the finished slots in order. Timing a
 * single blocking pread this way is the classic method of disk benchmarks (bonnie++, fio's psync
 * engine).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diskgeo/device.h"
#include "engine_priv.h"

struct psync {
	int fd;
	unsigned head, count; /* FIFO of finished slots, capacity qd */
	struct dg_slot **done;
};

static uint64_t psync_now_ns(struct dg_engine *e)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * DG_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static int psync_init(struct dg_engine *e, char *err, size_t errlen)
{
	struct psync *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->done = calloc(e->qd, sizeof(*p->done));
	if (!p->done) {
		free(p);
		return -ENOMEM;
	}
	p->fd = dg_device_fd(e->dev);
	e->priv = p;
	return 0;
}

/* One pread/pwrite, retried when a signal interrupts it before any byte moved. A short
 * transfer is returned as it is (at the end of the device it is the truth). */
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

static int psync_submit(struct dg_engine *e, struct dg_slot **slots, unsigned n)
{
	struct psync *p = e->priv;

	for (unsigned i = 0; i < n; i++) {
		struct dg_slot *s = slots[i];

		s->submit_ns = psync_now_ns(e);
		s->result = do_io(p->fd, s);
		s->complete_ns = psync_now_ns(e);
		p->done[(p->head + p->count++) % e->qd] = s;
	}
	return (int)n;
}

static int psync_reap(struct dg_engine *e, struct dg_slot **done, unsigned min, unsigned max)
{
	struct psync *p = e->priv;
	unsigned n = p->count < max ? p->count : max;

	/* Everything submitted has finished already, so `min` is always met. */
	for (unsigned i = 0; i < n; i++) {
		done[i] = p->done[p->head];
		p->head = (p->head + 1) % e->qd;
	}
	p->count -= n;
	return (int)n;
}

static void psync_cleanup(struct dg_engine *e)
{
	struct psync *p = e->priv;

	if (!p)
		return;
	free(p->done);
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
};
