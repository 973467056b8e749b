/* SPDX-License-Identifier: MIT */
/*
 * The simulated-drive backend: a sim: device served by the request-level model of model.h in
 * virtual time. Nothing sleeps; the clock jumps to the next completion the caller waits for.
 *
 * Why completions can be computed at submission: the drive serves commands in arrival order
 * (dg_drive_access serialises them), every command submitted at virtual time `now` reaches the
 * drive at `now`, and nothing submitted later can change an earlier command's timing. So submit
 * asks the model for the completion time at once, and reap only moves the clock forward. This
 * is exact and costs one model call per I/O, which keeps a full profile of a 4 TB drive at
 * seconds of CPU.
 *
 * Reads are filled with the pattern of simpattern.h (a store loop, about memset speed: the
 * caller may look at the data, so it is always there). Measured: 64 GiB of 1 MiB reads at QD 8
 * (380 s of virtual drive time) cost 2.6 s of CPU, nearly all of it the fill (~26 GB/s); a
 * profile that samples the surface reads a small fraction of it. Writes are timed and dropped.
 * A read that crosses the end of the capacity is clipped there, one that starts at or after it
 * returns 0 at once, as a block device does; a write there returns -ENOSPC.
 *
 * A drive that queues (ncq_depth > 1) reorders: completions cannot be known at submission.
 * Submit hands the command to the drive's queue (dg_drive_queue); reap lets the drive choose
 * and serve (dg_drive_step) until the min-th earliest host-visible completion is known and no
 * later choice could finish before it. Commands are only submitted at `now`, and the clock
 * only jumps to a completion, so each choice sees exactly the commands that had arrived.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diskgeo/device.h"
#include "diskgeo/model.h"
#include "engine_priv.h"
#include "simpattern.h"

struct sim {
	struct dg_drive *drive;
	uint64_t capacity_bytes;
	uint32_t sector_bytes;
	uint64_t now_ns;
	/* In-flight slots ordered by completion time (stable: equal times keep submission order),
	 * each with result and complete_ns already set. At most qd entries. */
	struct dg_slot **pending;
	unsigned npending;
	bool queued;	      /* ncq_depth > 1: dg_drive_queue / dg_drive_step */
	struct dg_slot **inq; /* [qd]: in the drive's queue, by tag (NULL = free tag) */
	unsigned ninq;	      /* tags in use are below this */
};

