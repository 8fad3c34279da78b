// inferserve-torch: a TorchScript module (LibTorch, the C++ API of PyTorch) served by
// libinferserve — the backend a host writes around a real runtime, in C++17. One model, one
// input, one output per tensor the module returns (Triton's PyTorch naming):
//
//   INPUT__0    FP32 [-1, ...]  the batch the module's forward takes (dimension 0: the rows)
//   OUTPUT__k   [-1, ...]       the k-th tensor forward returns (a tensor, or a tuple of them),
//                               FP32 / FP64 / FP16 / BF16 / INT8..64 / UINT8 / BOOL as it returns
//
// The per-row input shape comes from the module: its `input_shape` attribute (a List[int],
// for a conv net: [3, 32, 32]) or, without one, the second dimension of its first 2-D
// parameter (an MLP's first Linear: [in_features]). The outputs' shapes are what one probe
// forward on a row of zeros returns.
//
// Loaded once, run on the server's worker threads (ISV_EXEC_POOL: forward is CPU work, the loop
// is the host's), `--instances` forwards at once, with the dynamic batcher gathering rows into
// one forward. No copies of tensors here: the request's input memory is wrapped as a tensor
// (torch::from_blob) and each output tensor is handed to the library by reference
// (isv_request_set_output), kept alive until the response is written. Torch's intra-op
// threads: 1 (parallelism comes from the instances; one forward per core at most).
//
//   inferserve-torch --model FILE.pt [--name mlp] [--host 127.0.0.1] [--port 8000]
//                    [--max-batch 64] [--batch-delay-us 500] [--instances 1]
//
// It prints "inferserve-torch serving NAME (input [F...], N outputs) on PORT" once listening
// (--port 0: a free port, the one printed), and exits 0 on SIGINT or SIGTERM once drained.
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <inferserve.h>
#include <uv.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

struct out_decl {
  std::string name;
  isv_datatype dt;
  std::vector<int64_t> row_shape;  // per-row dims (the batch dimension is the library's)
};

struct model {
  torch::jit::Module module;
  std::vector<int64_t> row_shape;  // the input's per-row dims
  std::vector<out_decl> outputs;
};

uv_loop_t loop;
uv_signal_t sig_int, sig_term;
isv_server *server;

// ---- outputs by reference ----------------------------------------------------------------------
// isv_request_set_output's destructor gets the data pointer alone, so the tensors that own the
// memory wait here, by data pointer, until the library is done with them. A multimap: a module
// may return the same tensor (a constant, a parameter) to requests running at once.
std::mutex held_mu;
std::unordered_multimap<const void *, at::Tensor> held;

void release(void *p) {
  at::Tensor t;  // freed after the lock is dropped
  std::lock_guard<std::mutex> lock(held_mu);
  auto it = held.find(p);
  if (it != held.end()) {
    t = std::move(it->second);
    held.erase(it);
  }
}

isv_datatype datatype_of(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return ISV_FP32;
    case at::kDouble: return ISV_FP64;
    case at::kHalf: return ISV_FP16;
    case at::kBFloat16: return ISV_BF16;
    case at::kChar: return ISV_INT8;
    case at::kShort: return ISV_INT16;
    case at::kInt: return ISV_INT32;
    case at::kLong: return ISV_INT64;
    case at::kByte: return ISV_UINT8;
    case at::kBool: return ISV_BOOL;
    default: return ISV_TYPE_INVALID;
  }
}

// forward's result as a list of tensors (a tensor, or a tuple / list of them); throws otherwise.
std::vector<at::Tensor> tensors_of(const c10::IValue &v) {
  if (v.isTensor()) return {v.toTensor()};
  std::vector<at::Tensor> out;
  if (v.isTuple()) {
    for (const auto &e : v.toTupleRef().elements()) out.push_back(e.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor &t : v.toTensorVector()) out.push_back(t);
  } else {
    throw std::runtime_error("forward returned a " + v.tagKind() + ", not tensors");
  }
  return out;
}

// The last non-empty line of an error: what TorchScript raised ("builtins.ValueError: ..."),
// without the interpreter's traceback above it, which quotes the module's code to the client.
std::string last_line(const std::string &text) {
  size_t end = text.find_last_not_of("\n");
  if (end == std::string::npos) return text;
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end + 1 - start);
}

