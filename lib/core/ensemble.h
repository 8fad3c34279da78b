/* Ensembles (Triton's platform "ensemble" with ensemble_scheduling): a model whose steps run
 * other registered models, each step as soon as the ensemble tensors it reads exist — a DAG,
 * validated when the ensemble is registered (every tensor produced once, every input read
 * either an ensemble input or a step's output, every ensemble output produced, no cycle).
 *
 * At run time the ensemble is a model of the registry like any other — served by every
 * protocol, with its own queue and statistics — whose backend is the library's
 * (isv__ensemble_infer, ISV_EXEC_ASYNC on the loop thread): it makes one nested request per
 * step (core/nested.h) and submits each the moment its inputs exist. Tensors travel by
 * reference: a step's inputs point at the ensemble's inputs or at earlier steps' outputs
 * (ISV_STATIC), and the ensemble's outputs point at the steps' outputs — nested requests live
 * as long as the ensemble's request, so nothing is copied. A step that fails ends the request
 * with its code and a message naming the step; the steps still running are cancelled first,
 * and the answer waits for them. The ensemble's cancellation and deadline reach every running
 * step (nested requests inherit both). */
#ifndef ISV_CORE_ENSEMBLE_H
#define ISV_CORE_ENSEMBLE_H

#include "core/layer.h"

#include <stddef.h>

#include "core/ensemble_cfg.h"
#include "core/registry.h"

/* An ensemble's requests that may run at once (its `instances`); more wait in its queue. */
#define ISV__ENSEMBLE_INSTANCES 1024u

/* ISV_EINVAL (why says what) when c is not an ensemble that can run: no step, a tensor
 * produced twice or never, a cycle, a model option ensembles do not take; else 0. */
int isv__ensemble_check(const isv_model_config *c, char *why, size_t cap);
/* The config an ensemble is registered with: a copy of c (libc's memory) with platform
 * "ensemble", ISV_EXEC_ASYNC and ISV__ENSEMBLE_INSTANCES, its steps indexed (slots: see
 * core/ensemble_cfg.h); NULL when out of memory. c passed isv__ensemble_check. */
isv_model_config *isv__ensemble_prepare(const isv_model_config *c);
/* The library's backend of every ensemble. */
isv_backend isv__ensemble_backend(void);

#endif
