// vlasim place and vlasim profile-lut, the serving tools of Robion (issue 11): models placed on
// GPUs and robots on instances, and the SM lookup table of a scenario's lockstep GPUs.
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "reports/plot.h"
#include "reports/report.h"
#include "reports/sweep.h"
#include "scheduler/fleet/placement.h"
#include "scheduler/fleet/traffic_controller.h"
#include "sim/engine/lockstep.h"
#include "sim/engine/planner.h"

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
    write_file(f.string(), text);
    if (!quiet) std::cerr << "wrote " << f.string() << " (" << lp.lut.size() << " pairs of batches)\n";
  }
  return 0;
}

// The caveat of a placement where models share a GPU: its loads add each model's robots over
// the robots the GPU sustains for that model alone, which over-promises where co-located models
// slow each other (issue 30: a monolithic GPU planned at 96% simulated at 75% attainment).
// "" when no GPU has two models in any phase.
std::string colocation_note(const PlacementProblem& p, const std::vector<Placement>& phases, bool simulated) {
  bool shared = false;
  for (const Placement& x : phases)
    for (size_t g = 0; g < p.gpus.size(); ++g) {
      int models = 0;
      for (size_t m = 0; m < p.models.size(); ++m) models += x.robots[m][g] > 0 ? 1 : 0;
      shared = shared || models > 1;
    }
  if (!shared) return "";
  return std::string("\nNote: a GPU's load adds each model's robots / the robots it sustains for that model alone; "
                     "models sharing a GPU were not measured together and may slow each other (batches of one model "
                     "at a time, shared streams), so a GPU planned near 100% can miss the SLO. ") +
         (simulated ? "Each demand above was simulated as a fleet, which includes that.\n"
                    : "Simulate the fleet (--template, then `vlasim simulate DIR/fleet.yaml`), or find the demand it "
                      "holds simulated: `vlasim place PROBLEM --maximize --template T --slo S -o DIR`.\n");
}

// place --maximize: the largest demand (a percentage of the problem's robots) the problem
// serves (maximize_demand). Without a template, a demand holds where the strategy places it
// within every GPU's capacity (capacities are measured at the SLO); with a template and
// --slo, where its fleet, simulated, keeps every model instance's deadline attainment at
// least --slo (each step's fleet is written to DIR/maximize/demand_N_robots.yaml; a fleet refused
// once a smaller one ran, e.g. its memory does not fit, misses). Each step is said
// on stderr as it ends unless quiet; DIR gets maximize.md, and the largest demand's
// placement.md, placement.csv and fleet.yaml.
int run_maximize(const Common& c, const std::string& path, const std::string& dir, const std::string& templ,
                 const std::string& strategy_name, PlacementStrategy strategy, double slo, bool quiet) {
  const PlacementProblem p = load_placement_problem(path);
  if (!p.changes.empty())
    ConfigNode::load_file(path).required("changes").fail(
        "--maximize scales the problem's demand (robots); a problem with changes: has several demands: "
        "remove them, or place the changes without --maximize");
  if (std::all_of(p.robots.begin(), p.robots.end(), [](int r) { return r == 0; }))
    p.where.fail("--maximize scales the problem's demand, but every model has 0 robots");
  DemandJudge judge;
  bool ran_one = false;  // a fleet of the search has been simulated
  if (!templ.empty()) {
    fs::create_directories(dir + "/maximize");
    judge = [&](const std::vector<int>& robots, const Placement& x, std::string* note) {
      PlacementProblem q = p;
      q.robots = robots;
      const long long total = std::accumulate(robots.begin(), robots.end(), 0LL);  // names the file: one per demand
      const std::string file = dir + "/maximize/demand_" + std::to_string(total) + "_robots.yaml";
      write_file(file, fleet_scenario_yaml(q, {x}, templ));
      // A fleet refused (its memory does not fit, its run passes the work limit) does not hold,
      // once a smaller one ran; a refusal of the first is the template's and stops the search.
      std::optional<Prepared> pr;
      SimResult r;
      try {
        pr.emplace(prepare(c, file, -1, false, true));
        r = simulate(pr->s, pr->plan, SimOptions{});
      } catch (const ConfigError& e) {
        if (!ran_one) throw;
        *note = std::string("refused: ") + e.what();
        return false;
      }
      ran_one = true;
      const Report rep = make_report(pr->s, pr->plan, r, "simulate");
      const auto [model, att] = lowest_model_attainment(rep);
      if (model.empty())
        ConfigNode::load_file(templ).required("workload").fail(
            "--maximize --slo judges deadline attainment, but no request of the fleet had a deadline (deadline_ms)");
      char b[160];
      std::snprintf(b, sizeof b, "simulated: lowest model %s at %.1f%% (all %.1f%%)", model.c_str(), 100 * att,
                    100 * rep.deadline_attainment);
      *note = b;
      return rep.requests > 0 && att >= slo;
    };
  }
  auto say = [&](const DemandStep& st) {
    if (quiet) return;
    std::cerr << "demand " << st.percent << "% (" << std::accumulate(st.robots.begin(), st.robots.end(), 0LL)
              << " robots): " << (st.placed ? "placed" : "not placed") << (st.note.empty() ? "" : ", " + st.note)
              << (st.holds ? ": holds" : ": misses") << "\n";
  };
  const DemandSearch d = maximize_demand(p, strategy, judge, say);
  const std::string how = templ.empty() ? "placed within every GPU's capacity (capacities are at the SLO)"
                                        : "its fleet simulated from " + templ + " with every model at >= " +
                                              fmt_g(100 * slo) + "% deadline attainment";
  std::string md = "Largest demand (a percentage of " + path + "'s robots, every model's rounded up) " + how +
                   ":\n\n" + demand_search_markdown(p, d);
  if (d.best >= 0) {
    const DemandStep& best = d.steps[static_cast<size_t>(d.best)];
    md += "\nPlacement at " + std::to_string(best.percent) + "%:\n\n" + placement_markdown(p, best.placement, best.robots) +
          colocation_note(p, {best.placement}, !templ.empty());
  }
  std::cout << md;
  if (!dir.empty()) {
    fs::create_directories(dir);
    write_file(dir + "/maximize.md", "# Largest demand of " + path + " (" + strategy_name + ")\n\n" + md);
    if (d.best >= 0) {
      const DemandStep& best = d.steps[static_cast<size_t>(d.best)];
      PlacementProblem q = p;
      q.robots = best.robots;
      write_file(dir + "/placement.md", "# Placement of " + path + " at " + std::to_string(best.percent) +
                                            "% of its demand (" + strategy_name + ")\n\n" +
                                            placement_markdown(q, best.placement, best.robots));
      write_file(dir + "/placement.csv", placement_csv(q, best.placement));
      if (!templ.empty()) write_file(dir + "/fleet.yaml", fleet_scenario_yaml(q, {best.placement}, templ));
    }
    if (!quiet) std::cout << "wrote " << dir << "/maximize.md" << (d.best >= 0 ? ", placement.md, placement.csv" : "")
                          << (d.best >= 0 && !templ.empty() ? ", fleet.yaml" : "") << "\n";
  }
  return 0;
}

