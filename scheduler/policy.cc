#include "scheduler/policy.h"

#include <algorithm>
#include <map>

namespace vlasim {

namespace {

// First come, first served by the time items joined the queue (ties: request id).
class Fifo : public QueuePolicy {
 public:
  size_t pick(const UnitView& v) override {
    size_t best = 0;
    for (size_t i = 1; i < v.queue.size(); ++i) {
      const WorkItem &a = v.queue[i], &b = v.queue[best];
      if (a.ready < b.ready || (a.ready == b.ready && a.request < b.request)) best = i;
    }
    return best;
  }
};

// Earliest deadline first (ties: arrival, then request id). Items without a deadline go last.
class EarliestDeadline : public QueuePolicy {
 public:
  size_t pick(const UnitView& v) override {
    size_t best = 0;
    for (size_t i = 1; i < v.queue.size(); ++i) {
      const WorkItem &a = v.queue[i], &b = v.queue[best];
      if (a.deadline < b.deadline ||
          (a.deadline == b.deadline &&
           (a.arrival < b.arrival || (a.arrival == b.arrival && a.request < b.request))))
        best = i;
    }
    return best;
  }
};

// Round robin over model instances: the next model after the last one served that has work.
class RoundRobin : public QueuePolicy {
 public:
  size_t pick(const UnitView& v) override {
    int best_model = -1;
    size_t best = 0;
    int last = last_[v.unit];
    for (size_t i = 0; i < v.queue.size(); ++i) {
      int m = v.queue[i].model;
      // Distance after `last` in cyclic order; the oldest item of that model wins.
      auto dist = [&](int x) { return x > last ? x - last : x - last + (1 << 20); };
      if (best_model < 0 || dist(m) < dist(best_model) ||
          (m == best_model && v.queue[i].request < v.queue[best].request)) {
        best_model = m;
        best = i;
      }
    }
    last_[v.unit] = best_model;
    return best;
  }

 private:
  std::map<int, int> last_;
};

// Largest queue first: the model with most waiting items; its oldest item.
class LargestQueue : public QueuePolicy {
 public:
  size_t pick(const UnitView& v) override {
    std::map<int, int> count;
    for (const auto& w : v.queue) ++count[w.model];
    int model = std::max_element(count.begin(), count.end(), [](auto& a, auto& b) {
                  return a.second < b.second;  // ties: lower model index (map order)
                })->first;
    size_t best = v.queue.size();
    for (size_t i = 0; i < v.queue.size(); ++i)
      if (v.queue[i].model == model && (best == v.queue.size() || v.queue[i].request < v.queue[best].request))
        best = i;
    return best;
  }
};

class Serial : public PipelinePolicy {
 public:
  int window(int) const override { return 1; }
};

class Async : public PipelinePolicy {
 public:
  explicit Async(int depth) : depth_(depth) {}
  int window(int stages) const override { return depth_ > 0 ? depth_ : std::max(1, stages); }

 private:
  int depth_;
};

}  // namespace

const QueuePolicyRegistry& queue_policies() {
  static const QueuePolicyRegistry r = [] {
    QueuePolicyRegistry r("queue policy");
    r.add({"fifo", "first come, first served at each unit", {},
           [](const Params&) { return std::make_unique<Fifo>(); }});
    r.add({"edf", "earliest deadline first (earliest-SLO-first)", {},
           [](const Params&) { return std::make_unique<EarliestDeadline>(); }});
    r.add({"round_robin", "round robin over model instances", {},
           [](const Params&) { return std::make_unique<RoundRobin>(); }});
    r.add({"largest_queue", "the model with the most waiting work first", {},
           [](const Params&) { return std::make_unique<LargestQueue>(); }});
    return r;
  }();
  return r;
}

const PipelinePolicyRegistry& pipeline_policies() {
  static const PipelinePolicyRegistry r = [] {
    PipelinePolicyRegistry r("pipeline policy");
    r.add({"serial", "one request of a model in flight at a time", {},
           [](const Params&) { return std::make_unique<Serial>(); }});
    r.add({"async",
           "cross-frame asynchronous pipeline: device A runs frame t while B runs frame t-1",
           {{"depth", "requests in flight per model (0: one per pipeline stage)", "0"}},
           [](const Params& p) {
             ConfigNode d = p.node().defined() ? p.node().optional("depth") : ConfigNode();
             long long depth = p.get_int("depth", 0);
             if (depth < 0) d.fail("depth must not be negative");
             return std::make_unique<Async>(static_cast<int>(depth));
           }});
    return r;
  }();
  return r;
}

}  // namespace vlasim
