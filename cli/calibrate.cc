// vlasim calibrate: operators profiled on this machine's executor into a device profile.
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "executors/calibration/calibrate.h"
#include "executors/calibration/host_measure.h"
#include "executors/stop_signal.h"
#include "sim/measured/profile.h"

namespace vlasim::cli {
namespace {

// What a GPU calibration takes beyond a CPU's.
struct GpuCalibration {
  std::vector<int> sms;  // SM limits (--sms)
  bool graph = false;    // --graph
};

// A calibration Common::should_stop ended (`why`): what was measured so far is written (the
// grid's sections; the host entry and the in-context scenarios when it got that far); returns
// the signal's status (130 SIGINT, 143 SIGTERM; 130 for a caller's own stop hook).
int stopped_early(const DeviceProfile& profile, const std::string& out_path, const std::string& why) {
  save_profile(profile, out_path);
  std::cerr << "stopped early: " << why << "; " << out_path << " holds the " << profile.sections.size()
            << " section(s) measured so far\n";
  const int status = StopSignals::exit_status();  // 0 when a caller's own hook stopped it
  return status ? status : 128 + SIGINT;
}

// Prints the co-run slowdowns of `after` that `before` did not hold (a base's others are kept),
// each with how it was timed and the time off the CPU the figure leaves out.
void print_new_corun(const HostEntry& before, const HostEntry& after, const std::vector<CorunDetail>& details) {
  for (const CorunSlowdown& cs : after.corun)
    if (const CorunSlowdown* old = before.corun_for(cs.key); !old || !(*old == cs)) {
      std::printf("co-run x%.3f %s: %d runs, %.0f%% overlapped", cs.slowdown, cs.segment.c_str(), cs.runs,
                  100 * cs.overlap);
      for (const CorunDetail& d : details)
        if (d.key == cs.key) {
          std::printf(" (%s; wall time x%.3f, alone %.3f ms, loaded %.3f ms", d.cpu_time ? "CPU time" : "wall time",
                      d.wall_ratio, 1e3 * d.alone_s, 1e3 * d.loaded_s);
          if (d.off_cpu_alone >= 0 && d.off_cpu_loaded >= 0)
            std::printf(", off CPU %.1f%% alone, %.1f%% loaded", 100 * d.off_cpu_alone, 100 * d.off_cpu_loaded);
          std::printf(")");
        }
      std::printf("\n");
    }
}

// Throws ConfigError naming the option that does not apply to the kind of --device (`known`:
// the catalog has it; `gpu`: it is a GPU) or is out of range.
void check_device_options(const std::string& device, bool known, bool gpu, const GpuCalibration& gc,
                          bool in_context, double steadiness_s) {
  if (known && !gpu && (!gc.sms.empty() || gc.graph))
    throw ConfigError("<command line>", 0, 0, gc.graph ? "--graph" : "--sms",
                      "SM limits and graph replay calibrate a GPU; --device " + device + " is not one");
  if (gpu && steadiness_s > 0)
    throw ConfigError("<command line>", 0, 0, "--steadiness",
                      "the steadiness is this machine's CPU and memory; --device " + device + " is a GPU");
  if (steadiness_s > 0 && steadiness_s < 4)
    throw ConfigError("<command line>", 0, 0, "--steadiness",
                      "needs at least 4 s (two windows of 2 s), or 0 for none; got " + fmt_g(steadiness_s));
  if (gpu && in_context)
    throw ConfigError("<command line>", 0, 0, "--in-context",
                      "in-context calibration runs CPU core groups; a GPU is calibrated op by op (--graph for "
                      "CUDA Graph replays)");
}

int run_calibrate(const Common& c, const std::vector<std::string>& scenarios, const std::string& out_path,
                  const std::string& device, const std::vector<int>& threads,
                  const std::vector<std::string>& dtypes, const std::string& grid, int reps,
                  const std::string& executor, bool in_context, InContextOptions io,
                  const std::string& base, const GpuCalibration& gc, double steadiness_s, bool quiet,
                  bool progress) {
  check_output_file("--out", out_path);
  if (!base.empty()) check_option_file("--base", base);
  CalibrateOptions o;
  o.catalog_dir = c.catalog;
  o.executor = executor;
  o.catalog_device = device;
  const Catalog catalog = Catalog::load_dir(c.catalog);
  const DeviceSpec* spec = catalog.find(device);
  const bool gpu = spec && spec->type == DeviceType::Gpu;
  check_device_options(device, spec != nullptr, gpu, gc, in_context, steadiness_s);
  if (!threads.empty()) o.threads = threads;
  o.sms = gc.sms;
  o.graph = gc.graph;
  if (gpu) o.dtypes = {DType::BF16};
  if (!dtypes.empty()) {
    o.dtypes.clear();
    for (const auto& d : dtypes) {
      DType t;
      if (d == "auto") t = gpu ? DType::BF16 : native_cpu_dtype();
      else if (!parse_dtype(d, &t))
        throw ConfigError("<command line>", 0, 0, "--dtypes", "unknown dtype '" + d + "'; valid names are: auto, fp32, bf16");
      if (std::string why = gpu ? "" : cpu_dtype_problem(t); !why.empty())
        throw ConfigError("<command line>", 0, 0, "--dtypes", std::string("dtype ") + to_string(t) + ": " + why);
      o.dtypes.push_back(t);
    }
  }
  if (!parse_grid_level(grid, &o.grid))
    throw ConfigError("<command line>", 0, 0, "--grid", "unknown grid '" + grid + "'; valid names are: none, quick, full");
  o.repetitions = reps;
  std::vector<Scenario> loaded;
  for (const auto& path : scenarios) {
    loaded.push_back(load_scenario(path, c.catalog, c.cards));
    resolve_auto_dtypes(loaded.back(), native_cpu_dtype());
    if (!quiet) tell_auto_dtypes(loaded.back());
    add_scenario(o, loaded.back());
  }
  if (in_context && loaded.empty())
    throw ConfigError("<command line>", 0, 0, "--in-context", "in-context calibration needs scenarios to run");
  if (!base.empty() && !in_context)
    throw ConfigError("<command line>", 0, 0, "--base", "--base only makes sense with --in-context");
  if (show_progress(quiet, progress))
    o.progress = [](int done, int total, const std::string&) {
      progress_bar(total > 0 ? static_cast<double>(done) / total : 1.0);
    };
  if (!quiet) {
    double load[1] = {0};
    if (getloadavg(load, 1) == 1 && load[0] > 0.5 * std::thread::hardware_concurrency())
      std::cerr << "warning: load average " << load[0]
                << " on this machine; calibration measures best on an idle machine\n";
  }
  if (!quiet && base.empty()) {
    const CalibrationEstimate e = estimate_calibration(o);
    std::cerr << "calibrating: " << e.measurements << " measurements (" << reps
              << " timed runs per op, each op cut near " << fmt_g(o.max_seconds_per_op)
              << " s), at most about " << fmt_g(std::ceil(e.max_seconds / 60)) << " min\n";
  }
  // The drift sentinel watches the machine's own speed over the whole calibration (CPU).
  std::unique_ptr<SentinelWatch> sentinel;
  if (!gpu) sentinel = std::make_unique<SentinelWatch>();
  // Why the caller asks the calibration to end now ("" to go on).
  const auto stop_reason = [&c]() -> std::string { return c.should_stop ? c.should_stop() : ""; };
  o.should_stop = c.should_stop;
  DeviceProfile profile = base.empty() ? calibrate(o) : load_profile(base);
  if (const std::string why = stop_reason(); !why.empty())
    return stopped_early(profile, out_path, why);
  if (!base.empty())
    if (std::string why = profile_isa_problem(profile, base, host_info().isa); !why.empty())
      throw ConfigError("<command line>", 0, 0, "--base", why);
  // The host entry: measured with a new profile (or a base without one); a base's is kept,
  // measured when its grid was.
  if (!gpu && profile.host.empty()) {
    HostMeasureOptions hm;
    hm.group_cores = profile.threads;
    if (!quiet) std::cerr << "measuring the host: memory bandwidth per core group, alone and loaded...\n";
    profile.host = measure_host(hm);
  }
  if (!gpu && steadiness_s > 0 && stop_reason().empty()) {
    if (!quiet) std::cerr << "measuring the machine's steadiness: memory and core speed over " << fmt_g(steadiness_s)
                          << " s...\n";
    profile.host.steadiness = measure_steadiness(steadiness_s);
  }
  if (const std::string why = stop_reason(); !why.empty())
    return stopped_early(profile, out_path, why);
  if (!gpu && !quiet) std::cout << host_entry_text(profile.host, profile.logical_cpus);
  if (in_context) {
    io.executor = executor;
    if (!quiet) std::cerr << "in context: running " << loaded.size() << " scenario(s) one request at a time...\n";
    const HostEntry before = profile.host;
    std::vector<CorunDetail> details;
    std::vector<DispatchDetail> dispatch;
    io.corun_details = &details;
    io.dispatch_details = &dispatch;
    io.should_stop = c.should_stop;
    for (const InContextSummary& r : calibrate_in_context(profile, loaded, io))
      std::printf("in context %-28s %3d requests: ops %.3f ms, segments %.3f ms, latency %.3f ms\n",
                    r.scenario.c_str(), r.requests, r.op_seconds * 1e3, r.wall_seconds * 1e3,
                    r.latency_seconds * 1e3);
    print_new_corun(before, profile.host, details);
    for (const DispatchDetail& d : dispatch)
      std::printf("dispatch %d core(s) %s: %.3f us per op + %.2f%% of the op's time (%s over %d model run(s); "
                  "one figure per op: %.3f us), %.3f us of it per op outside segments\n",
                  d.threads, to_string(d.dtype), (d.per_op + d.outside_per_op) * 1e6, 100 * d.share,
                  d.two_terms ? "two terms" : "one term", d.samples, d.pooled_per_op * 1e6 + d.outside_per_op * 1e6,
                  d.outside_per_op * 1e6);
    if (const std::string why = stop_reason(); !why.empty()) {
      if (sentinel) profile.sentinel = sentinel->stop();
      return stopped_early(profile, out_path, why);
    }
  }
  if (sentinel) {
    profile.sentinel = sentinel->stop();
    std::printf("%s\n", sentinel_text(profile.sentinel).c_str());
  }
  save_profile(profile, out_path);
  if (!quiet) std::cout << "wrote " << out_path << "\n";
  return 0;
}

// The calibrate command's options.
struct CalibrateArgs {
  std::vector<std::string> scenarios, dtypes;
  std::vector<int> threads;
  std::string out = "profile.json", device = "epyc-2vcpu", grid = "full", executor = "onednn", base;
  int reps = 5;
  GpuCalibration gpu;
  double steadiness = 0;
  bool in_context = false;
  InContextOptions io;
  bool quiet = false, progress = false;
};

}  // namespace

Command add_calibrate(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cal = app.add_subcommand("calibrate", "profile operators on this machine's executor and write a device profile");
  cal->add_option("scenarios", a->scenarios, "scenarios whose every operator shape is profiled too");
  cal->add_option("-o,--out", a->out, "profile file to write")->capture_default_str();
  cal->add_option("--device", a->device, "catalog entry the profile describes")->capture_default_str();
  cal->add_option("--threads", a->threads, "core-group sizes to profile (default 1, plus the scenarios')")
      ->delimiter(',')->check(whole_number(1, 4096));
  cal->add_option("--sms", a->gpu.sms,
                  "GPU --device: SM limits to profile, each on a green context (default the whole GPU, plus the "
                  "scenarios' streams)")
      ->delimiter(',')->check(whole_number(1, 4096));
  cal->add_flag("--graph", a->gpu.graph,
                "GPU --device: time each op as a CUDA Graph replay (for devices with graph_capture)");
  cal->add_option("--dtypes", a->dtypes, "dtypes to profile: auto, fp32, bf16 (default auto: this CPU's native dtype, see `vlasim list host`, or bf16 on a GPU; plus the scenarios')")->delimiter(',');
  cal->add_option("--grid", a->grid, "shape grid: none, quick or full")->capture_default_str();
  cal->add_option("--reps", a->reps, "timed runs per operator (median)")->capture_default_str()->check(whole_number(1, 100000));
  cal->add_option("--executor", a->executor, "executor name")->capture_default_str();
  cal->add_flag("--in-context", a->in_context,
                "also run the scenarios' own segments one request at a time through the real runtime "
                "and keep those op times and the dispatch overhead");
  cal->add_option("--context-requests", a->io.repetitions,
                  "with --in-context: timed requests per scenario (more give the run-to-run "
                  "variation's tail; fewer when slow)")
      ->capture_default_str()
      ->check(whole_number(5, 100000));
  cal->add_option("--context-seconds", a->io.max_seconds,
                  "with --in-context: about how long each scenario's timed requests may take")
      ->capture_default_str()
      ->check(number_in(0, 86400, true));
  cal->add_option("--context-corun-seconds", a->io.corun_seconds,
                  "with --in-context: about how long each scenario runs with its core groups at once, for "
                  "each segment's co-run slowdown (0: not measured)")
      ->capture_default_str()
      ->check(number_in(0, 86400, false));
  cal->add_option("--steadiness", a->steadiness,
                  "CPU: also time memory and core speed for this many seconds with nothing else running, "
                  "in 2-s windows, into the host entry (how far the machine moves the same work by itself; "
                  "0: not measured)")
      ->capture_default_str()
      ->check(number_in(0, 86400, false));
  cal->add_option("--base", a->base,
                  "with --in-context: start from this profile instead of measuring the grid and graphs");
  cal->add_flag("-q,--quiet", a->quiet, "no progress bar");
  add_progress_flag(cal, a->progress);
  return {cal, [a](const Common& given) {
            // From the command line, SIGINT / SIGTERM end the calibration with what it measured
            // (exit 130 / 143); a caller with its own stop hook (Python's) keeps it.
            std::optional<StopSignals> signals;
            Common c = given;
            if (!c.should_stop) {
              signals.emplace();
              c.should_stop = [] { return StopSignals::reason(); };
            }
            return run_calibrate(c, a->scenarios, a->out, a->device, a->threads, a->dtypes, a->grid, a->reps,
                                 a->executor, a->in_context, a->io, a->base, a->gpu, a->steadiness, a->quiet,
                                 a->progress);
          }};
}

}  // namespace vlasim::cli
