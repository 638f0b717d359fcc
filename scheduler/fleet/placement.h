// Robion's placement and adaptive traffic controller (SYSTEMS.md system 2): which models get an
// instance on which GPU, and how many of each model's robots each instance serves, as the
// integer program SYSTEMS.md gives, solved by CBC (COIN-OR branch and cut). Plain C++: no
// SystemC, no oneDNN.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "scenarios/config/config.h"

namespace vlasim {

struct PlacementProblem {
  std::vector<std::string> models, gpus;
  std::vector<std::string> gpu_catalog;    // per GPU: its catalog entry
  std::vector<int> robots;                 // per model: robots to serve (>= 0)
  // [model][gpu]: robots of that model one GPU sustains alone within the SLO (what
  // `vlasim sweep --goal capacity` finds); 0: the model cannot run there.
  std::vector<std::vector<int>> capacity;
  ConfigNode where;                        // the problem's file, for errors (may be undefined)
  // Demand changing during the run, in time order: from at_s (> 0) on, robots per model.
  struct Change {
    double at_s = 0;
    std::vector<int> robots;
    ConfigNode where;
  };
  std::vector<Change> changes;
  // [model][gpu]: robots placed before (a controller's previous phase); among equally good
  // placements, instances that exist there are kept. Empty: none.
  std::vector<std::vector<int>> before;
};

struct Placement {
  std::vector<std::vector<int>> robots;  // [model][gpu]: robots that GPU's instance serves
  int instances = 0;                     // (model, GPU) pairs serving at least one robot
  double load_max = 0;                   // the most loaded GPU's sum of robots / capacity
  // false: the fewest instances are proven, but the load and tie-breaks below are the best a
  // bounded search found (solve_placement); true for the baselines.
  bool load_proven = true;
  long long solver_nodes = 0;  // branch-and-bound nodes CBC searched over its solves (0: no solver)
};

// The placement that serves every robot with as few model instances as possible (each
// model's robots concentrated on few GPUs, so that its batches fill), subject to: every robot
// assigned to a GPU whose capacity for its model is above 0, and on every GPU the sum over
// models of robots / capacity at most 1. Among placements with the fewest instances, one whose
// most loaded GPU is the least loaded; among those, one keeping the instances of
// problem.before, then lower-numbered GPUs (the same problem gives the same placement). The
// fewest instances are proven (CBC); the least load and the tie-breaks are searched over a
// fixed number of CBC nodes and, where that search ends unproven, are the best it found
// (Placement::load_proven false). Throws ConfigError at problem.where (std::invalid_argument
// without one) when no placement serves every robot, saying which model's demand passes what
// the GPUs hold, and std::runtime_error when CBC passes its 60 s limit.
Placement solve_placement(const PlacementProblem& problem);

// How robots are placed: Robion's integer program, or the baselines SYSTEMS.md compares it
// with: every model's robots split evenly over every GPU that runs it ("even"), or each GPU
// given to one model, GPUs shared out by load ("dedicated").
enum class PlacementStrategy { Ilp, Even, Dedicated };
// "ilp", "even", "dedicated"; false for anything else.
bool parse_placement_strategy(const std::string& name, PlacementStrategy* out);
// The placement `s` gives for the robots of `robots` (per model). Even and dedicated never
// refuse for load (load_max may pass 1); dedicated throws (as solve_placement) when there are
// fewer GPUs than models with robots or a model's GPU cannot run it.
Placement place_robots(const PlacementProblem& p, const std::vector<int>& robots, PlacementStrategy s);
// The adaptive traffic controller: the placement at the start (p.robots) and, re-solved, at
// every change of demand (p.changes), one per phase. A phase that cannot be placed is refused
// at its change.
std::vector<Placement> control_traffic(const PlacementProblem& p, PlacementStrategy s);

// The search for the largest demand a problem serves (place --maximize): the problem's demand
// scaled by a percentage, every model's robots rounded up (robots x percent / 100).
std::vector<int> scaled_demand(const PlacementProblem& p, int percent);

// One demand the search tried.
struct DemandStep {
  int percent = 0;          // of the problem's demand (its robots)
  std::vector<int> robots;  // per model: scaled_demand
  bool placed = false;      // the strategy placed it (the integer program: within every GPU's capacity)
  bool holds = false;       // placed, and the judge says the fleet holds the SLO
  std::string note;         // why it was not placed, or the judge's words
  Placement placement;      // when placed
};
struct DemandSearch {
  std::vector<DemandStep> steps;  // in the order tried
  int best = -1;                  // index in steps of the largest demand that holds; -1: none
  bool capped = false;            // the search stopped at max_percent with every demand holding
};
// Judges a placed demand: true when the fleet holds the SLO, with its words in *note.
using DemandJudge = std::function<bool(const std::vector<int>& robots, const Placement& x, std::string* note)>;
// The largest whole percentage (1 .. max_percent) of p's demand (p.robots; p.changes are not
// scaled) that strategy `s` places and `judge` (when set) says holds: from 100%, doubling
// while it holds, then halving the interval between the largest that held and the smallest
// that did not. A demand that cannot be placed (the integer program finds no placement;
// even or dedicated load a GPU past 1) does not hold. Assumes a demand holds when a larger one
// does (the steps are all kept, so a breach of that can be seen); `progress` hears each step.
// Throws std::invalid_argument when every model has 0 robots or max_percent < 1, and what
// place_robots throws other than its refusal of a demand it cannot place.
DemandSearch maximize_demand(const PlacementProblem& p, PlacementStrategy s, const DemandJudge& judge,
                             const std::function<void(const DemandStep&)>& progress, int max_percent = 100000);
// The search's steps as a Markdown table (largest demand that holds marked).
std::string demand_search_markdown(const PlacementProblem& p, const DemandSearch& d);

// Reads a placement problem:
//   gpus: [{name: gpu, catalog: h100-sxm, count: 4}]       # count: N makes gpu0 .. gpuN-1
//   models:
//     - {name: pi0, robots: 30, capacity: {h100-sxm: 16}}  # per catalog entry of the GPUs
//   changes:                                               # optional: demand during the run
//     - {at_s: 30, robots: {pi0: 50}}                      # models not named keep their robots
// Throws ConfigError (file, line, key) for anything malformed: unknown keys, negative robots,
// a capacity for a catalog entry no GPU has, a model with robots and no capacity anywhere.
PlacementProblem load_placement_problem(const std::string& path);

// The placement as a Markdown table (one row per model: robots per GPU; `robots`: the demand
// placed) and as CSV (model,gpu,robots,capacity,load rows).
std::string placement_markdown(const PlacementProblem& p, const Placement& x, const std::vector<int>& robots);
std::string placement_csv(const PlacementProblem& p, const Placement& x);
// Every phase's placement: a table per phase (Markdown) and phase,at_s,model,gpu,... rows (CSV).
std::string controller_markdown(const PlacementProblem& p, const std::vector<Placement>& phases);
std::string controller_csv(const PlacementProblem& p, const std::vector<Placement>& phases);

// A scenario of the whole fleet from a template scenario of one server. The template's devices
// of the problem GPUs' catalog entry are the slot, copied once per GPU of the problem: one GPU
// keeps the problem's GPU name; several (an inter-GPU server's VLM GPU and action GPU) are
// named GPU-DEVICE. Its other devices (a host CPU a vLLM-Omni-like server hands data through)
// are shared by every slot and kept once. A link touching a slot device is copied per slot
// (ends renamed); one between shared devices is kept once. For every GPU serving a model in
// any phase, a copy of the template's entry for that model (named MODEL-GPU, its device
// references moved to that slot); template models the problem does not place are left out.
// Per phase, a copy of its workload entry with `count:` set to the robots placed there,
// running from the phase's start (start_s) to its end (duration_s; the last phase to the end
// of the template's duration). Throws ConfigError at the template when it has no device of
// the problem's catalog entry, a slot device with a count, a shared device named as a fleet
// GPU, no entry for a model of the problem, and at a change that comes after the template's
// workload ends.
std::string fleet_scenario_yaml(const PlacementProblem& p, const std::vector<Placement>& phases,
                                const std::string& template_path);
// The fleet for the live traffic controller (scheduler/fleet/traffic_controller.h): the template's
// GPU once per problem GPU, an instance MODEL-GPU wherever the problem gives the model a
// capacity, the problem's demand as workload entries naming the model (one per model and
// phase: robots, then each change's), and `controller: {problem: problem_ref, interval_s,
// strategy}`. The controller is not told the demand; it sees it arrive. Throws as
// fleet_scenario_yaml.
std::string live_fleet_scenario_yaml(const PlacementProblem& p, const std::string& template_path,
                                     const std::string& problem_ref, double interval_s, const std::string& strategy);

}  // namespace vlasim
