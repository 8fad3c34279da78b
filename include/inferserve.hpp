/* libinferserve's C++17 face: header-only, over the C ABI in inferserve.h (which stays the
 * contract — everything here is inline and calls it).
 *
 *   isv::server srv(loop);                         // RAII: closed (asynchronously) on scope exit
 *   isv::model_config cfg("saxpy");
 *   cfg.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
 *   srv.add_model(cfg, "1", [a](isv::request &r) {  // a lambda, any captures
 *     auto x = r.input("x").data<float>();
 *     auto y = r.alloc_output<float>("y", r.input("x").shape());
 *     for (size_t i = 0; i < x.size(); i++) y[i] = a * x[i];
 *   });                                             // returns: the request completes with 0
 *   srv.listen("127.0.0.1", 8000);
 *
 * Backends given to add_model are synchronous: the function fills the outputs and returns, and
 * the request is completed for it. What it throws becomes the request's error: an isv::error
 * keeps its code and message (ISV_EBADREQ: the client's data was wrong, 400), any other
 * std::exception is the backend's failure (500 with what()).
 *
 * Backends given to add_async_model complete later, from any thread (a GPU stream's callback,
 * a remote call, a thread of the host's): the function receives an isv::async_request — a
 * move-only handle that owns the request until it is completed — and may move it anywhere:
 *
 *   srv.add_async_model(cfg, "1", [&jobs](isv::async_request &h) {  // on the loop thread
 *     jobs.push([h = std::move(h)]() mutable {                       // any thread, later
 *       if (h->cancelled()) return h.fail(ISV_ECANCELED);
 *       auto y = h->alloc_output<float>("y", h->input("x").shape());
 *       ...
 *       h.complete();                                                // or h.fail(code, text)
 *     });
 *   });
 *
 * The request is completed exactly once, whatever happens: by complete() or fail(); by what
 * the function throws while it still holds the handle (as for add_model); and by the handle's
 * destructor when the last holder drops it without completing (ISV_EBACKEND, a 500 that says
 * so) — a lost handle never leaves a client waiting or the request allocated. Both kinds of
 * backend and C backends (isv_backend) mix freely on one server.
 *
 * Lifetimes: the function given to add_model / add_async_model lives until the model version
 * is unregistered and its last request is done (the C destroy callback deletes it). A
 * tensor_view, a span of its data or of an output, and a request are valid during the call
 * only — for an async_request, until it is completed. Thread rules are the C API's: server and
 * model_config calls on the loop thread; a backend runs on the loop thread (ISV_EXEC_INLINE,
 * ISV_EXEC_ASYNC) or a worker thread (ISV_EXEC_POOL); an async_request may be used and
 * completed from any thread, one thread at a time (moving it to another thread hands it over).
 * No call of this header changes the C library's ABI: it is all inline over inferserve.h. */
#ifndef INFERSERVE_HPP
#define INFERSERVE_HPP

#include <inferserve.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace isv {

/* A failed call (code: an ISV_E* value). Thrown by this header; throw one from a backend to
 * fail its request with that code and message. */
class error : public std::runtime_error {
 public:
  error(int code, const std::string &message)
      : std::runtime_error(message.empty() ? std::string(isv_strerror(code)) : message),
        code_(code), own_message_(!message.empty()) {}
  int code() const noexcept { return code_; }
  /* Whether the message is the thrower's own (else isv_strerror's, and the library's own
   * explanation of a broken rule, kept with the request, is the better one). */
  bool has_message() const noexcept { return own_message_; }

 private:
  int code_;
  bool own_message_;
};

namespace detail {
inline void check(int rc, const std::string &what = std::string()) {
  if (rc < 0) throw error(rc, what);
}
}  // namespace detail

/* A view of contiguous elements (std::span is C++20). */
template <class T>
class span {
 public:
  span() noexcept = default;
  span(T *data, std::size_t size) noexcept : data_(data), size_(size) {}
  T *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T &operator[](std::size_t i) const noexcept { return data_[i]; }
  T *begin() const noexcept { return data_; }
  T *end() const noexcept { return data_ + size_; }

 private:
  T *data_ = nullptr;
  std::size_t size_ = 0;
};

