// The rule by which a measuring test calls itself inconclusive on a busy machine
// (tests/busy_machine.h, issue 46): its thresholds, and a busy loop in another process making
// the watch say busy (so the gate skips, not passes, when other work crowds the machine).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "busy_machine.h"

namespace vlasim::testing {
namespace {

TEST(BusyMachine, RuleJudgesOtherWorkAndSentinelDriftByTheirLimits) {
  EXPECT_FALSE(judge_machine(0.0, 0.0).busy);
  EXPECT_FALSE(judge_machine(0.2, -0.2).busy);
  EXPECT_TRUE(judge_machine(0.3, 0.0).busy);
  EXPECT_TRUE(judge_machine(0.0, 0.4).busy);
  EXPECT_TRUE(judge_machine(0.0, -0.4).busy);
  EXPECT_TRUE(judge_machine(NAN, 0.0).busy);  // a figure that cannot be read is no proof of quiet
  EXPECT_NE(judge_machine(0.5, 0.1).text.find("50%"), std::string::npos);
}

// Other processes spinning on every CPU for 2 s: the watch over those seconds must see most of
// the machine taken, whatever the machine.
TEST(BusyMachine, ABusyLoopInAnotherProcessMakesTheMachineBusy) {
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<pid_t> children;
  const MachineWatch watch;
  for (long i = 0; i < cpus; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      volatile unsigned long x = 0;
      while (std::chrono::steady_clock::now() < end) x = x + 1;
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) waitpid(pid, nullptr, 0);
  const MachineVerdict v = watch.verdict();
  EXPECT_TRUE(v.busy) << v.text;
  EXPECT_GT(v.others_share, 0.5) << v.text;
}

}  // namespace
}  // namespace vlasim::testing
