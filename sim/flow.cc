#include "sim/flow.h"

#include <algorithm>
#include <cmath>

namespace vlasim {

RequestFlow::RequestFlow(const Scenario& s, const Plan& p, SimResult& out, size_t trace_limit,
                         StartFn start)
    : s_(s), p_(p), out_(out), trace_limit_(trace_limit), start_(std::move(start)) {
  queue_ = queue_policies().make(s.queue.name, s.queue.params, s.queue.where);
  auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  for (const auto& mp : p.models) window_.push_back(pipe->window(mp.pipeline_stages));
  in_flight_.assign(p.models.size(), 0);
  waiting_.resize(p.models.size());
  unit_queue_.resize(p.units.size());
  unit_busy_.assign(p.units.size(), 0);
  out_.units.resize(p.units.size());
  double expected = 0;  // requests the streams will issue, to size the record array once
  for (const auto& sd : s.streams) expected += sd.rate_hz * sd.duration_s * 1.05 + 16;
  out_.requests.reserve(static_cast<size_t>(std::min(expected, 5e7)));
}

void RequestFlow::arrive(int stream, double t) {
  const StreamDecl& sd = s_.streams[stream];
  RequestRecord rec;
  rec.id = out_.requests.size();
  rec.model = sd.model;
  rec.stream = stream;
  rec.arrival = t;
  rec.deadline = sd.deadline_s > 0 ? t + sd.deadline_s : 0;
  out_.requests.push_back(rec);
  if (in_flight_[sd.model] < window_[sd.model]) admit(rec.id, t);
  else waiting_[sd.model].push_back(rec.id);
}

void RequestFlow::segment_done(int unit, const WorkItem& item, double start, double end,
                               const double* stage_seconds) {
  RequestRecord& rec = out_.requests[item.request];
  const ModelPlan& mp = p_.models[rec.model];
  // Split the segment's interval among its stages in proportion to their share.
  double total = 0;
  for (int st = 0; st < kStages; ++st) total += stage_seconds[st];
  if (total > 0) {
    double at = start;
    for (int st = 0; st < kStages; ++st) {
      if (stage_seconds[st] <= 0) continue;
      double len = (end - start) * stage_seconds[st] / total;
      if (rec.stage_start[st] < 0) rec.stage_start[st] = at;
      rec.stage_latency[st] = at + len - rec.stage_start[st];
      at += len;
    }
  }
  UnitStats& us = out_.units[unit];
  us.busy_seconds += end - start;
  ++us.segments;
  if (out_.trace.size() < trace_limit_)
    out_.trace.push_back(TraceEvent{unit, start, end, item.request, rec.model, item.segment});
  else
    out_.trace_truncated = true;
  unit_busy_[unit] = 0;
  if (static_cast<size_t>(item.segment) + 1 < mp.segments.size()) {
    enqueue(item.request, item.segment + 1, end);
  } else {
    rec.end = end;
    ++finished_;
    --in_flight_[rec.model];
    auto& w = waiting_[rec.model];
    if (!w.empty()) {
      uint64_t next = w.front();
      w.pop_front();
      admit(next, end);
    }
  }
  dispatch(unit, end);
}

void RequestFlow::admit(uint64_t id, double now) {
  ++in_flight_[out_.requests[id].model];
  enqueue(id, 0, now);
}

void RequestFlow::enqueue(uint64_t id, int segment, double now) {
  const RequestRecord& rec = out_.requests[id];
  const Segment& seg = p_.models[rec.model].segments[segment];
  WorkItem w;
  w.request = id;
  w.model = rec.model;
  w.stream = rec.stream;
  w.segment = segment;
  w.arrival = rec.arrival;
  w.ready = now;
  w.deadline = rec.deadline > 0 ? rec.deadline : INFINITY;
  w.estimate = seg.seconds;
  unit_queue_[seg.unit].push_back(w);
  dispatch(seg.unit, now);
}

void RequestFlow::dispatch(int unit, double now) {
  auto& q = unit_queue_[unit];
  if (unit_busy_[unit] || q.empty()) return;
  UnitView v;
  v.now = now;
  v.unit = unit;
  v.queue = std::span<const WorkItem>(q.data(), q.size());
  v.busy_fraction = now > 0 ? out_.units[unit].busy_seconds / now : 0;
  size_t pick = q.size() == 1 ? 0 : queue_->pick(v);
  WorkItem w = q[pick];
  q.erase(q.begin() + static_cast<long>(pick));
  unit_busy_[unit] = 1;
  RequestRecord& rec = out_.requests[w.request];
  if (rec.start < 0) rec.start = now;
  start_(unit, w);
}

}  // namespace vlasim
