#include "sim/engine/flow.h"

#include "sim/engine/lockstep.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace vlasim {

RequestFlow::RequestFlow(const Scenario& s, const Plan& p, SimResult& out, size_t trace_limit,
                         StartFn start, RecordSink sink)
    : s_(s), p_(p), out_(out), trace_limit_(trace_limit), start_(std::move(start)),
      sink_(std::move(sink)) {
  queue_ = queue_policies().make(s.queue.name, s.queue.params, s.queue.where);
  batching_ = scenario_batch_policy(s);
  auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  for (const auto& mp : p.models) window_.push_back(pipe->window(mp.pipeline_stages));
  // A stream running only some stages is its own flow, with the window of its model's plan.
  for (const auto& sd : s.streams) window_.push_back(window_[static_cast<size_t>(sd.model)]);
  in_flight_.assign(window_.size(), 0);
  waiting_.resize(window_.size());
  last_stage_end_.assign(s.models.size(), {});
  for (auto& a : last_stage_end_) a.fill(-1);
  for (const auto& mp : p.models) {
    std::vector<uint8_t> st(mp.segments.size(), 0);
    for (size_t k = 0; k < mp.segments.size(); ++k)
      for (int id : mp.segments[k].ops) st[k] |= static_cast<uint8_t>(1u << static_cast<int>(mp.graph.op(id).stage));
    // A transfer carries the inputs of the segment after it: it runs with that segment (the
    // prefix K/V moved to the action expert's device is the expert's stream's to pay).
    for (size_t k = mp.segments.size(); k-- > 0;)
      if (mp.segments[k].transfer) st[k] = k + 1 < mp.segments.size() ? st[k + 1] : 0;
    seg_stages_.push_back(std::move(st));
  }
  // A stream that runs only some stages needs them in segments of their own.
  for (const auto& sd : s.streams) {
    if (sd.stages == 0) continue;
    const ConfigNode at = sd.where.has("stages") ? sd.where.required("stages") : sd.where;
    for (int v : p.models[static_cast<size_t>(sd.model)].variants.empty()
                     ? std::vector<int>{sd.model} : p.models[static_cast<size_t>(sd.model)].variants) {
      const ModelPlan& mp = p.models[static_cast<size_t>(v)];
      bool any = false;
      for (size_t k = 0; k < mp.segments.size(); ++k) {
        const uint8_t m = seg_stages_[static_cast<size_t>(v)][k];
        if (mp.segments[k].transfer) continue;
        any = any || (m & sd.stages);
        if ((m & sd.stages) && (m & ~sd.stages))
          at.fail("segment '" + mp.segments[k].label + "' on unit " + p.units[static_cast<size_t>(mp.segments[k].unit)].name +
                  " holds stages this stream runs and others it does not: place its stages on a unit of their own "
                  "(a GPU stream or a core group)");
      }
      if (!any) at.fail("model '" + s.models[static_cast<size_t>(sd.model)].name + "' has no operators in these stages");
    }
  }
  unit_queue_.resize(p.units.size());
  running_.resize(p.units.size());
  lockstep_of_.assign(p.units.size(), -1);
  for (size_t l = 0; l < p.locksteps.size(); ++l) {
    for (int u : p.locksteps[l].units) lockstep_of_[static_cast<size_t>(u)] = static_cast<int>(l);
    split_.push_back(p.locksteps[l].static_first);
  }
  unit_busy_.assign(p.units.size(), 0);
  out_.units.resize(p.units.size());
  slowdown_.assign(p.units.size(), 1.0);
  running_start_.assign(p.units.size(), 0.0);
  running_estimate_.assign(p.units.size(), 0.0);
  for (const auto& mp : p.models) {
    std::vector<StageSpan> spans(mp.segments.size());
    for (int st = 0; st < kStages; ++st) {
      int first = -1, last = -1;
      for (size_t k = 0; k < mp.segments.size(); ++k)
        if (mp.segments[k].stage_seconds[st] > 0) {
          if (first < 0) first = static_cast<int>(k);
          last = static_cast<int>(k);
        }
      if (first < 0) continue;
      spans[first].first |= static_cast<uint8_t>(1u << st);
      spans[last].last |= static_cast<uint8_t>(1u << st);
    }
    stage_span_.push_back(std::move(spans));
  }
  zone_.resize(s.models.size());
  zone_candidates_.resize(s.models.size());
  zone_configured_.assign(s.models.size(), 0);
  for (size_t m = 0; m < s.models.size(); ++m) {
    if (s.models[m].zone_name.empty()) continue;
    zone_[m] = zone_policies().make(s.models[m].zone_name, s.models[m].zone_params, s.models[m].zone_where);
    for (int v : p.models[m].variants) {
      const ModelPlan& mp = p.models[v];
      if (v == static_cast<int>(m)) zone_configured_[m] = zone_candidates_[m].size();
      ZoneCandidate c;
      c.cut = mp.cut;
      std::map<int, double> per_unit;
      for (const Segment& seg : mp.segments) per_unit[seg.unit] += seg.seconds;
      c.unit_seconds.assign(per_unit.begin(), per_unit.end());
      zone_candidates_[m].push_back(std::move(c));
    }
  }
  double expected = 0;  // requests the streams will issue, to size the record array once
  for (const auto& sd : s.streams) expected += sd.rate_hz * sd.duration_s * 1.05 + 16;
  if (!sink_) out_.requests.reserve(static_cast<size_t>(std::min(expected, 5e7)));
}

