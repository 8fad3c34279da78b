/* Shared by the tests that drive a whole server in process through the public API
 * (test_server_inproc, test_nested, test_ensemble, test_warm_requests): a uv loop with an
 * isv_server on it, and its close at teardown — the close callback seen, the loop left with
 * nothing open. */
#ifndef ISV_TESTS_SERVER_FIXTURE_H
#define ISV_TESTS_SERVER_FIXTURE_H

#include <uv.h>

#include "inferserve.h"

typedef struct sf_world {
  uv_loop_t loop;
  isv_server *srv;
  int closed;    /* sf_on_closed ran */
  int destroyed; /* for a test's model destroy callbacks to count */
} sf_world;

/* A loop and a server on it with options o (NULL: the defaults); fails the test otherwise. */
sf_world *sf_world_new(const isv_options *o);
/* isv_server_close's callback for a world: sets w->closed. */
void sf_on_closed(isv_server *srv, void *w);
/* What a request came back with, for the tests' done callbacks. */
typedef struct sf_result {
  int calls; /* how many times the callback ran (1, or the test fails) */
  int status;
  char msg[400];
  float y[8]; /* the first 8 FP32 of the output named to sf_record */
  size_t n;   /* its element count */
  const void *y_at;
} sf_result;

/* Records r's status, error text and output `output` (FP32) into res, then frees r. */
void sf_record(isv_request *r, int status, sf_result *res, const char *output);

/* A backend: y = x * 2, FP32 of any shape, "x" in and "y" out (completes before it returns);
 * test_adapter and test_fail_malloc serve it too. */
int sf_twice(isv_request *r, void *u);

/* cmocka teardown for a world in *state: the server closed, the loop run to its end and closed
 * (nothing left open), the world freed. */
int sf_teardown(void **state);

#endif
