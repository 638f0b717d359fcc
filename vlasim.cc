// vlasim: the command-line front-end. Thin by design: every subcommand parses its options,
// calls the library, and turns errors into a message and a non-zero exit status.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "models/builder.h"
#include "reports/compare.h"
#include "reports/control.h"
#include "reports/leaderboard.h"
#include "reports/passes.h"
#include "reports/plot.h"
#include "models/passes/passes.h"
#include "executors/onednn_executor.h"
#include "reports/roofline.h"
#include "reports/report.h"
#include "reports/sweep.h"
#include "reports/validate_papers.h"
#include "scenarios/scenario.h"
#include "scenarios/workload.h"
#include "scheduler/policy.h"
#include "scheduler/zone.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/lockstep.h"
#include "scheduler/placement.h"
#include "scheduler/traffic_controller.h"
#include "sim/plan.h"
#include "executors/executor.h"
#include "executors/runtime.h"
#include "executors/calibration/calibrate.h"
#include "sim/profile.h"
#include "vlasim_mpi.h"

namespace fs = std::filesystem;
using namespace vlasim;

namespace {

// Most segment executions a trace may keep (--trace-limit).
constexpr long long kMaxTraceLimit = 10'000'000;

// A check that an option's value is a whole number from lo to hi.
CLI::Validator whole_number(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end || errno == ERANGE || v < lo || v > hi)
          return "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                 ", got '" + text + "'";
        return "";
      },
      "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// A check that an option's value is a finite number at most hi and above lo (at least lo when
// !above).
CLI::Validator number_in(double lo, double hi, bool above) {
  auto show = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  const std::string range =
      (above ? "greater than " + show(lo) + " and at most " : "from " + show(lo) + " to ") + show(hi);
  return CLI::Validator(
      [lo, hi, above, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end || !std::isfinite(v) || v < lo || (above && v == lo) || v > hi)
          return "must be a number " + range + ", got '" + text + "'";
        return "";
      },
      (above ? "in (" : "in [") + show(lo) + ", " + show(hi) + "]");
}

// Throws ConfigError naming `option` unless `dir` is a directory this process may write in or
// can be created (its nearest existing parent is such a directory).
void check_output_dir(const std::string& option, const std::string& dir) {
  auto refuse = [&](const std::string& why) {
    throw ConfigError("<command line>", 0, 0, option, "'" + dir + "' " + why);
  };
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) refuse("exists and is not a directory");
    if (::access(p.c_str(), W_OK | X_OK) != 0) refuse("is a directory this user may not write in");
    return;
  }
  fs::path parent = p.parent_path();
  while (!parent.empty() && parent != parent.root_path() && !fs::exists(parent, ec))
    parent = parent.parent_path();
  if (!fs::is_directory(parent, ec))
    refuse("cannot be created: '" + parent.string() + "' is not a directory");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    refuse("cannot be created: this user may not write in '" + parent.string() + "'");
}

// Throws ConfigError naming `option` unless `file` can be written: not a directory, in an
// existing directory this process may write in.
void check_output_file(const std::string& option, const std::string& file) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw ConfigError("<command line>", 0, 0, option,
                      "'" + file + "' is a directory; give a file name");
  fs::path parent = fs::absolute(file, ec).parent_path();
  if (!fs::is_directory(parent, ec) || ::access(parent.c_str(), W_OK | X_OK) != 0)
    throw ConfigError("<command line>", 0, 0, option,
                      "'" + file + "' cannot be written: '" + parent.string() +
                          "' is not a directory this user may write in");
}

// Throws ConfigError naming `option` unless `path` passes check_input_file.
void check_option_file(const std::string& option, const std::string& path) {
  try {
    check_input_file(path);
  } catch (const ConfigError& e) {
    throw ConfigError("<command line>", 0, 0, option, "'" + path + "' " + e.message());
  }
}

// Throws ConfigError naming --set when a number in the sweep's `key` indexes past the end of
// its list in the scenario at `path`; other problems of the key are run_sweep's to report.
void check_sweep_indices(const std::string& path, const std::string& key) {
  ConfigNode n = ConfigNode::load_file(path);
  std::stringstream parts(key);
  std::string part, walked;
  while (std::getline(parts, part, '.')) {
    const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (n.is_sequence() && index) {
      const size_t size = n.raw().size();
      if (part.size() > 9 || std::stoul(part) >= size)
        throw ConfigError("<command line>", 0, 0, "--set",
                          "index " + part + " in '" + key + "' is out of range: '" + walked +
                              "' has " + std::to_string(size) + " entries");
      n = n.items()[std::stoul(part)];
    } else if (n.is_map() && n.has(part)) {
      n = n.required(part);
    } else {
      return;
    }
    walked += (walked.empty() ? "" : ".") + part;
  }
}

struct Common {
  std::string catalog = default_catalog_dir();
  std::string cards = default_cards_dir();
  std::string profile;  // when set, replaces every scenario's cost model with "profiled"
};

