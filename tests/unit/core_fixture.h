/* Shared by the scheduler's tests (test_scheduler, test_batch, test_sequence): a real
 * isv__core on its own uv loop, models registered with the settings a test names, requests of
 * one FP32 input "x" submitted straight to the core, and a done callback that records what the
 * request came back with. Backends never assert (they may run on other threads, where cmocka
 * cannot fail a test): they record, and the test checks. */
#ifndef ISV_TESTS_CORE_FIXTURE_H
#define ISV_TESTS_CORE_FIXTURE_H

#include <stdint.h>
#include <uv.h>

#include "core/request.h"

typedef struct cf_world {
  uv_loop_t loop;
  isv__core core;
} cf_world;

/* A model version's settings; zero = the library's default. */
typedef struct cf_model {
  const char *name;
  int (*infer)(isv_request *r, void *user);
  const void *user;
  isv_exec_mode mode;
  uint32_t max_batch;
  uint32_t instances;       /* 0: 1 */
  uint32_t max_queue;
  uint64_t default_timeout_us;
  int batching;             /* dynamic batching with batch_delay_us and preferred[] */
  uint64_t batch_delay_us;
  uint32_t preferred[4];
  size_t n_preferred;
  int decoupled;
  int sequences;            /* sequence batching with seq_idle_us, max_sequences */
  uint64_t seq_idle_us;
  uint32_t max_sequences;
  void (*sequence_end)(void *user, uint64_t id, const char *id_str, void *state,
                       isv_sequence_end_reason reason);
  int extra_output;         /* a second output "z" (FP32, same shape as "y") */
  uint32_t priority_levels; /* with default_priority; both 0: none set */
  uint32_t default_priority;
  const isv_queue_policy *policy[5]; /* [0]: the default queue policy, [k]: level k's; NULL:
                                      * none set */
} cf_model;

/* setup/teardown for cmocka: *state is a cf_world whose core has default options (opts may
 * be changed between cf_world_new and the first submit). Teardown checks nothing is in flight,
 * closes the core and checks no handle is left. */
cf_world *cf_world_new(const isv_options *opts);
void cf_world_free(cf_world *w);
isv_model *cf_add(cf_world *w, const cf_model *spec);
isv_model *cf_find(cf_world *w, const char *name);

typedef struct cf_result {
  int calls;
  int status;
  char msg[256];
  float y[64];
  size_t n; /* elements of y */
  int64_t y_rows; /* dimension 0 of y, -1 when y has no dimension */
  int has_z;
  int keep;       /* do not free the request in the callback */
  int *order;     /* where to note the order of callbacks, may be NULL */
  int order_no;   /* this callback's place in that order */
} cf_result;

void cf_on_done(isv_request *r, int status, void *data);
/* A request of x (n elements; rows > 0: shaped [rows, n / rows], else [n]) for `model`, not yet
 * submitted. */
isv_request *cf_request(cf_world *w, const char *model, const float *x, int64_t n, int64_t rows);
/* ... with a parameter set (int64, bool or string: the one whose type is given). */
void cf_param_i64(isv_request *r, const char *key, int64_t v);
void cf_param_bool(isv_request *r, const char *key, int v);
void cf_param_str(isv_request *r, const char *key, const char *v);
isv_request *cf_submit(cf_world *w, isv_request *r, cf_result *res);
/* Run the loop until res->calls reaches n (fails the test after 10 s). */
void cf_wait(cf_world *w, const cf_result *res, int n);
/* Run the loop for about ms (the core's timer never keeps it alive by itself). */
void cf_run_for(cf_world *w, uint64_t ms);
/* y = factor * x into output "y" (and "z" = -y when the model has it), then complete. */
int cf_scale(isv_request *r, float factor);
/* The same outputs, not completed. */
int cf_scale_outputs(isv_request *r, float factor);

#endif
