/** @file inferserve.hpp
 * libinferserve's C++17 face: header-only, over the C ABI in inferserve.h (which stays the
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
 * A backend may infer other models (inferserve.h's "Models calling models" for the threads):
 *
 *   srv.add_model(cfg.exec_mode(ISV_EXEC_POOL), "1", [](isv::request &r) {
 *     isv::nested_request sub = r.nested("preprocess").input("IN", r.input("x"));
 *     if (int rc = sub.run()) throw isv::error(rc, sub.error_message());
 *     r.set_output("y", sub.output("OUT"));       // by reference: no copy
 *   });
 *
 * and ensembles are configs with steps: cfg.ensemble_step("m", nullptr, {{"IN", "x"}},
 * {{"OUT", "y"}}) ..., then srv.add_ensemble(cfg, "1").
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
#include <vector>

namespace isv {

/** A failed call (code: an ISV_E* value). Thrown by this header; throw one from a backend to
 * fail its request with that code and message. */
class error : public std::runtime_error {
 public:
  /** An error with an ISV_E* code and a message ("": the code's own text, isv_strerror()).
   * @param code an ISV_E* code
   * @param message the text the client reads, or "" for the code's own
   */
  error(int code, const std::string &message)
      : std::runtime_error(message.empty() ? std::string(isv_strerror(code)) : message),
        code_(code), own_message_(!message.empty()) {}
  /** The ISV_E* code.
   * @return the code
   */
  int code() const noexcept { return code_; }
  /** Whether the message is the thrower's own (else isv_strerror's, and the library's own
   * explanation of a broken rule, kept with the request, is the better one).
   * @return true when the thrower gave a message
   */
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

/** A view of contiguous elements (std::span is C++20). */
template <class T>
class span {
 public:
  span() noexcept = default;
  /** A view of size elements at data.
   * @param data the first element
   * @param size how many
   */
  span(T *data, std::size_t size) noexcept : data_(data), size_(size) {}
  /** The first element.
   * @return the first element, nullptr for an empty view
   */
  T *data() const noexcept { return data_; }
  /** The number of elements.
   * @return the element count
   */
  std::size_t size() const noexcept { return size_; }
  /** Whether the view has no element.
   * @return true when size() is 0
   */
  bool empty() const noexcept { return size_ == 0; }
  /** Element i (not checked).
   * @param i the index, below size()
   * @return the element
   */
  T &operator[](std::size_t i) const noexcept { return data_[i]; }
  /** For range-for: the first element.
   * @return the first element
   */
  T *begin() const noexcept { return data_; }
  /** For range-for: past the last element.
   * @return one past the last element
   */
  T *end() const noexcept { return data_ + size_; }

 private:
  T *data_ = nullptr;
  std::size_t size_ = 0;
};

/** The wire datatype of a C++ element type: isv::datatype_of<float>::value == ISV_FP32.

 */
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

/** A read-only tensor (an input, or an in-process response's output). */
class tensor_view {
 public:
  /** A view of the C tensor t (not owned).
   * @param t the tensor
   */
  explicit tensor_view(const isv_tensor *t) noexcept : t_(t) {}
  /** The tensor's name (isv_tensor_name()).
   * @return the name
   */
  const char *name() const noexcept { return isv_tensor_name(t_); }
  /** The tensor's datatype (isv_tensor_datatype()).
   * @return the datatype
   */
  isv_datatype datatype() const noexcept { return isv_tensor_datatype(t_); }
  /** The tensor's dimensions (isv_tensor_shape()).
   * @return the dimensions, valid while the request is
   */
  span<const std::int64_t> shape() const noexcept {
    std::size_t n = 0;
    const std::int64_t *s = isv_tensor_shape(t_, &n);
    return span<const std::int64_t>(s, n);
  }
  /** The number of elements (isv_tensor_element_count()).
   * @return the element count
   */
  std::size_t element_count() const noexcept { return isv_tensor_element_count(t_); }
  /** The bytes of the data (isv_tensor_byte_size()).
   * @return the byte size
   */
  std::size_t byte_size() const noexcept { return isv_tensor_byte_size(t_); }
  /** The elements as T, which must be the tensor's datatype (else ISV_EINVAL: the model
   * declared it, so asking for another type is the backend's mistake). Aligned (inferserve.h).
   * @return the elements, valid while the request is
   */
  template <class T>
  span<const T> data() const {
    if (datatype_of<T>::value != datatype())
      throw error(ISV_EINVAL, std::string("tensor '") + name() + "' is " +
                                  isv_datatype_name(datatype()) + ", not " +
                                  isv_datatype_name(datatype_of<T>::value));
    return span<const T>(static_cast<const T *>(isv_tensor_data(t_)), element_count());
  }
  /** The C tensor, for the C API.
   * @return the tensor
   */
  const isv_tensor *get() const noexcept { return t_; }