// Draws a one-line progress bar on stderr when it is a terminal or when forced.
void progress_bar(double f) {
  int n = static_cast<int>(f * 40);
  std::fprintf(stderr, "\r[%-40s] %3d%%", std::string(static_cast<size_t>(n), '#').c_str(),
               static_cast<int>(f * 100));
  if (f >= 1) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

// A simulation's progress line on stderr: bar, the model's clock, requests ended, and model
// events per second of wall time since the line was made.
std::function<void(const SimProgress&)> sim_progress_line() {
  const auto start = std::chrono::steady_clock::now();
  return [start](const SimProgress& p) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int n = static_cast<int>(p.fraction * 30);
    std::fprintf(stderr, "\r[%-30s] %3d%%  simulated %.4g s  %zu requests  %.3g events/s  ",
                 std::string(static_cast<size_t>(n), '#').c_str(), static_cast<int>(p.fraction * 100),
                 p.simulated_s, p.requests_ended, wall > 0 ? static_cast<double>(p.events) / wall : 0.0);
    if (p.fraction >= 1) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

// A scenario ready to run: loaded, with its cost model and plan. Memory is checked with each
// model's pipeline window (its requests in flight hold KV caches and activations together).
struct Prepared {
  Scenario s;
  Plan plan;
};
// Says on stderr which dtype each `dtype: auto` model got on this machine.
void tell_auto_dtypes(const Scenario& s) {
  for (const ModelInstance& mi : s.models)
    if (mi.dtype_auto)
      std::cerr << "dtype auto: model '" << mi.name << "' runs " << to_string(mi.shape.dtype)
                << (model_uses_cpu(s, mi) ? " (this CPU: oneDNN ISA " + host_info().isa + ", bf16 " +
                                                (host_info().bf16_native ? "native)" : "not native)")
                                          : " (GPU)")
                << "\n";
}

// Loads a scenario, gives `dtype: auto` models this machine's dtype, and with `on_this_host`
// (its prediction is compared with a run here) refuses a profile made on another CPU ISA.
Scenario load_for(const Common& c, const std::string& path, bool on_this_host, bool quiet) {
  Scenario s = load_scenario(path, c.catalog, c.cards);
  resolve_auto_dtypes(s, native_cpu_dtype());
  if (!quiet) tell_auto_dtypes(s);
  if (!c.profile.empty()) use_profiled_cost_model(s, c.profile);
  if (on_this_host)
    if (ProfileRef ref = scenario_profile(s); !ref.path.empty()) {
      // A CPU profile predicts this host only if it was made on its ISA; a GPU's records none.
      const DeviceProfile prof = load_profile(ref.path);
      bool cpu = false;
      for (const DeviceInstance& d : s.devices) cpu |= d.spec.name == prof.catalog_device && d.spec.type == DeviceType::Cpu;
      if (std::string why = cpu ? profile_isa_problem(prof, ref.path, host_info().isa) : ""; !why.empty()) {
        if (!c.profile.empty()) throw ConfigError("<command line>", 0, 0, "--profile", why);
        ref.where.fail(why);
      }
    }
  return s;
}

Prepared prepare(const Common& c, const std::string& path, long long seed, bool on_this_host, bool quiet) {
  Prepared pr;
  pr.s = load_for(c, path, on_this_host, quiet);
  if (seed >= 0) pr.s.seed = static_cast<uint64_t>(seed);
  pr.plan = plan_scenario(pr.s);
  resolve_stream_loads(pr.s, pr.plan);
  if (!quiet)
    for (const StreamDecl& sd : pr.s.streams)
      if (sd.load > 0)
        std::fprintf(stderr, "load %g: stream '%s' runs at %.3f Hz\n", sd.load, sd.name.c_str(), sd.rate_hz);
  return pr;
}

struct OutputOptions {
  std::string dir;
  size_t trace_limit = 20000;
  bool quiet = false, progress = false;
  // A simulation estimated past these is refused before it starts (check_work).
  double max_requests = SimOptions().max_requests;
  double max_memory_gb = SimOptions().max_memory_bytes / 1e9;
  double max_wall_s = 0;  // simulate: stop after this many wall-clock seconds (0: no limit)
  bool stream_records = false;  // simulate: constant memory (SimOptions::on_record)
  double max_run_s = ExecuteOptions().max_seconds;  // execute, compare: longest real run accepted
  SimOptions sim_options() const {
    SimOptions o;
    o.trace_limit = trace_limit;
    o.max_requests = max_requests;
    o.max_memory_bytes = max_memory_gb * 1e9;
    return o;
  }
};

// Prints each warning on stderr and, unless quiet, the files written.
void print_written(const std::vector<std::string>& files, const std::vector<std::string>& warnings, bool quiet) {
  for (auto& w : warnings) std::cerr << "warning: " << w << "\n";
  if (quiet) return;
  std::cout << "\nwrote";
  for (auto& f : files) std::cout << " " << f;
  std::cout << "\n";
}

// Prints the summary and writes report.json, requests.csv and trace.json.
// `streamed`: the report of a run whose records went to a ReportBuilder and requests.csv as
// they finished (simulate --stream-records) instead of r.requests.
void write_outputs(const Prepared& pr, const SimResult& r, const std::string& mode,
                   const OutputOptions& out, const Report* streamed = nullptr) {
  Report rep = streamed ? *streamed : make_report(pr.s, pr.plan, r, mode);
  if (!out.quiet) std::cout << summary_text(rep);
  if (out.dir.empty()) return;
  fs::create_directories(out.dir);
  write_json(rep, out.dir + "/report.json");
  if (!streamed) write_requests_csv(pr.s, pr.plan, r, out.dir + "/requests.csv");
  write_trace(pr.s, pr.plan, r, out.dir + "/trace.json");
  if (!out.quiet)
    std::cout << "\nwrote " << out.dir << "/report.json, requests.csv, trace.json "
              << "(open trace.json in ui.perfetto.dev or chrome://tracing)\n";
  // Streams of some stages only (full streaming): rates and staleness (reports/control.h).
  if (streamed && std::any_of(pr.s.streams.begin(), pr.s.streams.end(), [](const StreamDecl& d) { return d.stages != 0; }))
    std::cerr << "warning: --stream-records keeps no records: streams.md/.csv need them (run without it)\n";
  if (const std::vector<StreamingRow> sr = streamed ? std::vector<StreamingRow>{} : make_streaming_report(pr.s, r);
      !sr.empty()) {
    if (!out.quiet) std::cout << "\n" << streaming_markdown(sr);
    std::vector<std::string> files;
    write_into(out.dir, "streams.md", streaming_markdown(sr), &files);
    write_into(out.dir, "streams.csv", streaming_csv(sr), &files);
    print_written(files, {}, out.quiet);
  }
  // Streams with control: the control delay and real-time chunking (reports/control.h).
  if (std::none_of(pr.s.streams.begin(), pr.s.streams.end(), [](const StreamDecl& d) { return d.control.on(); }))
    return;
  if (streamed) {
    std::cerr << "warning: --stream-records keeps no records: control.md/.csv need them (run without it)\n";
    return;
  }
  const ControlReport cr = make_control_report(pr.s, r);
  if (!out.quiet)
    for (const ControlStream& cs : cr.streams)
      std::printf("control %s: delay p50 %.2f ms, max %.2f ms; frozen prefix p50 %d of %d actions; ran dry %zu "
                  "chunks (%.3g s); bounded rate %.1f Hz (robot %g Hz)\n",
                  cs.name.c_str(), cs.delay_p50 * 1e3, cs.delay_max * 1e3, cs.frozen_p50, cs.chunk, cs.dry_chunks,
                  cs.dry_s, cs.bound_hz, cs.control.hz);
  std::vector<std::string> warnings;
  const std::vector<std::string> files = write_control(cr, out.dir, &warnings);
  print_written(files, warnings, out.quiet);
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

// Exit statuses of a simulation stopped early; its partial report is written all the same.
constexpr int kExitWallLimit = 3;
constexpr int kExitInterrupted = 130;

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
    std::ofstream o(f);
    o << text;
    if (!o) throw std::runtime_error(f.string() + ": failed to write");
    if (!quiet) std::cerr << "wrote " << f.string() << " (" << lp.lut.size() << " pairs of batches)\n";
  }
  return 0;
}

// Solves placement problem `path` (scheduler/placement.h) and prints the placement; with a
// folder, writes placement.md and placement.csv there, and with a one-GPU template scenario
// the fleet scenario (fleet.yaml) that `vlasim simulate` checks.
int run_place(const std::string& path, const std::string& dir, const std::string& templ,
              const std::string& strategy_name, bool quiet, double live_interval) {
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
  const PlacementProblem p = load_placement_problem(path);
  const std::vector<Placement> phases = control_traffic(p, strategy);
  const std::string md = controller_markdown(p, phases);
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

int run_validate_papers(const Common& c, const std::string& path, const std::string& dir, bool quiet) {
  if (!dir.empty()) check_output_dir("--out", dir);
  check_option_file("figures", path);
  const FigureTable t = load_figure_table(path);
  const bool bar = !quiet && isatty(STDERR_FILENO);
  const Validation v = validate_papers(t, c.catalog, c.cards, bar ? progress_bar : std::function<void(double)>());
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

int run_simulate(const Common& c, const std::string& path, long long seed, const OutputOptions& out) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, false, out.quiet);
  SimOptions opt = out.sim_options();
  // On a terminal the progress line is on unless --quiet; --progress forces it elsewhere.
  if (out.progress || (!out.quiet && isatty(STDERR_FILENO))) opt.progress = sim_progress_line();
  // The first Ctrl-C stops the run at the next check and writes what ran; a second one kills.
  struct sigaction sa = {};
  sa.sa_handler = on_sigint;
  sa.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  opt.should_stop = [&]() -> std::string {
    if (g_interrupted) return "interrupted (SIGINT)";
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
  SimResult r = simulate(pr.s, pr.plan, opt);
  signal(SIGINT, SIG_DFL);
  if (csv) csv->close();
  if (controller) {
    const std::string md = controller_decisions_markdown(*controller);
    if (!out.quiet)
      std::cout << "\ncontroller (" << pr.s.controller.strategy << ", every " << fmt_g(pr.s.controller.interval_s)
                << " s): " << controller->decisions().size() << " placements for the demand it saw\n" << md;
    if (!out.dir.empty()) {
      fs::create_directories(out.dir);
      std::ofstream(out.dir + "/controller.md") << "# Traffic controller decisions\n\n" << md;
      std::ofstream(out.dir + "/controller.csv") << controller_decisions_csv(*controller);
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
  return g_interrupted ? kExitInterrupted : kExitWallLimit;
}

// Runs the prepared scenario on the real executors, telling the user what it does.
ExecResult run_for_real(const Prepared& pr, const OutputOptions& out, const std::string& executor,
                        int warmup) {
  ExecuteOptions opt;
  opt.executor = executor;
  opt.warmup = warmup;
  opt.trace_limit = out.trace_limit;
  opt.max_requests = out.max_requests;
  opt.max_memory_bytes = out.max_memory_gb * 1e9;
  opt.max_seconds = out.max_run_s;
  if (out.progress || (!out.quiet && isatty(STDERR_FILENO))) opt.progress = progress_bar;
  if (!out.quiet)
    std::cerr << "measuring: " << pr.s.arrivals_end() << " s of arrivals in wall-clock time...\n";
  ExecResult r = execute(pr.s, pr.plan, opt);
  if (!out.quiet)
    for (auto& d : r.devices) std::cerr << "executor " << d << "\n";
  if (r.failed)
    std::cerr << "error: " << r.failed << " requests failed in their executor; the first: "
              << r.first_error << "\n";
  return r;
}

// Exit status of a real run some of whose requests failed in their executor (reports written).
constexpr int kExitExecutorFailed = 4;

int run_execute(const Common& c, const std::string& path, long long seed, const OutputOptions& out,
                const std::string& executor, int warmup) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, false, out.quiet);  // no prediction is compared
  ExecResult r = run_for_real(pr, out, executor, warmup);
  write_outputs(pr, r.result, "execute", out);
  return r.failed ? kExitExecutorFailed : 0;
}

// The sweep the command line asks for. Throws ConfigError naming the option (--set, --goal,
// --out) when it is malformed; checks -o/--out only with `check_out` (under mpirun, only
// rank 0 writes).
SweepSpec sweep_spec(const Common& c, const std::string& path, const std::vector<std::string>& sets,
                     const std::string& goal_name, double slo, double cap_gb, const std::string& mem_device,
                     const std::string& dir, const OutputOptions& out, bool check_out) {
  if (sets.empty()) throw ConfigError("<command line>", 0, 0, "--set", "give a --set KEY=VALUES");
  SweepSpec spec;
  if (goal_name == "capacity") {
    if (slo <= 0)
      throw ConfigError("<command line>", 0, 0, "--slo",
                        "--goal capacity needs --slo, the deadline attainment to hold (e.g. 0.98)");
    spec.capacity_slo = slo;
  } else if (!parse_split_goal(goal_name, &spec.goal)) {
    throw ConfigError("<command line>", 0, 0, "--goal",
                      "unknown goal '" + goal_name + "'; valid names are: throughput, latency, memory, capacity");
  } else if (slo > 0) {
    throw ConfigError("<command line>", 0, 0, "--slo", "--slo goes with --goal capacity");
  }
  spec.axis = parse_sweep_axis(sets[0]);
  for (const std::string& k : linked_keys(spec.axis.key)) check_sweep_indices(path, k);
  if (check_out && !dir.empty()) check_output_dir("--out", dir);
  spec.path = path;
  spec.catalog_dir = c.catalog;
  spec.cards_dir = c.cards;
  spec.memory_cap_bytes = cap_gb * 1e9;
  spec.memory_device = mem_device;
  spec.auto_cpu_dtype = native_cpu_dtype();
  spec.profile = c.profile;
  spec.sim_options = out.sim_options();
  spec.make_router = [](const Scenario& s) -> std::unique_ptr<Router> { return std::make_unique<LiveController>(s); };
  return spec;
}

// Prints the sweep's table (unless quiet) and its best value, and writes its files into `dir`
// (when given).
void publish_sweep(const SweepResult& r, const std::string& dir, bool quiet) {
  if (!quiet) std::cout << sweep_table(r);
  if (r.goal == "capacity") {
    char slo[32];
    std::snprintf(slo, sizeof slo, "%g%%", 100 * r.capacity_slo);
    if (r.best >= 0)
      std::cout << "capacity at " << slo << " deadline attainment: " << r.key << " = " << r.rows[r.best].value
                << (r.first_miss >= 0 ? " (" + r.rows[r.first_miss].value + " misses)" : " (every value meets it: sweep further)")
                << "\n";
    else
      std::cout << "no value meets " << slo << " deadline attainment (the first, " << r.rows.front().value
                << ", already misses)\n";
  } else if (r.best >= 0) {
    std::cout << "best " << r.key << " for " << r.goal << ": " << r.rows[r.best].value << "\n";
  } else {
    std::cout << "no value meets the goal\n";
  }
  if (!dir.empty())
    for (auto& f : write_sweep(r, dir))
      if (!quiet) std::cout << "wrote " << f << "\n";
}

// A plain run sweeps here, in this process. Under mpirun (detect_mpi_launch), a build with
// MPI spreads the values over the ranks (run_sweep_over_ranks) and writes the same files and
// output as a plain run; a build without MPI refuses, rather than let every rank run the
// whole sweep and overwrite the others' files.
// A grid (several --set): the first key is swept at every combination of the others' values,
// each combination's sweep written to DIR/<key=value_...>/, and the grid's table (the knee
// per configuration for --goal capacity) printed and written to DIR/grid.md, grid.csv,
// grid.svg. Runs in this process only.
int run_sweep_grid(const std::function<SweepSpec(bool)>& setup, const std::vector<std::string>& sets,
                   const std::string& dir, bool quiet) {
  if (detect_mpi_launch().launched) {
    std::cerr << "error: vlasim sweep: a grid (several --set) runs in one process; run it without mpirun\n";
    return 2;
  }

  SweepSpec base = setup(true);
  std::vector<SweepAxis> axes;
  GridResult g;
  std::vector<std::string> taken = linked_keys(base.axis.key);  // every key set, linked ones apart
  for (size_t i = 1; i < sets.size(); ++i) {
    axes.push_back(parse_sweep_axis(sets[i]));
    for (const std::string& k : linked_keys(axes.back().key)) {
      check_sweep_indices(base.path, k);
      if (std::count(taken.begin(), taken.end(), k))
        throw ConfigError("<command line>", 0, 0, "--set", "key '" + k + "' is given twice");
      taken.push_back(k);
    }
    g.keys.push_back(axes.back().key);
  }
  g.configs = grid_configs(axes);
  constexpr size_t kMaxConfigs = 256;
  if (g.configs.size() > kMaxConfigs)
    throw ConfigError("<command line>", 0, 0, "--set",
                      "the grid has " + std::to_string(g.configs.size()) + " configurations; at most " +
                          std::to_string(kMaxConfigs));
  // Each configuration's folder: values that would share one (a/b and a-b) or pass a file
  // name's length are refused.
  std::vector<std::string> labels;
  for (const auto& config : g.configs) {
    labels.push_back(grid_label(g.keys, config));
    if (labels.back().size() > 200)
      throw ConfigError("<command line>", 0, 0, "--set", "configuration folder name '" + labels.back() + "' is too long");
    if (std::count(labels.begin(), labels.end() - 1, labels.back()))
      throw ConfigError("<command line>", 0, 0, "--set",
                        "two configurations would share folder '" + labels.back() + "'; give values that differ in letters or digits");
  }
  // The whole grid's work is bounded by --max-requests: each configuration gets its share.
  base.sim_options.max_requests /= static_cast<double>(g.configs.size());
  for (size_t c = 0; c < g.configs.size(); ++c) {
    SweepSpec spec = base;
    for (size_t k = 0; k < g.keys.size(); ++k) spec.fixed.emplace_back(g.keys[k], g.configs[c][k]);
    const std::string label = grid_label(g.keys, g.configs[c]);
    if (!quiet) std::cerr << "configuration " << c + 1 << " of " << g.configs.size() << ": " << label << "\n";
    const std::function<void(double)> progress = quiet ? std::function<void(double)>() : progress_bar;
    try {
      g.sweeps.push_back(run_sweep(spec, progress));
      g.refused.emplace_back();
    } catch (const ConfigError& e) {
      if (e.file() == "<command line>" && e.key() != "--set") throw;  // the command line's fault, not this configuration's
      // Refused at every value: the grid goes on, the table says why.
      SweepResult r;
      r.key = base.axis.key;
      r.goal = base.capacity_slo > 0 ? "capacity" : "";
      r.capacity_slo = base.capacity_slo;
      g.sweeps.push_back(r);
      g.refused.push_back(e.what());
      continue;
    }
    if (!dir.empty()) write_sweep(g.sweeps.back(), dir + "/" + label);
  }
  if (std::all_of(g.refused.begin(), g.refused.end(), [](const std::string& r) { return !r.empty(); }))
    throw ConfigError("<command line>", 0, 0, "--set", "every configuration of the grid was refused; the first: " + g.refused.front());
  std::cout << grid_table(g);
  if (!dir.empty())
    for (auto& f : write_grid(g, dir))
      if (!quiet) std::cout << "wrote " << f << "\n";
  return 0;
}

int run_sweep_cmd(const Common& c, const std::string& path, const std::vector<std::string>& sets,
                  const std::string& goal_name, double slo, double cap_gb, const std::string& mem_device,
                  const std::string& dir, const OutputOptions& out) {
  auto setup = [&](bool lead) {
    return sweep_spec(c, path, sets, goal_name, slo, cap_gb, mem_device, dir, out, lead);
  };
  const std::function<void(double)> progress = out.quiet ? std::function<void(double)>() : progress_bar;
  auto publish = [&](const SweepResult& r) { publish_sweep(r, dir, out.quiet); };
  if (sets.size() > 1) return run_sweep_grid(setup, sets, dir, out.quiet);
  if (const MpiLaunch launch = detect_mpi_launch(); launch.launched) {
#ifdef VLASIM_WITH_MPI
    return run_sweep_over_ranks(setup, progress, publish);
#else
    if (launch.size != 1) {
      if (launch.rank == 0 || launch.size == 0)
        std::cerr << "error: vlasim sweep: started by an MPI launcher ("
                  << (launch.size > 0 ? std::to_string(launch.size) + " ranks" : "rank " + std::to_string(launch.rank))
                  << "), but this vlasim was built without MPI (VLASIM_WITH_MPI=OFF), so every rank would "
                     "run the whole sweep and overwrite the others' files; run it without mpirun, or "
                     "install libboost-mpi-dev and rebuild\n";
      return 2;
    }
#endif
  }
  publish(run_sweep(setup(true), progress));
  return 0;
}

int run_compare(const Common& c, const std::string& path, long long seed, const OutputOptions& out,
                const std::string& executor, int warmup, double margin) {
  if (!out.dir.empty()) check_output_dir("--out", out.dir);
  Prepared pr = prepare(c, path, seed, true, out.quiet);
  SimOptions sopt = out.sim_options();
  SimResult predicted = simulate(pr.s, pr.plan, sopt);
  ExecResult measured = run_for_real(pr, out, executor, warmup);
  Comparison cmp = compare_runs(pr.s, pr.plan, predicted, measured.result,
                                op_times(pr.s, pr.plan, measured.op_seconds), margin);
  std::string md = compare_markdown(cmp);
  const bool control = std::any_of(pr.s.streams.begin(), pr.s.streams.end(), [](const StreamDecl& d) { return d.control.on(); });
  if (control) md += control_comparison(make_control_report(pr.s, predicted), make_control_report(pr.s, measured.result));
  const std::vector<StreamingRow> sp = make_streaming_report(pr.s, predicted), sm = make_streaming_report(pr.s, measured.result);
  if (!sp.empty()) md += streaming_comparison(sp, sm);
  if (!out.quiet) std::cout << md;
  if (!out.dir.empty()) {
    fs::create_directories(out.dir);
    write_compare_json(cmp, out.dir + "/compare.json");
    std::ofstream(out.dir + "/compare.md") << md;
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
  return measured.failed ? kExitExecutorFailed : 0;
}

// What a GPU calibration takes beyond a CPU's.
struct GpuCalibration {
  std::vector<int> sms;  // SM limits (--sms)
  bool graph = false;    // --graph
};

int run_calibrate(const Common& c, const std::vector<std::string>& scenarios, const std::string& out_path,
                  const std::string& device, const std::vector<int>& threads,
                  const std::vector<std::string>& dtypes, const std::string& grid, int reps,
                  const std::string& executor, bool in_context, InContextOptions io,
                  const std::string& base, const GpuCalibration& gc, bool quiet) {
  check_output_file("--out", out_path);
  if (!base.empty()) check_option_file("--base", base);
  CalibrateOptions o;
  o.catalog_dir = c.catalog;
  o.executor = executor;
  o.catalog_device = device;
  const Catalog catalog = Catalog::load_dir(c.catalog);
  const DeviceSpec* spec = catalog.find(device);
  const bool gpu = spec && spec->type == DeviceType::Gpu;
  if (spec && !gpu && (!gc.sms.empty() || gc.graph))
    throw ConfigError("<command line>", 0, 0, gc.graph ? "--graph" : "--sms",
                      "SM limits and graph replay calibrate a GPU; --device " + device + " is not one");
  if (gpu && in_context)
    throw ConfigError("<command line>", 0, 0, "--in-context",
                      "in-context calibration runs CPU core groups; a GPU is calibrated op by op (--graph for "
                      "CUDA Graph replays)");
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
  if (!quiet) {
    o.progress = [](int done, int total, const std::string&) {
      progress_bar(total > 0 ? static_cast<double>(done) / total : 1.0);
    };
    double load[1] = {0};
    if (getloadavg(load, 1) == 1 && load[0] > 0.5 * std::thread::hardware_concurrency())
      std::cerr << "warning: load average " << load[0]
                << " on this machine; calibration measures best on an idle machine\n";
  }
  DeviceProfile profile = base.empty() ? calibrate(o) : load_profile(base);
  if (!base.empty())
    if (std::string why = profile_isa_problem(profile, base, host_info().isa); !why.empty())
      throw ConfigError("<command line>", 0, 0, "--base", why);
  if (in_context) {
    io.executor = executor;
    if (!quiet) std::cerr << "in context: running " << loaded.size() << " scenario(s) one request at a time...\n";
    for (const InContextSummary& r : calibrate_in_context(profile, loaded, io))
      std::printf("in context %-28s %3d requests: ops %.3f ms, segments %.3f ms, latency %.3f ms\n",
                    r.scenario.c_str(), r.requests, r.op_seconds * 1e3, r.wall_seconds * 1e3,
                    r.latency_seconds * 1e3);
  }
  save_profile(profile, out_path);
  if (!quiet) std::cout << "wrote " << out_path << "\n";
  return 0;
}

template <class R>
void list_registry(const R& reg) {
  std::cout << reg.family() << ":\n";
  for (const auto& e : reg.entries()) {
    std::cout << "  " << e.name << " - " << e.description << "\n";
    for (const auto& p : e.params)
      std::cout << "      " << p.name << " (default " << (p.default_value.empty() ? "required" : p.default_value)
                << "): " << p.description << "\n";
  }
}

int run_list(const Common& c, const std::string& what) {
  const std::vector<std::string> families = {"host", "cost_models", "queue_policies", "pipeline_policies",
                                             "batching_policies", "partition_policies", "zone_policies", "executors", "devices", "cards", "workloads",
                                             "passes"};
  bool all = what.empty() || what == "all";
  if (!all && std::find(families.begin(), families.end(), what) == families.end()) {
    std::cerr << "vlasim list: unknown family '" << what << "'; valid names are: " << join_names(families)
              << "\n";
    return 2;
  }
  if (all || what == "host") std::cout << host_text(host_info());
  if (all || what == "cost_models") list_registry(cost_models());
  if (all || what == "queue_policies") list_registry(queue_policies());
  if (all || what == "pipeline_policies") list_registry(pipeline_policies());
  if (all || what == "batching_policies") list_registry(batch_policies());
  if (all || what == "partition_policies") list_registry(partition_policies());
  if (all || what == "zone_policies") list_registry(zone_policies());
  if (all || what == "executors") list_registry(executor_registry());
  if (all || what == "devices") {
    Catalog cat = Catalog::load_dir(c.catalog);
    std::cout << "devices (catalog " << c.catalog << "):\n";
    for (auto& [name, d] : cat.entries())
      std::cout << "  " << name << " [" << to_string(d.type) << "] - " << d.description << "\n";
  }
  if (all || what == "cards") {
    std::cout << "model cards (" << c.cards << "):\n";
    for (auto& n : card_names(c.cards)) std::cout << "  " << n << "\n";
  }
  if (all || what == "workloads") list_registry(workloads());
  if (all || what == "passes") {
    std::cout << "graph passes (in the order they apply; a card's `passes:` or a model's `passes:` picks them):\n";
    for (const GraphPass& p : graph_passes())
      std::cout << "  " << p.name << " [" << (p.builder ? "builder" : "rewrite") << "] - " << p.description << "\n";
  }
  return 0;
}

// A node for an error about command-line option `key` given `value`.
ConfigNode command_line(const std::string& key, const std::string& value) {
  return ConfigNode(YAML::Node(value), std::make_shared<const std::string>("<command line>"), key);
}

// Parses --dp-cache START:END[:INTERVAL[:KEEP]] (models/builder.h DpCache); the builder checks
// the window against the steps and the expert. Throws ConfigError naming the option.
DpCache parse_dp_cache_option(const std::string& text) {
  DpCache d;
  std::vector<long long> v;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ':')) {
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end || errno || x < 0 || x > kMaxSteps)
      command_line("--dp-cache", text).fail("expected START:END[:INTERVAL[:KEEP]], whole numbers from 0 to " +
                                            std::to_string(kMaxSteps) + ", got '" + text + "'");
    v.push_back(x);
  }
  if (v.size() < 2 || v.size() > 4 || text.back() == ':')
    command_line("--dp-cache", text).fail("expected START:END[:INTERVAL[:KEEP]], got '" + text + "'");
  d.start = static_cast<int>(v[0]);
  d.end = static_cast<int>(v[1]);
  if (v.size() > 2) d.interval = static_cast<int>(v[2]);
  if (v.size() > 3) d.keep = static_cast<int>(v[3]);
  return d;
}

