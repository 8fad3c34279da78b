// include/inferserve.hpp, the C++17 face: a lambda backend with captures, exceptions turned
// into the request's error (isv::error keeps its code; anything else is a 500 with what()),
// the library's rule checks thrown from request::output, model_config and server errors as
// exceptions, and the lambda freed when the server closes. Requests go in process.
#include <inferserve.hpp>

#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

int failures = 0;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                                   \
    }                                                                               \
  } while (0)

struct outcome {
  int calls = 0;
  int status = 1;
  std::string message;
  std::vector<float> y;
};

// One FP32 request of x to `model`, run to its end on the loop.
outcome run(uv_loop_t *loop, isv::server &srv, const char *model, std::vector<float> x) {
  outcome o;
  isv_request *r = nullptr;
  if (isv_request_new(srv.get(), model, nullptr, &r) != 0) return o;
  const int64_t shape[] = {static_cast<int64_t>(x.size())};
  CHECK(isv_request_add_input(r, "x", ISV_FP32, shape, 1, x.data(), x.size() * sizeof(float),
                              ISV_TRANSIENT) == 0);
  CHECK(isv_server_infer(srv.get(), r, [](isv_request *q, int status, void *data) {
    auto *out = static_cast<outcome *>(data);
    out->calls++;
    out->status = status;
    out->message = isv_request_error_message(q);
    if (const isv_tensor *t = isv_request_output(q, "y")) {
      isv::tensor_view y(t);
      for (float v : y.data<float>()) out->y.push_back(v);
    }
    isv_request_free(q);
  }, &o) == 0);
  while (o.calls == 0 && uv_run(loop, UV_RUN_ONCE) != 0) {
  }
  return o;
}

}  // namespace