/* The wire datatype of a C++ element type: isv::datatype_of<float>::value == ISV_FP32. */
template <class T> struct datatype_of;
#define ISV_HPP_DT(T, DT) \
  template <> struct datatype_of<T> { static constexpr isv_datatype value = DT; };
ISV_HPP_DT(bool, ISV_BOOL)
ISV_HPP_DT(std::int8_t, ISV_INT8)
ISV_HPP_DT(std::int16_t, ISV_INT16)
ISV_HPP_DT(std::int32_t, ISV_INT32)
ISV_HPP_DT(std::int64_t, ISV_INT64)
ISV_HPP_DT(std::uint8_t, ISV_UINT8)
ISV_HPP_DT(std::uint16_t, ISV_UINT16)
ISV_HPP_DT(std::uint32_t, ISV_UINT32)
ISV_HPP_DT(std::uint64_t, ISV_UINT64)
ISV_HPP_DT(float, ISV_FP32)
ISV_HPP_DT(double, ISV_FP64)
ISV_HPP_DT(isv_bytes, ISV_BYTES)
#undef ISV_HPP_DT

/* A read-only tensor (an input, or an in-process response's output). */
class tensor_view {
 public:
  explicit tensor_view(const isv_tensor *t) noexcept : t_(t) {}
  const char *name() const noexcept { return isv_tensor_name(t_); }
  isv_datatype datatype() const noexcept { return isv_tensor_datatype(t_); }
  span<const std::int64_t> shape() const noexcept {
    std::size_t n = 0;
    const std::int64_t *s = isv_tensor_shape(t_, &n);
    return span<const std::int64_t>(s, n);
  }
  std::size_t element_count() const noexcept { return isv_tensor_element_count(t_); }
  std::size_t byte_size() const noexcept { return isv_tensor_byte_size(t_); }
  /* The elements as T, which must be the tensor's datatype (else ISV_EINVAL: the model
   * declared it, so asking for another type is the backend's mistake). Aligned (inferserve.h). */
  template <class T>
  span<const T> data() const {
    if (datatype_of<T>::value != datatype())
      throw error(ISV_EINVAL, std::string("tensor '") + name() + "' is " +
                                  isv_datatype_name(datatype()) + ", not " +
                                  isv_datatype_name(datatype_of<T>::value));
    return span<const T>(static_cast<const T *>(isv_tensor_data(t_)), element_count());
  }
  const isv_tensor *get() const noexcept { return t_; }

 private:
  const isv_tensor *t_;
};

/* The request a backend runs (a view: the library owns it). */
class request {
 public:
  explicit request(isv_request *r) noexcept : r_(r) {}
  const char *model_name() const noexcept { return isv_request_model_name(r_); }
  const char *model_version() const noexcept { return isv_request_model_version(r_); }
  const char *id() const noexcept { return isv_request_id(r_); }
  std::size_t input_count() const noexcept { return isv_request_input_count(r_); }
  tensor_view input_at(std::size_t i) const {
    const isv_tensor *t = isv_request_input_at(r_, i);
    if (t == nullptr) throw error(ISV_EINVAL, "no input at position " + std::to_string(i));
    return tensor_view(t);
  }
  /* A declared input (every declared input is present once validation let the request in). */
  tensor_view input(const char *name) const {
    const isv_tensor *t = isv_request_input(r_, name);
    if (t == nullptr) throw error(ISV_EINVAL, std::string("no input '") + name + "'");
    return tensor_view(t);
  }
  /* A request parameter, or nullptr. */
  const isv_param *param(const char *key) const noexcept { return isv_request_param(r_, key); }
  bool output_requested(const char *name) const noexcept {
    return isv_request_is_output_requested(r_, name) != 0;
  }
  bool cancelled() const noexcept { return isv_request_is_cancelled(r_) != 0; }
  unsigned instance() const noexcept { return isv_request_instance(r_); }
  /* Allocate declared output `name` of this shape; its elements to fill. The library's rule
   * checks (name, datatype, shape) throw isv::error, which fails the request with a 500 that
   * names the rule. */
  template <class T>
  span<T> alloc_output(const char *name, span<const std::int64_t> shape) {
    void *p = nullptr;
    detail::check(isv_request_alloc_output(r_, name, datatype_of<T>::value, shape.data(),
                                           shape.size(), &p));
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    return span<T>(static_cast<T *>(p), n);
  }
  template <class T>
  span<T> alloc_output(const char *name, std::initializer_list<std::int64_t> shape) {
    return alloc_output<T>(name, span<const std::int64_t>(shape.begin(), shape.size()));
  }
  void set_response_param(const char *key, const isv_param &value) {
    detail::check(isv_request_set_response_param(r_, key, &value));
  }
  /* Decoupled models (model_config::decoupled): send the outputs and response parameters set
   * so far as one response and start the next one empty. true when sent; false when the
   * stream's client has not taken what was sent so far (ISV_EAGAIN: nothing was sent, the
   * outputs stay set, call it again once the stream drained: on_writable). Other refusals
   * throw isv::error (ISV_ESTATE: not decoupled, or completed). */
  bool send_response() {
    int rc = isv_request_send_response(r_);
    if (rc == ISV_EAGAIN) return false;
    detail::check(rc, "send_response");
    return true;
  }
  /* Decoupled models: cb(r, user) runs once, on the loop thread, when the stream can take more
   * responses, or when the request was cancelled (isv_request_on_writable; a C callback, so
   * that nothing is left to free when the request completes first). */
  void on_writable(isv_writable_cb cb, void *user) {
    detail::check(isv_request_on_writable(r_, cb, user), "on_writable");
  }
  isv_request *get() const noexcept { return r_; }

