/* The public server: composes the transport (sockets), the protocol front ends (a router and a
 * gRPC method table built from their descriptors) and the core. This file is the only place
 * that knows all three; data flows transport → protocol → core. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/ensemble.h"
#include "core/group.h"
#include "core/offload.h"
#include "core/repository.h"
#include "core/request.h"
#include "core/resolve.h"
#include "core/warmup.h"
#include "protocol/builtin.h"
#include "protocol/custom_http.h"
#include "protocol/edge.h"
#include "protocol/frontend.h"
#include "protocol/gate.h"
#include "server_internal.h"
#include "transport/adapter.h"
#include "transport/tls.h"
#include "transport/transport.h"
#include "core/lifecycle.h"

struct isv_server {
  isv__core core; /* first: the core's callbacks get back to the server from it */
  isv__transport transport;
  isv__router router;
  isv__grpc_services grpc;
  isv__gate gate; /* authorization and per-client limits, between routing and handling */
  isv_close_cb close_cb;
  void *close_data;
  int closing;
  int transport_closed;
  char last_error[256];
};

static void set_error(isv_server *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void set_error(isv_server *s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->last_error, sizeof s->last_error, fmt, ap);
  va_end(ap);
}

/* Every fallible call starts with a clean slate: isv_server_last_error() describes THIS call. */
/* Every public call on a server starts here: one made from a thread other than the server's
 * loop thread would race the loop (registry, listeners, the error text itself) — it is
 * refused with ISV_ETHREAD and changes nothing, not even isv_server_last_error (that too is
 * the loop's). */
static int begin(isv_server *s) {
  if (!isv__on_loop_thread(&s->core)) return ISV_ETHREAD;
  s->last_error[0] = '\0';
  return 0;
}

/* The closing error every call after isv_server_close gives. */
static int closing(isv_server *s) {
  set_error(s, "the server is closing");
  return ISV_ESTATE;
}

/* The spec of (name, version or label) as a public call names it. */
static isv__model_spec spec_of(const char *name, const char *version, const char *label) {
  isv__model_spec spec = {name, strlen(name), version, version ? strlen(version) : 0,
                          label, label ? strlen(label) : 0};
  return spec;
}

/* The model version a call names (neither version nor label: the default one): 0, or the
 * code of why not with the in-process API's words for it as the last error. */
static int find_model(isv_server *s, const char *name, const char *version, const char *label,
                      isv_model **m) {
  isv__model_spec spec = spec_of(name, version, label);
  isv__why why = isv__core_resolve(&s->core, &spec, m);
  if (why == ISV__FOUND) return 0;
  return isv__why_say(why, ISV__WORDS_API, &spec, s->last_error, sizeof s->last_error);
}

/* A model call that found its model, refused by the group: it went meanwhile (removed on
 * another member), said as a lookup would say it. */
static int gone(isv_server *s, isv__why why, const char *name, const char *version,
                const char *label) {
  isv__model_spec spec = spec_of(name, version, label);
  return isv__why_say(why, ISV__WORDS_API, &spec, s->last_error, sizeof s->last_error);
}

