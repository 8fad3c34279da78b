/* Triton's system shared memory extension: REST routes and gRPC methods (v2_shm.h). */
#include "protocol/v2_shm.h"

#include <stdio.h>
#include <string.h>

#include "codec/json_reader.h"
#include "codec/json_writer.h"
#include "codec/pbwire.h"
#include "protocol/http_reply.h"

/* ---- decoders ---------------------------------------------------------------------------- */

static int json_failed(isv__json_reader *rd, char *err, size_t cap) {
  size_t off = 0;
  const char *m = isv__json_error(rd, &off);
  snprintf(err, cap, "malformed register request: %s", m ? m : "invalid JSON");
  return -1;
}

int isv__v2shm_decode_register_json(char *body, size_t len, unsigned max_depth,
                                    isv__v2shm_reg *out, char *err, size_t err_cap) {
  memset(out, 0, sizeof *out);
  if (body == NULL || len == 0) {
    snprintf(err, err_cap, "register request needs a JSON body {\"key\", \"offset\", "
             "\"byte_size\"}");
    return -1;
  }
  isv__json_reader rd;
  isv__json_reader_init(&rd, body, len, max_depth);
  isv__json_token t;
  isv__json_type ty = isv__json_next(&rd, &t);
  if (ty == ISV__JSON_ERROR) return json_failed(&rd, err, err_cap);
  if (ty != ISV__JSON_OBJECT_BEGIN) {
    snprintf(err, err_cap, "register request must be a JSON object");
    return -1;
  }
  int have_key = 0, have_size = 0;
  for (;;) {
    ty = isv__json_next(&rd, &t);
    if (ty == ISV__JSON_OBJECT_END) break;
    if (ty != ISV__JSON_KEY) return json_failed(&rd, err, err_cap);
    int is_key = ISV__TOKEN_IS(&t, "key"), is_off = ISV__TOKEN_IS(&t, "offset"),
        is_size = ISV__TOKEN_IS(&t, "byte_size");
    isv__json_token v;
    ty = isv__json_next(&rd, &v);
    if (ty == ISV__JSON_ERROR) return json_failed(&rd, err, err_cap);
    if (is_key) {
      if (ty != ISV__JSON_STRING) {
        snprintf(err, err_cap, "register request: 'key' must be a string");
        return -1;
      }
      out->key = v.ptr;
      out->key_len = v.len;
      have_key = 1;
    } else if (is_off || is_size) {
      uint64_t n;
      if (ty != ISV__JSON_NUMBER || isv__json_to_uint64(&v, &n) != 0) {
        snprintf(err, err_cap, "register request: '%s' must be a non-negative integer",
                 is_off ? "offset" : "byte_size");
        return -1;
      }
      if (is_off) out->offset = n;
      else out->byte_size = n;
      have_size |= is_size;
    } else if (isv__json_skip(&rd, &v, NULL) != 0) {
      return json_failed(&rd, err, err_cap);
    }
  }
  if (isv__json_next(&rd, &t) != ISV__JSON_EOF) return json_failed(&rd, err, err_cap);
  if (!have_key || !have_size) {
    snprintf(err, err_cap, "register request needs '%s'", have_key ? "byte_size" : "key");
    return -1;
  }
  return 0;
}

int isv__v2shm_decode_register_pb(const uint8_t *msg, size_t len, isv__v2shm_reg *out,
                                  char *err, size_t err_cap) {
  memset(out, 0, sizeof *out);
  isv__pb_reader rr = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    int want_len = f.num == 1 || f.num == 2, want_varint = f.num == 3 || f.num == 4;
    if ((want_len && f.wt != ISV__PB_LEN) || (want_varint && f.wt != ISV__PB_VARINT)) {
      snprintf(err, err_cap, "malformed SystemSharedMemoryRegisterRequest: field %u has the "
               "wrong wire type", f.num);
      return -1;
    }
    switch (f.num) {
    case 1: out->name = (const char *)f.s.p; out->name_len = f.s.n; break;
    case 2: out->key = (const char *)f.s.p; out->key_len = f.s.n; break;
    case 3: out->offset = f.v; break;
    case 4: out->byte_size = f.v; break;
    default: break;
    }
  }
  if (k < 0) {
    snprintf(err, err_cap, "malformed SystemSharedMemoryRegisterRequest");
    return -1;
  }
  return 0;
}

