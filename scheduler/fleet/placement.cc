#include "scheduler/fleet/placement.h"

#include "scenarios/config/csv.h"
#include "scenarios/scenario.h"

#include <coin/CbcModel.hpp>
#include <coin/CbcStrategy.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/CoinPackedVector.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <map>
#include <set>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace vlasim {

namespace {

// Instances and the most loaded GPU of an assignment.
Placement finish(const PlacementProblem& p, std::vector<std::vector<int>> robots) {
  Placement out;
  out.robots = std::move(robots);
  std::vector<double> load(p.gpus.size(), 0.0);
  for (size_t m = 0; m < p.models.size(); ++m)
    for (size_t g = 0; g < p.gpus.size(); ++g)
      if (out.robots[m][g] > 0) {
        ++out.instances;
        load[g] += static_cast<double>(out.robots[m][g]) / p.capacity[m][g];
      }
  out.load_max = load.empty() ? 0 : *std::max_element(load.begin(), load.end());
  return out;
}

// Nodes CBC may search for the least loaded busiest GPU (and the tie-breaks after it) before
// it takes the best placement found: a count, so the answer does not depend on the machine.
constexpr int kLoadSearchNodes = 1000;

[[noreturn]] void refuse(const PlacementProblem& p, const std::string& why) {
  if (p.where.defined()) p.where.fail(why);
  throw std::invalid_argument("placement: " + why);
}

// Solves `mat` (solve_placement's rows, perhaps with more) with costs `c`, the first 2 M G variables
// integer; the best solution's values. CBC runs with its default strategy (cut generators,
// heuristics; not its preprocessing, below): without them it branches on a weak relaxation
// (issue 30: 8 models on 4 GPUs took 17 s of CPU). `max_nodes` > 0: stop after that many
// nodes of the search (a count, not a time, so the answer is the same on any machine) and
// take the best placement found, setting *proven to whether it was proven the best (no
// placement found in time: an empty vector); 0: prove it or throw.
// `n` is 2 M G; `nodes` adds the search nodes CBC took.
std::vector<double> cbc_solve(const PlacementProblem& p, int n, const CoinPackedMatrix& mat, const std::vector<double>& vlo,
                              const std::vector<double>& vhi, const std::vector<double>& c,
                              const std::vector<double>& row_lo, const std::vector<double>& row_hi, int max_nodes,
                              bool* proven, long long& nodes) {
  OsiClpSolverInterface lp;
  lp.loadProblem(mat, vlo.data(), vhi.data(), c.data(), row_lo.data(), row_hi.data());
  for (int i = 0; i < n; ++i) lp.setInteger(i);
  lp.messageHandler()->setLogLevel(0);
  CbcModel model(lp);
  CbcStrategyDefault strategy(1, 5, 0, 0);
  strategy.setupPreProcessing(0);  // CBC's preprocessing, run from a CbcModel, lost solutions (wrong counts)
  model.setStrategy(strategy);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.setNumberThreads(0);
  model.setMaximumSeconds(60);
  if (max_nodes > 0) model.setMaximumNodes(max_nodes);
  model.branchAndBound();
  if (max_nodes > 0 && !model.isProvenInfeasible() && !model.bestSolution() && !model.maximumSecondsReached()) {
    nodes += model.getNodeCount();
    if (proven) *proven = false;
    return {};
  }
  if (model.isProvenInfeasible() || !model.bestSolution())
    refuse(p, "no placement serves every robot: the GPUs cannot hold the models' robots together within "
              "their capacities (sum of robots / capacity per GPU at most 1); add GPUs or lower the demand");
  nodes += model.getNodeCount();
  if (proven) *proven = model.isProvenOptimal();
  if (!model.isProvenOptimal() && (max_nodes == 0 || model.maximumSecondsReached()))
    throw std::runtime_error("placement: CBC did not prove its placement the best within 60 s (" +
                             std::to_string(p.models.size()) + " models on " + std::to_string(p.gpus.size()) +
                             " GPUs); try fewer GPUs or models");
  return std::vector<double>(model.bestSolution(), model.bestSolution() + mat.getNumCols());
}

// Refuses, with a clear reason, a problem the solver cannot take: sizes that disagree, or (quick
// checks before the solver) a model with nowhere to go, or more robots than every GPU together
// holds for it alone.
void check_placement_problem(const PlacementProblem& p) {
  const size_t M = p.models.size(), G = p.gpus.size();
  if (p.robots.size() != M || p.capacity.size() != M)
    throw std::invalid_argument("placement: robots and capacity need one entry per model");
  for (size_t m = 0; m < M; ++m) {
    if (p.capacity[m].size() != G) throw std::invalid_argument("placement: capacity needs one entry per GPU");
    long long total = 0;
    for (int c : p.capacity[m]) total += std::max(0, c);
    if (p.robots[m] > total)
      refuse(p, "model '" + p.models[m] + "' has " + std::to_string(p.robots[m]) + " robots but the GPUs hold at most " +
                    std::to_string(total) + " of them even with nothing else on them");
  }
}

}  // namespace

