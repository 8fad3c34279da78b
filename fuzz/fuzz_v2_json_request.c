/* V2 infer request JSON → canonical request (→ validation → response encoding of the inputs).
 * Must never crash, leak or hang; any input either decodes or fails with a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "protocol/v2_json.h"

static uv_loop_t loop;
static isv__core core;
static isv_model *model;

static int noop(isv_request *r, void *u) {
  (void)r;
  (void)u;
  return 0;
}

static void init(void) {
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  isv__core_init(&core, &loop, &o);
  isv_model_config *c = isv_model_config_new("m");
  int64_t any[] = {-1, -1};
  isv_model_config_add_input(c, "INPUT0", ISV_INT32, any, 2);
  isv_model_config_add_input(c, "INPUT1", ISV_BYTES, any, 1);
  isv_model_config_add_output(c, "OUTPUT0", ISV_FP32, any, 2);
  isv_backend be = {sizeof be, noop, NULL};
  isv__registry_add(&core.reg, c, "1", &be, NULL, &model);
  isv_model_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  char *body = malloc(size ? size : 1);
  if (size) memcpy(body, data, size);
  isv_request *r = isv__request_new(&core);
  isv__model_ref(model);
  r->model = model;
  if (isv__v2_decode_request(r, body, size, 64) == 0) {
    if (r->errmsg == NULL) abort();
    isv__request_validate(r);
    /* Echo the decoded inputs as outputs: exercises the writer on every datatype, including
     * BYTES that came out of JSON escapes. */
    r->outputs = r->inputs;
    r->n_outputs = r->n_inputs;
    isv__buf b;
    isv__buf_init(&b);
    isv__v2_encode_response(r, &b);
    isv__buf_free(&b);
    r->outputs = NULL;
    r->n_outputs = 0;
  } else if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') {
    abort(); /* every failure must carry a code and a message */
  }
  isv_request_free(r);
  free(body);
  return 0;
}
