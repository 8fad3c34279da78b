/* protocol/builtin.c and the server's use of it: every built-in front end has a unique name
 * that isv_options_set_protocol knows, a server made by isv_server_new serves all of them, each
 * can be switched off by name (then its routes answer 404 and its gRPC methods are not
 * served), and an unknown name makes isv_server_new fail with ISV_ENOTFOUND.
 *
 * Whether a route or method is served is asked with a probe: a front end holding a copy of it,
 * added with isv__server_add_frontend, is refused with ISV_EEXIST exactly when the server
 * already serves it. HTTP answers are checked on a socketpair the server adopts. */
#include "cmocka_prelude.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol/builtin.h"
#include "protocol/frontend.h"
#include "server_internal.h"

#define MAX_PROBES 128

typedef struct world {
  uv_loop_t loop;
  isv_server *srv;
  int closed;
  /* probes stay alive as long as the server: it keeps pointers to their descriptors */
  isv__frontend probes[MAX_PROBES];
  isv__http_route probe_routes[MAX_PROBES][2];
  isv__grpc_method probe_methods[MAX_PROBES][2];
  size_t n_probes;
} world;

static size_t n_builtins(void) {
  size_t n = 0;
  while (isv__builtin_frontends[n]) n++;
  return n;
}

/* A server with the given protocols switched (names[i] to on[i]). */
static world *make(const char *const *names, const int *on, size_t n) {
  world *w = calloc(1, sizeof *w);
  assert_non_null(w);
  uv_loop_init(&w->loop);
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  for (size_t i = 0; i < n; i++) assert_int_equal(isv_options_set_protocol(o, names[i], on[i]), 0);
  assert_int_equal(isv_server_new(&w->loop, o, &w->srv), 0);
  isv_options_free(o);
  assert_non_null(w->srv);
  return w;
}

static void on_closed(isv_server *s, void *data) {
  (void)s;
  ((world *)data)->closed = 1;
}

static void destroy(world *w) {
  assert_int_equal(isv_server_close(w->srv, on_closed, w), 0);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  assert_true(w->closed);
  assert_int_equal(uv_loop_close(&w->loop), 0);
  free(w);
}

/* Is this route / method already served? A probe holding a copy answers. */
static int route_served(world *w, const isv__http_route *r) {
  assert_true(w->n_probes < MAX_PROBES);
  size_t i = w->n_probes++;
  w->probe_routes[i][0] = *r;
  memset(&w->probe_routes[i][1], 0, sizeof w->probe_routes[i][1]);
  w->probes[i] = (isv__frontend){.name = "probe", .routes = w->probe_routes[i]};
  int rc = isv__server_add_frontend(w->srv, &w->probes[i]);
  if (rc != 0 && rc != ISV_EEXIST) fail_msg("probe of %s: %s", r->pattern, isv_err_name(rc));
  return rc == ISV_EEXIST;
}

static int method_served(world *w, const isv__grpc_method *m) {
  assert_true(w->n_probes < MAX_PROBES);
  size_t i = w->n_probes++;
  w->probe_methods[i][0] = *m;
  memset(&w->probe_methods[i][1], 0, sizeof w->probe_methods[i][1]);
  w->probes[i] = (isv__frontend){.name = "probe", .methods = w->probe_methods[i]};
  int rc = isv__server_add_frontend(w->srv, &w->probes[i]);
  if (rc != 0 && rc != ISV_EEXIST) fail_msg("probe of %s: %s", m->path, isv_err_name(rc));
  return rc == ISV_EEXIST;
}

/* How many of fe's routes and methods the server serves; *total how many fe has. */
static size_t served(world *w, const isv__frontend *fe, size_t *total) {
  size_t n = 0;
  *total = 0;
  for (const isv__http_route *r = fe->routes; r && r->pattern; r++, (*total)++)
    n += (size_t)route_served(w, r);
  for (const isv__grpc_method *m = fe->methods; m && m->path; m++, (*total)++)
    n += (size_t)method_served(w, m);
  return n;
}

/* GET path over a socketpair the server adopts; the status and (some of) the body. */
static int adopted_closed;
static void on_adopted_closed(uv_handle_t *h) {
  (void)h;
  adopted_closed = 1;
}

