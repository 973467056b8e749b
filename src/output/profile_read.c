/* SPDX-License-Identifier: MIT */
/*
 * Reading profiles and model documents back (profile_read.h). Every value is checked for its
 * type, its range and its consistency with the device size before it is stored; the first
 * failure is reported as "FILE: KEY: reason" and the whole document refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "diskgeo/diskgeo.h"
#include "diskgeo/profile_read.h"

#define MODEL_SCHEMA "diskgeo.model/1"
/* Figures beyond these are not a disk's: refused as corrupt. */
#define MAX_MB_PER_S 1e6
#define MAX_MS	     1e6
#define MAX_RPM	     1e6
#define MAX_IOPS     1e9
#define MAX_STRING   256

struct reader {
	const char *name;
	char *err;
	size_t errlen;
	struct dg_profile_data *p;
	char prefix[48]; /* "bandwidth.samples[3]." while reading an entry */
};

static int fail(struct reader *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct reader *r, const char *key, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	char where[128];
	snprintf(where, sizeof(where), "%s%s", r->prefix, key ? key : "");
	size_t n = strlen(where);
	if (n && where[n - 1] == '.')
		where[n - 1] = 0;
	if (r->err && r->errlen)
		snprintf(r->err, r->errlen, "%s: %s%s%s", r->name, where, where[0] ? ": " : "",
			 why);
	return -EINVAL;
}

/* A member of object `o` by a dotted path ("seek.fit.rms_ms"); NULL when any step is absent or
 * not an object. */
static json_t *at(json_t *o, const char *dotted)
{
	char buf[64];
	const char *p = dotted;

	while (o && json_is_object(o)) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (n >= sizeof(buf))
			return NULL;
		memcpy(buf, p, n);
		buf[n] = 0;
		o = json_object_get(o, buf);
		if (!dot)
			return o;
		p = dot + 1;
	}
	return NULL;
}

/* An optional number in [lo, hi] into *v (NaN when absent). JSON null counts as absent. */
static int opt_number(struct reader *r, json_t *o, const char *key, double lo, double hi, double *v)
{
	json_t *j = at(o, key);

	*v = NAN;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_number(j))
		return fail(r, key, "not a number");
	double x = json_number_value(j);
	if (!isfinite(x) || x < lo || x > hi)
		return fail(r, key, "%g is out of range [%g, %g]", x, lo, hi);
	*v = x;
	return 0;
}

static int req_number(struct reader *r, json_t *o, const char *key, double lo, double hi, double *v)
{
	int rc = opt_number(r, o, key, lo, hi, v);

	if (!rc && isnan(*v))
		return fail(r, key, "missing");
	return rc;
}

/* A byte count or position: a non-negative JSON integer no larger than `max`. */
static int req_bytes(struct reader *r, json_t *o, const char *key, uint64_t max, uint64_t *v)
{
	json_t *j = at(o, key);

	if (!j)
		return fail(r, key, "missing");
	if (!json_is_integer(j))
		return fail(r, key, "not an integer");
	json_int_t x = json_integer_value(j);
	if (x < 0 || (uint64_t)x > max)
		return fail(r, key, "%lld is out of range [0, %llu]", (long long)x,
			    (unsigned long long)max);
	*v = (uint64_t)x;
	return 0;
}

/* An optional string of printable length into a new copy (*v NULL when absent). */
static int opt_string(struct reader *r, json_t *o, const char *key, char **v)
{
	json_t *j = at(o, key);

	*v = NULL;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_string(j))
		return fail(r, key, "not a string");
	if (json_string_length(j) > MAX_STRING)
		return fail(r, key, "longer than %d bytes", MAX_STRING);
	if (strlen(json_string_value(j)) != json_string_length(j))
		return fail(r, key, "contains a NUL character");
	*v = strdup(json_string_value(j));
	return *v ? 0 : -ENOMEM;
}

