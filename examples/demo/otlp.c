/* --otlp-endpoint URL: each traced request as an OpenTelemetry span (Triton's
 * --trace-config mode=opentelemetry), sent to an OTLP/HTTP collector in OTLP's JSON encoding
 * (POST /v1/traces, ExportTraceServiceRequest; ids in hex, 64-bit integers as strings, enums
 * as numbers). The span: the request's trace id and, when its traceparent named one, its
 * caller's span as parent (else a fresh trace, no parent); a fresh span id; kind SERVER; start
 * and end from the timeline's REQUEST_START and REQUEST_END, the other TIMESTAMPS points as
 * events; attributes model, version, protocol, status (and request_id when the client gave
 * one); status ERROR for a failed request.
 *
 * The loop threads never wait for the collector: demo_otlp_span copies the span into a bounded
 * queue (full: the span is dropped and counted) and a thread of its own sends batches (up to
 * BATCH spans, or what came within FLUSH_MS of the first; asleep while none come), one HTTP/1.1
 * request each with short timeouts; a batch the collector refused or never took is counted as
 * lost. The counts are said at exit. */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#include <inferserve.h>

#include "zoo.h"

#define QUEUE 4096     /* spans waiting for the sender */
#define BATCH 256      /* spans per export request */
#define FLUSH_MS 200   /* a batch goes out at least this often */
#define IO_MS 1000     /* connect, send and answer each take at most this long */

enum { P_QUEUE, P_COMPUTE, P_INPUT_END, P_OUTPUT_START, P_COMPUTE_END, P_N };
static const char *const point_names[P_N] = {"QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
                                             "COMPUTE_OUTPUT_START", "COMPUTE_END"};

typedef struct span {
  uint8_t trace_id[16], parent_id[8], span_id[8];
  int has_parent, status;
  uint64_t start_ns, end_ns, points[P_N]; /* the timeline's clock; 0: not reached */
  char model[128], version[32], protocol[32], request_id[128];
} span;

static struct {
  char host[256], port[8], path[256];
  uv_thread_t thread;
  uv_mutex_t mu;
  uv_cond_t cond;
  span *q; /* ring of QUEUE */
  size_t head, n;
  int stop, started;
  uint64_t clock_to_unix; /* add to a uv_hrtime() to get Unix nanoseconds */
  uint64_t rng;
  _Atomic uint64_t sent, dropped, lost;
  int warned;
} ox;

/* "http://host:port[/path]" (no TLS): 0 or -1. */
static int parse_url(const char *url) {
  const char *p = url;
  if (strncmp(p, "http://", 7) != 0) return -1;
  p += 7;
  const char *slash = strchr(p, '/');
  size_t hp = slash ? (size_t)(slash - p) : strlen(p);
  const char *colon = memchr(p, ':', hp);
  if (colon == NULL || colon == p || (size_t)(colon - p) >= sizeof ox.host) return -1;
  size_t pl = hp - (size_t)(colon - p) - 1;
  if (pl == 0 || pl >= sizeof ox.port) return -1;
  memcpy(ox.host, p, (size_t)(colon - p));
  memcpy(ox.port, colon + 1, pl);
  for (size_t i = 0; i < pl; i++)
    if (ox.port[i] < '0' || ox.port[i] > '9') return -1;
  const char *path = slash && slash[1] ? slash : "/v1/traces";
  if (strlen(path) >= sizeof ox.path) return -1;
  strcpy(ox.path, path);
  return 0;
}

static void fresh_span_id(uint8_t id[8]) { /* under mu */
  uint64_t x = ox.rng;
  do {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  } while (x == 0);
  ox.rng = x;
  memcpy(id, &x, 8);
}

void demo_otlp_span(const isv_trace_timeline *t) {
  if (!ox.started) return;
  uv_mutex_lock(&ox.mu);
  if (ox.n == QUEUE) { /* the sender is behind: this one is not kept */
    uv_mutex_unlock(&ox.mu);
    atomic_fetch_add(&ox.dropped, 1);
    return;
  }
  span *s = &ox.q[(ox.head + ox.n++) % QUEUE];
  memcpy(s->trace_id, t->trace_id, 16);
  memcpy(s->parent_id, t->parent_id, 8);
  s->has_parent = t->has_parent;
  fresh_span_id(s->span_id);
  s->status = t->status;
  s->start_ns = t->request_start_ns;
  s->end_ns = t->request_end_ns;
  uint64_t pts[P_N] = {t->queue_start_ns, t->compute_start_ns, t->compute_input_end_ns,
                       t->compute_output_start_ns, t->compute_end_ns};
  memcpy(s->points, pts, sizeof pts);
  snprintf(s->model, sizeof s->model, "%s", t->model);
  snprintf(s->version, sizeof s->version, "%s", t->version);
  snprintf(s->protocol, sizeof s->protocol, "%s", t->protocol);
  snprintf(s->request_id, sizeof s->request_id, "%s", t->request_id);
  if (ox.n == 1 || ox.n >= BATCH) uv_cond_signal(&ox.cond); /* the first starts the clock */
  uv_mutex_unlock(&ox.mu);
}

