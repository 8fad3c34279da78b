/* KServe V2 gRPC ModelInferRequest bytes → canonical request (→ validation → a
 * ModelInferResponse echoing the inputs as outputs, read back and checked). Must never crash,
 * leak or hang; any input either decodes or fails with a code and a message. */
#include <stdlib.h>
#include <string.h>

#include "core/request.h"
#include "core_fixture.h"
#include "protocol/v2_pb.h"


/* A minimal reader for the response check (independent of the decoder under test). */
static int rv(const uint8_t **p, const uint8_t *end, uint64_t *v) {
  *v = 0;
  for (unsigned sh = 0; sh < 64; sh += 7) {
    if (*p == end) return -1;
    uint8_t b = *(*p)++;
    *v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* The flattened ModelInferResponse must hold one outputs entry and one raw_output_contents
 * entry per output, the raw bytes equal to the tensor's (fixed-size types). */
static void check_response(const isv_request *r, const uint8_t *p, size_t n) {
  const uint8_t *end = p + n;
  size_t outs = 0, raws = 0;
  while (p < end) {
    uint64_t key, len;
    if (rv(&p, end, &key) || (key & 7) != 2 || rv(&p, end, &len) || len > (uint64_t)(end - p))
      abort();
    if ((key >> 3) == 5) outs++;
    if ((key >> 3) == 6) {
      if (raws >= r->n_outputs) abort();
      const isv_tensor *t = &r->outputs[raws++];
      if (t->dt != ISV_BYTES && (len != t->byte_size || (len && memcmp(p, t->data, len) != 0)))
        abort();
    }
    p += len;
  }
  if (outs != r->n_outputs || raws != r->n_outputs) abort();
}

/* Touch every byte a decoded tensor claims, so ASan sees any out-of-bounds reference. */
static unsigned touch(const isv_tensor *t) {
  unsigned acc = 0;
  if (t->dt == ISV_BYTES) {
    const isv_bytes *b = t->data;
    size_t total = 0;
    for (size_t i = 0; i < t->count; i++) {
      for (size_t j = 0; j < b[i].len; j++) acc += (unsigned char)b[i].ptr[j];
      total += b[i].len;
    }
    if (total != t->byte_size) abort();
  } else {
    if (t->byte_size != t->count * isv_datatype_size(t->dt)) abort();
    const unsigned char *p = t->data;
    for (size_t i = 0; i < t->byte_size; i++) acc += p[i];
    if ((uintptr_t)t->data % isv_datatype_size(t->dt) != 0) abort(); /* alignment promise */
  }
  return acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* an exact-size copy: reads past the message are caught */
  uint8_t *msg = malloc(size ? size : 1);
  if (size) memcpy(msg, data, size);
  isv_request *r = isv_fuzz_request();
  volatile unsigned sink = 0;
  if (isv__v2pb_decode_infer_request(r, msg, size) == 0) {
    if (r->model_name == NULL || r->id == NULL) abort();
    for (size_t i = 0; i < r->n_inputs; i++) sink += touch(&r->inputs[i]);
    for (size_t i = 0; i < r->n_params; i++)
      if (r->params[i].val.type == ISV_PARAM_STRING)
        for (size_t j = 0; j < r->params[i].val.v.s.len; j++)
          sink += (unsigned char)r->params[i].val.v.s.ptr[j];
    isv__request_validate(r);
    /* Echo the decoded inputs as outputs through both response encoders. */
    r->outputs = r->inputs;
    r->n_outputs = r->n_inputs;
    isv__parts parts;
    for (int stream = 0; stream < 2; stream++) {
      int rc = stream ? isv__v2pb_encode_stream_response(r, &parts)
                      : isv__v2pb_encode_infer_response(r, &parts);
      if (rc != 0) abort();
      size_t total = 0;
      for (size_t i = 0; i < parts.n; i++) {
        const unsigned char *p = (const unsigned char *)parts.v[i].base;
        for (size_t j = 0; j < parts.v[i].len; j++) sink += p[j];
        total += parts.v[i].len;
      }
      if (total != parts.total) abort();
      if (!stream) {
        uint8_t *flat = malloc(total ? total : 1);
        size_t off = 0;
        for (size_t i = 0; i < parts.n; i++) {
          memcpy(flat + off, parts.v[i].base, parts.v[i].len);
          off += parts.v[i].len;
        }
        check_response(r, flat, total);
        free(flat);
      }
    }
    r->outputs = NULL;
    r->n_outputs = 0;
  } else if (r->status >= 0 || r->errmsg == NULL || r->errmsg[0] == '\0') {
    abort(); /* every failure must carry a code and a message */
  }
  (void)sink;
  isv_request_free(r);
  free(msg);
  return 0;
}