Placement solve_placement(const PlacementProblem& p) {
  const size_t M = p.models.size(), G = p.gpus.size();
  check_placement_problem(p);
  // Variables: x[m][g] (robots, integer) then y[m][g] (instance, binary), index m * G + g.
  const int n = static_cast<int>(2 * M * G);
  auto x = [&](size_t m, size_t g) { return static_cast<int>(m * G + g); };
  auto y = [&](size_t m, size_t g) { return static_cast<int>(M * G + m * G + g); };
  // The most robots of model m GPU g can take: its capacity, and no more than the model has.
  // (The tighter this bound, the tighter x <= bound * y, and the less CBC has to branch.)
  auto most = [&](size_t m, size_t g) { return std::min(std::max(0, p.capacity[m][g]), std::max(0, p.robots[m])); };
  std::vector<double> lo(n, 0.0), hi(n, 0.0), cost(n, 0.0);
  for (size_t m = 0; m < M; ++m)
    for (size_t g = 0; g < G; ++g) {
      hi[x(m, g)] = most(m, g);
      hi[y(m, g)] = most(m, g) > 0 ? 1 : 0;
      cost[y(m, g)] = 1.0;  // one per instance
    }
  CoinPackedMatrix rows(false, 0, 0);
  std::vector<double> rlo, rhi;
  for (size_t m = 0; m < M; ++m) {  // every robot of model m assigned
    CoinPackedVector r;
    for (size_t g = 0; g < G; ++g) r.insert(x(m, g), 1.0);
    rows.appendRow(r);
    rlo.push_back(p.robots[m]);
    rhi.push_back(p.robots[m]);
  }
  for (size_t m = 0; m < M; ++m)  // robots only where an instance is: x <= most * y
    for (size_t g = 0; g < G; ++g) {
      CoinPackedVector r;
      r.insert(x(m, g), 1.0);
      r.insert(y(m, g), -static_cast<double>(most(m, g)));
      rows.appendRow(r);
      rlo.push_back(-COIN_DBL_MAX);
      rhi.push_back(0.0);
    }
  for (size_t g = 0; g < G; ++g) {  // normalised load on every GPU at most 1
    CoinPackedVector r;
    for (size_t m = 0; m < M; ++m)
      if (p.capacity[m][g] > 0) r.insert(x(m, g), 1.0 / p.capacity[m][g]);
    rows.appendRow(r);
    rlo.push_back(-COIN_DBL_MAX);
    rhi.push_back(1.0 + 1e-9);
  }
  long long nodes = 0;  // CBC's search nodes over every solve
  // First the fewest instances; then, among placements with that many, the one whose most
  // loaded GPU is the least loaded (headroom where capacity was measured at the SLO's edge).
  const std::vector<double> first = cbc_solve(p, n, rows, lo, hi, cost, rlo, rhi, 0, nullptr, nodes);
  double instances = 0;
  for (size_t m = 0; m < M; ++m)
    for (size_t g = 0; g < G; ++g) instances += std::lround(first[y(m, g)]);
  const int L = n;  // the most loaded GPU's load, continuous in [0, 1]
  CoinPackedMatrix rows2(false, 0, 0);
  rows2.setDimensions(0, n + 1);
  std::vector<double> rlo2, rhi2;
  for (int i = 0; i < rows.getNumRows(); ++i) {
    const CoinShallowPackedVector r = rows.getVector(i);
    CoinPackedVector v(r.getNumElements(), r.getIndices(), r.getElements());
    if (i >= static_cast<int>(M + M * G)) v.insert(L, -1.0);  // a GPU's load <= L
    rows2.appendRow(v);
    rlo2.push_back(rlo[static_cast<size_t>(i)]);
    rhi2.push_back(i >= static_cast<int>(M + M * G) ? 0.0 : rhi[static_cast<size_t>(i)]);
  }
  CoinPackedVector few;
  for (size_t m = 0; m < M; ++m)
    for (size_t g = 0; g < G; ++g) few.insert(y(m, g), 1.0);
  rows2.appendRow(few);
  rlo2.push_back(-COIN_DBL_MAX);
  rhi2.push_back(instances + 1e-9);
  std::vector<double> lo2 = lo, hi2 = hi, cost2(n + 1, 0.0);
  lo2.push_back(0.0);
  hi2.push_back(1.0 + 1e-9);
  cost2[L] = 1.0;
  // The least load is a refinement (headroom), not the paper's objective, and proving it is a
  // bin-packing proof that can take CBC minutes on 8 alike GPUs: a bounded search.
  bool load_proven = true, ties_proven = true;
  std::vector<double> second = cbc_solve(p, n, rows2, lo2, hi2, cost2, rlo2, rhi2, kLoadSearchNodes, &load_proven, nodes);
  if (second.empty()) {  // none found in the bounded search: the fewest-instance placement, at its load
    second = first;
    std::vector<double> load(G, 0.0);
    for (size_t m = 0; m < M; ++m)
      for (size_t g = 0; g < G; ++g)
        if (p.capacity[m][g] > 0) load[g] += std::round(first[x(m, g)]) / p.capacity[m][g];
    second.push_back(G ? *std::max_element(load.begin(), load.end()) : 0.0);
  }
  // Last, at that load (the third level of the order), whole-number costs CBC cannot round
  // away: an instance not placed before costs more than every instance's GPU number together
  // (instances x G + 1), a GPU's number 0 .. G - 1 breaks the remaining ties. Alike GPUs stay
  hi2[L] = second[L] + 1e-9;
  std::vector<double> cost3(n + 1, 0.0);
  for (size_t m = 0; m < M; ++m)
    for (size_t g = 0; g < G; ++g) {
      const bool kept = m < p.before.size() && g < p.before[m].size() && p.before[m][g] > 0;
      cost3[y(m, g)] = (kept ? 0.0 : instances * static_cast<double>(G) + 1) + static_cast<double>(g);
    }
  std::vector<double> best = cbc_solve(p, n, rows2, lo2, hi2, cost3, rlo2, rhi2, kLoadSearchNodes, &ties_proven, nodes);
  if (best.empty()) best = second;  // none found in the bounded search: the least-load one
  std::vector<std::vector<int>> robots(M, std::vector<int>(G, 0));
  for (size_t m = 0; m < M; ++m)
    for (size_t g = 0; g < G; ++g) robots[m][g] = static_cast<int>(std::lround(best[x(m, g)]));
  Placement out = finish(p, std::move(robots));
  out.load_proven = load_proven && ties_proven;
  out.solver_nodes = nodes;
  return out;
}