// --dp-cache TEXT for `card` at `steps` steps: parsed, then checked as a scenario's dp_cache:
// is. Throws ConfigError naming --dp-cache.
DpCache dp_cache_option(const std::string& text, const ModelCard& card, int steps) {
  const DpCache dc = parse_dp_cache_option(text);
  if (const DpCacheProblem p = dp_cache_problem(card, dc, steps); !p.why.empty())
    command_line("--dp-cache", text).fail(p.why);
  return dc;
}

// --passes a,b,... ("none": no pass) for `card` at `shape`: each name a pass that applies.
// Throws ConfigError naming --passes.
std::vector<std::string> passes_option(const std::vector<std::string>& given, const ModelCard& card,
                                       const RunShape& shape) {
  std::vector<std::string> names;
  for (const std::string& n : given)
    if (n != "none") names.push_back(n);
  if (given.size() > 1 && names.size() != given.size())
    command_line("--passes", join_names(given)).fail("'none' stands alone: it means no pass");
  try {
    if (const PassesProblem p = passes_problem(card, names, shape); p.index >= 0)
      command_line("--passes", names[size_t(p.index)]).fail(p.why);
  } catch (const GraphTooLarge& e) {
    command_line("--passes", join_names(given)).fail(std::string("cannot check the passes: ") + e.what());
  }
  return names;
}