static int sim_init(struct dg_engine *e, char *err, size_t errlen)
{
	const struct dg_spec *spec = dg_device_spec(e->dev);
	struct sim *s;
	int rc;

	if (!spec) {
		snprintf(err, errlen, "engine 'sim' only runs sim: drives");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto nomem;
	e->priv = s;
	s->pending = calloc(e->qd, sizeof(*s->pending));
	if (!s->pending)
		goto nomem;
	s->queued = dg_spec_ncq_depth(spec) > 1;
	s->inq = calloc(e->qd, sizeof(*s->inq));
	if (!s->inq)
		goto nomem;
	rc = dg_drive_new(spec, &s->drive);
	if (rc) {
		snprintf(err, errlen, "engine 'sim': cannot create the drive model (%s)",
			 strerror(-rc));
		return rc;
	}
	s->capacity_bytes = dg_spec_capacity_bytes(spec);
	s->sector_bytes = dg_spec_sector_bytes(spec);
	if (s->sector_bytes != e->sector_bytes) {
		snprintf(err, errlen, "engine 'sim': spec sector %u bytes, device %u bytes",
			 s->sector_bytes, e->sector_bytes);
		return -EINVAL;
	}
	return 0;
nomem:
	snprintf(err, errlen, "engine 'sim': out of memory");
	return -ENOMEM;
}

/* Serves one I/O at s->now_ns: sets slot->result and slot->complete_ns. */
static void serve(struct sim *s, struct dg_slot *slot)
{
	uint64_t off = slot->io.offset_bytes, len = slot->io.length_bytes;
	bool write = slot->io.op == DG_IO_WRITE;
	uint64_t done_ns = s->now_ns;
	int64_t r;

	slot->submit_ns = s->now_ns;
	slot->complete_ns = s->now_ns;
	if (off >= s->capacity_bytes) {
		/* Like the block layer: nothing to read at the end, no room to write. */
		slot->result = write ? -ENOSPC : 0;
		return;
	}
	if (len > s->capacity_bytes - off)
		len = s->capacity_bytes - off;
	r = dg_drive_access(s->drive, s->now_ns, write, off / s->sector_bytes,
			    (uint32_t)(len / s->sector_bytes), &done_ns);
	if (r >= 0 && !write)
		dg_simpattern_fill(slot->buf, off, (size_t)r);
	slot->result = r;
	/* The model sets done_ns for served commands and for error defects (after its retries);
	 * it may leave it untouched for a rejected range. Completions never precede submission. */
	slot->complete_ns = done_ns > s->now_ns ? done_ns : s->now_ns;
}

/* Inserts `slot` into the pending list after every entry completing at or before it. */
static void enqueue(struct sim *s, struct dg_slot *slot)
{
	unsigned i = s->npending;

	while (i > 0 && s->pending[i - 1]->complete_ns > slot->complete_ns) {
		s->pending[i] = s->pending[i - 1];
		i--;
	}
	s->pending[i] = slot;
	s->npending++;
}

/* Queued drives: hands the I/O to the drive's queue, or completes at once what never reaches
 * the media (at or past the end). */
static int queue(struct sim *s, struct dg_slot *slot)
{
	uint64_t off = slot->io.offset_bytes, len = slot->io.length_bytes;
	bool write = slot->io.op == DG_IO_WRITE;

	slot->submit_ns = s->now_ns;
	slot->complete_ns = s->now_ns;
	if (off >= s->capacity_bytes) {
		slot->result = write ? -ENOSPC : 0;
		enqueue(s, slot);
		return 0;
	}
	if (len > s->capacity_bytes - off)
		len = s->capacity_bytes - off;
	unsigned tag = 0;
	while (tag < s->ninq && s->inq[tag])
		tag++;
	if (tag == s->ninq)
		s->ninq++;
	int rc = dg_drive_queue(s->drive, s->now_ns, write, off / s->sector_bytes,
				(uint32_t)(len / s->sector_bytes), tag);
	if (rc)
		return rc;
	s->inq[tag] = slot;
	return 0;
}

/* Lets the drive serve one queued command into the pending list. */
static void step(struct sim *s)
{
	uint64_t tag, done_ns;
	int64_t r;

	if (dg_drive_step(s->drive, &tag, &r, &done_ns) != 1)
		return;
	struct dg_slot *slot = s->inq[tag];
	s->inq[tag] = NULL;
	if (r >= 0 && slot->io.op != DG_IO_WRITE)
		dg_simpattern_fill(slot->buf, slot->io.offset_bytes, (size_t)r);
	slot->result = r;
	slot->complete_ns = done_ns > slot->submit_ns ? done_ns : slot->submit_ns;
	enqueue(s, slot);
}

/* Queued drives: serve until the min-th earliest completion is final. */
static void settle(struct sim *s, unsigned min)
{
	for (;;) {
		uint64_t next = dg_drive_next_ns(s->drive);
		if (next == UINT64_MAX)
			break;
		if (min > 0 && s->npending >= min && s->pending[min - 1]->complete_ns < next)
			break;
		if (min == 0 && next > s->now_ns)
			break;
		step(s);
	}
	while (s->ninq && !s->inq[s->ninq - 1])
		s->ninq--;
}

static int sim_submit(struct dg_engine *e, struct dg_slot **slots, unsigned n)
{
	struct sim *s = e->priv;

	unsigned inflight = s->npending;
	for (unsigned i = 0; i < s->ninq; i++)
		inflight += s->inq[i] != NULL;
	if (inflight + n > e->qd)
		return -EBUSY;
	for (unsigned i = 0; i < n; i++) {
		if (s->queued) {
			int rc = queue(s, slots[i]);
			if (rc)
				return i ? (int)i : rc;
			continue;
		}
		serve(s, slots[i]);
		enqueue(s, slots[i]);
	}
	return (int)n;
}

static int sim_reap(struct dg_engine *e, struct dg_slot **done, unsigned min, unsigned max)
{
	struct sim *s = e->priv;
	unsigned n = 0;

	if (s->queued) {
		unsigned inflight = s->npending;
		for (unsigned i = 0; i < s->ninq; i++)
			inflight += s->inq[i] != NULL;
		if (min > inflight)
			min = inflight;
		settle(s, min);
	}
	if (min > s->npending)
		min = s->npending;
	/* Waiting for `min` completions is jumping to the min-th earliest one. */
	if (min > 0 && s->pending[min - 1]->complete_ns > s->now_ns)
		s->now_ns = s->pending[min - 1]->complete_ns;
	while (n < max && n < s->npending && s->pending[n]->complete_ns <= s->now_ns) {
		done[n] = s->pending[n];
		n++;
	}
	memmove(s->pending, s->pending + n, (s->npending - n) * sizeof(*s->pending));
	s->npending -= n;
	return (int)n;
}

static uint64_t sim_now_ns(struct dg_engine *e)
{
	return ((struct sim *)e->priv)->now_ns;
}

static int sim_idle_until(struct dg_engine *e, uint64_t ns)
{
	struct sim *s = e->priv;

	if (ns > s->now_ns)
		s->now_ns = ns;
	return 0;
}

static void sim_cleanup(struct dg_engine *e)
{
	struct sim *s = e->priv;

	if (!s)
		return;
	dg_drive_free(s->drive);
	free(s->pending);
	free(s->inq);
	free(s);
	e->priv = NULL;
}

const struct dg_engine_ops dg_engine_sim_ops = {
    .version = DG_ENGINE_OPS_VERSION,
    .name = "sim",
    .flags = DG_ENGINE_F_QUEUED | DG_ENGINE_F_VIRTUAL_TIME,
    .init = sim_init,
    .submit = sim_submit,
    .reap = sim_reap,
    .now_ns = sim_now_ns,
    .idle_until = sim_idle_until,
    .cleanup = sim_cleanup,
};