static void on_exchange(void *app, isv__exchange *ex) {
  isv__edge_http(&((isv_server *)app)->router, ex);
}
static void on_transport_error(void *app, isv__exchange *ex, int status, const char *msg) {
  isv__router_error(&((isv_server *)app)->router, ex, status, msg, NULL, 0);
}
static void on_log(void *app, int level, const char *msg) {
  isv__core_log(&((isv_server *)app)->core, (isv_log_level)level, "%s", msg);
}
static void on_access(void *app, const isv_access_entry *e) {
  const isv_options *o = &((isv_server *)app)->core.opts;
  o->access(o->access_user, e);
}
/* The transport's jobs run as the core's offloads (counted, so the close waits for them). */
typedef struct transport_offload {
  isv__offload off;
  isv__transport_job *j;
} transport_offload;
static void transport_work(isv__offload *o) { ((transport_offload *)o)->j->work(((transport_offload *)o)->j); }
static void transport_done(isv__offload *o) {
  isv__transport_job *j = ((transport_offload *)o)->j;
  isv__free(o);
  j->done(j);
}
static int on_offload(void *app, isv__transport_job *j) {
  transport_offload *t = isv__malloc(((isv_server *)app)->core.mem, sizeof *t);
  if (t == NULL) return ISV_ENOMEM;
  t->j = j;
  if (isv__offload_run(&((isv_server *)app)->core, &t->off, transport_work, transport_done) != 0) {
    isv__free(t);
    return ISV_ENOMEM;
  }
  return 0;
}
static void on_grpc(void *app, isv__grpc_call *call) {
  isv__grpc_services_dispatch(&((isv_server *)app)->grpc, call);
}

isv__transport *isv__server_transport(isv_server *srv) { return &srv->transport; }

int isv__server_add_frontend(isv_server *srv, const isv__frontend *fe) {
  if (srv == NULL || fe == NULL || fe->name == NULL) return ISV_EINVAL;
  /* all or nothing: on failure, what this call added goes, and only that */
  size_t n_routes = srv->router.n_routes, n_prefixes = srv->router.n_prefixes;
  size_t n_methods = srv->grpc.n;
  int rc = 0;
  for (const isv__http_route *r = fe->routes; rc == 0 && r && r->pattern; r++)
    rc = isv__router_add(&srv->router, fe, r);
  for (const isv__grpc_method *m = fe->methods; rc == 0 && m && m->path; m++)
    rc = isv__grpc_services_add(&srv->grpc, m, fe->grpc_label ? fe->grpc_label : fe->name);
  if (rc != 0) {
    set_error(srv, "protocol '%s': %s", fe->name,
              rc == ISV_EEXIST ? "a route or gRPC method is already served" : isv_strerror(rc));
    isv__router_truncate(&srv->router, n_routes, n_prefixes);
    srv->grpc.n = n_methods;
  }
  return rc;
}

/* Every protocol the options switch is a built-in front end. */
static int protocol_names_known(const isv_options *o) {
  for (unsigned i = 0; i < o->n_protocols; i++) {
    const isv__frontend *const *fe = isv__builtin_frontends;
    while (*fe && strcmp((*fe)->name, o->protocols[i].name) != 0) fe++;
    if (*fe == NULL) return 0;
  }
  return 1;
}

/* The built-in front ends the options enable. */
static int add_builtins(isv_server *s, const isv_options *o) {
  for (const isv__frontend *const *fe = isv__builtin_frontends; *fe; fe++) {
    int on = isv__options_protocol(o, (*fe)->name);
    if (on == 0 || (on < 0 && !(*fe)->enabled_by_default)) continue;
    int rc = isv__server_add_frontend(s, *fe);
    if (rc != 0) return rc;
  }
  return 0;
}

static void free_server(isv__core *c) { isv__free(c); } /* the core is the server's first member */