void RequestFlow::release() {
  while (!live_.empty() && (live_.front().finished() || live_.front().failed || live_.front().dropped)) {
    sink_(live_.front());
    live_.pop_front();
    ++live_base_;
  }
}

void RequestFlow::flush() {
  if (!sink_) return;
  for (const RequestRecord& r : live_) sink_(r);
  live_base_ += live_.size();
  live_.clear();
}

void RequestFlow::arrive(int stream, double t, double now) {
  const StreamDecl& sd = s_.streams[stream];
  // In place: one write of fresh memory.
  RequestRecord& rec = sink_ ? live_.emplace_back() : out_.requests.emplace_back();
  rec.id = issued_++;
  rec.model = router_ && !sd.group.empty() ? router_->route(stream, now) : sd.model;
  rec.plan = rec.model;
  rec.stream = stream;
  rec.arrival = t;
  rec.deadline = sd.deadline_s > 0 ? t + sd.deadline_s : 0;
  if (s_.queue_limit > 0 && waiting_count_ >= static_cast<size_t>(s_.queue_limit)) {
    rec.dropped = true;
    ++dropped_;
    if (sink_) release();  // rec may be gone from here on
    return;
  }
  ++waiting_count_;
  const size_t key = flow_key(rec);
  if (in_flight_[key] < window_[key]) admit(rec.id, now);
  else waiting_[key].push_back(rec.id);
}

bool RequestFlow::runs(const RequestRecord& rec, int k) const {
  const uint8_t mask = s_.streams[static_cast<size_t>(rec.stream)].stages;
  return mask == 0 || (seg_stages_[static_cast<size_t>(rec.plan)][static_cast<size_t>(k)] & mask) != 0;
}

int RequestFlow::next_segment(const RequestRecord& rec, int k) const {
  const int n = static_cast<int>(p_.models[static_cast<size_t>(rec.plan)].segments.size());
  for (; k < n; ++k)
    if (runs(rec, k)) return k;
  return -1;
}

size_t RequestFlow::flow_key(const RequestRecord& rec) const {
  return s_.streams[static_cast<size_t>(rec.stream)].stages == 0 ? static_cast<size_t>(rec.model)
                                                                   : p_.models.size() + static_cast<size_t>(rec.stream);
}