/* The array at `key` (absent = 0 entries) checked for size; *a NULL when absent. */
static int opt_array(struct reader *r, json_t *o, const char *key, size_t max, json_t **a)
{
	json_t *j = at(o, key);

	*a = NULL;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_array(j))
		return fail(r, key, "not an array");
	if (json_array_size(j) > max)
		return fail(r, key, "more than %zu entries", max);
	*a = j;
	return 0;
}

/* Starts reading entry i of array `key`: messages name it "key[i].member". */
static int item_object(struct reader *r, const char *key, size_t i, json_t *e)
{
	snprintf(r->prefix, sizeof(r->prefix), "%s[%zu].", key, i);
	if (!json_is_object(e)) {
		snprintf(r->prefix, sizeof(r->prefix), "%s[%zu]", key, i);
		return fail(r, NULL, "not an object");
	}
	return 0;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct dg_pr_sample *x = a, *y = b;

	return x->offset_bytes < y->offset_bytes ? -1 : x->offset_bytes > y->offset_bytes;
}

static int read_samples(struct reader *r, json_t *doc)
{
	struct dg_profile_data *p = r->p;
	json_t *a, *e;
	size_t i;
	int rc = opt_array(r, doc, "bandwidth.samples", DG_PROFILE_READ_MAX_SAMPLES, &a);

	if (rc || !a || !json_array_size(a))
		return rc;
	p->samples = calloc(json_array_size(a), sizeof(*p->samples));
	if (!p->samples)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		struct dg_pr_sample *s = &p->samples[i];

		if ((rc = item_object(r, "bandwidth.samples", i, e)) ||
		    (rc = req_bytes(r, e, "offset_bytes", p->size_bytes, &s->offset_bytes)) ||
		    (rc = req_bytes(r, e, "length_bytes", p->size_bytes - s->offset_bytes,
				    &s->length_bytes)) ||
		    (rc = req_number(r, e, "mb_per_s", 0, MAX_MB_PER_S, &s->mb_per_s)))
			return rc;
		if (!s->length_bytes || s->mb_per_s <= 0)
			return fail(r, NULL, "has no length or no rate");
		p->nsamples++;
	}
	r->prefix[0] = 0;
	qsort(p->samples, p->nsamples, sizeof(*p->samples), cmp_sample);
	return 0;
}

static int read_zones(struct reader *r, json_t *doc, const char *key)
{
	struct dg_profile_data *p = r->p;
	json_t *a, *e;
	size_t i;
	int rc = opt_array(r, doc, key, DG_PROFILE_READ_MAX_ZONES, &a);

	if (rc || !a || !json_array_size(a))
		return rc;
	p->zones = calloc(json_array_size(a), sizeof(*p->zones));
	if (!p->zones)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		struct dg_pr_zone *z = &p->zones[i];

		if ((rc = item_object(r, key, i, e)) ||
		    (rc = req_bytes(r, e, "start_bytes", p->size_bytes, &z->start_bytes)) ||
		    (rc = req_bytes(r, e, "end_bytes", p->size_bytes, &z->end_bytes)) ||
		    (rc = req_number(r, e, "mb_per_s", 0, MAX_MB_PER_S, &z->mb_per_s)))
			return rc;
		if (z->end_bytes <= z->start_bytes || z->mb_per_s <= 0)
			return fail(r, NULL, "is empty or has no rate");
		if (i && z->start_bytes < p->zones[i - 1].end_bytes)
			return fail(r, NULL, "overlaps or precedes the one before");
		p->nzones++;
	}
	r->prefix[0] = 0;
	return 0;
}

