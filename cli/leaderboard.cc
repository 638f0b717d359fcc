// vlasim leaderboard and vlasim roofline: a model's predicted time, energy and cost on every
// catalog GPU, and its roofline per device, stage and operator class.
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "reports/leaderboard.h"
#include "reports/roofline.h"
#include "sim/engine/planner.h"

namespace vlasim::cli {
namespace {


int run_leaderboard(const Common& c, const ModelChoice& mc, const LeaderboardOptions& o, const std::string& dir,
                    bool quiet, bool progress) {
  if (!dir.empty()) check_output_dir("--out", dir);
  const LeaderboardModel m = choose_model(c, mc);
  const Leaderboard lb = make_leaderboard(m, c.catalog, c.cards, o, progress_for(quiet, progress));
  if (!quiet) std::cout << leaderboard_markdown(lb);
  if (!dir.empty()) {
    std::vector<std::string> warnings;
    const auto files = write_leaderboard(lb, dir, &warnings);
    print_written(files, warnings, quiet);
  }
  return 0;
}

int run_roofline(const Common& c, const ModelChoice& mc, const std::string& device, const std::string& dir,
                 bool quiet) {
  if (!dir.empty()) check_output_dir("--out", dir);
  int model = 0;
  const Scenario s = chosen_scenario(c, mc, device, &model);
  const Plan p = plan_scenario(s);
  const RooflineReport r = make_roofline(s, p, model);
  if (!quiet) std::cout << roofline_markdown(r);
  if (!dir.empty()) {
    std::vector<std::string> warnings;
    const auto files = write_roofline(r, dir, &warnings);
    print_written(files, warnings, quiet);
  }
  return 0;
}

// The leaderboard command's options.
struct LeaderboardArgs {
  ModelChoice mc;
  LeaderboardOptions o;
  std::string dir;
  bool quiet = false, progress = false;
};

// The roofline command's options.
struct RooflineArgs {
  ModelChoice mc;
  std::string device, dir;
  bool quiet = false;
};

}  // namespace

Command add_leaderboard(CLI::App& app) {
  auto a = std::make_shared<LeaderboardArgs>();
  CLI::App* lboard = app.add_subcommand("leaderboard",
                                        "CET table: a model's time, energy and cost on every catalog GPU (or --devices), "
                                        "predicted; Markdown, CSV, Pareto SVGs and a roofline per device");
  add_model_options(lboard, a->mc);
  add_stack_option(lboard, a->mc.stack);
  LeaderboardOptions& o = a->o;
  lboard->add_option("--devices", o.devices, "catalog entries (default: every GPU-type entry)")->delimiter(',');
  lboard->add_option("--min-hz", o.min_hz, "control rate a device must reach to be feasible")
      ->capture_default_str()->check(number_in(0, 1e6, false));
  lboard->add_option("--lifetime-years", o.lifetime_years, "service life the price is spread over")
      ->capture_default_str()->check(number_in(0, 100, true));
  lboard->add_option("--utilisation", o.utilisation, "fraction of the service life spent inferring")
      ->capture_default_str()->check(number_in(0, 1, true));
  lboard->add_option("--usd-per-kwh", o.usd_per_kwh, "electricity price")
      ->capture_default_str()->check(number_in(0, 1e3, false));
  lboard->add_option("--idle-fraction", o.idle_fraction,
                     "idle power as a fraction of TDP for catalog entries without idle_w")
      ->capture_default_str()->check(number_in(0, 1, false));
  lboard->add_option("-o,--out", a->dir, "directory for leaderboard.md/.csv, the Pareto SVGs and roofline files");
  lboard->add_flag("-q,--quiet", a->quiet, "print nothing but errors");
  add_progress_flag(lboard, a->progress);
  return {lboard, [a](const Common& c) { return run_leaderboard(c, a->mc, a->o, a->dir, a->quiet, a->progress); }};
}

Command add_roofline(CLI::App& app) {
  auto a = std::make_shared<RooflineArgs>();
  CLI::App* roof = app.add_subcommand("roofline",
                                      "roofline report of a model: per device, stage and operator class, intensity, "
                                      "bound, attainable and predicted FLOP/s; Markdown, CSV and SVG");
  add_model_options(roof, a->mc);
  add_stack_option(roof, a->mc.stack);
  roof->add_option("--device", a->device,
                   "catalog entry to run a card (or a scenario's model) on alone; without it a scenario "
                   "is reported as it is placed");
  roof->add_option("-o,--out", a->dir, "directory for roofline.md, roofline.csv and roofline_<device>.svg");
  roof->add_flag("-q,--quiet", a->quiet, "print nothing but errors");
  return {roof, [a](const Common& c) { return run_roofline(c, a->mc, a->device, a->dir, a->quiet); }};
}

}  // namespace vlasim::cli
