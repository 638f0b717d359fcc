#include "scheduler/partition.h"

#include <stdexcept>

namespace vlasim {

BlockSplit::BlockSplit(Stage stage, int after_block, std::string first, std::string second,
                       std::vector<Stage> second_stages)
    : stage_(stage),
      after_(after_block),
      first_(std::move(first)),
      second_(std::move(second)),
      second_stages_(std::move(second_stages)) {}

std::vector<PlacementSpec> BlockSplit::rules_at(int blocks, int cut) const {
  if (cut < 0 || cut > blocks)
    throw std::invalid_argument("after_block " + std::to_string(cut) + " is outside 0.." +
                                std::to_string(blocks) + " (the stage's blocks)");
  std::vector<PlacementSpec> out;
  for (Stage s : {Stage::Vision, Stage::Prefix, Stage::Action, Stage::Decode, Stage::Head})
    out.push_back({s, -1, -1, first_});
  if (cut < blocks) out.push_back({stage_, cut, blocks - 1, second_});
  for (Stage s : second_stages_) out.push_back({s, -1, -1, second_});
  return out;
}

namespace {
PartitionRegistry& partition_policy_list() {
  static PartitionRegistry r = [] {
    PartitionRegistry r("partition policy");
    r.add({"block_split",
           "vision and the first after_block blocks of a stage on device first, the rest on second",
           {{"stage", "stage to cut (vision, prefix, action, decode)", "prefix"},
            {"after_block", "blocks kept on first (0..blocks)", ""},
            {"first", "device (or device.unit) for everything before the cut", ""},
            {"second", "device (or device.unit) for the blocks after the cut", ""},
            {"second_stages", "whole stages that also run on second, e.g. [head]", "[]"}},
           [](const Params& p) -> std::unique_ptr<PartitionPolicy> {
             const ConfigNode& n = p.node();
             if (!n.defined()) throw ConfigError("<partition>", 0, 0, "params", "block_split needs params");
             Stage stage;
             ConfigNode sn = n.optional("stage");
             std::string st = sn.defined() ? sn.as_string() : "prefix";
             if (!parse_stage(st, &stage)) sn.fail("unknown stage '" + st + "'; valid names are: vision, prefix, action, decode, head");
             long long after = n.required("after_block").as_int();
             if (after < 0) n.required("after_block").fail("must not be negative");
             std::vector<Stage> extra;
             ConfigNode en = n.optional("second_stages");
             if (en.defined())
               for (auto& e : en.items()) {
                 Stage s;
                 if (!parse_stage(e.as_string(), &s)) e.fail("unknown stage '" + e.as_string() + "'");
                 extra.push_back(s);
               }
             return std::make_unique<BlockSplit>(stage, static_cast<int>(after),
                                                 n.required("first").as_string(),
                                                 n.required("second").as_string(), extra);
           }});
    return r;
  }();
  return r;
}
}  // namespace

const PartitionRegistry& partition_policies() { return partition_policy_list(); }

void add_partition_policy(PartitionRegistry::Entry e) { partition_policy_list().put(std::move(e)); }

bool parse_split_goal(const std::string& s, SplitGoal* out) {
  if (s == "throughput") *out = SplitGoal::Throughput;
  else if (s == "latency") *out = SplitGoal::Latency;
  else if (s == "memory") *out = SplitGoal::Memory;
  else return false;
  return true;
}

int best_split(const std::vector<SplitOutcome>& o, SplitGoal goal, double cap) {
  int best = -1;
  for (size_t i = 0; i < o.size(); ++i) {
    const SplitOutcome& c = o[i];
    if (!c.fits) continue;
    if (goal == SplitGoal::Memory && cap > 0 && c.peak_memory_bytes > cap) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const SplitOutcome& b = o[best];
    bool better = false;
    switch (goal) {
      case SplitGoal::Throughput:
        better = c.throughput_hz > b.throughput_hz * (1 + 1e-9) ||
                 (c.throughput_hz >= b.throughput_hz * (1 - 1e-9) && c.mean_latency_s < b.mean_latency_s);
        break;
      case SplitGoal::Latency:
        better = c.mean_latency_s < b.mean_latency_s;
        break;
      case SplitGoal::Memory:
        better = cap > 0 ? c.mean_latency_s < b.mean_latency_s : c.peak_memory_bytes < b.peak_memory_bytes;
        break;
    }
    if (better) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace vlasim
