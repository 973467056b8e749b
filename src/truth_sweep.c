/* SPDX-License-Identifier: MIT */
/* The truth of a sequential sweep cell (include/diskgeo/model.h, dg_truth_seq_block_mb_per_s). */
#include "diskgeo/model.h"
