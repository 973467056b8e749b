/* SPDX-License-Identifier: MIT */
/*
 * diskgeo model: what a drive spec implies — the truth every measurement is tested against
 * (shared/drive-spec.md; computed by src/truth.c). Prints it, or writes it as JSON
 * ("diskgeo.model/1"); --list shows the built-in drives.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "diskgeo/geometry.h"
#include "diskgeo/model.h"
#include "diskgeo/profile.h"
#include "diskgeo/seek.h"

#define DG_MODEL_SCHEMA "diskgeo.model/1"

static const struct option longopts[] = {
    {"json", required_argument, NULL, 'j'},
    {"list", no_argument, NULL, 'l'},
    CLI_COMMON_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {"random", required_argument, NULL, 'r'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: diskgeo model SPEC|NAME [--json FILE|-]\n"
	    "       diskgeo model --list\n"
	    "       diskgeo model --random SEED [--json FILE|-]\n\n"
	    "Prints what a drive spec implies: capacity, rotation, zones and their sustained\n"
	    "rates, the seek curve and its averages, seek time at LBA distances, and the\n"
	    "expected random 4 KiB read time. These are the figures a perfect profiler would\n"
	    "report for sim:SPEC. NAME is a built-in drive; SPEC a JSON drive spec file, whose\n"
	    "format is in docs/drive-spec.md (installed under share/doc/diskgeo) and, in short,\n"
	    "in diskgeo(8) under DEVICES.\n\n"
	    "Options:\n"
	    "  -j, --json FILE   also write the figures as JSON (\"-\" = standard output only)\n"
	    "  -J                the same as --json -\n"
	    "  -l, --list        list the built-in drives\n"
	    "  -q, --quiet       warnings and errors only\n"
	    "  -v, --verbose     say more about what is done\n"
	    "  -h, --help        this text\n"
	    "The drive zoo:\n"
	    "  -r, --random SEED write a random plausible drive spec instead (the same seed\n"
	    "                    gives the same drive; ranges in diskgeo(8))\n");
}

static json_t *real(double x, double unit)
{
	return json_real(round(x / unit) * unit);
}

/* The spans of the random-read figures: the whole drive, then the spans `diskgeo seek` measures
 * (1, 10, 25, 50 % from the outer edge and the inner 10 %), so a profile can be checked span by
 * span. */
#define NSPANS DG_SEEK_NSPANS

struct span {
	const char *label;
	uint64_t start, len;
	double mean_ms;
};

struct model {
	const struct dg_spec *spec;
	struct dg_spec_facts facts;
	struct dg_truth *t;
	size_t npoints;
	uint64_t dist[64];
	double seek_ms[64];
	struct span spans[NSPANS];
	double qd_iops[6]; /* random 4 KiB reads over the whole drive at QD 1..32 */
};

static const unsigned qds[6] = {1, 2, 4, 8, 16, 32};

static int compute(const struct dg_spec *spec, struct model *m)
{
	int rc = dg_truth_compute(spec, &m->t);

	if (rc)
		return rc;
	m->spec = spec;
	dg_spec_facts(spec, &m->facts);
	/* doubling LBA distances from one outer track to the capacity */
	uint64_t cap = m->t->capacity_bytes;
	uint64_t d = m->facts.outer_track_bytes;
	for (; d < cap && m->npoints < 63; d *= 2) {
		m->dist[m->npoints] = d;
		m->seek_ms[m->npoints++] = dg_truth_seek_at_ms(spec, d);
	}
	m->dist[m->npoints] = cap;
	m->seek_ms[m->npoints++] = dg_truth_seek_at_ms(spec, cap);
	/* the whole drive first, then seek's other spans in its order */
	for (size_t i = 0, k = 1; i < NSPANS; i++) {
		const struct dg_seek_span_def *sp = &dg_seek_spans[i];
		struct span *out =
		    sp->start == 0 && sp->span == 1.0 ? &m->spans[0] : &m->spans[k++];
		uint64_t start = (uint64_t)(sp->start * (double)cap) / 4096 * 4096;
		uint64_t len = (uint64_t)(sp->span * (double)cap) / 4096 * 4096;

		if (start + len > cap)
			len = (cap - start) / 4096 * 4096;
		*out = (struct span){sp->label, start, len ? len : 4096, 0};
		out->mean_ms = dg_truth_random_ms(spec, start, out->len, 4096);
	}
	/* the reference simulation: 20,000 completions, fixed seed */
	for (size_t i = 0; i < 6; i++)
		m->qd_iops[i] =
		    dg_truth_random_iops(spec, 0, cap / 4096 * 4096, 4096, qds[i], 20000, 1);
	return 0;
}

