#include "core/options.h"

#include "codec/bigbuf.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default logger: warnings and errors to stderr. */
static void log_stderr(void *user, isv_log_level level, const char *message) {
  (void)user;
  if (level <= ISV_LOG_WARN) fprintf(stderr, "libinferserve: %s\n", message);
}

void isv__options_defaults(isv_options *o) {
  memset(o, 0, sizeof *o);
  o->max_body_bytes = (64u << 20) + (1u << 20); /* a 64 MiB tensor and what describes it */
  o->max_header_bytes = 64u << 10;
  o->idle_timeout_ms = 60000;
  o->header_timeout_ms = 30000;
  o->send_timeout_ms = 30000;
  o->drain_timeout_ms = 30000;
  o->min_body_rate = 1024;
  o->min_rate_grace_ms = 10000;
  o->max_receiving = (size_t)256 << 20;
  o->max_queued_stream = (size_t)4 << 20;
  o->max_queued_conn = (size_t)16 << 20;
  o->max_connections = 10000;
  o->tls_handshake_timeout_ms = 10000;
  o->max_json_depth = 64;
  o->max_tensors = 1024;
  unsigned cpus = uv_available_parallelism();
  o->worker_threads = cpus ? cpus : 1;
  o->buffer_cache_bytes = (size_t)64 << 20;
  o->small_block_cache_bytes = (size_t)2 << 20;
  o->metrics_style = ISV_METRICS_LIBINFERSERVE;
  o->log = log_stderr;
  o->mem = isv__libc_mem;
  strcpy(o->server_name, "libinferserve");
  strcpy(o->server_version, isv_version());
}

ISV_EXTERN int isv_options_new(isv_options **out) {
  if (out == NULL) return ISV_EINVAL;
  *out = isv__malloc(NULL, sizeof **out); /* no server yet: libc's */
  if (*out == NULL) return ISV_ENOMEM;
  isv__options_defaults(*out);
  return 0;
}

ISV_EXTERN void isv_options_free(isv_options *o) {
  if (o && o->group) o->group_unuse(o->group);
  isv__free(o);
}

