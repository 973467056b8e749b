/* SPDX-License-Identifier: MIT */
/*
 * The engine's generic layer: configuration checks, backend choice, I/O slots and their buffers,
 * argument checks, and device-time bookkeeping. Backends (engine_uring.c, engine_psync.c,
 * engine_sim.c) only move slots to the device and back; fio's ioengines.c is the model for
 * checking a backend's ops table once, when it is chosen.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diskgeo/device.h"
#include "engine_priv.h"
#include "util.h"

#define DEFAULT_MAX_IO_BYTES (1u << 20)
#define LIMIT_MAX_IO_BYTES   (64u << 20) /* per I/O; the block layer splits larger ones anyway */
#define LIMIT_QD	     256u
#define PAGE_BYTES	     4096u

/*
 * What the generic layer keeps beside the shared struct dg_engine. Backends only ever see the
 * embedded `e`, so the free-slot stack and scratch arrays stay private to this file.
 */
struct engine_impl {
	struct dg_engine e;
	unsigned *free_stack; /* indices of free slots; LIFO keeps buffers warm in cache */
	unsigned nfree;
	struct dg_slot **batch;	   /* qd entries: scratch for submit and reap */
	bool writable;		   /* the fd was opened for writing (or the backend decides: sim) */
	uint64_t last_complete_ns; /* latest completion seen in the current busy interval */
	volatile sig_atomic_t *stop; /* the caller's stop flag, or NULL */
	uint64_t stop_seen_ns;	     /* CLOCK_MONOTONIC when a wait first found *stop set */
	uint64_t cancel_ns;	     /* when the backend's cancel was last asked */
};

static struct engine_impl *impl_of(struct dg_engine *e)
{
	return (struct engine_impl *)((char *)e - offsetof(struct engine_impl, e));
}

static const struct {
	const char *name;
	enum dg_engine_kind kind;
} kind_names[] = {
    {"auto", DG_ENGINE_AUTO},
    {"io_uring", DG_ENGINE_IO_URING},
    {"psync", DG_ENGINE_PSYNC},
    {"sim", DG_ENGINE_SIM},
};

int dg_engine_kind_parse(const char *name, enum dg_engine_kind *kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_names); i++) {
		if (name && !strcmp(name, kind_names[i].name)) {
			*kind = kind_names[i].kind;
			return 0;
		}
	}
	return -EINVAL;
}

/* Refuses a backend whose table this build does not understand or that lacks what the device
 * needs. Returns 0 or -EINVAL with a line in `err`. */
static int check_ops(const struct dg_engine_ops *ops, bool has_fd, char *err, size_t errlen)
{
	if (ops->version != DG_ENGINE_OPS_VERSION || !ops->name || !ops->init || !ops->submit ||
	    !ops->reap || !ops->cleanup) {
		snprintf(err, errlen,
			 "engine '%s': incompatible backend table (version %u, want %u)",
			 ops->name ? ops->name : "?", ops->version, DG_ENGINE_OPS_VERSION);
		return -EINVAL;
	}
	if ((ops->flags & DG_ENGINE_F_VIRTUAL_TIME) && (!ops->now_ns || !ops->idle_until)) {
		snprintf(err, errlen, "engine '%s': a virtual clock needs now_ns and idle_until",
			 ops->name);
		return -EINVAL;
	}
	if ((ops->flags & DG_ENGINE_F_FD) && !has_fd) {
		snprintf(err, errlen, "engine '%s' needs a block device or file, not a sim: drive",
			 ops->name);
		return -EINVAL;
	}
	if (!(ops->flags & DG_ENGINE_F_FD) && has_fd) {
		snprintf(err, errlen, "engine '%s' only runs sim: drives", ops->name);
		return -EINVAL;
	}
	return 0;
}

static void free_engine(struct engine_impl *im)
{
	free(im->e.buffers);
	free(im->e.slots);
	free(im->free_stack);
	free(im->batch);
	free(im);
}