ISV_EXTERN int isv_server_new(uv_loop_t *loop, const isv_options *opts, isv_server **out) {
  if (loop == NULL || out == NULL) return ISV_EINVAL;
  *out = NULL;
  isv_options defaults;
  if (opts == NULL) {
    isv__options_defaults(&defaults);
    opts = &defaults;
  }
  isv_server *s = isv__calloc(&opts->mem, 1, sizeof *s);
  if (s == NULL) return ISV_ENOMEM;
  if (!protocol_names_known(opts)) {
    isv__free(s);
    return ISV_ENOTFOUND;
  }
  int rc = isv__core_init(&s->core, loop, opts);
  if (rc != 0) {
    isv__free(s);
    return rc;
  }
  /* made with the options' copy, which the host may free: the core's copy frees it (not the
   * recycler over it, which lives in s) */
  isv__mem_rehome(s, &s->core.opts.mem);
  s->core.free_owner = free_server;
  isv__router_init(&s->router, &s->core);
  isv__grpc_services_init(&s->grpc, &s->core);
  isv__gate_init(&s->gate, &s->core);
  s->router.gate = &s->gate;
  s->grpc.gate = &s->gate;
  if ((rc = add_builtins(s, &s->core.opts)) != 0) {
    isv__router_free(&s->router);
    isv__grpc_services_free(&s->grpc);
    isv__core_close(&s->core, NULL); /* frees s on the next loop turn */
    return rc;
  }
  const isv_options *o = &s->core.opts;
  isv__transport_limits limits = {
      .max_body_bytes = o->max_body_bytes,
      .max_header_bytes = o->max_header_bytes,
      .idle_timeout_ms = o->idle_timeout_ms,
      .header_timeout_ms = o->header_timeout_ms,
      .send_timeout_ms = o->send_timeout_ms,
      .drain_timeout_ms = o->drain_timeout_ms,
      .min_body_rate = o->min_body_rate,
      .min_rate_grace_ms = o->min_rate_grace_ms,
      .max_receiving = o->max_receiving > o->max_body_bytes ? o->max_receiving : o->max_body_bytes,
      .max_connections = o->max_connections,
      .max_queued_stream = o->max_queued_stream,
      .max_queued_conn = o->max_queued_conn,
      .tls_handshake_timeout_ms = o->tls_handshake_timeout_ms,
  };
  isv__transport_handler h = {s,      on_exchange, on_transport_error,         on_grpc,
                              on_log, o->access ? on_access : NULL, on_offload};
  isv__transport_init(&s->transport, loop, &limits, &h);
  s->transport.bufs = &s->core.bufs;
  s->transport.reuse_port = o->reuse_port;
  s->transport.mem = s->core.mem;
  s->core.receiving = &s->transport.receiving; /* decoded bodies hold the same budget */
  *out = s;
  return 0;
}

/* Listen (tls_ctx NULL: plain). A member joins an address another member of its group listens
 * on (SO_REUSEPORT); the group's first bind on an address must find it free. */
static int listen_any(isv_server *srv, const char *host, int port, void *tls_ctx) {
  isv__transport *t = &srv->transport;
  t->reuse_port_first = isv__group_listen_begin(&srv->core, host, port);
  int rc = tls_ctx ? isv__transport_listen_tls(t, host, port, tls_ctx)
                   : isv__transport_listen(t, host, port);
  t->reuse_port_first = 0;
  isv__group_listen_end(&srv->core, host, rc == 0 ? t->listeners[t->n_listeners - 1]->port : port,
                        rc == 0);
  if (rc != 0) {
    if (t->last_error[0]) set_error(srv, "%s", t->last_error);
    else set_error(srv, "listen: %s", isv_strerror(rc));
  }
  return rc;
}

ISV_EXTERN int isv_server_listen(isv_server *srv, const char *host, int port) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  return listen_any(srv, host, port, NULL);
}

ISV_EXTERN int isv_server_listen_tls(isv_server *srv, const char *host, int port,
                                     const isv_tls *tls) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  if (!isv__tls_available()) {
    set_error(srv, "%s", isv_tls_last_error(NULL));
    return ISV_EUNIMPL;
  }
  void *ctx = isv__tls_ctx_ref(tls);
  if (ctx == NULL) {
    set_error(srv, "listen tls: %s", tls ? "the configuration has no certificate and key"
                                         : "no TLS configuration");
    return ISV_EINVAL;
  }
  return listen_any(srv, host, port, ctx);
}

