/* SPDX-License-Identifier: MIT */
/*
 * The guarded write curve, `diskgeo bandwidth --write` (issue 7, item 2):
 * - on sim: drives in virtual time: writes are timed like reads, so every sample is within 2% of
 *   dg_truth_rate_mb_per_s and the zones are the truth's; a write run gives the read run's rates
 *   exactly; the profile marks the samples as writes and lists what was written;
 * - the refusals, each one line and the contract's code, with nothing written: no
 *   --confirm-destroy, a NAME that is not the device's, --confirm-destroy without --write, a time
 *   budget; a device opened read-only refuses writes at the engine (-EBADF, nothing written);
 * - the data: a file (and, as root, a loop device over a file) filled with a known pattern is
 *   written by a curve; afterwards the bytes inside the reported samples are exactly the write
 *   pattern and every other byte is the original (positioning reads change nothing);
 * - as root: a mounted loop device and one held open O_EXCL by another process are refused
 *   (exit 2, one line, nothing written); on diskgeo-simdisk (FUSE; skipped without it) a 3-sample
 *   write curve in real time is within 5% of the truth (retried once: real time is noisy).
 * Root-only parts are skipped (not failed) without root; the whole program exits 77 only when
 * nothing at all could run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "diskgeo/bandwidth.h"
#include "diskgeo/device.h"
#include "diskgeo/engine.h"
#include "diskgeo/model.h"
#include "t_helpers.h"
#include "util.h"

#define MiB	(1ull << 20)
#define SIMDISK DG_BINARY_DIR "/simdisk/diskgeo-simdisk"

static const char *binary = DG_BINARY_DIR "/diskgeo";
static char tmpdir[64]; /* under /var/tmp: a disk file system, where O_DIRECT works */
static char out_path[128], err_path[128];

/* ---- helpers ---- */

/* Runs diskgeo with `argv` (argv[0] included); stderr into errbuf. Returns its exit status. */
static int diskgeo(const char *const *argv, char *errbuf, size_t len)
{
	int rc = t_exec_files(binary, argv, out_path, err_path);

	t_slurp(err_path, errbuf, len);
	return rc;
}

/* Runs a shell command; its first line of stdout into out (may be NULL). Returns its status. */
static int shell(const char *cmd, char *out, size_t len)
{
	char line[512] = "";
	FILE *f = popen(cmd, "r");
	int st;

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		line[strcspn(line, "\n")] = '\0';
	while (fgetc(f) != EOF)
		;
	st = pclose(f);
	if (out)
		snprintf(out, len, "%s", line);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The "original" bytes of the test files: splitmix64 of each 8-byte word's offset, so that no
 * stretch looks like the write pattern or like zeros. */
static void original_bytes(unsigned char *buf, size_t len, uint64_t off)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t x = (off + i) / 8 + 0x9e3779b97f4a7c15ull;

		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		x ^= x >> 31;
		memcpy(buf + i, &x, 8);
	}
}

static void make_file(const char *path, uint64_t size)
{
	unsigned char *buf = malloc(MiB);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_non_null(buf);
	assert_true(fd >= 0);
	for (uint64_t off = 0; off < size; off += MiB) {
		original_bytes(buf, MiB, off);
		assert_int_equal(pwrite(fd, buf, MiB, (off_t)off), (ssize_t)MiB);
	}
	assert_int_equal(fsync(fd), 0);
	close(fd);
	free(buf);
}

static int cmp_extent(const void *a, const void *b)
{
	const struct dg_bandwidth_extent *x = a, *y = b;

	return (x->offset_bytes > y->offset_bytes) - (x->offset_bytes < y->offset_bytes);
}

/* Sorts and merges v[0..*n) in place. */
static void merge(struct dg_bandwidth_extent *v, size_t *n)
{
	size_t k = 0;

	qsort(v, *n, sizeof(*v), cmp_extent);
	for (size_t i = 0; i < *n; i++) {
		if (k > 0 && v[i].offset_bytes <= v[k - 1].offset_bytes + v[k - 1].length_bytes) {
			uint64_t end = v[i].offset_bytes + v[i].length_bytes;

			if (end > v[k - 1].offset_bytes + v[k - 1].length_bytes)
				v[k - 1].length_bytes = end - v[k - 1].offset_bytes;
			continue;
		}
		v[k++] = v[i];
	}
	*n = k;
}

