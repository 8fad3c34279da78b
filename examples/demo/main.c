/* inferserve-demo: the model zoo (zoo.c) served on one or more listeners.
 *
 *   inferserve-demo [--listen HOST:PORT]...
 *
 * Defaults to 127.0.0.1:8000 and 127.0.0.1:8001. Prints one line per listener,
 * "inferserve-demo listening on HOST:PORT", once it is bound. SIGINT/SIGTERM shut it down
 * cleanly (in-flight requests finish); a second signal during the drain exits at once. */
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <inferserve.h>

#include "zoo.h"

#define MAX_LISTENERS 16

typedef struct {
  char host[64];
  int port;
} listen_addr;

typedef struct {
  uv_loop_t loop;
  isv_server *srv;
  uv_signal_t sigint, sigterm;
  int closing;
  int close_failed;
} demo;

static void usage(FILE *f) {
  fprintf(f,
          "usage: inferserve-demo [--listen HOST:PORT]... [OPTION]...\n"
          "\n"
          "Serve the libinferserve demo model zoo (simple, simple_string, identity_*,\n"
          "multi_version, classifier, half_plus_three (and saved_model_half_plus_three), tf_multi,\n"
          "slow, failing, loading).\n"
          "\n"
          "  --listen HOST:PORT       listen here (repeatable; IPv6 as [::1]:8000; port 0\n"
          "                           picks a free port). Default: 127.0.0.1:8000 and :8001\n"
          "  --max-body-bytes N       413 beyond (default 65 MiB: a 64 MiB tensor and its\n"
          "                           header)\n"
          "  --max-header-bytes N     431 beyond (default 64 KiB)\n"
          "  --idle-timeout-ms N      close idle keep-alive connections (default 60000)\n"
          "  --header-timeout-ms N    408 when a request is not received in time (default 30000)\n"
          "  --send-timeout-ms N      drop a response that makes no progress (default 30000)\n"
          "  --drain-timeout-ms N     close connections still open this long after SIGTERM\n"
          "                           (default 30000)\n"
          "  --max-receiving-bytes N  request bytes buffered while arriving, all clients\n"
          "                           together: 503 beyond (default 256 MiB)\n"
          "  --min-body-rate B/S:MS   a body must average B bytes/s after MS ms (408 below;\n"
          "                           default 1024:10000, 0:0 for none)\n"
          "  --max-queued-stream-bytes N  a streamed answer's bytes not yet taken by its\n"
          "                           client before its producer waits (default 4 MiB)\n"
          "  --max-queued-conn-bytes N    ... a connection's streams together (default 16 MiB)\n"
          "  --metrics-style S        /metrics names: isv (default), triton (Triton's nv_*), both\n"
          "  --metrics-config C       Triton's optional metrics (repeatable):\n"
          "                           histogram_latencies=true, summary_latencies=true\n"
          "  --trace-file FILE        traced requests as JSON lines (Triton's TIMESTAMPS, W3C ids);\n"
          "                           tracing is on from the start (else: /v2/trace/setting)\n"
          "  --trace-rate N           trace every Nth request (default 1) and every one whose\n"
          "                           traceparent is sampled\n"
          "  --otlp-endpoint URL      traced requests as OpenTelemetry spans, OTLP/HTTP JSON\n"
          "                           (http://HOST:PORT[/v1/traces])\n"
          "  --no-tracing             no trace hook (the trace extension answers 501)\n"
          "  --grpc-compression N     gRPC answers of N bytes or more are compressed when the\n"
          "                           call's grpc-accept-encoding allows (default 0: never)\n"
          "  --max-connections N      at the limit the oldest idle connection makes room\n"
          "                           (default 10000)\n"
          "  --max-tensors N          inputs, outputs, parameters per request (default 1024)\n"
          "  --buffer-cache-bytes N   freed large buffers kept mapped for reuse (default 64 MiB)\n"
          "  --small-block-cache-bytes N  freed small blocks kept for the loop's next requests\n"
          "                           (default 2 MiB; 0: every one back to malloc at once)\n"
          "  --response-cache-bytes N the response cache's size (cost_cached's answers; default\n"
          "                           16 MiB; 0: no cache)\n"
          "  --worker-threads N       threads for the pool models (default 8: the zoo's pool\n"
          "                           models mostly sleep)\n"
          "  --max-inflight N         requests queued or running at once, 503 beyond\n"
          "                           (default 0: no limit)\n"
          "  --strict-readiness       ready only while every model version is READY\n"
          "  --shared-memory          let clients register system shared memory regions\n"
          "                           (Triton's --allow-client-shm; off by default): any client\n"
          "                           may then read and write every POSIX shm object this\n"
          "                           process's user can open. Tensors are copied in and out\n"
          "                           of the regions (pread/pwrite)\n"
          "  --shared-memory-in-place as --shared-memory, zero copy: backends read and write\n"
          "                           the clients' mappings. TRUSTED clients only: one that\n"
          "                           truncates its object mid-request kills the demo (SIGBUS)\n"
          "  --no-shared-memory       the default (kept for old command lines)\n"
          "  --access-log             a line per answered request on stdout: access PROTOCOL\n"
          "                           METHOD PATH STATUS BYTES_IN BYTES_OUT MICROSECONDS\n"
          "  --disable-protocol NAME  do not serve this protocol (repeatable): kserve_v2,\n"
          "                           tfserving, vertex, grps, openai, grpc_health,\n"
          "                           grpc_reflection, metrics\n"
          "  --server-name NAME[:VERSION]  the name (and version) server metadata reports on\n"
          "                           every protocol (default libinferserve and its version;\n"
          "                           Triton's clients expect \"triton\")\n"
          "  --load-delay-ms N        model repository: a load completes after N ms (default 0)\n"
          "  --openai-prefix PATH     serve the OpenAI endpoints under PATH too (\"/v1\": needs\n"
          "                           --disable-protocol tfserving, whose /v1/models it is)\n"
          "  --lm-delay-ms N          tiny_lm (the OpenAI endpoints' demo model) pauses N ms\n"
          "                           before each word it streams (default 0)\n"
          "  --no-repository          no model repository callbacks: load and unload refused,\n"
          "                           \"model_repository\" not in server metadata\n"
          "  --vertex-endpoint ID=MODEL[:VERSION]  Vertex AI's .../endpoints/ID:predict runs\n"
          "                           MODEL (isv_server_set_vertex_endpoint; repeatable, 16)\n"
          "  --vertex-model NAME      the model Vertex AI's custom-container routes serve\n"
          "                           (default half_plus_three); with AIP_HTTP_PORT set, the demo\n"
          "                           also listens on 0.0.0.0:$AIP_HTTP_PORT and serves\n"
          "                           $AIP_PREDICT_ROUTE (default /predict) and\n"
          "                           $AIP_HEALTH_ROUTE (default /health)\n"
          "  --threads N              serve on N loops in N threads, all on the same ports\n"
          "                           (SO_REUSEPORT), one group of servers: the models, their\n"
          "                           statistics and readiness are shared (default: the number\n"
          "                           of cores); --tls-listen too\n"
          "  --tls-listen HOST:PORT   also listen with TLS (needs --tls-cert and --tls-key, PEM);\n"
          "                           SIGHUP reloads them. --tls-client-ca FILE asks clients\n"
          "                           for a certificate (--tls-require-client-cert: insists)\n"
          "  --tls-identity SUBJECT   only the TLS client certificate with this subject\n"
          "                           (RFC 2253, as OpenSSL prints it:\n"
          "                           \"CN=alice,O=Example\") is let in: 403 otherwise\n"
          "  --tls-handshake-timeout-ms N  close a TLS client not done with its handshake\n"
          "                           (default 10000)\n"
          "  --bearer-token FILE      every request but the health checks needs\n"
          "                           \"Authorization: Bearer <the token in FILE>\" (gRPC:\n"
          "                           metadata authorization): 401 / UNAUTHENTICATED without\n"
          "  --forbid-model NAME      requests naming this model: 403 / PERMISSION_DENIED\n"
          "  --auth-delay-ms N        decide those on a thread of its own, N ms later\n"
          "  --max-client-requests N  requests one client (address) may have in flight:\n"
          "                           429 / RESOURCE_EXHAUSTED beyond (default 0: no limit)\n"
          "  --cors-origin \"O ...\"    browser origins allowed to call the REST APIs\n"
          "                           (scheme://host[:port], space-separated; \"*\": any)\n"
          "  --help                   show this help\n");
}

