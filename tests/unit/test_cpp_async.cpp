// include/inferserve.hpp's asynchronous backends (server::add_async_model, isv::async_request):
// a request completed later from another std::thread — with outputs, with an error, with an
// exception; a handle dropped without completing (in the lambda, in another thread, replaced by
// a move) answered with an error at once; cancellation (isv_request_cancel, a deadline) seen by
// the thread that holds the handle; a decoupled model sending responses from its thread; POOL
// mode; the misuse of an empty handle; the lambda freed with the server. Requests go in
// process. Run under TSan too (build-tsan).
#include <inferserve.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
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

// The threads the backends start; joined before the test ends.
struct thread_list {
  std::mutex mu;
  std::vector<std::thread> v;
  template <class F>
  void spawn(F &&f) {
    std::lock_guard<std::mutex> lock(mu);
    v.emplace_back(std::forward<F>(f));
  }
  void join() {
    std::vector<std::thread> all;
    {
      std::lock_guard<std::mutex> lock(mu);
      all.swap(v);
    }
    for (auto &t : all) t.join();
  }
};

struct outcome {
  int calls = 0;
  int status = 1;
  std::string message;
  std::vector<float> y;
  std::vector<std::vector<float>> responses;  // a decoupled model's, in order
};

void read_y(const isv_request *q, std::vector<float> &into) {
  if (const isv_tensor *t = isv_request_output(q, "y")) {
    isv::tensor_view y(t);
    for (float v : y.data<float>()) into.push_back(v);
  }
}

// Submit one FP32 request of x to `model`; its outcome fills `o` (which must outlive it).
isv_request *submit(isv::server &srv, const char *model, const std::vector<float> &x,
                    outcome &o, bool decoupled = false) {
  isv_request *r = nullptr;
  if (isv_request_new(srv.get(), model, nullptr, &r) != 0) return nullptr;
  const int64_t shape[] = {static_cast<int64_t>(x.size())};
  CHECK(isv_request_add_input(r, "x", ISV_FP32, shape, 1, x.data(), x.size() * sizeof(float),
                              ISV_TRANSIENT) == 0);
  if (decoupled)
    CHECK(isv_request_set_response_cb(r, [](isv_request *resp, int, void *data) {
      auto *out = static_cast<outcome *>(data);
      out->responses.emplace_back();
      read_y(resp, out->responses.back());
      isv_request_free(resp);
    }, &o) == 0);
  CHECK(isv_server_infer(srv.get(), r, [](isv_request *q, int status, void *data) {
    auto *out = static_cast<outcome *>(data);
    out->calls++;
    out->status = status;
    out->message = isv_request_error_message(q);
    read_y(q, out->y);
    isv_request_free(q);
  }, &o) == 0);
  return r;
}

void wait(uv_loop_t *loop, const outcome &o) {
  while (o.calls == 0 && uv_run(loop, UV_RUN_ONCE) != 0) {
  }
  CHECK(o.calls == 1);
}

// One request, run to its end on the loop; `submitted` runs on the loop thread right after
// isv_server_infer (to cancel it, say).
outcome run(uv_loop_t *loop, isv::server &srv, const char *model, std::vector<float> x,
            const std::function<void(isv_request *)> &submitted = nullptr,
            bool decoupled = false) {
  outcome o;
  isv_request *r = submit(srv, model, x, o, decoupled);
  if (r == nullptr) return o;
  if (submitted) submitted(r);
  wait(loop, o);
  return o;
}

bool contains(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

isv::model_config xy(const char *name) {
  isv::model_config cfg(name);
  cfg.input("x", ISV_FP32, {-1}).output("y", ISV_FP32, {-1});
  return cfg;
}

// y = 2x, computed by whoever holds h.
void twice(isv::async_request &h) {
  auto x = h->input("x").data<float>();
  auto y = h->alloc_output<float>("y", h->input("x").shape());
  for (size_t i = 0; i < x.size(); i++) y[i] = 2 * x[i];
}

}  // namespace