ISV_EXTERN int isv_server_set_listener_tls(isv_server *srv, unsigned index, const isv_tls *tls) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  void *ctx = isv__tls_ctx_ref(tls);
  if (ctx == NULL) {
    set_error(srv, "set listener tls: %s", !isv__tls_available() ? isv_tls_last_error(NULL)
                                           : tls ? "the configuration has no certificate and key"
                                                 : "no TLS configuration");
    return isv__tls_available() ? ISV_EINVAL : ISV_EUNIMPL;
  }
  int rc = isv__transport_set_tls(&srv->transport, index, ctx);
  if (rc != 0) set_error(srv, "set listener tls: listener %u is not a TLS listener", index);
  return rc;
}

ISV_EXTERN int isv_server_bound_port(const isv_server *srv, unsigned index) {
  if (srv == NULL || index >= srv->transport.n_listeners) return -1;
  return srv->transport.listeners[index]->port;
}

ISV_EXTERN int isv_server_adopt(isv_server *srv, uv_stream_t *stream, uv_close_cb close_cb) {
  if (srv == NULL) {
    if (stream) uv_close((uv_handle_t *)stream, close_cb);
    return ISV_EINVAL;
  }
  if (begin(srv) != 0) return ISV_ETHREAD;
  int rc = isv__transport_adopt(&srv->transport, stream, close_cb);
  if (rc == ISV_ESTATE) closing(srv);
  else if (rc == ISV_EINVAL)
    set_error(srv, stream ? "the stream is not a TCP or pipe stream of the server's loop"
                          : "no stream");
  else if (rc == ISV_EOVERLOAD)
    set_error(srv, "every connection is busy (max_connections): the stream was closed");
  else if (rc != 0)
    set_error(srv, "adopt: %s", isv_strerror(rc));
  return rc;
}

ISV_EXTERN void isv_server_set_online(isv_server *srv, int online) {
  if (srv) isv__core_set_online(&srv->core, online);
}
ISV_EXTERN int isv_server_is_online(const isv_server *srv) {
  return srv && isv__core_online(&srv->core);
}
ISV_EXTERN int isv_server_is_ready(const isv_server *srv) {
  /* catching up with the group (strict readiness reads the models) is no change the host sees */
  return srv && isv__core_ready((isv__core *)&srv->core);
}
ISV_EXTERN const char *isv_server_last_error(const isv_server *srv) {
  return srv ? srv->last_error : "no server";
}

/* ---- close: transport drained + no request in flight → registry cleared → async closed ---- */

/* The core's handles are closed; its memory (and so s's) is freed after this returns, or once
 * the last execution the close abandoned is done. */
static void on_async_closed(uv_handle_t *h) {
  isv_server *s = (isv_server *)h->data; /* core is the first member */
  isv__router_free(&s->router);
  isv__grpc_services_free(&s->grpc);
  if (s->close_cb) s->close_cb(s, s->close_data);
}

static void maybe_finish(isv_server *s) {
  if (!s->closing || !s->transport_closed || !isv__core_idle(&s->core)) return;
  s->core.on_idle = NULL;
  isv__core_close(&s->core, on_async_closed);
}

static void on_core_idle(isv__core *c) { maybe_finish((isv_server *)c); }

static void on_transport_closed(isv__transport *t) {
  isv_server *s = (isv_server *)((char *)t - offsetof(isv_server, transport));
  s->transport_closed = 1;
  maybe_finish(s);
}

ISV_EXTERN int isv_server_close(isv_server *srv, isv_close_cb cb, void *data) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  srv->closing = 1;
  srv->close_cb = cb;
  srv->close_data = data;
  srv->core.on_idle = on_core_idle;
  isv__core_begin_close(&srv->core, srv->core.opts.drain_timeout_ms);
  isv__transport_close(&srv->transport, on_transport_closed);
  return 0;
}

/* ---- models ------------------------------------------------------------------------------ */