namespace {

// `r` robots split as evenly as whole robots go over `gpus` (the first ones take the rest).
void split_evenly(int r, const std::vector<size_t>& gpus, std::vector<int>& row) {
  for (size_t i = 0; i < gpus.size(); ++i)
    row[gpus[i]] = r / static_cast<int>(gpus.size()) + (static_cast<int>(i) < r % static_cast<int>(gpus.size()) ? 1 : 0);
}

}  // namespace

bool parse_placement_strategy(const std::string& name, PlacementStrategy* out) {
  if (name == "ilp") *out = PlacementStrategy::Ilp;
  else if (name == "even") *out = PlacementStrategy::Even;
  else if (name == "dedicated") *out = PlacementStrategy::Dedicated;
  else return false;
  return true;
}

Placement place_robots(const PlacementProblem& p, const std::vector<int>& robots, PlacementStrategy s) {
  PlacementProblem q = p;
  q.robots = robots;
  if (s == PlacementStrategy::Ilp) return solve_placement(q);
  const size_t M = p.models.size(), G = p.gpus.size();
  std::vector<std::vector<int>> x(M, std::vector<int>(G, 0));
  if (s == PlacementStrategy::Even) {
    for (size_t m = 0; m < M; ++m) {
      std::vector<size_t> runs;
      for (size_t g = 0; g < G; ++g)
        if (p.capacity[m][g] > 0) runs.push_back(g);
      if (robots[m] > 0) split_evenly(robots[m], runs, x[m]);
    }
    return finish(p, x);
  }
  // Dedicated: every model with robots gets a GPU, then each further GPU goes to the model
  // whose GPUs are the most loaded (robots / (capacity x its GPUs)); GPUs in order. Defined for
  // GPUs that are alike (one capacity per model).
  for (size_t m = 0; m < M; ++m)
    if (std::any_of(p.capacity[m].begin(), p.capacity[m].end(), [&](int c) { return c != p.capacity[m][0]; }))
      refuse(q, "one model per GPU (dedicated) is defined for GPUs that are alike, but model '" + p.models[m] +
                    "' has different capacities on them");
  std::vector<size_t> serving;
  for (size_t m = 0; m < M; ++m)
    if (robots[m] > 0) serving.push_back(m);
  if (serving.size() > G)
    refuse(q, std::to_string(serving.size()) + " models have robots but there are only " + std::to_string(G) +
                  " GPUs: one model per GPU cannot serve them all");
  std::vector<int> share(M, 0);
  for (size_t m : serving) share[m] = 1;
  auto load = [&](size_t m) { return robots[m] / (static_cast<double>(std::max(1, p.capacity[m][0])) * share[m]); };
  for (size_t extra = serving.size(); extra < G && !serving.empty(); ++extra) {
    size_t best = serving.front();
    for (size_t m : serving)
      if (load(m) > load(best)) best = m;
    ++share[best];
  }
  size_t next = 0;
  for (size_t m : serving) {
    std::vector<size_t> gpus;
    for (int k = 0; k < share[m]; ++k, ++next) {
      if (p.capacity[m][next] <= 0)
        refuse(q, "model '" + p.models[m] + "' cannot run on " + p.gpus[next] + ", the GPU one model per GPU gives it");
      gpus.push_back(next);
    }
    split_evenly(robots[m], gpus, x[m]);
  }
  return finish(p, x);
}

