#include "cli/common.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "executors/executor.h"
#include "executors/stop_signal.h"
#include "models/passes/passes.h"
#include "reports/control.h"
#include "reports/plot.h"
#include "reports/report.h"
#include "sim/costs/cost_models.h"
#include "sim/measured/profile.h"
#include "sim/costs/profiled_cost_model.h"
#include "sim/costs/stack_model.h"
#include "sim/engine/planner.h"

namespace vlasim::cli {

void add_common_options(CLI::App& app, Common& c) {
  app.add_option("--catalog", c.catalog, "hardware catalog directory")->capture_default_str();
  app.add_option("--cards", c.cards, "model card directory")->capture_default_str();
  app.add_option("--profile", c.profile,
                 "device profile from `vlasim calibrate`: use the profiled cost model for every scenario");
}

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

void check_option_file(const std::string& option, const std::string& path) {
  try {
    check_input_file(path);
  } catch (const ConfigError& e) {
    throw ConfigError("<command line>", 0, 0, option, "'" + path + "' " + e.message());
  }
}

ConfigNode command_line(const std::string& key, const std::string& value) {
  return ConfigNode(YAML::Node(value), std::make_shared<const std::string>("<command line>"), key);
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool show_progress(bool quiet, bool forced) { return forced || (!quiet && isatty(STDERR_FILENO)); }

void progress_bar(double f) {
  int n = static_cast<int>(f * 40);
  std::fprintf(stderr, "\r[%-40s] %3d%%", std::string(static_cast<size_t>(n), '#').c_str(),
               static_cast<int>(f * 100));
  if (f >= 1) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

std::function<void(double)> progress_for(bool quiet, bool forced) {
  return show_progress(quiet, forced) ? progress_bar : std::function<void(double)>();
}

void add_progress_flag(CLI::App* cmd, bool& forced, const std::string& detail) {
  cmd->add_flag("--progress", forced,
                "show progress on stderr even when it is not a terminal (" + detail +
                    "on a terminal it shows unless --quiet)");
}

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

SimOptions OutputOptions::sim_options() const {
  SimOptions o;
  o.trace_limit = trace_limit;
  o.max_requests = max_requests;
  o.max_memory_bytes = max_memory_gb * 1e9;
  return o;
}

void add_run_options(CLI::App* cmd, RunOptions& r) {
  cmd->add_option("scenario", r.scenario, "scenario YAML file")->required();
  cmd->add_option("-o,--out", r.out.dir, "directory for report.json, requests.csv and trace.json");
  cmd->add_option("--seed", r.seed, "override the scenario's seed")
      ->check(whole_number(0, std::numeric_limits<long long>::max()));
  cmd->add_option("--trace-limit", r.out.trace_limit, "segment executions kept in the trace")
      ->capture_default_str()->check(whole_number(0, kMaxTraceLimit));
  cmd->add_flag("-q,--quiet", r.out.quiet, "print nothing but errors");
  add_progress_flag(cmd, r.out.progress, "simulate: simulated time, requests, events/s; ");
}

void add_limit_options(CLI::App* cmd, OutputOptions& out) {
  cmd->add_option("--max-requests", out.max_requests,
                  "refuse a run estimated to issue more requests than this")
      ->capture_default_str()->check(number_in(0, 1e12, true));
  cmd->add_option("--max-memory-gb", out.max_memory_gb,
                  "refuse a run estimated to keep more records than this (GB)")
      ->capture_default_str()->check(number_in(0, 1e6, true));
}

void add_run_length(CLI::App* cmd, OutputOptions& out) {
  cmd->add_option("--max-run-s", out.max_run_s,
                  "refuse a real run whose arrivals end later than this many wall-clock seconds")
      ->capture_default_str()->check(number_in(0, 1e9, true));
}

void tell_auto_dtypes(const Scenario& s) {
  for (const ModelInstance& mi : s.models)
    if (mi.dtype_auto)
      std::cerr << "dtype auto: model '" << mi.name << "' runs " << to_string(mi.shape.dtype)
                << (model_uses_cpu(s, mi) ? " (this CPU: oneDNN ISA " + host_info().isa + ", bf16 " +
                                                (host_info().bf16_native ? "native)" : "not native)")
                                          : " (GPU)")
                << "\n";
}

std::string host_entry_elsewhere(const DeviceProfile& p) {
  const HostInfo& h = host_info();
  if (p.machine == h.cpu_model && p.isa == h.isa && p.logical_cpus == h.logical_cpus) return "";
  return "measured on " + p.machine + " (ISA " + p.isa + ", " + std::to_string(p.logical_cpus) +
         " CPUs), not this machine (" + h.cpu_model + ", ISA " + h.isa + ", " + std::to_string(h.logical_cpus) +
         " CPUs): the prediction describes that machine, as the profile's op times do";
}

void use_host_entry(Scenario& s, bool quiet) {
  const ProfileRef ref = scenario_profile(s);
  if (ref.path.empty()) return;
  const DeviceProfile prof = load_profile(ref.path);
  for (DeviceInstance& d : s.devices) {
    if (d.spec.type != DeviceType::Cpu || d.spec.name != prof.catalog_device) continue;
    if (prof.host.empty()) {
      if (!quiet)
        std::fprintf(stderr, "cpu device '%s': catalog entry '%s' (the profile has no host entry: made before "
                     "calibrate measured the host)\n", d.name.c_str(), d.spec.name.c_str());
      continue;
    }
    apply_host_entry(d.spec, prof.host, prof.logical_cpus);
    if (quiet) continue;
    const std::string elsewhere = host_entry_elsewhere(prof);
    std::fprintf(stderr,
                 "cpu device '%s': the host entry of %s (%s, measured %s) stands for catalog '%s': "
                 "core %.1f GB/s alone, %.1f GB/s with every core streaming, node %.1f GB/s, LLC %.1f MB%s; "
                 "%zu measured co-run slowdown(s)\n",
                 d.name.c_str(), ref.path.c_str(), elsewhere.empty() ? "this machine" : elsewhere.c_str(),
                 prof.date.c_str(), d.spec.name.c_str(), d.spec.core_bw / 1e9, d.spec.core_bw_loaded / 1e9,
                 d.spec.mem_bw / 1e9, d.spec.l2_bytes / 1e6,
                 llc_problem(prof.host).empty() ? "" : " (the catalog's: the measured one is implausible, see `vlasim list host`)",
                 prof.host.corun.size());
  }
}

Scenario load_for(const Common& c, const std::string& path, bool on_this_host, bool quiet) {
  Scenario s = load_scenario(path, c.catalog, c.cards);
  ready_for(c, s, on_this_host, quiet);
  return s;
}

void ready_for(const Common& c, Scenario& s, bool on_this_host, bool quiet) {
  resolve_auto_dtypes(s, native_cpu_dtype());
  if (!quiet) tell_auto_dtypes(s);
  if (!c.profile.empty()) use_profiled_cost_model(s, c.profile);
  use_host_entry(s, quiet);
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
}

Prepared prepare(const Common& c, const std::string& path, long long seed, bool on_this_host, bool quiet) {
  Prepared pr;
  pr.s = load_for(c, path, on_this_host, quiet);
  plan_prepared(pr, seed, quiet);
  return pr;
}

void plan_prepared(Prepared& pr, long long seed, bool quiet) {
  if (seed >= 0) pr.s.seed = static_cast<uint64_t>(seed);
  pr.plan = plan_scenario(pr.s);
  resolve_stream_loads(pr.s, pr.plan);
  if (!quiet)
    for (const StreamDecl& sd : pr.s.streams)
      if (sd.load > 0)
        std::fprintf(stderr, "load %g: stream '%s' runs at %.3f Hz\n", sd.load, sd.name.c_str(), sd.rate_hz);
}

void print_written(const std::vector<std::string>& files, const std::vector<std::string>& warnings, bool quiet) {
  for (auto& w : warnings) std::cerr << "warning: " << w << "\n";
  if (quiet) return;
  std::cout << "\nwrote";
  for (auto& f : files) std::cout << " " << f;
  std::cout << "\n";
}

void write_outputs(const Prepared& pr, const SimResult& r, const std::string& mode,
                   const OutputOptions& out, const Report* streamed) {
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

ExecResult run_for_real(const Prepared& pr, const OutputOptions& out, const std::string& executor,
                        int warmup) {
  ExecuteOptions opt;
  opt.executor = executor;
  opt.warmup = warmup;
  opt.trace_limit = out.trace_limit;
  opt.max_requests = out.max_requests;
  opt.max_memory_bytes = out.max_memory_gb * 1e9;
  opt.max_seconds = out.max_run_s;
  opt.should_stop = [] { return StopSignals::reason(); };  // the command holds a StopSignals
  if (show_progress(out.quiet, out.progress)) opt.progress = progress_bar;
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

int signal_stop(const SimResult& r) {
  const int status = StopSignals::exit_status();
  if (status)
    std::cerr << "stopped early: " << (r.stopped.empty() ? StopSignals::reason() : r.stopped) << " after "
              << fmt_g(r.horizon) << " s of arrivals; the report covers what ran, every request issued counted\n";
  return status;
}

void add_model_options(CLI::App* cmd, ModelChoice& mc) {
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
         "--passes", [&mc](const std::vector<std::string>& v) { mc.passes = v; },
         "graph passes to apply, comma-separated, or none (default: the card's; `vlasim list passes`)")
      ->delimiter(',');
  cmd->add_flag("--graph-capture", mc.graph_capture,
                "a card on a GPU replays a captured CUDA Graph (default: eager, a launch per kernel)");
  cmd->add_option("--cost-model", mc.cost_model,
                  "cost model to predict with (`vlasim list cost_models`; e.g. shaped, the shape-aware GPU "
                  "model; default: the scenario's, roofline for a card)");
}

void add_stack_option(CLI::App* cmd, std::string& stack) {
  cmd->add_option("--stack", stack,
                  "software stack GPUs are priced under: none (the cost model's own per-op launch and host "
                  "time), auto (graph where graph_capture, else eager), eager, graph or compiled (`vlasim list "
                  "stacks`; fitted on real traces: host dispatch, "
                  "launch and graph replay around the cost model's kernel times)");
}

namespace {

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

// The cost model --cost-model names, checked against the registry ("" when not given).
std::string cost_model_option(const std::string& name) {
  if (!name.empty() && !cost_models().find(name))
    command_line("--cost-model", name).fail("unknown cost model '" + name + "'; valid names are: " +
                                            join_names(cost_models().names()));
  return name;
}

// Whether `what` names a scenario file rather than a card: it ends in .yaml/.yml or is a file.
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

}  // namespace

DpCache dp_cache_option(const std::string& text, const ModelCard& card, int steps) {
  const DpCache dc = parse_dp_cache_option(text);
  if (const DpCacheProblem p = dp_cache_problem(card, dc, steps); !p.why.empty())
    command_line("--dp-cache", text).fail(p.why);
  return dc;
}

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
  if (!mc.stack.empty()) m.stack = check_stack_name(mc.stack, command_line("--stack", mc.stack));
  return m;
}

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
    if (!mc.stack.empty()) {
      const ConfigNode none;
      s.stack = PolicyDecl{check_stack_name(mc.stack, command_line("--stack", mc.stack)), Params(none),
                           command_line("--stack", mc.stack)};
    }
    if (!c.profile.empty()) use_profiled_cost_model(s, c.profile);
    use_host_entry(s, true);  // the CPU figures simulate uses
    return s;
  }
  if (device.empty())
    command_line("--device", "").fail("a card runs on one catalog device: give --device (see `vlasim list devices`)");
  const LeaderboardModel m = choose_model(c, mc);
  compute_device(Catalog::load_dir(c.catalog), device, command_line("--device", device), c.catalog);
  Scenario s = one_device_scenario(m, device, c.catalog, c.cards);
  s.models[0].name = m.name;
  if (!c.profile.empty()) use_profiled_cost_model(s, c.profile);
  use_host_entry(s, true);  // the CPU figures simulate uses
  return s;
}

}  // namespace vlasim::cli
