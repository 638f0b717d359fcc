// vlasim compare: a scenario simulated and measured side by side; errors, KS and equivalence
// tests, plots.
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "executors/calibration/host_measure.h"
#include "executors/stop_signal.h"
#include "reports/plot.h"
#include "reports/compare.h"
#include "reports/control.h"
#include "reports/drift.h"
#include "reports/report.h"

namespace vlasim::cli {
namespace {

struct CompareArgs {
  RunOptions run;
  std::string executor = "onednn";
  int warmup = 2;
  double margin = 0.10;
};

int run_compare(const Common& c, const std::string& path, long long seed, const OutputOptions& out,
                const std::string& executor, int warmup, double margin) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, true, out.quiet);
  SimOptions sopt = out.sim_options();
  SimResult predicted = simulate(pr.s, pr.plan, sopt);
  StopSignals signals;  // SIGINT / SIGTERM: the comparison of what ran, exit 130 / 143
  SentinelWatch watch;  // the machine's own speed over the measurement (reports/drift.h)
  ExecResult measured = run_for_real(pr, out, executor, warmup);
  DriftInputs drift;
  drift.measurement = watch.stop();
  if (const ProfileRef ref = scenario_profile(pr.s); !ref.path.empty()) drift.calibration = load_profile(ref.path).sentinel;
  const ServiceSensitivity sens = service_sensitivity(pr.s, pr.plan, sopt, predicted);
  Comparison cmp = compare_runs(pr.s, pr.plan, predicted, measured.result,
                                op_times(pr.s, pr.plan, measured.op_seconds), margin);
  std::string md = compare_markdown(cmp);
  const bool control = std::any_of(pr.s.streams.begin(), pr.s.streams.end(), [](const StreamDecl& d) { return d.control.on(); });
  if (control) md += control_comparison(make_control_report(pr.s, predicted), make_control_report(pr.s, measured.result));
  const std::vector<StreamingRow> sp = make_streaming_report(pr.s, predicted), sm = make_streaming_report(pr.s, measured.result);
  if (!sp.empty()) md += streaming_comparison(sp, sm);
  md += drift_markdown(cmp, drift, sens);
  const std::vector<CorunRow> corun = corun_slowdowns(pr.s, pr.plan);
  md += corun_markdown(corun);
  if (!out.quiet) std::cout << md;
  if (!out.dir.empty()) {
    fs::create_directories(out.dir);
    write_compare_json(cmp, out.dir + "/compare.json");
    std::ofstream(out.dir + "/compare.md") << md;
    write_drift_json(cmp, drift, sens, corun, out.dir + "/drift.json");
    for (const auto& [mode, r] : {std::pair<std::string, const SimResult*>{"simulate", &predicted},
                                  {"execute", &measured.result}}) {
      std::string sub = out.dir + "/" + mode;
      fs::create_directories(sub);
      write_json(make_report(pr.s, pr.plan, *r, mode), sub + "/report.json");
      write_requests_csv(pr.s, pr.plan, *r, sub + "/requests.csv");
      write_trace(pr.s, pr.plan, *r, sub + "/trace.json");
      if (!sp.empty()) {
        const std::vector<StreamingRow>& rows = mode == "simulate" ? sp : sm;
        write_file(sub + "/streams.md", streaming_markdown(rows));
        write_file(sub + "/streams.csv", streaming_csv(rows));
      }
      if (control) {
        std::vector<std::string> cw;
        write_control(make_control_report(pr.s, *r), sub, &cw);
        for (auto& w : cw) std::cerr << "warning: " << w << "\n";
      }
    }
    std::vector<std::string> warnings;
    auto plots = write_compare_plots(cmp, out.dir, &warnings);
    for (auto& w : warnings) std::cerr << "warning: " << w << "\n";
    if (!out.quiet) {
      std::cout << "\nwrote " << out.dir << "/compare.md, compare.json, simulate/ and execute/ reports";
      for (auto& f : plots) std::cout << ", " << fs::path(f).filename().string();
      std::cout << "\n";
    }
  }
  if (const int stopped = signal_stop(measured.result)) return stopped;
  return measured.failed ? kExitExecutorFailed : 0;
}

}  // namespace

Command add_compare(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd =
      app.add_subcommand("compare", "run a scenario simulated and measured; errors, KS and equivalence tests, plots");
  add_run_options(cmd, a->run);
  add_limit_options(cmd, a->run.out);
  add_run_length(cmd, a->run.out);
  cmd->add_option("--executor", a->executor, "executor name")->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "runs of every segment before the clock starts")
      ->capture_default_str()->check(whole_number(0, 1000));
  cmd->add_option("--margin", a->margin, "equivalence margin of the TOST on mean latency")
      ->capture_default_str()->check(number_in(0.001, 1.0, false));
  return {cmd, [a](const Common& c) {
            return run_compare(c, a->run.scenario, a->run.seed, a->run.out, a->executor, a->warmup, a->margin);
          }};
}

}  // namespace vlasim::cli
