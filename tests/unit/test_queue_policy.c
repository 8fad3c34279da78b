/* core/scheduler.c's priorities and queue policies (Triton's priority_levels,
 * default_priority_level, default_queue_policy, priority_queue_policy), through a real core
 * (tests/unit/core_fixture.c): levels run in order and each in arrival order, the default level,
 * a priority out of range, a level's max_queue_size, a queue timeout that rejects or delays,
 * the "timeout" parameter honoured only where the policy allows it (and only to shorten), a
 * dynamic batch taken across levels, the statistics of refused requests, the retry estimate,
 * and the configurations registration refuses. Every model here has one instance held by the
 * test (ISV_EXEC_ASYNC, completed from the test), so the order requests run in is exact. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <string.h>

#include "core/registry.h"
#include "core/request.h"
#include "core/scheduler.h"
#include "core_fixture.h"

/* The requests the backend was handed, in the order it was: the test completes them. */
static struct {
  isv_request *held[32];
  int n;
} hold;

static int be_hold(isv_request *r, void *u) {
  (void)u;
  if (hold.n < 32) hold.held[hold.n] = r;
  hold.n++;
  return 0;
}

/* Element i of a held request's input x (a request's tag: its x). */
static float x_of(const isv_request *r, size_t i) {
  const isv_tensor *t = isv_request_input(r, "x");
  float v = -1;
  if (t && i < isv_tensor_element_count(t))
    memcpy(&v, (const char *)isv_tensor_data(t) + i * sizeof v, sizeof v);
  return v;
}

static const isv_queue_policy level1 = {.struct_size = sizeof(isv_queue_policy),
                                        .max_queue_size = 2}; /* no override */
static const isv_queue_policy overridable = {.struct_size = sizeof(isv_queue_policy),
                                             .allow_timeout_override = 1};
static const isv_queue_policy delayed = {.struct_size = sizeof(isv_queue_policy),
                                         .timeout_action = ISV_TIMEOUT_DELAY,
                                         .allow_timeout_override = 1};
static const isv_queue_policy capped = {.struct_size = sizeof(isv_queue_policy),
                                        .default_timeout_us = 3000,
                                        .allow_timeout_override = 1};

static int setup(void **state) {
  memset(&hold, 0, sizeof hold);
  cf_world *w = cf_world_new(NULL);
  /* three levels, 2 by default; level 1 holds two at most and ignores "timeout"; level 2
   * (the default policy) rejects at the request's timeout; level 3 delays */
  cf_model prio = {.name = "prio", .infer = be_hold, .mode = ISV_EXEC_ASYNC,
                   .priority_levels = 3, .default_priority = 2,
                   .policy = {&overridable, &level1, NULL, &delayed}};
  cf_add(w, &prio);
  /* no levels: a policy alone, a 3 ms queue timeout a request may only shorten */
  cf_model one = {.name = "capped", .infer = be_hold, .mode = ISV_EXEC_ASYNC,
                  .policy = {&capped}};
  cf_add(w, &one);
  cf_model batched = {.name = "pbatch", .infer = be_hold, .mode = ISV_EXEC_ASYNC,
                      .max_batch = 4, .batching = 1, .priority_levels = 2,
                      .default_priority = 2};
  cf_add(w, &batched);
  /* no policy at all: "timeout" is a deadline, "priority" is not read */
  cf_model plain = {.name = "plain", .infer = be_hold, .mode = ISV_EXEC_ASYNC};
  cf_add(w, &plain);
  *state = w;
  return 0;
}

static int teardown(void **state) {
  cf_world_free(*state);
  return 0;
}

/* A request tagged x for model, with priority p (< 0: none) and timeout t µs (0: none). */
static isv_request *req(cf_world *w, const char *model, float x, int64_t p, int64_t t) {
  isv_request *r = cf_request(w, model, &x, 1, strcmp(model, "pbatch") == 0); /* [1,1] */
  if (p >= 0) assert_int_equal(isv_request_set_priority(r, (uint64_t)p), 0);
  if (t > 0) assert_int_equal(isv_request_set_timeout_us(r, (uint64_t)t), 0);
  return r;
}

/* Complete held request k (y = x) and check it was the one tagged x. */
static void run_next(int k, float x) {
  assert_true(hold.n > k);
  assert_true(x_of(hold.held[k], 0) == x);
  assert_int_equal(cf_scale(hold.held[k], 1), 0);
}