static int http_get(world *w, const char *path, char *body, size_t cap) {
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  static uv_pipe_t pipe;
  uv_pipe_init(&w->loop, &pipe, 0);
  uv_pipe_open(&pipe, sv[0]);
  adopted_closed = 0;
  assert_int_equal(isv_server_adopt(w->srv, (uv_stream_t *)&pipe, on_adopted_closed), 0);
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                   path);
  assert_int_equal(write(sv[1], req, (size_t)n), n);
  while (!adopted_closed) uv_run(&w->loop, UV_RUN_ONCE);
  char resp[8192];
  size_t len = 0;
  ssize_t k;
  while (len < sizeof resp - 1 && (k = read(sv[1], resp + len, sizeof resp - 1 - len)) > 0)
    len += (size_t)k;
  resp[len] = '\0';
  close(sv[1]);
  int status = 0;
  assert_int_equal(sscanf(resp, "HTTP/1.1 %d", &status), 1);
  const char *b = strstr(resp, "\r\n\r\n");
  assert_non_null(b);
  snprintf(body, cap, "%s", b + 4);
  return status;
}

/* ---- tests ------------------------------------------------------------------------------- */

static void names_are_unique_and_each_serves_something(void **state) {
  (void)state;
  size_t n = n_builtins();
  assert_true(n >= 3);
  for (size_t i = 0; i < n; i++) {
    const isv__frontend *fe = isv__builtin_frontends[i];
    assert_non_null(fe->name);
    assert_true(fe->name[0] != '\0');
    assert_true(strlen(fe->name) < 32); /* isv_options_set_protocol takes names this long */
    for (size_t j = 0; j < i; j++)
      if (strcmp(fe->name, isv__builtin_frontends[j]->name) == 0)
        fail_msg("two front ends are named '%s'", fe->name);
    assert_true((fe->routes && fe->routes[0].pattern) || (fe->methods && fe->methods[0].path));
    assert_true(fe->enabled_by_default); /* every one is on by default (inferserve.h) */
  }
  /* the names inferserve.h documents */
  const char *documented[] = {"kserve_v2", "grpc_health", "metrics"};
  for (size_t k = 0; k < 3; k++) {
    size_t i = 0;
    while (i < n && strcmp(isv__builtin_frontends[i]->name, documented[k]) != 0) i++;
    if (i == n) fail_msg("no built-in front end is named '%s'", documented[k]);
  }
  assert_ptr_equal(isv__builtin_frontends[0], &isv__v2_frontend);
}

static void a_default_server_serves_every_builtin(void **state) {
  (void)state;
  world *w = make(NULL, NULL, 0);
  for (size_t i = 0; isv__builtin_frontends[i]; i++) {
    size_t total, n = served(w, isv__builtin_frontends[i], &total);
    if (n != total)
      fail_msg("'%s': %zu of %zu served", isv__builtin_frontends[i]->name, n, total);
  }
  char body[512];
  assert_int_equal(http_get(w, "/v2/health/live", body, sizeof body), 200);
  assert_string_equal(body, "{\"live\":true}");
  assert_int_equal(http_get(w, "/metrics", body, sizeof body), 200);
  assert_non_null(strstr(body, "isv_server_ready 1"));
  destroy(w);
}

/* All or nothing: adding a front end that is already served fails and changes nothing (its
 * rollback used to remove the front end that was there). */
static void adding_a_served_front_end_again_changes_nothing(void **state) {
  (void)state;
  world *w = make(NULL, NULL, 0);
  assert_int_equal(isv__server_add_frontend(w->srv, &isv__v2_frontend), ISV_EEXIST);
  assert_int_equal(isv__server_add_frontend(w->srv, &isv__metrics_frontend), ISV_EEXIST);
  char body[512];
  assert_int_equal(http_get(w, "/v2/health/live", body, sizeof body), 200);
  assert_int_equal(http_get(w, "/metrics", body, sizeof body), 200);
  size_t total, n = served(w, &isv__v2_frontend, &total);
  assert_int_equal(n, total);
  destroy(w);
}