int main() {
  uv_loop_t loop;
  CHECK(uv_loop_init(&loop) == 0);
  auto factor = std::make_shared<float>(3.0f);  // captured: freed with the model
  bool closed = false;
  {
    isv::server srv(&loop);

    isv::model_config cfg("saxpy");
    cfg.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    srv.add_model(cfg, "1", [factor](isv::request &r) {
      auto x = r.input("x").data<float>();
      auto y = r.alloc_output<float>("y", r.input("x").shape());
      for (size_t i = 0; i < x.size(); i++) y[i] = *factor * x[i] + 1;
    });
    CHECK(factor.use_count() == 2);

    // The same config under other names: each backend fails in its own way.
    isv::model_config bad("std_throw");
    bad.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    srv.add_model(bad, "1", [](isv::request &) { throw std::runtime_error("the model exploded"); });
    isv::model_config client("client_fault");
    client.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    srv.add_model(client, "1", [](isv::request &r) {
      if (r.input("x").data<float>()[0] < 0) throw isv::error(ISV_EBADREQ, "x must be >= 0");
    });
    isv::model_config rule("wrong_output");
    rule.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    srv.add_model(rule, "1", [](isv::request &r) { r.alloc_output<float>("nope", {1}); });
    isv::model_config dtype("wrong_type");
    dtype.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    srv.add_model(dtype, "1", [](isv::request &r) { r.input("x").data<int32_t>(); });

    outcome ok = run(&loop, srv, "saxpy", {1, -2, 0.5f});
    CHECK(ok.calls == 1 && ok.status == 0);
    CHECK((ok.y == std::vector<float>{4, -5, 2.5f}));

    outcome e = run(&loop, srv, "std_throw", {1});
    CHECK(e.status == ISV_EBACKEND && e.message == "the model exploded");
    e = run(&loop, srv, "client_fault", {-1});
    CHECK(e.status == ISV_EBADREQ && e.message == "x must be >= 0");
    e = run(&loop, srv, "client_fault", {1});  // returned normally: completed with 0
    CHECK(e.status == 0 && e.y.empty());
    e = run(&loop, srv, "wrong_output", {1});
    CHECK(e.status == ISV_EBACKEND && e.message.find("declares no output 'nope'") != std::string::npos);
    e = run(&loop, srv, "wrong_type", {1});
    CHECK(e.status == ISV_EBACKEND && e.message.find("is FP32, not INT32") != std::string::npos);

    // Errors of setup calls are exceptions with the code and the library's explanation.
    try {
      cfg.input("x", ISV_INT32, {1});
      CHECK(!"a duplicate input was accepted");
    } catch (const isv::error &err) {
      CHECK(err.code() == ISV_EEXIST);
    }
    try {
      srv.add_model(cfg, "1", [](isv::request &) {});
      CHECK(!"a duplicate version was accepted");
    } catch (const isv::error &err) {
      CHECK(err.code() == ISV_EEXIST);
      CHECK(std::strstr(err.what(), "already registered") != nullptr);
    }
    try {
      srv.listen("not-an-ip", 0);
      CHECK(!"listen on a bad address succeeded");
    } catch (const isv::error &err) {
      CHECK(err.code() < 0 && std::strlen(err.what()) > 0);
    }

    isv::server moved(std::move(srv));  // the handle moves; only one closes it
    CHECK(srv.get() == nullptr && moved.get() != nullptr);
    moved.close([&closed] { closed = true; });
    CHECK(moved.get() == nullptr);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(closed);
  CHECK(factor.use_count() == 1);  // the server deleted the lambda with its model
  CHECK(uv_loop_close(&loop) == 0);

  // Models calling models and an ensemble through the face: a worker-thread backend running a
  // nested request and answering with its output by reference; the same as an ensemble.
  {
    CHECK(uv_loop_init(&loop) == 0);
    isv::server srv(&loop);
    isv::model_config twice("twice");
    twice.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    srv.add_model(twice, "1", [](isv::request &r) {
      auto x = r.input("x").data<float>();
      auto y = r.alloc_output<float>("y", r.input("x").shape());
      for (size_t i = 0; i < x.size(); i++) y[i] = 2 * x[i];
    });
    isv::model_config bls("bls");
    bls.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1}).exec_mode(ISV_EXEC_POOL);
    srv.add_model(bls, "1", [](isv::request &r) {
      isv::nested_request sub = r.nested("twice").input("x", r.input("x"));
      if (int rc = sub.run()) throw isv::error(rc, sub.error_message());
      r.set_output("y", sub.output("y"));
    });
    isv::model_config ens("ens");
    ens.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    ens.ensemble_step("twice", nullptr, {{"x", "x"}}, {{"y", "doubled"}})
        .ensemble_step("twice", nullptr, {{"x", "doubled"}}, {{"y", "y"}});
    srv.add_ensemble(ens, "1");
    outcome o = run(&loop, srv, "bls", {1, -2});
    CHECK(o.status == 0 && (o.y == std::vector<float>{2, -4}));
    o = run(&loop, srv, "ens", {1, -2});
    CHECK(o.status == 0 && (o.y == std::vector<float>{4, -8}));
    isv::model_config loop_cfg("bad_ens");
    loop_cfg.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
    loop_cfg.ensemble_step("twice", nullptr, {{"x", "x"}}, {{"y", "z"}});
    try {
      srv.add_ensemble(loop_cfg, "1");
      CHECK(!"an ensemble producing no 'y' was accepted");
    } catch (const isv::error &err) {
      CHECK(err.code() == ISV_EINVAL && std::strstr(err.what(), "'y'") != nullptr);
    }
    srv.close();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }

  // Priorities and queue policies: set through the face, refused ones thrown.
  {
    isv::model_config cfg("p");
    cfg.priority_levels(2, 1).queue_policy(2, ISV_TIMEOUT_DELAY, 1000, true, 4);
    try {
      cfg.priority_levels(2, 3);
      CHECK(!"a default level above the levels was taken");
    } catch (const isv::error &err) {
      CHECK(err.code() == ISV_EINVAL);
    }
  }

  // The response cache and warmup samples: set through the face, refused ones thrown.
  {
    isv::model_config cfg("w");
    const float row[2] = {1, 2};
    cfg.response_cache().warmup("s", 1, 2).warmup_input("s", "x", ISV_FP32, {2}, ISV_WARMUP_DATA,
                                                         row, sizeof row);
    try {
      cfg.warmup_input("nope", "x", ISV_FP32, {2}, ISV_WARMUP_ZERO);
      CHECK(!"an input of an unknown sample was taken");
    } catch (const isv::error &err) {
      CHECK(err.code() == ISV_ENOTFOUND);
    }
  }

  // A server dropped without close() closes itself once the loop runs.
  CHECK(uv_loop_init(&loop) == 0);
  {
    isv::server srv(&loop);
    isv::model_config cfg("m");
    cfg.input_any_rank("x", ISV_FP32).output_any_rank("y", ISV_FP32);
    srv.add_model(cfg, "1", [factor](isv::request &) {});
    CHECK(factor.use_count() == 2);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(factor.use_count() == 1);
  CHECK(uv_loop_close(&loop) == 0);

  if (failures != 0) {
    std::fprintf(stderr, "test_cpp_face: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("test_cpp_face: ok\n");
  return 0;
}