ISV_EXTERN int isv_server_add_model(isv_server *srv, const isv_model_config *c,
                                    const char *version, const isv_backend *backend, void *user,
                                    isv_model **out) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  if (c && c->name && c->name[0] == '@') { /* the library's own (custom routes') */
    set_error(srv, "add model: names starting with '@' are reserved");
    return ISV_EINVAL;
  }
  if (c && c->ensemble) { /* its backend is the library's */
    set_error(srv, "add model: '%s' has ensemble steps: register it with isv_server_add_ensemble",
              c->name);
    return ISV_EINVAL;
  }
  char why[200];
  int rc = isv__registry_check(c, version, backend, why, sizeof why);
  isv_model *m = NULL;
  if (rc == 0) rc = isv__group_add(&srv->core, c, version, backend, user, &m);
  if (rc == 0 && out) *out = m;
  if (rc == 0 && c->n_warmups) isv__warmup_start(&srv->core, m); /* LOADING until it ran */
  if (rc == ISV_EEXIST)
    set_error(srv, "model '%s' version '%s' is already registered", c->name, version);
  else if (rc == ISV_EINVAL)
    set_error(srv, "add model: %s", why);
  else if (rc != 0)
    set_error(srv, "add model: %s", isv_strerror(rc));
  return rc;
}

ISV_EXTERN int isv_server_add_ensemble(isv_server *srv, const isv_model_config *c,
                                       const char *version, isv_model **out) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  char why[300];
  int rc = c && c->name && c->name[0] == '@'
               ? (snprintf(why, sizeof why, "names starting with '@' are reserved"), ISV_EINVAL)
               : isv__ensemble_check(c, why, sizeof why);
  isv_model_config *d = NULL;
  isv_backend be = isv__ensemble_backend();
  if (rc == 0 && (d = isv__ensemble_prepare(c)) == NULL) rc = ISV_ENOMEM;
  if (rc == 0) rc = isv__registry_check(d, version, &be, why, sizeof why);
  if (rc == 0) rc = isv__group_add(&srv->core, d, version, &be, NULL, out);
  if (rc == ISV_EEXIST)
    set_error(srv, "model '%s' version '%s' is already registered", c->name, version);
  else if (rc == ISV_EINVAL)
    set_error(srv, "add ensemble: %s", why);
  else if (rc != 0)
    set_error(srv, "add ensemble: %s", isv_strerror(rc));
  isv_model_config_free(d);
  return rc;
}

ISV_EXTERN int isv_server_remove_model(isv_server *srv, const char *name, const char *version) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name == NULL) {
    set_error(srv, "remove model: no name");
    return ISV_EINVAL;
  }
  isv_model *m;
  int rc = find_model(srv, name, version, NULL, &m);
  if (rc == 0 && (rc = isv__group_remove(&srv->core, name, version)) != 0)
    set_error(srv, "model '%.100s' was removed already", name); /* on another member */
  return rc;
}

ISV_EXTERN int isv_server_set_model_state(isv_server *srv, const char *name, const char *version,
                                          isv_model_state state) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name == NULL || version == NULL || state < ISV_MODEL_UNKNOWN ||
      state > ISV_MODEL_UNAVAILABLE) {
    set_error(srv, "set model state: %s", name == NULL || version == NULL
                                              ? "a name and a version are needed"
                                              : "not an isv_model_state");
    return ISV_EINVAL;
  }
  isv_model *m;
  int rc = find_model(srv, name, version, NULL, &m);
  if (rc == 0 && (rc = isv__group_set_state(&srv->core, name, version, state)) != 0)
    set_error(srv, "model '%.100s' version '%.60s' was removed", name, version);
  return rc;
}

ISV_EXTERN int isv_server_get_model_state(isv_server *srv, const char *name, const char *version,
                                          isv_model_state *state, char *reason, size_t cap) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name == NULL || state == NULL || (reason == NULL && cap > 0)) {
    set_error(srv, "get model state: a name and a place for the state are needed");
    return ISV_EINVAL;
  }
  isv_model *m;
  int rc = find_model(srv, name, version, NULL, &m);
  if (rc != 0) return rc;
  *state = m->state;
  if (cap > 0) isv__model_reason(m, reason, cap);
  return 0;
}