/* The ranges of a JSON array of {offset_bytes, length_bytes}; *n gets the count. */
static struct dg_bandwidth_extent *extents_of(json_t *arr, size_t *n)
{
	struct dg_bandwidth_extent *v;
	size_t i;
	json_t *x;

	assert_true(json_is_array(arr));
	*n = json_array_size(arr);
	v = calloc(*n ? *n : 1, sizeof(*v));
	assert_non_null(v);
	json_array_foreach(arr, i, x)
	{
		v[i].offset_bytes =
		    (uint64_t)json_integer_value(json_object_get(x, "offset_bytes"));
		v[i].length_bytes =
		    (uint64_t)json_integer_value(json_object_get(x, "length_bytes"));
		assert_true(v[i].length_bytes > 0);
	}
	return v;
}

/*
 * Asserts `path` holds the write pattern exactly inside `w[0..n)` (merged) and the original
 * bytes everywhere else, compared per MiB.
 */
static void check_file(const char *path, uint64_t size, const struct dg_bandwidth_extent *w,
		       size_t n)
{
	unsigned char *got = malloc(MiB), *want = malloc(MiB);
	int fd = open(path, O_RDONLY);
	uint64_t inside = 0;

	assert_non_null(got);
	assert_non_null(want);
	assert_true(fd >= 0);
	for (uint64_t off = 0; off < size; off += MiB) {
		assert_int_equal(pread(fd, got, MiB, (off_t)off), (ssize_t)MiB);
		original_bytes(want, MiB, off);
		for (size_t i = 0; i < n; i++) {
			uint64_t a = w[i].offset_bytes, b = a + w[i].length_bytes;

			if (a < off)
				a = off;
			if (b > off + MiB)
				b = off + MiB;
			if (a >= b)
				continue;
			dg_bandwidth_write_pattern(want + (a - off), (size_t)(b - a), a);
			inside += b - a;
		}
		if (memcmp(got, want, MiB)) {
			size_t j = 0;
			while (got[j] == want[j])
				j++;
			fail_msg("%s: byte %" PRIu64 " is %s than expected", path, off + j,
				 got[j] != want[j] ? "other" : "the same");
		}
	}
	assert_true((n > 0) == (inside > 0));
	close(fd);
	free(got);
	free(want);
}

/*
 * Checks a write-curve profile: mode "write", every sample marked "op": "write", written[]
 * equal to the union of the samples (curve and refinement), written_bytes their total, all of it
 * inside [0, size); then the file's bytes against it. `min_samples` curve points at least.
 */
static void check_profile_and_data(const char *json_path, const char *data_path, uint64_t size,
				   size_t min_samples)
{
	json_error_t jerr;
	json_t *doc = json_load_file(json_path, 0, &jerr), *bw, *x;
	struct dg_bandwidth_extent *s, *w;
	size_t ns, nw, i;
	uint64_t total = 0;

	if (!doc)
		fail_msg("%s: %s", json_path, jerr.text);
	bw = json_object_get(doc, "bandwidth");
	assert_string_equal(json_string_value(json_object_get(bw, "mode")), "write");
	assert_true(json_is_true(
	    json_object_get(json_object_get(json_object_get(doc, "run"), "parameters"), "write")));
	json_array_foreach(json_object_get(bw, "samples"), i, x)
	    assert_string_equal(json_string_value(json_object_get(x, "op")), "write");
	s = extents_of(json_object_get(bw, "samples"), &ns);
	w = extents_of(json_object_get(bw, "written"), &nw);
	assert_true(ns >= min_samples);
	merge(s, &ns);
	assert_int_equal(ns, nw); /* written[] comes merged and sorted */
	for (i = 0; i < nw; i++) {
		assert_int_equal(s[i].offset_bytes, w[i].offset_bytes);
		assert_int_equal(s[i].length_bytes, w[i].length_bytes);
		assert_true(w[i].offset_bytes + w[i].length_bytes <= size);
		total += w[i].length_bytes;
	}
	assert_int_equal(json_integer_value(json_object_get(bw, "written_bytes")), total);
	if (data_path)
		check_file(data_path, size, w, nw);
	free(s);
	free(w);
	json_decref(doc);
}

/* ---- sim: drives, through the library ---- */

