/* See server_fixture.h. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void sf_record(isv_request *r, int status, sf_result *res, const char *output) {
  res->calls++;
  res->status = status;
  snprintf(res->msg, sizeof res->msg, "%s", isv_request_error_message(r));
  const isv_tensor *y = isv_request_output(r, output);
  if (y) {
    res->n = isv_tensor_element_count(y);
    res->y_at = isv_tensor_data(y);
    memcpy(res->y, res->y_at, (res->n < 8 ? res->n : 8) * sizeof(float));
  }
  isv_request_free(r);
}

int sf_twice(isv_request *r, void *u) {
  (void)u;
  const isv_tensor *x = isv_request_input(r, "x");
  size_t nd;
  const int64_t *shape = isv_tensor_shape(x, &nd);
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, shape, nd, (void **)&y);
  if (rc) return rc;
  const float *in = isv_tensor_data(x);
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) y[i] = in[i] * 2;
  return isv_request_complete(r, 0, NULL);
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
