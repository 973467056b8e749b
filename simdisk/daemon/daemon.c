/* SPDX-License-Identifier: MIT */
/*
 * diskgeo-simdisk's FUSE daemon: one file whose reads and writes are timed by the drive model.
 *
 * Timing: FUSE worker threads stamp each request's arrival (CLOCK_MONOTONIC since the daemon's
 * epoch, in the model's ns) and queue it; ONE timing thread takes requests in arrival order,
 * asks the model for the completion time (dg_drive_access serialises them like one actuator),
 * sleeps with an absolute clock_nanosleep until ~50 us before it, spins the rest, and replies.
 * Reads return the pattern of simpattern.h, writes are timed and dropped, error defects EIO.
 * A drive that queues (ncq_depth > 1, drive model v2) is served by a second loop: the timing
 * thread hands every arrived request to the drive's queue (dg_drive_queue), lets the drive
 * choose (dg_drive_step) only once real time has reached its next decision, so that every
 * request that arrived by then takes part, and replies to each at its host-visible completion
 * (jitter delays the reply only; background periods hold the media inside the model).
 */
#define FUSE_USE_VERSION 314 /* FUSE_MAKE_VERSION(3, 14) */
#include <fuse3/fuse_lowlevel.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/model.h"
#include "simpattern.h"
#include "util.h"

#include "simdisk.h"

#define ROOT_INO     1
#define DISK_INO     2
#define MAX_IO_BYTES (1u << 20) /* FUSE's largest request: 256 pages */
#define SPIN_NS	     50000ull	/* sleep until this long before a reply, then spin */

/* ------------------------------------------------------------------------------------------ */
/* The daemon                                                                                 */
/* ------------------------------------------------------------------------------------------ */

struct sreq {
	fuse_req_t req;
	uint64_t off;
	size_t len;   /* bytes to serve (clipped at the capacity) */
	size_t asked; /* bytes the kernel asked for (writes: acknowledged) */
	bool write;
	uint64_t arrive_ns; /* model time */
	void *buf;	    /* reads: the pattern, filled by the worker */
	struct sreq *next;
	/* queued drives: the drive's answer, replied at reply_ns (model time) */
	int64_t result;
	uint64_t reply_ns;
};

struct simdisk {
	const struct dg_spec *spec;
	struct dg_drive *drive; /* only the timing thread touches it */
	uint64_t capacity_bytes;
	uint32_t sector_bytes;
	uint64_t epoch_ns; /* CLOCK_MONOTONIC at model time 0 */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct sreq *head, *tail; /* FIFO in arrival order */
	bool stop;
	/* detach on a busy loop device: once the last open of the disk file is released (the
	 * loop device let go of it), the session ends if `detach_marker` exists */
	struct fuse_session *se;
	const char *detach_marker; /* NULL in `serve` mode */
	unsigned opens;		   /* under lock */
};

/* Sleeps until CLOCK_MONOTONIC reaches `abs_ns`: an absolute sleep to SPIN_NS before, then a
 * spin, because a sleep alone wakes tens of microseconds late. */