int isv__v2shm_decode_name_pb(const uint8_t *msg, size_t len, const char **name,
                              size_t *name_len) {
  *name = "";
  *name_len = 0;
  isv__pb_reader rr = isv__pb_reader_of((isv__pb_span){msg, len});
  isv__pb_field f;
  int k;
  while ((k = isv__pb_read_field(&rr, &f)) > 0) {
    if (f.num != 1) continue;
    if (f.wt != ISV__PB_LEN) return -1;
    *name = (const char *)f.s.p;
    *name_len = f.s.n;
  }
  return k < 0 ? -1 : 0;
}

/* ---- REST -------------------------------------------------------------------------------- */

static void status_json(const isv__shm_region *g, void *data) {
  isv__buf *b = data;
  if (b->len > 1) isv__buf_putc(b, ',');
  isv__buf_puts(b, "{\"name\":");
  isv__json_write_string(b, g->name, strlen(g->name));
  isv__buf_puts(b, ",\"key\":");
  isv__json_write_string(b, g->key, strlen(g->key));
  isv__buf_puts(b, ",\"offset\":");
  isv__json_write_u64(b, g->offset);
  isv__buf_puts(b, ",\"byte_size\":");
  isv__json_write_u64(b, g->byte_size);
  isv__buf_putc(b, '}');
}

/* GET /v2/systemsharedmemory[/region/{region}]/status: [{name, key, offset, byte_size}...] */
void isv__v2shm_http_status(isv__http_req *q) {
  size_t nl = 0;
  const char *name = isv__http_capture(q, "region", &nl);
  isv__buf b;
  isv__buf_init(&b, q->ex->mem);
  isv__buf_putc(&b, '[');
  char err[512];
  int rc = isv__shm_status(q->core->shm, name, nl, status_json, &b, err, sizeof err);
  if (rc) {
    isv__buf_free(&b);
    isv__reply_error(q->ex, rc, "%s", err);
    return;
  }
  isv__buf_putc(&b, ']');
  isv__reply_json(q->ex, 200, &b);
}

static void reply_ok(isv__exchange *ex) {
  isv__buf b;
  isv__buf_init(&b, ex->mem); /* Triton answers 200 with an empty body */
  isv__reply_json(ex, 200, &b);
}

/* POST /v2/systemsharedmemory/region/{region}/register {"key", "offset", "byte_size"} */
void isv__v2shm_http_register(isv__http_req *q) {
  size_t nl = 0;
  const char *name = isv__http_capture(q, "region", &nl);
  isv__v2shm_reg reg;
  char err[512];
  if (isv__v2shm_decode_register_json(q->ex->body, q->ex->body_len, q->core->opts.max_json_depth,
                                      &reg, err, sizeof err) != 0) {
    isv__reply_error(q->ex, ISV_EBADREQ, "%s", err);
    return;
  }
  int rc = isv__shm_register(q->core->shm, name, nl, reg.key, reg.key_len, reg.offset,
                             reg.byte_size, err, sizeof err);
  if (rc) isv__reply_error(q->ex, rc, "%s", err);
  else reply_ok(q->ex);
}

/* POST /v2/systemsharedmemory[/region/{region}]/unregister (without a region: all) */
void isv__v2shm_http_unregister(isv__http_req *q) {
  size_t nl = 0;
  const char *name = isv__http_capture(q, "region", &nl);
  isv__shm_unregister(q->core->shm, name, name ? nl : 0);
  reply_ok(q->ex);
}

/* /v2/cudasharedmemory/...: this server has no CUDA. No region is ever registered there, so
 * status lists none and unregister has nothing to do (Triton's client examples clear both
 * kinds first); register is refused. */
void isv__v2shm_http_cuda(isv__http_req *q) {
  const char *what = q->data; /* the route's: "status", "register" or "unregister" */
  int is_status = strcmp(what, "status") == 0, is_unregister = strcmp(what, "unregister") == 0;
  size_t nl = 0;
  const char *name = isv__http_capture(q, "region", &nl);
  if (is_status && name) {
    isv__reply_error(q->ex, ISV_ENOTFOUND, "Unable to find cuda shared memory region: '%.*s'",
                     (int)(nl > 200 ? 200 : nl), name);
  } else if (is_status) {
    isv__buf b;
    isv__buf_init(&b, q->ex->mem);
    isv__buf_puts(&b, "[]");
    isv__reply_json(q->ex, 200, &b);
  } else if (is_unregister) {
    reply_ok(q->ex);
  } else {
    isv__reply_error(q->ex, ISV_EUNIMPL, "CUDA shared memory is not supported by this server "
                     "(it has no GPU support): use system shared memory (/v2/systemsharedmemory)");
  }
}