/* Allocates the slots and one page-aligned buffer region for `qd` slots. Returns 0 or -ENOMEM. */
static int alloc_slots(struct engine_impl *im, unsigned qd)
{
	struct dg_engine *e = &im->e;
	void *buffers = NULL;

	e->qd = qd;
	e->slots = calloc(qd, sizeof(*e->slots));
	im->free_stack = calloc(qd, sizeof(*im->free_stack));
	im->batch = calloc(qd, sizeof(*im->batch));
	if (!e->slots || !im->free_stack || !im->batch)
		return -ENOMEM;
	if (posix_memalign(&buffers, PAGE_BYTES, (size_t)qd * e->max_io_bytes))
		return -ENOMEM;
	e->buffers = buffers;
	for (unsigned i = 0; i < qd; i++) {
		e->slots[i].buf = (char *)buffers + (size_t)i * e->max_io_bytes;
		e->slots[i].index = i;
		/* Pop order 0, 1, 2, ...: slot i is on the stack at depth qd - 1 - i. */
		im->free_stack[qd - 1 - i] = i;
	}
	im->nfree = qd;
	return 0;
}

/* Runs a backend's init on a fresh set of slots; on failure leaves `e` without backend state. */
static int start_backend(struct engine_impl *im, const struct dg_engine_ops *ops, unsigned qd,
			 char *err, size_t errlen)
{
	struct dg_engine *e = &im->e;
	int rc;

	if (!(ops->flags & DG_ENGINE_F_QUEUED))
		qd = 1; /* psync: one I/O at a time, whatever was asked */
	rc = check_ops(ops, dg_device_fd(e->dev) >= 0, err, errlen);
	if (rc)
		return rc;
	if (!e->slots) {
		rc = alloc_slots(im, qd);
		if (rc) {
			snprintf(err, errlen, "engine: cannot allocate %u buffers of %u bytes", qd,
				 e->max_io_bytes);
			return rc;
		}
	} else if (qd < e->qd) {
		/* Falling back to a backend with a smaller depth: keep the first qd slots. */
		e->qd = qd;
		im->nfree = qd;
		for (unsigned i = 0; i < qd; i++)
			im->free_stack[qd - 1 - i] = i;
	}
	e->ops = ops;
	e->priv = NULL;
	rc = ops->init(e, err, errlen);
	if (rc) {
		ops->cleanup(e);
		e->priv = NULL;
		e->ops = NULL;
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}

/* The configuration against the device: its logical sector, the queue depth, the largest I/O
 * (*max_io: the configured one or the default). Returns 0 or -EINVAL with one line in err. */
static int check_config(const struct dg_device_info *info, const struct dg_engine_config *cfg,
			uint32_t *max_io, char *err, size_t errlen)
{
	uint32_t sector = info->logical_sector_bytes;

	if (sector == 0 || (sector & (sector - 1))) {
		snprintf(err, errlen, "engine: device has no usable logical sector size (%u)",
			 sector);
		return -EINVAL;
	}
	if (cfg->qd < 1 || cfg->qd > LIMIT_QD) {
		snprintf(err, errlen, "engine: queue depth %u is outside 1..%u", cfg->qd, LIMIT_QD);
		return -EINVAL;
	}
	*max_io = cfg->max_io_bytes ? cfg->max_io_bytes : DEFAULT_MAX_IO_BYTES;
	if (*max_io % sector || *max_io % PAGE_BYTES || *max_io > LIMIT_MAX_IO_BYTES) {
		snprintf(
		    err, errlen,
		    "engine: largest I/O %u bytes must be a multiple of %u (sector) and of %u, "
		    "at most %u",
		    *max_io, sector, PAGE_BYTES, LIMIT_MAX_IO_BYTES);
		return -EINVAL;
	}
	return 0;
}

/* Starts the backend cfg->kind names; auto is sim for sim: drives, else io_uring, falling back
 * to psync (then *fell_back and err say why). Returns 0 or -errno with one line in err. */
static int start_kind(struct engine_impl *im, const struct dg_engine_config *cfg, bool is_sim,
		      bool *fell_back, char *err, size_t errlen)
{
	int rc;

	switch (cfg->kind) {
	case DG_ENGINE_SIM:
		if (!is_sim) {
			snprintf(err, errlen, "engine 'sim' only runs sim: drives");
			return -EINVAL;
		}
		return start_backend(im, &dg_engine_sim_ops, cfg->qd, err, errlen);
	case DG_ENGINE_IO_URING:
		return start_backend(im, &dg_engine_io_uring_ops, cfg->qd, err, errlen);
	case DG_ENGINE_PSYNC:
		return start_backend(im, &dg_engine_psync_ops, cfg->qd, err, errlen);
	case DG_ENGINE_AUTO:
		if (is_sim)
			return start_backend(im, &dg_engine_sim_ops, cfg->qd, err, errlen);
		rc = start_backend(im, &dg_engine_io_uring_ops, cfg->qd, err, errlen);
		if (rc) {
			/* Kernel without io_uring, a seccomp filter, io_uring_disabled, ...:
			 * psync measures the same things at queue depth 1. */
			char why[DG_ERRLEN];
			snprintf(why, sizeof(why), "%s", err && err[0] ? err : strerror(-rc));
			rc = start_backend(im, &dg_engine_psync_ops, cfg->qd, err, errlen);
			if (rc == 0) {
				if (fell_back)
					*fell_back = true;
				snprintf(err, errlen, "%s; using psync (queue depth 1)", why);
			}
		}
		return rc;
	default:
		snprintf(err, errlen, "engine: unknown engine kind %d", (int)cfg->kind);
		return -EINVAL;
	}
}

int dg_engine_open(struct dg_device *dev, const struct dg_engine_config *cfg,
		   struct dg_engine **out, bool *fell_back, char *err, size_t errlen)
{
	struct engine_impl *im = NULL;
	uint32_t max_io;
	int fd, rc;

	if (fell_back)
		*fell_back = false;
	if (err && errlen)
		err[0] = '\0';
	if (!dev || !cfg || !out) {
		snprintf(err, errlen, "engine: missing device or configuration");
		return -EINVAL;
	}
	*out = NULL;
	rc = check_config(dg_device_info(dev), cfg, &max_io, err, errlen);
	if (rc)
		return rc;
	fd = dg_device_fd(dev);
	im = calloc(1, sizeof(*im));
	if (!im) {
		snprintf(err, errlen, "engine: out of memory");
		return -ENOMEM;
	}
	im->e.dev = dev;
	im->e.max_io_bytes = max_io;
	im->e.sector_bytes = dg_device_info(dev)->logical_sector_bytes;
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		im->writable = fl >= 0 && (fl & O_ACCMODE) != O_RDONLY;
	} else {
		im->writable = true; /* sim: the backend times writes; it has no fd to refuse */
	}
	rc = start_kind(im, cfg, dg_device_spec(dev) != NULL, fell_back, err, errlen);
	if (rc) {
		free_engine(im);
		return rc;
	}
	*out = &im->e;
	return 0;
}

