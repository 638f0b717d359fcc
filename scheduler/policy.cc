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

// Earliest SLO first over model queues: each model's items at the unit form a FIFO queue;
// the model whose head (oldest item) has the earliest deadline goes first (ties: the older
// head, then the lower request id). Unlike edf, a model's later items never overtake its head.
class EarliestSloFirst : public QueuePolicy {
 public:
  size_t pick(const UnitView& v) override {
    std::map<int, size_t> head;  // model -> index of its oldest item
    for (size_t i = 0; i < v.queue.size(); ++i) {
      auto [it, fresh] = head.emplace(v.queue[i].model, i);
      const WorkItem &a = v.queue[i], &b = v.queue[it->second];
      if (!fresh && (a.ready < b.ready || (a.ready == b.ready && a.request < b.request))) it->second = i;
    }
    size_t best = head.begin()->second;
    for (const auto& [model, i] : head) {
      const WorkItem &a = v.queue[i], &b = v.queue[best];
      if (a.deadline < b.deadline ||
          (a.deadline == b.deadline && (a.ready < b.ready || (a.ready == b.ready && a.request < b.request))))
        best = i;
    }
    return best;
  }
};

// The lead and up to max_batch - 1 more items of its plan and kind, earliest deadline
// first (ties: joined first, then request id).
std::vector<size_t> batch_items(const UnitView& v, size_t lead, int max_batch) {
  const WorkItem& l = v.queue[lead];
  auto kind = [](const WorkItem& w) { return w.kind >= 0 ? w.kind : w.segment; };
  std::vector<size_t> rest;
  for (size_t i = 0; i < v.queue.size(); ++i)
    if (i != lead && v.queue[i].plan == l.plan && kind(v.queue[i]) == kind(l)) rest.push_back(i);
  const size_t take = std::min(rest.size(), static_cast<size_t>(max_batch - 1));
  std::partial_sort(rest.begin(), rest.begin() + static_cast<long>(take), rest.end(), [&](size_t x, size_t y) {
    const WorkItem &a = v.queue[x], &b = v.queue[y];
    if (a.deadline != b.deadline) return a.deadline < b.deadline;
    if (a.ready != b.ready) return a.ready < b.ready;
    return a.request < b.request;
  });
  std::vector<size_t> out{lead};
  out.insert(out.end(), rest.begin(), rest.begin() + static_cast<long>(take));
  return out;
}

// Fixed batching: the batch always runs at the unit's batch size, padded with empty slots,
// so one captured graph per stage serves every batch.
class FixedBatch : public BatchPolicy {
 public:
  explicit FixedBatch(int size) : size_(size) {}
  BatchChoice form(const UnitView& v, size_t lead, int max_batch) const override {
    return {batch_items(v, lead, max_batch), max_batch};
  }
  std::vector<int> sizes(int max_batch) const override { return {max_batch}; }
  int default_size() const override { return size_; }

 private:
  int size_;
};

// Dynamic batching: the batch runs at its bucket, the smallest power of two at least the
// number of items it took (at most the unit's size), as graph-replaying engines capture one
// graph per bucket.
class DynamicBatch : public BatchPolicy {
 public:
  explicit DynamicBatch(int size) : size_(size) {}
  BatchChoice form(const UnitView& v, size_t lead, int max_batch) const override {
    BatchChoice c{batch_items(v, lead, max_batch), 0};
    c.size = batch_bucket(static_cast<int>(c.items.size()), max_batch);
    return c;
  }
  std::vector<int> sizes(int max_batch) const override { return bucket_sizes(max_batch); }
  int default_size() const override { return size_; }

 private:
  int size_;
};

// The `size` parameter of a batch policy: 1 .. kMaxUnitBatch.
int batch_size_param(const Params& p) {
  ConfigNode n = p.node().defined() ? p.node().optional("size") : ConfigNode();
  long long size = p.get_int("size", 1);
  if (size < 1 || size > kMaxUnitBatch)
    n.fail("batch size must be between 1 and " + std::to_string(kMaxUnitBatch) + ", not " + std::to_string(size));
  return static_cast<int>(size);
}

