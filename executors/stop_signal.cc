#include "executors/stop_signal.h"

#include <atomic>
#include <cerrno>
#include <stdexcept>

namespace vlasim {

namespace {

// Lock-free atomics are the only shared state a signal handler may touch.
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);
std::atomic<int> g_received{0};
std::atomic<bool> g_alive{false};

extern "C" void on_stop_signal(int sig) {
  const int saved = errno;
  int none = 0;
  g_received.compare_exchange_strong(none, sig);
  // A second signal takes the default action: it kills. (sigaction is async-signal-safe.)
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGINT, &dfl, nullptr);
  sigaction(SIGTERM, &dfl, nullptr);
  errno = saved;
}

}  // namespace

StopSignals::StopSignals() {
  if (g_alive.exchange(true)) throw std::logic_error("StopSignals: one is alive already");
  g_received = 0;
  struct sigaction sa = {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);  // one handler at a time
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = SA_RESTART;  // a write or read under way is not cut short by the first signal
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  g_alive = false;
}

int StopSignals::received() { return g_received.load(); }

std::string StopSignals::reason() {
  switch (received()) {
    case 0:
      return "";
    case SIGINT:
      return "interrupted (SIGINT)";
    case SIGTERM:
      return "terminated (SIGTERM)";
    default:
      return "signal " + std::to_string(received());
  }
}

int StopSignals::exit_status() {
  const int sig = received();
  return sig ? 128 + sig : 0;
}

}  // namespace vlasim
