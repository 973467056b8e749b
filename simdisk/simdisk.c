/* SPDX-License-Identifier: MIT */
/*
 * diskgeo-simdisk: a drive spec served through FUSE as one file, attached as a loop device, so
 * that the real io_uring path of diskgeo can be tested end to end against a drive whose truth is
 * known.
 *
 *   diskgeo-simdisk attach SPEC|NAME    prints /dev/loopN
 *   diskgeo-simdisk detach /dev/loopN   removes exactly what attach created
 *   diskgeo-simdisk list                the instances attach created and that still exist
 *   diskgeo-simdisk serve SPEC|NAME DIR runs the daemon in the foreground on DIR (debugging)
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
 *
 * State: each attach makes a private directory RUNDIR/sim-XXXXXX holding the mount point `mnt`,
 * the daemon's log and a `state` file (spec, mount point, daemon pid and start time, loop
 * device). detach only acts on a loop device that a state file names, and only detaches it if
 * its backing file is still this instance's file.
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

#define PROG		"diskgeo-simdisk"
#define RUNDIR_DEFAULT	"/run/diskgeo-simdisk"
#define DISK_NAME	"disk"
#define ROOT_INO	1
#define DISK_INO	2
#define MAX_IO_BYTES	(1u << 20) /* FUSE's largest request: 256 pages */
#define SPIN_NS		50000ull   /* sleep until this long before a reply, then spin */
#define STOP_TIMEOUT_MS 10000
#define DETACH_MARKER	"detach" /* in an instance's directory: detach was asked for */

enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_SYSTEM = 2 };

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

/*
 * Mounts `spec` at `mnt` and serves it until unmounted or signalled. When `ready_fd` >= 0, writes
 * "ok\n" there once mounted, or one line of error text, and closes it. Returns an exit code.
 */