static void levels_run_in_order_each_in_arrival_order_none_and_0_the_default(void **state) {
  cf_world *w = *state;
  cf_result r[7] = {{0}};
  cf_submit(w, req(w, "prio", 0, 1, 0), &r[0]); /* takes the instance */
  cf_submit(w, req(w, "prio", 1, 3, 0), &r[1]);
  cf_submit(w, req(w, "prio", 2, 2, 0), &r[2]);
  cf_submit(w, req(w, "prio", 3, -1, 0), &r[3]); /* the default: 2 */
  cf_submit(w, req(w, "prio", 4, 1, 0), &r[4]);
  cf_submit(w, req(w, "prio", 5, 1, 0), &r[5]);
  cf_submit(w, req(w, "prio", 6, 0, 0), &r[6]); /* 0: the default too */
  assert_int_equal(hold.n, 1);
  assert_int_equal(cf_find(w, "prio")->stats.queued, 6);
  static const float order[7] = {0, 4, 5, 2, 3, 6, 1};
  for (int k = 0; k < 7; k++) run_next(k, order[k]);
  for (int i = 0; i < 7; i++) {
    assert_int_equal(r[i].calls, 1);
    assert_int_equal(r[i].status, 0);
  }
}

static void a_priority_out_of_range_or_not_an_integer_is_400(void **state) {
  cf_world *w = *state;
  cf_result r[3] = {{0}};
  cf_submit(w, req(w, "prio", 0, 4, 0), &r[0]);
  assert_int_equal(r[0].status, ISV_EBADREQ);
  assert_string_equal(r[0].msg, "priority 4 is out of range for model 'prio': its priority "
                                "levels are 1 to 3 (0 or none: the default, 2)");
  isv_request *s = cf_request(w, "prio", (float[]){0}, 1, 0);
  cf_param_str(s, "priority", "high");
  cf_submit(w, s, &r[1]);
  assert_int_equal(r[1].status, ISV_EBADREQ);
  assert_string_equal(r[1].msg, "parameter 'priority' must be a non-negative integer (0: the "
                                "model's default level)");
  s = cf_request(w, "prio", (float[]){0}, 1, 0);
  cf_param_i64(s, "priority", -1);
  cf_submit(w, s, &r[2]);
  assert_int_equal(r[2].status, ISV_EBADREQ);
  assert_int_equal(hold.n, 0); /* none ran */
  assert_int_equal(cf_find(w, "prio")->stats.failure[0], 3);
}

static void a_model_without_levels_reads_no_priority(void **state) {
  cf_world *w = *state;
  cf_result r[2] = {{0}};
  cf_submit(w, req(w, "capped", 0, 9, 0), &r[0]);
  cf_submit(w, req(w, "plain", 1, 9, 0), &r[1]);
  run_next(0, 0);
  run_next(1, 1);
  assert_int_equal(r[0].status, 0);
  assert_int_equal(r[1].status, 0);
}

static void a_full_level_refuses_with_triton_s_words_other_levels_still_queue(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "prio");
  cf_result r[5] = {{0}};
  cf_submit(w, req(w, "prio", 0, 2, 0), &r[0]); /* runs */
  cf_submit(w, req(w, "prio", 1, 1, 0), &r[1]);
  cf_submit(w, req(w, "prio", 2, 1, 0), &r[2]);
  r[3].keep = 1;
  isv_request *over = cf_submit(w, req(w, "prio", 3, 1, 0), &r[3]);
  assert_int_equal(r[3].calls, 1);
  assert_int_equal(r[3].status, ISV_EUNAVAIL);
  assert_string_equal(r[3].msg, "Exceeds maximum queue size: model 'prio' version '1' has 2 "
                                "requests waiting at priority level 1, its max_queue_size: "
                                "retry later");
  assert_int_equal(over->retry_after_s, 0); /* nothing ran yet: no estimate */
  isv_request_free(over);
  cf_submit(w, req(w, "prio", 4, 3, 0), &r[4]); /* level 3 has no bound */
  assert_int_equal(r[4].calls, 0);
  assert_int_equal(m->stats.queued, 3);
  assert_int_equal(m->stats.failure[0], 1); /* a refusal is a failed request, as Triton's */
  run_next(0, 0);
  run_next(1, 1);
  /* two ran: the next refusal estimates when to retry (>= 1 s, the estimate's floor) */
  cf_result again = {.keep = 1}, more[2] = {{0}};
  cf_submit(w, req(w, "prio", 5, 1, 0), &more[0]); /* level 1 holds 2 again (2 runs) */
  cf_submit(w, req(w, "prio", 6, 1, 0), &more[1]);
  isv_request *x = cf_submit(w, req(w, "prio", 7, 1, 0), &again);
  assert_int_equal(again.status, ISV_EUNAVAIL);
  assert_true(x->retry_after_s >= 1);
  isv_request_free(x);
  run_next(2, 2);
  run_next(3, 5);
  run_next(4, 6);
  run_next(5, 4);
  for (int i = 0; i < 5; i++)
    if (i != 3) assert_int_equal(r[i].status, 0);
  assert_int_equal(more[0].status, 0);
  assert_int_equal(more[1].status, 0);
}

