/* SPDX-License-Identifier: MIT */
/*
 * The drive zoo: a random, plausible version 2 drive spec from a seed (`diskgeo model --random
 * SEED`), so that measurements are proven on many drives, not four. The ranges follow issue 12
 * (figures of modern SATA/SAS drives, Wong 2019): rpm in {5400, 5900, 7200, 10000, 15000}, 2-18
 * heads, 8-60 zones, 250 GB - 24 TB, outer 100-290 MB/s with an outer/inner ratio of 1.5-2.4,
 * logical 512 or 4096 (about half of the 512 ones 512e), cylinder or serpentine layout (bands
 * of 16-10000 cylinders), per-surface spread 0-12% on about half, seek t2t 0.2-2 ms, full
 * 7-30 ms and a feasible average, head switch 0.3-1.5 ms, overhead 0.05-0.3 ms, cache 8-512
 * MiB, read-ahead 0-4 MiB, look-behind on about half, ncq_depth 1 or 32, jitter 0-0.08 ms,
 * background work on about a quarter (every 20-300 s, busy 5-150 ms), sometimes 1-3 defects.
 * Track counts are kept at most 2^21 (2,097,152) by lowering the capacity when needed.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "model_priv.h"

static double uni(uint64_t *s, double lo, double hi)
{
	return lo + (hi - lo) * (double)(dg_splitmix64(s) >> 11) / 9007199254740992.0;
}

static int pick(uint64_t *s, int lo, int hi)
{
	return lo + (int)(dg_splitmix64(s) % (uint64_t)(hi - lo + 1));
}

static json_t *num3(double x)
{
	return json_real(round(x * 1000.0) / 1000.0);
}

/* The zones: nz of cz cylinders each, from s_outer down to s_inner sectors per track (whole
 * physical sectors of r logical ones), each head smaller by spreads[h] when spreads is given.
 * Returns 0, or nonzero when an allocation or append failed. */
static int random_zones(json_t *zones, int nz, int cz, int heads, double s_outer, double s_inner,
			const double *spreads, uint32_t r)
{
	int bad = 0;

	for (int i = 0; i < nz; i++) {
		double S = s_outer + (s_inner - s_outer) * i / (nz > 1 ? nz - 1 : 1);
		json_t *z = json_object(), *spt;
		if (!z || json_array_append_new(zones, z))
			return -1;
		if (spreads) {
			spt = json_array();
			if (!spt)
				return -1;
			for (int h = 0; h < heads; h++) {
				uint32_t v = (uint32_t)(S * (1 - spreads[h])) / r * r;
				bad |= json_array_append_new(spt, json_integer(v < r ? r : v));
			}
		} else {
			uint32_t v = (uint32_t)S / r * r;
			spt = json_integer(v < r ? r : v);
		}
		bad |= json_object_set_new(z, "cylinders", json_integer(cz));
		bad |= json_object_set_new(z, "sectors_per_track", spt);
	}
	return bad;
}

/* The seek curve's three figures, with an average kept feasible; NULL when out of memory. */
static json_t *random_seek(uint64_t *st)
{
	double t2t = uni(st, 0.2, 2.0), full = uni(st, 7, 30);
	double avg = t2t + uni(st, 0.37, 0.5) * (full - t2t);
	if (avg < 3.5)
		avg = 3.5 < full ? 3.5 : avg;
	if (avg > 13)
		avg = 13;
	if (avg <= t2t + 0.37 * (full - t2t)) /* keep it feasible */
		avg = t2t + 0.37 * (full - t2t);
	return json_pack("{s:o,s:o,s:o}", "track_to_track_ms", num3(t2t), "average_ms", num3(avg),
			 "full_stroke_ms", num3(full));
}

/* 1-3 disjoint defects in the first zone (cz cylinders of heads tracks of at least
 * s_outer*(1-0.12) sectors). Returns 0, or nonzero when a set or append failed. */
static int random_defects(json_t *o, uint64_t *st, int cz, int heads, double s_outer, uint32_t r)
{
	json_t *defects = json_array();
	int nd = pick(st, 1, 3), bad = 0;
	/* disjoint: one in each of nd equal parts of the first zone */
	uint64_t zone0 = (uint64_t)cz * heads * ((uint64_t)(s_outer * (1 - 0.12)) / r * r);
	for (int i = 0; defects && i < nd; i++) {
		uint64_t lba = (zone0 / nd * i + dg_splitmix64(st) % (zone0 / nd / 2)) / r * r;
		bool err = pick(st, 0, 1);
		bad |= json_array_append_new(
		    defects, json_pack("{s:I,s:I,s:s,s:o}", "lba", (json_int_t)lba, "count",
				       (json_int_t)(r * (uint32_t)pick(st, 1, 64)), "kind",
				       err ? "error" : "slow", "extra_ms", num3(uni(st, 5, 60))));
	}
	bad |= json_object_set_new(o, "defects", defects);
	return bad;
}