 private:
  isv_request *r_;
};

/* A model version's description (owning; copied by server::add_model). */
class model_config {
 public:
  explicit model_config(const std::string &name) : name_(name) {
    isv_model_config *c = nullptr;
    detail::check(isv_model_config_new(name.c_str(), &c), "model config '" + name + "'");
    c_.reset(c);
  }
  const std::string &name() const noexcept { return name_; }
  model_config &input(const std::string &name, isv_datatype dt,
                      std::initializer_list<std::int64_t> shape) {
    detail::check(isv_model_config_add_input(c_.get(), name.c_str(), dt, shape.begin(),
                                             shape.size()), "input '" + name + "'");
    return *this;
  }
  model_config &output(const std::string &name, isv_datatype dt,
                       std::initializer_list<std::int64_t> shape) {
    detail::check(isv_model_config_add_output(c_.get(), name.c_str(), dt, shape.begin(),
                                              shape.size()), "output '" + name + "'");
    return *this;
  }
  /* Any rank, any sizes (ISV_ANY_RANK). */
  model_config &input_any_rank(const std::string &name, isv_datatype dt) {
    detail::check(isv_model_config_add_input(c_.get(), name.c_str(), dt, nullptr, ISV_ANY_RANK),
                  "input '" + name + "'");
    return *this;
  }
  model_config &output_any_rank(const std::string &name, isv_datatype dt) {
    detail::check(isv_model_config_add_output(c_.get(), name.c_str(), dt, nullptr, ISV_ANY_RANK),
                  "output '" + name + "'");
    return *this;
  }
  model_config &max_batch(std::uint32_t n) {
    detail::check(isv_model_config_set_max_batch(c_.get(), n));
    return *this;
  }
  model_config &platform(const std::string &p) {
    detail::check(isv_model_config_set_platform(c_.get(), p.c_str()));
    return *this;
  }
  /* Default ISV_EXEC_INLINE for add_model, ISV_EXEC_ASYNC for add_async_model. */
  model_config &exec_mode(isv_exec_mode m) {
    detail::check(isv_model_config_set_exec_mode(c_.get(), m));
    mode_ = m;
    mode_set_ = true;
    return *this;
  }
  /* A decoupled model: any number of responses per request (request::send_response). */
  model_config &decoupled(bool on = true) {
    detail::check(isv_model_config_set_decoupled(c_.get(), on ? 1 : 0));
    return *this;
  }
  model_config &instances(std::uint32_t n) {
    detail::check(isv_model_config_set_instances(c_.get(), n));
    return *this;
  }
  model_config &max_queue(std::uint32_t n) {
    detail::check(isv_model_config_set_max_queue(c_.get(), n));
    return *this;
  }
  model_config &default_timeout_us(std::uint64_t us) {
    detail::check(isv_model_config_set_default_timeout_us(c_.get(), us));
    return *this;
  }
  /* Triton's priority levels and queue policies (isv_model_config_set_priority_levels,
   * isv_model_config_set_queue_policy: level 0 is the default policy). */
  model_config &priority_levels(std::uint32_t levels, std::uint32_t default_level) {
    detail::check(isv_model_config_set_priority_levels(c_.get(), levels, default_level));
    return *this;
  }
  model_config &queue_policy(std::uint32_t level, isv_timeout_action action,
                             std::uint64_t default_timeout_us = 0,
                             bool allow_timeout_override = false,
                             std::uint32_t max_queue_size = 0) {
    isv_queue_policy p{};
    p.struct_size = sizeof p;
    p.timeout_action = action;
    p.default_timeout_us = default_timeout_us;
    p.allow_timeout_override = allow_timeout_override ? 1 : 0;
    p.max_queue_size = max_queue_size;
    detail::check(isv_model_config_set_queue_policy(c_.get(), level, &p));
    return *this;
  }
  /* Triton's response_cache (isv_model_config_set_response_cache) and model_warmup
   * (isv_model_config_add_warmup, isv_model_config_add_warmup_input: data for
   * ISV_WARMUP_DATA only). */
  model_config &response_cache(bool on = true) {
    detail::check(isv_model_config_set_response_cache(c_.get(), on ? 1 : 0));
    return *this;
  }
  model_config &warmup(const std::string &sample, std::uint32_t batch_size,
                       std::uint32_t count = 1) {
    detail::check(isv_model_config_add_warmup(c_.get(), sample.c_str(), batch_size, count));
    return *this;
  }
  model_config &warmup_input(const std::string &sample, const std::string &input,
                             isv_datatype dt, std::initializer_list<std::int64_t> dims,
                             isv_warmup_fill fill, const void *data = nullptr,
                             std::size_t byte_size = 0) {
    detail::check(isv_model_config_add_warmup_input(c_.get(), sample.c_str(), input.c_str(), dt,
                                                    dims.begin(), dims.size(), fill, data,
                                                    byte_size));
    return *this;
  }
  const isv_model_config *get() const noexcept { return c_.get(); }

