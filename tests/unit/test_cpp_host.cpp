// The public header in a C++17 host: a backend written in C++ (a captureless lambda converted
// to a C function pointer), one in-process request, a clean asynchronous close.
#include <inferserve.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int failures = 0;

#define CHECK(cond)                                                                        \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

struct State {
  int infer_calls = 0;
  int done_calls = 0;
  int destroy_calls = 0;
  int close_calls = 0;
};

// OUTPUT0 = 3 * INPUT0 + 1 (INT64, any shape).
int triple_plus_one(isv_request *req, void *user) {
  auto *st = static_cast<State *>(user);
  st->infer_calls++;
  const isv_tensor *in = isv_request_input(req, "INPUT0");
  if (in == nullptr || isv_tensor_datatype(in) != ISV_INT64)
    return isv_request_complete(req, ISV_EBADREQ, "INPUT0 must be INT64");
  size_t ndim = 0;
  const int64_t *shape = isv_tensor_shape(in, &ndim);
  size_t n = isv_tensor_element_count(in);
  void *out = nullptr;
  int rc = isv_request_alloc_output(req, "OUTPUT0", ISV_INT64, shape, ndim, &out);
  if (rc < 0)
    return rc;
  const auto *src = static_cast<const unsigned char *>(isv_tensor_data(in));
  auto *dst = static_cast<unsigned char *>(out);
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    std::memcpy(&v, src + i * sizeof v, sizeof v);
    v = 3 * v + 1;
    std::memcpy(dst + i * sizeof v, &v, sizeof v);
  }
  return isv_request_complete(req, 0, nullptr);
}

}  // namespace

int main() {
  std::printf("libinferserve %s (header %d.%d.%d)\n", isv_version(), ISV_VERSION_MAJOR,
              ISV_VERSION_MINOR, ISV_VERSION_PATCH);
  CHECK(isv_version_hex() == static_cast<unsigned>(ISV_VERSION_HEX));
  CHECK(std::strcmp(isv_datatype_name(ISV_INT64), "INT64") == 0);
  CHECK(isv_err_http_status(ISV_ENOTFOUND) == 404);

  uv_loop_t loop;
  CHECK(uv_loop_init(&loop) == 0);
  State st;

  isv_server *srv = nullptr;
  CHECK(isv_server_new(&loop, nullptr, &srv) == 0);
  if (srv == nullptr)
    return 1;

  isv_model_config *cfg;
  isv_model_config_new("cpp_model", &cfg);
  CHECK(cfg != nullptr);
  const int64_t any[] = {-1};
  CHECK(isv_model_config_add_input(cfg, "INPUT0", ISV_INT64, any, 1) == 0);
  CHECK(isv_model_config_add_output(cfg, "OUTPUT0", ISV_INT64, any, 1) == 0);

  isv_backend be{};
  be.struct_size = sizeof be;
  be.infer = triple_plus_one;
  // The destroy callback is a lambda converted to a plain function pointer.
  be.destroy = [](void *user) { static_cast<State *>(user)->destroy_calls++; };
  CHECK(isv_server_add_model(srv, cfg, "1", &be, &st, nullptr) == 0);
  isv_model_config_free(cfg);

  // One request, through the same path as the network.
  isv_request *req = nullptr;
  CHECK(isv_request_new(srv, "cpp_model", nullptr, &req) == 0);
  if (req == nullptr)
    return 1;
  std::vector<int64_t> input = {-2, 0, 7, 1000000000000};
  const int64_t shape[] = {static_cast<int64_t>(input.size())};
  CHECK(isv_request_add_input(req, "INPUT0", ISV_INT64, shape, 1, input.data(),
                              input.size() * sizeof(int64_t), ISV_TRANSIENT) == 0);

  auto on_done = [](isv_request *r, int status, void *data) {
    auto *s = static_cast<State *>(data);
    s->done_calls++;
    CHECK(status == 0);
    if (status != 0)
      std::fprintf(stderr, "request failed: %s: %s\n", isv_err_name(status),
                   isv_request_error_message(r));
    CHECK(isv_request_output_count(r) == 1);
    const isv_tensor *out = isv_request_output(r, "OUTPUT0");
    CHECK(out != nullptr);
    if (out != nullptr) {
      CHECK(isv_tensor_datatype(out) == ISV_INT64);
      size_t ndim = 0;
      const int64_t *oshape = isv_tensor_shape(out, &ndim);
      CHECK(ndim == 1 && oshape[0] == 4);
      CHECK(isv_tensor_element_count(out) == 4);
      CHECK(isv_tensor_byte_size(out) == 4 * sizeof(int64_t));
      const int64_t expect[] = {-5, 1, 22, 3000000000001};
      if (isv_tensor_element_count(out) == 4) {
        for (size_t i = 0; i < 4; i++) {
          int64_t v;
          std::memcpy(&v, static_cast<const unsigned char *>(isv_tensor_data(out)) + i * sizeof v,
                      sizeof v);
          CHECK(v == expect[i]);
        }
      }
    }
    isv_request_free(r);
  };
  CHECK(isv_server_infer(srv, req, on_done, &st) == 0);
  input.assign(input.size(), 99);  // TRANSIENT: the library copied the input already

  uv_run(&loop, UV_RUN_NOWAIT);  // the inline backend may complete on a later loop turn
  CHECK(isv_server_close(srv, [](isv_server *, void *data) { static_cast<State *>(data)->close_calls++; },
                         &st) == 0);
  uv_run(&loop, UV_RUN_DEFAULT);

  CHECK(st.infer_calls == 1);
  CHECK(st.done_calls == 1);
  CHECK(st.destroy_calls == 1);
  CHECK(st.close_calls == 1);
  CHECK(uv_loop_close(&loop) == 0);

  if (failures != 0) {
    std::fprintf(stderr, "test_cpp_host: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("test_cpp_host: ok\n");
  return 0;
}
