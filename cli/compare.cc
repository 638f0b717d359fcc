// vlasim compare: a scenario simulated and measured side by side; errors, KS and equivalence
// tests, plots.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
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
#include "sim/measured/torch_trace.h"
#include "sim/costs/profiled_cost_model.h"

namespace vlasim::cli {

TraceComparison compare_with_trace(const Prepared& pr, const std::string& trace, const std::string& inference,
                                   double margin, const SimOptions& so) {
  const TorchTrace t = read_torch_trace(trace);
  std::string inf_name;
  const std::vector<TraceInference> inf = trace_inferences(t, inference, &inf_name);
  TraceComparison tc;
  tc.predicted = simulate(pr.s, pr.plan, so);
  SimResult measured;
  const double t0 = inf.front().start_us;
  for (size_t i = 0; i < inf.size(); ++i) {
    RequestRecord r;
    r.id = i;
    r.model = 0;
    r.arrival = r.start = (inf[i].start_us - t0) * 1e-6;
    r.end = (inf[i].end_us - t0) * 1e-6;
    for (int k = 0; k < kStages; ++k)
      if (inf[i].stage_start_us[k] >= 0) {
        r.stages_done |= uint8_t(1u << k);
        r.stage_latency[k] = (inf[i].stage_end_us[k] - inf[i].stage_start_us[k]) * 1e-6;
      }
    measured.requests.push_back(r);
    measured.end_time = std::max(measured.end_time, r.end);
  }
  measured.horizon = measured.end_time;
  std::vector<std::vector<double>> op_s(pr.s.models.size());
  for (size_t m = 0; m < pr.s.models.size(); ++m) op_s[m].assign(pr.plan.models[m].graph.size(), 0.0);
  std::string op_note;
  if (t.shapes) {
    const TraceMatch tm = match_trace(t, pr.plan.models[0].graph, inf);
    op_s[0] = tm.op_seconds;
    char buf[256];
    int folded = 0;
    for (const auto& [k, f] : tm.folded) folded += f.count;
    std::snprintf(buf, sizeof buf, "%zu of %zu ops matched by kind and shape, %.1f%% of the trace's %s time", tm.graph_ops_matched,
                  tm.graph_ops, tm.total_s > 0 ? 100 * tm.matched_s / tm.total_s : 0.0, tm.device ? "device" : "op");
    op_note = buf;
    if (const std::string w = trace_match_warning(t, tm, pr.s.models[0].name); !w.empty()) {
      std::cerr << "warning: " << w << "\n";
      op_note += " (warning: " + w + ")";
    }
    if (folded > 0)
      op_note += " (" + std::to_string(folded) + " activation ops folded into the GEMM before them, as the graph fuses them)";
  } else {
    op_note = "the trace has no input shapes (a legacy or record_shapes=False trace): stage and end-to-end figures only";
  }
  // without shapes no op has a measured time: no op rows rather than every op skipped
  const std::vector<OpTime> ops = t.shapes ? op_times(pr.s, pr.plan, op_s) : std::vector<OpTime>{};
  tc.cmp = compare_runs(pr.s, pr.plan, tc.predicted, measured, ops, margin);
  std::string head = "Measured side: PyTorch trace " + trace + " (" + (t.kineto ? "Kineto" : "legacy") + ", " +
                     std::to_string(inf.size()) + " inferences from record_function '" + inf_name +
                     "', run back to back: the measured throughput and queueing are the trace's, not the scenario's "
                     "workload); " + op_note + ".";
  if (t.inflight > 0) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  " Launched before the trace: %zu device events (%.3f ms, %.1f%% of the device time) were in flight "
                  "when the profiler started; no op of the trace launched them.",
                  t.inflight, t.inflight_us / 1e3, t.device_us() > 0 ? 100 * t.inflight_us / t.device_us() : 0.0);
    head += buf;
  }
  tc.markdown = head + "\n\n" + compare_markdown(tc.cmp);
  return tc;
}

RealComparison compare_for_real(const Prepared& pr, const SimOptions& so, double margin,
                                const std::function<ExecResult()>& measure) {
  RealComparison rc;
  rc.predicted = simulate(pr.s, pr.plan, so);
  SentinelWatch watch;  // the machine's own speed over the measurement (reports/drift.h)
  rc.measured = measure();
  rc.drift.measurement = watch.stop();
  if (const ProfileRef ref = scenario_profile(pr.s); !ref.path.empty())
    rc.drift.calibration = load_profile(ref.path).sentinel;
  rc.sens = service_sensitivity(pr.s, pr.plan, so, rc.predicted);
  rc.cmp = compare_runs(pr.s, pr.plan, rc.predicted, rc.measured.result,
                        op_times(pr.s, pr.plan, rc.measured.op_seconds), margin);
  rc.markdown = compare_markdown(rc.cmp);
  rc.control = std::any_of(pr.s.streams.begin(), pr.s.streams.end(), [](const StreamDecl& d) { return d.control.on(); });
  if (rc.control)
    rc.markdown += control_comparison(make_control_report(pr.s, rc.predicted), make_control_report(pr.s, rc.measured.result));
  rc.streams_predicted = make_streaming_report(pr.s, rc.predicted);
  rc.streams_measured = make_streaming_report(pr.s, rc.measured.result);
  if (!rc.streams_predicted.empty()) rc.markdown += streaming_comparison(rc.streams_predicted, rc.streams_measured);
  rc.markdown += drift_markdown(rc.cmp, rc.drift, rc.sens);
  rc.corun = corun_slowdowns(pr.s, pr.plan);
  rc.markdown += corun_markdown(rc.corun);
  return rc;
}