int run_graph(const Common& c, const std::string& card_name, int views, int prompt, int chunk,
              int steps, int batch, const std::string& dtype, const std::string& dp_cache,
              const std::optional<std::vector<std::string>>& passes, bool ops) {
  ConfigNode where(YAML::Node(card_name), std::make_shared<const std::string>("<command line>"),
                   "card");
  ModelCard card = find_card(c.cards, card_name, where);
  RunShape shape = card.defaults;
  if (views > 0) shape.views = views;
  if (prompt >= 0) shape.prompt = prompt;
  if (chunk > 0) shape.chunk = chunk;
  if (steps > 0) shape.steps = steps;
  shape.batch = batch;
  if (!dp_cache.empty()) shape.dp_cache = dp_cache_option(dp_cache, card, shape.steps);
  if (!dtype.empty() && !parse_dtype(dtype, &shape.dtype)) {
    std::cerr << "vlasim graph: unknown dtype '" << dtype << "'; valid names are: fp32, bf16, fp16, int8\n";
    return 2;
  }
  if (passes) shape.passes = passes_option(*passes, card, shape);
  OpGraph g;
  try {
    g = build_graph(card, shape);
  } catch (const GraphTooLarge& e) {
    std::cerr << "error: vlasim graph: " << card.name << " with " << shape.steps << " steps, "
              << shape.views << " views, chunk " << shape.chunk << ": " << e.what() << "\n";
    return 2;
  }
  std::printf("%s: %zu ops, %.3f TFLOP, %.1f M parameters, prefix %lld tokens, suffix %lld tokens\n",
              card.name.c_str(), g.size(), g.flops() / 1e12, g.param_bytes() / dtype_bytes(shape.dtype) / 1e6,
              static_cast<long long>(g.prefix_tokens), static_cast<long long>(g.suffix_tokens));
  const std::vector<std::string>& applied = shape.passes ? *shape.passes : *card.defaults.passes;
  std::printf("  passes: %s\n", applied.empty() ? "none" : join_names(applied).c_str());
  for (Stage s : {Stage::Vision, Stage::Prefix, Stage::Action, Stage::Decode, Stage::Head})
    if (g.flops(s) > 0)
      std::printf("  %-7s %8.4f TFLOP  %7.1f M params  %d blocks\n", to_string(s), g.flops(s) / 1e12,
                  g.param_bytes(s) / dtype_bytes(shape.dtype) / 1e6, g.blocks(s));
  if (ops)
    for (size_t i = 0; i < g.size(); ++i) {
      const Op& o = g.op(static_cast<int>(i));
      std::printf("%5zu %-40s %-11s %-15s %.4g GFLOP %.4g MB\n", i, o.name.c_str(), to_string(o.kind),
                  to_string(o.fn), o.flops / 1e9, (o.bytes_read + o.bytes_written) / 1e6);
    }
  return 0;
}

