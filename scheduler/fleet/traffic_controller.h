// Robion's adaptive traffic controller run live (SYSTEMS.md system 2): it routes every robot's
// requests to an instance of its model, watches the demand the run brings (the robots of each
// model that asked in the last interval, not demand it was told of), and when that demand
// changes re-solves the placement (scheduler/fleet/placement.h) and moves the fewest robots it can.
// Plain C++ over the scenario's names: the simulator asks it at each arrival (sim/engine/flow.h).
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.h"
#include "scheduler/fleet/placement.h"
#include "scheduler/policy.h"

namespace vlasim {

class LiveController : public Router {
 public:
  // The controller of scenario `s` (`controller:`, ControllerDecl): the placement problem it
  // names gives the GPUs and each model's capacity on them (its robots and changes are not
  // used: demand is observed); every workload naming a group (StreamDecl::group) must name a
  // model of the problem, and the scenario must hold an instance MODEL-GPU for every GPU the
  // problem lets that model run on. Throws ConfigError (file, line, key) otherwise.
  explicit LiveController(const Scenario& s);

  // The instance serving this request. At the first arrival of each interval (intervals of
  // interval_s from time 0) it first counts the robots of each model there at the interval's
  // start (a robot is there until two of its periods pass without a request) and, if those
  // differ from the demand its placement was made for, re-solves and re-routes: a robot keeps
  // its GPU while the new placement leaves room there. A robot with no GPU yet (new, or gone
  // for a while) takes its model's GPU with the most room left in the placement, then the
  // GPU least loaded by the robots there now, then the first; placed where the placement has
  // no room for it, it is placed again so at each of its requests until a re-solve counts it.
  int route(int stream, double now) override;  // throws what the solver throws but infeasibility

  struct Decision {
    double at_s = 0;          // the start of the interval it was made at
    std::vector<int> demand;  // per problem model: robots seen in the interval before
    bool solved = false;      // false: no placement serves it (why), the last one kept
    std::string why;
    Placement placement;      // the placement in force from at_s on
    int moved = 0;            // robots that were on another GPU before
  };
  const std::vector<Decision>& decisions() const { return decisions_; }
  const PlacementProblem& problem() const { return p_; }

 private:
  void tick(double now);
  int assign(int stream, double now);

  PlacementProblem p_;
  PlacementStrategy strategy_ = PlacementStrategy::Ilp;
  double interval_ = 1;
  std::vector<int> stream_model_;           // per stream: problem model, -1 when not routed
  std::vector<std::vector<int>> instance_;  // [model][gpu]: scenario model index, -1 none
  std::vector<int> gpu_of_;                 // per stream: its GPU, -1 none
  std::vector<char> provisional_;           // per stream: placed outside the placement's quota
  std::vector<double> last_seen_;           // per stream: its last arrival (-1 none)
  // Per stream: how long after its last request a robot still counts as there (two of its
  // periods; the interval when its rate is not known).
  std::vector<double> presence_;
  bool present(size_t stream, double now) const {
    return last_seen_[stream] >= 0 && last_seen_[stream] >= now - presence_[stream];
  }
  std::vector<std::vector<int>> quota_, assigned_;  // [model][gpu]
  std::vector<int> demand_;                 // what quota_ was solved for
  std::vector<int> failed_demand_;          // the last demand no placement could serve
  long long interval_index_ = -1;           // the interval of the last tick
  std::vector<Decision> decisions_;
};

// The controller's decisions as a Markdown table and as CSV rows
// (at_s,model,demand,gpu,robots,solved,moved).
std::string controller_decisions_markdown(const LiveController& c);
std::string controller_decisions_csv(const LiveController& c);

}  // namespace vlasim