ISV_EXTERN int isv_options_set_max_body_bytes(isv_options *o, size_t n) {
  if (o == NULL || n == 0) return ISV_EINVAL;
  o->max_body_bytes = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_header_bytes(isv_options *o, size_t n) {
  if (o == NULL || n < 64) return ISV_EINVAL;
  o->max_header_bytes = n;
  return 0;
}

ISV_EXTERN int isv_options_set_idle_timeout_ms(isv_options *o, uint64_t ms) {
  if (o == NULL || ms == 0) return ISV_EINVAL;
  o->idle_timeout_ms = ms;
  return 0;
}

ISV_EXTERN int isv_options_set_header_timeout_ms(isv_options *o, uint64_t ms) {
  if (o == NULL || ms == 0) return ISV_EINVAL;
  o->header_timeout_ms = ms;
  return 0;
}

ISV_EXTERN int isv_options_set_send_timeout_ms(isv_options *o, uint64_t ms) {
  if (o == NULL || ms == 0) return ISV_EINVAL;
  o->send_timeout_ms = ms;
  return 0;
}

ISV_EXTERN int isv_options_set_drain_timeout_ms(isv_options *o, uint64_t ms) {
  if (o == NULL || ms == 0) return ISV_EINVAL;
  o->drain_timeout_ms = ms;
  return 0;
}

ISV_EXTERN int isv_options_set_min_body_rate(isv_options *o, size_t bytes_per_s,
                                             uint64_t grace_ms) {
  if (o == NULL) return ISV_EINVAL;
  o->min_body_rate = bytes_per_s;
  o->min_rate_grace_ms = grace_ms;
  return 0;
}

ISV_EXTERN int isv_options_set_max_receiving_bytes(isv_options *o, size_t n) {
  if (o == NULL || n == 0) return ISV_EINVAL;
  o->max_receiving = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_queued_stream_bytes(isv_options *o, size_t n) {
  if (o == NULL || n == 0) return ISV_EINVAL;
  o->max_queued_stream = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_queued_conn_bytes(isv_options *o, size_t n) {
  if (o == NULL || n == 0) return ISV_EINVAL;
  o->max_queued_conn = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_connections(isv_options *o, unsigned n) {
  if (o == NULL || n == 0) return ISV_EINVAL;
  o->max_connections = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_json_depth(isv_options *o, unsigned n) {
  if (o == NULL || n == 0 || n > 1024) return ISV_EINVAL;
  o->max_json_depth = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_tensors(isv_options *o, unsigned n) {
  if (o == NULL || n == 0) return ISV_EINVAL;
  o->max_tensors = n;
  return 0;
}

ISV_EXTERN int isv_options_set_worker_threads(isv_options *o, unsigned n) {
  if (o == NULL || n == 0 || n > 4096) return ISV_EINVAL;
  o->worker_threads = n;
  return 0;
}

ISV_EXTERN int isv_options_set_max_inflight(isv_options *o, unsigned n) {
  if (o == NULL) return ISV_EINVAL;
  o->max_inflight = n;
  return 0;
}

ISV_EXTERN int isv_options_set_strict_readiness(isv_options *o, int on) {
  if (o == NULL) return ISV_EINVAL;
  o->strict_readiness = on != 0;
  return 0;
}

ISV_EXTERN int isv_options_set_reuse_port(isv_options *o, int on) {
  if (o == NULL) return ISV_EINVAL;
  o->reuse_port = on != 0;
  return 0;
}

ISV_EXTERN int isv_options_set_tls_handshake_timeout_ms(isv_options *o, uint64_t ms) {
  if (o == NULL || ms == 0) return ISV_EINVAL;
  o->tls_handshake_timeout_ms = ms;
  return 0;
}

ISV_EXTERN int isv_options_set_max_client_requests(isv_options *o, unsigned n) {
  if (o == NULL) return ISV_EINVAL;
  o->max_client_requests = n;
  return 0;
}

/* Each origin is "scheme://host[:port]" — what a browser sends in Origin — or the list is "*". */
static int origin_ok(const char *s, size_t n) {
  const char *sep = n > 3 ? strstr(s, "://") : NULL;
  if (sep == NULL || sep == s || sep + 3 >= s + n) return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 32 || (unsigned char)s[i] >= 127 || s[i] == ',') return 0;
  return memchr(sep + 3, '/', n - (size_t)(sep + 3 - s)) == NULL;
}

ISV_EXTERN int isv_options_set_cors_origins(isv_options *o, const char *origins) {
  if (o == NULL) return ISV_EINVAL;
  if (origins == NULL) origins = "";
  size_t len = strlen(origins);
  if (len >= sizeof o->cors_origins) return ISV_EINVAL;
  if (strcmp(origins, "*") != 0) {
    for (const char *p = origins; *p;) {
      while (*p == ' ') p++;
      size_t n = strcspn(p, " ");
      if (n && !origin_ok(p, n)) return ISV_EINVAL;
      p += n;
    }
  }
  memcpy(o->cors_origins, origins, len + 1);
  return 0;
}

ISV_EXTERN int isv_options_set_shared_memory(isv_options *o, int on) {
  if (o == NULL) return ISV_EINVAL;
  o->shared_memory = on != 0;
  return 0;
}

ISV_EXTERN int isv_options_set_shared_memory_in_place(isv_options *o, int trusted) {
  if (o == NULL) return ISV_EINVAL;
  o->shared_memory_in_place = trusted != 0;
  return 0;
}

ISV_EXTERN int isv_options_set_buffer_cache_bytes(isv_options *o, size_t n) {
  if (o == NULL) return ISV_EINVAL;
  o->buffer_cache_bytes = n;
  return 0;
}

ISV_EXTERN int isv_options_set_small_block_cache_bytes(isv_options *o, size_t n) {
  if (o == NULL) return ISV_EINVAL;
  o->small_block_cache_bytes = n;
  return 0;
}

ISV_EXTERN int isv_options_set_response_cache_bytes(isv_options *o, size_t bytes) {
  if (o == NULL) return ISV_EINVAL;
  o->response_cache_bytes = bytes;
  return 0;
}

ISV_EXTERN int isv_options_set_metrics_style(isv_options *o, unsigned styles) {
  unsigned all = ISV_METRICS_LIBINFERSERVE | ISV_METRICS_TRITON | ISV_METRICS_TRITON_HISTOGRAMS |
                 ISV_METRICS_TRITON_SUMMARIES;
  unsigned triton_only = ISV_METRICS_TRITON_HISTOGRAMS | ISV_METRICS_TRITON_SUMMARIES;
  if (o == NULL || styles == 0 || (styles & ~all) ||
      ((styles & triton_only) && !(styles & ISV_METRICS_TRITON)))
    return ISV_EINVAL;
  o->metrics_style = styles;
  return 0;
}

ISV_EXTERN int isv_options_set_grpc_compression(isv_options *o, size_t min_bytes) {
  if (o == NULL) return ISV_EINVAL;
  o->grpc_compress_min = min_bytes;
  return 0;
}

ISV_EXTERN int isv_options_set_buffer_prefault(isv_options *o, size_t block_bytes,
                                               unsigned blocks) {
  if (o == NULL || blocks > ISV__BIGBUF_SLOTS || (blocks && block_bytes < ISV__BIGBUF_BLOCK_MIN))
    return ISV_EINVAL;
  o->prefault_block_bytes = blocks ? block_bytes : 0;
  o->prefault_blocks = blocks;
  return 0;
}

ISV_EXTERN int isv_options_set_trace(isv_options *o, isv_trace_cb cb, void *user, unsigned rate) {
  if (o == NULL || (cb != NULL && rate == 0)) return ISV_EINVAL;
  o->trace = cb;
  o->trace_user = user;
  o->trace_rate = cb ? rate : 0;
  return 0;
}

ISV_EXTERN int isv_options_set_trace_settings(isv_options *o, const isv_trace_settings *s) {
  if (o == NULL || s == NULL || s->struct_size < sizeof *s || s->model != NULL || s->rate == 0 ||
      s->count < -1 || (s->level != ISV_TRACE_OFF && s->level != ISV_TRACE_TIMESTAMPS) ||
      (s->file && strlen(s->file) >= sizeof o->trace_init.file))
    return ISV_EINVAL;
  isv__trace_view *v = &o->trace_init;
  memset(v, 0, sizeof *v);
  v->timestamps = s->level == ISV_TRACE_TIMESTAMPS;
  v->rate = s->rate;
  v->count = s->count;
  v->log_frequency = s->log_frequency;
  if (s->file) strcpy(v->file, s->file);
  o->trace_init_set = 1;
  return 0;
}

ISV_EXTERN int isv_options_set_trace_settings_cb(isv_options *o, isv_trace_settings_cb cb,
                                                 void *user) {
  if (o == NULL) return ISV_EINVAL;
  o->trace_settings = cb;
  o->trace_settings_user = user;
  return 0;
}

ISV_EXTERN int isv_options_set_log_settings_cb(isv_options *o, isv_log_settings_cb cb, void *user) {
  if (o == NULL) return ISV_EINVAL;
  o->log_settings = cb;
  o->log_settings_user = user;
  return 0;
}

ISV_EXTERN int isv_options_set_log(isv_options *o, isv_log_cb cb, void *user) {
  if (o == NULL) return ISV_EINVAL;
  o->log = cb;
  o->log_user = user;
  return 0;
}

ISV_EXTERN int isv_options_set_mem(isv_options *o, const isv_mem *mem) {
  if (o == NULL) return ISV_EINVAL;
  if (mem == NULL) {
    o->mem = isv__libc_mem;
    return 0;
  }
  if (isv__mem_check(mem) != 0) return ISV_EINVAL;
  o->mem = *mem;
  o->mem.struct_size = sizeof o->mem;
  return 0;
}

ISV_EXTERN int isv_options_set_access_log(isv_options *o, isv_access_cb cb, void *user) {
  if (o == NULL) return ISV_EINVAL;
  o->access = cb;
  o->access_user = user;
  return 0;
}

ISV_EXTERN int isv_options_set_server_name(isv_options *o, const char *name, const char *version) {
  if (o == NULL || name == NULL || version == NULL) return ISV_EINVAL;
  if (strlen(name) >= sizeof o->server_name || strlen(version) >= sizeof o->server_version)
    return ISV_EINVAL;
  strcpy(o->server_name, name);
  strcpy(o->server_version, version);
  return 0;
}

ISV_EXTERN int isv_options_set_protocol(isv_options *o, const char *name, int enabled) {
  if (o == NULL || name == NULL || name[0] == '\0' || strlen(name) >= sizeof o->protocols[0].name)
    return ISV_EINVAL;
  unsigned i = 0;
  while (i < o->n_protocols && strcmp(o->protocols[i].name, name) != 0) i++;
  if (i == o->n_protocols) {
    if (i == ISV__MAX_PROTOCOL_SWITCHES) return ISV_ENOMEM;
    strcpy(o->protocols[i].name, name);
    o->n_protocols++;
  }
  o->protocols[i].enabled = enabled != 0;
  return 0;
}

int isv__options_protocol(const isv_options *o, const char *name) {
  for (unsigned i = 0; i < o->n_protocols; i++)
    if (strcmp(o->protocols[i].name, name) == 0) return o->protocols[i].enabled;
  return -1;
}
