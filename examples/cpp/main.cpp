// A C++17 host: its own libuv loop, one model written as a lambda (include/inferserve.hpp),
// served over every protocol of the library on one port; SIGINT or SIGTERM closes it.
//
//   cpp-example [PORT]        (default 8000; 0 picks a free one)
//   curl localhost:8000/v2/models/saxpy/infer
//        -d '{"inputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2,3]}]}'
#include <inferserve.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

uv_signal_t sigint, sigterm;
isv::server *served;

void on_signal(uv_signal_t *, int) {
  uv_close(reinterpret_cast<uv_handle_t *>(&sigint), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&sigterm), nullptr);
  served->close([] { std::printf("closed\n"); });
}

}  // namespace

int main(int argc, char **argv) {
  int port = argc > 1 ? std::atoi(argv[1]) : 8000;
  uv_loop_t *loop = uv_default_loop();
  try {
    isv::server srv(loop);
    // y = a * x + b, with a and b the request's parameters (defaults 2 and 0)
    isv::model_config cfg("saxpy");
    cfg.input_any_rank("x", ISV_FP32).output_any_rank("y", ISV_FP32);
    srv.add_model(cfg, "1", [](isv::request &r) {
      auto number = [&r](const char *key, double dflt) {
        const isv_param *p = r.param(key);
        if (p == nullptr) return dflt;
        if (p->type == ISV_PARAM_DOUBLE) return p->v.d;
        if (p->type == ISV_PARAM_INT64) return static_cast<double>(p->v.i64);
        throw isv::error(ISV_EBADREQ, std::string("parameter '") + key + "' must be a number");
      };
      float a = static_cast<float>(number("a", 2)), b = static_cast<float>(number("b", 0));
      isv::tensor_view x = r.input("x");
      auto in = x.data<float>();
      auto out = r.alloc_output<float>("y", x.shape());
      for (std::size_t i = 0; i < in.size(); i++) out[i] = a * in[i] + b;
    });
    srv.listen("127.0.0.1", port);
    served = &srv;
    uv_signal_init(loop, &sigint);
    uv_signal_init(loop, &sigterm);
    uv_signal_start(&sigint, on_signal, SIGINT);
    uv_signal_start(&sigterm, on_signal, SIGTERM);
    std::printf("cpp-example on %d\n", srv.bound_port(0));
    std::fflush(stdout);
    uv_run(loop, UV_RUN_DEFAULT);
  } catch (const isv::error &e) {
    std::fprintf(stderr, "cpp-example: %s (%s)\n", e.what(), isv_err_name(e.code()));
    return 1;
  }
  uv_run(loop, UV_RUN_DEFAULT);  // a server left open by an exception finishes closing
  return uv_loop_close(loop) == 0 ? 0 : 1;
}