/* Puts a slot back on the free stack. Its buffer keeps the data until the slot is taken again. */
static void release_slot(struct engine_impl *im, struct dg_slot *s)
{
	s->busy = false;
	im->free_stack[im->nfree++] = s->index;
}

static int check_io(const struct dg_engine *e, const struct engine_impl *im, const struct dg_io *io)
{
	if (io->op != DG_IO_READ && io->op != DG_IO_WRITE)
		return -EINVAL;
	if (io->length_bytes == 0 || io->length_bytes > e->max_io_bytes)
		return -EINVAL;
	if (io->offset_bytes % e->sector_bytes || io->length_bytes % e->sector_bytes)
		return -EINVAL;
	if (io->offset_bytes > UINT64_MAX - io->length_bytes)
		return -EINVAL;
	if (io->op == DG_IO_WRITE && !im->writable)
		return -EBADF;
	return 0;
}

int dg_engine_submit(struct dg_engine *e, const struct dg_io *ios, unsigned n)
{
	struct engine_impl *im = impl_of(e);
	unsigned take, i;
	int rc;

	if (n == 0)
		return 0;
	if (!ios)
		return -EINVAL;
	/* All or nothing on bad arguments: check every I/O before taking a slot. */
	for (i = 0; i < n; i++) {
		rc = check_io(e, im, &ios[i]);
		if (rc)
			return rc;
	}
	take = n < im->nfree ? n : im->nfree;
	if (take == 0)
		return 0;
	for (i = 0; i < take; i++) {
		struct dg_slot *s = &e->slots[im->free_stack[--im->nfree]];
		s->io = ios[i];
		s->busy = true;
		s->result = 0;
		s->submit_ns = 0;
		s->complete_ns = 0;
		if (ios[i].op == DG_IO_WRITE) {
			if (ios[i].data)
				memcpy(s->buf, ios[i].data, ios[i].length_bytes);
			else
				memset(s->buf, 0, ios[i].length_bytes);
			s->io.data = NULL; /* the copy in s->buf is what gets written */
		}
		im->batch[i] = s;
	}
	rc = e->ops->submit(e, im->batch, take);
	if (rc < 0 || (unsigned)rc > take) {
		for (i = take; i-- > 0;)
			release_slot(im, im->batch[i]);
		return rc < 0 ? rc : -EIO;
	}
	/* A backend may take fewer than offered (a partial kernel submission): give back the rest.
	 */
	for (i = take; i-- > (unsigned)rc;)
		release_slot(im, im->batch[i]);
	if (rc > 0 && e->inflight == 0) {
		e->busy_start_ns = im->batch[0]->submit_ns;
		im->last_complete_ns = e->busy_start_ns;
	}
	e->inflight += (unsigned)rc;
	return rc;
}

