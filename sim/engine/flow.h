// The life of requests, apart from how time passes: admission by the pipeline policy,
// per-unit queues ordered by the queue policy, the walk through a model's segments, and the
// records the reports read. The simulator (sim/engine/engine.cc) and the real runtime
// (executors/runtime/runtime.cc) both drive one of these, so the same policy objects decide in both.
// No SystemC, no oneDNN. Not thread-safe: the real runtime calls it under one lock.
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "scenarios/scenario.h"
#include "scheduler/policy.h"
#include "scheduler/zone.h"
#include "sim/engine/result.h"
#include "sim/engine/plan.h"

namespace vlasim {

class RequestFlow {
 public:
  // Called when a free unit should start `item` now (segment item.segment of request
  // item.request, at batch size item.batch: the segment runs once for the batch, whose other
  // items the flow keeps). The caller later reports the end through segment_done().
  using StartFn = std::function<void(int unit, const WorkItem& item)>;

  // Called with each request's record once, in id (arrival) order, when it and every earlier
  // request have finished (or at flush()).
  using RecordSink = std::function<void(const RequestRecord&)>;

  // Makes the scenario's queue and pipeline policies. Records go to out.requests, or, given
  // a sink, to the sink as they leave (constant memory: only requests in flight, and those
  // behind the oldest unfinished one, are held).
  RequestFlow(const Scenario& s, const Plan& p, SimResult& out, size_t trace_limit, StartFn start,
              RecordSink sink = nullptr);
  // Requests of streams with a group (StreamDecl::group) go to the instance `router` picks
  // (not owned; it must outlive the flow). Without one they go to the stream's own model.
  void set_router(Router* router) { router_ = router; }
  // Hands the sink every record still held, finished or not (at the end of a run).
  void flush();

  // A request of stream `stream` arrived at time t (also the current time). With
  // Scenario::queue_limit requests waiting it is dropped instead: its record ends there.
  void arrive(int stream, double t) { arrive(stream, t, t); }
  // A request of stream `stream` arrived at time t, handed over at the current time
  // now >= t (a real run's arrival thread may hand it over late): its record keeps t, its
  // start is no earlier than now.
  void arrive(int stream, double t, double now);
  // The segment of `item` (the lead of its batch: every item of the batch moves on) that
  // started at `start` on `unit` finished at `end` (the current time). `stage_seconds` (by
  // Stage index) splits its duration in proportion among the stages the plan's segment holds;
  // other stages' entries are ignored. The first `lead` seconds of it (0 <= lead < end - start;
  // clamped) belong to no stage: the simulator's share of the runtime's hand-off time between
  // segments (Segment::outside), which a real run's segment interval does not hold.
  void segment_done(int unit, const WorkItem& item, double start, double end,
                    const double* stage_seconds, double lead = 0);

  // Segment `item` failed on `unit` (a real executor threw) between start and end (now): the
  // requests of its batch end there, failed and unfinished, and the unit takes its next item.
  void segment_failed(int unit, const WorkItem& item, double start, double end);

  size_t requests() const { return issued_; }
  size_t finished() const { return finished_; }
  size_t failed() const { return failed_; }
  size_t dropped() const { return dropped_; }  // at a full queue (Scenario::queue_limit)
  size_t ended() const { return finished_ + failed_ + dropped_; }
  // Requests arrived and not yet started (nor dropped).
  size_t waiting() const { return waiting_count_; }
  // Records held: with a sink, those from the oldest request not ended on; else all.
  size_t held() const { return sink_ ? live_.size() : out_.requests.size(); }