void RequestFlow::segment_done(int unit, const WorkItem& item, double start, double end,
                               const double* stage_seconds, double lead) {
  const Segment& done = p_.models[static_cast<size_t>(item.plan)].segment_at(item.segment, item.batch, item.sms);
  if (done.seconds > 0) slowdown_[unit] = 0.8 * slowdown_[unit] + 0.2 * (end - start) / done.seconds;
  // Split the segment's interval among the stages the plan puts in it, in proportion to
  // stage_seconds (the plan's own shares if those are all zero). A stage's first and last
  // segments are the plan's, so a stage measured at zero somewhere still gets its interval.
  const double* share = stage_seconds;
  double total = 0;
  for (int st = 0; st < kStages; ++st) total += share[st];
  if (!(total > 0)) {
    share = done.stage_seconds;
    total = 0;
    for (int st = 0; st < kStages; ++st) total += share[st];
  }
  // The part of the interval the stages share: all of it but the lead.
  const double staged = end - start - std::clamp(lead, 0.0, end - start);
  std::vector<WorkItem> batch;
  batch.swap(running_[static_cast<size_t>(unit)]);
  UnitStats& us = out_.units[unit];
  us.busy_seconds += end - start;
  ++us.segments;
  if (out_.trace.size() < trace_limit_)
    out_.trace.push_back(TraceEvent{unit, start, end, item.request, item.model, item.segment, item.plan, item.stream,
                                    item.batch, static_cast<int>(batch.size())});
  else
    out_.trace_truncated = true;
  unit_busy_[unit] = 0;
  // The batch's items move on together: units they (or requests admitted as they end) join
  // start once every item has moved.
  holding_ = true;
  for (const WorkItem& w : batch) {
    RequestRecord& rec = this->rec(w.request);
    if (rec.failed) {  // V-AEFusion: its other chain failed while this one ran
      end_request(rec, end);
      continue;
    }
    if (total > 0) {
      const StageSpan span = stage_span_[rec.plan][w.segment];
      double at = end - staged;
      for (int st = 0; st < kStages; ++st) {
        if (done.stage_seconds[st] <= 0) continue;
        double len = staged * share[st] / total;
        const double first_start = (span.first >> st) & 1 ? at : rec.stage_latency[st];
        if ((span.last >> st) & 1) {
          rec.stage_latency[st] = at + len - first_start;
          rec.stages_done |= static_cast<uint8_t>(1u << st);
          // What a later stage stream reads (its context) is ready when this stage ends.
          last_stage_end_[static_cast<size_t>(rec.model)][static_cast<size_t>(st)] = at + len;
        } else {
          rec.stage_latency[st] = first_start;  // kept until the stage's last segment ends
        }
        at += len;
      }
    }
    int next = next_segment(rec, w.segment + 1);
    const int fork = p_.models[static_cast<size_t>(rec.plan)].fork;
    if (fork >= 0 && next == fork && w.segment != fork) next = next_segment(rec, fork + 1);  // the VLM chain's end
    if (next >= 0) {
      if (reach(rec, next)) enqueue(w.request, next, end);
    } else {
      end_request(rec, end);
    }
  }
  holding_ = false;
  std::vector<int> held;
  held.swap(held_);
  for (int u : held) dispatch(u, end);
  dispatch(unit, end);
}

void RequestFlow::segment_failed(int unit, const WorkItem&, double start, double end) {
  UnitStats& us = out_.units[unit];
  us.busy_seconds += end - start;
  ++us.segments;
  unit_busy_[unit] = 0;
  std::vector<WorkItem> batch;
  batch.swap(running_[static_cast<size_t>(unit)]);
  for (const WorkItem& w : batch) {
    RequestRecord& rec = this->rec(w.request);
    rec.failed = true;
    // V-AEFusion: while its other chain runs, the request ends when that one does.
    if (!join_waiting_.erase(w.request)) end_request(rec, end);
  }
  dispatch(unit, end);
}

void RequestFlow::end_request(RequestRecord& rec, double end) {
  if (rec.failed) {
    ++failed_;
  } else {
    rec.end = end;
    ++finished_;
  }
  const size_t key = flow_key(rec);
  --in_flight_[key];
  if (sink_) release();  // rec may be gone from here on
  auto& w = waiting_[key];
  if (!w.empty()) {
    uint64_t next = w.front();
    w.pop_front();
    admit(next, end);
  }
}

