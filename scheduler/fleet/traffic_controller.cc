#include "scheduler/fleet/traffic_controller.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "scenarios/config/csv.h"

namespace vlasim {

LiveController::LiveController(const Scenario& s) {
  const ControllerDecl& c = s.controller;
  if (!c.on()) throw std::invalid_argument("LiveController: scenario '" + s.name + "' has no controller");
  p_ = load_placement_problem(c.problem);
  if (!parse_placement_strategy(c.strategy, &strategy_))
    c.where.required("strategy").fail("unknown strategy '" + c.strategy + "'");
  interval_ = c.interval_s;
  const size_t M = p_.models.size(), G = p_.gpus.size();
  instance_.assign(M, std::vector<int>(G, -1));
  for (size_t m = 0; m < M; ++m)
    for (size_t g = 0; g < G; ++g)
      for (size_t i = 0; i < s.models.size(); ++i)
        if (s.models[i].name == instance_name(p_.models[m], p_.gpus[g])) instance_[m][g] = static_cast<int>(i);
  stream_model_.assign(s.streams.size(), -1);
  std::vector<char> routed(M, 0);
  for (size_t k = 0; k < s.streams.size(); ++k) {
    const StreamDecl& sd = s.streams[k];
    if (sd.group.empty()) continue;
    const auto it = std::find(p_.models.begin(), p_.models.end(), sd.group);
    if (it == p_.models.end())
      sd.where.required("model").fail("group '" + sd.group + "' is not a model of the controller's placement problem " +
                                      c.problem);
    stream_model_[k] = static_cast<int>(it - p_.models.begin());
    routed[static_cast<size_t>(stream_model_[k])] = 1;
  }
  for (size_t m = 0; m < M; ++m) {
    if (!routed[m]) continue;
    bool any = false;
    for (size_t g = 0; g < G; ++g) {
      if (p_.capacity[m][g] <= 0) continue;
      any = true;
      if (instance_[m][g] < 0)
        c.where.fail("the problem lets '" + p_.models[m] + "' run on " + p_.gpus[g] + " but the scenario has no instance '" +
                     instance_name(p_.models[m], p_.gpus[g]) + "' to route its robots to");
    }
    if (!any) c.where.fail("the problem gives '" + p_.models[m] + "' no GPU with a capacity above 0");
  }
  gpu_of_.assign(s.streams.size(), -1);
  last_seen_.assign(s.streams.size(), -1);
  presence_.assign(s.streams.size(), interval_);
  provisional_.assign(s.streams.size(), 0);
  for (size_t k = 0; k < s.streams.size(); ++k)
    if (s.streams[k].rate_hz > 0) presence_[k] = 2 / s.streams[k].rate_hz;
  quota_.assign(M, std::vector<int>(G, 0));
  assigned_.assign(M, std::vector<int>(G, 0));
  demand_.assign(M, 0);
}

int LiveController::assign(int stream, double now) {
  const size_t m = static_cast<size_t>(stream_model_[static_cast<size_t>(stream)]);
  const size_t G = p_.gpus.size();
  // Each GPU's load by the robots routed there and still present.
  std::vector<double> load(G, 0.0);
  for (size_t k = 0; k < gpu_of_.size(); ++k)
    if (gpu_of_[k] >= 0 && static_cast<int>(k) != stream && present(k, now)) {
      const size_t g = static_cast<size_t>(gpu_of_[k]);
      load[g] += 1.0 / std::max(1, p_.capacity[static_cast<size_t>(stream_model_[k])][g]);
    }
  int best = -1;
  int best_room = 0;
  double best_load = 0;
  for (size_t g = 0; g < G; ++g) {
    if (p_.capacity[m][g] <= 0) continue;
    const int room = std::max(0, quota_[m][g] - assigned_[m][g]);  // none left: the load decides
    const double l = load[g];
    if (best < 0 || room > best_room || (room == best_room && l < best_load)) {
      best = static_cast<int>(g);
      best_room = room;
      best_load = l;
    }
  }
  ++assigned_[m][static_cast<size_t>(best)];
  // Outside the placement: placed again at its next request, by the robots there then.
  provisional_[static_cast<size_t>(stream)] = best_room <= 0;
  return best;
}

void LiveController::tick(double now) {
  const size_t M = p_.models.size();
  std::vector<int> demand(M, 0);
  for (size_t k = 0; k < stream_model_.size(); ++k)
    if (stream_model_[k] >= 0 && present(k, now)) ++demand[static_cast<size_t>(stream_model_[k])];
  if (demand == demand_ || demand == failed_demand_) return;
  Decision d;
  d.at_s = now;
  d.demand = demand;
  PlacementProblem q = p_;
  q.before = quota_;
  try {
    d.placement = place_robots(q, demand, strategy_);
    d.solved = true;
  } catch (const ConfigError& e) {  // no placement serves this demand; anything else stops the run
    // (a solver that ran out of time would make the run depend on the host's speed)
    d.why = e.what();
    d.placement.robots = quota_;
    failed_demand_ = demand;  // logged once; tried again when demand changes
  }
  if (d.solved) {
    quota_ = d.placement.robots;
    demand_ = demand;
    // Re-route: robots there keep their GPU while it has room; the rest are placed where room
    // is left; robots gone lose their GPU (they take one when they ask again).
    std::vector<int> before = gpu_of_;
    for (auto& row : assigned_) std::fill(row.begin(), row.end(), 0);
    std::vector<size_t> rest;
    for (size_t k = 0; k < stream_model_.size(); ++k) {
      if (stream_model_[k] < 0) continue;
      const size_t m = static_cast<size_t>(stream_model_[k]);
      if (!present(k, now)) {
        gpu_of_[k] = -1;
      } else if (gpu_of_[k] >= 0 && assigned_[m][static_cast<size_t>(gpu_of_[k])] < quota_[m][static_cast<size_t>(gpu_of_[k])]) {
        ++assigned_[m][static_cast<size_t>(gpu_of_[k])];
        provisional_[k] = 0;
      } else {
        rest.push_back(k);
      }
    }
    for (size_t k : rest) {
      gpu_of_[k] = assign(static_cast<int>(k), now);
      if (before[k] >= 0 && before[k] != gpu_of_[k]) ++d.moved;
    }
  }
  decisions_.push_back(std::move(d));
}

int LiveController::route(int stream, double now) {
  const size_t k = static_cast<size_t>(stream);
  if (k >= stream_model_.size() || stream_model_[k] < 0)
    throw std::invalid_argument("LiveController::route: stream " + std::to_string(stream) + " is not routed");
  const long long interval = static_cast<long long>(std::floor(now / interval_));
  if (interval != interval_index_) {
    interval_index_ = interval;
    tick(static_cast<double>(interval) * interval_);
  }
  last_seen_[k] = now;
  if (gpu_of_[k] >= 0 && provisional_[k]) {
    --assigned_[static_cast<size_t>(stream_model_[k])][static_cast<size_t>(gpu_of_[k])];
    gpu_of_[k] = -1;
  }
  if (gpu_of_[k] < 0) gpu_of_[k] = assign(stream, now);
  return instance_[static_cast<size_t>(stream_model_[k])][static_cast<size_t>(gpu_of_[k])];
}

std::string controller_decisions_markdown(const LiveController& c) {
  const PlacementProblem& p = c.problem();
  std::ostringstream os;
  os << "| at s | model | robots seen | placed per GPU (";
  for (size_t g = 0; g < p.gpus.size(); ++g) os << (g ? ", " : "") << p.gpus[g];
  os << ") | robots moved | note |\n|---|---|---|---|---|---|\n";
  char at[32];
  for (const auto& d : c.decisions()) {
    std::snprintf(at, sizeof at, "%.3f", d.at_s);
    for (size_t m = 0; m < p.models.size(); ++m) {
      os << "| " << at << " | " << p.models[m] << " | " << d.demand[m] << " | ";
      for (size_t g = 0; g < p.gpus.size(); ++g) os << (g ? " " : "") << d.placement.robots[m][g];
      os << " | " << (m == 0 ? std::to_string(d.moved) : "") << " | "
         << (m == 0 ? (d.solved ? "re-solved" : "kept the last placement: " + d.why) : "") << " |\n";
    }
  }
  return os.str();
}

std::string controller_decisions_csv(const LiveController& c) {
  const PlacementProblem& p = c.problem();
  std::ostringstream os;
  os << "at_s,model,demand,gpu,robots,solved,moved\n";
  char at[32];
  for (const auto& d : c.decisions()) {
    std::snprintf(at, sizeof at, "%.6f", d.at_s);
    for (size_t m = 0; m < p.models.size(); ++m)
      for (size_t g = 0; g < p.gpus.size(); ++g)
        os << at << ',' << csv_field(p.models[m]) << ',' << d.demand[m] << ',' << csv_field(p.gpus[g]) << ',' << d.placement.robots[m][g] << ','
           << (d.solved ? 1 : 0) << ',' << d.moved << '\n';
  }
  return os.str();
}

}  // namespace vlasim