 private:
  const isv_tensor *t_;
};

/** A request the backend makes to another model (inferserve.h's "Models calling models"): a
 * view — its parent request owns it and frees it, so its outputs stay valid, and may be
 * answered by reference, until the parent's response is sent. */
class nested_request {
 public:
  /** A view of the nested C request r (not owned: its parent frees it).
   * @param r the request isv_request_new_nested() made
   */
  explicit nested_request(isv_request *r) noexcept : r_(r) {}
  /** An input pointing at t's memory (the parent's input, or another nested request's output:
   * both outlive this one), no copy.
   * @param name the input's name
   * @param t the tensor to pass on
   * @return *this, to chain
   */
  nested_request &input(const char *name, const tensor_view &t) {
    detail::check(isv_request_add_input(r_, name, t.datatype(), t.shape().data(), t.shape().size(),
                                        isv_tensor_data(t.get()), t.byte_size(), ISV_STATIC),
                  std::string("nested input '") + name + "'");
    return *this;
  }
  /** An input copied from data.
   * @param name the input's name
   * @param data the elements (copied)
   * @param shape its dimensions
   * @return *this, to chain
   */
  template <class T>
  nested_request &input(const char *name, span<const T> data,
                        std::initializer_list<std::int64_t> shape) {
    detail::check(isv_request_add_input(r_, name, datatype_of<T>::value, shape.begin(),
                                        shape.size(), data.data(), data.size() * sizeof(T),
                                        ISV_TRANSIENT),
                  std::string("nested input '") + name + "'");
    return *this;
  }
  /** Run it and wait (isv_request_run(): a worker thread or a thread of the backend's own,
   * never the loop).
   * @return 0, or the code it failed with (error_message() says why)
   */
  int run() noexcept { return isv_request_run(r_); }
  /** Run it; cb(r, status, data) on the loop thread when done (isv_request_submit()).
   * @param cb the completion callback
   * @param data passed to cb
   */
  void submit(isv_infer_cb cb, void *data) { detail::check(isv_request_submit(r_, cb, data)); }
  /** Why it failed ("" on success).
   * @return the message, valid while the request is
   */
  const char *error_message() const noexcept { return isv_request_error_message(r_); }
  /** One of its outputs, after it completed; throws isv::error when there is none.
   * @param name the output's name
   * @return a view of the output
   */
  tensor_view output(const char *name) const {
    const isv_tensor *t = isv_request_output(r_, name);
    if (t == nullptr) throw error(ISV_EINVAL, std::string("no output '") + name + "'");
    return tensor_view(t);
  }
  /** The C request.
   * @return the request
   */
  isv_request *get() const noexcept { return r_; }

