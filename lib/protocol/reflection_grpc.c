/* gRPC server reflection: grpc.reflection.v1.ServerReflection/ServerReflectionInfo and the same
 * under grpc.reflection.v1alpha (older clients ask it; the messages are the same on the wire),
 * a bidirectional stream whose every request is answered at once, in order.
 *
 * What it tells is reflection.h's view of the compiled-in descriptors: the services this
 * server serves, and their files with what those import. Answers follow grpc's own server:
 *  - list_services: every served service (the reflection services too);
 *  - file_by_filename, file_containing_symbol: the file, then its imports transitively (each
 *    file's serialized FileDescriptorProto); not there: error_response NOT_FOUND;
 *  - file_containing_extension: error_response NOT_FOUND (no proto of the library extends
 *    anything); all_extension_numbers_of_type: a known message type has none (an empty list),
 *    anything else is NOT_FOUND;
 *  - a request with none of these: error_response INVALID_ARGUMENT, and the stream goes on.
 * Each response echoes the request (original_request) and its host (valid_host). A request
 * that does not decode ends the stream with INVALID_ARGUMENT. */
#include <stdio.h>
#include <string.h>

#include "codec/nanopb_glue.h"
#include "codec/pbwire.h"
#include "protocol/builtin.h"
#include "protocol/reflection.h"
#include "reflection.pb.h"

typedef grpc_reflection_v1_ServerReflectionRequest request;

enum { GRPC_INVALID_ARGUMENT = 3, GRPC_NOT_FOUND = 5 };

/* ---- writing protobuf into a buffer (responses wrap descriptors' bytes as they are) ------- */

static void put_varint(isv__buf *b, uint32_t num, uint64_t v) {
  uint8_t tmp[24], *p = isv__pb_put_key(tmp, num, ISV__PB_VARINT);
  p = isv__pb_put_varint(p, v);
  isv__buf_append(b, tmp, (size_t)(p - tmp));
}

static void put_len(isv__buf *b, uint32_t num, const void *data, size_t n) {
  uint8_t tmp[24], *p = isv__pb_put_key(tmp, num, ISV__PB_LEN);
  p = isv__pb_put_varint(p, n);
  isv__buf_append(b, tmp, (size_t)(p - tmp));
  if (n) isv__buf_append(b, data, n);
}

static void put_str(isv__buf *b, uint32_t num, const char *s) {
  if (s[0]) put_len(b, num, s, strlen(s)); /* proto3: "" is not written */
}

/* ---- the answers: each writes one ServerReflectionResponse.message_response -------------- */

/* field numbers of ServerReflectionResponse's oneof */
enum { FILE_DESCRIPTOR_RESPONSE = 4, ALL_EXTENSION_NUMBERS = 5, LIST_SERVICES = 6, ERROR = 7 };

static void error_response(isv__buf *b, int code, const char *fmt, const char *what) {
  char msg[700];
  snprintf(msg, sizeof msg, fmt, what);
  isv__buf e;
  isv__buf_init(&e, b->mem);
  put_varint(&e, 1, (uint64_t)code); /* ErrorResponse: error_code 1, error_message 2 */
  put_str(&e, 2, msg);
  if (e.failed) b->failed = 1;
  put_len(b, ERROR, e.data, e.len);
  isv__buf_free(&e);
}

/* FileDescriptorResponse: file f, then every file it imports (transitively). */
static void file_response(isv__buf *b, int f) {
  const isv__pb_file *file = &isv__pb_files[f];
  isv__buf r;
  isv__buf_init(&r, b->mem);
  put_len(&r, 1, file->data, file->len);
  for (size_t k = 0; k < file->n_deps; k++) {
    const isv__pb_file *d = &isv__pb_files[file->deps[k]];
    put_len(&r, 1, d->data, d->len);
  }
  if (r.failed) b->failed = 1;
  put_len(b, FILE_DESCRIPTOR_RESPONSE, r.data, r.len);
  isv__buf_free(&r);
}