std::vector<Placement> control_traffic(const PlacementProblem& p, PlacementStrategy s) {
  std::vector<Placement> phases{place_robots(p, p.robots, s)};
  for (const PlacementProblem::Change& c : p.changes) {
    PlacementProblem q = p;
    q.where = c.where;  // a phase that cannot be placed is refused at its change
    q.before = phases.back().robots;  // keep what can be kept: moving a model means loading it
    phases.push_back(place_robots(q, c.robots, s));
  }
  return phases;
}

std::vector<int> scaled_demand(const PlacementProblem& p, int percent) {
  std::vector<int> out;
  for (int r : p.robots) out.push_back(static_cast<int>((static_cast<long long>(r) * percent + 99) / 100));
  return out;
}

DemandSearch maximize_demand(const PlacementProblem& p, PlacementStrategy s, const DemandJudge& judge,
                             const std::function<void(const DemandStep&)>& progress, int max_percent) {
  if (max_percent < 1) throw std::invalid_argument("maximize_demand: max_percent below 1");
  if (std::all_of(p.robots.begin(), p.robots.end(), [](int r) { return r <= 0; }))
    throw std::invalid_argument("maximize_demand: every model has 0 robots: there is no demand to scale");
  PlacementProblem q = p;
  q.where = ConfigNode();  // a demand it cannot place is a step, not an error at the file
  q.changes.clear();
  DemandSearch out;
  auto try_percent = [&](int percent) {
    DemandStep st;
    st.percent = percent;
    st.robots = scaled_demand(p, percent);
    try {
      st.placement = place_robots(q, st.robots, s);
      st.placed = true;
    } catch (const std::invalid_argument& e) {
      st.note = e.what();
      const std::string prefix = "placement: ";
      if (st.note.rfind(prefix, 0) == 0) st.note = st.note.substr(prefix.size());
      const std::string none = "no placement serves every robot";
      if (st.note.rfind(none, 0) == 0) st.note = none + " within the GPUs' capacities";
    }
    if (st.placed && st.placement.load_max > 1 + 1e-9) {
      st.placed = false;
      char b[96];
      std::snprintf(b, sizeof b, "a GPU is loaded to %.0f%% of what it sustains", 100 * st.placement.load_max);
      st.note = b;
    }
    st.holds = st.placed && (!judge || judge(st.robots, st.placement, &st.note));
    out.steps.push_back(st);
    if (progress) progress(out.steps.back());
    if (st.holds && (out.best < 0 || percent > out.steps[static_cast<size_t>(out.best)].percent))
      out.best = static_cast<int>(out.steps.size() - 1);
    return st.holds;
  };
  int lo = 0, hi = 0;  // largest that held (0: none yet), smallest that did not (0: none yet)
  for (int k = std::min(100, max_percent);; k = static_cast<int>(std::min<long long>(2LL * k, max_percent))) {
    if (try_percent(k)) {
      lo = k;
      if (k == max_percent) {
        out.capped = true;
        return out;
      }
      continue;
    }
    hi = k;
    break;
  }
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (try_percent(mid) ? lo : hi) = mid;
  }
  return out;
}

std::string demand_search_markdown(const PlacementProblem& p, const DemandSearch& d) {
  std::ostringstream os;
  os << "| demand | robots |";
  for (const std::string& m : p.models) os << ' ' << m << " |";
  os << " instances | busiest GPU | holds | note |\n|---|---|";
  for (size_t m = 0; m < p.models.size(); ++m) os << "---|";
  os << "---|---|---|---|\n";
  std::vector<size_t> order(d.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return d.steps[a].percent < d.steps[b].percent; });
  for (size_t i : order) {
    const DemandStep& st = d.steps[i];
    os << "| " << st.percent << "% | " << std::accumulate(st.robots.begin(), st.robots.end(), 0LL) << " |";
    for (int r : st.robots) os << ' ' << r << " |";
    if (st.placed) os << ' ' << st.placement.instances << " | " << std::lround(100 * st.placement.load_max) << "% |";
    else os << " - | - |";
    os << ' ' << (st.holds ? "yes" : "no") << (static_cast<int>(i) == d.best ? " (largest)" : "") << " | " << st.note << " |\n";
  }
  if (d.best < 0) os << "\nNo demand holds, down to 1% of the problem's.\n";
  else if (d.capped) os << "\nEvery demand tried holds, up to the search's limit.\n";
  return os.str();
}

std::string controller_markdown(const PlacementProblem& p, const std::vector<Placement>& phases) {
  if (phases.size() == 1) return placement_markdown(p, phases[0], p.robots);
  std::ostringstream os;
  for (size_t k = 0; k < phases.size(); ++k) {
    char at[32];
    std::snprintf(at, sizeof at, "%g", k == 0 ? 0.0 : p.changes[k - 1].at_s);
    os << (k ? "\n" : "") << "From " << at << " s:\n\n"
       << placement_markdown(p, phases[k], k == 0 ? p.robots : p.changes[k - 1].robots);
  }
  return os.str();
}