 private:
  friend class server;
  struct deleter {
    void operator()(isv_model_config *c) const noexcept { isv_model_config_free(c); }
  };
  std::unique_ptr<isv_model_config, deleter> c_;
  std::string name_;
  isv_exec_mode mode_ = ISV_EXEC_INLINE;
  bool mode_set_ = false; /* exec_mode() was called (else each add_* picks its default) */
};

/* A synchronous backend: fill the outputs and return (see the top of this file). */
using backend = std::function<void(request &)>;

namespace detail {
/* Complete r with the exception e as the request's error (the rule at the top of this file). */
inline int complete_with(isv_request *r, std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const error &x) {
    return isv_request_complete(r, x.code(), x.has_message() ? x.what() : nullptr);
  } catch (const std::exception &x) {
    return isv_request_complete(r, ISV_EBACKEND, x.what());
  } catch (...) {
    return isv_request_complete(r, ISV_EBACKEND, "the backend threw a non-std exception");
  }
}
struct backend_box {
  backend fn;
};
inline int infer(isv_request *r, void *user) {
  request req(r);
  try {
    static_cast<backend_box *>(user)->fn(req);
  } catch (...) {
    return complete_with(r, std::current_exception());
  }
  return isv_request_complete(r, 0, nullptr);
}
inline void destroy(void *user) { delete static_cast<backend_box *>(user); }
}  // namespace detail

/* A request an asynchronous backend completes later (add_async_model): a move-only handle that
 * owns the obligation to complete it. Use the request through it (h->input("x"),
 * h->alloc_output<float>(...), h->cancelled(), h->send_response()), move it to the thread that
 * finishes the work, then complete() or fail() — from any thread, once. Afterwards, or once
 * moved from, the handle is empty: its request is the library's, and using it throws
 * isv::error(ISV_ESTATE).
 *
 * Dropping a handle that still holds its request — its destructor, or move-assigning another
 * one over it — completes the request with ISV_EBACKEND ("... dropped its isv::async_request
 * without completing it"): the client gets a 500 at once, never a hang, and the request's
 * memory is freed. A destructor run while an exception unwinds says so instead. */
