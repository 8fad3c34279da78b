/* The model repository extension's gRPC messages (v2_repo.h), by hand on codec/pbwire.h:
 * fields in any order, unknown fields skipped, a repeated scalar's last value winning (proto3),
 * map entries with a missing key or value taken as empty; truncation, groups, reserved wire
 * types and a known field of the wrong wire type refused (400). Triton's grpc_server.cc is the
 * reference for what is checked and the words used. */
#include <stdio.h>
#include <string.h>

#include "codec/pbwire.h"
#include "codec/span.h"
#include "core/request.h"
#include "protocol/v2_repo.h"

/* ModelRepositoryParameter's oneof, by field number (0: none set). */
enum { P_NONE = 0, P_BOOL = 1, P_INT64 = 2, P_STRING = 3, P_BYTES = 4 };

typedef struct param {
  isv__pb_span key;
  int kind;
  uint64_t v;     /* P_BOOL, P_INT64 */
  isv__pb_span s; /* P_STRING, P_BYTES */
} param;

/* One map<string, ModelRepositoryParameter> entry. 0, or -1 when malformed. */
static int read_param(isv__pb_span entry, param *p) {
  memset(p, 0, sizeof *p);
  isv__pb_reader rd = isv__pb_reader_of(entry);
  isv__pb_field f;
  int rc;
  while ((rc = isv__pb_read_field(&rd, &f)) == 1) {
    if (f.num == 1) {
      if (f.wt != ISV__PB_LEN) return -1;
      p->key = f.s;
    } else if (f.num == 2) {
      if (f.wt != ISV__PB_LEN) return -1;
      isv__pb_reader vr = isv__pb_reader_of(f.s);
      isv__pb_field g;
      int vrc;
      while ((vrc = isv__pb_read_field(&vr, &g)) == 1) { /* a oneof: the last one set wins */
        if (g.num < P_BOOL || g.num > P_BYTES) continue;
        int want = g.num <= P_INT64 ? ISV__PB_VARINT : ISV__PB_LEN;
        if (g.wt != want) return -1;
        p->kind = (int)g.num;
        p->v = g.v;
        p->s = g.s;
      }
      if (vrc < 0) return -1;
    }
  }
  return rc < 0 ? -1 : 0;
}

/* A client's key for a message: at most 100 bytes, anything but printable ASCII as '?'. */
static const char *key_text(const param *p, char *out, size_t cap) {
  size_t n = p->key.n < cap - 1 ? p->key.n : cap - 1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = p->key.p[i];
    out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  out[n] = '\0';
  return out;
}

static int malformed(isv_request *r, const char *what) {
  return isv__request_fail(r, ISV_EBADREQ, "malformed protobuf: not a valid %s encoding "
                           "(truncated, or a field of the wrong wire type)", what);
}

/* A load's or an unload's message into r (the order of its errors: malformed, repository_name,
 * the model name, then the first bad parameter). */
static int control(isv_request *r, const uint8_t *msg, size_t len, isv__repo_action action) {
  isv__repo_op *op = isv__repo_request(r, action);
  if (op == NULL) return r->status;
  int load = action == ISV__REPO_LOAD;
  const char *what = load ? "RepositoryModelLoadRequest" : "RepositoryModelUnloadRequest";
  isv__pb_reader rd = {msg, msg ? msg + len : msg};
  isv__pb_span repo = {NULL, 0}, name = {NULL, 0}, config = {NULL, 0};
  int have_config = 0, perr = 0;
  char pmsg[256] = "", key[104];
  isv__pb_field f;
  int rc;
  while ((rc = isv__pb_read_field(&rd, &f)) == 1) {
    if (f.num < 1 || f.num > 3) continue;
    if (f.wt != ISV__PB_LEN) return malformed(r, what);
    if (f.num == 1) {
      repo = f.s;
      continue;
    }
    if (f.num == 2) {
      name = f.s;
      continue;
    }
    param p;
    if (read_param(f.s, &p) != 0) return malformed(r, what);
    if (perr) continue; /* the first bad parameter is the one reported */
    if (load && ISV__SPAN_IS(p.key.p, p.key.n, "config")) {
      if (p.kind != P_STRING) {
        perr = ISV_EBADREQ;
        snprintf(pmsg, sizeof pmsg, "invalid value type for load parameter 'config', expected "
                 "string_param.");
      } else {
        config = p.s; /* map semantics: the last entry of a key wins */
        have_config = 1;
      }
    } else if (load && p.key.n >= 5 && memcmp(p.key.p, "file:", 5) == 0) {
      perr = ISV_EUNIMPL;
      snprintf(pmsg, sizeof pmsg, "load parameter '%s': model files sent with the request are "
               "not supported (this server's host loads its models itself; send \"config\" "
               "only)", key_text(&p, key, sizeof key));
    } else if (load) {
      perr = ISV_EBADREQ;
      snprintf(pmsg, sizeof pmsg, "unrecognized load parameter '%s'.",
               key_text(&p, key, sizeof key));
    } else if (ISV__SPAN_IS(p.key.p, p.key.n, "unload_dependents")) { /* unload: the others are ignored (Triton) */
      if (p.kind != P_BOOL) {
        perr = ISV_EBADREQ;
        snprintf(pmsg, sizeof pmsg, "invalid value type for 'unload_dependents' parameter, "
                 "expected bool_param.");
      } else {
        op->unload_dependents = p.v != 0;
      }
    }
  }
  if (rc < 0) return malformed(r, what);
  if (repo.n) return isv__request_fail(r, ISV_EUNIMPL, "%s", ISV__REPO_NAMED_UNSUPPORTED);
  if ((rc = isv__v2repo_set_name(r, op, (const char *)name.p, name.n)) != 0) return rc;
  if (perr) return isv__request_fail(r, perr, "%s", pmsg);
  if (have_config)
    return isv__v2repo_set_config(r, op, config.n ? (const char *)config.p : "", config.n,
                                  r->core ? r->core->opts.max_json_depth : 64);
  return 0;
}