/* Hands the backend's finished slots back as completions and frees the slots. */
static void finish(struct engine_impl *im, struct dg_completion *out, int got)
{
	struct dg_engine *e = &im->e;

	for (int i = 0; i < got; i++) {
		struct dg_slot *s = im->batch[i];
		struct dg_completion *c = &out[i];

		c->tag = s->io.tag;
		c->offset_bytes = s->io.offset_bytes;
		c->length_bytes = s->io.length_bytes;
		c->op = s->io.op;
		c->result = s->result;
		c->submit_ns = s->submit_ns;
		c->complete_ns = s->complete_ns;
		c->data = s->buf;
		if (s->complete_ns > im->last_complete_ns)
			im->last_complete_ns = s->complete_ns;
		release_slot(im, s);
	}
	e->inflight -= (unsigned)got;
	if (got > 0 && e->inflight == 0)
		e->busy_ns += im->last_complete_ns - e->busy_start_ns;
}

/* Asks the backend to cancel what is in flight, at most once every STOP_POLL (a cancel that the
 * kernel could not honour is asked again: a request may have become cancellable since). */
static void try_cancel(struct engine_impl *im, uint64_t now)
{
	struct dg_engine *e = &im->e;

	if (!e->ops->cancel || e->inflight == 0)
		return;
	if (im->cancel_ns && now - im->cancel_ns < (uint64_t)DG_ENGINE_STOP_POLL_MS * DG_NS_PER_MS)
		return;
	im->cancel_ns = now;
	e->ops->cancel(e);
}

/*
 * One wait. With `closing`, the stop flag only triggers cancels (the buffers cannot be freed
 * before the kernel gives them back). Otherwise a wait that ends empty while *stop is set
 * returns -EINTR, or -ECANCELED once the grace period after the flag was first seen is over.
 */
