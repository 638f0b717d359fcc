// The vlasim commands, one file each under cli/ (small ones grouped). Each add_<command>
// registers its subcommand and options on the top-level app and returns how to run it once the
// command line is parsed; the options live as long as the returned Command.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "cli/common.h"

namespace vlasim::cli {

// A registered command: its subcommand, true after parsing when it was the one given, and its
// runner, which returns the exit status (errors it cannot handle are thrown: ConfigError for a
// bad input, exit 2; anything else, exit 1).
struct Command {
  CLI::App* app = nullptr;
  std::function<int(const Common&)> run;
};

Command add_simulate(CLI::App& app);         // cli/simulate.cc
Command add_execute(CLI::App& app);          // cli/execute.cc
Command add_compare(CLI::App& app);          // cli/compare.cc
Command add_calibrate(CLI::App& app);        // cli/calibrate.cc
Command add_sweep(CLI::App& app);            // cli/sweep.cc
Command add_leaderboard(CLI::App& app);      // cli/leaderboard.cc
Command add_roofline(CLI::App& app);         // cli/leaderboard.cc
Command add_profile_lut(CLI::App& app);      // cli/place.cc
Command add_place(CLI::App& app);            // cli/place.cc
Command add_validate_papers(CLI::App& app);  // cli/validate_papers.cc
Command add_list(CLI::App& app);             // cli/list.cc
Command add_graph(CLI::App& app);            // cli/graph.cc
Command add_passes(CLI::App& app);           // cli/graph.cc
Command add_import(CLI::App& app);           // cli/import.cc
Command add_gpu_eval(CLI::App& app);         // cli/import.cc
Command add_robot_speed(CLI::App& app);      // cli/robot.cc

}  // namespace vlasim::cli