void RequestFlow::admit(uint64_t id, double now) {
  RequestRecord& rec = this->rec(id);
  ++in_flight_[flow_key(rec)];
  if (zone_[rec.model]) rec.plan = choose_plan(rec.model, now);
  const int first = next_segment(rec, 0);
  enqueue(id, first, now);
  // V-AEFusion: the stale steps start now too, beside the VLM; the fresh ones wait for both.
  const int fork = p_.models[static_cast<size_t>(rec.plan)].fork;
  if (fork > first && runs(rec, fork) && next_segment(rec, fork + 1) >= 0) {
    join_waiting_.insert(id);
    enqueue(id, fork, now);
  }
}

bool RequestFlow::reach(const RequestRecord& rec, int next) {
  if (rec.failed) return false;  // its other chain failed: nothing more runs
  const int fork = p_.models[static_cast<size_t>(rec.plan)].fork;
  if (fork < 0 || next != next_segment(rec, fork + 1)) return true;
  // The first chain to get here waits; the second starts the fresh steps.
  if (join_waiting_.erase(rec.id)) return false;
  return true;
}

int RequestFlow::choose_plan(int m, double now) {
  const std::vector<int>& variants = p_.models[m].variants;
  // Backlog: predicted work waiting at each unit plus what is left of its running segment,
  // both scaled by the unit's observed slowdown.
  std::vector<double> backlog(p_.units.size(), 0.0);
  for (size_t u = 0; u < p_.units.size(); ++u) {
    for (const WorkItem& w : unit_queue_[u]) backlog[u] += w.estimate * slowdown_[u];
    if (unit_busy_[u])
      backlog[u] += std::max(0.0, running_estimate_[u] * slowdown_[u] - (now - running_start_[u]));
  }
  ZoneView v;
  v.now = now;
  v.candidates = zone_candidates_[m];
  v.configured = zone_configured_[m];
  v.backlog_s = backlog;
  v.slowdown = slowdown_;
  size_t pick = zone_[m]->choose(v);
  return variants[std::min(pick, variants.size() - 1)];
}

void RequestFlow::enqueue(uint64_t id, int segment, double now) {
  const RequestRecord& rec = this->rec(id);
  const Segment& seg = p_.models[rec.plan].segments[segment];
  WorkItem& w = unit_queue_[seg.unit].emplace_back();
  w.request = id;
  w.model = rec.model;
  w.plan = rec.plan;
  w.stream = rec.stream;
  w.segment = segment;
  w.kind = seg.kind;  // -1: its segment
  w.arrival = rec.arrival;
  w.ready = now;
  w.deadline = rec.deadline > 0 ? rec.deadline : INFINITY;
  w.estimate = seg.seconds;
  dispatch(seg.unit, now);
}

void RequestFlow::dispatch(int unit, double now) {
  if (holding_) {
    if (std::find(held_.begin(), held_.end(), unit) == held_.end()) held_.push_back(unit);
    return;
  }
  if (const int l = lockstep_of_[static_cast<size_t>(unit)]; l >= 0) {
    start_lockstep(l, now);
    return;
  }
  if (unit_busy_[unit] || !form_batch(unit, now)) return;
  launch(unit, now, 0);
}

bool RequestFlow::form_batch(int unit, double now) {
  auto& q = unit_queue_[unit];
  if (q.empty()) return false;
  UnitView v;
  v.now = now;
  v.unit = unit;
  v.queue = std::span<const WorkItem>(q.data(), q.size());
  v.busy_fraction = now > 0 ? out_.units[unit].busy_seconds / now : 0;
  const size_t pick = q.size() == 1 ? 0 : queue_->pick(v);
  const int max_batch = p_.units[static_cast<size_t>(unit)].batch;
  BatchChoice choice{{pick}, 1};
  if (max_batch > 1) choice = batching_->form(v, pick, max_batch);
  std::vector<WorkItem>& batch = running_[static_cast<size_t>(unit)];
  batch.clear();
  for (size_t i : choice.items) batch.push_back(q[i]);
  std::sort(choice.items.begin(), choice.items.end());
  for (size_t k = choice.items.size(); k-- > 0;) q.erase(q.begin() + static_cast<long>(choice.items[k]));
  batch.front().batch = choice.size;
  return true;
}

