/* The demo's authorizer (isv_server_set_authorizer), what --bearer-token, --forbid-model and
 * --auth-delay-ms turn on:
 *   - a request must carry "Authorization: Bearer <token>" (gRPC: metadata "authorization"),
 *     compared in constant time, or it is refused 401 / UNAUTHENTICATED with a Bearer
 *     challenge — except the health checks, so that probes need no secret;
 *   - a request naming the forbidden model is refused 403 / PERMISSION_DENIED, and so is one
 *     whose TLS client certificate is not the one subject let in;
 *   - with a delay, every decision is made on a thread of its own that long after the request
 *     came (a token checked with another service), not in the callback. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "zoo.h"

typedef struct pending {
  struct pending *next;
  isv_auth *a;
  isv_auth_decision d;
  char msg[128];
  uint64_t due; /* uv_hrtime() ns */
} pending;

static struct {
  char token[256];
  size_t token_len;
  char forbid[128];
  char identity[256]; /* the only TLS client identity let in ("": any) */
  uint64_t delay_ns;
  uv_thread_t thread;
  uv_mutex_t mu;
  uv_cond_t cv;
  pending *head, **tail;
  int started, stop;
} auth;

static int same(const char *a, const char *b, size_t n) {
  unsigned char diff = 0;
  for (size_t i = 0; i < n; i++) diff |= (unsigned char)(a[i] ^ b[i]);
  return diff == 0;
}

static int exempt(const char *path) {
  static const char *const open[] = {"/v2/health/", "/grpc.health.v1.Health/",
                                     "/inference.GRPCInferenceService/ServerLive",
                                     "/inference.GRPCInferenceService/ServerReady"};
  for (size_t i = 0; i < sizeof open / sizeof open[0]; i++)
    if (strncmp(path, open[i], strlen(open[i])) == 0) return 1;
  return 0;
}

/* The next RDN of an RFC 2253 name at *p ("CN=alice" of "CN=alice,O=Example"; a '\\' escapes
 * the next character), its length in *n; *p moves past it and its ','. */
static const char *next_rdn(const char **p, size_t *n) {
  const char *s = *p, *e = s;
  while (*e && *e != ',') e += e[0] == '\\' && e[1] ? 2 : 1;
  *n = (size_t)(e - s);
  *p = *e ? e + 1 : e;
  return s;
}

/* Whether `want` names `id` — the same RDNs in any order: OpenSSL prints a subject most
 * specific first ("CN=alice,O=Example"), people often write it the other way round. */
static int same_subject(const char *id, const char *want) {
  size_t count_id = 0, count_want = 0, n, m;
  for (const char *p = id; *p;) next_rdn(&p, &n), count_id++;
  for (const char *p = want; *p;) {
    const char *w = next_rdn(&p, &n);
    int found = 0;
    for (const char *q = id; *q && !found;) {
      const char *r = next_rdn(&q, &m);
      found = m == n && strncmp(r, w, n) == 0;
    }
    if (!found) return 0;
    count_want++;
  }
  return count_id == count_want;
}

static isv_auth_decision decide(isv_auth *a, char *msg, size_t cap) {
  const char *model = isv_auth_model(a);
  if (auth.forbid[0] && model && strcmp(model, auth.forbid) == 0) {
    snprintf(msg, cap, "model '%s' is not for this client", model);
    return ISV_AUTH_FORBIDDEN;
  }
  if (exempt(isv_auth_path(a))) return ISV_AUTH_ALLOW;
  const char *id = isv_auth_identity(a);
  if (auth.identity[0] && (id == NULL || !same_subject(id, auth.identity))) {
    snprintf(msg, cap, "client certificate '%.60s' is not let in", id ? id : "(none)");
    return ISV_AUTH_FORBIDDEN;
  }
  if (auth.token_len == 0) return ISV_AUTH_ALLOW;
  size_t n = 0;
  const char *v = isv_auth_header(a, "authorization", &n);
  if (v && n == 7 + auth.token_len && strncasecmp(v, "Bearer ", 7) == 0 &&
      same(v + 7, auth.token, auth.token_len))
    return ISV_AUTH_ALLOW;
  isv_auth_set_challenge(a, "Bearer realm=\"inferserve-demo\"");
  snprintf(msg, cap, v ? "the bearer token is not valid" : "a bearer token is required");
  return ISV_AUTH_UNAUTHENTICATED;
}