int dg_spec_random(uint64_t seed, char **json_text)
{
	static const int rpms[] = {5400, 5900, 7200, 10000, 15000};
	uint64_t st = seed * 0x2545f4914f6cdd1dull + 7;
	json_t *o = json_object(), *zones = json_array(), *seek = NULL;
	int bad = 0; /* a json_object_set_new() or append failed: ENOMEM */
	char name[48];

	*json_text = NULL;
	if (!o || !zones)
		goto nomem;
	int rpm = rpms[pick(&st, 0, 4)];
	int heads = pick(&st, 2, 18), nz = pick(&st, 8, 60);
	double cap_bytes = exp(uni(&st, log(250e9), log(24e12)));
	double outer = uni(&st, 100, 290), ratio = uni(&st, 1.5, 2.4);
	int logical = pick(&st, 0, 1) ? 4096 : 512;
	int physical = logical == 512 && pick(&st, 0, 1) ? 4096 : logical;
	uint32_t r = (uint32_t)(physical / logical);
	bool serp = pick(&st, 0, 1);
	bool spread = pick(&st, 0, 1);
	double T = 60.0 / rpm;
	double s_outer = outer * 1e6 * T / logical, s_inner = s_outer / ratio;
	double spreads[18];
	for (int h = 0; h < heads; h++)
		spreads[h] = spread ? uni(&st, 0, 0.12) : 0.0;
	if (spread)
		spreads[pick(&st, 0, heads - 1)] = 0.0; /* the best head holds the full size */
	/* cylinders per zone from the capacity (at most 2^21 tracks in all, so that the truth's
	 * work stays small: a drive that would need more is made smaller) */
	double mean_track = (s_outer + s_inner) / 2 * logical;
	double cyl_total = cap_bytes / (mean_track * heads);
	if (cyl_total > (double)(1u << 21) / heads)
		cyl_total = (double)(1u << 21) / heads;
	int cz = (int)(cyl_total / nz);
	if (cz < 4)
		cz = 4;
	if (random_zones(zones, nz, cz, heads, s_outer, s_inner, spread ? spreads : NULL, r))
		goto nomem;
	seek = random_seek(&st);
	if (!seek)
		goto nomem;
	snprintf(name, sizeof(name), "zoo-%llu", (unsigned long long)seed);
	uint64_t cache = (uint64_t)pick(&st, 8, 512) << 20;
	uint64_t ra = (uint64_t)pick(&st, 0, 4096) << 10;
	bad |= json_object_set_new(o, "name", json_string(name));
	bad |= json_object_set_new(o, "description",
				   json_string("a random plausible drive (the zoo)"));
	bad |= json_object_set_new(o, "source",
				   json_string("diskgeo model --random (issue 12 ranges)"));
	bad |= json_object_set_new(o, "logical_sector_bytes", json_integer(logical));
	bad |= json_object_set_new(o, "physical_sector_bytes", json_integer(physical));
	bad |= json_object_set_new(o, "heads", json_integer(heads));
	bad |= json_object_set_new(o, "rpm", json_integer(rpm));
	bad |= json_object_set_new(o, "layout", json_string(serp ? "serpentine" : "cylinder"));
	if (serp)
		bad |= json_object_set_new(o, "band_cylinders",
					   json_integer((int)exp(uni(&st, log(16), log(10000)))));
	bad |= json_object_set_new(o, "zones", zones);
	zones = NULL;
	bad |= json_object_set_new(o, "seek", seek);
	seek = NULL;
	bad |= json_object_set_new(o, "head_switch_ms", num3(uni(&st, 0.3, 1.5)));
	bad |= json_object_set_new(o, "command_overhead_ms", num3(uni(&st, 0.05, 0.3)));
	bad |= json_object_set_new(o, "cache_bytes", json_integer((json_int_t)cache));
	bad |= json_object_set_new(o, "read_ahead_bytes", json_integer((json_int_t)ra));
	bad |= json_object_set_new(o, "look_behind", json_boolean(pick(&st, 0, 1)));
	bad |= json_object_set_new(o, "ncq_depth", json_integer(pick(&st, 0, 1) ? 32 : 1));
	bad |= json_object_set_new(o, "jitter_ms", num3(uni(&st, 0, 0.08)));
	if (pick(&st, 0, 3) == 0)
		bad |=
		    json_object_set_new(o, "background",
					json_pack("{s:o,s:o}", "every_s", num3(uni(&st, 20, 300)),
						  "busy_ms", num3(uni(&st, 5, 150))));
	bad |= json_object_set_new(o, "seed", json_integer((json_int_t)(seed & 0x7fffffff)));
	if (pick(&st, 0, 3) == 0)
		bad |= random_defects(o, &st, cz, heads, s_outer, r);
	if (bad)
		goto nomem;
	*json_text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	return *json_text ? 0 : -ENOMEM;
nomem:
	json_decref(o);
	json_decref(zones);
	json_decref(seek);
	return -ENOMEM;
}