/* Runs a curve on a fresh sim drive `sim` (write or read mode) with the defaults. */
static struct dg_bandwidth_result *sim_curve(struct t_rig *g, const char *sim, bool write)
{
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;

	t_rig_open(g, sim, DG_DEVICE_WRITE, DG_ENGINE_SIM, 4, true);
	dg_bandwidth_params_default(&p);
	p.write = write;
	/* A write curve's count resolves to 256 by itself; a read curve is told, to compare. */
	if (!write)
		p.samples = DG_BANDWIDTH_MIN_SAMPLES;
	assert_int_equal(
	    dg_bandwidth_run(g->e, dg_device_info(g->dev), &p, &g->errors, NULL, NULL, NULL, &r),
	    0);
	assert_non_null(r);
	assert_true(r->complete);
	assert_int_equal(g->errors.n, 0);
	return r;
}

/* The write curve of hgst-7k1000 (16 zones) against the truth; the same as the read curve. */
static void sim_write_curve(void **state)
{
	struct t_rig g, h;
	struct dg_bandwidth_result *w = sim_curve(&g, "sim:hgst-7k1000", true);
	struct dg_bandwidth_result *r = sim_curve(&h, "sim:hgst-7k1000", false);
	const struct dg_truth *t = g.truth;
	struct dg_bandwidth_extent *u;
	size_t nu = w->nsamples;

	(void)state;
	/* A fixed count (no pilot, no budget): what the CLI announced is what was written. */
	assert_int_equal(w->params.samples, DG_BANDWIDTH_MIN_SAMPLES);
	assert_true(w->params.write);
	assert_true(w->refine_samples > 0);
	for (size_t i = 0; i < w->nsamples; i++) {
		const struct dg_bandwidth_sample *s = &w->samples[i];
		double truth = dg_truth_rate_mb_per_s(g.spec, s->offset_bytes, s->length_bytes);

		/* Straddling a zone boundary (a set-aside curve sample, a bisection probe), a
		 * sample waits for the new zone's first sector: not the media rate. */
		if (s->excluded || s->refine)
			continue;
		if (fabs(s->mb_per_s / truth - 1) > 0.02)
			fail_msg("write sample at %" PRIu64 ": %.3f MB/s, truth %.3f",
				 s->offset_bytes, s->mb_per_s, truth);
	}
	assert_int_equal(w->nzones, t->nrecording);
	for (size_t z = 0; z < w->nzones; z++)
		assert_true(fabs(w->zones[z].mb_per_s / t->recording[z].mb_per_s - 1) < 0.01);
	/* Writes are timed like reads (drive-spec.md): the same samples, the same rates. */
	assert_int_equal(w->nsamples, r->nsamples);
	assert_int_equal(w->nzones, r->nzones);
	for (size_t i = 0; i < w->nsamples; i++) {
		assert_int_equal(w->samples[i].offset_bytes, r->samples[i].offset_bytes);
		assert_true(w->samples[i].mb_per_s == r->samples[i].mb_per_s);
	}
	/* written[]: exactly the union of the samples' timed bytes, refinement samples included. */
	u = calloc(nu, sizeof(*u));
	assert_non_null(u);
	for (size_t i = 0; i < nu; i++)
		u[i] = (struct dg_bandwidth_extent){w->samples[i].offset_bytes,
						    w->samples[i].length_bytes};
	merge(u, &nu);
	assert_int_equal(w->nwritten, nu);
	uint64_t total = 0;
	for (size_t i = 0; i < nu; i++) {
		assert_int_equal(w->written[i].offset_bytes, u[i].offset_bytes);
		assert_int_equal(w->written[i].length_bytes, u[i].length_bytes);
		total += u[i].length_bytes;
	}
	assert_int_equal(w->written_bytes, total);
	assert_int_equal(total % dg_bandwidth_timed_bytes(&w->params, dg_device_info(g.dev)), 0);
	/* A read curve writes nothing and says so. */
	assert_false(r->params.write);
	assert_int_equal(r->nwritten, 0);
	free(u);

	/* JSON: mode, op per sample, written[], run.parameters.write; read mode adds mode only. */
	json_t *jw = dg_bandwidth_json(w), *jr = dg_bandwidth_json(r);
	json_t *pw = dg_bandwidth_params_json(&w->params),
	       *pr = dg_bandwidth_params_json(&r->params);
	assert_string_equal(json_string_value(json_object_get(jw, "mode")), "write");
	assert_string_equal(json_string_value(json_object_get(jr, "mode")), "read");
	assert_string_equal(json_string_value(json_object_get(
				json_array_get(json_object_get(jw, "samples"), 0), "op")),
			    "write");
	assert_null(json_object_get(json_array_get(json_object_get(jr, "samples"), 0), "op"));
	assert_int_equal(json_array_size(json_object_get(jw, "written")), w->nwritten);
	assert_null(json_object_get(jr, "written"));
	assert_true(json_is_true(json_object_get(pw, "write")));
	assert_true(json_is_false(json_object_get(pr, "write")));
	json_decref(jw);
	json_decref(jr);
	json_decref(pw);
	json_decref(pr);
	dg_bandwidth_result_free(w);
	dg_bandwidth_result_free(r);
	t_rig_close(&g);
	t_rig_close(&h);
}

