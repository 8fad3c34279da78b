/* libinferserve's C++17 face: header-only, over the C ABI in inferserve.h (which stays the
 * contract — everything here is inline and calls it).
 *
 *   isv::server srv(loop);                         // RAII: closed (asynchronously) on scope exit
 *   isv::model_config cfg("saxpy");
 *   cfg.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
 *   srv.add_model(cfg, "1", [a](isv::request &r) {  // a lambda, any captures
 *     auto x = r.input("x").data<float>();
 *     auto y = r.output<float>("y", r.input("x").shape());
 *     for (size_t i = 0; i < x.size(); i++) y[i] = a * x[i];
 *   });                                             // returns: the request completes with 0
 *   srv.listen("127.0.0.1", 8000);
 *
 * Backends are synchronous: the function fills the outputs and returns, and the request is
 * completed for it. What it throws becomes the request's error: an isv::error keeps its code
 * and message (ISV_EBADREQ: the client's data was wrong, 400), any other std::exception is the
 * backend's failure (500 with what()). A backend that needs to complete later, from its own
 * thread, uses the C API (isv_backend) — both mix freely on one server.
 *
 * Lifetimes: the function given to add_model lives until the model version is unregistered and
 * its last request is done (the C destroy callback deletes it). A tensor_view, a span of its
 * data or of an output, and a request are valid during the call only. Thread rules are the C
 * API's: server and model_config calls on the loop thread; a backend runs on the loop thread
 * (ISV_EXEC_INLINE) or a worker thread (ISV_EXEC_POOL). */
#ifndef INFERSERVE_HPP
#define INFERSERVE_HPP

#include <inferserve.h>

#include <cstddef>
#include <cstdint>
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
    return isv_request_output_requested(r_, name) != 0;
  }
  bool cancelled() const noexcept { return isv_request_cancelled(r_) != 0; }
  unsigned instance() const noexcept { return isv_request_instance(r_); }
  /* Allocate declared output `name` of this shape; its elements to fill. The library's rule
   * checks (name, datatype, shape) throw isv::error, which fails the request with a 500 that
   * names the rule. */
  template <class T>
  span<T> output(const char *name, span<const std::int64_t> shape) {
    void *p = nullptr;
    detail::check(isv_request_output(r_, name, datatype_of<T>::value, shape.data(), shape.size(),
                                     &p));
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    return span<T>(static_cast<T *>(p), n);
  }
  template <class T>
  span<T> output(const char *name, std::initializer_list<std::int64_t> shape) {
    return output<T>(name, span<const std::int64_t>(shape.begin(), shape.size()));
  }
  void set_response_param(const char *key, const isv_param &value) {
    detail::check(isv_request_set_response_param(r_, key, &value));
  }
  isv_request *get() const noexcept { return r_; }

 private:
  isv_request *r_;
};

/* A model version's description (owning; copied by server::add_model). */
class model_config {
 public:
  explicit model_config(const std::string &name) {
    isv_model_config *c = nullptr;
    detail::check(isv_model_config_new(name.c_str(), &c), "model config '" + name + "'");
    c_.reset(c);
  }
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
  model_config &exec_mode(isv_exec_mode m) {
    detail::check(isv_model_config_set_exec_mode(c_.get(), m));
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
  const isv_model_config *get() const noexcept { return c_.get(); }

 private:
  struct deleter {
    void operator()(isv_model_config *c) const noexcept { isv_model_config_free(c); }
  };
  std::unique_ptr<isv_model_config, deleter> c_;
};

/* A synchronous backend: fill the outputs and return (see the top of this file). */
using backend = std::function<void(request &)>;

namespace detail {
struct backend_box {
  backend fn;
};
inline int infer(isv_request *r, void *user) {
  request req(r);
  try {
    static_cast<backend_box *>(user)->fn(req);
  } catch (const error &e) {
    return isv_request_complete(r, e.code(), e.has_message() ? e.what() : nullptr);
  } catch (const std::exception &e) {
    return isv_request_complete(r, ISV_EBACKEND, e.what());
  } catch (...) {
    return isv_request_complete(r, ISV_EBACKEND, "the backend threw a non-std exception");
  }
  return isv_request_complete(r, 0, nullptr);
}
inline void destroy(void *user) { delete static_cast<backend_box *>(user); }
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