static void a_timed_out_request_is_rejected_without_running(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "prio");
  cf_result r[3] = {{0}};
  cf_submit(w, req(w, "prio", 0, 2, 0), &r[0]);
  cf_submit(w, req(w, "prio", 1, 2, 2000), &r[1]); /* the default policy: override allowed */
  cf_submit(w, req(w, "prio", 2, 2, 0), &r[2]);
  cf_wait(w, &r[1], 1);
  assert_int_equal(r[1].status, ISV_EUNAVAIL);
  assert_string_equal(r[1].msg, "Request timeout expired: it waited in the queue of model "
                                "'prio' version '1' (priority level 2) for its whole queue "
                                "timeout");
  assert_int_equal(m->stats.queued, 1);
  assert_int_equal(m->stats.failure[0], 1);
  run_next(0, 0);
  run_next(1, 2); /* the rejected one never ran */
  assert_int_equal(hold.n, 2);
}

static void delay_puts_a_timed_out_request_behind_its_level_but_ahead_of_lower_ones(void **state) {
  cf_world *w = *state;
  cf_result r[5] = {{0}};
  cf_submit(w, req(w, "prio", 0, 1, 0), &r[0]);
  cf_submit(w, req(w, "prio", 1, 3, 1000), &r[1]); /* level 3: DELAY after 1 ms */
  cf_run_for(w, 20);
  assert_int_equal(r[1].calls, 0); /* delayed, not rejected */
  cf_submit(w, req(w, "prio", 2, 3, 0), &r[2]); /* came later, but did not time out */
  cf_submit(w, req(w, "prio", 3, 3, 0), &r[3]);
  cf_submit(w, req(w, "prio", 4, 2, 0), &r[4]); /* a higher level */
  static const float order[5] = {0, 4, 2, 3, 1};
  for (int k = 0; k < 5; k++) run_next(k, order[k]);
  for (int i = 0; i < 5; i++) assert_int_equal(r[i].status, 0);
}

static void the_timeout_parameter_counts_only_where_the_policy_allows_it(void **state) {
  cf_world *w = *state;
  cf_result r[3] = {{0}};
  cf_submit(w, req(w, "prio", 0, 1, 0), &r[0]);
  cf_submit(w, req(w, "prio", 1, 1, 1000), &r[1]); /* level 1: no override */
  cf_run_for(w, 20);
  assert_int_equal(r[1].calls, 0); /* neither rejected nor a deadline (504) */
  run_next(0, 0);
  run_next(1, 1);
  assert_int_equal(r[1].status, 0);
  /* "capped": 3 ms by default; a request may shorten it, never lengthen it */
  cf_result c[3] = {{0}};
  cf_submit(w, req(w, "capped", 10, -1, 0), &c[0]);
  cf_submit(w, req(w, "capped", 11, -1, 60000000), &c[1]);
  uint64_t t0 = uv_hrtime();
  cf_wait(w, &c[1], 1);
  assert_int_equal(c[1].status, ISV_EUNAVAIL);
  assert_true(uv_hrtime() - t0 < 2000000000ull); /* the 3 ms, not the request's 60 s */
  cf_submit(w, req(w, "capped", 12, -1, 500), &c[2]);
  cf_wait(w, &c[2], 1);
  assert_int_equal(c[2].status, ISV_EUNAVAIL);
  run_next(2, 10);
  assert_int_equal(c[0].status, 0);
  /* without a policy "timeout" stays the deadline it was: 504 */
  cf_result p[2] = {{0}};
  cf_submit(w, req(w, "plain", 20, -1, 0), &p[0]);
  cf_submit(w, req(w, "plain", 21, -1, 1000), &p[1]);
  cf_wait(w, &p[1], 1);
  assert_int_equal(p[1].status, ISV_EDEADLINE);
  run_next(3, 20);
}