 private:
  isv_request *r_;
};

/** The request a backend runs (a view: the library owns it). */
class request {
 public:
  /** A view of the C request r (not owned).
   * @param r the request
   */
  explicit request(isv_request *r) noexcept : r_(r) {}
  /** The model's name (isv_request_model_name()).
   * @return the name
   */
  const char *model_name() const noexcept { return isv_request_model_name(r_); }
  /** The version's name (isv_request_model_version()).
   * @return the version
   */
  const char *model_version() const noexcept { return isv_request_model_version(r_); }
  /** The client's request id, "" when none (isv_request_id()).
   * @return the id
   */
  const char *id() const noexcept { return isv_request_id(r_); }
  /** The number of inputs (isv_request_input_count()).
   * @return the input count
   */
  std::size_t input_count() const noexcept { return isv_request_input_count(r_); }
  /** An input by position; throws isv::error(ISV_EINVAL) past the end.
   * @param i the position, 0-based
   * @return the input
   */
  tensor_view input_at(std::size_t i) const {
    const isv_tensor *t = isv_request_input_at(r_, i);
    if (t == nullptr) throw error(ISV_EINVAL, "no input at position " + std::to_string(i));
    return tensor_view(t);
  }
  /** A declared input (every declared input is present once validation let the request in).
   * @param name the input's name
   * @return the input; throws isv::error(ISV_EINVAL) when there is none of that name
   */
  tensor_view input(const char *name) const {
    const isv_tensor *t = isv_request_input(r_, name);
    if (t == nullptr) throw error(ISV_EINVAL, std::string("no input '") + name + "'");
    return tensor_view(t);
  }
  /** A request parameter, or nullptr.
   * @param key the parameter's key
   * @return the parameter, or nullptr
   */
  const isv_param *param(const char *key) const noexcept { return isv_request_param(r_, key); }
  /** Whether the client asked for this output (isv_request_is_output_requested()).
   * @param name the output's name
   * @return true when requested
   */
  bool output_requested(const char *name) const noexcept {
    return isv_request_is_output_requested(r_, name) != 0;
  }
  /** Whether the client is gone or the deadline passed (isv_request_is_cancelled()).
   * @return true when cancelled
   */
  bool cancelled() const noexcept { return isv_request_is_cancelled(r_) != 0; }
  /** Which instance of the model runs the request (isv_request_instance()).
   * @return the instance, 0..instances-1
   */
  unsigned instance() const noexcept { return isv_request_instance(r_); }
  /** Allocate declared output `name` of this shape; its elements to fill. The library's rule
   * checks (name, datatype, shape) throw isv::error, which fails the request with a 500 that
   * names the rule.
   * @param name a declared output
   * @param shape its dimensions
   * @return its elements to fill, owned by the library
   */
  template <class T>
  span<T> alloc_output(const char *name, span<const std::int64_t> shape) {
    void *p = nullptr;
    detail::check(isv_request_alloc_output(r_, name, datatype_of<T>::value, shape.data(),
                                           shape.size(), &p));
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    return span<T>(static_cast<T *>(p), n);
  }
  /** As alloc_output(name, span) with the shape as a list: r.alloc_output<float>("y", {2, 3}).
   * @param name a declared output
   * @param shape its dimensions
   * @return its elements to fill, owned by the library
   */
  template <class T>
  span<T> alloc_output(const char *name, std::initializer_list<std::int64_t> shape) {
    return alloc_output<T>(name, span<const std::int64_t>(shape.begin(), shape.size()));
  }
  /** Attach a parameter to the response (isv_request_set_response_param(); throws isv::error on a
   * refusal).
   * @param key the key (copied)
   * @param value the value (copied)
   */
  void set_response_param(const char *key, const isv_param &value) {
    detail::check(isv_request_set_response_param(r_, key, &value));
  }
  /** Decoupled models (model_config::decoupled): send the outputs and response parameters set
   * so far as one response and start the next one empty. true when sent; false when the
   * stream's client has not taken what was sent so far (ISV_EAGAIN: nothing was sent, the
   * outputs stay set, call it again once the stream drained: on_writable). Other refusals
   * throw isv::error (ISV_ESTATE: not decoupled, or completed).
   * @return true when sent; false when the client has not taken what was sent (ISV_EAGAIN)
   */
  bool send_response() {
    int rc = isv_request_send_response(r_);
    if (rc == ISV_EAGAIN) return false;
    detail::check(rc, "send_response");
    return true;
  }
  /** Decoupled models: cb(r, user) runs once, on the loop thread, when the stream can take more
   * responses, or when the request was cancelled (isv_request_on_writable; a C callback, so
   * that nothing is left to free when the request completes first).
   * @param cb the C callback
   * @param user passed to cb
   */
  void on_writable(isv_writable_cb cb, void *user) {
    detail::check(isv_request_on_writable(r_, cb, user), "on_writable");
  }
  /** A request to model `model`, made by this request's backend (isv_request_new_nested();
   * throws isv::error on a refusal).
   * @param model the model to run
   * @param version its version, or nullptr for the default
   * @return the nested request (owned by this one)
   */
  nested_request nested(const char *model, const char *version = nullptr) {
    isv_request *s = nullptr;
    detail::check(isv_request_new_nested(r_, model, version, &s),
                  std::string("nested request to '") + model + "'");
    return nested_request(s);
  }
  /** Output `name` answered with t's memory, by reference (t: a nested request's output or an
   * input of this request — both live until this request's response was sent).
   * @param name the output's name
   * @param t the tensor whose memory answers it
   */
  void set_output(const char *name, const tensor_view &t) {
    detail::check(isv_request_set_output(r_, name, t.datatype(), t.shape().data(),
                                         t.shape().size(), isv_tensor_data(t.get()),
                                         t.byte_size(), ISV_STATIC),
                  std::string("output '") + name + "'");
  }
  /** The C request, for the C API.
   * @return the request
   */
  isv_request *get() const noexcept { return r_; }