/* --access-log: one line per answered request (a host would hand it to its own logger). */
static void access_line(void *user, const isv_access_entry *e) {
  (void)user;
  printf("access %s %s %s %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", e->protocol,
         e->method[0] ? e->method : "-", e->path[0] ? e->path : "-", e->status, e->bytes_in,
         e->bytes_out, e->duration_us, e->trace_id[0] ? e->trace_id : "-");
  fflush(stdout);
}

/* "HOST:PORT" or "[V6]:PORT" -> a; 0 or -1. */
static int parse_listen(const char *s, listen_addr *a) {
  const char *host = s, *colon;
  size_t hlen;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (close == NULL || close[1] != ':')
      return -1;
    host = s + 1;
    hlen = (size_t)(close - host);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
      return -1; /* bare IPv6 needs brackets */
    hlen = (size_t)(colon - s);
  }
  if (hlen == 0 || hlen >= sizeof a->host)
    return -1;
  const char *p = colon + 1;
  if (*p == '\0')
    return -1;
  long port = 0;
  for (; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    port = port * 10 + (*p - '0');
    if (port > 65535)
      return -1;
  }
  memcpy(a->host, host, hlen);
  a->host[hlen] = '\0';
  a->port = (int)port;
  return 0;
}

static void on_server_closed(isv_server *srv, void *data) {
  demo *d = data;
  d->srv = NULL; /* freed by the library after this callback */
  demo_repo_closed(srv);
  demo_tls_closed();
  uv_close((uv_handle_t *)&d->sigint, NULL);
  uv_close((uv_handle_t *)&d->sigterm, NULL);
}