static void switched_on_by_name_is_the_default(void **state) {
  (void)state;
  const char *names[8] = {0};
  int on[8] = {0};
  size_t n = n_builtins();
  assert_true(n <= 8);
  for (size_t i = 0; i < n; i++) {
    names[i] = isv__builtin_frontends[i]->name;
    on[i] = 7; /* any nonzero value is on */
  }
  world *w = make(names, on, n);
  for (size_t i = 0; i < n; i++) {
    size_t total, k = served(w, isv__builtin_frontends[i], &total);
    assert_int_equal(k, total);
  }
  destroy(w);
}

static void each_can_be_switched_off_alone(void **state) {
  (void)state;
  for (size_t off = 0; isv__builtin_frontends[off]; off++) {
    const char *name = isv__builtin_frontends[off]->name;
    int zero = 0;
    world *w = make(&name, &zero, 1);
    for (size_t i = 0; isv__builtin_frontends[i]; i++) {
      size_t total, n = served(w, isv__builtin_frontends[i], &total);
      if (i == off && n != 0) fail_msg("'%s' is off but %zu of it is served", name, n);
      if (i != off && n != total)
        fail_msg("'%s' off: '%s' has %zu of %zu served", name, isv__builtin_frontends[i]->name,
                 n, total);
    }
    destroy(w);
  }
}

static void a_switched_off_front_ends_paths_answer_404(void **state) {
  (void)state;
  const char *v2 = "kserve_v2";
  int zero = 0;
  world *w = make(&v2, &zero, 1);
  char body[512];
  assert_int_equal(http_get(w, "/v2/health/live", body, sizeof body), 404);
  assert_string_equal(body, "{\"error\":\"unknown path '/v2/health/live'\"}");
  assert_int_equal(http_get(w, "/v2", body, sizeof body), 404);
  assert_int_equal(http_get(w, "/metrics", body, sizeof body), 200); /* the others stay */
  destroy(w);
  const char *metrics = "metrics";
  w = make(&metrics, &zero, 1);
  assert_int_equal(http_get(w, "/metrics", body, sizeof body), 404);
  assert_int_equal(http_get(w, "/v2/health/ready", body, sizeof body), 200);
  assert_string_equal(body, "{\"ready\":true}");
  destroy(w);
  const char *all[] = {"kserve_v2", "grpc_health", "metrics"};
  int offs[] = {0, 0, 0};
  w = make(all, offs, 3); /* nothing at all: still a server, answering 404 */
  assert_int_equal(http_get(w, "/v2/health/live", body, sizeof body), 404);
  assert_int_equal(http_get(w, "/metrics", body, sizeof body), 404);
  destroy(w);
}

