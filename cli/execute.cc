// vlasim execute: a scenario's workload run for real on this machine's executors.
#include <memory>
#include <string>

#include "cli/commands.h"
#include "executors/calibration/host_measure.h"
#include "executors/stop_signal.h"

namespace vlasim::cli {
namespace {

struct ExecuteArgs {
  RunOptions run;
  std::string executor = "onednn";
  int warmup = 2;
};

int run_execute(const Common& c, const std::string& path, long long seed, const OutputOptions& out,
                const std::string& executor, int warmup) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, false, out.quiet);  // no prediction is compared
  StopSignals signals;  // SIGINT / SIGTERM: the report of what ran, exit 130 / 143
  SentinelWatch watch;  // the machine's own speed over the measurement (reports/drift.h)
  ExecResult r = run_for_real(pr, out, executor, warmup);
  const SentinelRecord drift = watch.stop();
  write_outputs(pr, r.result, "execute", out);
  if (!out.quiet) std::cout << sentinel_text(drift) << "\n";
  if (const int stopped = signal_stop(r.result)) return stopped;
  return r.failed ? kExitExecutorFailed : 0;
}

}  // namespace

Command add_execute(CLI::App& app) {
  auto a = std::make_shared<ExecuteArgs>();
  CLI::App* cmd = app.add_subcommand("execute", "run a scenario's workload for real on this machine's executors");
  add_run_options(cmd, a->run);
  add_limit_options(cmd, a->run.out);
  add_run_length(cmd, a->run.out);
  cmd->add_option("--executor", a->executor, "executor name (see `vlasim list executors`)")->capture_default_str();
  cmd->add_option("--warmup", a->warmup, "runs of every segment before the clock starts")
      ->capture_default_str()->check(whole_number(0, 1000));
  return {cmd, [a](const Common& c) {
            return run_execute(c, a->run.scenario, a->run.seed, a->run.out, a->executor, a->warmup);
          }};
}

}  // namespace vlasim::cli
