// vlasim simulate: a scenario predicted by the discrete-event model.
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/commands.h"
#include "executors/stop_signal.h"
#include "reports/plot.h"
#include "reports/report.h"
#include "scheduler/fleet/traffic_controller.h"

namespace vlasim::cli {
namespace {

// Exit status of a simulation --max-wall-s stopped; its partial report is written all the
// same (a signal's: 130 for SIGINT, 143 for SIGTERM, StopSignals).
constexpr int kExitWallLimit = 3;

int run_simulate(const Common& c, const std::string& path, long long seed, const OutputOptions& out) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, false, out.quiet);
  SimOptions opt = out.sim_options();
  if (show_progress(out.quiet, out.progress)) opt.progress = sim_progress_line();
  // The first SIGINT or SIGTERM stops the run at the next check and the report of what ran is
  // written; a second one kills. Alive until the report is written.
  StopSignals signals;
  const auto t0 = std::chrono::steady_clock::now();
  opt.should_stop = [&]() -> std::string {
    if (std::string why = StopSignals::reason(); !why.empty()) return why;
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (out.max_wall_s > 0 && wall > out.max_wall_s)
      return "--max-wall-s " + fmt_g(out.max_wall_s) + " reached";
    return "";
  };
  // Constant memory: each record is counted and written as it leaves the simulation.
  std::optional<ReportBuilder> builder;
  std::optional<RequestsCsv> csv;
  if (out.stream_records) {
    builder.emplace(pr.s, true);
    if (!out.dir.empty()) {
      fs::create_directories(out.dir);
      csv.emplace(pr.s, pr.plan, out.dir + "/requests.csv");
    }
    opt.on_record = [&](const RequestRecord& q) {
      builder->add(q);
      if (csv) csv->row(q);
    };
  }
  // A live traffic controller routes the robots of workloads that name a group.
  std::unique_ptr<LiveController> controller;
  if (pr.s.controller.on()) {
    controller = std::make_unique<LiveController>(pr.s);
    opt.router = controller.get();
  }
  // Said before the run: an overload that will leave requests waiting, and what queue_limit
  // does with them (a run sure to exceed --max-memory-gb is refused by simulate() itself).
  if (!out.quiet)
    if (const std::string note = overload_note(pr.s, estimate_work(pr.s, pr.plan, opt.trace_limit)); !note.empty())
      std::cerr << "note: " << note << "\n";
  SimResult r = simulate(pr.s, pr.plan, opt);
  if (csv) csv->close();
  if (controller) {
    const std::string md = controller_decisions_markdown(*controller);
    if (!out.quiet)
      std::cout << "\ncontroller (" << pr.s.controller.strategy << ", every " << fmt_g(pr.s.controller.interval_s)
                << " s): " << controller->decisions().size() << " placements for the demand it saw\n" << md;
    if (!out.dir.empty()) {
      fs::create_directories(out.dir);
      write_file(out.dir + "/controller.md", "# Traffic controller decisions\n\n" + md);
      write_file(out.dir + "/controller.csv", controller_decisions_csv(*controller));
    }
  }
  if (builder) {
    const Report rep = builder->finish(pr.plan, r, "simulate");
    write_outputs(pr, r, "simulate", out, &rep);
  } else {
    write_outputs(pr, r, "simulate", out);
  }
  if (r.stopped.empty()) return 0;
  std::cerr << "stopped early: " << r.stopped << " at " << fmt_g(r.end_time)
            << " s of simulated time; the report covers what ran\n";
  return StopSignals::exit_status() ? StopSignals::exit_status() : kExitWallLimit;
}

}  // namespace

Command add_simulate(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "predict latency, throughput, memory and deadlines of a scenario");
  add_run_options(cmd, *o);
  add_limit_options(cmd, o->out);
  cmd->add_option("--max-wall-s", o->out.max_wall_s,
                  "stop after this many wall-clock seconds and write the report of what ran, "
                  "marked partial (exit 3); SIGINT (Ctrl-C) or SIGTERM does the same (exit 130 / 143)")
      ->check(number_in(0, 1e9, true));
  cmd->add_flag("--stream-records", o->out.stream_records,
                "constant memory for long runs: write each request's row to requests.csv as it "
                "finishes and take percentiles from a histogram (within 0.1% of exact) instead "
                "of keeping every record");
  return {cmd, [o](const Common& c) { return run_simulate(c, o->scenario, o->seed, o->out); }};
}

}  // namespace vlasim::cli
