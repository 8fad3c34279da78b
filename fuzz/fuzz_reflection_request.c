/* gRPC server reflection's request decoder and its answers (protocol/reflection_grpc.c): a
 * ServerReflectionRequest, as a client sends it on ServerReflectionInfo, to a server whose
 * enabled front ends the first byte chooses (one bit per built-in front end with gRPC
 * methods; reflection itself always on). Must never crash, leak or hang, and:
 *  - a request that does not decode is refused with ISV_EBADREQ and a message;
 *  - every answer is one well-formed ServerReflectionResponse: only fields 1, 2 and one of
 *    4..7; original_request decodes back to the same request (the echo is faithful);
 *  - a file answer carries only files the server shows (reflection.h), each byte for byte as
 *    protoc wrote it, the first one first, the others what it imports. */
#include <pb_decode.h>
#include <stdlib.h>
#include <string.h>

#include "codec/pbwire.h"
#include "core/lifecycle.h"
#include "protocol/builtin.h"
#include "protocol/reflection.h"
#include "reflection.pb.h"

static uv_loop_t loop;
static isv__core core;

static void init(void) {
  uv_loop_init(&loop);
  isv_options o;
  isv__options_defaults(&o);
  if (isv__core_init(&core, &loop, &o) != 0) abort();
}

static int shown_file(uint64_t shown, isv__pb_span s) {
  for (size_t f = 0; f < isv__pb_n_files; f++)
    if ((shown >> f & 1) && isv__pb_files[f].len == s.n &&
        memcmp(isv__pb_files[f].data, s.p, s.n) == 0)
      return (int)f;
  return -1;
}

static void check_files(uint64_t shown, isv__pb_span s) {
  isv__pb_reader r = isv__pb_reader_of(s);
  isv__pb_field f;
  int first = -1, rc;
  while ((rc = isv__pb_read_field(&r, &f)) == 1) {
    if (f.num != 1 || f.wt != ISV__PB_LEN) abort();
    int k = shown_file(shown, f.s);
    if (k < 0) abort(); /* a file the server does not show, or bytes that are no file */
    if (first < 0) {
      first = k;
      continue;
    }
    int dep = 0;
    for (size_t d = 0; d < isv__pb_files[first].n_deps; d++) dep |= isv__pb_files[first].deps[d] == k;
    if (!dep) abort();
  }
  if (rc != 0 || first < 0) abort();
}

static void check(const isv__grpc_services *svc, const uint8_t *msg, size_t len,
                  const isv__buf *out) {
  isv__pb_reader r = isv__pb_reader_of((isv__pb_span){(const uint8_t *)out->data, out->len});
  isv__pb_field f;
  int answers = 0, echoed = 0, rc;
  while ((rc = isv__pb_read_field(&r, &f)) == 1) {
    if (f.wt != ISV__PB_LEN) abort();
    if (f.num == 2) {
      /* the echo decodes to what the request decoded to */
      grpc_reflection_v1_ServerReflectionRequest a = grpc_reflection_v1_ServerReflectionRequest_init_zero;
      grpc_reflection_v1_ServerReflectionRequest b = grpc_reflection_v1_ServerReflectionRequest_init_zero;
      pb_istream_t in1 = pb_istream_from_buffer(msg, len);
      pb_istream_t in2 = pb_istream_from_buffer(f.s.p, f.s.n);
      if (!pb_decode(&in1, grpc_reflection_v1_ServerReflectionRequest_fields, &a) ||
          !pb_decode(&in2, grpc_reflection_v1_ServerReflectionRequest_fields, &b))
        abort();
      if (strcmp(a.host, b.host) != 0 || a.which_message_request != b.which_message_request)
        abort();
      switch (a.which_message_request) {
      case grpc_reflection_v1_ServerReflectionRequest_file_containing_extension_tag:
        if (strcmp(a.message_request.file_containing_extension.containing_type,
                   b.message_request.file_containing_extension.containing_type) != 0 ||
            a.message_request.file_containing_extension.extension_number !=
                b.message_request.file_containing_extension.extension_number)
          abort();
        break;
      case 0:
        break;
      default: /* the string members share their place in the union */
        if (strcmp(a.message_request.file_by_filename, b.message_request.file_by_filename))
          abort();
      }
      echoed = 1;
    } else if (f.num >= 4 && f.num <= 7) {
      answers++;
      if (f.num == 4) check_files(isv__reflection_visible(svc), f.s);
    } else if (f.num != 1) {
      abort();
    }
  }
  if (rc != 0 || answers != 1 || !echoed) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    init();
    ready = 1;
  }
  if (size < 1) return 0;
  isv__grpc_services svc;
  isv__grpc_services_init(&svc, &core);
  unsigned bit = 0;
  for (const isv__frontend *const *fe = isv__builtin_frontends; *fe; fe++) {
    if (!(*fe)->methods) continue;
    int on = *fe == &isv__grpc_reflection_frontend || (data[0] >> bit++ & 1);
    for (const isv__grpc_method *m = (*fe)->methods; on && m->path; m++)
      if (isv__grpc_services_add(&svc, m, (*fe)->name) != 0) abort();
  }
  const uint8_t *msg = data + 1;
  size_t len = size - 1;
  isv__buf out;
  isv__buf_init(&out, NULL);
  isv__grpc_unary u = {&core, &svc, msg, len, &out, "", NULL, {0}};
  const isv__grpc_method *m = &isv__grpc_reflection_frontend.methods[data[0] >> 7];
  int rc = m->answer(&u);
  if (rc == ISV_EBADREQ) {
    if (u.err[0] == '\0') abort();
  } else if (rc != 0) {
    abort();
  } else {
    check(&svc, msg, len, &out);
  }
  isv__buf_free(&out);
  isv__grpc_services_free(&svc);
  return 0;
}