static json_t *zones_json(const struct dg_truth_zone *z, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *o =
		    json_pack("{s:I,s:I,s:i,s:i,s:o}", "start_bytes", (json_int_t)z[i].start_bytes,
			      "end_bytes", (json_int_t)z[i].end_bytes, "sectors_per_track",
			      (int)z[i].sectors_per_track, "cylinders", (int)z[i].cylinders,
			      "mb_per_s", real(z[i].mb_per_s, 1e-4));
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
		if (z[i].nsurfaces) {
			json_t *sr = json_array(), *ss = json_array();
			int bad = !sr || !ss;
			for (uint32_t h = 0; !bad && h < z[i].nsurfaces; h++) {
				bad |=
				    json_array_append_new(sr, real(z[i].surface_mb_per_s[h], 1e-4));
				bad |= json_array_append_new(
				    ss, json_integer(z[i].surface_sectors_per_track[h]));
			}
			bad |= json_object_set_new(o, "surface_mb_per_s", sr);
			bad |= json_object_set_new(o, "surface_sectors_per_track", ss);
			if (bad) { /* set_new took sr and ss, even when it failed */
				json_decref(a);
				return NULL;
			}
		}
	}
	return a;
}

/* An array of n unsigned integers, or NULL. */
static json_t *uints_json(const uint32_t *v, unsigned n)
{
	json_t *a = json_array();

	for (unsigned i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_integer(v[i]))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/*
 * The skews the geometry measures (src/model/truth_geometry.c), on each of the JSON zones that
 * starts where a zone of the geometry's truth does: a head switch and a one-cylinder step into
 * each surface, head 0 first, and the zone change into the zone (not on the first), in logical
 * sectors (on a 512e drive a whole number of physical sectors, but the zone change's).
 * Nonzero on a failure.
 */
static int skews_json(json_t *zones, const struct dg_spec *spec)
{
	struct dg_geometry_truth *g = NULL;
	int bad = dg_geometry_truth_compute(spec, &g) != 0;

	for (size_t i = 0; !bad && i < g->nzones; i++) {
		const struct dg_geometry_truth_zone *tz = &g->zones[i];
		json_t *o = json_array_get(zones, i);
		json_t *at = json_object_get(o, "start_bytes");

		/* (a drive of more heads than the geometry measures: none) */
		if (!at || (uint64_t)json_integer_value(at) != tz->start_bytes ||
		    tz->nsurfaces < g->heads)
			continue;
		bad |= json_object_set_new(o, "track_skew_sectors",
					   uints_json(tz->track_skew, tz->nsurfaces));
		bad |= json_object_set_new(o, "cylinder_skew_sectors",
					   uints_json(tz->cylinder_skew, tz->nsurfaces));
		if (isfinite(tz->zone_change_skew))
			bad |= json_object_set_new(o, "zone_change_skew_sectors",
						   real(tz->zone_change_skew, 1e-3));
	}
	dg_geometry_truth_free(g);
	return bad;
}

/* The version 2 behaviours (and diskgeo's cache_segments) on doc; nonzero on a failure. */
static int behaviours_json(json_t *doc, const struct dg_spec_facts *f, const struct dg_truth *t)
{
	int rc = json_object_set_new(doc, "physical_sector_bytes",
				     json_integer(t->physical_sector_bytes));

	rc |= json_object_set_new(doc, "rmw_penalty_ms", real(t->rmw_penalty_ms, 1e-9));
	rc |= json_object_set_new(doc, "ncq_depth", json_integer(t->ncq_depth));
	rc |= json_object_set_new(doc, "look_behind", json_boolean(f->look_behind));
	rc |= json_object_set_new(doc, "jitter_ms", json_real(f->jitter_ms));
	rc |= json_object_set_new(doc, "per_surface", json_boolean(t->per_surface));
	if (f->cache_segments > 1) /* diskgeo's extension, only when the spec sets it */
		rc |= json_object_set_new(doc, "cache_segments", json_integer(f->cache_segments));
	if (f->bg_every_s > 0)
		rc |= json_object_set_new(
		    doc, "background",
		    json_pack("{s:f,s:f}", "every_s", f->bg_every_s, "busy_ms", f->bg_busy_ms));
	return rc;
}

static json_t *model_json(const struct model *m)
{
	const struct dg_spec *s = m->spec;
	const struct dg_spec_facts *f = &m->facts;
	const struct dg_truth *t = m->t;
	json_t *doc = NULL, *seek = NULL, *points = NULL, *rnd = NULL, *defects = NULL;

	points = json_array();
	rnd = json_array();
	defects = json_array();
	if (!points || !rnd || !defects)
		goto err;
	for (size_t i = 0; i < m->npoints; i++)
		if (json_array_append_new(points, json_pack("{s:I,s:o}", "distance_bytes",
							    (json_int_t)m->dist[i], "seek_ms",
							    real(m->seek_ms[i], 1e-6))))
			goto err;
	for (size_t i = 0; i < NSPANS; i++)
		if (json_array_append_new(rnd, json_pack("{s:I,s:I,s:i,s:o,s:o}", "start_bytes",
							 (json_int_t)m->spans[i].start,
							 "span_bytes", (json_int_t)m->spans[i].len,
							 "block_bytes", 4096, "mean_ms",
							 real(m->spans[i].mean_ms, 1e-6), "iops",
							 real(1e3 / m->spans[i].mean_ms, 1e-3))))
			goto err;
	for (size_t i = 0; i < f->ndefects; i++) {
		struct dg_spec_defect d;

		dg_spec_defect(s, i, &d);
		if (json_array_append_new(
			defects, json_pack("{s:I,s:I,s:s,s:o}", "lba", (json_int_t)d.lba, "count",
					   (json_int_t)d.count, "kind", d.error ? "error" : "slow",
					   "extra_ms", json_real(d.extra_ms))))
			goto err;
	}
	seek = json_pack(
	    "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "a_ms", json_real(t->seek_a_ms),
	    "b_ms", json_real(t->seek_b_ms), "c_ms", json_real(t->seek_c_ms), "e_ms",
	    json_real(t->seek_e_ms), "boundary_cylinders", json_real(t->seek_boundary_cylinders),
	    "track_to_track_ms", real(t->track_to_track_ms, 1e-6), "average_ms",
	    real(t->average_ms, 1e-6), "average_cylinder_ms", real(t->average_cylinder_ms, 1e-6),
	    "full_stroke_ms", real(t->full_stroke_ms, 1e-6), "head_switch_ms",
	    json_real(t->head_switch_ms), "points", points);
	points = NULL;
	if (!seek)
		goto err;
	doc = json_pack(
	    "{s:s,s:{s:s,s:s},s:o,s:o,s:I,s:i,s:I,s:o,s:o,s:i,s:I,s:s,s:o,s:o,s:o,s:o,"
	    "s:o,s:o,s:I,s:I,s:o,s:o,s:o}",
	    "schema", DG_MODEL_SCHEMA, "tool", "name", "diskgeo", "version", DG_VERSION, "name",
	    dg_json_text(dg_spec_name(s)), "description", dg_json_text(dg_spec_description(s)),
	    "capacity_bytes", (json_int_t)t->capacity_bytes, "sector_bytes", (int)t->sector_bytes,
	    "capacity_sectors", (json_int_t)f->capacity_sectors, "rpm", json_real(t->rpm),
	    "period_ms", real(t->period_ms, 1e-9), "heads", (int)f->heads, "cylinders",
	    (json_int_t)t->cylinders, "layout", f->serpentine ? "serpentine" : "cylinder", "zones",
	    zones_json(t->zones, t->nzones), "recording_zones",
	    zones_json(t->recording, t->nrecording), "outer_mb_per_s",
	    real(t->zones[0].mb_per_s, 1e-4), "inner_mb_per_s",
	    real(t->zones[t->nzones - 1].mb_per_s, 1e-4), "seek", seek, "command_overhead_ms",
	    json_real(t->command_overhead_ms), "cache_bytes", (json_int_t)f->cache_bytes,
	    "read_ahead_bytes", (json_int_t)f->read_ahead_bytes, "interface_mb_per_s",
	    json_real(f->interface_mb_per_s), "random_4k", rnd, "defects", defects);
	seek = rnd = defects = NULL;
	if (!doc)
		goto err;
	if (f->serpentine &&
	    json_object_set_new(doc, "band_cylinders", json_integer(f->band_cylinders)))
		goto err;
	/* version 2 */
	json_t *qa = json_array();
	int rc = 0;
	for (size_t i = 0; qa && i < 6; i++)
		if (json_array_append_new(qa, json_pack("{s:i,s:o}", "qd", (int)qds[i], "iops",
							real(m->qd_iops[i], 1e-3)))) {
			json_decref(qa);
			qa = NULL;
		}
	rc |= json_object_set_new(doc, "random_4k_qd", qa);
	rc |= behaviours_json(doc, f, t);
	rc |= skews_json(json_object_get(doc, "zones"), s);
	if (rc)
		goto err;
	return doc;
err:
	json_decref(doc);
	json_decref(seek);
	json_decref(points);
	json_decref(rnd);
	json_decref(defects);
	return NULL;
}

static void print_zone_table(FILE *out, const struct dg_truth_zone *z, size_t n)
{
	fprintf(out, "    #       start_bytes         end_bytes    spt  cylinders      MB/s\n");
	for (size_t i = 0; i < n; i++)
		fprintf(out, "  %3zu %17" PRIu64 " %17" PRIu64 " %6u %10u %9.3f\n", i + 1,
			z[i].start_bytes, z[i].end_bytes, z[i].sectors_per_track, z[i].cylinders,
			z[i].mb_per_s);
}

/* The model's notes: sector format, look-behind, jitter, background, cache, layout, defects. */
static void print_notes(FILE *out, const struct model *m)
{
	const struct dg_spec *s = m->spec;
	const struct dg_spec_facts *f = &m->facts;
	const struct dg_truth *t = m->t;

	fprintf(out, "\nnotes:\n");
	fprintf(out,
		"  physical sector %u bytes (read-modify-write penalty %.4f ms), look-behind %s, "
		"jitter %g ms",
		t->physical_sector_bytes, t->rmw_penalty_ms, f->look_behind ? "on" : "off",
		f->jitter_ms);
	if (f->bg_every_s > 0)
		fprintf(out, ", background %g ms every %g s", f->bg_busy_ms, f->bg_every_s);
	fprintf(out, "\n");
	fprintf(out,
		"  cache %.4g MiB (one segment: the current read stream), read-ahead %.4g MiB "
		"past each request, host link %g MB/s for cache hits\n",
		(double)f->cache_bytes / (1 << 20), (double)f->read_ahead_bytes / (1 << 20),
		f->interface_mb_per_s);
	if (f->serpentine)
		fprintf(out,
			"  serpentine: inside a band head 0 walks the cylinders forward, head 1 "
			"backward, head 2 forward, ...; then the next band\n");
	for (size_t i = 0; i < f->ndefects; i++) {
		struct dg_spec_defect d;

		dg_spec_defect(s, i, &d);
		fprintf(out, "  defect: %s at LBA %" PRIu64 " + %" PRIu64 " sectors, %g ms\n",
			d.error ? "error" : "slow", d.lba, d.count, d.extra_ms);
	}
	fprintf(out, "  defaults when a spec omits them: interface 550 MB/s, cache 16 MiB, "
		     "read-ahead 1 MiB, overhead 0, skews ceil(move/T*S)+1\n");
}

static void print_model(FILE *out, const struct model *m)
{
	const struct dg_spec *s = m->spec;
	const struct dg_spec_facts *f = &m->facts;
	const struct dg_truth *t = m->t;
	char a[32], b[32], text[4 * DG_ERRLEN];

	/* A spec's name and description are outside data: escaped for the terminal. */
	cli_escape(text, sizeof(text), dg_spec_name(s));
	fprintf(out, "drive: %s\n", text);
	cli_escape(text, sizeof(text), dg_spec_description(s));
	if (text[0])
		fprintf(out, "  %s\n", text);
	fprintf(out,
		"capacity: %" PRIu64 " bytes (%s, %.1f GiB) = %" PRIu64 " sectors of %u bytes\n",
		t->capacity_bytes, dg_fmt_bytes(a, sizeof(a), t->capacity_bytes),
		(double)t->capacity_bytes / (1u << 30), f->capacity_sectors, t->sector_bytes);
	fprintf(out, "rotation: %g rpm, one turn %.4f ms\n", t->rpm, t->period_ms);
	fprintf(out, "geometry: %u heads, %" PRIu64 " cylinders, layout %s", f->heads, t->cylinders,
		f->serpentine ? "serpentine" : "cylinder");
	if (f->serpentine)
		fprintf(out, " (bands of %u cylinders)", f->band_cylinders);
	fprintf(out,
		"\n\nzones (%zu; sustained MB/s = zone bytes / (tracks x T + skews crossed)):\n",
		t->nzones);
	print_zone_table(out, t->zones, t->nzones);
	fprintf(out, "outer %.3f MB/s, inner %.3f MB/s\n", t->zones[0].mb_per_s,
		t->zones[t->nzones - 1].mb_per_s);
	if (t->nrecording != t->nzones) {
		fprintf(out, "\nrecording zones (%zu; neighbours of %s merged):\n", t->nrecording,
			f->v2 ? "rates less than 2% apart" : "equal rate");
		print_zone_table(out, t->recording, t->nrecording);
	} else {
		fprintf(out, "recording zones: %zu (every spec zone has its own rate)\n",
			t->nrecording);
	}
	fprintf(out,
		"\nseek: seek(d) = %.6g + %.6g*sqrt(d) ms for 0 < d < %.1f cylinders, "
		"%.6g + %.6g*d beyond (Ruemmler & Wilkes)\n",
		t->seek_a_ms, t->seek_b_ms, t->seek_boundary_cylinders, t->seek_c_ms, t->seek_e_ms);
	fprintf(out, "  track to track      %8.3f ms\n", t->track_to_track_ms);
	fprintf(out, "  average             %8.3f ms  (random LBA pairs: what random I/O pays)\n",
		t->average_ms);
	fprintf(out,
		"  average (cylinders) %8.3f ms  (random distinct cylinder pairs: the data "
		"sheet figure)\n",
		t->average_cylinder_ms);
	fprintf(out, "  full stroke         %8.3f ms  (LBA 0 to the last LBA)\n",
		t->full_stroke_ms);
	fprintf(out, "  head switch         %8.3f ms;  command overhead %.3f ms\n",
		t->head_switch_ms, t->command_overhead_ms);
	fprintf(out, "\nseek at LBA distance (mean over start offsets across the drive):\n");
	fprintf(out, "    distance_bytes              seek_ms\n");
	for (size_t i = 0; i < m->npoints; i++)
		fprintf(out, "  %16" PRIu64 " %10s %8.3f\n", m->dist[i],
			dg_fmt_bytes(a, sizeof(a), m->dist[i]), m->seek_ms[i]);
	fprintf(out, "\nrandom 4 KiB reads at QD 1 (overhead + mean move + T/2 + transfer):\n");
	for (size_t i = 0; i < NSPANS; i++)
		fprintf(out, "  %-12s %10s  %8.3f ms  %8.1f IOPS\n", m->spans[i].label,
			dg_fmt_bytes(b, sizeof(b), m->spans[i].len), m->spans[i].mean_ms,
			1e3 / m->spans[i].mean_ms);
	fprintf(out,
		"\nrandom 4 KiB reads over the whole drive at queue depth q (reference "
		"simulation, 20,000 completions; NCQ depth %u):\n",
		f->ncq_depth);
	for (size_t i = 0; i < 6; i++)
		fprintf(out, "  QD %2u  %8.1f IOPS\n", qds[i], m->qd_iops[i]);
	if (t->per_surface) {
		fprintf(out,
			"\nsurface rates (MB/s, head 0 first: a walk over one head's tracks):\n");
		for (size_t i = 0; i < t->nzones; i++) {
			fprintf(out, "  zone %3zu:", i);
			for (uint32_t h = 0; h < t->zones[i].nsurfaces; h++)
				fprintf(out, " %.2f", t->zones[i].surface_mb_per_s[h]);
			fprintf(out, "\n");
		}
	}
	print_notes(out, m);
}

static int list_presets(void)
{
	const char *const *names;
	size_t n = dg_spec_presets(&names);
	char err[DG_ERRLEN], a[32], text[4 * DG_ERRLEN];

	for (size_t i = 0; i < n; i++) {
		struct dg_spec *s;
		if (dg_spec_load(names[i], &s, NULL, err, sizeof(err))) {
			cli_error("%s", err);
			return DG_EXIT_USAGE;
		}
		cli_escape(text, sizeof(text), dg_spec_description(s));
		printf("%-22s %9s %6g rpm  %s\n", names[i],
		       dg_fmt_bytes(a, sizeof(a), dg_spec_capacity_bytes(s)), dg_spec_rpm(s), text);
		dg_spec_free(s);
	}
	return DG_EXIT_OK;
}

struct model_args {
	const char *json_path, *drive;
	bool list, random_set;
	unsigned long long random_seed;
};

/* Returns DG_EXIT_* for the command to end with, or -1 to go on. */
static int parse_args(int argc, char **argv, struct model_args *a)
{
	char shortopts[32], *endp;
	int opt;

	cli_shortopts(longopts, shortopts, sizeof(shortopts));
	optind = 1;
	opterr = 0; /* our own one-line messages, not getopt's */
	while ((opt = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (cli_common_option(opt, &a->json_path))
			continue;
		switch (opt) {
		case 'j':
			a->json_path = optarg;
			break;
		case 'l':
			a->list = true;
			break;
		case 'r':
			errno = 0;
			a->random_seed = strtoull(optarg, &endp, 10);
			if (errno || *endp || !*optarg || optarg[0] == '-') {
				cli_error("--random: '%s' is not a seed (an integer >= 0)", optarg);
				return DG_EXIT_USAGE;
			}
			a->random_set = true;
			break;
		case 'h':
			usage(stdout);
			return DG_EXIT_OK;
		default:
			return cli_bad_option("model", argv, shortopts);
		}
	}
	if ((a->list || a->random_set) && optind != argc) {
		cli_error(a->list ? "--list takes no drive" : "--random takes no drive");
		return DG_EXIT_USAGE;
	}
	if (!a->list && !a->random_set && optind + 1 != argc) {
		cli_error(optind == argc
			      ? "model needs a drive spec or a built-in name (see --list)"
			      : "model takes one drive spec");
		usage(stderr);
		return DG_EXIT_USAGE;
	}
	a->drive = optind < argc ? argv[optind] : NULL;
	return -1;
}

/* --random SEED: the zoo's spec text for SEED. */
static int random_spec(const struct model_args *a, struct cli_outputs *outs)
{
	char *text = NULL, err[DG_ERRLEN];
	json_t *spec_doc;
	json_error_t je;
	int rc;

	if (cli_check_output(outs, a->json_path))
		return DG_EXIT_USAGE;
	if (dg_spec_random(a->random_seed, &text) || !(spec_doc = json_loads(text, 0, &je))) {
		free(text);
		cli_error("out of memory");
		return DG_EXIT_USAGE;
	}
	free(text);
	rc = dg_json_write(spec_doc, a->json_path ? a->json_path : "-", err, sizeof(err));
	json_decref(spec_doc);
	if (rc) {
		cli_error("%s", err);
		return DG_EXIT_USAGE;
	}
	return DG_EXIT_OK;
}

/* The model of one drive: its report, its JSON. */
static int model_of(const struct model_args *a, struct cli_outputs *outs)
{
	struct dg_output_avoid spec_file = {0};
	struct dg_warnings warnings = {0};
	struct dg_spec *spec = NULL;
	struct model m = {0};
	char err[DG_ERRLEN];
	json_t *doc = NULL;
	int rc = DG_EXIT_USAGE;

	if (cli_check_output(outs, a->json_path))
		return DG_EXIT_USAGE;
	if (dg_spec_load(a->drive, &spec, &warnings, err, sizeof(err))) {
		cli_error("%s", err);
		goto out;
	}
	cli_print_warnings(&warnings);
	/* The spec file is not to be replaced by its own model. */
	dg_output_avoid_file(&spec_file, a->drive);
	if (cli_check_outputs_avoid(outs, &spec_file))
		goto out;
	if (compute(spec, &m)) {
		cli_error("out of memory");
		goto out;
	}
	if ((!a->json_path || strcmp(a->json_path, "-")) && cli_verbosity > CLI_QUIET)
		print_model(stdout, &m);
	if (a->json_path) {
		doc = model_json(&m);
		if (!doc) {
			cli_error("out of memory");
			goto out;
		}
		if (dg_json_write(doc, a->json_path, err, sizeof(err))) {
			cli_error("%s", err);
			goto out;
		}
	}
	rc = DG_EXIT_OK;
out:
	json_decref(doc);
	dg_truth_free(m.t);
	dg_spec_free(spec);
	dg_warnings_free(&warnings);
	return rc;
}

int cmd_model(int argc, char **argv)
{
	struct model_args a = {0};
	struct cli_outputs outs = {0};
	int rc = parse_args(argc, argv, &a);

	if (rc >= 0)
		return rc;
	if (a.list)
		return list_presets();
	rc = a.random_set ? random_spec(&a, &outs) : model_of(&a, &outs);
	cli_outputs_forget(&outs);
	return rc;
}