// Hand forward's tensors to the request, by reference. 0, or an ISV_E* code (*why: the message,
// empty when the library keeps its own: a broken output rule).
int hand_back(isv_request *req, const model *m, const std::vector<at::Tensor> &ys, int64_t rows,
              std::string *why) {
  if (ys.size() != m->outputs.size()) {
    *why = "forward returned " + std::to_string(ys.size()) + " tensors, not " +
           std::to_string(m->outputs.size());
    return ISV_EBACKEND;
  }
  for (size_t k = 0; k < ys.size(); k++) {
    const out_decl &o = m->outputs[k];
    if (!isv_request_is_output_requested(req, o.name.c_str())) continue;
    at::Tensor y = ys[k].contiguous();  // the same tensor when it already is (the usual case)
    if (datatype_of(y.scalar_type()) != o.dt || y.dim() < 1 || y.size(0) != rows) {
      *why = "forward's " + o.name + " is " + c10::toString(y.scalar_type()) + " " +
             c10::str(y.sizes()) + " for " + std::to_string(rows) + " rows";
      return ISV_EBACKEND;
    }
    int rc;
    if (y.numel() == 0) {  // nothing to hold (and data_ptr may be null)
      void *unused;
      rc = isv_request_alloc_output(req, o.name.c_str(), o.dt, y.sizes().data(), (size_t)y.dim(),
                              &unused);
    } else {
      const void *p = y.data_ptr();
      {
        std::lock_guard<std::mutex> lock(held_mu);
        held.emplace(p, y);
      }
      // by reference: the library writes this memory to the client and calls release(p) when
      // the request is freed (or at once if the call fails)
      rc = isv_request_set_output(req, o.name.c_str(), o.dt, y.sizes().data(), (size_t)y.dim(),
                                  p, y.nbytes(), release);
    }
    if (rc != 0) return rc;
  }
  return 0;
}

int torch_infer(isv_request *req, void *user) {
  model *m = static_cast<model *>(user);
  const isv_tensor *in = isv_request_input(req, "INPUT__0");
  size_t ndim;
  const int64_t *shape = isv_tensor_shape(in, &ndim);  // [B, row_shape...]: checked by the library
  std::string why;
  int rc;
  try {
    c10::InferenceMode guard;  // no autograd bookkeeping (stronger than NoGradGuard)
    // the request's own memory, not copied; forward must not write to its input
    at::Tensor x = torch::from_blob(const_cast<void *>(isv_tensor_data(in)),
                                    at::IntArrayRef(shape, ndim), at::kFloat);
    rc = hand_back(req, m, tensors_of(m->module.forward({x})), shape[0], &why);
  } catch (const c10::Error &e) {
    rc = ISV_EBACKEND;
    why = last_line(e.what_without_backtrace());
  } catch (const std::exception &e) {
    rc = ISV_EBACKEND;
    why = last_line(e.what());
  }
  return isv_request_complete(req, rc, why.empty() ? nullptr : why.c_str());
}

// The per-row input shape (see the top of this file); empty when the module does not say.
std::vector<int64_t> input_row_shape(const torch::jit::Module &mod) {
  if (mod.hasattr("input_shape")) {
    c10::IValue v = mod.attr("input_shape");
    if (v.isIntList()) return v.toIntVector();
  }
  for (const at::Tensor &p : mod.parameters()) {
    if (p.dim() == 2) return {p.size(1)};
    break;  // the first parameter only: a later one says nothing about the input
  }
  return {};
}

int load(model &m, const char *path) {
  try {
    m.module = torch::jit::load(path, at::kCPU);
    m.module.eval();
    auto schema = m.module.get_method("forward").function().getSchema();
    if (schema.arguments().size() != 2) {  // self + one tensor
      std::fprintf(stderr, "inferserve-torch: '%s': forward takes %zu arguments; this example "
                   "serves modules whose forward takes one tensor\n", path,
                   schema.arguments().size() - 1);
      return -1;
    }
    m.row_shape = input_row_shape(m.module);
    if (m.row_shape.empty()) {
      std::fprintf(stderr, "inferserve-torch: '%s': cannot tell the input's shape: give the "
                   "module an `input_shape: List[int]` attribute (the per-row dims)\n", path);
      return -1;
    }
    // a probe row of zeros: the outputs' types and shapes. Twice: the profiling executor
    // optimizes the graph after its first run, so that no client request pays for it.
    std::vector<int64_t> probe_shape{1};
    probe_shape.insert(probe_shape.end(), m.row_shape.begin(), m.row_shape.end());
    c10::InferenceMode guard;
    std::vector<at::Tensor> ys;
    for (int i = 0; i < 2; i++) ys = tensors_of(m.module.forward({torch::zeros(probe_shape)}));
    for (size_t k = 0; k < ys.size(); k++) {
      const at::Tensor &y = ys[k];
      out_decl o{"OUTPUT__" + std::to_string(k), datatype_of(y.scalar_type()), {}};
      if (o.dt == ISV_TYPE_INVALID || y.dim() < 1 || y.size(0) != 1) {
        std::fprintf(stderr, "inferserve-torch: '%s': output %zu is %s %s, not one row of a "
                     "served type\n", path, k, c10::toString(y.scalar_type()),
                     c10::str(y.sizes()).c_str());
        return -1;
      }
      for (int64_t d = 1; d < y.dim(); d++) o.row_shape.push_back(y.size(d));
      m.outputs.push_back(std::move(o));
    }
  } catch (const c10::Error &e) {
    std::fprintf(stderr, "inferserve-torch: cannot load '%s': %s\n", path,
                 e.what_without_backtrace());
    return -1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "inferserve-torch: cannot load '%s': %s\n", path, e.what());
    return -1;
  }
  return 0;
}

