/* core/sequence.c and sequence batching through the core: the table (numeric and string ids
 * apart, growth, removal), a sequence's requests in order on one instance with the state slot
 * the backend keeps, the ends (its end request, idle timeout, a restart, the model removed)
 * reported once to the backend with its state, and the 400 / 503 answers. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sequence.h"
#include "core_fixture.h"

/* ---- the table --------------------------------------------------------------------------- */

static void numeric_and_string_ids_never_collide(void **state) {
  (void)state;
  isv__seqtab t;
  isv__seqtab_init(&t, NULL);
  assert_null(isv__seqtab_find(&t, 1, NULL, 0));
  isv__seq *n = isv__seqtab_add(&t, 1, NULL, 0, 0);
  isv__seq *s = isv__seqtab_add(&t, 0, "1", 1, 1);
  assert_non_null(n);
  assert_non_null(s);
  assert_ptr_equal(isv__seqtab_find(&t, 1, NULL, 0), n);
  assert_ptr_equal(isv__seqtab_find(&t, 0, "1", 1), s);
  assert_null(isv__seqtab_find(&t, 0, "10", 2));
  assert_string_equal(s->id_str, "1");
  assert_int_equal(t.n, 2);
  isv__seqtab_remove(&t, n);
  assert_null(isv__seqtab_find(&t, 1, NULL, 0));
  isv__seqtab_remove(&t, n); /* not in: nothing */
  assert_int_equal(t.n, 1);
  isv__seq_free(n);
  assert_ptr_equal(isv__seqtab_pop(&t), s);
  assert_null(isv__seqtab_pop(&t));
  isv__seq_free(s);
  isv__seqtab_free(&t);
}

static void the_table_grows_and_finds_everything(void **state) {
  (void)state;
  isv__seqtab t;
  isv__seqtab_init(&t, NULL);
  char name[32];
  for (uint64_t i = 1; i <= 1000; i++) {
    assert_non_null(isv__seqtab_add(&t, i, NULL, 0, 0));
    snprintf(name, sizeof name, "s%llu", (unsigned long long)i);
    assert_non_null(isv__seqtab_add(&t, 0, name, strlen(name), 0));
  }
  assert_int_equal(t.n, 2000);
  for (uint64_t i = 1; i <= 1000; i++) {
    isv__seq *q = isv__seqtab_find(&t, i, NULL, 0);
    assert_non_null(q);
    assert_true(q->id == i);
    snprintf(name, sizeof name, "s%llu", (unsigned long long)i);
    assert_non_null(isv__seqtab_find(&t, 0, name, strlen(name)));
  }
  isv__seq *q;
  size_t popped = 0;
  while ((q = isv__seqtab_pop(&t)) != NULL) {
    isv__seq_free(q);
    popped++;
  }
  assert_int_equal(popped, 2000);
  isv__seqtab_free(&t);
}

/* ---- sequences through the core ---------------------------------------------------------- */

/* What the backend saw, per call, and the ends it was told of. */
static struct {
  int calls;
  unsigned instance[32];
  int flags[32];
  uint64_t id[32];
  char id_str[32][16];
  int ends;
  uint64_t end_id[8];
  char end_str[8][16];
  float end_sum[8];
  int end_reason[8];
  isv_request *pending; /* "acc_async": completed by the test */
} be;

/* y = [running sum of the sequence], the state a float the backend allocates at the start. */
static int accumulate(isv_request *r) {
  uint64_t id;
  const char *s;
  int flags = isv_request_sequence(r, &id, &s);
  void **slot = isv_request_sequence_state(r);
  if (be.calls < 32) {
    be.instance[be.calls] = isv_request_instance(r);
    be.flags[be.calls] = flags;
    be.id[be.calls] = id;
    snprintf(be.id_str[be.calls], 16, "%s", s ? s : "");
  }
  be.calls++;
  if (flags < 0 || slot == NULL) return ISV_EINTERNAL;
  if (*slot == NULL && (*slot = calloc(1, sizeof(float))) == NULL) return ISV_ENOMEM;
  float *sum = *slot;
  const isv_tensor *x = isv_request_input(r, "x");
  for (size_t i = 0; i < isv_tensor_element_count(x); i++) *sum += ((const float *)isv_tensor_data(x))[i];
  int64_t one = 1;
  float *y;
  int rc = isv_request_alloc_output(r, "y", ISV_FP32, &one, 1, (void **)&y);
  if (rc) return rc;
  *y = *sum;
  return isv_request_complete(r, 0, NULL);
}