static int read_spans(struct reader *r, json_t *doc, const char *key)
{
	struct dg_profile_data *p = r->p;
	json_t *a, *e;
	size_t i;
	int rc = opt_array(r, doc, key, DG_PROFILE_READ_MAX_OTHER, &a);

	if (rc || !a || !json_array_size(a))
		return rc;
	p->spans = calloc(json_array_size(a), sizeof(*p->spans));
	if (!p->spans)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		struct dg_pr_span *s = &p->spans[i];
		double n;

		if ((rc = item_object(r, key, i, e)) ||
		    (rc = req_bytes(r, e, "start_bytes", p->size_bytes, &s->start_bytes)) ||
		    (rc = req_bytes(r, e, "span_bytes", p->size_bytes - s->start_bytes,
				    &s->span_bytes)) ||
		    (rc = req_bytes(r, e, "block_bytes", 1u << 30, &s->block_bytes)) ||
		    (rc = req_number(r, e, "iops", 0, MAX_IOPS, &s->iops)) ||
		    (rc = opt_number(r, e, "samples", 0, 1e9, &n)))
			return rc;
		if (!s->span_bytes || s->iops <= 0)
			return fail(r, NULL, "has no span or no IOPS");
		s->samples = isnan(n) ? 0 : (unsigned)n;
		p->nspans++;
	}
	r->prefix[0] = 0;
	return 0;
}

static int cmp_point(const void *a, const void *b)
{
	const struct dg_pr_point *x = a, *y = b;

	return x->distance_bytes < y->distance_bytes ? -1 : x->distance_bytes > y->distance_bytes;
}

static int read_points(struct reader *r, json_t *doc)
{
	struct dg_profile_data *p = r->p;
	json_t *a, *e;
	size_t i;
	int rc = opt_array(r, doc, "seek.points", DG_PROFILE_READ_MAX_OTHER, &a);

	if (rc || !a || !json_array_size(a))
		return rc;
	p->points = calloc(json_array_size(a), sizeof(*p->points));
	if (!p->points)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		struct dg_pr_point *pt = &p->points[p->npoints];

		if ((rc = item_object(r, "seek.points", i, e)) ||
		    (rc = req_bytes(r, e, "distance_bytes", p->size_bytes, &pt->distance_bytes)) ||
		    (rc = opt_number(r, e, "seek_ms", 0, MAX_MS, &pt->seek_ms)))
			return rc;
		if (!isnan(pt->seek_ms))
			p->npoints++;
	}
	r->prefix[0] = 0;
	qsort(p->points, p->npoints, sizeof(*p->points), cmp_point);
	return 0;
}

static int copy_word(struct reader *r, json_t *e, const char *key, char *dst, size_t len,
		     const char *const *allowed)
{
	json_t *j = json_object_get(e, key);

	if (!json_is_string(j))
		return fail(r, key, "missing or not a string");
	for (; *allowed; allowed++)
		if (!strcmp(json_string_value(j), *allowed)) {
			snprintf(dst, len, "%s", *allowed);
			return 0;
		}
	return fail(r, key, "not one of the known words");
}

static int read_cells(struct reader *r, json_t *doc)
{
	static const char *const kinds[] = {"seq", "rand", NULL};
	static const char *const ops[] = {"read", "write", NULL};
	static const char *const wheres[] = {"outer", "inner", "full", "first10", NULL};
	struct dg_profile_data *p = r->p;
	json_t *a, *e;
	size_t i;
	int rc = opt_array(r, doc, "sweep.cells", DG_PROFILE_READ_MAX_OTHER, &a);

	if (rc || !a || !json_array_size(a))
		return rc;
	p->cells = calloc(json_array_size(a), sizeof(*p->cells));
	if (!p->cells)
		return -ENOMEM;
	json_array_foreach(a, i, e)
	{
		struct dg_pr_cell *c = &p->cells[i];
		uint64_t qd;

		if ((rc = item_object(r, "sweep.cells", i, e)) ||
		    (rc = copy_word(r, e, "kind", c->kind, sizeof(c->kind), kinds)) ||
		    (rc = copy_word(r, e, "op", c->op, sizeof(c->op), ops)) ||
		    (rc = copy_word(r, e, "where", c->where, sizeof(c->where), wheres)) ||
		    (rc = req_bytes(r, e, "block_bytes", 1u << 30, &c->block_bytes)) ||
		    (rc = req_bytes(r, e, "qd", 65536, &qd)) ||
		    (rc = opt_number(r, e, "mb_per_s", 0, MAX_MB_PER_S, &c->mb_per_s)) ||
		    (rc = opt_number(r, e, "iops", 0, MAX_IOPS, &c->iops)))
			return rc;
		c->qd = (unsigned)qd;
		p->ncells++;
	}
	r->prefix[0] = 0;
	return 0;
}