int isv__v2repo_pb_load(isv_request *r, const uint8_t *msg, size_t len) {
  return control(r, msg, len, ISV__REPO_LOAD);
}

int isv__v2repo_pb_unload(isv_request *r, const uint8_t *msg, size_t len) {
  return control(r, msg, len, ISV__REPO_UNLOAD);
}

int isv__v2repo_pb_index(const uint8_t *msg, size_t len, int *ready, char *err, size_t cap) {
  isv__pb_reader rd = {msg, msg ? msg + len : msg};
  isv__pb_field f;
  int rc, named = 0;
  *ready = 0;
  while ((rc = isv__pb_read_field(&rd, &f)) == 1) {
    if (f.num == 1 && f.wt == ISV__PB_LEN) named = f.s.n > 0;
    else if (f.num == 2 && f.wt == ISV__PB_VARINT) *ready = f.v != 0;
    else if (f.num == 1 || f.num == 2) rc = -1;
    if (rc < 0) break;
  }
  if (rc < 0) {
    snprintf(err, cap, "malformed protobuf: not a valid RepositoryIndexRequest encoding "
             "(truncated, or a field of the wrong wire type)");
    return ISV_EBADREQ;
  }
  if (named) {
    snprintf(err, cap, "%s", ISV__REPO_NAMED_UNSUPPORTED);
    return ISV_EUNIMPL;
  }
  return 0;
}

/* ---- answers ------------------------------------------------------------------------------ */

/* The size of a string field (proto3: an empty one is not written). */
static size_t str_size(const char *s) {
  size_t n = s ? strlen(s) : 0;
  return n ? isv__pb_len_field_size(n) : 0;
}

static uint8_t *put_str(uint8_t *p, uint32_t num, const char *s) {
  size_t n = s ? strlen(s) : 0;
  return n ? isv__pb_put_bytes(p, num, s, n) : p;
}

static size_t entry_size(const isv__repo_entry *e) {
  return str_size(e->name) + str_size(e->version) + str_size(e->state) + str_size(e->reason);
}

int isv__v2repo_pb_index_response(const isv_repository_list *ix, isv__buf *out) {
  size_t total = 0;
  for (size_t i = 0; i < ix->n; i++) total += isv__pb_len_field_size(entry_size(&ix->v[i]));
  uint8_t *p = (uint8_t *)isv__buf_reserve(out, total ? total : 1);
  if (p == NULL) return ISV_ENOMEM;
  uint8_t *start = p;
  for (size_t i = 0; i < ix->n; i++) {
    const isv__repo_entry *e = &ix->v[i];
    p = isv__pb_put_key(p, 1, ISV__PB_LEN);
    p = isv__pb_put_varint(p, entry_size(e));
    p = put_str(p, 1, e->name);
    p = put_str(p, 2, e->version);
    p = put_str(p, 3, e->state);
    p = put_str(p, 4, e->reason);
  }
  out->len += (size_t)(p - start);
  return 0;
}

int isv__v2repo_pb_empty(isv_request *r, isv__parts *out) {
  static char none[1];
  uv_buf_t *v = isv__arena_alloc(&r->arena, sizeof *v);
  if (v == NULL) return ISV_ENOMEM;
  *v = uv_buf_init(none, 0); /* one message of 0 bytes: unary calls must answer one */
  out->v = v;
  out->n = 1;
  out->total = 0;
  return 0;
}

int isv__v2repo_grpc_index(isv__grpc_unary *u) {
  int ready;
  int rc = isv__v2repo_pb_index(u->msg, u->len, &ready, u->err, sizeof u->err);
  if (rc != 0) return rc;
  isv_repository_list ix;
  if ((rc = isv__repo_index(u->core, ready, &ix)) == 0) {
    rc = isv__v2repo_pb_index_response(&ix, u->out);
    isv__repo_index_free(&ix);
  }
  if (rc != 0) snprintf(u->err, sizeof u->err, "out of memory");
  return rc;
}