static int be_acc(isv_request *r, void *u) {
  (void)u;
  return accumulate(r);
}

static int be_acc_async(isv_request *r, void *u) {
  (void)u;
  be.pending = r; /* the test completes it with accumulate() */
  return 0;
}

static void on_end(void *user, uint64_t id, const char *id_str, void *state,
                   isv_sequence_end_reason reason) {
  (void)user;
  if (be.ends < 8) {
    be.end_id[be.ends] = id;
    snprintf(be.end_str[be.ends], 16, "%s", id_str ? id_str : "");
    be.end_sum[be.ends] = state ? *(float *)state : -1;
    be.end_reason[be.ends] = (int)reason;
  }
  be.ends++;
  free(state);
}

static int setup(void **state) {
  memset(&be, 0, sizeof be);
  cf_world *w = cf_world_new(NULL);
  cf_model m = {.name = "acc", .infer = be_acc, .instances = 2, .sequences = 1,
                .seq_idle_us = 60000000, .max_sequences = 3, .sequence_end = on_end};
  cf_add(w, &m);
  cf_model idle = m;
  idle.name = "acc_idle";
  idle.seq_idle_us = 2000;
  cf_add(w, &idle);
  cf_model as = m;
  as.name = "acc_async";
  as.infer = be_acc_async;
  as.mode = ISV_EXEC_ASYNC;
  as.instances = 1;
  cf_add(w, &as);
  *state = w;
  return 0;
}

static int teardown(void **state) {
  cf_world *w = *state;
  int before = be.ends;
  cf_world_free(w); /* live sequences end with the models: CLOSED */
  for (int i = before; i < be.ends && i < 8; i++)
    assert_int_equal(be.end_reason[i], ISV_SEQUENCE_END_CLOSED);
  return 0;
}

/* Submit x = {v} to `model` in sequence `id` (numeric; or str when not NULL) with flags. */
static isv_request *step(cf_world *w, const char *model, uint64_t id, const char *str,
                         unsigned flags, float v, cf_result *res) {
  isv_request *r = cf_request(w, model, &v, 1, 0);
  if (str) cf_param_str(r, "sequence_id", str);
  else if (id) cf_param_i64(r, "sequence_id", (int64_t)id);
  if (flags & ISV_SEQUENCE_FLAG_START) cf_param_bool(r, "sequence_start", 1);
  if (flags & ISV_SEQUENCE_FLAG_END) cf_param_bool(r, "sequence_end", 1);
  return cf_submit(w, r, res);
}

static void a_sequence_accumulates_then_ends_once(void **state) {
  cf_world *w = *state;
  cf_result r[4] = {{0}};
  step(w, "acc", 42, NULL, ISV_SEQUENCE_FLAG_START, 1, &r[0]);
  step(w, "acc", 42, NULL, 0, 2, &r[1]);
  assert_int_equal(be.ends, 0);
  step(w, "acc", 42, NULL, ISV_SEQUENCE_FLAG_END, 3, &r[2]);
  for (int i = 0; i < 3; i++) assert_int_equal(r[i].status, 0);
  assert_true(r[0].y[0] == 1 && r[1].y[0] == 3 && r[2].y[0] == 6);
  assert_int_equal(be.flags[0], ISV_SEQUENCE_FLAG_START);
  assert_int_equal(be.flags[1], 0);
  assert_int_equal(be.flags[2], ISV_SEQUENCE_FLAG_END);
  assert_true(be.id[1] == 42 && be.id_str[1][0] == '\0');
  assert_int_equal(be.instance[0], be.instance[2]); /* one instance for the whole sequence */
  assert_int_equal(be.ends, 1);
  assert_true(be.end_id[0] == 42 && be.end_sum[0] == 6);
  assert_int_equal(be.end_reason[0], ISV_SEQUENCE_END_REQUESTED);
  /* over: it takes no more requests without a new start */
  step(w, "acc", 42, NULL, 0, 4, &r[3]);
  assert_int_equal(r[3].status, ISV_EBADREQ);
  assert_string_equal(r[3].msg, "sequence 42 of model 'acc' is not live: its first request "
                                "must set 'sequence_start'");
  assert_int_equal(be.calls, 3);
}