/* ---- the export request ------------------------------------------------------------------ */

typedef struct sbuf {
  char *p;
  size_t len, cap;
  int failed;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->len + n + 1) * 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
      b->failed = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_str(sbuf *b, const char *s) { /* a JSON string */
  put(b, "\"", 1);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char e[8];
    if (c == '"' || c == '\\') {
      e[0] = '\\', e[1] = (char)c;
      put(b, e, 2);
    } else if (c < 0x20) {
      put(b, e, (size_t)snprintf(e, sizeof e, "\\u%04x", c));
    } else {
      put(b, (const char *)&c, 1);
    }
  }
  put(b, "\"", 1);
}

static void put_u64(sbuf *b, uint64_t v) { /* OTLP/JSON: 64-bit integers as strings */
  char s[24];
  put(b, s, (size_t)snprintf(s, sizeof s, "\"%" PRIu64 "\"", v));
}

static void put_attr(sbuf *b, const char *key, const char *str, int64_t num, int first) {
  puts_(b, first ? "{\"key\":" : ",{\"key\":");
  put_str(b, key);
  if (str) {
    puts_(b, ",\"value\":{\"stringValue\":");
    put_str(b, str);
  } else {
    char s[32];
    puts_(b, ",\"value\":{\"intValue\":");
    put(b, s, (size_t)snprintf(s, sizeof s, "\"%" PRId64 "\"", num));
  }
  puts_(b, "}}");
}

static void put_span(sbuf *b, const span *s, int first) {
  char hex[33];
  puts_(b, first ? "{\"traceId\":\"" : ",{\"traceId\":\"");
  demo_hex(hex, s->trace_id, 16);
  puts_(b, hex);
  puts_(b, "\",\"spanId\":\"");
  demo_hex(hex, s->span_id, 8);
  puts_(b, hex);
  puts_(b, "\"");
  if (s->has_parent) {
    puts_(b, ",\"parentSpanId\":\"");
    demo_hex(hex, s->parent_id, 8);
    puts_(b, hex);
    puts_(b, "\"");
  }
  puts_(b, ",\"name\":");
  put_str(b, s->model);
  puts_(b, ",\"kind\":2,\"startTimeUnixNano\":"); /* SPAN_KIND_SERVER */
  put_u64(b, s->start_ns + ox.clock_to_unix);
  puts_(b, ",\"endTimeUnixNano\":");
  put_u64(b, s->end_ns + ox.clock_to_unix);
  puts_(b, ",\"attributes\":[");
  put_attr(b, "model", s->model, 0, 1);
  put_attr(b, "version", s->version, 0, 0);
  put_attr(b, "protocol", s->protocol, 0, 0);
  put_attr(b, "status", NULL, s->status, 0);
  if (s->request_id[0]) put_attr(b, "request_id", s->request_id, 0, 0);
  puts_(b, "],\"events\":[");
  int n = 0;
  for (int i = 0; i < P_N; i++) {
    if (s->points[i] == 0) continue;
    puts_(b, n++ ? ",{\"timeUnixNano\":" : "{\"timeUnixNano\":");
    put_u64(b, s->points[i] + ox.clock_to_unix);
    puts_(b, ",\"name\":");
    put_str(b, point_names[i]);
    puts_(b, "}");
  }
  /* STATUS_CODE_OK 1, STATUS_CODE_ERROR 2 */
  puts_(b, s->status == 0 ? "],\"status\":{\"code\":1}}" : "],\"status\":{\"code\":2}}");
}

static void export_body(sbuf *b, const span *spans, size_t n) {
  puts_(b, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\","
           "\"value\":{\"stringValue\":\"inferserve-demo\"}}]},\"scopeSpans\":[{\"scope\":"
           "{\"name\":\"libinferserve\",\"version\":");
  put_str(b, isv_version());
  puts_(b, "},\"spans\":[");
  for (size_t i = 0; i < n; i++) put_span(b, &spans[i], i == 0);
  puts_(b, "]}]}]}");
}

/* ---- sending ----------------------------------------------------------------------------- */

static int wait_fd(int fd, short ev) {
  struct pollfd p = {.fd = fd, .events = ev};
  int rc;
  do rc = poll(&p, 1, IO_MS);
  while (rc < 0 && errno == EINTR);
  return rc == 1 ? 0 : -1;
}

static int connect_collector(void) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
  if (getaddrinfo(ox.host, ox.port, &hints, &ai) != 0) return -1;
  int fd = -1;
  for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS && wait_fd(fd, POLLOUT) == 0) {
      int e = 0;
      socklen_t l = sizeof e;
      rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) == 0 && e == 0 ? 0 : -1;
    }
    if (rc != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(ai);
  return fd;
}

