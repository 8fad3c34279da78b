/* A lean gRPC unary client for the 16 MiB round trips, so that the load generator is not what
 * is measured: h2load re-reads its -d file with a pread per 16 KiB frame and reads 16 KiB at a
 * time, grpcio is Python; both spend about as much CPU per round trip as the round trip takes.
 *
 * One HTTP/2 connection (a libnghttp2 client session on a blocking socket, TCP_NODELAY). The
 * pre-encoded request (5-byte gRPC prefix + ModelInferRequest, as `isvbench.py gen` writes it)
 * is sent from memory in DATA frames as large as the server accepts, by reference
 * (NGHTTP2_DATA_FLAG_NO_COPY: frame header and payload go to writev together). The client
 * advertises what grpcio advertises: SETTINGS_MAX_FRAME_SIZE 4 MiB, and large windows. The
 * answer is read with 4 MiB reads.
 *
 * The first round trip is a warm-up and is checked: HTTP 200, grpc-status 0, one message whose
 * last TENSOR_BYTES bytes (raw_output_contents, serialized last) equal the request's last
 * TENSOR_BYTES bytes (raw_input_contents): the identity answer. Timed round trips must answer
 * the same number of bytes with grpc-status 0.
 *
 *   grpc_rt HOST PORT FILE.grpc TENSOR_BYTES ITERS   -> one JSON object on stdout
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define READ_BUF (4u << 20)
#define MAX_ITERS 1000

typedef struct client {
  int fd;
  const uint8_t *req;
  size_t req_len, sent;
  uint8_t *resp; /* the answer's DATA, kept only on the checked round trip */
  size_t resp_len, resp_cap;
  int keep;
  int done, http_status, grpc_status;
  unsigned long data_frames_sent;
} client;

static void die(const char *what) {
  fprintf(stderr, "grpc_rt: %s%s%s\n", what, errno ? ": " : "", errno ? strerror(errno) : "");
  exit(1);
}