static void on_signal(uv_signal_t *h, int signum) {
  demo *d = h->data;
  if (d->closing) {
    fprintf(stderr, "inferserve-demo: signal %d again, exiting without draining\n", signum);
    exit(1);
  }
  d->closing = 1;
  fprintf(stderr, "inferserve-demo: signal %d, shutting down\n", signum);
  demo_threads_stop(); /* the other loops' servers (--threads) close too */
  int rc = isv_server_close(d->srv, on_server_closed, d);
  if (rc < 0) {
    /* the callback will not run: stop our own handles so that uv_run returns */
    fprintf(stderr, "inferserve-demo: isv_server_close: %s\n", isv_strerror(rc));
    d->close_failed = 1;
    uv_close((uv_handle_t *)&d->sigint, NULL);
    uv_close((uv_handle_t *)&d->sigterm, NULL);
  }
}

/* Numeric server limits, each a flag that maps onto one isv_options setter. */
typedef struct limit_flag {
  const char *flag;
  int (*set)(isv_options *o, unsigned long long v);
} limit_flag;

static int set_body(isv_options *o, unsigned long long v) {
  return isv_options_set_max_body_bytes(o, (size_t)v);
}
static int set_header(isv_options *o, unsigned long long v) {
  return isv_options_set_max_header_bytes(o, (size_t)v);
}
static int set_idle(isv_options *o, unsigned long long v) {
  return isv_options_set_idle_timeout_ms(o, v);
}
static int set_header_to(isv_options *o, unsigned long long v) {
  return isv_options_set_header_timeout_ms(o, v);
}
static int set_cache(isv_options *o, unsigned long long v) {
  return isv_options_set_buffer_cache_bytes(o, (size_t)v);
}
static int set_small_cache(isv_options *o, unsigned long long v) {
  return isv_options_set_small_block_cache_bytes(o, (size_t)v);
}
static int set_rcache(isv_options *o, unsigned long long v) {
  return isv_options_set_response_cache_bytes(o, (size_t)v);
}
static int set_conns(isv_options *o, unsigned long long v) {
  return v > UINT_MAX ? ISV_EINVAL : isv_options_set_max_connections(o, (unsigned)v);
}
static int set_send_to(isv_options *o, unsigned long long v) {
  return isv_options_set_send_timeout_ms(o, v);
}
static int set_drain_to(isv_options *o, unsigned long long v) {
  return isv_options_set_drain_timeout_ms(o, v);
}
static int set_receiving(isv_options *o, unsigned long long v) {
  return isv_options_set_max_receiving_bytes(o, (size_t)v);
}
static int set_tensors(isv_options *o, unsigned long long v) {
  return v > UINT_MAX ? ISV_EINVAL : isv_options_set_max_tensors(o, (unsigned)v);
}