static void sequences_keep_apart_on_their_own_instances(void **state) {
  cf_world *w = *state;
  cf_result r[6] = {{0}};
  step(w, "acc", 7, NULL, ISV_SEQUENCE_FLAG_START, 10, &r[0]);
  step(w, "acc", 0, "abc", ISV_SEQUENCE_FLAG_START, 1, &r[1]);
  step(w, "acc", 7, NULL, 0, 10, &r[2]);
  step(w, "acc", 0, "abc", 0, 1, &r[3]);
  step(w, "acc", 0, "abc", ISV_SEQUENCE_FLAG_END, 1, &r[4]);
  step(w, "acc", 7, NULL, ISV_SEQUENCE_FLAG_END, 10, &r[5]);
  assert_true(r[2].y[0] == 20 && r[3].y[0] == 2 && r[4].y[0] == 3 && r[5].y[0] == 30);
  assert_int_not_equal(be.instance[0], be.instance[1]); /* the least loaded instance */
  assert_int_equal(be.instance[0], be.instance[2]);
  assert_int_equal(be.instance[1], be.instance[3]);
  assert_string_equal(be.id_str[3], "abc");
  assert_int_equal(be.ends, 2);
  assert_string_equal(be.end_str[0], "abc");
  assert_true(be.end_sum[0] == 3 && be.end_id[1] == 7 && be.end_sum[1] == 30);
}

static void requests_without_a_usable_id_are_refused(void **state) {
  cf_world *w = *state;
  cf_result a = {0}, b = {0}, c = {0}, d = {0};
  step(w, "acc", 0, NULL, ISV_SEQUENCE_FLAG_START, 1, &a);
  assert_int_equal(a.status, ISV_EBADREQ);
  assert_string_equal(a.msg, "model 'acc' is stateful: every request needs a 'sequence_id' "
                             "parameter (a uint64 > 0 or a string)");
  float v = 1;
  isv_request *r = cf_request(w, "acc", &v, 1, 0);
  isv_param p = {.type = ISV_PARAM_DOUBLE, .v.d = 1.5};
  assert_int_equal(isv_request_set_param(r, "sequence_id", &p), 0);
  cf_submit(w, r, &b);
  assert_int_equal(b.status, ISV_EBADREQ);
  assert_string_equal(b.msg, "parameter 'sequence_id' must be an unsigned integer or a string");
  r = cf_request(w, "acc", &v, 1, 0);
  cf_param_i64(r, "sequence_id", 3);
  cf_param_i64(r, "sequence_start", 1);
  cf_submit(w, r, &c);
  assert_int_equal(c.status, ISV_EBADREQ);
  assert_string_equal(c.msg, "parameter 'sequence_start' must be true or false");
  step(w, "acc", 0, "nope", 0, 1, &d);
  assert_int_equal(d.status, ISV_EBADREQ);
  assert_string_equal(d.msg, "sequence 'nope' of model 'acc' is not live: its first request "
                             "must set 'sequence_start'");
  assert_int_equal(be.calls, 0);
}

static void at_most_max_sequences_live(void **state) {
  cf_world *w = *state;
  cf_result r[4] = {{0}};
  for (uint64_t i = 0; i < 3; i++) step(w, "acc", i + 1, NULL, ISV_SEQUENCE_FLAG_START, 1, &r[i]);
  step(w, "acc", 4, NULL, ISV_SEQUENCE_FLAG_START, 1, &r[3]);
  assert_int_equal(r[3].status, ISV_EUNAVAIL);
  assert_string_equal(r[3].msg, "model 'acc' already runs 3 sequences, its maximum");
  assert_int_equal(be.calls, 3);
}