/* A host's setting for the built-in front end `name`, through its configure hook. */
static int configure(isv_server *s, const char *name, const char *const *args, size_t n) {
  const isv__frontend *const *fe = isv__builtin_frontends;
  while (*fe && strcmp((*fe)->name, name) != 0) fe++;
  if (*fe == NULL || (*fe)->configure == NULL) {
    set_error(s, "protocol '%s' takes no settings", name);
    return ISV_EUNIMPL;
  }
  return (*fe)->configure(&s->router, args, n, s->last_error, sizeof s->last_error);
}

ISV_EXTERN int isv_server_set_vertex_routes(isv_server *srv, const char *model,
                                           const char *predict_route, const char *health_route) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  return configure(srv, "vertex",
                   (const char *const[]){"routes", model, predict_route, health_route}, 4);
}

ISV_EXTERN int isv_server_set_vertex_endpoint(isv_server *srv, const char *endpoint_id,
                                             const char *model, const char *version) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  return configure(srv, "vertex", (const char *const[]){"endpoint", endpoint_id, model, version},
                   4);
}

ISV_EXTERN int isv_server_set_openai_prefix(isv_server *srv, const char *prefix) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  return configure(srv, "openai", (const char *const[]){prefix}, 1);
}

/* ---- model repository (core/repository.h) ------------------------------------------------- */

ISV_EXTERN int isv_server_set_repository(isv_server *srv, const isv_repository *repo) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  return isv__repo_attach(&srv->core, repo, srv->last_error, sizeof srv->last_error);
}

/* ---- authorization (protocol/gate.h) ------------------------------------------------------ */

ISV_EXTERN int isv_server_set_authorizer(isv_server *srv, isv_authorize_cb cb, void *user) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  srv->gate.cb = cb;
  srv->gate.user = cb ? user : NULL;
  return 0;
}

/* ---- custom routes ------------------------------------------------------------------------ */

static void free_route(void *user) { isv__free(user); }

static unsigned route_methods(const char *m) {
  if (m == NULL) return ISV__ROUTE_GET | ISV__ROUTE_POST | ISV__ROUTE_PUT | ISV__ROUTE_DELETE;
  if (strcmp(m, "GET") == 0) return ISV__ROUTE_GET;
  if (strcmp(m, "POST") == 0) return ISV__ROUTE_POST;
  if (strcmp(m, "PUT") == 0) return ISV__ROUTE_PUT;
  if (strcmp(m, "DELETE") == 0) return ISV__ROUTE_DELETE;
  return 0;
}

/* The name of a route's hidden model: "@route POST /custom/sse" ('*' for every method). */
static void route_name(char *out, size_t cap, const isv_route *route) {
  snprintf(out, cap, "@route %s %s", route->method ? route->method : "*", route->path);
}

/* The hidden model that runs the route's handler: decoupled (the answer's pieces are its
 * responses). */
static int route_model(isv_server *s, const isv_route *route, isv__custom_route *cr) {
  char name[300];
  route_name(name, sizeof name, route);
  isv__hidden_model h = {
      .name = name,
      .platform = "custom_route",
      .mode = route->mode,
      .instances = route->instances ? route->instances : 16,
      .decoupled = 1,
      .backend = {.struct_size = sizeof h.backend, .infer = isv__custom_infer,
                  .destroy = free_route},
      .user = cr,
  };
  int rc = isv__group_add_hidden(&s->core, &h, &cr->model);
  if (rc == ISV_EEXIST) set_error(s, "add route: %s is already served", name + 7);
  else if (rc != 0) set_error(s, "add route: %s", isv_strerror(rc));
  return rc;
}