namespace {
// placement_csv's rows (no header), each line started by `prefix`.
void placement_rows(std::ostream& os, const PlacementProblem& p, const Placement& x, const std::string& prefix) {
  for (size_t m = 0; m < p.models.size(); ++m)
    for (size_t g = 0; g < p.gpus.size(); ++g)
      if (x.robots[m][g] > 0) {
        char load[32];
        std::snprintf(load, sizeof load, "%.4f", static_cast<double>(x.robots[m][g]) / p.capacity[m][g]);
        os << prefix << csv_field(p.models[m]) << ',' << csv_field(p.gpus[g]) << ',' << x.robots[m][g] << ','
           << p.capacity[m][g] << ',' << load << '\n';
      }
}
}  // namespace

std::string controller_csv(const PlacementProblem& p, const std::vector<Placement>& phases) {
  if (phases.size() == 1) return placement_csv(p, phases[0]);
  std::ostringstream os;
  os << "phase,at_s,model,gpu,robots,capacity,load\n";
  for (size_t k = 0; k < phases.size(); ++k) {
    char at[32];
    std::snprintf(at, sizeof at, "%g", k == 0 ? 0.0 : p.changes[k - 1].at_s);
    placement_rows(os, p, phases[k], std::to_string(k) + ',' + at + ',');
  }
  return os.str();
}

PlacementProblem load_placement_problem(const std::string& path) {
  ConfigNode root = ConfigNode::load_file(path);
  if (!root.is_map()) root.fail("a placement problem is a map with gpus and models");
  root.check_keys({"gpus", "models", "changes"});
  PlacementProblem p;
  p.where = root.required("models");
  std::vector<std::string> gpu_catalog;
  for (const ConfigNode& g : root.required("gpus").items()) {
    g.check_keys({"name", "catalog", "count"});
    const std::string base = g.required("name").as_string(), cat = g.required("catalog").as_string();
    const long long count = g.get_count("count", 1, 1, 4096);
    for (long long i = 0; i < count; ++i) {
      const std::string name = g.has("count") ? base + std::to_string(i) : base;
      if (std::count(p.gpus.begin(), p.gpus.end(), name)) g.required("name").fail("duplicate GPU '" + name + "'");
      p.gpus.push_back(name);
      gpu_catalog.push_back(cat);
      p.gpu_catalog.push_back(cat);
    }
  }
  if (p.gpus.empty()) root.required("gpus").fail("at least one GPU is needed");
  for (const ConfigNode& m : root.required("models").items()) {
    m.check_keys({"name", "robots", "capacity"});
    const std::string name = m.required("name").as_string();
    if (std::count(p.models.begin(), p.models.end(), name)) m.required("name").fail("duplicate model '" + name + "'");
    p.models.push_back(name);
    if (!m.has("robots")) m.required("robots");
    p.robots.push_back(static_cast<int>(m.get_count("robots", 0, 0, 1000000)));
    std::map<std::string, int> cap;
    ConfigNode cn = m.required("capacity");
    if (!cn.is_map()) cn.fail("capacity is a map: catalog entry -> robots one such GPU sustains for this model");
    for (const auto& [key, value] : cn.entries()) {
      if (!std::count(gpu_catalog.begin(), gpu_catalog.end(), key))
        value.fail("no GPU is catalog entry '" + key + "'");
      cap[key] = static_cast<int>(cn.get_count(key, 0, 0, 1000000));
    }
    std::vector<int> row;
    for (const std::string& c : gpu_catalog) row.push_back(cap.count(c) ? cap[c] : 0);
    if (p.robots.back() > 0 && std::all_of(row.begin(), row.end(), [](int c) { return c == 0; }))
      cn.fail("model '" + name + "' has robots but no GPU can run it (every capacity is 0)");
    p.capacity.push_back(row);
  }
  if (p.models.empty()) p.where.fail("at least one model is needed");
  if (root.has("changes")) {
    std::vector<int> robots = p.robots;
    double last = 0;
    for (const ConfigNode& c : root.required("changes").items()) {
      c.check_keys({"at_s", "robots"});
      PlacementProblem::Change ch;
      ch.where = c;
      ch.at_s = c.get_positive("at_s");
      if (!(ch.at_s > last)) c.required("at_s").fail("changes come in time order, each after the one before");
      last = ch.at_s;
      const ConfigNode r = c.required("robots");
      if (!r.is_map() || r.entries().empty()) r.fail("robots is a map: model -> robots from this time on");
      for (const auto& [name, value] : r.entries()) {
        const auto it = std::find(p.models.begin(), p.models.end(), name);
        if (it == p.models.end()) value.fail("no model '" + name + "' in the problem; models are: " + join_names(p.models));
        const size_t m = static_cast<size_t>(it - p.models.begin());
        robots[m] = static_cast<int>(r.get_count(name, 0, 0, 1000000));
        if (robots[m] > 0 && std::all_of(p.capacity[m].begin(), p.capacity[m].end(), [](int x) { return x == 0; }))
          value.fail("model '" + name + "' has robots but no GPU can run it (every capacity is 0)");
      }
      ch.robots = robots;
      p.changes.push_back(std::move(ch));
    }
  }
  return p;
}

