// vlasim validate-papers: every published figure of scenarios/papers/figures.yaml predicted
// and compared, each paper out of sample.
#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "reports/plot.h"
#include "reports/validate_papers.h"
#include "sim/costs/stack_model.h"

namespace vlasim::cli {
namespace {

int run_validate_papers(const Common& c, const std::string& path, const std::string& dir, bool quiet,
                        bool progress, const std::string& model, const std::string& stack) {
  if (!stack.empty()) check_stack_name(stack, command_line("--stack", stack));
  if (!dir.empty()) check_output_dir("--out", dir);
  check_option_file("figures", path);
  FigureTable t = load_figure_table(path);
  t.model = model;
  if (!stack.empty()) t.stack = stack;
  const Validation v = validate_papers(t, c.catalog, c.cards, progress_for(quiet, progress));
  const std::string md = validation_markdown(t, v);
  std::cout << md;
  if (!dir.empty()) {
    fs::create_directories(dir);
    write_file(dir + "/validate.md", "# Published figures, predicted\n\n" + md);
    write_file(dir + "/validate.csv", validation_csv(v));
    if (!quiet) std::cout << "wrote " << dir << "/validate.md, validate.csv\n";
  }
  return 0;
}

// The validate-papers command's options.
struct ValidatePapersArgs {
  std::string figures = "scenarios/papers/figures.yaml", dir, model = "shaped", stack;
  bool quiet = false, progress = false;
};

}  // namespace

Command add_validate_papers(CLI::App& app) {
  auto a = std::make_shared<ValidatePapersArgs>();
  CLI::App* vpap = app.add_subcommand("validate-papers",
                                      "every published figure predicted by the roofline and by the shaped GPU model, "
                                      "fitted on a fit set, each paper out of sample (leave one paper out)");
  vpap->add_option("figures", a->figures, "figure table (default: scenarios/papers/figures.yaml)");
  vpap->add_option("-o,--out", a->dir, "folder for validate.md and validate.csv");
  vpap->add_option("--cost-model", a->model,
                   "the GPU cost model fitted (host_op_us, eff_scale): shaped (default) or kernel, the model "
                   "fitted on measured kernel times")
      ->check(CLI::IsMember({"shaped", "kernel"}));
  vpap->add_option("--stack", a->stack,
                   "software stack every figure's GPUs are priced under with the fitted model: none, auto, eager, graph "
                   "or compiled (`vlasim list stacks`; default: the table's stack:, else none). A stack prices host "
                   "time itself around the model's kernel times, so host_op_us is not fitted under one");
  vpap->add_flag("-q,--quiet", a->quiet, "no progress bar");
  add_progress_flag(vpap, a->progress);
  return {vpap, [a](const Common& c) { return run_validate_papers(c, a->figures, a->dir, a->quiet, a->progress, a->model, a->stack); }};
}

}  // namespace vlasim::cli
