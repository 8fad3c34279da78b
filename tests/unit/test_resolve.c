/* core/resolve.c and isv__core_resolve: why a named model cannot be served, as a reason code,
 * and each protocol's words for it from the one table — the texts clients and tests match on
 * (Triton's "Request for unknown model", TF Serving's "Servable not found for request", the
 * in-process API's last error), the codes behind their statuses, names cut at each column's
 * limit, and a buffer too small for the text. */
#include "cmocka_prelude.h"

#include <string.h>

#include "core/request.h"
#include "core/resolve.h"
#include "core/lifecycle.h"

static uv_loop_t loop;
static isv__core core;

static int noop(isv_request *r, void *u) {
  (void)u;
  return isv_request_complete(r, 0, NULL);
}

static int setup(void **state) {
  (void)state;
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  assert_int_equal(isv__core_init(&core, &loop, &o), 0);
  isv_model_config *c;
  isv_model_config_new("mv", &c);
  isv_backend be = {.struct_size = sizeof be, .infer = noop};
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  assert_int_equal(isv__registry_add(&core.reg, c, "2", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  isv_model_config_new("@hidden", &c);
  assert_int_equal(isv__registry_add(&core.reg, c, "1", &be, NULL, NULL), 0);
  isv_model_config_free(c);
  assert_int_equal(isv__entry_set_label(isv__registry_entry(&core.reg, "mv", 2), "stable", "1"), 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  isv__core_close(&core, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop);
}

static isv__model_spec spec(const char *name, const char *version, const char *label) {
  isv__model_spec s = {name, strlen(name), version, version ? strlen(version) : 0, label,
                       label ? strlen(label) : 0};
  return s;
}

static isv__why why_of(const char *name, const char *version, const char *label) {
  isv__model_spec s = spec(name, version, label);
  isv_model *m = (isv_model *)&s; /* anything: resolve sets it */
  isv__why why = isv__core_resolve(&core, &s, &m);
  if (why == ISV__FOUND) assert_non_null(m);
  else assert_null(m);
  return why;
}

static void reasons(void **state) {
  (void)state;
  assert_int_equal(why_of("mv", NULL, NULL), ISV__FOUND);
  assert_int_equal(why_of("mv", "2", NULL), ISV__FOUND);
  assert_int_equal(why_of("mv", NULL, "stable"), ISV__FOUND);
  assert_int_equal(why_of("nope", NULL, NULL), ISV__NO_MODEL);
  assert_int_equal(why_of("nope", "1", NULL), ISV__NO_MODEL);   /* the model first */
  assert_int_equal(why_of("nope", NULL, "x"), ISV__NO_MODEL);
  assert_int_equal(why_of("@hidden", NULL, NULL), ISV__NO_MODEL); /* never a client's */
  assert_int_equal(why_of("mv", "7", NULL), ISV__NO_VERSION);
  assert_int_equal(why_of("mv", NULL, "canary"), ISV__NO_LABEL);
}

/* One row: the reason, the spec, and per wording the code and the text. */
typedef struct row {
  isv__why why;
  const char *name, *version, *label;
  struct {
    int code;
    const char *text;
  } w[ISV__N_WORDINGS];
} row;

static const row rows[] = {
    {ISV__NO_MODEL, "nope", NULL, NULL, {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND, "Request for unknown model: 'nope' is not found"},
        [ISV__WORDS_TFS] = {ISV_ENOTFOUND, "Servable not found for request: Latest(nope)"},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "no model 'nope' is registered"}}},
    {ISV__NO_MODEL, "nope", "3", NULL, {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND, "Request for unknown model: 'nope' is not found"},
        [ISV__WORDS_TFS] = {ISV_ENOTFOUND, "Servable not found for request: Specific(nope, 3)"},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "no model 'nope' is registered"}}},
    {ISV__NO_VERSION, "mv", "7", NULL, {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND,
                               "Request for unknown model: 'mv' version 7 is not found"},
        [ISV__WORDS_TFS] = {ISV_ENOTFOUND, "Servable not found for request: Specific(mv, 7)"},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "model 'mv' has no version '7'"}}},
    {ISV__NO_LABEL, "mv", NULL, "canary", {
        [ISV__WORDS_KSERVE] = {ISV_ENOTFOUND, "unknown label 'canary' of model 'mv'"},
        [ISV__WORDS_TFS] = {ISV_EBADREQ, "Unrecognized servable version label: canary"},
        [ISV__WORDS_API] = {ISV_ENOTFOUND, "model 'mv' has no label 'canary'"}}},
    {ISV__NOT_READY, "mv", "2", NULL, {
        [ISV__WORDS_KSERVE] = {ISV_EUNAVAIL, "model 'mv' version '2' is not ready"},
        [ISV__WORDS_TFS] = {ISV_EUNAVAIL, "model 'mv' version '2' is not ready"},
        [ISV__WORDS_API] = {ISV_EUNAVAIL, "model 'mv' version '2' is not ready"}}},
};