std::string placement_markdown(const PlacementProblem& p, const Placement& x, const std::vector<int>& robots) {
  std::ostringstream os;
  os << "| model | robots |";
  for (const auto& g : p.gpus) os << ' ' << g << " |";
  os << "\n|---|---|";
  for (size_t g = 0; g < p.gpus.size(); ++g) os << "---|";
  os << '\n';
  for (size_t m = 0; m < p.models.size(); ++m) {
    os << "| " << p.models[m] << " | " << robots[m] << " |";
    for (size_t g = 0; g < p.gpus.size(); ++g) os << ' ' << (x.robots[m][g] ? std::to_string(x.robots[m][g]) : "") << " |";
    os << '\n';
  }
  os << "\n" << x.instances << " model instances; the most loaded GPU at " << std::lround(100 * x.load_max)
     << "% of what it sustains" << (x.load_proven ? "" : " (the least load CBC found in its bounded search, not proven the least)") << "\n";
  return os.str();
}


std::string placement_csv(const PlacementProblem& p, const Placement& x) {
  std::ostringstream os;
  os << "model,gpu,robots,capacity,load\n";
  placement_rows(os, p, x, "");
  return os.str();
}

namespace {

// Replaces, anywhere under `n`, a scalar `device:`, `first:` or `second:` naming a device of
// `to` (or one of its units, "device.unit") by its new name (keeping the unit).
void move_device_refs(YAML::Node n, const std::map<std::string, std::string>& to) {
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      YAML::Node v = it->second;
      if (v.IsScalar() && (key == "device" || key == "first" || key == "second")) {
        const std::string ref = v.as<std::string>();
        const size_t dot = ref.find('.');
        const auto m = to.find(ref.substr(0, dot));
        if (m != to.end()) v = m->second + (dot == std::string::npos ? "" : ref.substr(dot));
      } else {
        move_device_refs(v, to);
      }
    }
  } else if (n.IsSequence()) {
    for (YAML::Node v : n) move_device_refs(v, to);
  }
}

// The fleet's links: one touching a slot device is copied per GPU (its ends renamed, and its name
// given the GPU's); one between shared devices is kept once.
YAML::Node fleet_links(const ConfigNode& link_list, const PlacementProblem& p,
                       std::vector<std::map<std::string, std::string>>& slot_names) {
  YAML::Node links(YAML::NodeType::Sequence);
  for (const ConfigNode& l : link_list.items()) {
    const std::vector<std::string> ends = l.required("between").as_strings();
    const bool per_gpu = std::any_of(ends.begin(), ends.end(), [&](const std::string& e) { return slot_names[0].count(e) > 0; });
    for (size_t g = 0; g < (per_gpu ? p.gpus.size() : 1); ++g) {
      YAML::Node li = YAML::Clone(l.raw());
      if (per_gpu) {
        YAML::Node between(YAML::NodeType::Sequence);
        for (const std::string& e : ends) between.push_back(slot_names[g].count(e) ? slot_names[g][e] : e);
        li["between"] = between;
        if (l.has("name")) li["name"] = l.required("name").as_string() + "-" + p.gpus[g];
      }
      links.push_back(li);
    }
  }
  return links;
}

}  // namespace

// Sets a fleet workload entry to run through phase k of p: from the phase's start (start_s
// after the template's own start) to its end, the last phase to the template's duration dur.
static void set_phase_window(YAML::Node& wi, const PlacementProblem& p, size_t k, double start, double dur) {
  const double from = k == 0 ? 0 : p.changes[k - 1].at_s;
  const double to = k < p.changes.size() ? p.changes[k].at_s : dur;
  wi["start_s"] = start + from;
  wi["duration_s"] = std::min(to, dur) - from;
}