/* ListServiceResponse: each served service once ("package.Service"), in the order served. */
static void list_services(isv__buf *b, const isv__grpc_services *s) {
  isv__buf r;
  isv__buf_init(&r, b->mem);
  for (size_t i = 0; i < s->n; i++) {
    const char *path = s->entries[i].method->path + 1; /* "pkg.Service/Method" */
    size_t n = (size_t)(strchr(path, '/') - path);
    size_t k = 0;
    while (k < i && strncmp(s->entries[k].method->path + 1, path, n + 1) != 0) k++;
    if (k < i) continue; /* listed with an earlier method */
    isv__buf one; /* ServiceResponse: name 1 */
    isv__buf_init(&one, b->mem);
    put_len(&one, 1, path, n);
    if (one.failed) r.failed = 1;
    put_len(&r, 1, one.data, one.len);
    isv__buf_free(&one);
  }
  if (r.failed) b->failed = 1;
  put_len(b, LIST_SERVICES, r.data, r.len);
  isv__buf_free(&r);
}

static void answer_request(isv__buf *b, const isv__grpc_services *s, const request *req) {
  uint64_t shown = isv__reflection_visible(s);
  int f;
  switch (req->which_message_request) {
  case grpc_reflection_v1_ServerReflectionRequest_list_services_tag:
    list_services(b, s);
    break;
  case grpc_reflection_v1_ServerReflectionRequest_file_by_filename_tag: {
    const char *name = req->message_request.file_by_filename;
    if ((f = isv__reflection_file(shown, name)) >= 0) file_response(b, f);
    else error_response(b, GRPC_NOT_FOUND, "file not found: %.500s", name);
    break;
  }
  case grpc_reflection_v1_ServerReflectionRequest_file_containing_symbol_tag: {
    const char *symbol = req->message_request.file_containing_symbol;
    if ((f = isv__reflection_symbol(s, shown, symbol, NULL)) >= 0) file_response(b, f);
    else error_response(b, GRPC_NOT_FOUND, "symbol not found: %.500s", symbol);
    break;
  }
  case grpc_reflection_v1_ServerReflectionRequest_file_containing_extension_tag:
    error_response(b, GRPC_NOT_FOUND, "extension not found (%s defines no extensions)",
                   "the server");
    break;
  case grpc_reflection_v1_ServerReflectionRequest_all_extension_numbers_of_type_tag: {
    const char *type = req->message_request.all_extension_numbers_of_type;
    isv__pb_kind kind;
    f = isv__reflection_symbol(s, shown, type, &kind);
    if (f < 0 || kind != ISV__PB_MESSAGE) { /* only a message can be extended */
      error_response(b, GRPC_NOT_FOUND, "type not found: %.500s", type);
      break;
    }
    isv__buf r; /* ExtensionNumberResponse: base_type_name 1, no extension_number */
    isv__buf_init(&r, b->mem);
    put_str(&r, 1, type);
    if (r.failed) b->failed = 1;
    put_len(b, ALL_EXTENSION_NUMBERS, r.data, r.len);
    isv__buf_free(&r);
    break;
  }
  default:
    error_response(b, GRPC_INVALID_ARGUMENT, "%s", "the request asks nothing (no message_request)");
    break;
  }
}

static int answer(isv__grpc_unary *u) {
  request req = grpc_reflection_v1_ServerReflectionRequest_init_zero;
  pb_istream_t in = pb_istream_from_buffer(u->msg ? u->msg : (const pb_byte_t *)"", u->len);
  if (!pb_decode(&in, grpc_reflection_v1_ServerReflectionRequest_fields, &req)) {
    snprintf(u->err, sizeof u->err, "malformed ServerReflectionRequest: %s", PB_GET_ERROR(&in));
    return ISV_EBADREQ;
  }
  put_str(u->out, 1, req.host); /* valid_host */
  isv__buf echo;                 /* original_request */
  isv__buf_init(&echo, u->out->mem);
  if (isv__nanopb_encode(grpc_reflection_v1_ServerReflectionRequest_fields, &req, &echo) != 0)
    u->out->failed = 1;
  put_len(u->out, 2, echo.data, echo.len);
  isv__buf_free(&echo);
  answer_request(u->out, u->services, &req);
  if (u->out->failed) {
    strcpy(u->err, "out of memory");
    return ISV_ENOMEM;
  }
  return 0;
}

static const isv__grpc_method methods[] = {
    {"/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", ISV__RPC_BIDI_STREAM, answer,
     NULL, NULL, NULL, NULL},
    {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", ISV__RPC_BIDI_STREAM,
     answer, NULL, NULL, NULL, NULL},
    {0},
};

const isv__frontend isv__grpc_reflection_frontend = {
    .name = "grpc_reflection",
    .enabled_by_default = 1,
    .methods = methods,
    .grpc_label = "grpc_reflection",
};
