#ifndef ISV_CORE_OPTIONS_H
#define ISV_CORE_OPTIONS_H

#include "core/layer.h"

#include <stddef.h>
#include <stdint.h>

#include "codec/mem.h"
#include "core/traceset.h"
#include "inferserve.h"

#define ISV__MAX_PROTOCOL_SWITCHES 16

struct isv_options {
  size_t max_body_bytes;
  size_t max_header_bytes;
  uint64_t idle_timeout_ms;
  uint64_t header_timeout_ms;
  uint64_t send_timeout_ms;
  uint64_t drain_timeout_ms;
  size_t min_body_rate;
  uint64_t min_rate_grace_ms;
  size_t max_receiving;
  size_t max_queued_stream; /* a streamed answer's bytes not yet taken by its client */
  size_t max_queued_conn;   /* ... all of a connection's together */
  unsigned max_connections;
  unsigned max_json_depth;
  unsigned max_tensors;
  unsigned worker_threads;
  unsigned max_inflight; /* 0: none */
  int strict_readiness;
  int shared_memory; /* clients may register system shared memory regions (core/shm.h) */
  int shared_memory_in_place; /* backends get pointers into the clients' mappings (trusted) */
  size_t buffer_cache_bytes;
  size_t small_block_cache_bytes; /* the core's recycler (codec/recycler.h); 0: none kept */
  size_t response_cache_bytes; /* the group's response cache (core/rcache.h); 0: none */
  size_t grpc_compress_min;
  unsigned metrics_style; /* isv_metrics_style bits */ /* gRPC answers this large are compressed when accepted; 0: never */
  size_t prefault_block_bytes; /* isv_options_set_buffer_prefault; 0 blocks: none */
  unsigned prefault_blocks;
  uint64_t tls_handshake_timeout_ms;
  int reuse_port; /* listeners with SO_REUSEPORT (several servers, one port) */
  unsigned max_client_requests; /* per client key at once; 0: none (protocol/gate.c) */
  char cors_origins[1024];      /* allowed browser origins, space-separated, or "*"; "": none */
  char server_name[64];
  char server_version[32];
  /* protocol front ends turned on or off by name (the rest keep their default) */
  struct {
    char name[32];
    int enabled;
  } protocols[ISV__MAX_PROTOCOL_SWITCHES];
  unsigned n_protocols;
  isv_log_cb log;   /* NULL: nowhere (isv__options_defaults sets the stderr logger) */
  void *log_user;
  isv_log_settings_cb log_settings; /* told of the logging extension's changes; NULL: none */
  void *log_settings_user;
  isv_trace_cb trace; /* NULL: no tracing (isv_options_set_trace) */
  void *trace_user;
  unsigned trace_rate;
  int trace_init_set;         /* isv_options_set_trace_settings gave trace_init */
  isv__trace_view trace_init; /* the global trace settings the server starts with */
  isv_trace_settings_cb trace_settings; /* told of the trace extension's changes; NULL: none */
  void *trace_settings_user;
  isv_access_cb access; /* NULL: no access log */
  void *access_user;
  isv_mem mem; /* the server's allocator (isv__libc_mem by default) */
  isv_group *group; /* a reference of the options' own (isv_options_set_group); NULL: none */
  void (*group_unuse)(isv_group *g); /* how the options let go of it (core/group.c's: the
                                      * options sit below the group, which sets this) */
};

/* 1 / 0 when o switches the protocol `name`, -1 when it leaves it at its default. */
int isv__options_protocol(const isv_options *o, const char *name);

void isv__options_defaults(isv_options *o);

#endif
