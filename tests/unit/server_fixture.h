/* Shared by the tests that drive a whole server in process through the public API
 * (test_server_inproc, test_nested, test_ensemble): a uv loop with an isv_server on it, and its
 * close at teardown — the close callback seen, the loop left with nothing open. */
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
/* cmocka teardown for a world in *state: the server closed, the loop run to its end and closed
 * (nothing left open), the world freed. */
int sf_teardown(void **state);

#endif