// Continuous batching with per-step buffer inspection (the vLLM-Omni-like engine of
// SYSTEMS.md system 2): dynamic batches, but the action expert is scheduled one denoising
// step at a time, so a request joins a running batch at its next step rather than waiting
// for the batch to finish, and every step costs the engine `inspect` host seconds first.
class ContinuousBatch : public DynamicBatch {
 public:
  ContinuousBatch(int size, double inspect_s) : DynamicBatch(size), inspect_s_(inspect_s) {}
  bool per_step() const override { return true; }
  double step_overhead_seconds() const override { return inspect_s_; }

 private:
  double inspect_s_;
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

int batch_bucket(int n, int max_batch) {
  int b = 1;
  while (b < n) b *= 2;
  return std::min(b, max_batch);
}

std::vector<int> bucket_sizes(int max_batch) {
  std::vector<int> out;
  for (int b = 1; b < max_batch; b *= 2) out.push_back(b);
  out.push_back(max_batch);
  return out;
}

namespace {
QueuePolicyRegistry& queue_policy_list() {
  static QueuePolicyRegistry r = [] {
    QueuePolicyRegistry r("queue policy");
    r.add({"fifo", "first come, first served at each unit", {},
           [](const Params&) { return std::make_unique<Fifo>(); }});
    r.add({"edf", "earliest deadline first (earliest-SLO-first)", {},
           [](const Params&) { return std::make_unique<EarliestDeadline>(); }});
    r.add({"round_robin", "round robin over model instances", {},
           [](const Params&) { return std::make_unique<RoundRobin>(); }});
    r.add({"largest_queue", "the model with the most waiting work first", {},
           [](const Params&) { return std::make_unique<LargestQueue>(); }});
    r.add({"esf", "earliest SLO first over model queues: the model whose oldest item has the earliest deadline", {},
           [](const Params&) { return std::make_unique<EarliestSloFirst>(); }});
    return r;
  }();
  return r;
}
}  // namespace

const QueuePolicyRegistry& queue_policies() { return queue_policy_list(); }

void add_queue_policy(QueuePolicyRegistry::Entry e) { queue_policy_list().put(std::move(e)); }

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

namespace {
BatchPolicyRegistry& batch_policy_list() {
  static BatchPolicyRegistry r = [] {
    BatchPolicyRegistry r("batching policy");
    r.add({"dynamic",
           "a free unit runs what is waiting of one model and stage, up to its batch size, at the smallest power "
           "of two that holds it (at most the batch size)",
           {{"size", "batch size of units that give no `batch:` of their own", "1"}},
           [](const Params& p) { return std::make_unique<DynamicBatch>(batch_size_param(p)); }});
    r.add({"fixed",
           "a free unit runs what is waiting of one model and stage, up to its batch size, padded to that size "
           "(one captured graph per stage)",
           {{"size", "batch size of units that give no `batch:` of their own", "1"}},
           [](const Params& p) { return std::make_unique<FixedBatch>(batch_size_param(p)); }});
    r.add({"continuous",
           "dynamic batches, with the action expert scheduled one denoising step at a time: requests join and "
           "leave a running batch at every step, and each step first costs the engine `inspect_ms` of host time "
           "(continuous batching with per-step buffer inspection, as vLLM-Omni-like servers do)",
           {{"size", "batch size of units that give no `batch:` of their own", "1"},
            {"inspect_ms", "host milliseconds the engine spends before every step it schedules", "0"}},
           [](const Params& p) {
             ConfigNode n = p.node().defined() ? p.node().optional("inspect_ms") : ConfigNode();
             const double ms = p.get_double("inspect_ms", 0);
             if (!(ms >= 0) || ms > 1000) n.fail("inspect_ms must be between 0 and 1000, not " + n.as_string());
             return std::make_unique<ContinuousBatch>(batch_size_param(p), ms / 1000);
           }});
    return r;
  }();
  return r;
}
}  // namespace

const BatchPolicyRegistry& batch_policies() { return batch_policy_list(); }

void add_batch_policy(BatchPolicyRegistry::Entry e) { batch_policy_list().put(std::move(e)); }

}  // namespace vlasim