/* The pattern: each 512-byte unit names its own offset; any slice of it is the same bytes. */
static void pattern(void **state)
{
	unsigned char a[4096], b[1024];
	char head[64];

	(void)state;
	dg_bandwidth_write_pattern(a, sizeof(a), 0x123400);
	for (size_t u = 0; u < sizeof(a); u += DG_BANDWIDTH_PATTERN_UNIT) {
		snprintf(head, sizeof(head), "diskgeo write-curve %016" PRIx64 "\n",
			 (uint64_t)0x123400 + u);
		assert_memory_equal(a + u, head, strlen(head));
		assert_memory_equal(a + u + strlen(head), "diskgeo write-curve ", 20);
	}
	dg_bandwidth_write_pattern(b, sizeof(b), 0x123400 + 1024);
	assert_memory_equal(a + 1024, b, sizeof(b));
	dg_bandwidth_write_pattern(b, sizeof(b), 0x123400 + 2048);
	assert_memory_not_equal(a + 1024, b, sizeof(b));
}

/* A device opened read-only refuses the writes at the engine: -EBADF, the file unchanged. */
static void readonly_device_refuses(void **state)
{
	struct dg_engine_config cfg = {.kind = DG_ENGINE_PSYNC, .qd = 1, .max_io_bytes = MiB};
	struct dg_bandwidth_params p;
	struct dg_bandwidth_result *r = NULL;
	struct dg_device *dev = NULL;
	struct dg_engine *e = NULL;
	struct dg_errors errors = {0};
	char path[128], err[DG_ERRLEN];

	(void)state;
	snprintf(path, sizeof(path), "%s/ro.img", tmpdir);
	make_file(path, 8 * MiB);
	assert_int_equal(dg_device_open(path, 0, &dev, NULL, err, sizeof(err)), 0);
	assert_int_equal(dg_engine_open(dev, &cfg, &e, NULL, err, sizeof(err)), 0);
	dg_bandwidth_params_default(&p);
	p.write = true;
	p.samples = 4;
	p.sample_bytes = MiB;
	p.block_bytes = 256 * 1024;
	assert_int_equal(
	    dg_bandwidth_run(e, dg_device_info(dev), &p, &errors, NULL, NULL, NULL, &r), -EBADF);
	assert_null(r);
	dg_engine_close(e);
	dg_device_close(dev);
	dg_errors_free(&errors);
	check_file(path, 8 * MiB, NULL, 0);
	unlink(path);
}

/* ---- the command line ---- */