std::string fleet_scenario_yaml(const PlacementProblem& p, const std::vector<Placement>& phases,
                                const std::string& template_path) {
  if (phases.size() != p.changes.size() + 1)
    throw std::invalid_argument("fleet_scenario_yaml: one placement per phase (" +
                                std::to_string(p.changes.size() + 1) + "), got " + std::to_string(phases.size()));
  ConfigNode root = ConfigNode::load_file(template_path);
  if (!root.is_map()) root.fail("a scenario is a map");
  const ConfigNode dev_list = root.required("hardware").required("devices");
  const std::vector<ConfigNode> devs = dev_list.items();
  // The slot: the template's devices of the problem GPUs' catalog entry (one GPU, or the two of
  // an inter-GPU server), copied once per problem GPU; the other devices (a host CPU that
  // GPUs hand data through) are shared by every slot and kept once.
  const std::string cat = p.gpu_catalog.empty() ? "" : p.gpu_catalog.front();
  std::vector<ConfigNode> slot, shared;
  for (const ConfigNode& d : devs) (d.required("catalog").as_string() == cat ? slot : shared).push_back(d);
  if (slot.empty())
    dev_list.fail("a fleet template has a device of the problem's GPUs (catalog entry '" + cat +
                  "'), copied once per GPU of the problem");
  for (size_t g = 0; g < p.gpus.size(); ++g)
    if (p.gpu_catalog[g] != cat)
      slot[0].required("catalog").fail("the template's GPU is '" + cat + "' but the problem's " + p.gpus[g] + " is '" +
                                       p.gpu_catalog[g] + "'");
  for (const ConfigNode& d : slot)
    if (d.has("count"))
      d.required("count").fail("a fleet template's GPU is one device (the fleet copies it once per GPU of the problem)");
  // slot_names[g]: each slot device's name in the fleet: the problem's GPU name for a one-GPU
  // slot, PROBLEMGPU-DEVICE for more.
  std::vector<std::map<std::string, std::string>> slot_names(p.gpus.size());
  std::set<std::string> fleet_names;
  for (size_t g = 0; g < p.gpus.size(); ++g)
    for (const ConfigNode& d : slot) {
      const std::string name = d.required("name").as_string();
      slot_names[g][name] = slot.size() == 1 ? p.gpus[g] : p.gpus[g] + "-" + name;
      fleet_names.insert(slot_names[g][name]);
    }
  for (const ConfigNode& d : shared)
    if (fleet_names.count(d.required("name").as_string()))
      d.required("name").fail("this device's name is the name the fleet gives a GPU; rename it");
  // The template's model entries by name; models the problem does not place are left out.
  std::map<std::string, YAML::Node> models;
  for (const ConfigNode& m : root.required("models").items()) {
    const std::string name = m.has("name") ? m.required("name").as_string() : m.required("card").as_string();
    if (std::find(p.models.begin(), p.models.end(), name) != p.models.end()) models[name] = m.raw();
  }
  for (const std::string& name : p.models)
    if (!models.count(name)) root.required("models").fail("the template has no model '" + name + "' of the placement problem");
  std::map<std::string, int> entries;  // workload entries per model: one, whose count the placement sets
  for (const ConfigNode& w : root.required("workload").items())
    if (++entries[w.required("model").as_string()] > 1)
      w.required("model").fail("a fleet template has one workload entry per model (its robots)");
  for (size_t m = 0; m < p.models.size(); ++m) {
    const bool serves = std::any_of(phases.begin(), phases.end(), [&](const Placement& x) {
      return std::any_of(x.robots[m].begin(), x.robots[m].end(), [](int r) { return r > 0; });
    });
    if (serves && !entries.count(p.models[m]))
      root.required("workload").fail("the template has no workload entry for model '" + p.models[m] + "'");
  }

  YAML::Node out = YAML::Clone(root.raw());
  YAML::Node devices(YAML::NodeType::Sequence);
  for (size_t g = 0; g < p.gpus.size(); ++g)
    for (const ConfigNode& sd : slot) {
      YAML::Node d = YAML::Clone(sd.raw());
      d["name"] = slot_names[g][sd.required("name").as_string()];
      devices.push_back(d);
    }
  for (const ConfigNode& sd : shared) devices.push_back(YAML::Clone(sd.raw()));
  out["hardware"]["devices"] = devices;
  if (root.required("hardware").has("links"))
    out["hardware"]["links"] = fleet_links(root.required("hardware").required("links"), p, slot_names);
  YAML::Node model_list(YAML::NodeType::Sequence), workload(YAML::NodeType::Sequence);
  for (size_t m = 0; m < p.models.size(); ++m)
    for (size_t g = 0; g < p.gpus.size(); ++g) {
      if (std::none_of(phases.begin(), phases.end(), [&](const Placement& x) { return x.robots[m][g] > 0; }))
        continue;
      const std::string inst = instance_name(p.models[m], p.gpus[g]);
      YAML::Node mi = YAML::Clone(models[p.models[m]]);
      if (!mi["card"]) mi["card"] = p.models[m];
      mi["name"] = inst;
      move_device_refs(mi, slot_names[g]);
      model_list.push_back(mi);
      for (const ConfigNode& w : root.required("workload").items()) {
        if (w.required("model").as_string() != p.models[m]) continue;
        const double start = w.get_nonneg("start_s", 0);
        const double dur = w.get_positive("duration_s", 0);
        for (size_t k = 0; k < phases.size(); ++k) {
          if (phases[k].robots[m][g] <= 0) continue;
          YAML::Node wi = YAML::Clone(w.raw());
          wi["model"] = inst;
          wi["name"] = (w.has("name") ? w.required("name").as_string() : p.models[m]) + "-" + p.gpus[g] +
                       (phases.size() > 1 ? "-p" + std::to_string(k) : "");
          wi["count"] = phases[k].robots[m][g];
          if (phases.size() > 1) {
            if (!w.has("duration_s"))
              w.fail("a template for changing demand gives its workload a duration_s (the whole run)");
            if (k > 0 && p.changes[k - 1].at_s >= dur) {
              char end_s[32];
              std::snprintf(end_s, sizeof end_s, "%g", dur);
              p.changes[k - 1].where.required("at_s").fail(std::string("this change comes after the template's workload ends (") +
                                                           end_s + " s)");
            }
            set_phase_window(wi, p, k, start, dur);
          }
          workload.push_back(wi);
        }
      }
    }
  out["models"] = model_list;
  out["workload"] = workload;
  out["name"] = root.get_string("name", "fleet") + "-fleet";
  YAML::Emitter e;
  e << out;
  return "# The fleet `vlasim place` made from " + template_path + ": one instance per (model, GPU) the\n"
         "# placement serves, with the robots placed there.\n" + std::string(e.c_str()) + "\n";
}