 private:
  isv_request *r_;
};

/** A model version's description (owning; copied by server::add_model). */
class model_config {
 public:
  /** An empty description of model `name` (isv_model_config_new(); throws isv::error on failure).
   * @param name the model's name
   */
  explicit model_config(const std::string &name) : name_(name) {
    isv_model_config *c = nullptr;
    detail::check(isv_model_config_new(name.c_str(), &c), "model config '" + name + "'");
    c_.reset(c);
  }
  /** The model's name.
   * @return the name
   */
  const std::string &name() const noexcept { return name_; }
  /** Declare an input (isv_model_config_add_input(); throws isv::error on a refusal).
   * @param name the input's name
   * @param dt its datatype
   * @param shape its dimensions (-1: any size)
   * @return *this, to chain
   */
  model_config &input(const std::string &name, isv_datatype dt,
                      std::initializer_list<std::int64_t> shape) {
    detail::check(isv_model_config_add_input(c_.get(), name.c_str(), dt, shape.begin(),
                                             shape.size()), "input '" + name + "'");
    return *this;
  }
  /** Declare an output (isv_model_config_add_output(); throws isv::error on a refusal).
   * @param name the output's name
   * @param dt its datatype
   * @param shape its dimensions (-1: any size)
   * @return *this, to chain
   */
  model_config &output(const std::string &name, isv_datatype dt,
                       std::initializer_list<std::int64_t> shape) {
    detail::check(isv_model_config_add_output(c_.get(), name.c_str(), dt, shape.begin(),
                                              shape.size()), "output '" + name + "'");
    return *this;
  }
  /** Any rank, any sizes (ISV_ANY_RANK).
   * @param name the input's name
   * @param dt its datatype
   * @return *this, to chain
   */
  model_config &input_any_rank(const std::string &name, isv_datatype dt) {
    detail::check(isv_model_config_add_input(c_.get(), name.c_str(), dt, nullptr, ISV_ANY_RANK),
                  "input '" + name + "'");
    return *this;
  }
  /** An output of any rank, any sizes (ISV_ANY_RANK).
   * @param name the output's name
   * @param dt its datatype
   * @return *this, to chain
   */
  model_config &output_any_rank(const std::string &name, isv_datatype dt) {
    detail::check(isv_model_config_add_output(c_.get(), name.c_str(), dt, nullptr, ISV_ANY_RANK),
                  "output '" + name + "'");
    return *this;
  }
  /** The largest batch (isv_model_config_set_max_batch()).
   * @param n rows along the batch dimension, 0 for none
   * @return *this, to chain
   */
  model_config &max_batch(std::uint32_t n) {
    detail::check(isv_model_config_set_max_batch(c_.get(), n));
    return *this;
  }
  /** The platform reported in metadata (isv_model_config_set_platform()).
   * @param p the text
   * @return *this, to chain
   */
  model_config &platform(const std::string &p) {
    detail::check(isv_model_config_set_platform(c_.get(), p.c_str()));
    return *this;
  }
  /** Default ISV_EXEC_INLINE for add_model, ISV_EXEC_ASYNC for add_async_model.
   * @param m ISV_EXEC_INLINE, ISV_EXEC_POOL or ISV_EXEC_ASYNC
   * @return *this, to chain
   */
  model_config &exec_mode(isv_exec_mode m) {
    detail::check(isv_model_config_set_exec_mode(c_.get(), m));
    mode_ = m;
    mode_set_ = true;
    return *this;
  }
  /** A decoupled model: any number of responses per request (request::send_response).
   * @param on true for a decoupled model
   * @return *this, to chain
   */
  model_config &decoupled(bool on = true) {
    detail::check(isv_model_config_set_decoupled(c_.get(), on ? 1 : 0));
    return *this;
  }
  /** The OpenAI chat endpoint's prompt for this model (isv_model_config_set_chat_template():
   * called on the loop thread, must not block).
   * @param fn the template, or NULL for the front end's own
   * @param user passed to each call
   * @return *this, to chain
   */
  model_config &chat_template(isv_chat_template_fn fn, void *user = nullptr) {
    detail::check(isv_model_config_set_chat_template(c_.get(), fn, user));
    return *this;
  }
  /** Executions at once (isv_model_config_set_instances()).
   * @param n the instance count (>= 1)
   * @return *this, to chain
   */
  model_config &instances(std::uint32_t n) {
    detail::check(isv_model_config_set_instances(c_.get(), n));
    return *this;
  }
  /** Requests that may wait (isv_model_config_set_max_queue()).
   * @param n the bound (0: none of the model's own)
   * @return *this, to chain
   */
  model_config &max_queue(std::uint32_t n) {
    detail::check(isv_model_config_set_max_queue(c_.get(), n));
    return *this;
  }
  /** The deadline of requests that bring none (isv_model_config_set_default_timeout_us()).
   * @param us microseconds (0: none)
   * @return *this, to chain
   */
  model_config &default_timeout_us(std::uint64_t us) {
    detail::check(isv_model_config_set_default_timeout_us(c_.get(), us));
    return *this;
  }
  /** {key, value} pairs of an ensemble step's map (ensemble_step()). */
  using tensor_map = std::initializer_list<std::pair<const char *, const char *>>;
  /** An ensemble's step (isv_model_config_add_ensemble_step()); register the ensemble with
   * server::add_ensemble.
   * @param model the step's model
   * @param version its version, or nullptr for the default
   * @param input_map {model input, ensemble tensor} pairs
   * @param output_map {model output, ensemble tensor} pairs
   * @return *this, to chain
   */
  model_config &ensemble_step(const char *model, const char *version, tensor_map input_map,
                              tensor_map output_map) {
    std::vector<const char *> in, out;
    for (const auto &kv : input_map) in.insert(in.end(), {kv.first, kv.second});
    for (const auto &kv : output_map) out.insert(out.end(), {kv.first, kv.second});
    detail::check(isv_model_config_add_ensemble_step(c_.get(), model, version, in.data(),
                                                     input_map.size(), out.data(),
                                                     output_map.size()),
                  std::string("ensemble step '") + model + "'");
    return *this;
  }
  /** Triton's priority levels and queue policies (isv_model_config_set_priority_levels,
   * isv_model_config_set_queue_policy: level 0 is the default policy).
   * @param levels the number of levels
   * @param default_level the level of a request that names none
   * @return *this, to chain
   */
  model_config &priority_levels(std::uint32_t levels, std::uint32_t default_level) {
    detail::check(isv_model_config_set_priority_levels(c_.get(), levels, default_level));
    return *this;
  }
  /** The queue policy of a priority level, or with level 0 the default one
   * (isv_model_config_set_queue_policy(); throws isv::error on a refusal).
   * @param level the level, or 0 for the default policy
   * @param action what happens at the queue timeout
   * @param default_timeout_us the queue timeout in µs (0: none)
   * @param allow_timeout_override whether a request's "timeout" may shorten it
   * @param max_queue_size requests that may wait at the level (0: no bound)
   * @return *this, to chain
   */
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
  /** Triton's response_cache (isv_model_config_set_response_cache()).
   * @param on true to cache this model's answers
   * @return *this, to chain
   */
  model_config &response_cache(bool on = true) {
    detail::check(isv_model_config_set_response_cache(c_.get(), on ? 1 : 0));
    return *this;
  }
  /** A model_warmup sample (isv_model_config_add_warmup()).
   * @param sample the sample's name
   * @param batch_size its batch size
   * @param count how many times it runs
   * @return *this, to chain
   */
  model_config &warmup(const std::string &sample, std::uint32_t batch_size,
                       std::uint32_t count = 1) {
    detail::check(isv_model_config_add_warmup(c_.get(), sample.c_str(), batch_size, count));
    return *this;
  }
  /** An input of a warmup sample (isv_model_config_add_warmup_input(): data for ISV_WARMUP_DATA
   * only).
   * @param sample the sample's name
   * @param input the input's name
   * @param dt its datatype
   * @param dims its dimensions (without the batch dimension)
   * @param fill zero, random or given data
   * @param data the given data (ISV_WARMUP_DATA), else nullptr
   * @param byte_size its bytes
   * @return *this, to chain
   */
  model_config &warmup_input(const std::string &sample, const std::string &input,
                             isv_datatype dt, std::initializer_list<std::int64_t> dims,
                             isv_warmup_fill fill, const void *data = nullptr,
                             std::size_t byte_size = 0) {
    detail::check(isv_model_config_add_warmup_input(c_.get(), sample.c_str(), input.c_str(), dt,
                                                    dims.begin(), dims.size(), fill, data,
                                                    byte_size));
    return *this;
  }
  /** The C configuration, for the C API.
   * @return the configuration
   */
  const isv_model_config *get() const noexcept { return c_.get(); }