static int serve(const struct dg_spec *spec, const char *mnt, const char *detach_marker,
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

	memset(&sd, 0, sizeof(sd));
	sd.spec = spec;
	sd.capacity_bytes = dg_spec_capacity_bytes(spec);
	sd.sector_bytes = dg_spec_sector_bytes(spec);
	sd.detach_marker = detach_marker;
	pthread_mutex_init(&sd.lock, NULL);
	{
		/* timed waits of the queued timing thread are on CLOCK_MONOTONIC */
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&sd.cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	/* Reads allocate up to 1 MiB per request: keep that on the heap (no mmap/munmap and page
	 * faults per request). */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
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

/* ------------------------------------------------------------------------------------------ */
/* attach / detach                                                                            */
/* ------------------------------------------------------------------------------------------ */

static void errmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void errmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const char *rundir(void)
{
	const char *d = getenv("DISKGEO_SIMDISK_RUNDIR");

	return d && d[0] ? d : RUNDIR_DEFAULT;
}

/* One attached instance, as its state file records it. */
struct instance {
	char dir[PATH_MAX];
	char mnt[PATH_MAX + 8];
	char file[PATH_MAX + 16];
	char spec[PATH_MAX];
	char loop[256];
	pid_t pid;
	unsigned long long starttime; /* /proc/PID/stat field 22: guards against pid reuse */
};

/*
 * The state directories are trusted to name what detach unmounts, kills and detaches, so they
 * must be ours: a real directory (not a symlink) owned by the effective user and writable by
 * no one else. Returns 0, or -EPERM with the reason in `why`.
 */
static int check_private_dir(const char *path, char *why, size_t len)
{
	struct stat st;

	if (lstat(path, &st)) {
		int e = errno;
		snprintf(why, len, "%s: %s", path, strerror(e));
		return -e;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s: the state directory is %s, not a directory", path,
			 S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
		return -EPERM;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		snprintf(why, len,
			 "%s: the state directory must be owned by uid %u and writable by no one "
			 "else (it is owned by uid %u, mode %04o); refusing to trust it",
			 path, (unsigned)geteuid(), (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Removes an instance's files and directory (what is already gone is fine). */
static void remove_state(const struct instance *in)
{
	static const char *const files[] = {"state", "state.tmp", "daemon.log", DETACH_MARKER};
	char path[PATH_MAX + 16];

	if (in->mnt[0])
		rmdir(in->mnt);
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", in->dir, files[i]);
		unlink(path);
	}
	rmdir(in->dir);
}

static int write_state(const struct instance *in)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/state", in->dir);
	snprintf(tmp, sizeof(tmp), "%s/state.tmp", in->dir);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "spec=%s\nmountpoint=%s\nfile=%s\npid=%d\nstarttime=%llu\nloop=%s\n", in->spec,
		in->mnt, in->file, (int)in->pid, in->starttime, in->loop);
	if (fflush(f) || fsync(fileno(f))) {
		int rc = -errno;
		fclose(f);
		unlink(tmp);
		return rc;
	}
	fclose(f);
	if (rename(tmp, path)) {
		int rc = -errno;
		unlink(tmp);
		return rc;
	}
	return 0;
}

static int read_state(const char *dir, struct instance *in)
{
	char path[PATH_MAX + 16], line[PATH_MAX + 32];
	FILE *f;

	memset(in, 0, sizeof(*in));
	snprintf(in->dir, sizeof(in->dir), "%s", dir);
	snprintf(path, sizeof(path), "%s/state", dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (!eq)
			continue;
		*eq++ = '\0';
		if (!strcmp(line, "spec"))
			snprintf(in->spec, sizeof(in->spec), "%s", eq);
		else if (!strcmp(line, "mountpoint"))
			snprintf(in->mnt, sizeof(in->mnt), "%s", eq);
		else if (!strcmp(line, "file"))
			snprintf(in->file, sizeof(in->file), "%s", eq);
		else if (!strcmp(line, "pid"))
			in->pid = (pid_t)atoi(eq);
		else if (!strcmp(line, "starttime"))
			in->starttime = strtoull(eq, NULL, 10);
		else if (!strcmp(line, "loop"))
			snprintf(in->loop, sizeof(in->loop), "%s", eq);
	}
	fclose(f);
	/* The mount point and the served file are where attach puts them, never elsewhere. */
	char mnt[sizeof(in->mnt)], file[sizeof(in->file)];
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(file, sizeof(file), "%s/" DISK_NAME, mnt);
	if (strcmp(in->mnt, mnt) || strcmp(in->file, file) ||
	    (in->loop[0] && strncmp(in->loop, "/dev/loop", 9)))
		return -EPERM;
	return 0;
}

/* Field 22 of /proc/PID/stat (start time in clock ticks), and whether the process is a zombie
 * or gone. Returns 0 when the process runs, -ESRCH when it is gone or a zombie. */
static int proc_starttime(pid_t pid, unsigned long long *starttime)
{
	char path[64], buf[1024];
	FILE *f;
	char *p;
	char state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -ESRCH;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -ESRCH;
	}
	fclose(f);
	p = strrchr(buf, ')'); /* comm may hold spaces */
	if (!p || sscanf(p + 2, "%c", &state) != 1 || state == 'Z' || state == 'X')
		return -ESRCH;
	/* After ") S ": fields 3.. ; starttime is field 22, the 20th after the state. */
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -ESRCH;
		p++;
	}
	*starttime = strtoull(p, NULL, 10);
	return 0;
}

/* True when process `pid` runs this program (the same executable file) as
 * "diskgeo-simdisk attach SPEC": what attach's daemon looks like. */
static bool is_our_daemon(pid_t pid, const char *spec)
{
	char path[64], cmd[PATH_MAX + 64];
	struct stat self, other;
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat("/proc/self/exe", &self) || stat(path, &other) || self.st_dev != other.st_dev ||
	    self.st_ino != other.st_ino)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, cmd, sizeof(cmd) - 1);
	close(fd);
	if (n <= 0)
		return false;
	cmd[n] = '\0';
	/* argv[0] \0 "attach" \0 SPEC \0 */
	const char *a1 = cmd + strlen(cmd) + 1;
	if (a1 >= cmd + n || strcmp(a1, "attach"))
		return false;
	const char *a2 = a1 + strlen(a1) + 1;
	return a2 < cmd + n && !strcmp(a2, spec);
}

/* True when `in->pid` is still the daemon this instance started: the start time it recorded,
 * and this program running `attach SPEC` (a forged pid names some other process). */
static bool daemon_alive(const struct instance *in)
{
	unsigned long long st;

	if (in->pid <= 0 || in->starttime == 0 || proc_starttime(in->pid, &st))
		return false;
	return st == in->starttime && is_our_daemon(in->pid, in->spec);
}