static int read_doc(struct reader *r, json_t *doc)
{
	struct dg_profile_data *p = r->p;
	json_t *schema = json_object_get(doc, "schema");
	uint64_t size;
	int rc;

	if (!json_is_string(schema))
		return fail(r, NULL, "not a diskgeo profile (no \"schema\" key)");
	if (!strcmp(json_string_value(schema), MODEL_SCHEMA))
		p->is_model = true;
	else if (strcmp(json_string_value(schema), DG_SCHEMA))
		return fail(r, "schema", "\"%.40s\" is neither " DG_SCHEMA " nor " MODEL_SCHEMA,
			    json_string_value(schema));
	if (p->is_model) {
		if ((rc = req_bytes(r, doc, "capacity_bytes", INT64_MAX, &size)))
			return rc;
		p->size_bytes = size;
		if ((rc = opt_string(r, doc, "name", &p->model)) ||
		    (rc = read_zones(r, doc, "recording_zones")) ||
		    (rc = opt_number(r, doc, "rpm", 0, MAX_RPM, &p->rpm)) ||
		    (rc = opt_number(r, doc, "seek.track_to_track_ms", 0, MAX_MS,
				     &p->track_to_track_ms)) ||
		    (rc = opt_number(r, doc, "seek.average_ms", 0, MAX_MS, &p->average_ms)) ||
		    (rc = opt_number(r, doc, "seek.full_stroke_ms", 0, MAX_MS, &p->full_stroke_ms)))
			return rc;
		if (!size)
			return fail(r, "capacity_bytes", "zero");
		if ((rc = read_spans(r, doc, "random_4k")) || (rc = read_points(r, doc)) ||
		    (rc = opt_number(r, doc, "period_ms", 0, MAX_MS, &p->period_ms)) ||
		    (rc = opt_number(r, doc, "command_overhead_ms", 0, MAX_MS,
				     &p->command_overhead_ms)))
			return rc;
		p->noise_percent = 0;
		p->seek_rms_ms = 0;
	} else {
		if ((rc = req_bytes(r, doc, "device.size_bytes", INT64_MAX, &size)))
			return rc;
		if (!size)
			return fail(r, "device.size_bytes", "zero");
		p->size_bytes = size;
		if ((rc = opt_string(r, doc, "device.model", &p->model)) ||
		    (rc = opt_string(r, doc, "device.serial", &p->serial)) ||
		    (rc = opt_string(r, doc, "device.firmware", &p->firmware)) ||
		    (rc = opt_string(r, doc, "device.path", &p->device)) ||
		    (rc = read_samples(r, doc)) || (rc = read_zones(r, doc, "bandwidth.zones")) ||
		    (rc = opt_number(r, doc, "bandwidth.noise_percent", 0, 100,
				     &p->noise_percent)) ||
		    (rc = opt_number(r, doc, "rotation.rpm", 0, MAX_RPM, &p->rpm)) ||
		    (rc = opt_number(r, doc, "seek.track_to_track_ms", 0, MAX_MS,
				     &p->track_to_track_ms)) ||
		    (rc = opt_number(r, doc, "seek.average_ms", 0, MAX_MS, &p->average_ms)) ||
		    (rc = opt_number(r, doc, "seek.full_stroke_ms", 0, MAX_MS,
				     &p->full_stroke_ms)) ||
		    (rc = opt_number(r, doc, "seek.fit.rms_ms", 0, MAX_MS, &p->seek_rms_ms)) ||
		    (rc = opt_number(r, doc, "rotation.period_ms", 0, MAX_MS, &p->period_ms)) ||
		    (rc = opt_number(r, doc, "seek.command_overhead_ms", 0, MAX_MS,
				     &p->command_overhead_ms)) ||
		    (rc = read_points(r, doc)) || (rc = read_spans(r, doc, "iops.spans")) ||
		    (rc = read_cells(r, doc)))
			return rc;
	}
	if ((rc = opt_number(r, doc, p->is_model ? "outer_mb_per_s" : "bandwidth.outer_mb_per_s", 0,
			     MAX_MB_PER_S, &p->outer_mb_per_s)) ||
	    (rc = opt_number(r, doc, p->is_model ? "inner_mb_per_s" : "bandwidth.inner_mb_per_s", 0,
			     MAX_MB_PER_S, &p->inner_mb_per_s)))
		return rc;
	return 0;
}