std::string live_fleet_scenario_yaml(const PlacementProblem& p, const std::string& template_path,
                                     const std::string& problem_ref, double interval_s, const std::string& strategy) {
  // Every instance the controller may route to: each model on each GPU that can run it.
  Placement all;
  all.robots.assign(p.models.size(), std::vector<int>(p.gpus.size(), 0));
  for (size_t m = 0; m < p.models.size(); ++m)
    for (size_t g = 0; g < p.gpus.size(); ++g) all.robots[m][g] = p.capacity[m][g] > 0 ? 1 : 0;
  YAML::Node out = YAML::Load(fleet_scenario_yaml(p, std::vector<Placement>(p.changes.size() + 1, all), template_path));
  // The factory's demand, naming the model (a group). A robot keeps its identity (its stream)
  // over the phases it is there: robot r of a model (r = 1, 2, ...) runs in the phases whose
  // count reaches r, and robots there in the same phases form one entry per unbroken run.
  ConfigNode root = ConfigNode::load_file(template_path);
  YAML::Node workload(YAML::NodeType::Sequence);
  const size_t phases = p.changes.size() + 1;
  for (const ConfigNode& w : root.required("workload").items()) {
    const std::string model = w.required("model").as_string();
    const size_t m = static_cast<size_t>(std::find(p.models.begin(), p.models.end(), model) - p.models.begin());
    if (m == p.models.size()) continue;  // a template model the problem does not place
    const double start = w.get_nonneg("start_s", 0), dur = w.get_positive("duration_s", 0);
    std::vector<int> count(phases);
    for (size_t k = 0; k < phases; ++k) count[k] = k == 0 ? p.robots[m] : p.changes[k - 1].robots[m];
    const int most = *std::max_element(count.begin(), count.end());
    const std::string base = w.has("name") ? w.required("name").as_string() : model;
    auto same_phases = [&](int a, int b) {
      for (size_t k = 0; k < phases; ++k)
        if ((count[k] >= a) != (count[k] >= b)) return false;
      return true;
    };
    int band = 0;
    for (int r = 1; r <= most;) {
      int r2 = r + 1;  // robots r .. r2-1 are there in the same phases
      while (r2 <= most && same_phases(r, r2)) ++r2;
      for (size_t k = 0; k < phases;) {
        if (count[k] < r) {
          ++k;
          continue;
        }
        size_t k2 = k;
        while (k2 + 1 < phases && count[k2 + 1] >= r) ++k2;
        YAML::Node wi = YAML::Clone(w.raw());
        wi["name"] = base + (phases > 1 ? "-b" + std::to_string(band++) : "");
        wi["count"] = r2 - r;
        if (phases > 1) {
          const double from = k == 0 ? 0 : p.changes[k - 1].at_s;
          const double to = k2 < p.changes.size() ? p.changes[k2].at_s : dur;
          wi["start_s"] = start + from;
          wi["duration_s"] = std::min(to, dur) - from;
        }
        workload.push_back(wi);
        k = k2 + 1;
      }
      r = r2;
    }
  }
  out["workload"] = workload;
  YAML::Node c;
  c["problem"] = problem_ref;
  c["interval_s"] = interval_s;
  c["strategy"] = strategy;
  out["controller"] = c;
  out["name"] = root.get_string("name", "fleet") + "-fleet-live";
  YAML::Emitter e;
  e << out;
  return "# The fleet `vlasim place --live` made from " + template_path + ": every model on every GPU that\n"
         "# can run it; the factory's robots (each a stream over the phases it is there) name their\n"
         "# model, and the traffic controller routes them,\n"
         "# re-solving the placement for the demand it sees every interval_s.\n" + std::string(e.c_str()) + "\n";
}

}  // namespace vlasim