void RequestFlow::launch(int unit, double now, int sms) {
  std::vector<WorkItem>& batch = running_[static_cast<size_t>(unit)];
  WorkItem& lead = batch.front();
  lead.sms = sms;
  lead.estimate = p_.models[static_cast<size_t>(lead.plan)].segment_at(lead.segment, lead.batch, sms).seconds;
  unit_busy_[unit] = 1;
  running_start_[unit] = now;
  running_estimate_[unit] = lead.estimate;
  for (const WorkItem& w : batch) mark_start(this->rec(w.request), now);
  start_(unit, lead);
}

void RequestFlow::start_lockstep(int l, double now) {
  const LockstepPlan& lp = p_.locksteps[static_cast<size_t>(l)];
  const int u0 = lp.units[0], u1 = lp.units[1];
  if (unit_busy_[u0] || unit_busy_[u1]) return;  // the lockstep running now has not ended
  const bool a = form_batch(u0, now), b = form_batch(u1, now);
  if (!a && !b) return;
  ++out_.locksteps;
  if (a != b) {  // one batch: it has the whole GPU
    launch(a ? u0 : u1, now, lp.sms);
    return;
  }
  const WorkItem& w0 = running_[static_cast<size_t>(u0)].front();
  const WorkItem& w1 = running_[static_cast<size_t>(u1)].front();
  const int c0 = batch_bucket(w0.batch, p_.units[static_cast<size_t>(u0)].batch);
  const int c1 = batch_bucket(w1.batch, p_.units[static_cast<size_t>(u1)].batch);
  const auto it = lp.lut.find(SmLutKey{w0.model, c0, w1.model, c1});
  if (it == lp.lut.end())
    throw std::logic_error("lockstep of " + p_.units[static_cast<size_t>(u0)].name + ": the SM table has no entry for this pair");
  int first = it->second;
  const int prev = split_[static_cast<size_t>(l)];
  if (lp.guard && prev > 0 && prev != first) {
    // The guard: the batch with the tighter deadline (least slack at the table's split) keeps
    // the previous split when the table's would make it miss and the previous would not.
    auto slack = [&](int unit, int sms) {
      double due = INFINITY;
      for (const WorkItem& w : running_[static_cast<size_t>(unit)]) due = std::min(due, w.deadline);
      const WorkItem& lead = running_[static_cast<size_t>(unit)].front();
      const ModelPlan& mp = p_.models[static_cast<size_t>(lead.plan)];
      double rest = 0;  // the later segments its request runs, alone
      const RequestRecord& rec = this->rec(lead.request);
      for (int k = next_segment(rec, lead.segment + 1); k >= 0; k = next_segment(rec, k + 1))
        rest += mp.segments[static_cast<size_t>(k)].seconds;
      return due - (now + mp.segment_at(lead.segment, lead.batch, sms).seconds + rest);
    };
    const bool tight0 = slack(u0, first) <= slack(u1, lp.sms - first);
    const int tu = tight0 ? u0 : u1;
    auto own = [&](int split) { return tight0 ? split : lp.sms - split; };
    if (slack(tu, own(first)) < 0 && slack(tu, own(prev)) >= 0) {
      first = prev;
      ++out_.guard_kept;
    }
  }
  split_[static_cast<size_t>(l)] = first;
  launch(u0, now, first);
  launch(u1, now, lp.sms - first);
}

void RequestFlow::mark_start(RequestRecord& rec, double now) {
  if (rec.start >= 0) return;
  rec.start = now;
  --waiting_count_;
  // The context it reads: the latest end of the model's last stage before its stream's first.
  if (const uint8_t mask = s_.streams[static_cast<size_t>(rec.stream)].stages; mask != 0) {
    int first = 0;
    while (!((mask >> first) & 1)) ++first;
    uint8_t has = 0;
    for (uint8_t m : seg_stages_[static_cast<size_t>(rec.plan)]) has |= m;
    for (int st = first - 1; st >= 0; --st)
      if ((has >> st) & 1) {
        rec.context_end = last_stage_end_[static_cast<size_t>(rec.model)][static_cast<size_t>(st)];
        break;
      }
  }
}

}  // namespace vlasim
