/* SPDX-License-Identifier: MIT */
/*
 * Engine internals: the backend ops table (fio's struct ioengine_ops is the model) and the state
 * that the generic layer (engine.c) shares with backends. Only engine*.c include this.
 */
#ifndef DISKGEO_ENGINE_PRIV_H
#define DISKGEO_ENGINE_PRIV_H

#include "diskgeo/engine.h"

#define DG_ENGINE_OPS_VERSION 2 /* 2: reap honours wait_ns; optional cancel */

/* One I/O slot: a buffer and the I/O it carries while in flight. */
struct dg_slot {
	struct dg_io io;
	void *buf;	/* max_io_bytes, page aligned; registered with io_uring */
	unsigned index; /* position in dg_engine.slots (io_uring buf_index) */
	bool busy;
	int64_t result;
	uint64_t submit_ns;
	uint64_t complete_ns;
};

enum dg_engine_flags {
	DG_ENGINE_F_QUEUED = 1u << 0,	    /* supports qd > 1 */
	DG_ENGINE_F_VIRTUAL_TIME = 1u << 1, /* clock is virtual */
	DG_ENGINE_F_FD = 1u << 2,	    /* needs a file descriptor (not sim:) */
};

struct dg_engine;

struct dg_engine_ops {
	unsigned version; /* DG_ENGINE_OPS_VERSION */
	const char *name;
	unsigned flags;
	/* Sets up backend state in e->priv; slots and buffers exist already. -errno with `err`. */
	int (*init)(struct dg_engine *e, char *err, size_t errlen);
	/* Hands `n` busy slots to the device; sets each slot's submit_ns. Returns n or -errno. */
	int (*submit)(struct dg_engine *e, struct dg_slot **slots, unsigned n);
	/* Waits for >= min completions (min <= in flight); stores up to max completed slots in
	 * done[] with result and complete_ns set, in completion order. Returns the count or
	 * -errno. When e->wait_ns is not 0, a blocking backend waits at most about that long and
	 * may then return fewer than min (0 included); -EINTR when a signal cut the wait. */
	int (*reap)(struct dg_engine *e, struct dg_slot **done, unsigned min, unsigned max);
	uint64_t (*now_ns)(struct dg_engine *e);
	int (*idle_until)(struct dg_engine *e, uint64_t ns);
	void (*cleanup)(struct dg_engine *e); /* accepts a half-initialised engine */
	/* Optional: asks the kernel to cancel every I/O in flight (each then completes, with
	 * -ECANCELED or its result); returns 0 or -errno. NULL when nothing can be cancelled. */
	int (*cancel)(struct dg_engine *e);
};

struct dg_engine {
	const struct dg_engine_ops *ops;
	struct dg_device *dev;
	unsigned qd;
	uint32_t max_io_bytes;
	uint32_t sector_bytes;
	struct dg_slot *slots;
	void *buffers; /* qd * max_io_bytes, one allocation */
	unsigned inflight;
	/* device-time accounting: busy while inflight > 0 */
	uint64_t busy_start_ns;
	uint64_t busy_ns;
	uint64_t wait_ns; /* longest single wait in reap; 0 = until `min` completions */
	void *priv;	  /* backend state */
};

extern const struct dg_engine_ops dg_engine_io_uring_ops;
extern const struct dg_engine_ops dg_engine_psync_ops;
extern const struct dg_engine_ops dg_engine_sim_ops;

#endif