// What `leaderboard` and `roofline` run: a card at its defaults (with the shape options given),
// or a model of a scenario file (--model, default the first). A path ending in .yaml/.yml or
// naming a file is a scenario.
struct ModelChoice {
  std::string what;  // the argument
  std::string model;  // --model
  int views = 0, prompt = -1, chunk = 0, steps = 0, batch = 0;
  std::string dtype;
  std::string dp_cache;  // --dp-cache START:END[:INTERVAL[:KEEP]]
  std::optional<std::vector<std::string>> passes;  // --passes (graph passes; "none": no pass)
  std::string cost_model;  // --cost-model (default: the scenario's, roofline for a card)
  bool graph_capture = false;  // --graph-capture (a card on GPUs)
};

// The cost model --cost-model names, checked against the registry ("" when not given).
std::string cost_model_option(const std::string& name) {
  if (!name.empty() && !cost_models().find(name))
    command_line("--cost-model", name).fail("unknown cost model '" + name + "'; valid names are: " +
                                            join_names(cost_models().names()));
  return name;
}


bool is_scenario_arg(const std::string& what) {
  const std::string ext = fs::path(what).extension().string();
  std::error_code ec;
  return ext == ".yaml" || ext == ".yml" || fs::is_regular_file(what, ec);
}


// The scenario's model index named by --model (default 0). Throws ConfigError listing the names.
int pick_model(const Scenario& s, const std::string& name) {
  if (name.empty()) return 0;
  std::vector<std::string> names;
  for (size_t i = 0; i < s.models.size(); ++i) {
    if (s.models[i].name == name) return static_cast<int>(i);
    names.push_back(s.models[i].name);
  }
  command_line("--model", name).fail("no model '" + name + "' in " + s.file + "; valid names are: " + join_names(names));
}

LeaderboardModel choose_model(const Common& c, const ModelChoice& mc) {
  LeaderboardModel m;
  ModelCard card;
  if (is_scenario_arg(mc.what)) {
    check_option_file("scenario", mc.what);
    Scenario s = load_scenario(mc.what, c.catalog, c.cards);
    const ModelInstance& mi = s.models[static_cast<size_t>(pick_model(s, mc.model))];
    card = mi.card;
    m.name = mi.name;
    m.shape = mi.shape;
    if (mi.dtype_auto) m.shape.dtype = DType::BF16;  // what GPUs run natively
  } else {
    if (!mc.model.empty()) command_line("--model", mc.model).fail("--model picks a model of a scenario file; '" + mc.what + "' is a card name");
    card = find_card(c.cards, mc.what, command_line("card", mc.what));
    m.name = card.name;
    m.shape = card.defaults;
  }
  m.card = card.name;
  if (mc.views > 0) m.shape.views = mc.views;
  if (mc.prompt >= 0) m.shape.prompt = mc.prompt;
  if (mc.chunk > 0) m.shape.chunk = mc.chunk;
  if (mc.steps > 0) m.shape.steps = mc.steps;
  if (mc.batch > 0) m.shape.batch = mc.batch;
  if (!mc.dtype.empty() && !parse_dtype(mc.dtype, &m.shape.dtype))
    command_line("--dtype", mc.dtype).fail("unknown dtype '" + mc.dtype + "'; valid names are: fp32, bf16, fp16, int8");
  if (!mc.dp_cache.empty()) m.shape.dp_cache = dp_cache_option(mc.dp_cache, card, m.shape.steps);
  if (mc.passes) m.shape.passes = passes_option(*mc.passes, card, m.shape);
  if (!cost_model_option(mc.cost_model).empty()) m.cost_model = mc.cost_model;
  m.graph_capture = mc.graph_capture;
  return m;
}