static void a_batch_takes_the_levels_in_order(void **state) {
  cf_world *w = *state;
  cf_result r[6] = {{0}};
  cf_submit(w, req(w, "pbatch", 0, 2, 0), &r[0]); /* alone: the instance is taken */
  cf_submit(w, req(w, "pbatch", 1, 2, 0), &r[1]);
  cf_submit(w, req(w, "pbatch", 2, 1, 0), &r[2]);
  cf_submit(w, req(w, "pbatch", 3, 2, 0), &r[3]);
  cf_submit(w, req(w, "pbatch", 4, 1, 0), &r[4]);
  cf_submit(w, req(w, "pbatch", 5, 2, 0), &r[5]);
  run_next(0, 0);
  assert_int_equal(hold.n, 2); /* the next batch: 4 rows, level 1 first */
  static const float rows[4] = {2, 4, 1, 3};
  for (size_t i = 0; i < 4; i++) assert_true(x_of(hold.held[1], i) == rows[i]);
  assert_int_equal(cf_scale(hold.held[1], 1), 0);
  run_next(2, 5);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(r[i].status, 0);
    assert_true(r[i].y[0] == (float)i); /* each its own row back */
  }
}

static void configurations_the_registry_refuses(void **state) {
  (void)state;
  isv_model_config *c;
  assert_int_equal(isv_model_config_new("m", &c), 0);
  assert_int_equal(isv_model_config_set_priority_levels(c, 3, 0), ISV_EINVAL);
  assert_int_equal(isv_model_config_set_priority_levels(c, 3, 4), ISV_EINVAL);
  assert_int_equal(isv_model_config_set_priority_levels(c, 0, 1), ISV_EINVAL);
  assert_int_equal(isv_model_config_set_priority_levels(c, ISV_MAX_PRIORITY_LEVELS + 1, 1),
                   ISV_EINVAL);
  assert_int_equal(c->queue_policies, 0); /* refused calls change nothing */
  isv_queue_policy p = {.struct_size = sizeof p, .timeout_action = (isv_timeout_action)2};
  assert_int_equal(isv_model_config_set_queue_policy(c, 0, &p), ISV_EINVAL);
  p.timeout_action = ISV_TIMEOUT_DELAY;
  p.struct_size = sizeof(size_t);
  assert_int_equal(isv_model_config_set_queue_policy(c, 0, &p), ISV_EINVAL);
  assert_int_equal(isv_model_config_set_queue_policy(c, 0, NULL), ISV_EINVAL);
  p.struct_size = sizeof p;
  assert_int_equal(isv_model_config_set_queue_policy(c, ISV_MAX_PRIORITY_LEVELS + 1, &p),
                   ISV_EINVAL);
  /* a level's policy beyond the levels: refused at registration, in Triton's words */
  assert_int_equal(isv_model_config_set_queue_policy(c, 3, &p), 0);
  assert_int_equal(isv_model_config_set_priority_levels(c, 2, 1), 0);
  isv_backend be = {.struct_size = sizeof be, .infer = be_hold};
  char why[200];
  assert_int_equal(isv__registry_check(c, "1", &be, why, sizeof why), ISV_EINVAL);
  assert_string_equal(why, "priority queue policy must have priority level in range [1, 2] "
                           "for m");
  assert_int_equal(isv_model_config_set_priority_levels(c, 3, 1), 0);
  assert_int_equal(isv__registry_check(c, "1", &be, why, sizeof why), 0);
  /* the copy a registration keeps has all of it */
  isv_model_config *d = isv__config_copy(c, NULL);
  assert_non_null(d);
  assert_int_equal(d->priority_levels, 3);
  assert_int_equal(isv__config_level_policy(d, 3)->timeout_action, ISV_TIMEOUT_DELAY);
  assert_int_equal(isv__config_level_policy(d, 2)->timeout_action, ISV_TIMEOUT_REJECT);
  isv_model_config_free(d);
  /* not with sequence batching */
  assert_int_equal(isv_model_config_set_sequence_batching(c, 0, 0), 0);
  assert_int_equal(isv__registry_check(c, "1", &be, why, sizeof why), ISV_EINVAL);
  isv_model_config_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(
          levels_run_in_order_each_in_arrival_order_none_and_0_the_default, setup, teardown),
      cmocka_unit_test_setup_teardown(a_priority_out_of_range_or_not_an_integer_is_400, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_model_without_levels_reads_no_priority, setup, teardown),
      cmocka_unit_test_setup_teardown(
          a_full_level_refuses_with_triton_s_words_other_levels_still_queue, setup, teardown),
      cmocka_unit_test_setup_teardown(a_timed_out_request_is_rejected_without_running, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          delay_puts_a_timed_out_request_behind_its_level_but_ahead_of_lower_ones, setup,
          teardown),
      cmocka_unit_test_setup_teardown(the_timeout_parameter_counts_only_where_the_policy_allows_it,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_batch_takes_the_levels_in_order, setup, teardown),
      cmocka_unit_test(configurations_the_registry_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