static void index_free(struct dg_pr_index *x);
static int build_index(struct dg_profile_data *p);

void dg_profile_data_free(struct dg_profile_data *p)
{
	if (!p)
		return;
	free(p->path);
	free(p->model);
	free(p->serial);
	free(p->firmware);
	free(p->device);
	free(p->samples);
	free(p->zones);
	free(p->spans);
	free(p->cells);
	free(p->points);
	index_free(p->index);
	free(p);
}

static int parse(const char *name, json_t *doc, struct dg_profile_data **out, char *err,
		 size_t errlen)
{
	struct reader r = {name, err, errlen, calloc(1, sizeof(struct dg_profile_data)), ""};
	int rc;

	if (!r.p)
		return -ENOMEM;
	r.p->path = strdup(name);
	if (!r.p->path) {
		dg_profile_data_free(r.p);
		return -ENOMEM;
	}
	if (!json_is_object(doc))
		rc = fail(&r, NULL, "not a diskgeo profile (not a JSON object)");
	else
		rc = read_doc(&r, doc);
	if (!rc)
		rc = build_index(r.p);
	if (rc == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", name);
	if (rc) {
		dg_profile_data_free(r.p);
		return rc;
	}
	*out = r.p;
	return 0;
}

int dg_profile_read_buffer(const char *name, const char *buf, size_t len,
			   struct dg_profile_data **out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *doc;
	int rc;

	*out = NULL;
	if (len > DG_PROFILE_READ_MAX_BYTES) {
		snprintf(err, errlen, "%s: larger than %u MiB: not a profile", name,
			 DG_PROFILE_READ_MAX_BYTES >> 20);
		return -EFBIG;
	}
	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	/* jansson leaves the error empty when one of its allocations failed */
	if (!doc && (json_error_code(&je) == json_error_out_of_memory || !je.text[0])) {
		snprintf(err, errlen, "%s: %s", name, strerror(ENOMEM));
		return -ENOMEM;
	}
	if (!doc) {
		/* jansson quotes the input near the error: keep its control bytes off a terminal */
		for (char *c = je.text; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		snprintf(err, errlen, "%s: not valid JSON (line %d, column %d: %s)", name, je.line,
			 je.column, je.text);
		return -EINVAL;
	}
	rc = parse(name, doc, out, err, errlen);
	json_decref(doc);
	return rc;
}

int dg_profile_read(const char *path, struct dg_profile_data **out, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, rc;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "%s: not a regular file", path);
		return -EINVAL;
	}
	if ((uint64_t)st.st_size > DG_PROFILE_READ_MAX_BYTES) {
		close(fd);
		snprintf(err, errlen, "%s: larger than %u MiB: not a profile", path,
			 DG_PROFILE_READ_MAX_BYTES >> 20);
		return -EFBIG;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			close(fd);
			free(buf);
			snprintf(err, errlen, "%s: %s", path,
				 n < 0 ? strerror(-rc) : "shrank while being read");
			return rc;
		}
		len += (size_t)n;
	}
	close(fd);
	rc = dg_profile_read_buffer(path, buf, len, out, err, errlen);
	free(buf);
	return rc;
}

/* Prefix sums over the zones (bytes and seconds before zone i) and a sparse table of the
 * minimum rate over 2^k zones, so that a range's rate and its slowest zone take O(log zones)
 * whatever a document holds. */
struct dg_pr_index {
	double *cum_bytes, *cum_s; /* n + 1 entries */
	double *min[17];	   /* min[k][i]: slowest of zones i .. i + 2^k - 1 */
	size_t levels;
};