static void each_protocol_words_each_reason(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    isv__model_spec s = spec(rows[i].name, rows[i].version, rows[i].label);
    for (int w = 0; w < ISV__N_WORDINGS; w++) {
      char msg[512];
      assert_int_equal(isv__why_say(rows[i].why, (isv__wording)w, &s, msg, sizeof msg),
                       rows[i].w[w].code);
      assert_string_equal(msg, rows[i].w[w].text);
    }
  }
  /* the codes answer with the statuses the tests of every protocol assert */
  assert_int_equal(isv_err_http_status(ISV_ENOTFOUND), 404);
  assert_int_equal(isv_err_http_status(ISV_EBADREQ), 400);
  assert_int_equal(isv_err_http_status(ISV_EUNAVAIL), 503);
}

static void names_are_cut_and_buffers_respected(void **state) {
  (void)state;
  char name[300];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  isv__model_spec s = spec(name, NULL, NULL);
  char msg[512];
  isv__why_say(ISV__NO_MODEL, ISV__WORDS_API, &s, msg, sizeof msg); /* the API quotes 100 */
  assert_int_equal(strlen(msg), strlen("no model '' is registered") + 100);
  isv__why_say(ISV__NO_MODEL, ISV__WORDS_TFS, &s, msg, sizeof msg); /* TF Serving 128 */
  assert_int_equal(strlen(msg), strlen("Servable not found for request: Latest()") + 128);
  isv__why_say(ISV__NO_MODEL, ISV__WORDS_KSERVE, &s, msg, sizeof msg); /* KServe 200 */
  assert_int_equal(strlen(msg), strlen("Request for unknown model: '' is not found") + 200);
  /* a small buffer: cut, terminated, the code unchanged */
  char small[8];
  assert_int_equal(isv__why_say(ISV__NO_MODEL, ISV__WORDS_KSERVE, &s, small, sizeof small),
                   ISV_ENOTFOUND);
  assert_string_equal(small, "Request");
  /* a name given by length (it may point into a path) */
  isv__model_spec part = {"mvX/infer", 2, NULL, 0, NULL, 0};
  isv__why_say(ISV__NO_MODEL, ISV__WORDS_API, &part, msg, sizeof msg);
  assert_string_equal(msg, "no model 'mv' is registered");
}

/* The submit's rule, said with the table's KServe words whatever the protocol. */
static int done_status;
static char done_msg[256];
static void on_done(isv_request *r, int status, void *data) {
  (void)data;
  done_status = status;
  strcpy(done_msg, isv_request_error_message(r));
}

static void binding_and_readiness_fail_in_kserve_words(void **state) {
  (void)state;
  isv_request *r = isv__request_new(&core);
  r->model_name = "mv";
  r->label = "canary";
  done_status = 1;
  isv__core_submit(&core, r, on_done, NULL); /* answered inline */
  isv_request_free(r);
  assert_int_equal(done_status, ISV_ENOTFOUND);
  assert_string_equal(done_msg, "unknown label 'canary' of model 'mv'");
  isv_model *m;
  isv__model_spec s = spec("mv", "2", NULL);
  assert_int_equal(isv__core_resolve(&core, &s, &m), ISV__FOUND);
  m->state = ISV_MODEL_LOADING;
  r = isv__request_new(&core);
  r->model_name = "mv";
  r->version = "2";
  done_status = 1;
  isv__core_submit(&core, r, on_done, NULL);
  isv_request_free(r);
  m->state = ISV_MODEL_READY;
  assert_int_equal(done_status, ISV_EUNAVAIL);
  assert_string_equal(done_msg, "model 'mv' version '2' is not ready");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reasons),
      cmocka_unit_test(each_protocol_words_each_reason),
      cmocka_unit_test(names_are_cut_and_buffers_respected),
      cmocka_unit_test(binding_and_readiness_fail_in_kserve_words),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