static void write_all(int fd, struct iovec *iov, int n) {
  while (n > 0) {
    ssize_t w = writev(fd, iov, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      die("writev");
    }
    while (n > 0 && (size_t)w >= iov->iov_len) {
      w -= (ssize_t)iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (char *)iov->iov_base + w;
      iov->iov_len -= (size_t)w;
    }
  }
}

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *u) {
  (void)s;
  (void)flags;
  client *c = u;
  struct iovec v = {(void *)data, len};
  write_all(c->fd, &v, 1);
  return (ssize_t)len;
}

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *u) {
  (void)s;
  (void)id;
  (void)buf;
  (void)src;
  client *c = u;
  size_t left = c->req_len - c->sent, n = left < len ? left : len;
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (n == left) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

static int send_body(nghttp2_session *s, nghttp2_frame *f, const uint8_t *hd, size_t len,
                     nghttp2_data_source *src, void *u) {
  (void)s;
  (void)f;
  (void)src;
  client *c = u;
  struct iovec v[2] = {{(void *)hd, 9}, {(void *)(c->req + c->sent), len}};
  write_all(c->fd, v, len ? 2 : 1);
  c->sent += len;
  c->data_frames_sent++;
  return 0;
}

static ssize_t frame_len(nghttp2_session *s, uint8_t type, int32_t id, int32_t conn_window,
                         int32_t stream_window, uint32_t max_frame, void *u) {
  (void)s;
  (void)type;
  (void)id;
  (void)u;
  ssize_t n = (ssize_t)max_frame;
  if (conn_window < n) n = conn_window;
  if (stream_window < n) n = stream_window;
  return n > 0 ? n : 1;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *u) {
  (void)s;
  (void)f;
  (void)flags;
  client *c = u;
  char v[16] = {0};
  memcpy(v, value, vl < sizeof v - 1 ? vl : sizeof v - 1);
  if (nl == 7 && memcmp(name, ":status", 7) == 0) c->http_status = atoi(v);
  if (nl == 11 && memcmp(name, "grpc-status", 11) == 0) c->grpc_status = atoi(v);
  return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *u) {
  (void)s;
  (void)flags;
  (void)id;
  client *c = u;
  if (c->keep) {
    if (c->resp_len + len > c->resp_cap) {
      c->resp_cap = (c->resp_len + len) * 2;
      if ((c->resp = realloc(c->resp, c->resp_cap)) == NULL) die("out of memory");
    }
    memcpy(c->resp + c->resp_len, data, len);
  }
  c->resp_len += len;
  return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t err, void *u) {
  (void)s;
  (void)id;
  client *c = u;
  if (err != NGHTTP2_NO_ERROR) {
    fprintf(stderr, "grpc_rt: stream reset (%u)\n", err);
    exit(1);
  }
  c->done = 1;
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}

static void round_trip(nghttp2_session *s, client *c, const char *authority, uint8_t *rbuf) {
  nghttp2_nv nv[] = {NV(":method", "POST"),
                     NV(":scheme", "http"),
                     NV(":path", "/inference.GRPCInferenceService/ModelInfer"),
                     NV(":authority", authority),
                     NV("content-type", "application/grpc"),
                     NV("te", "trailers")};
  nghttp2_data_provider body = {.read_callback = read_body};
  c->sent = c->resp_len = 0;
  c->done = c->http_status = 0;
  c->grpc_status = -1;
  if (nghttp2_submit_request(s, NULL, nv, sizeof nv / sizeof nv[0], &body, NULL) < 0)
    die("nghttp2_submit_request");
  while (!c->done) {
    if (nghttp2_session_want_write(s) && nghttp2_session_send(s) != 0) die("nghttp2_session_send");
    if (c->done) break;
    ssize_t n = read(c->fd, rbuf, READ_BUF);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) die(n == 0 ? "the server closed the connection" : "read");
    if (nghttp2_session_mem_recv(s, rbuf, (size_t)n) != n) die("nghttp2_session_mem_recv");
  }
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: grpc_rt HOST PORT FILE.grpc TENSOR_BYTES ITERS\n");
    return 2;
  }
  size_t tensor = strtoull(argv[4], NULL, 10);
  int iters = atoi(argv[5]);
  if (iters < 1 || iters > MAX_ITERS) die("ITERS must be 1..1000");
  FILE *f = fopen(argv[3], "rb");
  if (f == NULL) die("cannot open the request file");
  fseek(f, 0, SEEK_END);
  long flen = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *req = malloc((size_t)flen);
  if (req == NULL || fread(req, 1, (size_t)flen, f) != (size_t)flen) die("cannot read the file");
  fclose(f);
  if ((size_t)flen < 5 + tensor) die("the file is shorter than its tensor");

  client c = {.req = req, .req_len = (size_t)flen};
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
  if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) die("HOST must be an IPv4 address");
  if ((c.fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) die("socket");
  int one = 1;
  setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(c.fd, (struct sockaddr *)&sa, sizeof sa) != 0) die("connect");
  char authority[64];
  snprintf(authority, sizeof authority, "%s:%s", argv[1], argv[2]);

  nghttp2_session_callbacks *cb;
  nghttp2_session *s;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_send_callback(cb, on_send);
  nghttp2_session_callbacks_set_send_data_callback(cb, send_body);
  nghttp2_session_callbacks_set_data_source_read_length_callback(cb, frame_len);
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
  if (nghttp2_session_client_new(&s, cb, &c) != 0) die("nghttp2_session_client_new");
  nghttp2_session_callbacks_del(cb);
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 4u << 20},
                                 {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (1u << 30) - 1},
                                 {NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  if (nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, 3) != 0 ||
      nghttp2_session_set_local_window_size(s, NGHTTP2_FLAG_NONE, 0, (1 << 30) - 1) != 0)
    die("settings");
  uint8_t *rbuf = malloc(READ_BUF);
  if (rbuf == NULL) die("out of memory");

  /* the checked warm-up */
  c.keep = 1;
  round_trip(s, &c, authority, rbuf);
  if (c.http_status != 200 || c.grpc_status != 0) {
    fprintf(stderr, "grpc_rt: HTTP %d, grpc-status %d\n", c.http_status, c.grpc_status);
    return 1;
  }
  size_t msg_len = c.resp_len >= 5 ? ((size_t)c.resp[1] << 24 | (size_t)c.resp[2] << 16 |
                                      (size_t)c.resp[3] << 8 | c.resp[4])
                                   : 0;
  if (c.resp_len < 5 + tensor || c.resp[0] != 0 || msg_len != c.resp_len - 5 ||
      memcmp(c.resp + c.resp_len - tensor, req + c.req_len - tensor, tensor) != 0)
    die("the answer is not the identity of the request's tensor");
  size_t answer = c.resp_len;
  unsigned long frames_before = c.data_frames_sent;

  c.keep = 0;
  static double rt[MAX_ITERS];
  double cpu0 = cpu_now();
  for (int i = 0; i < iters; i++) {
    double t0 = now();
    round_trip(s, &c, authority, rbuf);
    rt[i] = now() - t0;
    if (c.http_status != 200 || c.grpc_status != 0 || c.resp_len != answer)
      die("a timed round trip answered differently");
  }
  double cpu = cpu_now() - cpu0;
  qsort(rt, (size_t)iters, sizeof rt[0], cmp_double);
  double median = rt[iters / 2];
  printf("{\"iters\": %d, \"median_s\": %.6f, \"min_s\": %.6f, \"max_s\": %.6f, "
         "\"mb_per_s\": %.1f, \"mb_per_s_both_directions\": %.1f, "
         "\"client_cpu_ms_per_rt\": %.2f, \"request_bytes\": %zu, \"response_bytes\": %zu, "
         "\"data_frames_per_request\": %lu, \"server_max_frame\": %u}\n",
         iters, median, rt[0], rt[iters - 1], (double)tensor / median / 1e6,
         2 * (double)tensor / median / 1e6, cpu / iters * 1e3, c.req_len, answer,
         (c.data_frames_sent - frames_before) / (unsigned long)iters,
         nghttp2_session_get_remote_settings(s, NGHTTP2_SETTINGS_MAX_FRAME_SIZE));
  nghttp2_session_del(s);
  close(c.fd);
  free(rbuf);
  free(req);
  free(c.resp);
  return 0;
}