 private:
  friend class server;
  struct deleter {
    void operator()(isv_model_config *c) const noexcept { isv_model_config_free(c); }
  };
  std::unique_ptr<isv_model_config, deleter> c_;
  std::string name_;
  isv_exec_mode mode_ = ISV_EXEC_INLINE;
  bool mode_set_ = false; /**< exec_mode() was called (else each add_* picks its default) */
};

/** A synchronous backend: fill the outputs and return (see the top of this file). */
using backend = std::function<void(request &)>;

namespace detail {
/** Complete r with the exception e as the request's error (the rule at the top of this file). */
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

/** A request an asynchronous backend completes later (add_async_model): a move-only handle that
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
  /** Take over a submitted request whose completion is the caller's (a C backend's isv_request
   * that a C++ part finishes).
   * @param r the request
   */
  explicit async_request(isv_request *r) noexcept : req_(r) {}
  /** Take o's request; o is left empty.
   * @param o the handle moved from
   */
  async_request(async_request &&o) noexcept : req_(std::exchange(o.req_, request(nullptr))) {}
  /** Take o's request; the request this handle held, if any, is dropped (completed with
   * ISV_EBACKEND, above).
   * @param o the handle moved from
   * @return *this
   */
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

  /** Whether the handle holds a request that is not completed yet.
   * @return true when it holds a request
   */
  explicit operator bool() const noexcept { return req_.get() != nullptr; }
  /** The request it holds; throws isv::error(ISV_ESTATE) when empty.
   * @return the request
   */
  request *operator->() { return &held(); }
  /** The request it holds; throws isv::error(ISV_ESTATE) when empty.
   * @return the request
   */
  request &operator*() { return held(); }