static void an_idle_sequence_ends_after_its_timeout(void **state) {
  cf_world *w = *state;
  cf_result a = {0}, b = {0};
  step(w, "acc_idle", 9, NULL, ISV_SEQUENCE_FLAG_START, 5, &a);
  assert_int_equal(a.status, 0);
  assert_int_equal(be.ends, 0);
  for (int i = 0; i < 1000 && be.ends == 0; i++) cf_run_for(w, 1); /* its timeout is 2 ms */
  assert_int_equal(be.end_reason[0], ISV_SEQUENCE_END_IDLE);
  assert_true(be.end_id[0] == 9 && be.end_sum[0] == 5);
  step(w, "acc_idle", 9, NULL, 0, 1, &b);
  assert_int_equal(b.status, ISV_EBADREQ);
}

static void a_new_start_ends_the_old_sequence_with_its_id(void **state) {
  cf_world *w = *state;
  cf_result r[3] = {{0}};
  step(w, "acc", 5, NULL, ISV_SEQUENCE_FLAG_START, 100, &r[0]);
  step(w, "acc", 5, NULL, ISV_SEQUENCE_FLAG_START, 1, &r[1]);
  assert_int_equal(be.ends, 1);
  assert_int_equal(be.end_reason[0], ISV_SEQUENCE_END_RESTARTED);
  assert_true(be.end_sum[0] == 100);
  step(w, "acc", 5, NULL, 0, 1, &r[2]);
  assert_true(r[1].y[0] == 1 && r[2].y[0] == 2); /* a fresh state */
}

static void a_sequences_requests_run_one_at_a_time_in_order(void **state) {
  cf_world *w = *state;
  isv_model *m = cf_find(w, "acc_async");
  cf_result r[3] = {{0}};
  step(w, "acc_async", 1, NULL, ISV_SEQUENCE_FLAG_START, 1, &r[0]);
  step(w, "acc_async", 1, NULL, 0, 2, &r[1]);
  step(w, "acc_async", 1, NULL, ISV_SEQUENCE_FLAG_END, 3, &r[2]);
  for (int i = 0; i < 3; i++) {
    assert_non_null(be.pending);
    assert_int_equal(m->stats.queued, (size_t)(2 - i)); /* the others wait */
    isv_request *p = be.pending;
    be.pending = NULL;
    assert_int_equal(accumulate(p), 0); /* completes on the loop thread: the next one starts */
    assert_int_equal(r[i].calls, 1);
  }
  assert_true(r[0].y[0] == 1 && r[1].y[0] == 3 && r[2].y[0] == 6);
  assert_int_equal(be.ends, 1);
}

static void removing_the_model_ends_its_live_sequences(void **state) {
  cf_world *w = *state;
  cf_result a = {0};
  step(w, "acc", 77, NULL, ISV_SEQUENCE_FLAG_START, 2, &a);
  assert_int_equal(isv__registry_remove(&w->core.reg, "acc", NULL), 0);
  assert_int_equal(be.ends, 1);
  assert_int_equal(be.end_reason[0], ISV_SEQUENCE_END_CLOSED);
  assert_true(be.end_id[0] == 77 && be.end_sum[0] == 2);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(numeric_and_string_ids_never_collide),
      cmocka_unit_test(the_table_grows_and_finds_everything),
      T(a_sequence_accumulates_then_ends_once),
      T(sequences_keep_apart_on_their_own_instances),
      T(requests_without_a_usable_id_are_refused),
      T(at_most_max_sequences_live),
      T(an_idle_sequence_ends_after_its_timeout),
      T(a_new_start_ends_the_old_sequence_with_its_id),
      T(a_sequences_requests_run_one_at_a_time_in_order),
      T(removing_the_model_ends_its_live_sequences),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