static void an_unknown_protocol_name_is_refused(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  const int ons[] = {0, 1};
  for (size_t k = 0; k < 2; k++) {
    isv_options *o;
    assert_int_equal(isv_options_new(&o), 0);
    assert_int_equal(isv_options_set_protocol(o, "kserve_v2", 1), 0);
    assert_int_equal(isv_options_set_protocol(o, "kserve_v3", ons[k]), 0); /* checked later */
    isv_server *srv = (isv_server *)&loop; /* not NULL: it must be set to NULL */
    assert_int_equal(isv_server_new(&loop, o, &srv), ISV_ENOTFOUND);
    assert_null(srv);
    assert_int_equal(isv_options_set_protocol(o, "Metrics", 0), 0); /* names are exact */
    isv_options_free(o);
  }
  isv_options *o;
  assert_int_equal(isv_options_new(&o), 0);
  assert_int_equal(isv_options_set_protocol(o, "Metrics", 0), 0);
  isv_server *srv;
  assert_int_equal(isv_server_new(&loop, o, &srv), ISV_ENOTFOUND);
  /* the setter's own checks */
  assert_int_equal(isv_options_set_protocol(o, "", 0), ISV_EINVAL);
  assert_int_equal(isv_options_set_protocol(o, NULL, 0), ISV_EINVAL);
  char longname[40];
  memset(longname, 'p', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  assert_int_equal(isv_options_set_protocol(o, longname, 0), ISV_EINVAL);
  isv_options_free(o);
  assert_int_equal(isv_options_new(&o), 0);
  for (int i = 0; i < 16; i++) {
    char name[8];
    snprintf(name, sizeof name, "p%d", i);
    assert_int_equal(isv_options_set_protocol(o, name, 1), 0);
  }
  assert_int_equal(isv_options_set_protocol(o, "p16", 1), ISV_ENOMEM);
  assert_int_equal(isv_options_set_protocol(o, "p3", 0), 0); /* a known one is switched again */
  isv_options_free(o);
  assert_int_equal(uv_loop_close(&loop), 0); /* a refused server left nothing on the loop */
}

static void no_handler(isv__http_req *q) { (void)q; }

/* A front end's settings come through its configure hook: Vertex's custom-container routes
 * (isv_server_set_vertex_routes) are its hook's, which keeps the model on the router and adds
 * the two routes — whether or not the vertex front end itself is switched on. The hook's
 * refusals are the public call's last error. */
static void vertex_routes_come_from_its_configure_hook(void **state) {
  (void)state;
  const isv__frontend *vertex = NULL;
  for (const isv__frontend *const *fe = isv__builtin_frontends; *fe; fe++) {
    if (strcmp((*fe)->name, "vertex") == 0) vertex = *fe;
    else if (strcmp((*fe)->name, "openai") == 0) assert_non_null((*fe)->configure); /* a prefix */
    else assert_null((*fe)->configure); /* only Vertex and OpenAI take settings today */
  }
  assert_non_null(vertex);
  assert_non_null(vertex->configure);

  world *w = make((const char *[]){"vertex"}, (const int[]){0}, 1);
  isv__http_route predict = {ISV__ROUTE_POST, "/aip/predict", no_handler, NULL};
  isv__http_route health = {ISV__ROUTE_GET, "/aip/health", no_handler, NULL};
  assert_false(route_served(w, &predict));
  w->n_probes = 0;
  destroy(w);

  w = make((const char *[]){"vertex"}, (const int[]){0}, 1);
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "", "/p", NULL), ISV_EINVAL);
  assert_string_equal(isv_server_last_error(w->srv), "vertex routes: no model");
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "m", "/aip/predict", "/aip/health"), 0);
  assert_true(route_served(w, &predict));
  assert_true(route_served(w, &health));
  char body[256];
  assert_int_equal(http_get(w, "/aip/health", body, sizeof body), 200);
  assert_string_equal(body, "{}");
  assert_int_equal(isv_server_set_vertex_routes(w->srv, "n", "/other", NULL), ISV_ESTATE);
  assert_string_equal(isv_server_last_error(w->srv), "vertex routes: already set (for model 'm')");
  destroy(w);

  /* the hook itself, on a router of its own: the model is kept where the predict route finds
   * it; a route that cannot be added leaves nothing behind, not even the model */
  w = make(NULL, NULL, 0);
  isv__router r;
  isv__router_init(&r, (isv__core *)w->srv /* its first member */);
  char why[256];
  assert_int_equal(vertex->configure(&r, (const char *const[]){"m", "/p", "/h"}, 3, why,
                                     sizeof why), 0);
  assert_string_equal(isv__router_value(&r, vertex), "m");
  assert_int_equal(r.n_routes, 2);
  isv__router_free(&r);
  isv__router_init(&r, (isv__core *)w->srv /* its first member */);
  assert_int_equal(vertex->configure(&r, (const char *const[]){"m", "/p", "no-slash"}, 3, why,
                                     sizeof why), ISV_EINVAL);
  assert_string_equal(why, "vertex routes: a route is not a valid path");
  assert_null(isv__router_value(&r, vertex));
  assert_int_equal(r.n_routes, 0);
  isv__router_free(&r);
  destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(names_are_unique_and_each_serves_something),
      cmocka_unit_test(a_default_server_serves_every_builtin),
      cmocka_unit_test(adding_a_served_front_end_again_changes_nothing),
      cmocka_unit_test(switched_on_by_name_is_the_default),
      cmocka_unit_test(each_can_be_switched_off_alone),
      cmocka_unit_test(a_switched_off_front_ends_paths_answer_404),
      cmocka_unit_test(an_unknown_protocol_name_is_refused),
      cmocka_unit_test(vertex_routes_come_from_its_configure_hook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
