/* SPDX-License-Identifier: MIT */
/*
 * The I/O engine: the one interface every measurement uses. Backends (io_uring, psync, the
 * simulated drive) sit behind a const ops table (src/engine_priv.h); the measurement code never
 * knows which one it talks to.
 *
 * Model of use: submit up to dg_engine_free_slots() I/Os, each (offset, length, tag); reap
 * completions, each (tag, result, submit_ns, complete_ns). Times come from the engine's clock,
 * dg_engine_now_ns(): CLOCK_MONOTONIC for real devices, virtual time for sim: devices. A short
 * read or an error is a per-I/O result, never an abort.
 */
#ifndef DISKGEO_ENGINE_H
#define DISKGEO_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "diskgeo.h"

struct dg_device;
struct dg_engine;

enum dg_engine_kind {
	DG_ENGINE_AUTO = 0, /* sim for sim: devices; else io_uring, falling back to psync */
	DG_ENGINE_IO_URING,
	DG_ENGINE_PSYNC,
	DG_ENGINE_SIM,
};

enum dg_io_op {
	DG_IO_READ = 0,
	DG_IO_WRITE = 1, /* only on a device opened with DG_DEVICE_WRITE */
};

struct dg_io {
	uint64_t offset_bytes; /* aligned to the logical sector */
	uint32_t length_bytes; /* a multiple of the logical sector, <= max_io_bytes */
	uint8_t op;	       /* enum dg_io_op */
	uint64_t tag;	       /* the caller's cookie, handed back in the completion */
	const void *data;      /* writes: the bytes to write (copied at submission); NULL = zeros */
};

struct dg_completion {
	uint64_t tag;
	uint64_t offset_bytes;
	uint32_t length_bytes;
	uint8_t op;
	int64_t result;	      /* bytes transferred (may be short), or -errno */
	uint64_t submit_ns;   /* engine clock when the I/O was handed to the kernel / drive */
	uint64_t complete_ns; /* engine clock when its completion was seen */
	const void *data;     /* the bytes read; valid until the next dg_engine_submit() */
};

struct dg_engine_config {
	enum dg_engine_kind kind;
	unsigned qd;	       /* queue depth, 1..256 (psync: 1) */
	uint32_t max_io_bytes; /* largest single I/O; buffers are this size, page aligned */
};

/* Names "auto", "io_uring", "psync", "sim" <-> kinds; returns -EINVAL for an unknown name. */
int dg_engine_kind_parse(const char *name, enum dg_engine_kind *kind);

/*
 * Opens an engine on `dev`. With DG_ENGINE_AUTO: sim devices get the sim backend; others get
 * io_uring, or psync when io_uring cannot be set up (then *fell_back, if not NULL, is set to
 * true and `err` holds the reason, e.g. "io_uring unavailable (Operation not permitted); using
 * psync"). Returns 0 or -errno with a line in `err`. The engine borrows `dev`: close the engine
 * first.
 */
int dg_engine_open(struct dg_device *dev, const struct dg_engine_config *cfg,
		   struct dg_engine **out, bool *fell_back, char *err, size_t errlen);
/* Waits for in-flight I/O (asking the kernel again and again to cancel it when the stop flag is
 * set), then frees everything. Accepts NULL. dg_engine_inflight() tells beforehand whether the
 * wait may be long (a stalled device). */
void dg_engine_close(struct dg_engine *e);

const char *dg_engine_name(const struct dg_engine *e);
unsigned dg_engine_qd(const struct dg_engine *e);
/* The largest single I/O it takes (its config's max_io_bytes). */
uint32_t dg_engine_max_io(const struct dg_engine *e);
unsigned dg_engine_inflight(const struct dg_engine *e);
static inline unsigned dg_engine_free_slots(const struct dg_engine *e)
{
	return dg_engine_qd(e) - dg_engine_inflight(e);
}

/* Queues and submits up to `n` I/Os (fewer when slots run out). Returns how many were taken, or
 * -errno (-EINVAL for a misaligned or oversized I/O, nothing taken). */
int dg_engine_submit(struct dg_engine *e, const struct dg_io *ios, unsigned n);

/* Waits until at least `min` completions are available (min <= in flight), then hands back up
 * to `max` of them in completion order. Returns the count, or -errno (-EINTR when a signal
 * interrupted the wait, or the stop flag is set: call again). Once the stop flag of
 * dg_engine_set_stop() is set and I/O stays in flight (a device that does not answer), the
 * engine asks the kernel to cancel it and, DG_ENGINE_STOP_GRACE_MS after it first saw the flag,
 * returns -ECANCELED: the caller ends its run with what it has (dg_engine_close() then waits
 * for what the kernel still holds). */
int dg_engine_reap(struct dg_engine *e, struct dg_completion *out, unsigned min, unsigned max);

/* A wait for completions looks at the stop flag at least this often (real devices). */
#define DG_ENGINE_STOP_POLL_MS	50u
#define DG_ENGINE_STOP_GRACE_MS 300u

/*
 * Makes the engine's waits watch `stop` (a signal handler's flag; NULL = none): no single wait
 * in the kernel lasts more than DG_ENGINE_STOP_POLL_MS, so a stalled device never holds the
 * caller past a stop request for longer (psync does its I/O on a reader thread for the same
 * reason). See dg_engine_reap() for what happens to I/O in flight.
 */
void dg_engine_set_stop(struct dg_engine *e, volatile sig_atomic_t *stop);

/* The engine's clock in ns (monotonic; virtual for sim:). */
uint64_t dg_engine_now_ns(struct dg_engine *e);

/* Lets the clock run to `ns` with nothing submitted (sleeps; for sim: advances virtual time). */
int dg_engine_idle_until(struct dg_engine *e, uint64_t ns);

/* Time during which at least one I/O was in flight, summed since open: the device time a run
 * cost (virtual seconds for sim:). */
uint64_t dg_engine_device_time_ns(const struct dg_engine *e);

/* True when the clock is virtual (sim:): timings are deterministic. */
bool dg_engine_is_virtual(const struct dg_engine *e);

#endif