/* Each refusal: the contract's code, one line on stderr naming the problem, nothing written. */
static void refusals(void **state)
{
	char path[128], json[160], confirm[200], errbuf[4096];
	struct stat st;
	struct {
		const char *args[6];
		const char *needle;
	} cases[] = {
	    {{"--write"}, "--confirm-destroy=NAME"},
	    {{"--write", "--confirm-destroy=nope"}, "does not name"},
	    {{"--write", "--confirm-destroy="}, "does not name"},
	    {{"--write", "--confirm-destroy=img"}, "does not name"}, /* a prefix is not the name */
	    {{"--confirm-destroy=w.img"}, "with --write only"},
	    {{"--write", "--confirm-destroy=w.img", "--time-budget", "5s"}, "--samples"},
	    {{"--write", "--confirm-destroy=w.img", "--samples", "1"}, "--samples"},
	    {{"--write", "--confirm-destroy=w.img", "--range", "0:64M"}, "outside the device"},
	};

	(void)state;
	snprintf(path, sizeof(path), "%s/w.img", tmpdir);
	snprintf(json, sizeof(json), "%s/refused.json", tmpdir);
	make_file(path, 16 * MiB);
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		const char *argv[16] = {"diskgeo", "bandwidth", path};
		size_t n = 3;

		for (size_t i = 0; cases[c].args[i]; i++)
			argv[n++] = cases[c].args[i];
		argv[n++] = "--json";
		argv[n++] = json;
		assert_int_equal(diskgeo(argv, errbuf, sizeof(errbuf)), 1);
		if (t_lines(errbuf) != 1 || !strstr(errbuf, cases[c].needle) ||
		    strncmp(errbuf, "diskgeo: ", 9))
			fail_msg("case %zu: stderr '%s'", c, errbuf);
		assert_int_equal(stat(json, &st), -1); /* no profile */
	}
	check_file(path, 16 * MiB, NULL, 0);

	/* The same on a sim: drive, whose name is the spec's. */
	{
		const char *argv[] = {"diskgeo",
				      "bandwidth",
				      "sim:hgst-7k1000",
				      "--write",
				      "--confirm-destroy=wd-red-4tb",
				      NULL};
		assert_int_equal(diskgeo(argv, errbuf, sizeof(errbuf)), 1);
		assert_int_equal(t_lines(errbuf), 1);
		assert_non_null(strstr(errbuf, "'hgst-7k1000'"));
	}
	/* A missing device: exit 2, one line. */
	snprintf(confirm, sizeof(confirm), "%s/missing.img", tmpdir);
	{
		const char *argv[] = {
		    "diskgeo", "bandwidth", confirm, "--write", "--confirm-destroy=missing.img",
		    NULL};
		assert_int_equal(diskgeo(argv, errbuf, sizeof(errbuf)), 2);
		assert_int_equal(t_lines(errbuf), 1);
	}
	unlink(path);
}

/* The write curve on a sim: drive through the command line: announced, marked, exit 0. */
static void cli_sim(void **state)
{
	char json[160], errbuf[8192];
	const char *argv[] = {
	    "diskgeo",	 "bandwidth", "sim:hgst-7k1000", "--write", "--confirm-destroy=hgst-7k1000",
	    "--samples", "64",	      "--json",		 json,	    NULL};

	(void)state;
	snprintf(json, sizeof(json), "%s/sim.json", tmpdir);
	assert_int_equal(diskgeo(argv, errbuf, sizeof(errbuf)), 0);
	if (!strstr(errbuf, "diskgeo: bandwidth --write will overwrite 64 samples of ") ||
	    !strstr(errbuf, "(1006632960 bytes in all, 1.01 GB) across [0, 1000204886016) of "
			    "sim:hgst-7k1000 (hgst-7k1000)"))
		fail_msg("announcement: '%s'", errbuf);
	check_profile_and_data(json, NULL, 1000204886016ull, 64);
	t_slurp(out_path, errbuf, sizeof(errbuf));
	assert_non_null(strstr(errbuf, "write bandwidth: "));
	unlink(json);
}

/* Runs a write curve on `dev` (confirmed as `name`) and checks the bytes of `data` after it. */
static void write_and_check(const char *dev, const char *name, const char *data, uint64_t size,
			    const char *samples, const char *sample_size, bool refine,
			    const char *(*after)(const char *), const char *arg)
{
	char json[160], confirm[128], errbuf[8192];
	const char *argv[16] = {"diskgeo",   "bandwidth", dev,	   "--write",
				confirm,     "--samples", samples, "--sample-size",
				sample_size, "--json",	  json};
	size_t n = 11;

	if (!refine)
		argv[n++] = "--no-refine";
	snprintf(json, sizeof(json), "%s/data.json", tmpdir);
	snprintf(confirm, sizeof(confirm), "--confirm-destroy=%s", name);
	if (diskgeo(argv, errbuf, sizeof(errbuf)) != 0)
		fail_msg("%s: %s", dev, errbuf);
	assert_non_null(strstr(errbuf, "will overwrite"));
	if (after)
		data = after(arg);
	check_profile_and_data(json, data, size, (size_t)atoi(samples));
	unlink(json);
}