/* One POST; 0 when the collector answered 2xx. */
static int post(const char *body, size_t len) {
  int fd = connect_collector();
  if (fd < 0) return -1;
  char head[512];
  int hn = snprintf(head, sizeof head,
                    "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                    "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                    ox.path, ox.host, ox.port, len);
  const char *parts[2] = {head, body};
  size_t lens[2] = {(size_t)hn, len};
  int rc = 0;
  for (int i = 0; i < 2 && rc == 0; i++) {
    size_t off = 0;
    while (off < lens[i] && rc == 0) {
      ssize_t w = send(fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL);
      if (w > 0) off += (size_t)w;
      else if (w < 0 && (errno == EAGAIN || errno == EINTR)) rc = wait_fd(fd, POLLOUT);
      else rc = -1;
    }
  }
  char ans[64];
  size_t got = 0;
  while (rc == 0 && got < 12) { /* "HTTP/1.1 200" is enough */
    ssize_t r = recv(fd, ans + got, sizeof ans - 1 - got, 0);
    if (r > 0) got += (size_t)r;
    else if (r < 0 && (errno == EAGAIN || errno == EINTR)) rc = wait_fd(fd, POLLIN);
    else rc = -1;
  }
  close(fd);
  if (rc != 0) return -1;
  ans[got] = '\0';
  return strncmp(ans, "HTTP/1.", 7) == 0 && ans[9] == '2' ? 0 : -1;
}

static void sender(void *arg) {
  (void)arg;
  span *batch = malloc(BATCH * sizeof *batch);
  sbuf b = {0};
  if (batch == NULL) return;
  uv_mutex_lock(&ox.mu);
  for (;;) {
    if (ox.n == 0 && !ox.stop) { /* nothing to send: asleep until a span comes (no polling) */
      uv_cond_wait(&ox.cond, &ox.mu);
      continue;
    }
    if (ox.n < BATCH && !ox.stop) uv_cond_timedwait(&ox.cond, &ox.mu, FLUSH_MS * 1000000ull);
    size_t n = ox.n < BATCH ? ox.n : BATCH;
    if (n == 0 && ox.stop) break;
    for (size_t i = 0; i < n; i++) batch[i] = ox.q[(ox.head + i) % QUEUE];
    ox.head = (ox.head + n) % QUEUE;
    ox.n -= n;
    uv_mutex_unlock(&ox.mu);
    if (n) {
      b.len = 0;
      b.failed = 0;
      export_body(&b, batch, n);
      if (!b.failed && post(b.p, b.len) == 0) {
        atomic_fetch_add(&ox.sent, n);
      } else {
        atomic_fetch_add(&ox.lost, n);
        if (!ox.warned++)
          fprintf(stderr, "inferserve-demo: the OTLP collector at %s:%s did not take %zu "
                  "spans (counted; said again at exit)\n", ox.host, ox.port, n);
        uv_mutex_lock(&ox.mu);
        if (ox.stop) { /* exiting, and the collector is not taking: the rest is lost */
          atomic_fetch_add(&ox.lost, ox.n);
          ox.n = 0;
        }
        uv_mutex_unlock(&ox.mu);
      }
    }
    uv_mutex_lock(&ox.mu);
  }
  uv_mutex_unlock(&ox.mu);
  free(b.p);
  free(batch);
}

static void otlp_stop(void) {
  uv_mutex_lock(&ox.mu);
  ox.stop = 1;
  uv_cond_signal(&ox.cond);
  uv_mutex_unlock(&ox.mu);
  uv_thread_join(&ox.thread); /* what is queued goes out first (each try bounded by IO_MS) */
  fprintf(stderr, "inferserve-demo: otlp: %" PRIu64 " spans sent, %" PRIu64
          " dropped (queue full), %" PRIu64 " lost (collector)\n",
          atomic_load(&ox.sent), atomic_load(&ox.dropped), atomic_load(&ox.lost));
}

int demo_otlp_start(const char *url) {
  if (parse_url(url) != 0) {
    fprintf(stderr, "inferserve-demo: bad --otlp-endpoint '%s' (http://HOST:PORT[/PATH])\n", url);
    return -1;
  }
  struct timespec now;
  if (clock_gettime(CLOCK_REALTIME, &now) != 0) return -1;
  ox.clock_to_unix = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec - uv_hrtime();
  ox.rng = uv_hrtime() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
  if ((ox.q = calloc(QUEUE, sizeof *ox.q)) == NULL || uv_mutex_init(&ox.mu) != 0 ||
      uv_cond_init(&ox.cond) != 0 || uv_thread_create(&ox.thread, sender, NULL) != 0)
    return -1;
  ox.started = 1;
  atexit(otlp_stop);
  return 0;
}
