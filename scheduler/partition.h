// Partition policies: where a model's stages and blocks run, as placement rules. Plain C++
// (no SystemC, no oneDNN), so the simulator's planner and the real runtime share them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/registry.h"

namespace vlasim {

// One placement rule: `stage` (blocks first..last, or all when first < 0) runs on `device`
// ("dev" or "dev.unit").
struct PlacementSpec {
  Stage stage = Stage::Prefix;
  int first_block = -1, last_block = -1;
  std::string device;
};

class PartitionPolicy {
 public:
  virtual ~PartitionPolicy() = default;
  // Rules for a model whose partitioned stage has `blocks` blocks, cut after block `cut`;
  // later rules override earlier ones. Throws std::invalid_argument if the cut does not fit.
  virtual std::vector<PlacementSpec> rules_at(int blocks, int cut) const = 0;
  // The configured cut, and the rules at it.
  virtual int cut() const = 0;
  std::vector<PlacementSpec> rules(int blocks) const { return rules_at(blocks, cut()); }
  // The stage the policy cuts.
  virtual Stage stage() const = 0;
};

// Block-layer split: every stage on device `first`, except blocks after_block.. of `stage`
// and the stages in `second_stages`, which run on `second`. after_block = blocks puts the
// whole stage on `first`; after_block = 0 puts it all on `second`.
class BlockSplit : public PartitionPolicy {
 public:
  BlockSplit(Stage stage, int after_block, std::string first, std::string second,
             std::vector<Stage> second_stages);
  std::vector<PlacementSpec> rules_at(int blocks, int cut) const override;
  int cut() const override { return after_; }
  Stage stage() const override { return stage_; }

 private:
  Stage stage_;
  int after_;
  std::string first_, second_;
  std::vector<Stage> second_stages_;
};

using PartitionRegistry = Registry<PartitionPolicy>;
// "block_split".
const PartitionRegistry& partition_policies();
// Adds a partition policy to partition_policies() (or replaces the one of its name): a part
// made outside this list, such as a policy written in Python (python/policies.h). Not to be
// called while a scenario is loaded or run.
void add_partition_policy(PartitionRegistry::Entry e);

// What a planner weighs for one candidate split.
struct SplitOutcome {
  int after_block = 0;
  double mean_latency_s = 0;
  double p99_latency_s = 0;
  double throughput_hz = 0;
  double peak_memory_bytes = 0;  // on the device that holds the first part
  bool fits = true;              // placement fits every device's memory
};

enum class SplitGoal { Throughput, Latency, Memory };
// Parses "throughput", "latency" or "memory"; false if unknown.
bool parse_split_goal(const std::string& s, SplitGoal* out);

// Index of the best outcome for `goal`, or -1 if none qualifies. Throughput: highest
// throughput (ties: lower mean latency). Latency: lowest mean latency. Memory: lowest mean
// latency among splits whose peak memory is at most memory_cap_bytes (0: no cap), or the
// lowest peak memory when cap is 0. Splits that do not fit never qualify. Ties: lower index.
int best_split(const std::vector<SplitOutcome>& outcomes, SplitGoal goal,
               double memory_cap_bytes = 0);

}  // namespace vlasim
