// SIGINT and SIGTERM as a request to end a run early: the first one only sets a flag that the
// run's stop hook reads (SimOptions::should_stop, ExecuteOptions::should_stop), so the command
// can write what ran, marked partial, and exit 128 + the signal's number; a second one kills.
#pragma once

#include <csignal>
#include <string>

namespace vlasim {

// While one is alive, SIGINT and SIGTERM are caught, installed with sigaction whatever their
// action was before (also SIGINT ignored, as in a background job started by a non-interactive
// shell). The first of them to arrive is recorded, and both go back to their default action,
// so a second one kills the process at once. The destructor puts back the actions found by
// the constructor; the recorded signal stays readable until the next StopSignals is made.
// One at a time per process: constructing a second while one is alive throws std::logic_error.
class StopSignals {
 public:
  StopSignals();  // forgets any signal recorded before
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // 0 until a signal arrived, then its number (SIGINT or SIGTERM). Safe from any thread.
  static int received();
  // "" until a signal arrived, then "interrupted (SIGINT)" or "terminated (SIGTERM)": the
  // answer for a stop hook (`[] { return StopSignals::reason(); }`).
  static std::string reason();
  // The exit status for a run a signal ended: 130 for SIGINT, 143 for SIGTERM; 0 for none.
  static int exit_status();

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

}  // namespace vlasim
