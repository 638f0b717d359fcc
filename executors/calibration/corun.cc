// The co-run pass of in-context calibration (calibrate.h) and the slowdown figures it gives.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "executors/calibration/calibrate.h"
#include "executors/calibration/calibrate_internal.h"
#include "executors/executor_registry.h"
#include "sim/engine/engine.h"

namespace vlasim::calib {

namespace {

// A figure needs at least this many runs of each kind.
constexpr int kCorunMinRuns = 5;
constexpr double kMaxCorunSlowdown = 10;  // figures are clamped to [1/10, 10]

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

// A loaded run the other groups overlapped less than this (median) gives no figure.
constexpr double kCorunMinOverlap = 0.5;

// The median over rounds of loaded run i / alone run i (the pass takes one of each per round,
// a fraction of a second apart, so the machine's own speed changes over seconds cancel in
// each pair); 0 when a run is not positive or the two differ in length.
double paired_ratio(const std::vector<double>& loaded, const std::vector<double>& alone) {
  if (loaded.size() != alone.size() || loaded.empty()) return 0;
  std::vector<double> r;
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (!(loaded[i] > 0) || !(alone[i] > 0)) return 0;
    r.push_back(loaded[i] / alone[i]);
  }
  return median_of(r);
}

// One distinct segment of the co-run pass, where it runs, and its timed runs.
struct CorunRun {
  size_t model = 0, segment = 0;  // in p's own plans
  int unit = 0, cores = 0;
  std::string key, label;
  Executor* ex = nullptr;
  int handle = 0;
  std::vector<double> alone, loaded, alone_cpu, loaded_cpu, overlap;
};

using CorunClock = std::chrono::steady_clock;

// Seconds from t_base to now.
double corun_since(CorunClock::time_point t_base) {
  return std::chrono::duration<double>(CorunClock::now() - t_base).count();
}

// The cores of the core group that is unit `unit` of p.
int corun_unit_cores(const Scenario& s, const Plan& p, int unit) {
  const UnitInfo& ui = p.units[static_cast<size_t>(unit)];
  return s.devices[static_cast<size_t>(ui.device)].units[static_cast<size_t>(ui.unit)].cores;
}

// The segments of the models' own plans with a corun_key, each key once (the same work twice
// is measured once), on devices where at least two core groups run one.
std::vector<CorunRun> corun_segments(const Scenario& s, const Plan& p) {
  std::vector<CorunRun> runs;
  const size_t nm = std::min(p.models.size(), s.models.size());
  std::set<std::string> keys;
  for (size_t m = 0; m < nm; ++m)
    for (size_t k = 0; k < p.models[m].segments.size(); ++k) {
      const std::string key = corun_key(s, p, static_cast<int>(m), static_cast<int>(k));
      if (key.empty() || !keys.insert(key).second) continue;  // the same work twice is measured once
      const Segment& seg = p.models[m].segments[k];
      CorunRun r;
      r.model = m;
      r.segment = k;
      r.unit = seg.unit;
      r.key = key;
      r.label = s.name + " " + s.models[m].name + " " + seg.label + " (" + p.units[static_cast<size_t>(seg.unit)].name + ")";
      r.cores = corun_unit_cores(s, p, seg.unit);
      runs.push_back(r);
    }
  std::map<int, std::set<int>> units_of;  // device -> its core groups that run segments
  for (const CorunRun& r : runs) units_of[p.units[static_cast<size_t>(r.unit)].device].insert(r.unit);
  std::erase_if(runs, [&](const CorunRun& r) { return units_of[p.units[static_cast<size_t>(r.unit)].device].size() < 2; });
  return runs;
}

// Prepares each run's segment on the executor of its (core group, dtype), made in `exs` from
// the registry's `executor` on the group's CPUs with the scenario's seed.
void prepare_corun(const Scenario& s, const Plan& p, const std::string& executor, std::vector<CorunRun>& runs,
                   std::map<std::pair<int, DType>, std::unique_ptr<Executor>>& exs) {
  for (CorunRun& r : runs) {
    const Segment& seg = p.models[r.model].segments[r.segment];
    const DType dtype = s.models[r.model].shape.dtype;
    auto& ex = exs[{seg.unit, dtype}];
    if (!ex) {
      const UnitInfo& ui = p.units[static_cast<size_t>(seg.unit)];
      const UnitDecl& ud = s.devices[static_cast<size_t>(ui.device)].units[static_cast<size_t>(ui.unit)];
      std::string cpus;
      for (int c = 0; c < ud.cores; ++c) cpus += (c ? ", " : "") + std::to_string(ud.first_core + c);
      const std::string yaml = "{dtype: " + std::string(to_string(dtype)) + ", cpus: [" + cpus + "], seed: " +
                               std::to_string(s.seed) + "}";
      ConfigNode n = ConfigNode::load_string(yaml, "<calibrate co-run>");
      ex = executor_registry().make(executor, Params(n), n);
    }
    r.ex = ex.get();
    r.handle = ex->prepare(p.models[r.model].graph, seg.ops);
  }
}

// The share of the run over `span` that the loaders were running a segment (each loader's
// [start, end) runs in busy[l]), weighted by their cores as the engine's busy fraction is.
double corun_overlap(std::pair<double, double> span, const std::vector<std::vector<std::pair<double, double>>>& busy,
                     const std::vector<int>& loader_cores) {
  const double len = span.second - span.first;
  double covered = 0, weight = 0;
  for (size_t l = 0; l < busy.size(); ++l) {
    double on = 0;
    for (const auto& [b0, b1] : busy[l]) on += std::max(0.0, std::min(b1, span.second) - std::max(b0, span.first));
    covered += loader_cores[l] * (len > 0 ? std::min(1.0, on / len) : 1.0);
    weight += loader_cores[l];
  }
  return weight > 0 ? covered / weight : 0;
}

// One loaded round of core group u: every other core group of u's device runs its segments
// over and over on a thread of its own; once each has run one, u's segments run once each
// (an untimed run, then a timed one) into their loaded samples and overlaps. Throws
// std::runtime_error when a co-running segment fails.
void corun_loaded_round(const Scenario& s, const Plan& p, std::vector<CorunRun>& runs, const std::set<int>& units,
                        int u, CorunClock::time_point t_base) {
  const int device = p.units[static_cast<size_t>(u)].device;
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<std::atomic<int>>> done;
  std::vector<std::thread> loaders;
  // Per loader: its group's cores and the [start, end) of each of its runs (seconds since
  // t_base), read once it has joined.
  std::vector<int> loader_cores;
  std::vector<std::vector<std::pair<double, double>>> busy;
  for (int o : units)
    if (o != u && p.units[static_cast<size_t>(o)].device == device) loader_cores.push_back(corun_unit_cores(s, p, o));
  busy.resize(loader_cores.size());
  std::mutex error_mu;
  std::string error;
  for (int o : units) {
    if (o == u || p.units[static_cast<size_t>(o)].device != device) continue;
    done.push_back(std::make_unique<std::atomic<int>>(0));
    loaders.emplace_back([&, o, d = done.back().get(), b = &busy[loaders.size()]] {
      try {
        while (!stop.load())
          for (CorunRun& r : runs)
            if (r.unit == o && !stop.load()) {
              const double t0 = corun_since(t_base);
              r.ex->run(r.handle);
              b->emplace_back(t0, corun_since(t_base));
              d->fetch_add(1);
            }
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        error = e.what();
        d->store(1 << 30);
      }
    });
  }
  for (auto& d : done)
    while (d->load() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  std::vector<std::pair<CorunRun*, std::pair<double, double>>> timed;  // each timed run's [start, end)
  for (CorunRun& r : runs)
    if (r.unit == u) {
      r.ex->run(r.handle);
      const double t0 = corun_since(t_base);
      const SegmentTiming& t = r.ex->run(r.handle);
      timed.push_back({&r, {t0, corun_since(t_base)}});
      r.loaded.push_back(t.total);
      r.loaded_cpu.push_back(t.cpu);
    }
  stop.store(true);
  for (std::thread& t : loaders) t.join();
  if (!error.empty()) throw std::runtime_error("co-run pass: a co-running segment failed: " + error);
  for (auto& [r, span] : timed) r->overlap.push_back(corun_overlap(span, busy, loader_cores));
}

// Adds each run's samples to out[its key] (the label of the first scenario that has the key).
void pool_corun_samples(const std::vector<CorunRun>& runs, std::map<std::string, CorunSamples>& out) {
  for (const CorunRun& r : runs) {
    CorunSamples& cs = out[r.key];
    if (cs.label.empty()) cs.label = r.label;
    cs.cores = r.cores;
    cs.alone.insert(cs.alone.end(), r.alone.begin(), r.alone.end());
    cs.loaded.insert(cs.loaded.end(), r.loaded.begin(), r.loaded.end());
    cs.alone_cpu.insert(cs.alone_cpu.end(), r.alone_cpu.begin(), r.alone_cpu.end());
    cs.loaded_cpu.insert(cs.loaded_cpu.end(), r.loaded_cpu.begin(), r.loaded_cpu.end());
    cs.overlap.insert(cs.overlap.end(), r.overlap.begin(), r.overlap.end());
  }
}

}  // namespace

// The co-run slowdown of `cs` at full overlap: the median over rounds of the loaded run over
// the same round's alone run (paired_ratio), in the running thread's CPU time where every
// run has one and the group has 1 core (else in wall time), scaled to full overlap by the
// median share of the loaded runs the other groups ran, 1 + (ratio - 1) / overlap, clamped to
// [1/10, 10]. None with fewer than kCorunMinRuns pairs, a run not positive, or an overlap
// under kCorunMinOverlap. Fills *d.
std::optional<CorunSlowdown> corun_figure(const std::string& key, const CorunSamples& cs, CorunDetail* d) {
  if (cs.loaded.size() < static_cast<size_t>(kCorunMinRuns) || cs.alone.size() != cs.loaded.size())
    return std::nullopt;
  auto known = [](const std::vector<double>& cpu, const std::vector<double>& wall) {
    return cpu.size() == wall.size() && std::all_of(cpu.begin(), cpu.end(), [](double x) { return x > 0; });
  };
  const bool cpu_time = cs.cores == 1 && known(cs.alone_cpu, cs.alone) && known(cs.loaded_cpu, cs.loaded);
  const double ratio = cpu_time ? paired_ratio(cs.loaded_cpu, cs.alone_cpu) : paired_ratio(cs.loaded, cs.alone);
  const double wall_ratio = paired_ratio(cs.loaded, cs.alone);
  if (!(ratio > 0) || !(wall_ratio > 0)) return std::nullopt;
  const double overlap = cs.overlap.empty() ? 1.0 : std::min(1.0, median_of(cs.overlap));
  if (!(overlap >= kCorunMinOverlap)) return std::nullopt;
  // Share of each run's wall time off its CPU.
  auto off_cpu = [](const std::vector<double>& cpu, const std::vector<double>& wall) {
    std::vector<double> v;
    for (size_t i = 0; i < wall.size() && i < cpu.size(); ++i)
      if (cpu[i] >= 0 && wall[i] > 0) v.push_back(std::max(0.0, 1 - cpu[i] / wall[i]));
    return v.size() == wall.size() && !v.empty() ? median_of(v) : -1.0;
  };
  CorunSlowdown c;
  c.key = key;
  c.segment = cs.label;
  c.runs = static_cast<int>(cs.loaded.size());
  c.overlap = overlap;
  c.slowdown = std::clamp(1 + (ratio - 1) / overlap, 1 / kMaxCorunSlowdown, kMaxCorunSlowdown);
  d->key = key;
  d->segment = cs.label;
  d->cpu_time = cpu_time;
  d->ratio = ratio;
  d->wall_ratio = wall_ratio;
  d->overlap = overlap;
  d->off_cpu_alone = off_cpu(cs.alone_cpu, cs.alone);
  d->off_cpu_loaded = off_cpu(cs.loaded_cpu, cs.loaded);
  d->alone_s = median_of(cs.alone);
  d->loaded_s = median_of(cs.loaded);
  return c;
}

void corun_pass(const Scenario& s, const Plan& p, double seconds, const std::string& executor,
                std::map<std::string, CorunSamples>& out) {
  const CorunClock::time_point t_base = CorunClock::now();
  std::vector<CorunRun> runs = corun_segments(s, p);
  if (runs.empty()) return;
  // Executors: one per (core group, dtype), on the group's CPUs.
  std::map<std::pair<int, DType>, std::unique_ptr<Executor>> exs;
  prepare_corun(s, p, executor, runs, exs);
  double round = 0;  // one run of every segment, after a warm-up run each
  for (CorunRun& r : runs) r.ex->run(r.handle);
  for (CorunRun& r : runs) round += r.ex->run(r.handle).total;
  const int rounds = std::clamp(static_cast<int>(seconds / std::max(4 * round, 1e-6)), kCorunMinRuns, 1000);
  std::set<int> units;
  for (const CorunRun& r : runs) units.insert(r.unit);
  for (int round_i = 0; round_i < rounds; ++round_i) {
    // Each timed run follows an untimed run of the same segment, alone and loaded alike, so
    // both start equally warm whatever ran before them.
    for (CorunRun& r : runs) {
      r.ex->run(r.handle);
      const SegmentTiming& t = r.ex->run(r.handle);
      r.alone.push_back(t.total);
      r.alone_cpu.push_back(t.cpu);
    }
    for (int u : units) corun_loaded_round(s, p, runs, units, u, t_base);
  }
  pool_corun_samples(runs, out);
}

}  // namespace vlasim::calib
