/* See server_fixture.h. */
#include "cmocka_prelude.h"

#include <stdlib.h>

#include "server_fixture.h"

sf_world *sf_world_new(const isv_options *o) {
  sf_world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  assert_int_equal(uv_loop_init(&w->loop), 0);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  return w;
}

void sf_on_closed(isv_server *srv, void *w) {
  (void)srv;
  ((sf_world *)w)->closed = 1;
}

int sf_teardown(void **state) {
  sf_world *w = *state;
  assert_int_equal(isv_server_close(w->srv, sf_on_closed, w), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_true(w->closed);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
  return 0;
}