/* A regular file: the bytes change exactly inside the samples, refinement samples included. */
static void data_file(void **state)
{
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/data.img", tmpdir);
	make_file(path, 64 * MiB);
	write_and_check(path, "data.img", path, 64 * MiB, "8", "1M", false, NULL, NULL);
	make_file(path, 64 * MiB);
	write_and_check(path, "data.img", path, 64 * MiB, "16", "512k", true, NULL, NULL);
	unlink(path);
}

/* ---- root: loop devices ---- */

static bool have_root_loops(void)
{
	return geteuid() == 0 && access("/dev/loop-control", R_OK | W_OK) == 0;
}

/* losetup -f --show FILE into loop[]; false when losetup failed. */
static bool loop_attach(const char *file, char *loop, size_t len)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "PATH=$PATH:/usr/sbin:/sbin losetup -f --show '%s'", file);
	return shell(cmd, loop, len) == 0 && !strncmp(loop, "/dev/loop", 9);
}

static void loop_detach(const char *loop)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "PATH=$PATH:/usr/sbin:/sbin losetup -d %s", loop);
	assert_int_equal(shell(cmd, NULL, 0), 0);
}

static char loop_dev[64];
/* After the run: detach (the loop driver has written through to the file), then the file. */
static const char *detach_then(const char *file)
{
	loop_detach(loop_dev);
	loop_dev[0] = '\0';
	return file;
}

/* A loop device over a 256 MiB file: the file changed exactly inside the samples. */
static void data_loop(void **state)
{
	char path[128];

	(void)state;
	if (!have_root_loops())
		skip();
	snprintf(path, sizeof(path), "%s/loop.img", tmpdir);
	make_file(path, 256 * MiB);
	assert_true(loop_attach(path, loop_dev, sizeof(loop_dev)));
	write_and_check(loop_dev, loop_dev + 5, NULL, 256 * MiB, "8", "1M", false, detach_then,
			path);
	unlink(path);
}

/* Mounted, or held open O_EXCL by another process: exit 2, one line, the file unchanged. */
static void busy_loop(void **state)
{
	char path[128], mnt[128], loop[64], cmd[512], confirm[96], errbuf[4096];
	const char *argv[] = {"diskgeo", "bandwidth", loop, "--write",
			      confirm,	 "--samples", "4",  NULL};
	int fd;

	(void)state;
	if (!have_root_loops())
		skip();
	snprintf(path, sizeof(path), "%s/busy.img", tmpdir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", tmpdir);
	make_file(path, 64 * MiB);
	assert_true(loop_attach(path, loop, sizeof(loop)));
	snprintf(confirm, sizeof(confirm), "--confirm-destroy=%s", loop + 5);

	/* Held: another process (this one) has it open O_EXCL. */
	fd = open(loop, O_RDONLY | O_EXCL);
	assert_true(fd >= 0);
	assert_int_equal(diskgeo(argv, errbuf, sizeof(errbuf)), 2);
	if (t_lines(errbuf) != 1 || !strstr(errbuf, "busy"))
		fail_msg("held: '%s'", errbuf);
	close(fd);
	loop_detach(loop);
	check_file(path, 64 * MiB, NULL, 0);

	/* Mounted: a file system on it. */
	snprintf(cmd, sizeof(cmd),
		 "PATH=$PATH:/usr/sbin:/sbin mkfs.ext4 -q -F '%s' >/dev/null 2>&1", path);
	if (shell(cmd, NULL, 0) != 0) {
		unlink(path);
		skip(); /* no mkfs.ext4 */
	}
	assert_true(loop_attach(path, loop, sizeof(loop)));
	snprintf(confirm, sizeof(confirm), "--confirm-destroy=%s", loop + 5);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount(loop, mnt, "ext4", 0, NULL)) {
		print_message("mount %s: %s; mounted case skipped\n", loop, strerror(errno));
		rmdir(mnt);
		loop_detach(loop);
		unlink(path);
		skip();
	}
	int rc = diskgeo(argv, errbuf, sizeof(errbuf));
	assert_int_equal(umount(mnt), 0);
	rmdir(mnt);
	loop_detach(loop);
	assert_int_equal(rc, 2);
	if (t_lines(errbuf) != 1 || !strstr(errbuf, "mounted"))
		fail_msg("mounted: '%s'", errbuf);
	/* The file system is intact: fsck finds nothing to fix. */
	snprintf(cmd, sizeof(cmd), "PATH=$PATH:/usr/sbin:/sbin e2fsck -n -f '%s' >/dev/null 2>&1",
		 path);
	assert_int_equal(shell(cmd, NULL, 0), 0);
	unlink(path);
}