static int set_workers(isv_options *o, unsigned long long v) {
  return v > UINT_MAX ? ISV_EINVAL : isv_options_set_worker_threads(o, (unsigned)v);
}
static int set_inflight(isv_options *o, unsigned long long v) {
  return v > UINT_MAX ? ISV_EINVAL : isv_options_set_max_inflight(o, (unsigned)v);
}

static int set_queued_stream(isv_options *o, unsigned long long v) {
  return isv_options_set_max_queued_stream_bytes(o, (size_t)v);
}
static int set_queued_conn(isv_options *o, unsigned long long v) {
  return isv_options_set_max_queued_conn_bytes(o, (size_t)v);
}

static int set_grpc_compression(isv_options *o, unsigned long long v) {
  return isv_options_set_grpc_compression(o, (size_t)v);
}

static int set_tls_handshake(isv_options *o, unsigned long long v) {
  return isv_options_set_tls_handshake_timeout_ms(o, v);
}
static int set_client_requests(isv_options *o, unsigned long long v) {
  return v > UINT_MAX ? ISV_EINVAL : isv_options_set_max_client_requests(o, (unsigned)v);
}

static const limit_flag limit_flags[] = {
    {"--max-client-requests", set_client_requests},
    {"--tls-handshake-timeout-ms", set_tls_handshake},
    {"--max-body-bytes", set_body},       {"--max-header-bytes", set_header},
    {"--idle-timeout-ms", set_idle},      {"--header-timeout-ms", set_header_to},
    {"--max-connections", set_conns},     {"--buffer-cache-bytes", set_cache},
    {"--response-cache-bytes", set_rcache}, {"--small-block-cache-bytes", set_small_cache},
    {"--max-tensors", set_tensors},       {"--send-timeout-ms", set_send_to},
    {"--drain-timeout-ms", set_drain_to}, {"--max-receiving-bytes", set_receiving},
    {"--worker-threads", set_workers},    {"--max-inflight", set_inflight},
    {"--max-queued-stream-bytes", set_queued_stream},
    {"--max-queued-conn-bytes", set_queued_conn},
    {"--grpc-compression", set_grpc_compression},
};

/* 1 when argv[*i] was a limit flag (applied to o), 0 when not, -1 on a bad value. */
static int parse_limit(int argc, char **argv, int *i, isv_options *o) {
  for (size_t k = 0; k < sizeof limit_flags / sizeof limit_flags[0]; k++) {
    if (strcmp(argv[*i], limit_flags[k].flag) != 0) continue;
    char *end = NULL;
    const char *v = *i + 1 < argc ? argv[++*i] : "";
    unsigned long long n = strtoull(v, &end, 10);
    if (*v == '\0' || *v == '-' || *end != '\0' || limit_flags[k].set(o, n) != 0) {
      fprintf(stderr, "inferserve-demo: bad value '%s' for %s\n", v, limit_flags[k].flag);
      return -1;
    }
    return 1;
  }
  return 0;
}