ISV_EXTERN int isv_server_add_route(isv_server *srv, const isv_route *route) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  if (route == NULL || route->struct_size < offsetof(isv_route, user) + sizeof route->user ||
      route->handler == NULL || route->path == NULL) {
    set_error(srv, "add route: %s", route == NULL ? "no route"
                                    : route->struct_size < sizeof *route ? "struct_size too small "
                                                                           "(set it to sizeof(isv_route))"
                                    : route->handler == NULL ? "no handler" : "no path");
    return ISV_EINVAL;
  }
  unsigned methods = route_methods(route->method);
  size_t pl = strlen(route->path);
  if (methods == 0 || (unsigned)route->mode > ISV_EXEC_ASYNC || pl < 2 || route->path[0] != '/' ||
      route->path[pl - 1] == '/' || pl >= sizeof ((isv__custom_route *)0)->path ||
      strpbrk(route->path, "{}?#") != NULL) {
    set_error(srv, "add route: %s", methods == 0 ? "the method is not GET, POST, PUT or DELETE"
                                    : (unsigned)route->mode > ISV_EXEC_ASYNC ? "unknown exec mode"
                                    : "the path is not a plain one (\"/x/y\": no '{', '}', "
                                      "'?', '#' or trailing '/', under 256 bytes)");
    return ISV_EINVAL;
  }
  isv__custom_route *cr = isv__calloc(srv->core.mem, 1, sizeof *cr);
  if (cr == NULL) {
    set_error(srv, "add route: out of memory");
    return ISV_ENOMEM;
  }
  cr->handler = route->handler;
  cr->user = route->user;
  cr->methods = methods;
  memcpy(cr->path, route->path, pl + 1);
  int rc = route_model(srv, route, cr);
  if (rc != 0) {
    isv__free(cr);
    return rc;
  }
  rc = isv__custom_add_routes(&srv->router, cr);
  if (rc != 0) {
    set_error(srv, "add route: %s", rc == ISV_EEXIST ? "it would take paths a route already "
                                                       "served answers (a built-in front end's, or "
                                                       "an earlier custom route's)"
                                    : rc == ISV_EINVAL ? "the path is not a plain one"
                                                       : isv_strerror(rc));
    char name[300];
    route_name(name, sizeof name, route);
    isv__registry_remove(&srv->core.reg, name, NULL); /* its destroy frees cr */
  }
  return rc;
}

ISV_EXTERN int isv_server_set_label(isv_server *srv, const char *name, const char *label,
                                    const char *version) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name == NULL || label == NULL || label[0] == '\0') {
    set_error(srv, "set label: a name and a non-empty label are needed");
    return ISV_EINVAL;
  }
  isv_model *m;
  int rc = find_model(srv, name, version, NULL, &m);
  if (rc != 0) return rc;
  rc = isv__group_set_label(&srv->core, name, label, version);
  if (rc == ISV_ENOTFOUND && version == NULL) /* removing a label it does not have */
    gone(srv, ISV__NO_LABEL, name, NULL, label);
  else if (rc == ISV_ENOTFOUND) /* removed on another member meanwhile */
    gone(srv, ISV__NO_VERSION, name, version, NULL);
  else if (rc == ISV_ENOMEM)
    set_error(srv, "set label: out of memory");
  return rc;
}

ISV_EXTERN int isv_server_set_default_model(isv_server *srv, const char *name) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name && strlen(name) >= sizeof srv->core.default_model) {
    set_error(srv, "set default model: the name is longer than %zu bytes",
              sizeof srv->core.default_model - 1);
    return ISV_EINVAL;
  }
  snprintf(srv->core.default_model, sizeof srv->core.default_model, "%s", name ? name : "");
  return 0;
}

ISV_EXTERN int isv_server_set_default_version(isv_server *srv, const char *name,
                                              const char *version) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name == NULL) {
    set_error(srv, "set default version: no name");
    return ISV_EINVAL;
  }
  isv_model *m;
  int rc = find_model(srv, name, version, NULL, &m);
  if (rc != 0) return rc;
  rc = isv__group_set_default(&srv->core, name, version);
  if (rc == ISV_ENOMEM) set_error(srv, "set default version: out of memory");
  else if (rc == ISV_ENOTFOUND) /* a group's, removed on another member meanwhile */
    set_error(srv, "model '%.100s' was removed", name);
  return rc;
}