/* diskgeo-simdisk in real time: 3 write samples within 5% of the truth (one retry). On a 4Kn
 * drive: a loop device hides a 512e drive's physical sector (as a USB bridge does), so write
 * samples on its 512-byte grid would each pay a read-modify-write (issue 13's job). */
static void simdisk_rates(void **state)
{
	char loop[256] = "", json[160], confirm[300], errbuf[8192];
	const char *argv[] = {"diskgeo", "bandwidth", loop, "--write",	   confirm, "--samples",
			      "3",	 "--json",    json, "--no-refine", NULL};
	const char *attach[] = {SIMDISK, "attach", "seagate-st4000vn006", NULL};
	struct dg_spec *spec = NULL;
	double worst = 1;

	(void)state;
	if (!have_root_loops() || access("/dev/fuse", R_OK | W_OK) || access(SIMDISK, X_OK))
		skip();
	assert_int_equal(dg_spec_load("seagate-st4000vn006", &spec, NULL, errbuf, sizeof(errbuf)),
			 0);
	assert_int_equal(t_exec_files(SIMDISK, attach, out_path, err_path), 0);
	t_slurp(out_path, loop, sizeof(loop));
	loop[strcspn(loop, "\n")] = '\0';
	assert_memory_equal(loop, "/dev/loop", 9);
	snprintf(confirm, sizeof(confirm), "--confirm-destroy=%s", loop + 5);
	snprintf(json, sizeof(json), "%s/simdisk.json", tmpdir);
	for (int attempt = 0; attempt < 2 && worst >= 0.05; attempt++) {
		json_t *doc, *x;
		size_t i;

		worst = 0;
		if (diskgeo(argv, errbuf, sizeof(errbuf)) != 0)
			fail_msg("%s: %s", loop, errbuf);
		check_profile_and_data(json, NULL, dg_spec_capacity_bytes(spec), 3);
		doc = json_load_file(json, 0, NULL);
		assert_non_null(doc);
		json_array_foreach(json_object_get(json_object_get(doc, "bandwidth"), "samples"), i,
				   x)
		{
			uint64_t off =
			    (uint64_t)json_integer_value(json_object_get(x, "offset_bytes"));
			uint64_t len =
			    (uint64_t)json_integer_value(json_object_get(x, "length_bytes"));
			double got = json_real_value(json_object_get(x, "mb_per_s"));
			double truth = dg_truth_rate_mb_per_s(spec, off, len);

			print_message("simdisk write @%" PRIu64 " MiB (attempt %d): %.2f MB/s, "
				      "truth %.2f (%+.2f%%)\n",
				      (uint64_t)(off / MiB), attempt + 1, got, truth,
				      (got / truth - 1) * 100);
			if (fabs(got / truth - 1) > worst)
				worst = fabs(got / truth - 1);
		}
		json_decref(doc);
	}
	{
		const char *detach[] = {SIMDISK, "detach", loop, NULL};
		assert_int_equal(t_exec_files(SIMDISK, detach, out_path, err_path), 0);
	}
	dg_spec_free(spec);
	unlink(json);
	assert_true(worst < 0.05);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/var/tmp/dg-write-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(out_path, sizeof(out_path), "%s/stdout", tmpdir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", tmpdir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (loop_dev[0])
		loop_detach(loop_dev);
	unlink(out_path);
	unlink(err_path);
	if (rmdir(tmpdir))
		print_message("%s is not empty: %s\n", tmpdir, strerror(errno));
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(pattern),
	    cmocka_unit_test(sim_write_curve),
	    cmocka_unit_test(readonly_device_refuses),
	    cmocka_unit_test(refusals),
	    cmocka_unit_test(cli_sim),
	    cmocka_unit_test(data_file),
	    cmocka_unit_test(data_loop),
	    cmocka_unit_test(busy_loop),
	    cmocka_unit_test(simdisk_rates),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
