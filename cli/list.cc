// vlasim list: the registered parts (policies, cost models, executors, workloads, passes), the
// catalog's devices, the model cards and this host.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "executors/calibration/host_measure.h"
#include "executors/executor.h"
#include "models/passes/passes.h"
#include "scenarios/workload.h"
#include "scheduler/partition.h"
#include "scheduler/policy.h"
#include "scheduler/robot/robot.h"
#include "scheduler/zone.h"
#include "sim/costs/cost_models.h"
#include "sim/costs/stack_model.h"
#include "sim/costs/gpu_sharing.h"
#include "executors/executor_registry.h"

namespace vlasim::cli {
namespace {

// Prints a registry: its family, each entry and its parameters with their defaults.
template <class R>
void list_registry(const R& reg) {
  std::cout << reg.family() << ":\n";
  for (const auto& e : reg.entries()) {
    std::cout << "  " << e.name << " - " << e.description << "\n";
    for (const auto& p : e.params)
      std::cout << "      " << p.name << " (default " << (p.default_value.empty() ? "required" : p.default_value)
                << "): " << p.description << "\n";
  }
}

int run_list(const Common& c, const std::string& what) {
  const std::vector<std::string> families = {"host", "cost_models", "stacks", "gpu_sharing", "queue_policies", "pipeline_policies",
                                             "batching_policies", "partition_policies", "zone_policies", "executors", "devices", "cards", "workloads",
                                             "passes", "robots"};
  bool all = what.empty() || what == "all";
  if (!all && std::find(families.begin(), families.end(), what) == families.end()) {
    std::cerr << "vlasim list: unknown family '" << what << "'; valid names are: " << join_names(families)
              << "\n";
    return 2;
  }
  if (all || what == "host") {
    std::cout << host_text(host_info());
    if (!c.profile.empty()) {
      const DeviceProfile prof = load_profile(c.profile);
      std::cout << "profile " << c.profile << " (" << prof.machine << ", " << prof.date << "):\n"
                << host_entry_text(prof.host, prof.logical_cpus);
      const std::string elsewhere = host_entry_elsewhere(prof);
      std::cout << "  used: "
                << (prof.host.empty() ? "no: the profile has no host entry (made before calibrate measured the host)"
                                      : "yes, instead of catalog '" + prof.catalog_device + "', " +
                                            (elsewhere.empty() ? "measured on this machine" : elsewhere))
                << "\n";
    } else {
      const auto& nodes = host_info().numa_nodes;
      const LlcInfo llc = nodes.empty() || nodes.front().empty() ? LlcInfo{} : read_llc(nodes.front().front());
      if (llc.bytes > 0) {
        std::cout << "  last-level cache: " << llc.bytes / 1e6 << " MB shared by " << llc.shared_cpus << " allowed CPUs\n";
        HostEntry h;
        h.llc_bytes = llc.bytes;
        h.llc_shared_cpus = llc.shared_cpus;
        if (std::string why = llc_problem(h); !why.empty())
          std::cout << "  last-level cache implausible (a host entry would not use it; the catalog CPU's stays): "
                    << why << "\n";
      }
      std::cout << "  measured host entry: pass --profile PROFILE.json (vlasim calibrate measures one)\n";
    }
  }
  if (all || what == "cost_models") list_registry(cost_models());
  if (all || what == "stacks") list_registry(stack_registry());
  if (all || what == "gpu_sharing") list_registry(gpu_sharing_models());
  if (all || what == "queue_policies") list_registry(queue_policies());
  if (all || what == "pipeline_policies") list_registry(pipeline_policies());
  if (all || what == "batching_policies") list_registry(batch_policies());
  if (all || what == "partition_policies") list_registry(partition_policies());
  if (all || what == "zone_policies") list_registry(zone_policies());
  if (all || what == "robots") list_registry(robots());
  if (all || what == "executors") list_registry(executor_registry());
  if (all || what == "devices") {
    Catalog cat = Catalog::load_dir(c.catalog);
    std::cout << "devices (catalog " << c.catalog << "):\n";
    for (auto& [name, d] : cat.entries())
      std::cout << "  " << name << " [" << to_string(d.type) << "] - " << d.description << "\n";
  }
  if (all || what == "cards") {
    std::cout << "model cards (" << c.cards << "):\n";
    for (auto& n : card_names(c.cards)) std::cout << "  " << n << "\n";
  }
  if (all || what == "workloads") list_registry(workloads());
  if (all || what == "passes") {
    std::cout << "graph passes (in the order they apply; a card's `passes:` or a model's `passes:` picks them):\n";
    for (const GraphPass& p : graph_passes())
      std::cout << "  " << p.name << " [" << (p.builder ? "builder" : "rewrite") << "] - " << p.description << "\n";
  }
  return 0;
}

}  // namespace

Command add_list(CLI::App& app) {
  auto family = std::make_shared<std::string>();
  CLI::App* list = app.add_subcommand("list", "list the registered parts and their parameters");
  list->add_option("family", *family,
                   "host (this machine's CPU, ISA, bf16, NUMA), cost_models, stacks, gpu_sharing, queue_policies, pipeline_policies, batching_policies, partition_policies, zone_policies, executors, devices, cards, workloads or passes (default: all)");
  return {list, [family](const Common& c) { return run_list(c, *family); }};
}

}  // namespace vlasim::cli
