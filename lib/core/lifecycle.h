/* A core's life: its init — the handles on the host's loop, the worker pool, its place in its
 * group (a lone server's is a group of one: core/group.h) — and its close. Above everything
 * else in core/: it composes them. Loop thread. */
#ifndef ISV_CORE_LIFECYCLE_H
#define ISV_CORE_LIFECYCLE_H

#include "core/layer.h"

#include "core/scheduler.h"

/* 0, or ISV_ENOMEM / ISV_EINVAL (the group's shared memory options disagree) with nothing
 * left to close. */
int isv__core_init(isv__core *c, uv_loop_t *loop, const isv_options *opts);
/* Joins the worker threads, clears the registry, closes the handles; close_cb gets the async
 * handle when both are closed. Nothing may be in flight but abandoned executions. */
void isv__core_close(isv__core *c, uv_close_cb close_cb);

#endif