std::map<std::string, std::string> compare_files(const Prepared& pr, const RealComparison& rc) {
  std::map<std::string, std::string> f;
  f["compare.json"] = compare_json_text(rc.cmp);
  f["compare.md"] = rc.markdown;
  f["drift.json"] = drift_json_text(rc.cmp, rc.drift, rc.sens, rc.corun);
  for (const auto& [mode, r] : {std::pair<std::string, const SimResult*>{"simulate", &rc.predicted},
                                {"execute", &rc.measured.result}}) {
    f[mode + "/report.json"] = report_json_text(make_report(pr.s, pr.plan, *r, mode));
    f[mode + "/requests.csv"] = requests_csv_text(pr.s, pr.plan, *r);
    if (!rc.streams_predicted.empty()) {
      const std::vector<StreamingRow>& rows = mode == "simulate" ? rc.streams_predicted : rc.streams_measured;
      f[mode + "/streams.md"] = streaming_markdown(rows);
      f[mode + "/streams.csv"] = streaming_csv(rows);
    }
    if (rc.control) {
      const ControlReport c = make_control_report(pr.s, *r);
      f[mode + "/control.md"] = control_markdown(c);
      f[mode + "/control.csv"] = control_csv(c);
    }
  }
  return f;
}

namespace {

struct CompareArgs {
  RunOptions run;
  std::string executor = "onednn";
  int warmup = 2;
  double margin = 0.10;
  std::string trace, inference;  // --trace: the measured side from a PyTorch profiler trace
};

// The measured side from a PyTorch profiler trace (compare_with_trace).
int run_compare_trace(const Common& c, const CompareArgs& a) {
  const OutputOptions& out = a.run.out;
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, a.run.scenario, a.run.seed, false, out.quiet);
  if (pr.s.models.size() != 1)
    std::cerr << "note: the trace is compared with the scenario's first model, " << pr.s.models[0].name << "\n";
  const TraceComparison tc = compare_with_trace(pr, a.trace, a.inference, a.margin, out.sim_options());
  const Comparison& cmp = tc.cmp;
  const SimResult& predicted = tc.predicted;
  const std::string& md = tc.markdown;
  if (!out.quiet) std::cout << md;
  if (!out.dir.empty()) {
    fs::create_directories(out.dir);
    write_compare_json(cmp, out.dir + "/compare.json");
    write_file(out.dir + "/compare.md", md);
    const std::string sub = out.dir + "/simulate";
    fs::create_directories(sub);
    write_json(make_report(pr.s, pr.plan, predicted, "simulate"), sub + "/report.json");
    write_requests_csv(pr.s, pr.plan, predicted, sub + "/requests.csv");
    std::vector<std::string> warnings;
    auto plots = write_compare_plots(cmp, out.dir, &warnings);
    for (auto& w : warnings) std::cerr << "warning: " << w << "\n";
    if (!out.quiet) {
      std::cout << "\nwrote " << out.dir << "/compare.md, compare.json, simulate/";
      for (auto& f : plots) std::cout << ", " << fs::path(f).filename().string();
      std::cout << "\n";
    }
  }
  return 0;
}

int run_compare(const Common& c, const std::string& path, long long seed, const OutputOptions& out,
                const std::string& executor, int warmup, double margin) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, true, out.quiet);
  std::optional<StopSignals> signals;  // SIGINT / SIGTERM in the real run: the comparison of what ran, exit 130 / 143
  const RealComparison rc = compare_for_real(pr, out.sim_options(), margin, [&] {
    signals.emplace();
    return run_for_real(pr, out, executor, warmup);
  });
  if (!out.quiet) std::cout << rc.markdown;
  if (!out.dir.empty()) {
    for (const auto& [name, text] : compare_files(pr, rc)) {
      fs::create_directories(fs::path(out.dir + "/" + name).parent_path());
      write_file(out.dir + "/" + name, text);
    }
    for (const auto& [mode, r] : {std::pair<std::string, const SimResult*>{"simulate", &rc.predicted},
                                  {"execute", &rc.measured.result}}) {
      write_trace(pr.s, pr.plan, *r, out.dir + "/" + mode + "/trace.json");
      if (rc.control) {  // for its plot (control.md and control.csv again, the same text)
        std::vector<std::string> cw;
        write_control(make_control_report(pr.s, *r), out.dir + "/" + mode, &cw);
        for (auto& w : cw) std::cerr << "warning: " << w << "\n";
      }
    }
    std::vector<std::string> warnings;
    auto plots = write_compare_plots(rc.cmp, out.dir, &warnings);
    for (auto& w : warnings) std::cerr << "warning: " << w << "\n";
    if (!out.quiet) {
      std::cout << "\nwrote " << out.dir << "/compare.md, compare.json, simulate/ and execute/ reports";
      for (auto& f : plots) std::cout << ", " << fs::path(f).filename().string();
      std::cout << "\n";
    }
  }
  if (const int stopped = signal_stop(rc.measured.result)) return stopped;
  return rc.measured.failed ? kExitExecutorFailed : 0;
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
  cmd->add_option("--trace", a->trace,
                  "take the measured side from a PyTorch profiler trace (.json or .json.gz) instead of running: "
                  "inferences and stages from its record_function ranges, ops where it has shapes");
  cmd->add_option("--inference", a->inference,
                  "with --trace: the record_function range around each inference (default: the most frequent range "
                  "holding a stage range)");
  return {cmd, [a](const Common& c) {
            if (!a->trace.empty()) return run_compare_trace(c, *a);
            return run_compare(c, a->run.scenario, a->run.seed, a->run.out, a->executor, a->warmup, a->margin);
          }};
}

}  // namespace vlasim::cli
