/* Model warmup (Triton's model_warmup: isv_model_config_add_warmup): the samples a model
 * config carries, and their runs while a new version is LOADING.
 *
 * A run is in-process requests of the version, marked r->warmup — the one mark that lets a
 * request through to a LOADING version (scheduler.c's run_admitted) and keeps it out of the
 * response cache — submitted through the core like any request: its queue, its instances,
 * its exec mode, its batcher. Samples run in order; each of a sample's `count` rounds submits
 * one request per instance at once and waits for all of them. The first failure ends it:
 * the version UNAVAILABLE with the reason (the group's record keeps it for the repository
 * index: isv__group_set_reason) and an ERROR log line; after the last success it is READY.
 * Either only while it is still LOADING (a host that set its state meanwhile has decided) and
 * the server is not closing (a closing server starts no more runs: its drain would wait).
 * Loop thread. */
#ifndef ISV_CORE_WARMUP_H
#define ISV_CORE_WARMUP_H

#include "core/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "core/warmup_cfg.h"

/* Start m's warmup (its config has samples; m is LOADING, this core's copy). */
void isv__warmup_start(isv__core *c, isv_model *m);

#endif
