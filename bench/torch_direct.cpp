// torch_direct: a TorchScript module's forward called in a loop on one row, without the
// library — the same call examples/torch makes per batch (the row wrapped with
// torch::from_blob, one intra-op thread, InferenceMode). The native reference of
// bench/runtimes.sh.
//
//   torch_direct MODEL.pt ROW.f32 SECONDS    prints JSON: calls, seconds, rps, p50/p99/mean_ms
//
// ROW.f32: the row's little-endian float32 values (shape [1, file size / 4]).
#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: torch_direct MODEL.pt ROW.f32 SECONDS\n");
    return 2;
  }
  std::vector<float> row(4096);
  FILE *f = std::fopen(argv[2], "rb");
  size_t n = f ? std::fread(row.data(), sizeof(float), row.size(), f) : 0;
  if (f) std::fclose(f);
  if (n == 0) return 1;
  at::set_num_threads(1);
  at::set_num_interop_threads(1);
  torch::jit::Module m = torch::jit::load(argv[1], at::kCPU);
  m.eval();
  c10::InferenceMode guard;
  at::Tensor x = torch::from_blob(row.data(), {1, (int64_t)n}, at::kFloat);
  using clock = std::chrono::steady_clock;
  for (auto end = clock::now() + std::chrono::seconds(1); clock::now() < end;)  // warm-up
    m.forward({x});
  std::vector<int64_t> lat;
  lat.reserve(1 << 20);
  auto start = clock::now();
  auto stop = start + std::chrono::duration<double>(std::atof(argv[3]));
  clock::time_point t1;
  do {
    auto t0 = clock::now();
    at::Tensor y = m.forward({x}).toTensor();
    t1 = clock::now();
    lat.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
  } while (t1 < stop);
  double elapsed = std::chrono::duration<double>(clock::now() - start).count();
  std::sort(lat.begin(), lat.end());
  double sum = 0;
  for (int64_t v : lat) sum += (double)v;
  std::printf("{\"calls\": %zu, \"seconds\": %.3f, \"rps\": %.1f, \"p50_ms\": %.6f, "
              "\"p99_ms\": %.6f, \"mean_ms\": %.6f}\n", lat.size(), elapsed,
              (double)lat.size() / elapsed, (double)lat[lat.size() / 2] / 1e6,
              (double)lat[lat.size() * 99 / 100] / 1e6, sum / (double)lat.size() / 1e6);
  return 0;
}
