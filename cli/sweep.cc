// vlasim sweep: a scenario simulated over values of one key (or a grid of keys); table, plot
// and the best value. Under mpirun, a build with MPI spreads the values over the ranks
// (cli/mpi.h).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi.h"
#include "reports/sweep.h"
#include "scheduler/fleet/traffic_controller.h"

namespace vlasim::cli {
namespace {

// Throws ConfigError naming --set when a number in the sweep's `key` indexes past the end of
// its list in the scenario at `path`; other problems of the key are run_sweep's to report.
void check_sweep_indices(const std::string& path, const std::string& key) {
  ConfigNode n = ConfigNode::load_file(path);
  std::stringstream parts(key);
  std::string part, walked;
  while (std::getline(parts, part, '.')) {
    const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (n.is_sequence() && index) {
      const size_t size = n.raw().size();
      if (part.size() > 9 || std::stoul(part) >= size)
        throw ConfigError("<command line>", 0, 0, "--set",
                          "index " + part + " in '" + key + "' is out of range: '" + walked +
                              "' has " + std::to_string(size) + " entries");
      n = n.items()[std::stoul(part)];
    } else if (n.is_map() && n.has(part)) {
      n = n.required(part);
    } else {
      return;
    }
    walked += (walked.empty() ? "" : ".") + part;
  }
}

// The sweep the command line asks for. Throws ConfigError naming the option (--set, --goal,
// --out) when it is malformed; checks -o/--out only with `check_out` (under mpirun, only
// rank 0 writes).
SweepSpec sweep_spec(const Common& c, const std::string& path, const std::vector<std::string>& sets,
                     const std::string& goal_name, double slo, double cap_gb, const std::string& mem_device,
                     const std::string& dir, const OutputOptions& out, bool check_out) {
  if (sets.empty()) throw ConfigError("<command line>", 0, 0, "--set", "give a --set KEY=VALUES");
  SweepSpec spec;
  if (goal_name == "capacity") {
    if (slo <= 0)
      throw ConfigError("<command line>", 0, 0, "--slo",
                        "--goal capacity needs --slo, the deadline attainment to hold (e.g. 0.98)");
    spec.capacity_slo = slo;
  } else if (!parse_split_goal(goal_name, &spec.goal)) {
    throw ConfigError("<command line>", 0, 0, "--goal",
                      "unknown goal '" + goal_name + "'; valid names are: throughput, latency, memory, capacity");
  } else if (slo > 0) {
    throw ConfigError("<command line>", 0, 0, "--slo", "--slo goes with --goal capacity");
  }
  spec.axis = parse_sweep_axis(sets[0]);
  for (const std::string& k : linked_keys(spec.axis.key)) check_sweep_indices(path, k);
  if (check_out && !dir.empty()) check_output_dir("--out", dir);
  spec.path = path;
  spec.catalog_dir = c.catalog;
  spec.cards_dir = c.cards;
  spec.memory_cap_bytes = cap_gb * 1e9;
  spec.memory_device = mem_device;
  spec.auto_cpu_dtype = native_cpu_dtype();
  spec.profile = c.profile;
  // The CPU figures simulate uses: the profile's host entry where it has one (use_host_entry),
  // said once on stderr (by the lead rank), not per value.
  auto told = std::make_shared<bool>(out.quiet || !check_out);
  spec.adjust = [told](Scenario& s) {
    use_host_entry(s, *told);
    *told = true;
  };
  spec.sim_options = out.sim_options();
  spec.make_router = [](const Scenario& s) -> std::unique_ptr<Router> { return std::make_unique<LiveController>(s); };
  return spec;
}

// ": model M at X%" naming the model that limits a capacity sweep at its first miss ("" if none).
std::string limited_by(const SweepResult& r) {
  if (r.limiting_model.empty()) return "";
  char b[48];
  std::snprintf(b, sizeof b, " at %.1f%%", 100 * r.limiting_attainment);
  return ": model " + r.limiting_model + b;
}

// Prints the sweep's table (unless quiet) and its best value, and writes its files into `dir`
// (when given).
void publish_sweep(const SweepResult& r, const std::string& dir, bool quiet) {
  if (!quiet) std::cout << sweep_table(r);
  if (r.goal == "capacity") {
    char slo[32];
    std::snprintf(slo, sizeof slo, "%g%%", 100 * r.capacity_slo);
    if (r.best >= 0)
      std::cout << "capacity at " << slo << " deadline attainment: " << r.key << " = " << r.rows[r.best].value
                << (r.first_miss >= 0 ? " (" + r.rows[r.first_miss].value + " misses" + limited_by(r) + ")"
                                      : " (every value meets it: sweep further)")
                << "\n";
    else
      std::cout << "no value meets " << slo << " deadline attainment (the first, " << r.rows.front().value
                << ", already misses" << limited_by(r) << ")\n";
  } else if (r.best >= 0) {
    std::cout << "best " << r.key << " for " << r.goal << ": " << r.rows[r.best].value << "\n";
  } else {
    std::cout << "no value meets the goal\n";
  }
  if (!dir.empty())
    for (auto& f : write_sweep(r, dir))
      if (!quiet) std::cout << "wrote " << f << "\n";
}

// A plain run sweeps here, in this process. Under mpirun (detect_mpi_launch), a build with
// MPI spreads the values over the ranks (run_sweep_over_ranks) and writes the same files and
// output as a plain run; a build without MPI refuses, rather than let every rank run the
// whole sweep and overwrite the others' files.
// A grid (several --set): the first key is swept at every combination of the others' values,
// each combination's sweep written to DIR/<key=value_...>/, and the grid's table (the knee
// per configuration for --goal capacity) printed and written to DIR/grid.md, grid.csv,
// grid.svg. Runs in this process only.
int run_sweep_grid(const std::function<SweepSpec(bool)>& setup, const std::vector<std::string>& sets,
                   const std::string& dir, bool quiet, const std::function<void(double)>& progress) {
  if (detect_mpi_launch().launched) {
    std::cerr << "error: vlasim sweep: a grid (several --set) runs in one process; run it without mpirun\n";
    return 2;
  }

  SweepSpec base = setup(true);
  std::vector<SweepAxis> axes;
  GridResult g;
  std::vector<std::string> taken = linked_keys(base.axis.key);  // every key set, linked ones apart
  for (size_t i = 1; i < sets.size(); ++i) {
    axes.push_back(parse_sweep_axis(sets[i]));
    for (const std::string& k : linked_keys(axes.back().key)) {
      check_sweep_indices(base.path, k);
      if (std::count(taken.begin(), taken.end(), k))
        throw ConfigError("<command line>", 0, 0, "--set", "key '" + k + "' is given twice");
      taken.push_back(k);
    }
    g.keys.push_back(axes.back().key);
  }
  g.configs = grid_configs(axes);
  constexpr size_t kMaxConfigs = 256;
  if (g.configs.size() > kMaxConfigs)
    throw ConfigError("<command line>", 0, 0, "--set",
                      "the grid has " + std::to_string(g.configs.size()) + " configurations; at most " +
                          std::to_string(kMaxConfigs));
  // Each configuration's folder: values that would share one (a/b and a-b) or pass a file
  // name's length are refused.
  std::vector<std::string> labels;
  for (const auto& config : g.configs) {
    labels.push_back(grid_label(g.keys, config));
    if (labels.back().size() > 200)
      throw ConfigError("<command line>", 0, 0, "--set", "configuration folder name '" + labels.back() + "' is too long");
    if (std::count(labels.begin(), labels.end() - 1, labels.back()))
      throw ConfigError("<command line>", 0, 0, "--set",
                        "two configurations would share folder '" + labels.back() + "'; give values that differ in letters or digits");
  }
  // The whole grid's work is bounded by --max-requests: each configuration gets its share.
  base.sim_options.max_requests /= static_cast<double>(g.configs.size());
  for (size_t c = 0; c < g.configs.size(); ++c) {
    SweepSpec spec = base;
    for (size_t k = 0; k < g.keys.size(); ++k) spec.fixed.emplace_back(g.keys[k], g.configs[c][k]);
    const std::string label = grid_label(g.keys, g.configs[c]);
    if (!quiet) std::cerr << "configuration " << c + 1 << " of " << g.configs.size() << ": " << label << "\n";
    try {
      g.sweeps.push_back(run_sweep(spec, progress));
      g.refused.emplace_back();
    } catch (const ConfigError& e) {
      if (e.file() == "<command line>" && e.key() != "--set") throw;  // the command line's fault, not this configuration's
      // Refused at every value: the grid goes on, the table says why.
      SweepResult r;
      r.key = base.axis.key;
      r.goal = base.capacity_slo > 0 ? "capacity" : "";
      r.capacity_slo = base.capacity_slo;
      g.sweeps.push_back(r);
      g.refused.push_back(e.what());
      continue;
    }
    if (!dir.empty()) write_sweep(g.sweeps.back(), dir + "/" + label);
  }
  if (std::all_of(g.refused.begin(), g.refused.end(), [](const std::string& r) { return !r.empty(); }))
    throw ConfigError("<command line>", 0, 0, "--set", "every configuration of the grid was refused; the first: " + g.refused.front());
  std::cout << grid_table(g);
  if (!dir.empty())
    for (auto& f : write_grid(g, dir))
      if (!quiet) std::cout << "wrote " << f << "\n";
  return 0;
}

int run_sweep_cmd(const Common& c, const std::string& path, const std::vector<std::string>& sets,
                  const std::string& goal_name, double slo, double cap_gb, const std::string& mem_device,
                  const std::string& dir, const OutputOptions& out) {
  auto setup = [&](bool lead) {
    return sweep_spec(c, path, sets, goal_name, slo, cap_gb, mem_device, dir, out, lead);
  };
  const std::function<void(double)> progress = progress_for(out.quiet, out.progress);
  auto publish = [&](const SweepResult& r) { publish_sweep(r, dir, out.quiet); };
  if (sets.size() > 1) return run_sweep_grid(setup, sets, dir, out.quiet, progress);
  if (const MpiLaunch launch = detect_mpi_launch(); launch.launched) {
#ifdef VLASIM_WITH_MPI
    return run_sweep_over_ranks(setup, progress, publish);
#else
    if (launch.size != 1) {
      if (launch.rank == 0 || launch.size == 0)
        std::cerr << "error: vlasim sweep: started by an MPI launcher ("
                  << (launch.size > 0 ? std::to_string(launch.size) + " ranks" : "rank " + std::to_string(launch.rank))
                  << "), but this vlasim was built without MPI (VLASIM_WITH_MPI=OFF), so every rank would "
                     "run the whole sweep and overwrite the others' files; run it without mpirun, or "
                     "install libboost-mpi-dev and rebuild\n";
      return 2;
    }
#endif
  }
  publish(run_sweep(setup(true), progress));
  return 0;
}

// The sweep command's options.
struct SweepArgs {
  std::string scenario;
  std::vector<std::string> sets;
  std::string goal = "throughput", mem_device, dir;
  double slo = 0, cap_gb = 0;
  OutputOptions out;
};

}  // namespace

Command add_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  CLI::App* sweep = app.add_subcommand("sweep", "simulate a scenario over values of one key; table, plot and the best value");
#ifdef VLASIM_WITH_MPI
  sweep->footer("Under mpirun (mpirun -n N vlasim sweep ...) the values are spread over the N ranks; rank 0 "
                "prints the table and writes the same files as a run without mpirun.");
#else
  sweep->footer("This vlasim was built without MPI (VLASIM_WITH_MPI=OFF): under mpirun with more than one "
                "rank, sweep refuses to run; build with libboost-mpi-dev installed to spread a sweep over ranks.");
#endif
  sweep->add_option("scenario", a->scenario, "scenario YAML file")->required();
  sweep->add_option("--set", a->sets, "KEY=a:b[:step] or KEY=v1,v2,... (KEY e.g. models.0.partition.params.after_block; "
                                      "KEY1+KEY2 sets both to each value); several: the first is swept at every combination of the others' values (a grid)")
      ->required();
  sweep->add_option("--goal", a->goal,
                    "throughput, latency, memory (lowest latency under --memory-cap-gb) or capacity (the "
                    "largest value of a load key up to which deadline attainment stays >= --slo)")
      ->capture_default_str();
  sweep->add_option("--slo", a->slo, "for --goal capacity: the deadline attainment to hold, e.g. 0.98")
      ->check(number_in(0, 1, true));
  sweep->add_option("--memory-cap-gb", a->cap_gb, "memory cap for --goal memory")
      ->check(number_in(0, 1e6, false));
  sweep->add_option("--memory-device", a->mem_device, "device whose peak memory is weighed (default: the first)");
  sweep->add_option("-o,--out", a->dir, "directory for sweep.csv, sweep.md and sweep.svg");
  sweep->add_flag("-q,--quiet", a->out.quiet, "print only the best value");
  add_progress_flag(sweep, a->out.progress);
  add_limit_options(sweep, a->out);
  return {sweep, [a](const Common& c) {
            return run_sweep_cmd(c, a->scenario, a->sets, a->goal, a->slo, a->cap_gb, a->mem_device, a->dir, a->out);
          }};
}

}  // namespace vlasim::cli
