// A thread pinned to a core group that runs work handed to it, one call at a time.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace vlasim {

class CoreWorker {
 public:
  // Starts the thread, pins it to `cpus` (sched_setaffinity) and sets its OpenMP thread count
  // to cpus.size(). Throws std::runtime_error if pinning fails. REQUIRES: cpus non-empty.
  explicit CoreWorker(std::vector<int> cpus);
  ~CoreWorker();
  CoreWorker(const CoreWorker&) = delete;
  CoreWorker& operator=(const CoreWorker&) = delete;

  // Runs f() on the worker thread and waits for it; rethrows what f throws. No allocation
  // unless f throws. Calls from several threads are serialised.
  template <class F>
  void call(F& f) {
    invoke(&trampoline<F>, &f);
  }
  const std::vector<int>& cpus() const { return cpus_; }

 private:
  template <class F>
  static void trampoline(void* f) {
    (*static_cast<F*>(f))();
  }
  void invoke(void (*fn)(void*), void* arg);
  void loop();

  std::vector<int> cpus_;
  std::mutex call_mu_;  // one caller at a time
  std::mutex mu_;
  std::condition_variable cv_;
  void (*fn_)(void*) = nullptr;
  void* arg_ = nullptr;
  bool has_work_ = false, done_ = false, stop_ = false;
  std::exception_ptr err_;
  std::thread thread_;
};

}  // namespace vlasim