static int reap(struct engine_impl *im, struct dg_completion *out, unsigned min, unsigned max,
		bool closing)
{
	struct dg_engine *e = &im->e;
	int got;

	for (;;) {
		got = e->ops->reap(e, im->batch, min, max);
		if (got < 0 && got != -EINTR)
			return got;
		if ((unsigned)(got < 0 ? 0 : got) > max)
			return -EIO;
		if (got > 0) {
			finish(im, out, got);
			return got;
		}
		if (min == 0)
			return 0;
		if (!im->stop || !*im->stop) {
			if (got == -EINTR)
				return -EINTR; /* a signal that is not a stop request */
			continue;	       /* a wait slice ended: wait again */
		}
		uint64_t now = dg_monotonic_ns();
		if (!im->stop_seen_ns)
			im->stop_seen_ns = now;
		try_cancel(im, now);
		if (closing)
			continue;
		if (now - im->stop_seen_ns >= (uint64_t)DG_ENGINE_STOP_GRACE_MS * DG_NS_PER_MS)
			return -ECANCELED;
		return -EINTR;
	}
}

int dg_engine_reap(struct dg_engine *e, struct dg_completion *out, unsigned min, unsigned max)
{
	if (!out && max)
		return -EINVAL;
	if (e->inflight == 0 || max == 0)
		return 0;
	if (max > e->inflight)
		max = e->inflight;
	if (min > max)
		min = max;
	return reap(impl_of(e), out, min, max, false);
}

void dg_engine_set_stop(struct dg_engine *e, volatile sig_atomic_t *stop)
{
	struct engine_impl *im = impl_of(e);

	im->stop = stop;
	im->stop_seen_ns = 0;
	e->wait_ns = stop ? (uint64_t)DG_ENGINE_STOP_POLL_MS * DG_NS_PER_MS : 0;
}

void dg_engine_close(struct dg_engine *e)
{
	struct dg_completion c[16];

	if (!e)
		return;
	/* The kernel may still DMA into the buffers: reap everything before freeing them. A
	 * signal only interrupts a wait, so keep waiting; a backend error ends the wait (the
	 * backend's cleanup then tears the queue down). */
	while (e->inflight > 0) {
		unsigned max = e->inflight < 16 ? e->inflight : 16;
		int rc = reap(impl_of(e), c, 1, max, true);
		if (rc < 0 && rc != -EINTR)
			break;
	}
	if (e->ops)
		e->ops->cleanup(e);
	free_engine(impl_of(e));
}

const char *dg_engine_name(const struct dg_engine *e)
{
	return e->ops->name;
}

unsigned dg_engine_qd(const struct dg_engine *e)
{
	return e->qd;
}

uint32_t dg_engine_max_io(const struct dg_engine *e)
{
	return e->max_io_bytes;
}

unsigned dg_engine_inflight(const struct dg_engine *e)
{
	return e->inflight;
}

uint64_t dg_engine_now_ns(struct dg_engine *e)
{
	if (e->ops->now_ns)
		return e->ops->now_ns(e);
	return dg_monotonic_ns();
}

/* Real clocks sleep with clock_nanosleep(TIMER_ABSTIME); returns 0, or -EINTR when a signal cut
 * the sleep short (the caller polls its stop flag and calls again). */
int dg_engine_idle_until(struct dg_engine *e, uint64_t ns)
{
	struct timespec ts;

	if (e->ops->idle_until)
		return e->ops->idle_until(e, ns);
	ts.tv_sec = (time_t)(ns / DG_NS_PER_S);
	ts.tv_nsec = (long)(ns % DG_NS_PER_S);
	/* clock_nanosleep returns the error number instead of setting errno. */
	int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	return -rc;
}

uint64_t dg_engine_device_time_ns(const struct dg_engine *e)
{
	const struct engine_impl *im =
	    (const struct engine_impl *)((const char *)e - offsetof(struct engine_impl, e));

	/* While I/O is in flight, count the open interval up to the latest completion seen. */
	if (e->inflight > 0)
		return e->busy_ns + (im->last_complete_ns - e->busy_start_ns);
	return e->busy_ns;
}

bool dg_engine_is_virtual(const struct dg_engine *e)
{
	return (e->ops->flags & DG_ENGINE_F_VIRTUAL_TIME) != 0;
}
