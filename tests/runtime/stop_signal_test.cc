// SIGINT and SIGTERM as a request to stop a run (executors/stop_signal.h).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <stdexcept>
#include <thread>

#include "executors/stop_signal.h"

namespace vlasim {
namespace {

// The handler of `sig` now.
void (*handler_of(int sig))(int) {
  struct sigaction now = {};
  sigaction(sig, nullptr, &now);
  return now.sa_handler;
}

void set_handler(int sig, void (*h)(int)) {
  struct sigaction sa = {};
  sa.sa_handler = h;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

// Raises `sig` in this thread and waits (a sanitizer may hand it over late) until it is seen.
void raise_and_wait(int sig) {
  const int before = StopSignals::received();
  ASSERT_EQ(raise(sig), 0);
  for (int i = 0; i < 1000 && StopSignals::received() == before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(StopSignals, SigtermIsRecordedAsAStopWithExit143AndTheOldActionComesBack) {
  const auto old = handler_of(SIGTERM);
  {
    StopSignals signals;
    EXPECT_EQ(StopSignals::received(), 0);
    EXPECT_EQ(StopSignals::reason(), "");
    EXPECT_EQ(StopSignals::exit_status(), 0);
    raise_and_wait(SIGTERM);  // the process lives on
    EXPECT_EQ(StopSignals::received(), SIGTERM);
    EXPECT_EQ(StopSignals::reason(), "terminated (SIGTERM)");
    EXPECT_EQ(StopSignals::exit_status(), 143);
    // A second signal of either kind would kill: both are back to their default action.
    EXPECT_EQ(handler_of(SIGINT), SIG_DFL);
    EXPECT_EQ(handler_of(SIGTERM), SIG_DFL);
  }
  EXPECT_EQ(handler_of(SIGTERM), old);
  EXPECT_EQ(StopSignals::exit_status(), 143);  // still readable after the run
  StopSignals again;  // a new one forgets it
  EXPECT_EQ(StopSignals::received(), 0);
}

// A background job of a non-interactive shell starts with SIGINT ignored: it is caught all
// the same, and ignored again afterwards.
TEST(StopSignals, SigintIsCaughtEvenWhereItWasIgnored) {
  set_handler(SIGINT, SIG_IGN);
  {
    StopSignals signals;
    EXPECT_NE(handler_of(SIGINT), SIG_IGN);
    raise_and_wait(SIGINT);
    EXPECT_EQ(StopSignals::received(), SIGINT);
    EXPECT_EQ(StopSignals::reason(), "interrupted (SIGINT)");
    EXPECT_EQ(StopSignals::exit_status(), 130);
  }
  EXPECT_EQ(handler_of(SIGINT), SIG_IGN);
  set_handler(SIGINT, SIG_DFL);
}

TEST(StopSignals, OneAtATime) {
  StopSignals signals;
  EXPECT_THROW(StopSignals(), std::logic_error);
}

}  // namespace
}  // namespace vlasim