/* ---- in-process requests ----------------------------------------------------------------- */

/* A request for (name, version or label), both checked now: an unknown model is said by the
 * call, not only in the callback. */
static int request_new(isv_server *srv, const char *name, const char *version, const char *label,
                       isv_request **out) {
  if (out) *out = NULL;
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (name == NULL || out == NULL) {
    set_error(srv, "request new: %s", name == NULL ? "no model name" : "out is NULL");
    return ISV_EINVAL;
  }
  isv_model *m;
  int rc = find_model(srv, name, version, label, &m);
  if (rc != 0) return rc;
  isv_request *r = isv__request_new(&srv->core);
  if (r == NULL) {
    set_error(srv, "request new: out of memory");
    return ISV_ENOMEM;
  }
  r->model_name = isv__arena_strndup(&r->arena, name, strlen(name));
  r->version = version ? isv__arena_strndup(&r->arena, version, strlen(version)) : NULL;
  r->label = label ? isv__arena_strndup(&r->arena, label, strlen(label)) : NULL;
  if (r->model_name == NULL || (version && r->version == NULL) || (label && r->label == NULL)) {
    isv_request_free(r);
    set_error(srv, "request new: out of memory");
    return ISV_ENOMEM;
  }
  *out = r;
  return 0;
}

ISV_EXTERN int isv_request_new(isv_server *srv, const char *name, const char *version,
                               isv_request **out) {
  return request_new(srv, name, version, NULL, out);
}

ISV_EXTERN int isv_request_new_by_label(isv_server *srv, const char *name, const char *label,
                                        isv_request **out) {
  if (label == NULL) {
    if (out) *out = NULL;
    if (srv) set_error(srv, "request new: no label");
    return ISV_EINVAL;
  }
  return request_new(srv, name, NULL, label, out);
}

ISV_EXTERN int isv_server_infer(isv_server *srv, isv_request *r, isv_infer_cb cb, void *data) {
  if (srv == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (r == NULL || cb == NULL || r->submitted || r->core != &srv->core) {
    set_error(srv, "infer: %s", r == NULL || cb == NULL ? "a request and a callback are needed"
                                : r->submitted ? "the request was already submitted"
                                               : "the request belongs to another server");
    return ISV_EINVAL;
  }
  if (srv->closing) return closing(srv);
  isv__core_submit(&srv->core, r, cb, data);
  return 0;
}

/* ---- transport adapters (transport/adapter.h) -------------------------------------------- */

ISV_EXTERN int isv_exchange_new(isv_server *srv, const isv_exchange_carrier *carrier, void *user,
                                const char *method, const char *target, isv_exchange **out) {
  if (out) *out = NULL;
  if (srv == NULL || out == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  const char *why;
  int rc = isv__adapter_exchange_new(&srv->transport, carrier, user, method, target, out, &why);
  if (rc != 0) set_error(srv, "exchange new: %s", why ? why : isv_strerror(rc));
  return rc;
}

ISV_EXTERN int isv_grpc_call_new(isv_server *srv, const isv_grpc_carrier *carrier, void *user,
                                 const char *method, isv_grpc_call **out) {
  if (out) *out = NULL;
  if (srv == NULL || out == NULL) return ISV_EINVAL;
  if (begin(srv) != 0) return ISV_ETHREAD;
  if (srv->closing) return closing(srv);
  const char *why;
  int rc = isv__adapter_call_new(&srv->transport, carrier, user, method, out, &why);
  if (rc != 0) set_error(srv, "gRPC call new: %s", why ? why : isv_strerror(rc));
  return rc;
}
