// Control analysis of a run (SYSTEMS.md system 4; issue 13): for each request of a stream with
// `control:` (scenarios/scenario.h ControlDecl), a robot executing action chunks of H actions
// at `hz`, asking for the next chunk every `execute` actions.
//
// Delay identification. Request i's observation is taken at o_i = arrival - capture; its chunk
// takes effect at r_i = end + actuation. The control delay d_i = r_i - o_i splits into
// capture, queueing (start - arrival), each stage's time (first start to last end), the rest
// of the run (transfers and waits between stages: end - start - the stages) and actuation.
//
// Real-time chunking. Action k of chunk i is meant for time o_i + k / hz. When the chunk
// takes effect, its first ceil(d_i hz) actions are already past or under way: that prefix is
// frozen to the previous chunk's actions (RTC inpaints the new chunk to agree with it) and the
// rest, H - frozen, is usable. The robot runs chunk i until chunk i+1 takes effect; if that
// is after o_i + H / hz, chunk i ran out and the robot ran dry for the difference (a request
// that never finished leaves its predecessor to run dry to the end of the run).
//
// For a stream that runs only some stages (full streaming), the delay starts at its own
// request's observation; the older prefix it read is its staleness (make_streaming_report).
//
// Control-bounded rate. At the run's arrival times and delays, no chunk runs out as long as
// hz <= min_i H / (r_{i+1} - o_i): the highest control rate the scenario bounds. A sweep over
// a constant delay d (in actions) gives the usable part H - d and whether a robot asking
// every `execute` actions runs dry (d > H - execute).
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "scheduler/robot/arm.h"
#include "sim/engine/engine.h"

namespace vlasim {

struct ControlRow {
  uint64_t request = 0;
  int stream = 0;
  bool finished = false;
  double observed_s = 0, ready_s = 0;    // o_i, r_i (ready: when it takes effect)
  double capture_s = 0, queue_s = 0, other_s = 0, actuation_s = 0;
  double stage_s[kStages] = {};           // each stage's time, 0 where it did not run
  double delay_s = 0;                     // r_i - o_i
  int frozen = 0, usable = 0;             // actions of its chunk
  double dry_s = 0;                       // time the robot had no action left after this chunk
};

struct ControlStream {
  int stream = 0;
  std::string name, model;
  ControlDecl control;
  int chunk = 0;
  size_t requests = 0, unfinished = 0;
  double delay_p50 = 0, delay_p99 = 0, delay_max = 0;
  double mean_s[kStages + 4] = {};        // capture, queue, stages, other, actuation (means)
  int frozen_p50 = 0, frozen_max = 0, usable_min = 0;
  size_t dry_chunks = 0;
  double dry_s = 0;
  double bound_hz = 0;                    // the control-bounded rate (0: fewer than two chunks)
};

struct ControlReport {
  std::vector<ControlStream> streams;     // the scenario's control streams, in order
  std::vector<ControlRow> rows;           // their requests, by stream then arrival
};

// The analysis of run `r` of `s` (empty when no stream has control:).
ControlReport make_control_report(const Scenario& s, const SimResult& r);
// The simulated arm (scheduler/robot/arm.h) over control stream `cs` of `c`, the analysis of
// run `r` of `s`: its requests' observation and ready times, ticks on the grid of its
// observations (start - capture, every 1 / hz) from time 0 to the run's end as the analysis
// takes it (max of the last end and the horizon). With observations on that grid (no jitter)
// its first actions are the frozen counts, and it runs dry after the chunks the analysis says,
// for ceil(dry time x hz) ticks each.
ArmRun control_arm(const Scenario& s, const SimResult& r, const ControlReport& c, const ControlStream& cs);
// Markdown: per stream its delays, the mean split of the delay, frozen and usable actions,
// running dry, the bounded rate and the sweep over a constant delay.
std::string control_markdown(const ControlReport& c);
// One row per request (SI units): the delay's parts, frozen, usable, dry time.
std::string control_csv(const ControlReport& c);
// A Markdown section comparing the control analysis of a simulated run with a real one of the
// same scenario, stream by stream: delay p50 and max, frozen prefix p50, chunks that ran dry
// and the bounded rate, predicted, measured and their ratio.
std::string control_comparison(const ControlReport& predicted, const ControlReport& measured);
// Writes control.md, control.csv and, when gnuplot is on PATH, control_delay.svg (the delay of
// each of the first 200 requests of each stream, stacked by part) into `dir`; returns the
// files written, with a warning for a missing gnuplot or a failed plot.
std::vector<std::string> write_control(const ControlReport& c, const std::string& dir,
                                       std::vector<std::string>* warnings);

// Full streaming (SYSTEMS.md system 4): a model's streams that run only some of its stages
// (StreamDecl::stages), e.g. a VLM stream at camera rate and action-expert streams at control
// rate. Per stream: the rate it asked for and the rate it got (requests finished while it
// issued them, over its duration: a saturated stream gets its unit's throughput), latency, deadline misses, and the staleness of the context each request read
// (its start minus the end of the latest finished request that ran the stage before its
// first: how old the prefix an action used was; requests that started before any had count
// as without context).
struct StreamingRow {
  std::string name, model, stages;
  double rate_hz = 0, achieved_hz = 0;
  size_t requests = 0, finished = 0, misses = 0, no_context = 0;  // finished: within the window
  double latency_p50 = 0, latency_p99 = 0;
  double stale_p50 = 0, stale_p99 = 0, stale_max = 0;  // 0 when the stream reads no context
  bool reads_context = false;
};
// Every stream of `s` when any runs only some stages, else none.
std::vector<StreamingRow> make_streaming_report(const Scenario& s, const SimResult& r);
std::string streaming_markdown(const std::vector<StreamingRow>& rows);
std::string streaming_csv(const std::vector<StreamingRow>& rows);
// Predicted beside measured, per stream: achieved rate, latency p50, staleness p50 and misses.
std::string streaming_comparison(const std::vector<StreamingRow>& predicted, const std::vector<StreamingRow>& measured);

}  // namespace vlasim