static void decider(void *arg) {
  (void)arg;
  uv_mutex_lock(&auth.mu);
  for (;;) {
    while (auth.head == NULL && !auth.stop) uv_cond_wait(&auth.cv, &auth.mu);
    if (auth.head == NULL) break;
    pending *p = auth.head;
    uint64_t now = uv_hrtime();
    if (p->due > now) {
      uv_mutex_unlock(&auth.mu);
      uv_sleep((unsigned)((p->due - now) / 1000000 + 1));
      uv_mutex_lock(&auth.mu);
      continue;
    }
    if ((auth.head = p->next) == NULL) auth.tail = &auth.head;
    uv_mutex_unlock(&auth.mu);
    isv_auth_complete(p->a, p->d, p->msg); /* from this thread: the library takes it to the loop */
    free(p);
    uv_mutex_lock(&auth.mu);
  }
  uv_mutex_unlock(&auth.mu);
}

static void authorize(isv_auth *a, void *user) {
  (void)user;
  char msg[128] = "";
  isv_auth_decision d = decide(a, msg, sizeof msg);
  pending *p = auth.delay_ns ? calloc(1, sizeof *p) : NULL;
  if (p == NULL) {
    isv_auth_complete(a, d, msg[0] ? msg : NULL);
    return;
  }
  p->a = a;
  p->d = d;
  memcpy(p->msg, msg, sizeof p->msg);
  p->due = uv_hrtime() + auth.delay_ns;
  uv_mutex_lock(&auth.mu);
  *auth.tail = p;
  auth.tail = &p->next;
  uv_cond_signal(&auth.cv);
  uv_mutex_unlock(&auth.mu);
}

int demo_auth_setup(isv_server *srv, const char *token_file, const char *forbid_model,
                    const char *identity, uint64_t delay_ms) {
  if (identity) snprintf(auth.identity, sizeof auth.identity, "%s", identity);
  if (token_file) {
    FILE *f = fopen(token_file, "r");
    if (f == NULL || fgets(auth.token, sizeof auth.token, f) == NULL) {
      fprintf(stderr, "inferserve-demo: cannot read a token from '%s'\n", token_file);
      if (f) fclose(f);
      return -1;
    }
    fclose(f);
    auth.token_len = strcspn(auth.token, " \t\r\n");
    if (auth.token_len == 0) {
      fprintf(stderr, "inferserve-demo: '%s' holds no token\n", token_file);
      return -1;
    }
  }
  if (forbid_model) snprintf(auth.forbid, sizeof auth.forbid, "%s", forbid_model);
  auth.delay_ns = delay_ms * 1000000;
  auth.tail = &auth.head;
  if (auth.delay_ns) {
    uv_mutex_init(&auth.mu);
    uv_cond_init(&auth.cv);
    if (uv_thread_create(&auth.thread, decider, NULL) != 0) return -1;
    auth.started = 1;
  }
  return isv_server_set_authorizer(srv, authorize, NULL);
}

int demo_auth_attach(isv_server *srv) { return isv_server_set_authorizer(srv, authorize, NULL); }

void demo_auth_stop(void) {
  if (!auth.started) return;
  uv_mutex_lock(&auth.mu);
  auth.stop = 1;
  uv_cond_signal(&auth.cv);
  uv_mutex_unlock(&auth.mu);
  uv_thread_join(&auth.thread);
  auth.started = 0;
}