int run_leaderboard(const Common& c, const ModelChoice& mc, const LeaderboardOptions& o, const std::string& dir,
                    bool quiet) {
  if (!dir.empty()) check_output_dir("--out", dir);
  const LeaderboardModel m = choose_model(c, mc);
  const bool bar = !quiet && isatty(STDERR_FILENO);
  const Leaderboard lb = make_leaderboard(m, c.catalog, c.cards, o, bar ? progress_bar : std::function<void(double)>());
  if (!quiet) std::cout << leaderboard_markdown(lb);
  if (!dir.empty()) {
    std::vector<std::string> warnings;
    const auto files = write_leaderboard(lb, dir, &warnings);
    print_written(files, warnings, quiet);
  }
  return 0;
}

// The scenario `roofline` and `passes` report on, and its model index: a scenario file as it is
// (shape options refused: its plan runs its models as the file gives them), or a card (or a
// scenario's model) alone on --device.
Scenario chosen_scenario(const Common& c, const ModelChoice& mc, const std::string& device, int* model) {
  *model = 0;
  if (is_scenario_arg(mc.what) && device.empty()) {
    const char* given = mc.views > 0 ? "--views" : mc.prompt >= 0 ? "--prompt" : mc.chunk > 0 ? "--chunk"
                        : mc.steps > 0 ? "--steps" : mc.batch > 0 ? "--batch" : !mc.dtype.empty() ? "--dtype"
                        : !mc.dp_cache.empty() ? "--dp-cache" : mc.passes ? "--passes"
                        : mc.graph_capture ? "--graph-capture" : nullptr;
    if (given)
      command_line(given, mc.what).fail(std::string(given) + " goes with a card or --device; a scenario's own plan "
                                        "runs its models as the file gives them");
    check_option_file("scenario", mc.what);
    Scenario s = load_scenario(mc.what, c.catalog, c.cards);
    *model = pick_model(s, mc.model);
    resolve_auto_dtypes(s, native_cpu_dtype());
    if (!cost_model_option(mc.cost_model).empty()) {
      const ConfigNode none;
      s.cost_model = PolicyDecl{mc.cost_model, Params(none), command_line("--cost-model", mc.cost_model)};
    }
    if (!c.profile.empty()) use_profiled_cost_model(s, c.profile);
    return s;
  }
  if (device.empty())
    command_line("--device", "").fail("a card runs on one catalog device: give --device (see `vlasim list devices`)");
  const LeaderboardModel m = choose_model(c, mc);
  compute_device(Catalog::load_dir(c.catalog), device, command_line("--device", device), c.catalog);
  Scenario s = one_device_scenario(m, device, c.catalog, c.cards);
  s.models[0].name = m.name;
  if (!c.profile.empty()) use_profiled_cost_model(s, c.profile);
  return s;
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

// `vlasim passes`: the cumulative speed-up table of the graph passes (reports/passes.h).
int run_passes(const Common& c, ModelChoice mc, const std::string& device, bool measure, int reps,
               const std::string& dir, bool quiet) {
  if (!dir.empty()) check_output_dir("--out", dir);
  PassTableOptions o;
  if (mc.passes) {
    for (const std::string& p : *mc.passes)
      if (p != "none") o.passes.push_back(p);
    o.none = o.passes.empty();
  }
  mc.passes.reset();  // here --passes names the rows to add, not the model's own passes
  int model = 0;
  const Scenario s = chosen_scenario(c, mc, device, &model);
  if (measure) {
    ExecOptions eo;
    eo.dtype = s.models[size_t(model)].shape.dtype;
    if (const std::string why = cpu_dtype_problem(eo.dtype); !why.empty())
      command_line("--measure", to_string(eo.dtype)).fail(why);
    o.executor = OneDnnExecutor(eo).device();
    o.reps = reps;
    o.prepare = [eo](const OpGraph& g) -> std::function<double()> {
      auto ex = std::make_shared<OneDnnExecutor>(eo);
      const int seg = ex->prepare(g, all_ops(g));
      return [ex, seg] { return ex->run(seg).total; };
    };
  }
  const bool bar = !quiet && isatty(STDERR_FILENO);
  const PassTable t = make_pass_table(s, model, o, bar ? progress_bar : std::function<void(double)>());
  if (!quiet) std::cout << pass_table_markdown(t);
  if (!dir.empty()) {
    fs::create_directories(dir);
    std::vector<std::string> files = {(fs::path(dir) / "passes.md").string(), (fs::path(dir) / "passes.csv").string()};
    write_file(files[0], pass_table_markdown(t));
    write_file(files[1], pass_table_csv(t));
    print_written(files, {}, quiet);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vlasim: simulate and run Vision-Language-Action inference across GPUs, CPUs and links"};
  app.require_subcommand(1);
  Common c;
  app.add_option("--catalog", c.catalog, "hardware catalog directory")->capture_default_str();
  app.add_option("--cards", c.cards, "model card directory")->capture_default_str();
  app.add_option("--profile", c.profile,
                 "device profile from `vlasim calibrate`: use the profiled cost model for every scenario");

  std::string scenario;
  long long seed = -1;
  OutputOptions out;
  auto add_run_options = [&](CLI::App* cmd) {
    cmd->add_option("scenario", scenario, "scenario YAML file")->required();
    cmd->add_option("-o,--out", out.dir, "directory for report.json, requests.csv and trace.json");
    cmd->add_option("--seed", seed, "override the scenario's seed")
        ->check(whole_number(0, std::numeric_limits<long long>::max()));
    cmd->add_option("--trace-limit", out.trace_limit, "segment executions kept in the trace")
        ->capture_default_str()->check(whole_number(0, kMaxTraceLimit));
    cmd->add_flag("-q,--quiet", out.quiet, "print nothing but errors");
    cmd->add_flag("--progress", out.progress,
                  "show progress on stderr even when it is not a terminal (simulate: simulated time, "
                  "requests, events/s; on a terminal it shows unless --quiet)");
  };
  auto add_limit_options = [&](CLI::App* cmd) {
    cmd->add_option("--max-requests", out.max_requests,
                    "refuse a run estimated to issue more requests than this")
        ->capture_default_str()->check(number_in(0, 1e12, true));
    cmd->add_option("--max-memory-gb", out.max_memory_gb,
                    "refuse a run estimated to keep more records than this (GB)")
        ->capture_default_str()->check(number_in(0, 1e6, true));
  };
  auto* sim = app.add_subcommand("simulate", "predict latency, throughput, memory and deadlines of a scenario");
  add_run_options(sim);
  add_limit_options(sim);
  sim->add_option("--max-wall-s", out.max_wall_s,
                  "stop after this many wall-clock seconds and write the report of what ran, "
                  "marked partial (exit 3); Ctrl-C does the same (exit 130)")
      ->check(number_in(0, 1e9, true));
  sim->add_flag("--stream-records", out.stream_records,
                "constant memory for long runs: write each request's row to requests.csv as it "
                "finishes and take percentiles from a histogram (within 0.1% of exact) instead "
                "of keeping every record");
  auto* exec = app.add_subcommand("execute", "run a scenario's workload for real on this machine's executors");
  add_run_options(exec);
  add_limit_options(exec);
  auto add_run_length = [&](CLI::App* cmd) {
    cmd->add_option("--max-run-s", out.max_run_s,
                    "refuse a real run whose arrivals end later than this many wall-clock seconds")
        ->capture_default_str()->check(number_in(0, 1e9, true));
  };
  add_run_length(exec);
  std::string executor = "onednn";
  int warmup = 2;
  exec->add_option("--executor", executor, "executor name (see `vlasim list executors`)")->capture_default_str();
  exec->add_option("--warmup", warmup, "runs of every segment before the clock starts")
      ->capture_default_str()->check(whole_number(0, 1000));

  auto* cmp = app.add_subcommand("compare", "run a scenario simulated and measured; errors, KS and equivalence tests, plots");
  add_run_options(cmp);
  add_limit_options(cmp);
  add_run_length(cmp);
  double margin = 0.10;
  cmp->add_option("--executor", executor, "executor name")->capture_default_str();
  cmp->add_option("--warmup", warmup, "runs of every segment before the clock starts")
      ->capture_default_str()->check(whole_number(0, 1000));
  cmp->add_option("--margin", margin, "equivalence margin of the TOST on mean latency")
      ->capture_default_str()->check(number_in(0.001, 1.0, false));

  auto* cal = app.add_subcommand("calibrate", "profile operators on this machine's executor and write a device profile");
  std::vector<std::string> cal_scenarios, cal_dtypes;
  std::vector<int> cal_threads;
  std::string cal_out = "profile.json", cal_device = "epyc-2vcpu", cal_grid = "full";
  int cal_reps = 5;
  cal->add_option("scenarios", cal_scenarios, "scenarios whose every operator shape is profiled too");
  cal->add_option("-o,--out", cal_out, "profile file to write")->capture_default_str();
  cal->add_option("--device", cal_device, "catalog entry the profile describes")->capture_default_str();
  cal->add_option("--threads", cal_threads, "core-group sizes to profile (default 1, plus the scenarios')")
      ->delimiter(',')->check(whole_number(1, 4096));
  GpuCalibration cal_gpu;
  cal->add_option("--sms", cal_gpu.sms,
                  "GPU --device: SM limits to profile, each on a green context (default the whole GPU, plus the "
                  "scenarios' streams)")
      ->delimiter(',')->check(whole_number(1, 4096));
  cal->add_flag("--graph", cal_gpu.graph,
                "GPU --device: time each op as a CUDA Graph replay (for devices with graph_capture)");
  cal->add_option("--dtypes", cal_dtypes, "dtypes to profile: auto, fp32, bf16 (default auto: this CPU's native dtype, see `vlasim list host`, or bf16 on a GPU; plus the scenarios')")->delimiter(',');
  cal->add_option("--grid", cal_grid, "shape grid: none, quick or full")->capture_default_str();
  cal->add_option("--reps", cal_reps, "timed runs per operator (median)")->capture_default_str()->check(whole_number(1, 100000));
  cal->add_option("--executor", executor, "executor name")->capture_default_str();
  bool cal_in_context = false;
  cal->add_flag("--in-context", cal_in_context,
                "also run the scenarios' own segments one request at a time through the real runtime "
                "and keep those op times and the dispatch overhead");
  InContextOptions cal_io;
  cal->add_option("--context-requests", cal_io.repetitions,
                  "with --in-context: timed requests per scenario (more give the run-to-run "
                  "variation's tail; fewer when slow)")
      ->capture_default_str()
      ->check(whole_number(5, 100000));
  cal->add_option("--context-seconds", cal_io.max_seconds,
                  "with --in-context: about how long each scenario's timed requests may take")
      ->capture_default_str()
      ->check(number_in(0, 86400, true));
  std::string cal_base;
  cal->add_option("--base", cal_base,
                  "with --in-context: start from this profile instead of measuring the grid and graphs");
  cal->add_flag("-q,--quiet", out.quiet, "no progress bar");

  auto* sweep = app.add_subcommand("sweep", "simulate a scenario over values of one key; table, plot and the best value");
#ifdef VLASIM_WITH_MPI
  sweep->footer("Under mpirun (mpirun -n N vlasim sweep ...) the values are spread over the N ranks; rank 0 "
                "prints the table and writes the same files as a run without mpirun.");
#else
  sweep->footer("This vlasim was built without MPI (VLASIM_WITH_MPI=OFF): under mpirun with more than one "
                "rank, sweep refuses to run; build with libboost-mpi-dev installed to spread a sweep over ranks.");
#endif
  std::vector<std::string> sets;
  std::string goal = "throughput", mem_device, sweep_dir;
  double cap_gb = 0;
  sweep->add_option("scenario", scenario, "scenario YAML file")->required();
  sweep->add_option("--set", sets, "KEY=a:b[:step] or KEY=v1,v2,... (KEY e.g. models.0.partition.params.after_block; "
                                    "KEY1+KEY2 sets both to each value); several: the first is swept at every combination of the others' values (a grid)")
      ->required();
  sweep->add_option("--goal", goal,
                    "throughput, latency, memory (lowest latency under --memory-cap-gb) or capacity (the "
                    "largest value of a load key up to which deadline attainment stays >= --slo)")
      ->capture_default_str();
  double slo = 0;
  sweep->add_option("--slo", slo, "for --goal capacity: the deadline attainment to hold, e.g. 0.98")
      ->check(number_in(0, 1, true));
  sweep->add_option("--memory-cap-gb", cap_gb, "memory cap for --goal memory")
      ->check(number_in(0, 1e6, false));
  sweep->add_option("--memory-device", mem_device, "device whose peak memory is weighed (default: the first)");
  sweep->add_option("-o,--out", sweep_dir, "directory for sweep.csv, sweep.md and sweep.svg");
  sweep->add_flag("-q,--quiet", out.quiet, "print only the best value");
  add_limit_options(sweep);

  ModelChoice mc;
  auto add_model_options = [&](CLI::App* cmd) {
    cmd->add_option("model", mc.what, "a model card name (its default shape) or a scenario file")->required();
    cmd->add_option("--model", mc.model, "with a scenario file: which of its models (default: the first)");
    cmd->add_option("--views", mc.views, "camera views")->check(whole_number(1, kMaxViews));
    cmd->add_option("--prompt", mc.prompt, "prompt tokens")->check(whole_number(0, kMaxPrompt));
    cmd->add_option("--chunk", mc.chunk, "action chunk")->check(whole_number(1, kMaxChunk));
    cmd->add_option("--steps", mc.steps, "denoising / decoding steps")->check(whole_number(1, kMaxSteps));
    cmd->add_option("--batch", mc.batch, "batch size")->check(whole_number(1, kMaxBatch));
    cmd->add_option("--dtype", mc.dtype, "fp32, bf16, fp16 or int8");
    cmd->add_option("--dp-cache", mc.dp_cache,
                    "DP-Cache on the diffusion or flow action head: START:END[:INTERVAL[:KEEP]] (steps [START, END) "
                    "cached but every INTERVAL-th, default 2; KEEP blocks run at each end, default 1)");
    cmd->add_option_function<std::vector<std::string>>(
           "--passes", [&](const std::vector<std::string>& v) { mc.passes = v; },
           "graph passes to apply, comma-separated, or none (default: the card's; `vlasim list passes`)")
        ->delimiter(',');
    cmd->add_flag("--graph-capture", mc.graph_capture,
                  "a card on a GPU replays a captured CUDA Graph (default: eager, a launch per kernel)");
    cmd->add_option("--cost-model", mc.cost_model,
                    "cost model to predict with (`vlasim list cost_models`; e.g. shaped, the shape-aware GPU "
                    "model; default: the scenario's, roofline for a card)");
  };
  auto* lboard = app.add_subcommand("leaderboard",
                                    "CET table: a model's time, energy and cost on every catalog GPU (or --devices), "
                                    "predicted; Markdown, CSV, Pareto SVGs and a roofline per device");
  add_model_options(lboard);
  LeaderboardOptions lb_opt;
  std::string lb_dir;
  lboard->add_option("--devices", lb_opt.devices, "catalog entries (default: every GPU-type entry)")->delimiter(',');
  lboard->add_option("--min-hz", lb_opt.min_hz, "control rate a device must reach to be feasible")
      ->capture_default_str()->check(number_in(0, 1e6, false));
  lboard->add_option("--lifetime-years", lb_opt.lifetime_years, "service life the price is spread over")
      ->capture_default_str()->check(number_in(0, 100, true));
  lboard->add_option("--utilisation", lb_opt.utilisation, "fraction of the service life spent inferring")
      ->capture_default_str()->check(number_in(0, 1, true));
  lboard->add_option("--usd-per-kwh", lb_opt.usd_per_kwh, "electricity price")
      ->capture_default_str()->check(number_in(0, 1e3, false));
  lboard->add_option("--idle-fraction", lb_opt.idle_fraction,
                     "idle power as a fraction of TDP for catalog entries without idle_w")
      ->capture_default_str()->check(number_in(0, 1, false));
  lboard->add_option("-o,--out", lb_dir, "directory for leaderboard.md/.csv, the Pareto SVGs and roofline files");
  lboard->add_flag("-q,--quiet", out.quiet, "print nothing but errors");

  auto* roof = app.add_subcommand("roofline",
                                  "roofline report of a model: per device, stage and operator class, intensity, "
                                  "bound, attainable and predicted FLOP/s; Markdown, CSV and SVG");
  add_model_options(roof);
  std::string roof_device, roof_dir;
  roof->add_option("--device", roof_device,
                   "catalog entry to run a card (or a scenario's model) on alone; without it a scenario "
                   "is reported as it is placed");
  roof->add_option("-o,--out", roof_dir, "directory for roofline.md, roofline.csv and roofline_<device>.svg");
  roof->add_flag("-q,--quiet", out.quiet, "print nothing but errors");

  std::string lut_out;
  auto* plut = app.add_subcommand("profile-lut",
                                  "make the SM lookup table of a scenario's lockstep GPUs from its cost model");
  plut->add_option("scenario", scenario, "scenario YAML file with a `lockstep:` on a GPU")->required();
  plut->add_option("-o,--out", lut_out, "table file (YAML) to write, for the scenario's `lut:` (default: stdout)");
  plut->add_flag("-q,--quiet", out.quiet, "print nothing but errors");
  std::string place_file, place_dir, place_template;
  auto* place = app.add_subcommand("place",
                                   "place models on GPUs and robots on instances (Robion's integer program, CBC)");
  place->add_option("problem", place_file, "placement problem YAML (gpus; models with robots and capacity)")->required();
  place->add_option("-o,--out", place_dir, "folder for placement.md and placement.csv (and fleet.yaml)");
  place->add_option("--template", place_template,
                    "one-GPU scenario to copy per GPU and model instance: writes the fleet's scenario (fleet.yaml)");
  std::string place_strategy = "ilp";
  place->add_option("--strategy", place_strategy,
                    "ilp (Robion's integer program, CBC), or a baseline: even (every model's robots split over "
                    "every GPU) or dedicated (one model per GPU)")
      ->capture_default_str();
  double place_live = 0;
  place->add_option("--live", place_live,
                    "also write fleet_live.yaml: every model on every GPU it can run on, robots routed by the traffic "
                    "controller, which re-solves every this many seconds for the demand it sees (not told the changes)");
  place->add_flag("-q,--quiet", out.quiet, "print only the placement");
  std::string vp_file = "scenarios/papers/figures.yaml", vp_dir;
  auto* vpap = app.add_subcommand("validate-papers",
                                  "every published figure predicted by the roofline and by the shaped GPU model, "
                                  "fitted on a fit set, each paper out of sample (leave one paper out)");
  vpap->add_option("figures", vp_file, "figure table (default: scenarios/papers/figures.yaml)");
  vpap->add_option("-o,--out", vp_dir, "folder for validate.md and validate.csv");
  vpap->add_flag("-q,--quiet", out.quiet, "no progress bar");
  auto* list = app.add_subcommand("list", "list the registered parts and their parameters");
  std::string family;
  list->add_option("family", family,
                   "host (this machine's CPU, ISA, bf16, NUMA), cost_models, queue_policies, pipeline_policies, batching_policies, partition_policies, zone_policies, executors, devices, cards, workloads or passes (default: all)");

  auto* graph = app.add_subcommand("graph", "summarise the operator graph a model card builds");
  std::string card, dtype;
  int views = 0, prompt = -1, chunk = 0, steps = 0, batch = 1;
  bool ops = false;
  graph->add_option("card", card, "model card name")->required();
  graph->add_option("--views", views, "camera views")->check(whole_number(1, kMaxViews));
  graph->add_option("--prompt", prompt, "prompt tokens")->check(whole_number(0, kMaxPrompt));
  graph->add_option("--chunk", chunk, "action chunk")->check(whole_number(1, kMaxChunk));
  graph->add_option("--steps", steps, "denoising / decoding steps")->check(whole_number(1, kMaxSteps));
  graph->add_option("--batch", batch, "batch size")->check(whole_number(1, kMaxBatch));
  graph->add_option("--dtype", dtype, "fp32, bf16, fp16 or int8");
  std::string graph_dp_cache;
  graph->add_option("--dp-cache", graph_dp_cache,
                    "DP-Cache on the diffusion or flow action head: START:END[:INTERVAL[:KEEP]] (see `leaderboard --help`)");
  std::optional<std::vector<std::string>> graph_passes;
  graph->add_option_function<std::vector<std::string>>(
           "--passes", [&](const std::vector<std::string>& v) { graph_passes = v; },
           "graph passes to apply, comma-separated, or none (default: the card's; `vlasim list passes`)")
      ->delimiter(',');
  graph->add_flag("--ops", ops, "list every operator");

  auto* pss = app.add_subcommand("passes",
                                 "speed-up table of the graph passes: naive, graph capture (GPUs), then each pass "
                                 "added; kernels, FLOPs, bytes and predicted time per step (and measured with "
                                 "--measure)");
  add_model_options(pss);
  std::string pss_device, pss_dir;
  bool pss_measure = false;
  int pss_reps = 5;
  pss->add_option("--device", pss_device, "catalog entry to run a card (or a scenario's model) on alone");
  pss->add_flag("--measure", pss_measure, "also run each step's graph on this CPU (oneDNN) and time it");
  pss->add_option("--reps", pss_reps, "timed runs per step with --measure (the median is reported)")
      ->capture_default_str()->check(whole_number(1, 1000));
  pss->add_option("-o,--out", pss_dir, "directory for passes.md and passes.csv");
  pss->add_flag("-q,--quiet", out.quiet, "print nothing but errors");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    if (sweep->parsed() && detect_mpi_launch().rank > 0) return 2;  // mpirun: rank 0 says it once
    std::cerr << "error: " << e.what();
    if (app.get_subcommands().empty() && dynamic_cast<const CLI::RequiredError*>(&e)) {
      std::vector<std::string> names;
      for (const CLI::App* s : std::as_const(app).get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(s->get_name());
      std::cerr << "; subcommands are: " << join_names(names);
    }
    const std::vector<CLI::App*> given = app.get_subcommands();
    std::cerr << "\nsee 'vlasim" << (given.empty() ? "" : " " + given.front()->get_name())
              << " --help' for the options\n";
    return 2;
  }
  try {
    if (!c.profile.empty()) check_option_file("--profile", c.profile);
    if (*sim) return run_simulate(c, scenario, seed, out);
    if (*exec) return run_execute(c, scenario, seed, out, executor, warmup);
    if (*cal)
      return run_calibrate(c, cal_scenarios, cal_out, cal_device, cal_threads, cal_dtypes, cal_grid,
                           cal_reps, executor, cal_in_context, cal_io, cal_base, cal_gpu, out.quiet);
    if (*cmp) return run_compare(c, scenario, seed, out, executor, warmup, margin);
    if (*sweep) return run_sweep_cmd(c, scenario, sets, goal, slo, cap_gb, mem_device, sweep_dir, out);
    if (*lboard) return run_leaderboard(c, mc, lb_opt, lb_dir, out.quiet);
    if (*roof) return run_roofline(c, mc, roof_device, roof_dir, out.quiet);
    if (*plut) return run_profile_lut(c, scenario, lut_out, out.quiet);
    if (*place) return run_place(place_file, place_dir, place_template, place_strategy, out.quiet, place_live);
    if (*vpap) return run_validate_papers(c, vp_file, vp_dir, out.quiet);
    if (*list) return run_list(c, family);
    if (*graph) return run_graph(c, card, views, prompt, chunk, steps, batch, dtype, graph_dp_cache, graph_passes, ops);
    if (*pss) return run_passes(c, mc, pss_device, pss_measure, pss_reps, pss_dir, out.quiet);
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