int serve(model &m, const char *name, const char *host, int port, uint32_t max_batch,
          uint64_t delay_us, uint32_t instances) {
  // shapes per row: with a max batch, the library adds the batch dimension (-1)
  isv_model_config *cfg;
  int rc = isv_model_config_new(name, &cfg);
  if (rc == 0) rc = isv_model_config_add_input(cfg, "INPUT__0", ISV_FP32, m.row_shape.data(),
                                               m.row_shape.size());
  for (const out_decl &o : m.outputs)
    if (rc == 0) rc = isv_model_config_add_output(cfg, o.name.c_str(), o.dt, o.row_shape.data(),
                                                  o.row_shape.size());
  if (rc == 0) rc = isv_model_config_set_platform(cfg, "pytorch_libtorch");
  if (rc == 0) rc = isv_model_config_set_max_batch(cfg, max_batch);
  if (rc == 0) rc = isv_model_config_set_exec_mode(cfg, ISV_EXEC_POOL);
  if (rc == 0) rc = isv_model_config_set_instances(cfg, instances);
  if (rc == 0) rc = isv_model_config_set_dynamic_batching(cfg, delay_us, nullptr, 0);
  isv_backend be{};
  be.struct_size = sizeof be;
  be.infer = torch_infer;
  if (rc == 0) rc = isv_server_add_model(server, cfg, "1", &be, &m, nullptr);
  isv_model_config_free(cfg);
  // Vertex AI's custom-container contract: its routes, as AIP_* name them
  const char *pr = std::getenv("AIP_PREDICT_ROUTE"), *hr = std::getenv("AIP_HEALTH_ROUTE");
  if (rc == 0)
    rc = isv_server_set_vertex_routes(server, name, pr && *pr ? pr : "/predict",
                                      hr && *hr ? hr : "/health");
  if (rc == 0) rc = isv_server_listen(server, host, port);
  if (rc != 0) {
    std::fprintf(stderr, "inferserve-torch: %s (%s)\n", isv_strerror(rc),
                 isv_server_last_error(server));
    return -1;
  }
  std::string dims;
  for (int64_t d : m.row_shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  std::printf("inferserve-torch serving %s (input [%s], %zu outputs) on %d\n", name, dims.c_str(),
              m.outputs.size(), isv_server_bound_port(server, 0));
  std::fflush(stdout);
  return 0;
}

void on_closed(isv_server *, void *) {
  uv_close(reinterpret_cast<uv_handle_t *>(&sig_int), nullptr);
  uv_close(reinterpret_cast<uv_handle_t *>(&sig_term), nullptr);
}

void on_signal(uv_signal_t *, int) {
  uv_signal_stop(&sig_int);
  uv_signal_stop(&sig_term);
  isv_server_close(server, on_closed, nullptr);
}

int usage() {
  std::fprintf(stderr, "usage: inferserve-torch --model FILE [--name NAME] [--host H] [--port N] "
                       "[--max-batch N] [--batch-delay-us N] [--instances N]\n");
  return 2;
}

int number(const char *s, unsigned long long max, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end || v > max) return -1;
  *out = v;
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const char *path = nullptr, *name = "mlp", *host = "127.0.0.1";
  unsigned long long port = 8000, max_batch = 64, delay_us = 500, instances = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (v == nullptr) return usage();
    i++;
    if (std::strcmp(a, "--model") == 0) path = v;
    else if (std::strcmp(a, "--name") == 0) name = v;
    else if (std::strcmp(a, "--host") == 0) host = v;
    else if ((std::strcmp(a, "--port") == 0 && number(v, 65535, &port) == 0) ||
             (std::strcmp(a, "--max-batch") == 0 && number(v, 1u << 20, &max_batch) == 0 &&
              max_batch > 0) ||
             (std::strcmp(a, "--batch-delay-us") == 0 && number(v, 10000000, &delay_us) == 0) ||
             (std::strcmp(a, "--instances") == 0 && number(v, 64, &instances) == 0 &&
              instances > 0))
      continue;
    else return usage();
  }
  if (path == nullptr) return usage();
  std::signal(SIGPIPE, SIG_IGN);  // a client that leaves mid-answer must not end the process
  // One intra-op thread: each forward runs on the worker that took it, and --instances sets how
  // many run at once. (Torch's default, a thread per core inside every forward, would
  // oversubscribe the cores as soon as two instances run, and costs a fork/join per op on the
  // small batches a server sees.) Set before the first forward; workers pick it up lazily.
  at::set_num_threads(1);
  at::set_num_interop_threads(1);
  model m;
  if (load(m, path) != 0) return 1;
  uv_loop_init(&loop);
  if (isv_server_new(&loop, nullptr, &server) != 0) return 1;
  if (serve(m, name, host, (int)port, (uint32_t)max_batch, delay_us, (uint32_t)instances) != 0)
    return 1;
  uv_signal_init(&loop, &sig_int);
  uv_signal_init(&loop, &sig_term);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_term, on_signal, SIGTERM);
  uv_run(&loop, UV_RUN_DEFAULT);
  return uv_loop_close(&loop) == 0 ? 0 : 1;
}
