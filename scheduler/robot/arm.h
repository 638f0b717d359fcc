// A simulated arm consuming action chunks (SYSTEMS.md system 4; issue 47): the robot of a
// control stream stepped tick by tick, as the simulator's analysis (reports/control.h) says it
// runs and as the real runtime runs it live against chunks really inferred. Plain C++.
//
// The arm ticks at tick0 + k / hz (hz: its control rate at the speed run). Request i's
// observation is taken at o_i (on the tick grid, every `execute` ticks, up to the stream's
// jitter) and its chunk of H actions takes effect at r_i (end of inference + actuation).
// Action a of chunk i is meant for time o_i + a / hz. At each tick the arm runs the newest
// chunk that has taken effect (the ready one observed last) and executes its action meant for
// the tick (the nearest: round((t - o_i) hz)): the actions before it, passed while the chunk
// was inferred, are skipped (the frozen prefix of real-time chunking). Once the chunk's last
// action is past the arm holds its position: a dry tick while a chunk it asked for is still on
// its way (it ran dry); an idle one when none is (its task is done). Ticks before any chunk
// has taken effect wait.
//
// With observations on the tick grid this is the control analysis tick by tick: a chunk's
// first action is its frozen count ceil((r_i - o_i) hz), the chunk runs dry exactly when the
// analysis's dry time is positive, for ceil(dry time x hz) ticks, as long as chunks take effect
// in the order they were asked for and none arrives with every action passed. Otherwise the
// arm is what happens and the analysis an approximation: a newer chunk in effect first replaces
// the older at once (the analysis waits for the older), and the dry time of a chunk that
// arrives spent is counted once here, where the analysis counts its overlap twice.
#pragma once

#include <cstddef>
#include <vector>

namespace vlasim {

// One request of the stream the arm drives.
struct ArmRequest {
  double observed_s = 0;  // o_i
  double ready_s = -1;    // r_i; < 0: its chunk never took effect (unfinished, failed, dropped)
};

struct ArmTick {
  long k = 0;          // tick index: at tick0 + k / hz
  double late_s = 0;   // how late it ran (a live arm; 0 simulated)
  int chunk = -1;      // request whose chunk ran or held; -1: waiting for the first
  int action = -1;     // action executed; -1 when it held (dry or idle) or waited
  bool dry = false;    // held while a chunk asked for was on its way
};

// Per request: what the arm did with its chunk.
struct ArmChunk {
  // The action due when it took effect (those before it skipped; H: every one passed, none
  // executed); -1: it never took effect (a newer chunk did first).
  int first_action = -1;
  int executed = 0;       // actions executed
  int dry_ticks = 0;      // ticks held after it ran out while the next was on its way
};

struct ArmRun {
  int chunk = 0;           // H
  double hz = 0;
  std::vector<ArmTick> ticks;
  std::vector<ArmChunk> chunks;  // per request, in observation order
  size_t ran = 0;                // chunks that took effect
  size_t executed = 0;           // actions executed
  size_t waiting_ticks = 0, dry_ticks = 0, idle_ticks = 0;
  size_t dry_chunks = 0;         // chunks after which the arm ran dry
  int skipped_p50 = 0;           // first action, median over chunks that took effect (the frozen prefix)
  int usable_min = 0;            // H - the largest first action over those (H when none did)
  double late_p50_s = 0, late_p99_s = 0, late_max_s = 0;  // tick lateness (a live arm)
};

// The arm of one control stream, stepped a tick at a time: chunks become ready as they arrive
// (a live arm) or are all known up front (a simulated one).
class Arm {
 public:
  // `observed`: the requests' observation times in the order of their requests (ascending).
  // REQUIRES: chunk > 0, hz > 0.
  Arm(int chunk, double hz, double tick0_s, std::vector<double> observed);
  // Request i's chunk takes effect at ready_s (a tick at or after it may run it).
  void ready(size_t request, double ready_s);
  int chunk() const { return chunk_; }
  double hz() const { return hz_; }
  // The time of tick k.
  double tick_time(long k) const { return tick0_ + static_cast<double>(k) / hz_; }
  // The first tick at or after time t.
  long first_tick_at(double t) const;
  // Runs tick k (ticks in increasing order), `late_s` late.
  void tick(long k, double late_s = 0);
  // Every request observed by the last tick and the newest chunk ran out with none on its way.
  bool done() const { return done_; }
  // What it did so far.
  ArmRun result() const;

 private:
  int chunk_;
  double hz_, tick0_;
  std::vector<double> observed_, ready_;
  ArmRun run_;
  int newest_ = -1;   // the chunk in effect at the last tick
  size_t seen_ = 0;   // requests observed by the last tick
  bool done_ = false;
};

// A simulated arm over requests whose ready times are all known: every tick from the first at
// or after time 0 to the last before end_s (or until it is done).
ArmRun run_arm(int chunk, double hz, double tick0_s, const std::vector<ArmRequest>& requests, double end_s);

}  // namespace vlasim