// Solves placement problem `path` (scheduler/fleet/placement.h) and prints the placement; with a
// folder, writes placement.md and placement.csv there, and with a one-GPU template scenario
// the fleet scenario (fleet.yaml) that `vlasim simulate` checks.
int run_place(const Common& c, const std::string& path, const std::string& dir, const std::string& templ,
              const std::string& strategy_name, bool quiet, double live_interval, bool maximize, double slo) {
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
  if (slo != 0 && !maximize)
    throw ConfigError("<command line>", 0, 0, "--slo", "--slo goes with --maximize (and --template)");
  if (maximize) {
    if (live_interval > 0) throw ConfigError("<command line>", 0, 0, "--live", "--live places a changing demand; --maximize one demand");
    if (!templ.empty() && slo == 0)
      throw ConfigError("<command line>", 0, 0, "--slo",
                        "--maximize with --template simulates each demand: give --slo, the deadline attainment every model must hold (e.g. 0.98)");
    if (templ.empty() && slo != 0)
      throw ConfigError("<command line>", 0, 0, "--slo", "--slo judges a simulated fleet: give --template too");
    if (slo != 0 && !(slo > 0 && slo <= 1))
      throw ConfigError("<command line>", 0, 0, "--slo", "the SLO is a deadline attainment above 0 and at most 1, e.g. 0.98");
    return run_maximize(c, path, dir, templ, strategy_name, strategy, slo, quiet);
  }
  const PlacementProblem p = load_placement_problem(path);
  const std::vector<Placement> phases = control_traffic(p, strategy);
  const std::string md = controller_markdown(p, phases) + colocation_note(p, phases, false);
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
  double live = 0, slo = 0;
  bool quiet = false, maximize = false;
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
                    "scenario of one server to copy per GPU and model instance: its devices of the problem's GPU catalog "
                    "entry are copied per GPU (one GPU, or an inter-GPU pair), other devices (a host) are shared; writes "
                    "the fleet's scenario (fleet.yaml)");
  place->add_option("--strategy", a->strategy,
                    "ilp (Robion's integer program, CBC), or a baseline: even (every model's robots split over "
                    "every GPU) or dedicated (one model per GPU)")
      ->capture_default_str();
  place->add_option("--live", a->live,
                    "also write fleet_live.yaml: every model on every GPU it can run on, robots routed by the traffic "
                    "controller, which re-solves every this many seconds for the demand it sees (not told the changes)");
  place->add_flag("--maximize", a->maximize,
                  "search for the largest demand the problem serves: its robots scaled by a whole percentage "
                  "(doubling from 100%, then halving the gap); without --template a demand holds when it is placed "
                  "within every GPU's capacity, with --template and --slo when its fleet, simulated, keeps every model "
                  "instance's deadline attainment at least --slo. Says each step on stderr; writes maximize.md and the "
                  "largest demand's placement (and fleet.yaml) to -o DIR");
  place->add_option("--slo", a->slo, "with --maximize and --template: the deadline attainment every model instance must hold, e.g. 0.98");
  place->add_flag("-q,--quiet", a->quiet, "print only the placement (and no --maximize steps)");
  return {place, [a](const Common& c) {
            return run_place(c, a->problem, a->dir, a->templ, a->strategy, a->quiet, a->live, a->maximize, a->slo);
          }};
}

}  // namespace vlasim::cli