static void index_free(struct dg_pr_index *x)
{
	if (!x)
		return;
	free(x->cum_bytes);
	free(x->cum_s);
	for (size_t k = 0; k < x->levels; k++)
		free(x->min[k]);
	free(x);
}

static int build_index(struct dg_profile_data *p)
{
	size_t n = p->nzones;
	struct dg_pr_index *x = calloc(1, sizeof(*x));

	if (!x)
		return -ENOMEM;
	p->index = x;
	x->cum_bytes = calloc(n + 1, sizeof(double));
	x->cum_s = calloc(n + 1, sizeof(double));
	if (!x->cum_bytes || !x->cum_s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		double b = (double)(p->zones[i].end_bytes - p->zones[i].start_bytes);

		x->cum_bytes[i + 1] = x->cum_bytes[i] + b;
		x->cum_s[i + 1] = x->cum_s[i] + b / (p->zones[i].mb_per_s * DG_MB);
	}
	for (size_t k = 0; n && ((size_t)1 << k) <= n && k < 17; k++) {
		size_t len = n - ((size_t)1 << k) + 1;

		x->min[k] = malloc(len * sizeof(double));
		if (!x->min[k])
			return -ENOMEM;
		x->levels = k + 1;
		for (size_t i = 0; i < len; i++) {
			if (!k) {
				x->min[0][i] = p->zones[i].mb_per_s;
			} else {
				double a = x->min[k - 1][i],
				       b = x->min[k - 1][i + ((size_t)1 << (k - 1))];
				x->min[k][i] = a < b ? a : b;
			}
		}
	}
	return 0;
}

/* The first zone that ends after x (nzones when none). */
static size_t first_after(const struct dg_profile_data *p, uint64_t x)
{
	size_t lo = 0, hi = p->nzones;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->zones[mid].end_bytes <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The zones overlapping [start, end): [*a, *b). False when none. */
static bool overlapping(const struct dg_profile_data *p, uint64_t start, uint64_t end, size_t *a,
			size_t *b)
{
	if (end <= start || !p->nzones)
		return false;
	*a = first_after(p, start);
	/* the first zone that starts at or after end */
	size_t lo = *a, hi = p->nzones;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->zones[mid].start_bytes < end)
			lo = mid + 1;
		else
			hi = mid;
	}
	*b = lo;
	return *b > *a;
}

const struct dg_pr_zone *dg_profile_zone_at(const struct dg_profile_data *p, uint64_t x)
{
	size_t i = first_after(p, x);

	if (i < p->nzones && p->zones[i].start_bytes <= x)
		return &p->zones[i];
	return NULL;
}

double dg_profile_rate_mb_per_s(const struct dg_profile_data *p, uint64_t start, uint64_t end)
{
	const struct dg_pr_index *x = p->index;
	size_t a, b;

	if (!x || !overlapping(p, start, end, &a, &b))
		return NAN;
	double bytes = x->cum_bytes[b] - x->cum_bytes[a], secs = x->cum_s[b] - x->cum_s[a];
	/* less the parts of the first and last zones outside the range */
	const struct dg_pr_zone *f = &p->zones[a], *l = &p->zones[b - 1];
	if (f->start_bytes < start) {
		bytes -= (double)(start - f->start_bytes);
		secs -= (double)(start - f->start_bytes) / (f->mb_per_s * DG_MB);
	}
	if (l->end_bytes > end) {
		bytes -= (double)(l->end_bytes - end);
		secs -= (double)(l->end_bytes - end) / (l->mb_per_s * DG_MB);
	}
	return secs > 0 && bytes > 0 ? bytes / secs / DG_MB : NAN;
}

double dg_profile_slowest_mb_per_s(const struct dg_profile_data *p, uint64_t start, uint64_t end)
{
	const struct dg_pr_index *x = p->index;
	size_t a, b, k = 0;

	if (!x || !overlapping(p, start, end, &a, &b))
		return NAN;
	while (k + 1 < x->levels && ((size_t)1 << (k + 1)) <= b - a)
		k++;
	double m1 = x->min[k][a], m2 = x->min[k][b - ((size_t)1 << k)];
	return m1 < m2 ? m1 : m2;
}
