// vlasim place and vlasim profile-lut, the serving tools of Robion (issue 11): models placed on
// GPUs and robots on instances, and the SM lookup table of a scenario's lockstep GPUs.
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "reports/plot.h"
#include "scheduler/placement.h"
#include "scheduler/traffic_controller.h"
#include "sim/lockstep.h"

namespace vlasim::cli {
namespace {

// Writes the SM lookup table of every lockstep GPU in scenario `path`, made from its cost model
// for every pair of batches that may meet, to `out_path` (several GPUs: one file each, the
// device's name before the extension) or stdout.
int run_profile_lut(const Common& c, const std::string& path, const std::string& out_path, bool quiet) {
  Scenario s = load_for(c, path, false, quiet);
  for (DeviceInstance& d : s.devices) d.lockstep.lut = "auto";  // profile, whatever the scenario reads
  const Plan p = plan_scenario(s);
  if (p.locksteps.empty())
    throw ConfigError(s.file, 0, 0, "hardware.devices",
                      "no GPU of this scenario has a lockstep; give one `lockstep: {streams: [a, b]}`");
  if (p.locksteps.size() > 1 && (out_path.empty() || out_path == "-"))
    throw ConfigError("<command line>", 0, 0, "--out",
                      std::to_string(p.locksteps.size()) + " GPUs have a lockstep: give -o FILE (one table per GPU)");
  for (const LockstepPlan& lp : p.locksteps) {
    const std::string text = sm_lut_yaml(s, p, lp);
    if (out_path.empty() || out_path == "-") {
      std::cout << text;
      continue;
    }
    fs::path f(out_path);
    if (p.locksteps.size() > 1)
      f = f.parent_path() / (f.stem().string() + "." + s.devices[static_cast<size_t>(lp.device)].name + f.extension().string());
    if (!f.parent_path().empty()) fs::create_directories(f.parent_path());
    std::ofstream o(f);
    o << text;
    if (!o) throw std::runtime_error(f.string() + ": failed to write");
    if (!quiet) std::cerr << "wrote " << f.string() << " (" << lp.lut.size() << " pairs of batches)\n";
  }
  return 0;
}

// Solves placement problem `path` (scheduler/placement.h) and prints the placement; with a
// folder, writes placement.md and placement.csv there, and with a one-GPU template scenario
// the fleet scenario (fleet.yaml) that `vlasim simulate` checks.
int run_place(const std::string& path, const std::string& dir, const std::string& templ,
              const std::string& strategy_name, bool quiet, double live_interval) {
  if (!dir.empty()) check_output_dir("--out", dir);
  if (!templ.empty()) {
    check_option_file("--template", templ);
    if (dir.empty()) throw ConfigError("<command line>", 0, 0, "--template", "give -o DIR for the fleet scenario");
  }
  if (live_interval != 0 && (!(live_interval > 0) || live_interval > 3600))
    throw ConfigError("<command line>", 0, 0, "--live", "the controller's interval is between 0 and 3600 s");
  if (live_interval > 0 && templ.empty())
    throw ConfigError("<command line>", 0, 0, "--live", "the live fleet is made from a --template scenario");
  PlacementStrategy strategy;
  if (!parse_placement_strategy(strategy_name, &strategy))
    throw ConfigError("<command line>", 0, 0, "--strategy",
                      "unknown strategy '" + strategy_name + "'; valid names are: ilp, even, dedicated");
  const PlacementProblem p = load_placement_problem(path);
  const std::vector<Placement> phases = control_traffic(p, strategy);
  const std::string md = controller_markdown(p, phases);
  std::cout << md;
  if (!dir.empty()) {
    fs::create_directories(dir);
    write_file(dir + "/placement.md", "# Placement of " + path + " (" + strategy_name + ")\n\n" + md);
    write_file(dir + "/placement.csv", controller_csv(p, phases));
    if (!templ.empty()) write_file(dir + "/fleet.yaml", fleet_scenario_yaml(p, phases, templ));
    if (live_interval > 0) {
      // The live fleet reads the problem beside it (a copy: the run does not depend on where it came from).
      const fs::path copy = fs::path(dir) / "problem.yaml";
      if (!fs::exists(copy) || !fs::equivalent(path, copy)) fs::copy_file(path, copy, fs::copy_options::overwrite_existing);
      write_file(dir + "/fleet_live.yaml", live_fleet_scenario_yaml(p, templ, "problem.yaml", live_interval, strategy_name));
    }
    if (!quiet)
      std::cout << "wrote " << dir << "/placement.md, placement.csv" << (templ.empty() ? "" : ", fleet.yaml")
                << (live_interval > 0 ? ", fleet_live.yaml, problem.yaml" : "") << "\n";
  }
  return 0;
}

// The profile-lut command's options.
struct ProfileLutArgs {
  std::string scenario, out;
  bool quiet = false;
};

// The place command's options.
struct PlaceArgs {
  std::string problem, dir, templ, strategy = "ilp";
  double live = 0;
  bool quiet = false;
};

}  // namespace

Command add_profile_lut(CLI::App& app) {
  auto a = std::make_shared<ProfileLutArgs>();
  CLI::App* plut = app.add_subcommand("profile-lut",
                                      "make the SM lookup table of a scenario's lockstep GPUs from its cost model");
  plut->add_option("scenario", a->scenario, "scenario YAML file with a `lockstep:` on a GPU")->required();
  plut->add_option("-o,--out", a->out, "table file (YAML) to write, for the scenario's `lut:` (default: stdout)");
  plut->add_flag("-q,--quiet", a->quiet, "print nothing but errors");
  return {plut, [a](const Common& c) { return run_profile_lut(c, a->scenario, a->out, a->quiet); }};
}

Command add_place(CLI::App& app) {
  auto a = std::make_shared<PlaceArgs>();
  CLI::App* place = app.add_subcommand("place",
                                       "place models on GPUs and robots on instances (Robion's integer program, CBC)");
  place->add_option("problem", a->problem, "placement problem YAML (gpus; models with robots and capacity)")->required();
  place->add_option("-o,--out", a->dir, "folder for placement.md and placement.csv (and fleet.yaml)");
  place->add_option("--template", a->templ,
                    "one-GPU scenario to copy per GPU and model instance: writes the fleet's scenario (fleet.yaml)");
  place->add_option("--strategy", a->strategy,
                    "ilp (Robion's integer program, CBC), or a baseline: even (every model's robots split over "
                    "every GPU) or dedicated (one model per GPU)")
      ->capture_default_str();
  place->add_option("--live", a->live,
                    "also write fleet_live.yaml: every model on every GPU it can run on, robots routed by the traffic "
                    "controller, which re-solves every this many seconds for the demand it sees (not told the changes)");
  place->add_flag("-q,--quiet", a->quiet, "print only the placement");
  return {place, [a](const Common&) {
            return run_place(a->problem, a->dir, a->templ, a->strategy, a->quiet, a->live);
          }};
}

}  // namespace vlasim::cli