static void wait_until(uint64_t abs_ns)
{
	uint64_t now = dg_monotonic_ns();

	if (abs_ns > now + SPIN_NS) {
		uint64_t t = abs_ns - SPIN_NS;
		struct timespec ts = {.tv_sec = (time_t)(t / DG_NS_PER_S),
				      .tv_nsec = (long)(t % DG_NS_PER_S)};
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while (dg_monotonic_ns() < abs_ns)
		;
}

static void reply(struct sreq *r, int64_t result)
{
	if (result < 0)
		fuse_reply_err(r->req, (int)-result);
	else if (r->write)
		fuse_reply_write(r->req, r->asked);
	else
		fuse_reply_buf(r->req, r->buf, r->len);
	free(r->buf);
	free(r);
}

static void *timing_thread_ncq(struct simdisk *sd);

static void *timing_thread(void *arg)
{
	struct simdisk *sd = arg;

	if (dg_spec_ncq_depth(sd->spec) > 1)
		return timing_thread_ncq(sd);
	for (;;) {
		struct sreq *r;
		uint64_t lba, end, done_ns = 0;
		int64_t res;

		pthread_mutex_lock(&sd->lock);
		while (!sd->head && !sd->stop)
			pthread_cond_wait(&sd->cond, &sd->lock);
		r = sd->head;
		if (r) {
			sd->head = r->next;
			if (!sd->head)
				sd->tail = NULL;
		}
		pthread_mutex_unlock(&sd->lock);
		if (!r)
			break; /* stopping and drained */

		lba = r->off / sd->sector_bytes;
		end = (r->off + r->len + sd->sector_bytes - 1) / sd->sector_bytes;
		res = dg_drive_access(sd->drive, r->arrive_ns, r->write, lba, (uint32_t)(end - lba),
				      &done_ns);
		if (res >= 0 || res == -EIO) {
			if (done_ns < r->arrive_ns)
				done_ns = r->arrive_ns;
			wait_until(sd->epoch_ns + done_ns);
		}
		reply(r, res < 0 ? res : 0);
	}
	return NULL;
}

/* The request's range in logical sectors (the capacity clipped it already). */
static void req_range(const struct simdisk *sd, const struct sreq *r, uint64_t *lba, uint32_t *n)
{
	uint64_t end = (r->off + r->len + sd->sector_bytes - 1) / sd->sector_bytes;

	*lba = r->off / sd->sector_bytes;
	*n = (uint32_t)(end - *lba);
}

/* Queued drives (ncq_depth > 1): requests go to the drive's queue as they arrive; the drive
 * chooses when real time reaches its next decision; replies go out at their completions. */
static void *timing_thread_ncq(struct simdisk *sd)
{
	struct sreq *replies = NULL; /* sorted by reply_ns */

	for (;;) {
		struct sreq *in;
		bool stop;

		pthread_mutex_lock(&sd->lock);
		in = sd->head;
		sd->head = sd->tail = NULL;
		stop = sd->stop;
		pthread_mutex_unlock(&sd->lock);
		while (in) {
			struct sreq *nx = in->next;
			uint64_t lba;
			uint32_t n;
			req_range(sd, in, &lba, &n);
			if (dg_drive_queue(sd->drive, in->arrive_ns, in->write, lba, n,
					   (uint64_t)(uintptr_t)in))
				reply(in, -ENOMEM);
			in = nx;
		}
		uint64_t now = dg_monotonic_ns() - sd->epoch_ns;
		uint64_t next = dg_drive_next_ns(sd->drive);
		if (next <= now) {
			uint64_t tag, done;
			int64_t res;
			if (dg_drive_step(sd->drive, &tag, &res, &done) == 1) {
				struct sreq *r = (struct sreq *)(uintptr_t)tag, **pp = &replies;
				r->result = res;
				r->reply_ns = done > r->arrive_ns ? done : r->arrive_ns;
				while (*pp && (*pp)->reply_ns <= r->reply_ns)
					pp = &(*pp)->next;
				r->next = *pp;
				*pp = r;
			}
			continue;
		}
		while (replies && replies->reply_ns <= now) {
			struct sreq *r = replies;
			replies = r->next;
			reply(r, r->result < 0 ? r->result : 0);
		}
		if (stop && !replies && next == UINT64_MAX)
			break;
		uint64_t wake = replies && replies->reply_ns < next ? replies->reply_ns : next;
		if (wake <= now)
			continue;
		pthread_mutex_lock(&sd->lock);
		if (!sd->head && !sd->stop) {
			if (wake == UINT64_MAX) {
				pthread_cond_wait(&sd->cond, &sd->lock);
			} else if (wake > now + SPIN_NS) {
				uint64_t t = sd->epoch_ns + wake - SPIN_NS;
				struct timespec ts = {.tv_sec = (time_t)(t / DG_NS_PER_S),
						      .tv_nsec = (long)(t % DG_NS_PER_S)};
				pthread_cond_timedwait(&sd->cond, &sd->lock, &ts);
			}
		}
		bool idle = !sd->head;
		pthread_mutex_unlock(&sd->lock);
		/* the last stretch: spin (a new arrival waits at most SPIN_NS) */
		if (idle && wake != UINT64_MAX &&
		    wake <= dg_monotonic_ns() - sd->epoch_ns + SPIN_NS)
			while (dg_monotonic_ns() - sd->epoch_ns < wake)
				;
	}
	return NULL;
}

/* Queues a request, stamping its arrival under the lock so that queue order is arrival order. */
static void submit(struct simdisk *sd, struct sreq *r)
{
	pthread_mutex_lock(&sd->lock);
	r->arrive_ns = dg_monotonic_ns() - sd->epoch_ns;
	r->next = NULL;
	if (sd->tail)
		sd->tail->next = r;
	else
		sd->head = r;
	sd->tail = r;
	pthread_cond_signal(&sd->cond);
	pthread_mutex_unlock(&sd->lock);
}

static void fill_attr(const struct simdisk *sd, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == ROOT_INO) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)sd->capacity_bytes;
		st->st_blksize = (blksize_t)sd->sector_bytes;
		st->st_blocks = (blkcnt_t)(sd->capacity_bytes / 512);
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	/* Large requests (libfuse asks the kernel for max_write / page size pages per request),
	 * asynchronous direct I/O so the loop driver can keep several requests in flight, and
	 * enough background requests for a queue depth of 64. */
	conn->max_write = MAX_IO_BYTES;
	conn->max_read = MAX_IO_BYTES; /* must equal the max_read mount option */
	conn->max_readahead = MAX_IO_BYTES;
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	conn->want &=
	    ~(unsigned)(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
	conn->max_background = 64;
	conn->congestion_threshold = 48;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct simdisk *sd = fuse_req_userdata(req);
	struct fuse_entry_param e;

	if (parent != ROOT_INO || strcmp(name, DISK_NAME)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DISK_INO;
	e.attr_timeout = 3600;
	e.entry_timeout = 3600;
	fill_attr(sd, DISK_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct simdisk *sd = fuse_req_userdata(req);
	struct stat st;

	if (ino != ROOT_INO && ino != DISK_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(sd, ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct simdisk *sd = fuse_req_userdata(req);
	struct stat st;

	/* A drive has a fixed size; times and modes are not kept. */
	if ((to_set & FUSE_SET_ATTR_SIZE) &&
	    (ino != DISK_INO || (uint64_t)attr->st_size != sd->capacity_bytes)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	fill_attr(sd, ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DISK_INO) {
		fuse_reply_err(req, ino == ROOT_INO ? EISDIR : ENOENT);
		return;
	}
	/* No page cache: every read reaches the drive, and the loop driver can use direct I/O. */
	fi->direct_io = 1;
	fi->keep_cache = 0;
	struct simdisk *sd = fuse_req_userdata(req);
	pthread_mutex_lock(&sd->lock);
	sd->opens++;
	pthread_mutex_unlock(&sd->lock);
	if (fuse_reply_open(req, fi)) {
		pthread_mutex_lock(&sd->lock);
		sd->opens--;
		pthread_mutex_unlock(&sd->lock);
	}
}

/* The loop device holds the disk file open while it is bound: the last release after a detach
 * was asked for (the marker file exists) ends the daemon, which then cleans up after itself. */
static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct simdisk *sd = fuse_req_userdata(req);
	bool last = false;

	if (ino == DISK_INO) {
		pthread_mutex_lock(&sd->lock);
		if (sd->opens)
			sd->opens--;
		last = sd->opens == 0;
		pthread_mutex_unlock(&sd->lock);
	}
	fuse_reply_err(req, 0);
	if (last && sd->detach_marker && access(sd->detach_marker, F_OK) == 0)
		fuse_session_exit(sd->se);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct simdisk *sd = fuse_req_userdata(req);
	struct sreq *r;

	if (off < 0 || (uint64_t)off >= sd->capacity_bytes || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->req = req;
	r->off = (uint64_t)off;
	r->asked = size;
	r->len = size < sd->capacity_bytes - r->off ? size : sd->capacity_bytes - r->off;
	r->buf = malloc(r->len);
	if (!r->buf) {
		free(r);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* Fill here, in the worker, so the timing thread only replies. */
	dg_simpattern_fill(r->buf, r->off, r->len);
	submit(sd, r);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct simdisk *sd = fuse_req_userdata(req);
	struct sreq *r;

	if (off < 0 || (uint64_t)off >= sd->capacity_bytes) {
		fuse_reply_err(req, ENOSPC);
		return;
	}
	if (size == 0) {
		fuse_reply_write(req, 0);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r->req = req;
	r->write = true;
	r->off = (uint64_t)off;
	r->len = size < sd->capacity_bytes - r->off ? size : sd->capacity_bytes - r->off;
	r->asked = r->len;
	submit(sd, r);
}

static void op_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0); /* writes are dropped: nothing to flush */
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != ROOT_INO) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fuse_reply_open(req, fi);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	static const struct {
		const char *name;
		fuse_ino_t ino;
	} entries[] = {{".", ROOT_INO}, {"..", ROOT_INO}, {DISK_NAME, DISK_INO}};
	char buf[512];
	size_t used = 0;

	for (size_t i = (size_t)off; i < ARRAY_SIZE(entries); i++) {
		struct stat st = {.st_ino = entries[i].ino,
				  .st_mode = entries[i].ino == ROOT_INO ? S_IFDIR : S_IFREG};
		size_t need = fuse_add_direntry(req, NULL, 0, entries[i].name, NULL, 0);
		if (used + need > size || used + need > sizeof(buf))
			break;
		fuse_add_direntry(req, buf + used, sizeof(buf) - used, entries[i].name, &st,
				  (off_t)(i + 1));
		used += need;
	}
	fuse_reply_buf(req, buf, used);
}

static const struct fuse_lowlevel_ops simdisk_ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .flush = op_ok,
    .release = op_release,
    .fsync = op_fsync,
    .opendir = op_opendir,
    .readdir = op_readdir,
    .releasedir = op_ok,
};

/* The daemon's state before the model and the session exist. */
static void sd_init(struct simdisk *sd, const struct dg_spec *spec, const char *detach_marker)
{
	pthread_condattr_t ca;

	memset(sd, 0, sizeof(*sd));
	sd->spec = spec;
	sd->capacity_bytes = dg_spec_capacity_bytes(spec);
	sd->sector_bytes = dg_spec_sector_bytes(spec);
	sd->detach_marker = detach_marker;
	pthread_mutex_init(&sd->lock, NULL);
	/* timed waits of the queued timing thread are on CLOCK_MONOTONIC */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sd->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* Reads allocate up to 1 MiB per request: keep that on the heap (no mmap/munmap and page
	 * faults per request). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

int simdisk_serve(const struct dg_spec *spec, const char *mnt, const char *detach_marker,
		  int ready_fd)
{
	char max_read_opt[64];
	char *argv[] = {PROG, "-o",	    "fsname=" PROG, "-o", "subtype=diskgeo",
			"-o", max_read_opt, NULL,	    NULL};
	int argc = 7;
	struct fuse_args args;
	struct simdisk sd;
	struct fuse_session *se = NULL;
	struct fuse_loop_config *cfg = NULL;
	pthread_t timer;
	bool timer_started = false, mounted = false;
	sigset_t all, old;
	char msg[DG_ERRLEN] = "";
	int rc = EXIT_SYSTEM;

	snprintf(max_read_opt, sizeof(max_read_opt), "max_read=%u", MAX_IO_BYTES);
	if (getenv("DISKGEO_SIMDISK_DEBUG"))
		argv[argc++] = "-d";
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);

	sd_init(&sd, spec, detach_marker);
	if (dg_drive_new(spec, &sd.drive)) {
		snprintf(msg, sizeof(msg), "cannot create the drive model: out of memory");
		goto err;
	}
	se = fuse_session_new(&args, &simdisk_ops, sizeof(simdisk_ops), &sd);
	if (!se) {
		snprintf(msg, sizeof(msg), "cannot create the FUSE session");
		goto err;
	}
	sd.se = se;
	if (fuse_set_signal_handlers(se)) {
		snprintf(msg, sizeof(msg), "cannot install signal handlers");
		goto err;
	}
	if (fuse_session_mount(se, mnt)) {
		snprintf(msg, sizeof(msg), "cannot mount FUSE on %s (is /dev/fuse usable?)", mnt);
		goto err;
	}
	mounted = true;
	sd.epoch_ns = dg_monotonic_ns();
	/* The timing thread takes no signals: SIGTERM must reach the session loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_create(&timer, NULL, timing_thread, &sd) == 0)
		timer_started = true;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!timer_started) {
		snprintf(msg, sizeof(msg), "cannot start the timing thread");
		goto err;
	}
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		snprintf(msg, sizeof(msg), "out of memory");
		goto err;
	}
	fuse_loop_cfg_set_idle_threads(cfg, 8);
	fuse_loop_cfg_set_max_threads(cfg, 32);
	if (ready_fd >= 0) {
		dprintf(ready_fd, "ok\n");
		close(ready_fd);
		ready_fd = -1;
	}
	rc = fuse_session_loop_mt(se, cfg) == 0 ? EXIT_OK : EXIT_SYSTEM;
err:
	if (ready_fd >= 0) {
		dprintf(ready_fd, "%s\n", msg[0] ? msg : "the daemon failed to start");
		close(ready_fd);
	} else if (msg[0]) {
		fprintf(stderr, PROG ": %s\n", msg);
	}
	if (timer_started) {
		pthread_mutex_lock(&sd.lock);
		sd.stop = true;
		pthread_cond_signal(&sd.cond);
		pthread_mutex_unlock(&sd.lock);
		pthread_join(timer, NULL);
	}
	if (mounted)
		fuse_session_unmount(se);
	if (se) {
		fuse_remove_signal_handlers(se);
		fuse_session_destroy(se);
	}
	fuse_loop_cfg_destroy(cfg);
	dg_drive_free(sd.drive);
	fuse_opt_free_args(&args);
	return rc;
}