class async_request {
 public:
  async_request() noexcept = default;
  /* Take over a submitted request whose completion is the caller's (a C backend's isv_request
   * that a C++ part finishes). */
  explicit async_request(isv_request *r) noexcept : req_(r) {}
  async_request(async_request &&o) noexcept : req_(std::exchange(o.req_, request(nullptr))) {}
  async_request &operator=(async_request &&o) noexcept {
    if (this != &o) {
      drop();
      req_ = std::exchange(o.req_, request(nullptr));
    }
    return *this;
  }
  async_request(const async_request &) = delete;
  async_request &operator=(const async_request &) = delete;
  ~async_request() { drop(); }

  /* Whether the handle holds a request that is not completed yet. */
  explicit operator bool() const noexcept { return req_.get() != nullptr; }
  request *operator->() { return &held(); }
  request &operator*() { return held(); }

  /* Complete with success: the outputs set are the answer. */
  void complete() { finish(0, nullptr); }
  /* Complete with an error: code is an ISV_E* value (ISV_EBACKEND: the model failed, 500;
   * ISV_EBADREQ: the client's data was wrong, 400; ISV_ECANCELED: stopped because
   * cancelled()), message what the client reads ("": the code's own text). */
  void fail(int code, const std::string &message = std::string()) {
    finish(code, message.empty() ? nullptr : message.c_str());
  }
  /* Complete with an exception as the error, mapped as a synchronous backend's throw is:
   *   catch (...) { h.fail(std::current_exception()); } */
  void fail(std::exception_ptr e) {
    isv_request *r = take();
    int rc = detail::complete_with(r, std::move(e));
    if (rc < 0) throw error(rc, "isv::async_request::fail: the request was completed already");
  }
  /* Let go of the request without completing it: its completion is the caller's
   * (isv_request_complete). nullptr when empty. */
  isv_request *release() noexcept { return std::exchange(req_, request(nullptr)).get(); }
  isv_request *get() const noexcept { return req_.get(); }

 private:
  request &held() {
    if (req_.get() == nullptr)
      throw error(ISV_ESTATE, "isv::async_request: empty (completed, released or moved from)");
    return req_;
  }
  isv_request *take() { return std::exchange(held(), request(nullptr)).get(); }
  void finish(int status, const char *message) {
    int rc = isv_request_complete(take(), status, message); /* the handle is empty either way */
    if (rc < 0) throw error(rc, "isv::async_request: the request was completed already");
  }
  void drop() noexcept {
    isv_request *r = release();
    if (r == nullptr) return;
    const char *name = isv_request_model_name(r);
    const char *version = isv_request_model_version(r);
    std::string why = std::string("model '") + (name ? name : "") + "' version '" +
                      (version ? version : "") + "': the backend " +
                      (std::uncaught_exceptions() > 0
                           ? "threw an exception while its isv::async_request held the request"
                           : "dropped its isv::async_request without completing it");
    isv_request_complete(r, ISV_EBACKEND, why.c_str());
  }
  request req_{nullptr};
};

/* An asynchronous backend: it receives the handle and moves it to whatever completes the
 * request later (see the top of this file). It runs on the loop thread (ISV_EXEC_ASYNC, the
 * default for add_async_model: it must not block) or a worker thread (ISV_EXEC_POOL). */
using async_backend = std::function<void(async_request &)>;

namespace detail {
struct async_backend_box {
  async_backend fn;
};
inline int infer_async(isv_request *r, void *user) {
  async_request h(r);
  try {
    static_cast<async_backend_box *>(user)->fn(h);
  } catch (...) {
    /* Still held: the exception is the request's error. Moved away: its holder completes it
     * (the exception cannot: that would race the holder). */
    if (h) return complete_with(h.release(), std::current_exception());
  }
  return 0; /* h, if the function kept neither it nor a completion, completes as dropped */
}
inline void destroy_async(void *user) { delete static_cast<async_backend_box *>(user); }
}  // namespace detail