 private:
  RequestRecord& rec(uint64_t id) { return sink_ ? live_[id - live_base_] : out_.requests[id]; }
  // Hands the sink the finished records at the front of live_.
  void release();
  // Ends request `rec` at `end` (finished, or failed when rec.failed): frees its place in the
  // pipeline window for the next waiting request.
  void end_request(RequestRecord& rec, double end);
  void admit(uint64_t id, double now);
  // The plan a newly admitted request of model m follows (its zone policy's choice).
  int choose_plan(int m, double now);
  void enqueue(uint64_t id, int segment, double now);
  void dispatch(int unit, double now);
  // Forms the batch a free `unit` runs next into running_[unit]; false when none waits.
  bool form_batch(int unit, double now);
  // Starts running_[unit] now, its stream limited to `sms` SMs (0: the stream's own).
  void launch(int unit, double now, int sms);
  // Starts lockstep l's next lockstep when both its streams are free and either has work.
  void start_lockstep(int l, double now);
  // Sets rec.start (and a stage stream's context_end) when `rec` first starts on a unit.
  void mark_start(RequestRecord& rec, double now);

  const Scenario& s_;
  const Plan& p_;
  SimResult& out_;
  size_t trace_limit_;
  StartFn start_;
  std::unique_ptr<QueuePolicy> queue_;
  std::unique_ptr<BatchPolicy> batching_;
  std::vector<std::vector<WorkItem>> running_;  // per unit: the batch it runs, lead first
  std::vector<int> lockstep_of_;  // per unit: index into Plan::locksteps, or -1
  std::vector<int> split_;        // per lockstep: the first stream's SMs when both last ran (0: none yet)
  // While a batch moves on (segment_done), dispatches wait here and run once all its items
  // have moved, so a unit never starts with part of a batch that arrives together.
  bool holding_ = false;
  std::vector<int> held_;
  // V-AEFusion: requests with one of their two chains still running before the join.
  std::set<uint64_t> join_waiting_;
  std::vector<int> window_, in_flight_;
  std::vector<std::deque<uint64_t>> waiting_;
  std::vector<std::vector<WorkItem>> unit_queue_;
  std::vector<char> unit_busy_;
  // Per plan and segment: the stages (bit k: Stage k) whose first / last segment it is.
  struct StageSpan {
    uint8_t first = 0, last = 0;
  };
  std::vector<std::vector<StageSpan>> stage_span_;
  // Per plan and segment: the stages its ops belong to (bit k: Stage k); a transfer takes
  // those of the segment after it (whose inputs it carries).
  std::vector<std::vector<uint8_t>> seg_stages_;
  // Whether request `rec` runs segment k (its stream's stages; every segment without them).
  bool runs(const RequestRecord& rec, int k) const;
  // The first segment >= k that `rec` runs, or -1.
  int next_segment(const RequestRecord& rec, int k) const;
  // V-AEFusion's join: request `rec`'s chain reached segment `next` at `now`; true when it
  // may run (not a join, or the other chain is done too), false when it waits for the other.
  bool reach(const RequestRecord& rec, int next);
  // The admission window a request belongs to: its model, or its own stream when the stream
  // runs only some stages (indices p.models.size() + stream).
  size_t flow_key(const RequestRecord& rec) const;
  // Per scenario model and stage: when the stage last ended (in any request).
  std::vector<std::array<double, kStages>> last_stage_end_;
  size_t finished_ = 0, failed_ = 0, dropped_ = 0, waiting_count_ = 0;
  RecordSink sink_;
  Router* router_ = nullptr;
  std::deque<RequestRecord> live_;  // with a sink: records from id live_base_ on
  uint64_t live_base_ = 0, issued_ = 0;
  // Dynamic-zone signals per unit: observed / predicted duration (EWMA), and the running
  // segment's start and prediction.
  std::vector<std::unique_ptr<ZonePolicy>> zone_;  // per scenario model, null without a zone
  std::vector<std::vector<ZoneCandidate>> zone_candidates_;  // per model: its variants' cuts
  std::vector<size_t> zone_configured_;  // per model: index of its own cut among them
  std::vector<double> slowdown_, running_start_, running_estimate_;
};

}  // namespace vlasim
