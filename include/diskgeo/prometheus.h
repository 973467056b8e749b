/* SPDX-License-Identifier: MIT */
/*
 * A profile's headline figures in the Prometheus text exposition format, for node_exporter's
 * textfile collector (`--prometheus FILE`). Metric names are diskgeo_<figure>_<unit>; every
 * sample carries the labels device, model, serial and firmware (empty when unknown).
 */
#ifndef DISKGEO_PROMETHEUS_H
#define DISKGEO_PROMETHEUS_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* Writes the metrics of profile document `doc` ("diskgeo.profile/1") to `f`. Figures the
 * profile lacks are left out. Returns 0 or -EIO. */
int dg_prometheus_print(FILE *f, const json_t *doc);

/* The same, into `path` atomically (dg_file_write: a temporary file in the same directory,
 * then rename, so the collector never reads half a file). Returns 0 or -errno with one line in
 * err. */
int dg_prometheus_write(const json_t *doc, const char *path, char *err, size_t errlen);

#endif