/* The demo, given its options (main frees them on every way out). */
static int demo_main(int argc, char **argv, isv_options *opts) {
  listen_addr addrs[MAX_LISTENERS];
  size_t naddrs = 0;
  const char *vertex_model = "half_plus_three";
  const char *openai_prefix = NULL; /* --openai-prefix */
  const char *vertex_endpoints[16];  /* --vertex-endpoint */
  size_t n_vertex_endpoints = 0;
  int repository = 1;
  unsigned long long load_delay_ms = 0;
  const char *token_file = NULL, *forbid_model = NULL, *identity = NULL; /* auth.c */
  unsigned long long auth_delay_ms = 0;
  listen_addr tls_addr = {"", 0}; /* --tls-listen (tls.c) */
  const char *tls_cert = NULL, *tls_key = NULL, *tls_ca = NULL;
  int tls_require = 0;
  unsigned long long threads = 0; /* --threads (threads.c); 0: not given */
  demo_tracing tracing = {.rate = 1}; /* --trace-file, --trace-rate... (tracing.c) */
  unsigned metrics_style = ISV_METRICS_LIBINFERSERVE, metrics_extra = 0; /* --metrics-... */
  isv_options_set_worker_threads(opts, 8); /* the zoo's pool models sleep more than compute */
  isv_options_set_response_cache_bytes(opts, (size_t)16 << 20); /* cost_cached's (zoo_cache.c) */

  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i], *val = NULL;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    int lim = parse_limit(argc, argv, &i, opts);
    if (lim < 0) return 2;
    if (lim > 0) continue;
    if (strcmp(arg, "--shared-memory") == 0 || strcmp(arg, "--shared-memory-in-place") == 0) {
      isv_options_set_shared_memory(opts, 1);
      isv_options_set_shared_memory_in_place(opts, strcmp(arg, "--shared-memory-in-place") == 0);
      continue;
    }
    if (strcmp(arg, "--no-shared-memory") == 0) {
      isv_options_set_shared_memory(opts, 0);
      continue;
    }
    if (strcmp(arg, "--strict-readiness") == 0) {
      isv_options_set_strict_readiness(opts, 1);
      continue;
    }
    if (strcmp(arg, "--access-log") == 0) {
      isv_options_set_access_log(opts, access_line, NULL);
      continue;
    }
    if (strcmp(arg, "--min-body-rate") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      char *end;
      unsigned long long rate = strtoull(v, &end, 10), grace = 0;
      if (*end == ':') grace = strtoull(end + 1, &end, 10);
      if (*v == '\0' || *end != '\0' ||
          isv_options_set_min_body_rate(opts, (size_t)rate, grace) != 0) {
        fprintf(stderr, "inferserve-demo: bad value '%s' for --min-body-rate (B/S:MS)\n", v);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--server-name") == 0) {
      char name[128];
      snprintf(name, sizeof name, "%s", i + 1 < argc ? argv[++i] : "");
      char *colon = strchr(name, ':');
      if (colon) *colon = '\0';
      if (name[0] == '\0' ||
          isv_options_set_server_name(opts, name, colon ? colon + 1 : isv_version()) != 0) {
        fprintf(stderr, "inferserve-demo: bad --server-name '%s' (NAME[:VERSION], at most 63 "
                        "and 31 bytes)\n", argv[i]);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--bearer-token") == 0 || strcmp(arg, "--forbid-model") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      *(arg[2] == 'b' ? &token_file : &forbid_model) = v;
      continue;
    }
    if (strcmp(arg, "--threads") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      char *end;
      threads = strtoull(v, &end, 10);
      if (*v == '\0' || *end != '\0' || threads < 1 || threads > DEMO_MAX_THREADS) {
        fprintf(stderr, "inferserve-demo: bad value '%s' for --threads (1 to %d)\n", v,
                DEMO_MAX_THREADS);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--tls-listen") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      if (parse_listen(v, &tls_addr) < 0) {
        fprintf(stderr, "inferserve-demo: bad --tls-listen '%s' (want HOST:PORT)\n", v);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--tls-cert") == 0 || strcmp(arg, "--tls-key") == 0 ||
        strcmp(arg, "--tls-client-ca") == 0) {
      const char **to = arg[6] == 'c' && arg[7] == 'e' ? &tls_cert : arg[6] == 'k' ? &tls_key
                                                                                 : &tls_ca;
      *to = i + 1 < argc ? argv[++i] : "";
      continue;
    }
    if (strcmp(arg, "--tls-identity") == 0) {
      identity = i + 1 < argc ? argv[++i] : "";
      continue;
    }
    if (strcmp(arg, "--tls-require-client-cert") == 0) {
      tls_require = 1;
      continue;
    }
    if (strcmp(arg, "--auth-delay-ms") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      char *end;
      auth_delay_ms = strtoull(v, &end, 10);
      if (*v == '\0' || *v == '-' || *end != '\0' || auth_delay_ms > 60000) {
        fprintf(stderr, "inferserve-demo: bad value '%s' for --auth-delay-ms\n", v);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--cors-origin") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      if (isv_options_set_cors_origins(opts, v) != 0) {
        fprintf(stderr, "inferserve-demo: bad --cors-origin '%s' (\"scheme://host[:port] ...\" "
                        "or \"*\")\n", v);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--no-tracing") == 0) {
      tracing.off = 1;
      continue;
    }
    if (strcmp(arg, "--otlp-endpoint") == 0) {
      tracing.otlp_endpoint = i + 1 < argc ? argv[++i] : "";
      continue;
    }
    if (strcmp(arg, "--trace-file") == 0 || strcmp(arg, "--trace-rate") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      if (arg[8] == 'f') {
        tracing.file = v;
      } else {
        char *end;
        unsigned long n = strtoul(v, &end, 10);
        if (*v == '\0' || *end != '\0' || n == 0 || n > 1000000) {
          fprintf(stderr, "inferserve-demo: bad value '%s' for --trace-rate (1 to 1000000)\n", v);
          return 2;
        }
        tracing.rate = (unsigned)n;
        tracing.rate_given = 1;
      }
      continue;
    }
    if (strcmp(arg, "--metrics-style") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      unsigned style = strcmp(v, "triton") == 0 ? ISV_METRICS_TRITON
                       : strcmp(v, "isv") == 0  ? ISV_METRICS_LIBINFERSERVE
                       : strcmp(v, "both") == 0 ? ISV_METRICS_TRITON | ISV_METRICS_LIBINFERSERVE
                                                : 0;
      if (style == 0) {
        fprintf(stderr, "inferserve-demo: bad --metrics-style '%s' (isv, triton or both)\n", v);
        return 2;
      }
      metrics_style = style;
      continue;
    }
    if (strcmp(arg, "--metrics-config") == 0) { /* Triton's: its optional latency metrics */
      const char *v = i + 1 < argc ? argv[++i] : "";
      unsigned bit = strcmp(v, "histogram_latencies=true") == 0 ? ISV_METRICS_TRITON_HISTOGRAMS
                     : strcmp(v, "summary_latencies=true") == 0 ? ISV_METRICS_TRITON_SUMMARIES
                                                                 : 0;
      if (bit == 0) {
        fprintf(stderr, "inferserve-demo: bad --metrics-config '%s' (histogram_latencies=true or "
                        "summary_latencies=true)\n", v);
        return 2;
      }
      metrics_extra |= bit;
      continue;
    }
    if (strcmp(arg, "--no-repository") == 0) {
      repository = 0;
      continue;
    }
    if (strcmp(arg, "--load-delay-ms") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      char *end;
      load_delay_ms = strtoull(v, &end, 10);
      if (*v == '\0' || *v == '-' || *end != '\0' || load_delay_ms > 3600000) {
        fprintf(stderr, "inferserve-demo: bad value '%s' for --load-delay-ms\n", v);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--lm-delay-ms") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      char *end;
      unsigned long long ms = strtoull(v, &end, 10);
      if (*v == '\0' || *v == '-' || *end != '\0' || ms > 60000) {
        fprintf(stderr, "inferserve-demo: bad value '%s' for --lm-delay-ms (0 to 60000)\n", v);
        return 2;
      }
      demo_openai_set_delay_ms((unsigned)ms);
      continue;
    }
    if (strcmp(arg, "--openai-prefix") == 0) {
      openai_prefix = i + 1 < argc ? argv[++i] : "";
      continue;
    }
    if (strcmp(arg, "--vertex-endpoint") == 0) {
      if (n_vertex_endpoints == sizeof vertex_endpoints / sizeof vertex_endpoints[0]) {
        fprintf(stderr, "inferserve-demo: at most 16 --vertex-endpoint\n");
        return 2;
      }
      vertex_endpoints[n_vertex_endpoints++] = i + 1 < argc ? argv[++i] : "";
      continue;
    }
    if (strcmp(arg, "--vertex-model") == 0) {
      vertex_model = i + 1 < argc ? argv[++i] : "";
      continue;
    }
    if (strcmp(arg, "--disable-protocol") == 0) {
      const char *name = i + 1 < argc ? argv[++i] : "";
      if (isv_options_set_protocol(opts, name, 0) != 0) {
        fprintf(stderr, "inferserve-demo: bad --disable-protocol '%s'\n", name);
        return 2;
      }
      continue;
    }
    if (strcmp(arg, "--listen") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "inferserve-demo: --listen needs HOST:PORT\n");
        usage(stderr);
        return 2;
      }
      val = argv[++i];
    } else if (strncmp(arg, "--listen=", 9) == 0) {
      val = arg + 9;
    } else {
      fprintf(stderr, "inferserve-demo: unknown argument '%s'\n", arg);
      usage(stderr);
      return 2;
    }
    if (naddrs == MAX_LISTENERS) {
      fprintf(stderr, "inferserve-demo: at most %d --listen\n", MAX_LISTENERS);
      return 2;
    }
    if (parse_listen(val, &addrs[naddrs]) < 0) {
      fprintf(stderr, "inferserve-demo: bad --listen '%s' (want HOST:PORT or [V6]:PORT)\n", val);
      return 2;
    }
    naddrs++;
  }
  if (naddrs == 0) {
    addrs[0] = (listen_addr){"127.0.0.1", 8000};
    addrs[1] = (listen_addr){"127.0.0.1", 8001};
    naddrs = 2;
  }
  /* Vertex AI's custom-container contract: the port it routes to, on every interface */
  const char *aip_port = getenv("AIP_HTTP_PORT");
  if (aip_port != NULL && *aip_port != '\0') {
    char *end;
    long p = strtol(aip_port, &end, 10);
    if (*end != '\0' || p < 1 || p > 65535 || naddrs == MAX_LISTENERS) {
      fprintf(stderr, "inferserve-demo: bad AIP_HTTP_PORT '%s'\n", aip_port);
      return 2;
    }
    addrs[naddrs++] = (listen_addr){"0.0.0.0", (int)p};
  }

  if (threads == 0) { /* the default: a loop per core */
    unsigned cores = uv_available_parallelism();
    threads = cores < 1 ? 1 : cores > DEMO_MAX_THREADS ? DEMO_MAX_THREADS : cores;
  }
  if (threads > 1) { /* one group: the zoo registered once, served by every loop */
    isv_group *group;
    if (isv_group_new(&group) != 0) return 1;
    isv_options_set_group(opts, group);
    isv_group_free(group); /* the options and the servers hold it */
    isv_options_set_reuse_port(opts, 1);
  }

  if (isv_options_set_metrics_style(opts, metrics_style | metrics_extra) != 0) {
    fprintf(stderr, "inferserve-demo: --metrics-config needs --metrics-style triton or both\n");
    return 2;
  }
  if (demo_tracing_setup(opts, &tracing) != 0) return 1;
  /* A peer that disconnects mid-response must not kill the process. */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);

  static demo d;
  int rc = uv_loop_init(&d.loop);
  if (rc < 0) {
    fprintf(stderr, "inferserve-demo: uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  rc = isv_server_new(&d.loop, opts, &d.srv);
  if (rc < 0) {
    fprintf(stderr, "inferserve-demo: isv_server_new: %s%s\n", isv_strerror(rc),
            rc == ISV_ENOTFOUND ? " (--disable-protocol names no protocol)" : "");
    return 1;
  }
  if ((rc = demo_zoo_register(d.srv)) < 0) {
    fprintf(stderr, "inferserve-demo: registering the model zoo: %s (%s)\n", isv_strerror(rc),
            isv_server_last_error(d.srv));
    return 1;
  }
  if ((token_file || forbid_model || identity || auth_delay_ms) &&
      demo_auth_setup(d.srv, token_file, forbid_model, identity, auth_delay_ms) != 0)
    return 1;
  /* the zoo as a model repository (repo.c): unload, load again, config overrides */
  if (repository && (rc = demo_repo_setup(d.srv, &d.loop, load_delay_ms)) < 0) {
    fprintf(stderr, "inferserve-demo: model repository: %s (%s)\n", isv_strerror(rc),
            isv_server_last_error(d.srv));
    return 1;
  }
  demo_threads_cfg more = {.opts = opts, .n_listen = naddrs,
                           .with_auth = token_file || forbid_model || identity || auth_delay_ms,
                           .repo_delay_ms = repository ? (int64_t)load_delay_ms : -1};
  if (openai_prefix && (rc = isv_server_set_openai_prefix(d.srv, openai_prefix)) < 0) {
    fprintf(stderr, "inferserve-demo: --openai-prefix: %s\n", isv_server_last_error(d.srv));
    return 1;
  }
  more.openai_prefix = openai_prefix;
  if (demo_vertex_endpoints(d.srv, vertex_endpoints, n_vertex_endpoints) != 0) return 1;
  more.vertex_endpoints = vertex_endpoints;
  more.n_vertex_endpoints = n_vertex_endpoints;
  if (aip_port != NULL && *aip_port != '\0') {
    const char *pr = getenv("AIP_PREDICT_ROUTE"), *hr = getenv("AIP_HEALTH_ROUTE");
    more.vertex_model = vertex_model;
    more.predict_route = pr && *pr ? pr : "/predict";
    more.health_route = hr && *hr ? hr : "/health";
    rc = isv_server_set_vertex_routes(d.srv, vertex_model, more.predict_route, more.health_route);
    if (rc < 0) {
      fprintf(stderr, "inferserve-demo: AIP routes: %s\n", isv_server_last_error(d.srv));
      return 1;
    }
  }
  for (size_t i = 0; i < naddrs; i++) {
    if ((rc = isv_server_listen(d.srv, addrs[i].host, addrs[i].port)) < 0) {
      const char *why = isv_server_last_error(d.srv); /* names the address already */
      if (why != NULL && *why != '\0')
        fprintf(stderr, "inferserve-demo: %s\n", why);
      else
        fprintf(stderr, "inferserve-demo: cannot listen on %s%s%s:%d: %s\n",
                strchr(addrs[i].host, ':') ? "[" : "", addrs[i].host,
                strchr(addrs[i].host, ':') ? "]" : "", addrs[i].port, isv_strerror(rc));
      return 1;
    }
  }

  const char *hosts[MAX_LISTENERS];
  int ports[MAX_LISTENERS];
  for (size_t i = 0; i < naddrs; i++) {
    hosts[i] = addrs[i].host;
    ports[i] = isv_server_bound_port(d.srv, (unsigned)i);
  }
  if (tls_addr.host[0] &&
      (tls_cert == NULL || tls_key == NULL ||
       demo_tls_listen(d.srv, &d.loop, tls_addr.host, tls_addr.port, tls_cert, tls_key, tls_ca,
                       tls_require, (unsigned)naddrs) != 0)) {
    if (tls_cert == NULL || tls_key == NULL)
      fprintf(stderr, "inferserve-demo: --tls-listen needs --tls-cert and --tls-key\n");
    return 1;
  }

  more.hosts = hosts;
  more.ports = ports;
  if (tls_addr.host[0]) { /* every loop listens on the same TLS port too */
    more.tls = demo_tls_shared();
    more.tls_host = tls_addr.host;
    more.tls_port = isv_server_bound_port(d.srv, (unsigned)naddrs);
  }
  rc = threads > 1 ? demo_threads_start((unsigned)threads - 1, &more) : 0;
  demo_tls_shared_done();
  if (rc != 0)
    return 1;
  uv_signal_init(&d.loop, &d.sigint);
  uv_signal_init(&d.loop, &d.sigterm);
  d.sigint.data = d.sigterm.data = &d;
  uv_signal_start(&d.sigint, on_signal, SIGINT);
  uv_signal_start(&d.sigterm, on_signal, SIGTERM);

  for (size_t i = 0; i < naddrs; i++) {
    int v6 = strchr(addrs[i].host, ':') != NULL;
    printf("inferserve-demo listening on %s%s%s:%d\n", v6 ? "[" : "", addrs[i].host,
           v6 ? "]" : "", isv_server_bound_port(d.srv, (unsigned)i));
  }
  if (tls_addr.host[0])
    printf("inferserve-demo listening with TLS at %s:%d\n", tls_addr.host,
           isv_server_bound_port(d.srv, (unsigned)naddrs));
  fflush(stdout);

  uv_run(&d.loop, UV_RUN_DEFAULT);
  demo_threads_join();
  demo_auth_stop();

  if (d.close_failed)
    return 1;
  rc = uv_loop_close(&d.loop);
  if (rc < 0) /* a handle is still open: a leak in the library, worth reporting */
    fprintf(stderr, "inferserve-demo: uv_loop_close: %s\n", uv_strerror(rc));
  return 0;
}

/* --vertex-endpoint ID=MODEL[:VERSION] */
int demo_vertex_endpoints(isv_server *srv, const char *const *specs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", specs[i]);
    char *model = strchr(buf, '='), *version = NULL;
    if (model) {
      *model++ = '\0';
      if ((version = strchr(model, ':')) != NULL) *version++ = '\0';
    }
    if (model == NULL || isv_server_set_vertex_endpoint(srv, buf, model, version) != 0) {
      fprintf(stderr, "inferserve-demo: --vertex-endpoint '%s': %s\n", specs[i],
              model ? isv_server_last_error(srv) : "expected ID=MODEL[:VERSION]");
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  isv_options *opts;
  if (isv_options_new(&opts) != 0) return 1;
  int rc = demo_logging_setup(opts) == 0 ? demo_main(argc, argv, opts) : 1;
  isv_options_free(opts);
  return rc;
}
