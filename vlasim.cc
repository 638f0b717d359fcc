// vlasim: the command-line front-end. Thin by design: every subcommand (cli/, one file per
// command) parses its options, calls the library, and turns errors into a message and a
// non-zero exit status; this file builds the command line and dispatches.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/mpi.h"

using namespace vlasim;
using namespace vlasim::cli;

namespace {

// Reports a command line CLI11 refused and returns the exit status: 0 after --help or
// --version, else 2. A word where the command goes that names none is named as the error.
int parse_failure(CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
  const CLI::App* sweep = app.get_subcommand("sweep");
  if (sweep->parsed() && detect_mpi_launch().rank > 0) return 2;  // mpirun: rank 0 says it once
  if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
    std::vector<std::string> names;
    for (const CLI::App* s : std::as_const(app).get_subcommands([](const CLI::App*) { return true; }))
      names.push_back(s->get_name());
    const std::vector<std::string> words = app.remaining();  // what matched no option or command
    const auto word = std::find_if(words.begin(), words.end(), [](const std::string& w) { return !w.starts_with('-'); });
    if (word != words.end())
      std::cerr << "error: unknown command '" << *word << "'; commands are: " << join_names(names);
    else
      std::cerr << "error: " << e.what() << "; subcommands are: " << join_names(names);
  } else {
    std::cerr << "error: " << e.what();
  }
  const std::vector<CLI::App*> given = app.get_subcommands();
  std::cerr << "\nsee 'vlasim" << (given.empty() ? "" : " " + given.front()->get_name())
            << " --help' for the options\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vlasim: simulate and run Vision-Language-Action inference across GPUs, CPUs and links"};
  app.require_subcommand(1);
  Common c;
  add_common_options(app, c);
  app.set_version_flag("--version", std::string("vlasim ") + VLASIM_VERSION, "print the version and exit");
  // In the order `vlasim --help` lists them.
  const std::vector<Command> commands = {
      add_simulate(app),    add_execute(app),  add_compare(app),     add_calibrate(app),
      add_sweep(app),       add_leaderboard(app), add_roofline(app), add_profile_lut(app),
      add_place(app),       add_validate_papers(app), add_list(app), add_graph(app),
      add_passes(app),      add_import(app),   add_gpu_eval(app), add_robot_speed(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return parse_failure(app, e);
  }
  try {
    if (!c.profile.empty()) check_option_file("--profile", c.profile);
    for (const Command& cmd : commands)
      if (*cmd.app) return cmd.run(c);
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // An input too large for the memory this process may use (ulimit -v, a container's
    // limit) is a bad input like another: named, exit 2 (issue 28).
    std::string line = "vlasim";
    for (int i = 1; i < argc; ++i) line += std::string(" ") + argv[i];
    std::cerr << "error: out of memory running '" << line
              << "': an allocation failed; the input needs more memory than this process may use "
                 "(see --max-memory-gb and the limits in README)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