int main() {
  const std::thread::id loop_thread = std::this_thread::get_id();
  thread_list threads;
  auto token = std::make_shared<int>(0);  // captured by every lambda: freed with the models
  uv_loop_t loop;
  CHECK(uv_loop_init(&loop) == 0);
  bool closed = false;
  {
    isv::server srv(&loop);

    // 1. Completed from another thread, with outputs. The lambda runs on the loop thread
    //    (ISV_EXEC_ASYNC by default) and returns at once; the thread completes.
    std::atomic<bool> ran_on_loop{false}, completed_elsewhere{false};
    srv.add_async_model(xy("later"), "1", [&, token](isv::async_request &h) {
      ran_on_loop = std::this_thread::get_id() == loop_thread;
      threads.spawn([&, h = std::move(h)]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the lambda returned
        twice(h);
        completed_elsewhere = std::this_thread::get_id() != loop_thread;
        h.complete();
        CHECK(!h);
      });
      CHECK(!h);  // moved from
    });
    outcome o = run(&loop, srv, "later", {1, -2, 0.5f});
    CHECK(o.status == 0 && (o.y == std::vector<float>{2, -4, 1}));
    CHECK(ran_on_loop && completed_elsewhere);

    // 2. Completed from another thread with an error: a code and text; an exception.
    srv.add_async_model(xy("later_fail"), "1", [&, token](isv::async_request &h) {
      threads.spawn([h = std::move(h)]() mutable {
        if (h->input("x").data<float>()[0] < 0)
          h.fail(ISV_EBADREQ, "x must be >= 0");
        else
          h.fail(std::make_exception_ptr(std::runtime_error("the GPU fell over")));
      });
    });
    o = run(&loop, srv, "later_fail", {-1});
    CHECK(o.status == ISV_EBADREQ && o.message == "x must be >= 0");
    o = run(&loop, srv, "later_fail", {1});
    CHECK(o.status == ISV_EBACKEND && o.message == "the GPU fell over");

    // 3. A handle dropped without completing, in another thread: an error answer at once.
    srv.add_async_model(xy("lost"), "1", [&, token](isv::async_request &h) {
      threads.spawn([h = std::move(h)]() mutable { twice(h); /* and forgets to complete */ });
    });
    o = run(&loop, srv, "lost", {1});
    CHECK(o.status == ISV_EBACKEND);
    CHECK(contains(o.message, "model 'lost' version '1'"));
    CHECK(contains(o.message, "dropped its isv::async_request without completing it"));
    CHECK(o.y.empty());

    // ... and in the lambda itself (it neither completed nor kept the handle).
    srv.add_async_model(xy("ignored"), "1", [token](isv::async_request &) {});
    o = run(&loop, srv, "ignored", {1});
    CHECK(o.status == ISV_EBACKEND && contains(o.message, "without completing it"));

    // 4. Exceptions: thrown while the lambda holds the handle, they are the request's error;
    //    thrown after the handle went to a thread, the holder's completion is the answer.
    srv.add_async_model(xy("throws"), "1", [token](isv::async_request &h) {
      if (h->input("x").data<float>()[0] < 0) throw isv::error(ISV_EBADREQ, "negative x");
      h->input("x").data<int32_t>();  // wrong type: the header's rule check throws
    });
    o = run(&loop, srv, "throws", {-1});
    CHECK(o.status == ISV_EBADREQ && o.message == "negative x");
    o = run(&loop, srv, "throws", {1});
    CHECK(o.status == ISV_EBACKEND && contains(o.message, "is FP32, not INT32"));
    srv.add_async_model(xy("throws_late"), "1", [&, token](isv::async_request &h) {
      threads.spawn([h = std::move(h)]() mutable {
        twice(h);
        h.complete();
      });
      throw std::runtime_error("not the request's any more");
    });
    o = run(&loop, srv, "throws_late", {3});
    CHECK(o.status == 0 && (o.y == std::vector<float>{6}));
    // A local handle unwound by an exception says so.
    srv.add_async_model(xy("unwound"), "1", [token](isv::async_request &h) {
      isv::async_request mine = std::move(h);
      throw std::runtime_error("lost on the way");
    });
    o = run(&loop, srv, "unwound", {3});
    CHECK(o.status == ISV_EBACKEND && contains(o.message, "threw an exception while"));

    // 5. Cancellation seen by the holder: isv_request_cancel while the thread works...
    std::atomic<bool> started{false}, saw_cancel{false};
    srv.add_async_model(xy("patient"), "1", [&, token](isv::async_request &h) {
      started = true;
      threads.spawn([&, h = std::move(h)]() mutable {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!h->cancelled() && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        saw_cancel = h->cancelled();
        h.fail(ISV_ECANCELED, "stopped: cancelled");
      });
    });
    o = run(&loop, srv, "patient", {1}, [&](isv_request *r) {
      while (!started) uv_run(&loop, UV_RUN_NOWAIT);  // the lambda has the request
      CHECK(isv_request_cancel(r) == 0);
    });
    CHECK(saw_cancel);
    CHECK(o.status == ISV_ECANCELED);
    // ... and a deadline passing (answered 504 whatever the backend completes with).
    isv::model_config slow = xy("deadline");
    slow.default_timeout_us(200000);  // 200 ms: long enough to start even under TSan
    started = false;
    saw_cancel = false;
    srv.add_async_model(slow, "1", [&, token](isv::async_request &h) {
      threads.spawn([&, h = std::move(h)]() mutable {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!h->cancelled() && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        saw_cancel = h->cancelled();
        h.fail(ISV_ECANCELED);
      });
    });
    o = run(&loop, srv, "deadline", {1});
    CHECK(saw_cancel);
    CHECK(o.status == ISV_EDEADLINE);

    // 6. Decoupled: responses sent from the thread, then the last one with completion.
    isv::model_config stream = xy("stream");
    stream.decoupled();
    srv.add_async_model(stream, "1", [&, token](isv::async_request &h) {
      threads.spawn([h = std::move(h)]() mutable {
        for (int i = 0; i < 3; i++) {
          auto y = h->alloc_output<float>("y", {1});
          y[0] = static_cast<float>(i);
          while (!h->send_response())  // ISV_EAGAIN: the client has not taken the last ones
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        h.complete();
      });
    });
    o = run(&loop, srv, "stream", {1}, nullptr, true);
    CHECK(o.status == 0);
    CHECK(o.responses.size() == 3);
    for (size_t i = 0; i < o.responses.size(); i++)
      CHECK((o.responses[i] == std::vector<float>{static_cast<float>(i)}));

    // 7. POOL mode: the lambda starts on a worker thread, another thread completes.
    isv::model_config pooled = xy("pooled");
    pooled.exec_mode(ISV_EXEC_POOL);
    std::atomic<bool> on_worker{false};
    srv.add_async_model(pooled, "1", [&, token](isv::async_request &h) {
      on_worker = std::this_thread::get_id() != loop_thread;
      threads.spawn([h = std::move(h)]() mutable {
        twice(h);
        h.complete();
      });
    });
    o = run(&loop, srv, "pooled", {4});
    CHECK(o.status == 0 && (o.y == std::vector<float>{8}) && on_worker);

    // 8. Move-assigning over a live handle drops the one it held: that request is answered
    //    at once; the other completes later on the loop thread.
    auto kept = std::make_shared<isv::async_request>();
    isv::model_config keep_cfg = xy("kept");
    keep_cfg.instances(2);  // both requests run at once
    srv.add_async_model(keep_cfg, "1", [kept](isv::async_request &h) { *kept = std::move(h); });
    outcome first, second;
    CHECK(submit(srv, "kept", {1}, first) != nullptr);
    while (!*kept) uv_run(&loop, UV_RUN_NOWAIT);  // the first is held, unanswered
    CHECK(first.calls == 0);
    CHECK(submit(srv, "kept", {2}, second) != nullptr);
    wait(&loop, first);  // replaced by the second: dropped
    CHECK(first.status == ISV_EBACKEND && contains(first.message, "without completing it"));
    CHECK(second.calls == 0 && *kept);
    (*kept)->alloc_output<float>("y", {1})[0] = 7;
    kept->complete();  // on the loop thread, after its lambda returned
    wait(&loop, second);
    CHECK(second.status == 0 && (second.y == std::vector<float>{7}));

    // 9. An empty handle: every use throws ISV_ESTATE; a completed one cannot complete again.
    isv::async_request empty;
    CHECK(!empty && empty.get() == nullptr && empty.release() == nullptr);
    try {
      empty.complete();
      CHECK(!"an empty handle completed");
    } catch (const isv::error &e) {
      CHECK(e.code() == ISV_ESTATE);
    }
    try {
      empty->id();
      CHECK(!"an empty handle gave its request");
    } catch (const isv::error &e) {
      CHECK(e.code() == ISV_ESTATE);
    }
    srv.add_async_model(xy("twice"), "1", [&, token](isv::async_request &h) {
      twice(h);
      h.complete();
      try {
        h.fail(ISV_EBACKEND, "second");
        CHECK(!"a second completion went through");
      } catch (const isv::error &e) {
        CHECK(e.code() == ISV_ESTATE);
      }
    });
    o = run(&loop, srv, "twice", {5});
    CHECK(o.status == 0 && (o.y == std::vector<float>{10}));

    // 10. Exec modes: INLINE cannot carry an asynchronous backend; a config left at its
    //     default runs ASYNC for add_async_model and stays INLINE for add_model.
    isv::model_config inl = xy("inline");
    inl.exec_mode(ISV_EXEC_INLINE);
    try {
      srv.add_async_model(inl, "1", [](isv::async_request &) {});
      CHECK(!"an INLINE asynchronous backend was accepted");
    } catch (const isv::error &e) {
      CHECK(e.code() == ISV_EINVAL && contains(e.what(), "cannot run ISV_EXEC_INLINE"));
    }
    isv::model_config both = xy("both");
    srv.add_async_model(both, "1", [&, token](isv::async_request &h) {
      threads.spawn([h = std::move(h)]() mutable {
        twice(h);
        h.complete();
      });
    });
    srv.add_model(both, "2", [token](isv::request &r) {
      auto y = r.alloc_output<float>("y", {1});
      y[0] = 42;
    });
    o = run(&loop, srv, "both", {1});  // the default version: the highest, "2" (inline)
    CHECK(o.status == 0 && (o.y == std::vector<float>{42}));
    try {
      srv.add_async_model(both, "1", [](isv::async_request &) {});
      CHECK(!"a duplicate version was accepted");
    } catch (const isv::error &e) {
      CHECK(e.code() == ISV_EEXIST && contains(e.what(), "already registered"));
    }

    threads.join();
    srv.close([&closed] { closed = true; });
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(closed);
  CHECK(token.use_count() == 1);  // every lambda deleted with its model
  CHECK(uv_loop_close(&loop) == 0);

  if (failures != 0) {
    std::fprintf(stderr, "test_cpp_async: %d check(s) failed\n", failures);
    return 1;
  }
  std::printf("test_cpp_async: ok\n");
  return 0;
}