static bool is_mounted(const char *mnt)
{
	char line[PATH_MAX * 2 + 256];
	bool found = false;
	FILE *f = fopen("/proc/mounts", "r");

	if (!f)
		return false;
	/* only a mount of this program's FUSE file system counts (fsname, subtype of serve) */
	while (!found && fgets(line, sizeof(line), f)) {
		char dev[256], dir[PATH_MAX * 2], type[64];
		if (sscanf(line, "%255s %4095s %63s", dev, dir, type) == 3 && !strcmp(dir, mnt) &&
		    !strcmp(dev, PROG) && !strcmp(type, "fuse.diskgeo"))
			found = true;
	}
	fclose(f);
	return found;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Reads fd to its end (or until buf is full) into buf, NUL-ended, trailing newlines removed. */
static void read_line(int fd, char *buf, size_t len)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == len - 1)
			break;
	}
	buf[got] = '\0';
	while (got && buf[got - 1] == '\n')
		buf[--got] = '\0';
}

/*
 * Runs argv (PATH lookup, then /usr/sbin and /sbin), its stdout captured into out (NUL-ended,
 * trailing newline removed) and its stderr into errbuf. Returns its exit status, or -errno when
 * it could not run.
 */
static int run(char *const argv[], char *out, size_t outlen, char *errbuf, size_t errlen)
{
	int po[2], pe[2], status;
	pid_t pid;

	if (pipe2(po, O_CLOEXEC))
		return -errno;
	if (pipe2(pe, O_CLOEXEC)) {
		int rc = -errno;
		close(po[0]);
		close(po[1]);
		return rc;
	}
	pid = fork();
	if (pid < 0) {
		int rc = -errno;
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		return rc;
	}
	if (pid == 0) {
		char path[PATH_MAX];
		dup2(po[1], STDOUT_FILENO);
		dup2(pe[1], STDERR_FILENO);
		execvp(argv[0], argv);
		snprintf(path, sizeof(path), "/usr/sbin/%s", argv[0]);
		execv(path, argv);
		snprintf(path, sizeof(path), "/sbin/%s", argv[0]);
		execv(path, argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	/* The outputs are short (one line each): read stdout to its end, then stderr. */
	read_line(po[0], out, outlen);
	read_line(pe[0], errbuf, errlen);
	close(po[0]);
	close(pe[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The kernel name of a loop device path ("/dev/loop3" -> "loop3"), or NULL. */
static const char *loop_name(const char *dev)
{
	const char *base = strrchr(dev, '/');

	base = base ? base + 1 : dev;
	return strncmp(base, "loop", 4) ? NULL : base;
}

/* Reads /sys/block/NAME/loop/ATTR into buf (newline removed). Returns 0 or -errno. */
/* Sets /sys/block/loopN/queue/rotational to 0 or 1. Returns 0 or -errno. */
static int mark_rotational(const char *dev, int rotational)
{
	const char *name = loop_name(dev);
	char path[PATH_MAX];
	FILE *f;
	int rc = 0;

	if (!name)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/block/%s/queue/rotational", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fputs(rotational ? "1\n" : "0\n", f) == EOF)
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

static int loop_attr(const char *dev, const char *attr, char *buf, size_t len)
{
	const char *name = loop_name(dev);
	char path[PATH_MAX];
	FILE *f;

	if (!name)
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/block/%s/loop/%s", name, attr);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* True when loop device `dev` is bound to `file`. */
static bool loop_bound_to(const char *dev, const char *file)
{
	char backing[PATH_MAX];

	return loop_attr(dev, "backing_file", backing, sizeof(backing)) == 0 &&
	       !strcmp(backing, file);
}

/*
 * Tears an instance down in reverse order of attach: loop device (only when still bound to
 * this instance's file), mount, daemon, state directory. Each step tolerates what is already
 * gone, so this also cleans up after a failed attach or a crashed daemon. Returns 0 when
 * everything is gone, else -EBUSY (with a message printed).
 */
static int teardown(struct instance *in)
{
	char out[256], errbuf[512], path[PATH_MAX + 16];
	int rc = 0;

	if (in->loop[0] && loop_bound_to(in->loop, in->file)) {
		char *argv[] = {"losetup", "-d", in->loop, NULL};
		/* If the device is busy, the kernel detaches it when its last user closes it
		 * (autoclear); the daemon sees its file released then and, finding this marker,
		 * unmounts and removes the state itself. */
		snprintf(path, sizeof(path), "%s/" DETACH_MARKER, in->dir);
		int mfd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (mfd >= 0)
			close(mfd);
		int st = run(argv, out, sizeof(out), errbuf, sizeof(errbuf));
		if (st != 0)
			errmsg("losetup -d %s failed: %s", in->loop, errbuf[0] ? errbuf : "?");
		/* LOOP_CLR_FD defers while someone holds the device open (autoclear). */
		for (int t = 0; t < STOP_TIMEOUT_MS / 10 && loop_bound_to(in->loop, in->file); t++)
			sleep_ms(10);
		if (loop_bound_to(in->loop, in->file)) {
			errmsg("%s is in use: the kernel detaches it when its last user closes it, "
			       "and the daemon then unmounts and removes %s by itself",
			       in->loop, in->dir);
			return -EBUSY;
		}
	}
	if (in->mnt[0] && is_mounted(in->mnt)) {
		/* Unmounting ends the daemon's session loop (its /dev/fuse reads fail). */
		for (int t = 0; t < 100 && umount2(in->mnt, 0) && errno == EBUSY; t++)
			sleep_ms(20);
		if (is_mounted(in->mnt) && umount2(in->mnt, MNT_DETACH)) {
			errmsg("cannot unmount %s: %s", in->mnt, strerror(errno));
			rc = -EBUSY;
		}
	}
	if (daemon_alive(in)) {
		kill(in->pid, SIGTERM);
		for (int t = 0; t < STOP_TIMEOUT_MS / 10 && daemon_alive(in); t++)
			sleep_ms(10);
		if (daemon_alive(in)) {
			kill(in->pid, SIGKILL);
			for (int t = 0; t < 100 && daemon_alive(in); t++)
				sleep_ms(10);
		}
	}
	if (rc)
		return rc;
	remove_state(in);
	if (access(in->dir, F_OK) == 0) {
		errmsg("cannot remove %s (it holds files that attach did not create)", in->dir);
		return -EBUSY;
	}
	return 0;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			if (mkdir(tmp, mode) && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

static int cmd_attach(const char *what, int rotational)
{
	char err[DG_ERRLEN], out[256], errbuf[512], sector[16], dio[16];
	char tmpl[PATH_MAX], msg[DG_ERRLEN];
	struct dg_spec *spec = NULL;
	struct instance in;
	int ready[2] = {-1, -1};
	size_t n = 0;
	pid_t pid;
	int rc;

	if (geteuid() != 0) {
		errmsg("attach needs root (it mounts FUSE and sets up a loop device)");
		return EXIT_SYSTEM;
	}
	rc = dg_spec_load(what, &spec, NULL, err, sizeof(err));
	if (rc) {
		errmsg("%s", err[0] ? err : strerror(-rc));
		return EXIT_USAGE;
	}
	memset(&in, 0, sizeof(in));
	snprintf(in.spec, sizeof(in.spec), "%s", what);
	rc = mkdir_p(rundir(), 0700);
	if (rc) {
		errmsg("cannot create %s: %s", rundir(), strerror(-rc));
		dg_spec_free(spec);
		return EXIT_SYSTEM;
	}
	if (check_private_dir(rundir(), err, sizeof(err))) {
		errmsg("%s", err);
		dg_spec_free(spec);
		return EXIT_USAGE;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/sim-XXXXXX", rundir());
	if (!mkdtemp(tmpl)) {
		errmsg("cannot create a directory in %s: %s", rundir(), strerror(errno));
		dg_spec_free(spec);
		return EXIT_SYSTEM;
	}
	snprintf(in.dir, sizeof(in.dir), "%s", tmpl);
	snprintf(in.mnt, sizeof(in.mnt), "%s/mnt", in.dir);
	snprintf(in.file, sizeof(in.file), "%s/" DISK_NAME, in.mnt);
	if (mkdir(in.mnt, 0700)) {
		errmsg("cannot create %s: %s", in.mnt, strerror(errno));
		goto err;
	}
	if (pipe2(ready, O_CLOEXEC)) {
		errmsg("pipe: %s", strerror(errno));
		goto err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		errmsg("fork: %s", strerror(errno));
		goto err;
	}
	if (pid == 0) {
		/* The daemon: its own session, stdio on /dev/null and its log. */
		char log[PATH_MAX + 16];
		int fd;
		close(ready[0]);
		setsid();
		fd = open("/dev/null", O_RDWR);
		snprintf(log, sizeof(log), "%s/daemon.log", in.dir);
		int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
		}
		/* Never keep the caller's stderr: a caller reading it to its end would hang. */
		if (lfd >= 0)
			dup2(lfd, STDERR_FILENO);
		else if (fd >= 0)
			dup2(fd, STDERR_FILENO);
		if (chdir("/"))
			_exit(EXIT_SYSTEM);
		char marker[PATH_MAX + 16];
		snprintf(marker, sizeof(marker), "%s/" DETACH_MARKER, in.dir);
		int st = serve(spec, in.mnt, marker, ready[1]);
		/* a detach that found the loop device busy left this to us (see op_release) */
		if (access(marker, F_OK) == 0)
			remove_state(&in);
		_exit(st);
	}
	close(ready[1]);
	ready[1] = -1;
	in.pid = pid;
	for (;;) {
		ssize_t r = read(ready[0], msg + n, sizeof(msg) - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof(msg) - 1)
			break;
	}
	msg[n] = '\0';
	msg[strcspn(msg, "\n")] = '\0';
	close(ready[0]);
	ready[0] = -1;
	if (strcmp(msg, "ok")) {
		errmsg("%s", msg[0] ? msg : "the daemon died while starting");
		waitpid(pid, NULL, 0);
		in.pid = 0;
		goto err;
	}
	/* The daemon outlives us; a failed attach must still stop it. */
	if (proc_starttime(pid, &in.starttime))
		in.starttime = 0;
	rc = write_state(&in);
	if (rc) {
		errmsg("cannot write the state file in %s: %s", in.dir, strerror(-rc));
		goto err;
	}
	/* The first access waits for the kernel's INIT handshake: a refused one shows here. */
	{
		struct stat st;
		if (stat(in.file, &st) || (uint64_t)st.st_size != dg_spec_capacity_bytes(spec)) {
			errmsg("the FUSE file system did not come up (%s; see %s/daemon.log)",
			       strerror(errno), in.dir);
			goto err;
		}
	}
	snprintf(sector, sizeof(sector), "%u", dg_spec_sector_bytes(spec));
	{
		char *argv[] = {"losetup",	 "--find", "--show", "--direct-io=on",
				"--sector-size", sector,   in.file,  NULL};
		rc = run(argv, out, sizeof(out), errbuf, sizeof(errbuf));
	}
	if (rc != 0 || strncmp(out, "/dev/loop", 9)) {
		errmsg("losetup failed: %s", errbuf[0] ? errbuf : rc < 0 ? strerror(-rc) : out);
		goto err;
	}
	snprintf(in.loop, sizeof(in.loop), "%s", out);
	rc = write_state(&in);
	if (rc) {
		errmsg("cannot write the state file in %s: %s", in.dir, strerror(-rc));
		goto err;
	}
	if (loop_attr(in.loop, "dio", dio, sizeof(dio)) == 0 && strcmp(dio, "1"))
		errmsg("warning: %s does buffered I/O (the kernel refused direct I/O on the FUSE "
		       "file); timings go through the page cache",
		       in.loop);
	/* The loop driver copies "rotational" from the disk under the FUSE mount; the drive it
	 * serves does rotate, so say so (best effort: a kernel that refuses keeps its value). */
	mark_rotational(in.loop, rotational);
	/* A loop device shows only the logical sector, as a USB bridge that hides 512e does: say
	 * what the drive emulates (on stderr: stdout is the device name alone). */
	if (dg_spec_physical_sector_bytes(spec) != dg_spec_sector_bytes(spec))
		errmsg("%s emulates %u-byte physical sectors (%u-byte logical); the loop device "
		       "shows only the logical size",
		       in.loop, dg_spec_physical_sector_bytes(spec), dg_spec_sector_bytes(spec));
	printf("%s\n", in.loop);
	dg_spec_free(spec);
	return fflush(stdout) ? EXIT_SYSTEM : EXIT_OK;
err:
	if (ready[0] >= 0)
		close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	teardown(&in);
	if (in.pid > 0 && waitpid(in.pid, NULL, WNOHANG) == 0) {
		/* our child, whatever daemon_alive() could verify */
		kill(in.pid, SIGKILL);
		waitpid(in.pid, NULL, 0);
		remove_state(&in);
	}
	dg_spec_free(spec);
	return EXIT_SYSTEM;
}

/* Calls fn for each instance directory under the run directory; stops when fn returns != 0 and
 * returns that. */
static int each_instance(int (*fn)(struct instance *in, void *arg), void *arg)
{
	DIR *d = opendir(rundir());
	struct dirent *de;
	int rc = 0;

	if (!d)
		return 0;
	/* the caller checked rundir() itself (check_private_dir) */
	while (!rc && (de = readdir(d))) {
		char dir[PATH_MAX];
		struct instance in;
		if (strncmp(de->d_name, "sim-", 4))
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", rundir(), de->d_name);
		char why[PATH_MAX + 256];
		if (check_private_dir(dir, why, sizeof(why)) || read_state(dir, &in))
			continue; /* not ours: never acted on */
		rc = fn(&in, arg);
	}
	closedir(d);
	return rc;
}

struct find_arg {
	dev_t rdev;
	struct instance found;
};

static int match_loop(struct instance *in, void *arg)
{
	struct find_arg *fa = arg;
	struct stat st;

	if (!in->loop[0] || stat(in->loop, &st) || !S_ISBLK(st.st_mode) || st.st_rdev != fa->rdev)
		return 0;
	fa->found = *in;
	return 1;
}

static int cmd_detach(const char *dev)
{
	struct find_arg fa;
	struct stat st;

	if (stat(dev, &st)) {
		errmsg("%s: %s", dev, strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISBLK(st.st_mode)) {
		errmsg("%s is not a block device", dev);
		return EXIT_USAGE;
	}
	char why[PATH_MAX + 256];
	if (access(rundir(), F_OK) == 0 && check_private_dir(rundir(), why, sizeof(why))) {
		errmsg("%s", why);
		return EXIT_USAGE;
	}
	memset(&fa, 0, sizeof(fa));
	fa.rdev = st.st_rdev;
	if (each_instance(match_loop, &fa) != 1) {
		errmsg("%s was not attached by " PROG " (no state in %s); refusing to touch it",
		       dev, rundir());
		return EXIT_USAGE;
	}
	if (!loop_bound_to(fa.found.loop, fa.found.file))
		errmsg("warning: %s is no longer bound to %s; cleaning up the rest only",
		       fa.found.loop, fa.found.file);
	if (geteuid() != 0) {
		errmsg("detach needs root");
		return EXIT_SYSTEM;
	}
	return teardown(&fa.found) ? EXIT_SYSTEM : EXIT_OK;
}

static int print_instance(struct instance *in, void *arg)
{
	printf("%s\t%s\tpid %d%s\t%s\n", in->loop[0] ? in->loop : "-", in->spec, (int)in->pid,
	       daemon_alive(in) ? "" : " (gone)", in->mnt);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: " PROG " attach SPEC|NAME [--rotational 0|1]\n"
	    "       " PROG " detach /dev/loopN | loopN\n"
	    "       " PROG " list\n"
	    "       " PROG " serve SPEC|NAME MOUNTPOINT\n"
	    "       " PROG " --help | --version\n\n"
	    "Serves a simulated hard disk (a diskgeo drive spec: a built-in NAME such as\n"
	    "wd-red-4tb, or a JSON file) as a real block device with the drive's timing, for\n"
	    "end-to-end tests of diskgeo. Needs root, /dev/fuse and loop devices.\n\n"
	    "  attach   starts the daemon (FUSE, one file '" DISK_NAME
	    "'), attaches the file with\n"
	    "           losetup --direct-io=on --sector-size <logical>, prints /dev/loopN\n"
	    "           (and, on stderr, the physical sector size a 512e drive emulates);\n"
	    "           --rotational 0|1 sets the loop device's rotational flag (default 1)\n"
	    "  detach   detaches a loop device that attach created, unmounts, stops the daemon\n"
	    "           and removes its state; any other loop device is refused\n"
	    "  list     lists the instances attach created\n"
	    "'" PROG " COMMAND --help' describes one command.\n"
	    "  serve    runs the daemon in the foreground on MOUNTPOINT (debugging)\n\n"
	    "Reads return a deterministic pattern (each 8-byte word: its byte offset XOR\n"
	    "0x%016llx), writes are timed and dropped, error defects fail with EIO. Replies\n"
	    "leave at the modelled completion time, from one timing thread.\n\n"
	    "Environment: DISKGEO_SIMDISK_RUNDIR (state, default " RUNDIR_DEFAULT "),\n"
	    "DISKGEO_SIMDISK_DEBUG (FUSE debug output into the daemon's log).\n"
	    "Exit status: 0 success, 1 bad usage or spec or a device it did not create,\n"
	    "2 the system refused (not root, FUSE, losetup).\n",
	    (unsigned long long)DG_SIMPATTERN_KEY);
}

/* One subcommand's help, for "SUBCOMMAND --help". */
static const struct {
	const char *name, *text;
} sub_help[] = {
    {"attach", "Usage: " PROG " attach SPEC|NAME\n\n"
	       "Starts a daemon serving the drive spec (a built-in NAME such as wd-red-4tb, or a\n"
	       "JSON file) through FUSE, attaches it to a loop device with the drive's logical\n"
	       "sector size and prints the device (/dev/loopN). Needs root, /dev/fuse and loop.\n"},
    {"detach",
     "Usage: " PROG " detach /dev/loopN | loopN\n\n"
     "Detaches a loop device that attach created, unmounts, stops its daemon and removes\n"
     "its state. Any other loop device is refused (exit 1).\n"},
    {"list", "Usage: " PROG " list\n\n"
	     "Lists the instances attach created: loop device, spec, daemon pid, mount point.\n"},
    {"serve", "Usage: " PROG " serve SPEC|NAME MOUNTPOINT\n\n"
	      "Runs the daemon in the foreground on MOUNTPOINT (debugging).\n"},
};

static bool is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int main(int argc, char **argv)
{
	char devpath[64];

	if (argc >= 2 && is_help(argv[1])) {
		usage(stdout);
		return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
	}
	for (size_t i = 0; argc >= 3 && i < ARRAY_SIZE(sub_help); i++) {
		if (strcmp(argv[1], sub_help[i].name))
			continue;
		for (int k = 2; k < argc; k++) {
			if (is_help(argv[k])) {
				fputs(sub_help[i].text, stdout);
				return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
			}
		}
	}
	/* "detach loop5" is "detach /dev/loop5", as losetup takes either */
	if (argc == 3 && !strcmp(argv[1], "detach") && !strchr(argv[2], '/') &&
	    !strncmp(argv[2], "loop", 4) &&
	    snprintf(devpath, sizeof(devpath), "/dev/%s", argv[2]) < (int)sizeof(devpath))
		argv[2] = devpath;
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf(PROG " %s\n", DG_VERSION);
		return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
	}
	if (argc >= 3 && !strcmp(argv[1], "attach")) {
		/* attach SPEC|NAME [--rotational 0|1] (the option before or after the spec) */
		const char *what = NULL;
		int rotational = 1;
		for (int i = 2; i < argc; i++) {
			if (!strcmp(argv[i], "--rotational") ||
			    !strncmp(argv[i], "--rotational=", 13)) {
				const char *v = argv[i][12] == '=' ? argv[i] + 13
						: i + 1 < argc	   ? argv[++i]
								   : "";
				if (strcmp(v, "0") && strcmp(v, "1")) {
					errmsg("--rotational: must be 0 or 1 (got '%s')", v);
					return EXIT_USAGE;
				}
				rotational = v[0] == '1';
			} else if (!what && argv[i][0] != '-') {
				what = argv[i];
			} else {
				errmsg("attach: unexpected argument '%s'", argv[i]);
				return EXIT_USAGE;
			}
		}
		if (!what) {
			errmsg("attach needs a drive spec or a built-in name");
			return EXIT_USAGE;
		}
		return cmd_attach(what, rotational);
	}
	if (argc == 3 && !strcmp(argv[1], "detach"))
		return cmd_detach(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "list")) {
		char why[PATH_MAX + 256];
		if (access(rundir(), F_OK) == 0 && check_private_dir(rundir(), why, sizeof(why))) {
			errmsg("%s", why);
			return EXIT_USAGE;
		}
		each_instance(print_instance, NULL);
		return fflush(stdout) ? EXIT_USAGE : EXIT_OK;
	}
	if (argc == 4 && !strcmp(argv[1], "serve")) {
		struct dg_spec *spec = NULL;
		char err[DG_ERRLEN];
		int rc = dg_spec_load(argv[2], &spec, NULL, err, sizeof(err));
		if (rc) {
			errmsg("%s", err[0] ? err : strerror(-rc));
			return EXIT_USAGE;
		}
		rc = serve(spec, argv[3], NULL, -1);
		dg_spec_free(spec);
		return rc;
	}
	usage(stderr);
	return EXIT_USAGE;
}