/* A server on the host's loop. Move-only. Destroying it closes it (isv_server_close with no
 * callback: the loop must run on for the close to finish); close() says when. */
class server {
 public:
  explicit server(uv_loop_t *loop, const isv_options *opts = nullptr) {
    detail::check(isv_server_new(loop, opts, &s_), "server");
  }
  server(server &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  server &operator=(server &&o) noexcept {
    if (this != &o) {
      reset();
      s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
  }
  server(const server &) = delete;
  server &operator=(const server &) = delete;
  ~server() { reset(); }

  void listen(const std::string &host, int port) { check(isv_server_listen(s_, host.c_str(), port)); }
  int bound_port(unsigned index = 0) const { return isv_server_bound_port(s_, index); }
  /* Register `fn` as model version `version` of `cfg`. */
  void add_model(const model_config &cfg, const std::string &version, backend fn) {
    std::unique_ptr<detail::backend_box> box(new detail::backend_box{std::move(fn)});
    isv_backend be{};
    be.struct_size = sizeof be;
    be.infer = detail::infer;
    be.destroy = detail::destroy;
    check(isv_server_add_model(s_, cfg.get(), version.c_str(), &be, box.get(), nullptr));
    box.release(); /* the server's now: destroy deletes it */
  }
  /* Register `fn` as model version `version` of `cfg`, an asynchronous backend: each request
   * reaches it as an isv::async_request to complete later, from any thread. It runs as cfg's
   * exec_mode says: ISV_EXEC_ASYNC unless set (on the loop thread: start the work and return),
   * or ISV_EXEC_POOL (on a worker thread); ISV_EXEC_INLINE, which must complete before
   * returning, is refused (ISV_EINVAL). */
  void add_async_model(const model_config &cfg, const std::string &version, async_backend fn) {
    if (cfg.mode_set_ && cfg.mode_ == ISV_EXEC_INLINE)
      throw error(ISV_EINVAL, "model '" + cfg.name() +
                                  "': an asynchronous backend cannot run ISV_EXEC_INLINE");
    std::unique_ptr<detail::async_backend_box> box(new detail::async_backend_box{std::move(fn)});
    isv_backend be{};
    be.struct_size = sizeof be;
    be.infer = detail::infer_async;
    be.destroy = detail::destroy_async;
    /* The C config says ASYNC for this call only (add_model copies it; cfg is unchanged). */
    isv_model_config *c = cfg.c_.get();
    bool lend = !cfg.mode_set_;
    if (lend) detail::check(isv_model_config_set_exec_mode(c, ISV_EXEC_ASYNC));
    int rc = isv_server_add_model(s_, c, version.c_str(), &be, box.get(), nullptr);
    if (lend) isv_model_config_set_exec_mode(c, ISV_EXEC_INLINE);
    check(rc);
    box.release(); /* the server's now: destroy deletes it */
  }
  void remove_model(const std::string &name, const char *version = nullptr) {
    check(isv_server_remove_model(s_, name.c_str(), version));
  }
  void set_online(bool on) noexcept { isv_server_set_online(s_, on ? 1 : 0); }
  /* Close (inferserve.h's isv_server_close); done runs on the loop thread once it is over. */
  void close(std::function<void()> done = nullptr) {
    if (s_ == nullptr) return;
    auto *cb = new std::function<void()>(std::move(done));
    int rc = isv_server_close(std::exchange(s_, nullptr), on_closed, cb);
    if (rc < 0) {
      delete cb;
      throw error(rc, "close");
    }
  }
  isv_server *get() const noexcept { return s_; }

 private:
  static void on_closed(isv_server *, void *data) {
    std::unique_ptr<std::function<void()>> cb(static_cast<std::function<void()> *>(data));
    if (*cb) (*cb)();
  }
  void reset() noexcept {
    if (s_) isv_server_close(std::exchange(s_, nullptr), nullptr, nullptr);
  }
  void check(int rc) const {
    if (rc < 0) throw error(rc, isv_server_last_error(s_));
  }
  isv_server *s_ = nullptr;
};

}  // namespace isv

#endif