/* ---- gRPC -------------------------------------------------------------------------------- */

static size_t region_status_size(const isv__shm_region *g) {
  size_t n = isv__pb_len_field_size(strlen(g->name)) + isv__pb_len_field_size(strlen(g->key));
  if (g->offset) n += 1 + isv__pb_varint_len(g->offset);
  if (g->byte_size) n += 1 + isv__pb_varint_len(g->byte_size);
  return n;
}

/* One entry of SystemSharedMemoryStatusResponse.regions (map<string, RegionStatus> = 1):
 * {key 1: name, value 2: RegionStatus{name 1, key 2, offset 3, byte_size 4}}. */
static void status_pb(const isv__shm_region *g, void *data) {
  isv__buf *b = data;
  size_t nl = strlen(g->name), kl = strlen(g->key), rs = region_status_size(g);
  size_t entry = isv__pb_len_field_size(nl) + isv__pb_len_field_size(rs);
  size_t total = isv__pb_len_field_size(entry);
  uint8_t *p = (uint8_t *)isv__buf_reserve(b, total), *start = p;
  if (p == NULL) return;
  p = isv__pb_put_key(p, 1, ISV__PB_LEN);
  p = isv__pb_put_varint(p, entry);
  p = isv__pb_put_bytes(p, 1, g->name, nl);
  p = isv__pb_put_key(p, 2, ISV__PB_LEN);
  p = isv__pb_put_varint(p, rs);
  p = isv__pb_put_bytes(p, 1, g->name, nl);
  p = isv__pb_put_bytes(p, 2, g->key, kl);
  if (g->offset) {
    p = isv__pb_put_key(p, 3, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, g->offset);
  }
  if (g->byte_size) {
    p = isv__pb_put_key(p, 4, ISV__PB_VARINT);
    p = isv__pb_put_varint(p, g->byte_size);
  }
  b->len += (size_t)(p - start);
}

int isv__v2shm_grpc_status(isv__grpc_unary *u) {
  const char *name;
  size_t nl;
  if (isv__v2shm_decode_name_pb(u->msg, u->len, &name, &nl) != 0) {
    strcpy(u->err, "malformed SystemSharedMemoryStatusRequest");
    return ISV_EBADREQ;
  }
  int rc = isv__shm_status(u->core->shm, name, nl, status_pb, u->out, u->err, sizeof u->err);
  if (rc == 0 && u->out->failed) rc = ISV_ENOMEM;
  return rc;
}

int isv__v2shm_grpc_register(isv__grpc_unary *u) {
  isv__v2shm_reg reg;
  if (isv__v2shm_decode_register_pb(u->msg, u->len, &reg, u->err, sizeof u->err) != 0)
    return ISV_EBADREQ;
  return isv__shm_register(u->core->shm, reg.name, reg.name_len, reg.key, reg.key_len,
                           reg.offset, reg.byte_size, u->err, sizeof u->err);
}

int isv__v2shm_grpc_unregister(isv__grpc_unary *u) {
  const char *name;
  size_t nl;
  if (isv__v2shm_decode_name_pb(u->msg, u->len, &name, &nl) != 0) {
    strcpy(u->err, "malformed SystemSharedMemoryUnregisterRequest");
    return ISV_EBADREQ;
  }
  isv__shm_unregister(u->core->shm, name, nl);
  return 0;
}

int isv__v2shm_grpc_cuda_status(isv__grpc_unary *u) {
  const char *name;
  size_t nl;
  if (isv__v2shm_decode_name_pb(u->msg, u->len, &name, &nl) != 0) {
    strcpy(u->err, "malformed CudaSharedMemoryStatusRequest");
    return ISV_EBADREQ;
  }
  if (nl) {
    snprintf(u->err, sizeof u->err, "Unable to find cuda shared memory region: '%.*s'",
             (int)(nl > 200 ? 200 : nl), name);
    return ISV_ENOTFOUND;
  }
  return 0; /* no regions: an empty response */
}

int isv__v2shm_grpc_cuda_register(isv__grpc_unary *u) {
  snprintf(u->err, sizeof u->err, "CUDA shared memory is not supported by this server (it has "
           "no GPU support): use system shared memory (SystemSharedMemoryRegister)");
  return ISV_EUNIMPL;
}

int isv__v2shm_grpc_cuda_unregister(isv__grpc_unary *u) {
  (void)u;
  return 0; /* nothing is ever registered */
}