  /** Complete with success: the outputs set are the answer. */
  void complete() { finish(0, nullptr); }
  /** Complete with an error: code is an ISV_E* value (ISV_EBACKEND: the model failed, 500;
   * ISV_EBADREQ: the client's data was wrong, 400; ISV_ECANCELED: stopped because
   * cancelled()), message what the client reads ("": the code's own text).
   * @param code an ISV_E* code
   * @param message the client's text, or "" for the code's own
   */
  void fail(int code, const std::string &message = std::string()) {
    finish(code, message.empty() ? nullptr : message.c_str());
  }
  /** Complete with an exception as the error, mapped as a synchronous backend's throw is:
   *   catch (...) { h.fail(std::current_exception()); }
   * @param e the exception
   */
  void fail(std::exception_ptr e) {
    isv_request *r = take();
    int rc = detail::complete_with(r, std::move(e));
    if (rc < 0) throw error(rc, "isv::async_request::fail: the request was completed already");
  }
  /** Let go of the request without completing it: its completion is the caller's
   * (isv_request_complete). nullptr when empty.
   * @return the request, or nullptr when empty
   */
  isv_request *release() noexcept { return std::exchange(req_, request(nullptr)).get(); }
  /** The request it holds, still held (nullptr when empty).
   * @return the request, or nullptr
   */
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

/** An asynchronous backend: it receives the handle and moves it to whatever completes the
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

/** A server on the host's loop. Move-only. Destroying it closes it (isv_server_close with no
 * callback: the loop must run on for the close to finish); close() says when. */
class server {
 public:
  /** A server on loop (isv_server_new(); throws isv::error on failure). The calling thread is its
   * loop thread.
   * @param loop the host's loop
   * @param opts options (copied), or nullptr for the defaults
   */
  explicit server(uv_loop_t *loop, const isv_options *opts = nullptr) {
    detail::check(isv_server_new(loop, opts, &s_), "server");
  }
  /** Take o's server; o is left empty.
   * @param o the server moved from
   */
  server(server &&o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  /** Take o's server; the one this held, if any, is closed.
   * @param o the server moved from
   * @return *this
   */
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

  /** Listen on host:port (isv_server_listen(); throws isv::error on failure). Loop thread.
   * @param host an IPv4 or IPv6 literal, or "localhost"
   * @param port the port; 0 picks a free one
   */
  void listen(const std::string &host, int port) { check(isv_server_listen(s_, host.c_str(), port)); }
  /** The port of the index-th listen (isv_server_bound_port()). Loop thread.
   * @param index which listen, 0-based
   * @return the port, or -1
   */
  int bound_port(unsigned index = 0) const { return isv_server_bound_port(s_, index); }
  /** Register `fn` as model version `version` of `cfg`.
   * @param cfg the model's description
   * @param version the version's name
   * @param fn the backend, called for each request
   */
  void add_model(const model_config &cfg, const std::string &version, backend fn) {
    std::unique_ptr<detail::backend_box> box(new detail::backend_box{std::move(fn)});
    isv_backend be{};
    be.struct_size = sizeof be;
    be.infer = detail::infer;
    be.destroy = detail::destroy;
    check(isv_server_add_model(s_, cfg.get(), version.c_str(), &be, box.get(), nullptr));
    box.release(); /* the server's now: destroy deletes it */
  }
  /** Register `fn` as model version `version` of `cfg`, an asynchronous backend: each request
   * reaches it as an isv::async_request to complete later, from any thread. It runs as cfg's
   * exec_mode says: ISV_EXEC_ASYNC unless set (on the loop thread: start the work and return),
   * or ISV_EXEC_POOL (on a worker thread); ISV_EXEC_INLINE, which must complete before
   * returning, is refused (ISV_EINVAL).
   * @param cfg the model's description
   * @param version the version's name
   * @param fn the backend, handed each request as an isv::async_request
   */
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
  /** Register version `version` of the ensemble cfg describes (its ensemble_step()s:
   * isv_server_add_ensemble() — the library runs it; throws isv::error on a refusal). Loop
   * thread.
   * @param cfg the ensemble's description
   * @param version the version's name
   */
  void add_ensemble(const model_config &cfg, const std::string &version) {
    check(isv_server_add_ensemble(s_, cfg.get(), version.c_str(), nullptr));
  }
  /** Remove one version, or every version, of a model (isv_server_remove_model(); throws isv::error
   * on failure). Loop thread.
   * @param name the model's name
   * @param version the version, or nullptr for every version
   */
  void remove_model(const std::string &name, const char *version = nullptr) {
    check(isv_server_remove_model(s_, name.c_str(), version));
  }
  /** Online or offline (isv_server_set_online()). Loop thread.
   * @param on true for online
   */
  void set_online(bool on) noexcept { isv_server_set_online(s_, on ? 1 : 0); }
  /** Close (inferserve.h's isv_server_close); done runs on the loop thread once it is over.
   * @param done called once the server is gone, or nullptr
   */
  void close(std::function<void()> done = nullptr) {
    if (s_ == nullptr) return;
    auto *cb = new std::function<void()>(std::move(done));
    int rc = isv_server_close(std::exchange(s_, nullptr), on_closed, cb);
    if (rc < 0) {
      delete cb;
      throw error(rc, "close");
    }
  }
  /** The C server, for the C API (nullptr once closed).
   * @return the server
   */
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
