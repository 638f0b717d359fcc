#include "executors/core_worker.h"

#include <omp.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace vlasim {

CoreWorker::CoreWorker(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  if (cpus_.empty()) throw std::invalid_argument("CoreWorker: empty core group");
  thread_ = std::thread([this] { loop(); });
  auto pin = [this] {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus_) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      throw std::runtime_error(std::string("sched_setaffinity failed: ") + std::strerror(errno));
    omp_set_num_threads(static_cast<int>(cpus_.size()));
    // Pin each thread of this worker's OpenMP team to one CPU of the group, so a thread woken
    // after an idle gap cannot land on the CPU its teammate is running on and wait for the
    // kernel's load balancing (seen as ~10 ms stalls on 2-core groups).
    if (cpus_.size() > 1) {
      int failed = 0;
#pragma omp parallel num_threads(static_cast<int>(cpus_.size())) reduction(+ : failed)
      {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus_[static_cast<size_t>(omp_get_thread_num())], &one);
        failed += sched_setaffinity(0, sizeof(one), &one) != 0;
      }
      if (failed) throw std::runtime_error("sched_setaffinity failed for an OpenMP thread");
    }
  };
  try {
    call(pin);
  } catch (...) {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    throw;
  }
}

CoreWorker::~CoreWorker() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CoreWorker::invoke(void (*fn)(void*), void* arg) {
  std::lock_guard<std::mutex> one(call_mu_);
  std::unique_lock<std::mutex> l(mu_);
  fn_ = fn;
  arg_ = arg;
  err_ = nullptr;
  done_ = false;
  has_work_ = true;
  cv_.notify_all();
  cv_.wait(l, [this] { return done_; });
  if (err_) {
    std::exception_ptr e = err_;
    err_ = nullptr;
    std::rethrow_exception(e);
  }
}

void CoreWorker::loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return has_work_ || stop_; });
    if (stop_) return;
    has_work_ = false;
    l.unlock();
    try {
      fn_(arg_);
    } catch (...) {
      err_ = std::current_exception();
    }
    l.lock();
    done_ = true;
    cv_.notify_all();
  }
}

}  // namespace vlasim
