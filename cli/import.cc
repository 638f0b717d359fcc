// vlasim import: public measured GPU kernel times (Vidur mlp.csv, ApxInf tactics JSON) as a
// vlasim device profile for a catalog GPU (sim/measured/gpu_import.h); and vlasim gpu-eval: the
// leave-one-GPU-out evaluation of the GPU cost models on the vendored data
// (sim/costs/gpu_kernel_model.h, data/gpu_profiles/README.md).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "reports/plot.h"
#include "sim/measured/gpu_import.h"
#include "sim/measured/gpu_network.h"
#include "sim/costs/gpu_kernel_model.h"
#include "sim/costs/stack_eval.h"
#include "sim/measured/torch_trace.h"

namespace vlasim::cli {
namespace {

const DeviceSpec& gpu_entry(const Catalog& cat, const std::string& name) {
  const DeviceSpec& d = cat.get(name, command_line("--device", name));
  if (d.type != DeviceType::Gpu)
    throw ConfigError("<command line>", 0, 0, "--device", "'" + name + "' is a " + to_string(d.type) +
                                                                " in the catalog, not a GPU");
  return d;
}

struct ImportArgs {
  std::string format, path, device, out;
  bool quiet = false;
  // trace only: the card and its shape, the inference range's name
  std::string card, dtype, inference;
  int views = 0, prompt = -1, chunk = 0, steps = 0, batch = 1;
  std::optional<std::vector<std::string>> passes;
  // vidur-network only: catalog links to check against the measured fits (LINK=ENTRY), and the
  // size above which the held-out check predicts from a fit of the smaller sizes
  std::vector<std::string> compare;
  double holdout_mib = 16;
  std::set<std::string> given;  // the options given on the command line ("--card", ...)
};

// Refuses an option given for a format it does not apply to (each is named, never ignored;
// vidur-network refuses --device itself, saying why).
void check_options_apply(const ImportArgs& a) {
  const std::vector<std::string> trace = {"--card", "--views", "--prompt", "--chunk", "--steps", "--batch",
                                          "--dtype", "--passes", "--inference"};
  std::vector<std::string> refused;
  if (a.format != "vidur-network") refused.insert(refused.end(), {"--compare", "--holdout-mib"});
  if (a.format != "trace") refused.insert(refused.end(), trace.begin(), trace.end());
  for (const std::string& o : refused)
    if (a.given.count(o))
      throw ConfigError("<command line>", 0, 0, o, o + " does not apply to import " + a.format);
}

// Refuses an output file that is the input (or inside an input folder): it would be overwritten.
void check_not_input(const ImportArgs& a) {
  std::error_code ec;
  const fs::path out = fs::weakly_canonical(a.out, ec), in = fs::weakly_canonical(a.path, ec);
  if (out.empty() || in.empty()) return;
  if (out == in || (fs::is_directory(in, ec) && out.string().rfind(in.string() + "/", 0) == 0 &&
                    out.filename() == "mlp.csv"))
    throw ConfigError("<command line>", 0, 0, "--out", "'" + a.out + "' is the input " + a.path + "; give another file");
}

int run_import_trace(const Common& c, const ImportArgs& a);
int run_import_network(const Common& c, const ImportArgs& a);

int run_import(const Common& c, const ImportArgs& a) {
  if (a.format != "vidur-network" && !a.compare.empty())
    throw ConfigError("<command line>", 0, 0, "--compare", "--compare is for vidur-network");
  check_options_apply(a);
  if (!a.out.empty()) check_not_input(a);
  if (a.format == "trace") return run_import_trace(c, a);
  if (a.format == "vidur-network") return run_import_network(c, a);
  if (a.device.empty()) throw ConfigError("<command line>", 0, 0, "--device", "--device is required: the catalog GPU the data was measured on");
  if (a.out.empty()) throw ConfigError("<command line>", 0, 0, "--out", "-o/--out is required: the profile to write");
  const Catalog cat = Catalog::load_dir(c.catalog);
  const DeviceSpec& d = gpu_entry(cat, a.device);
  check_output_file("--out", a.out);
  std::string measured_on;
  std::vector<KernelSample> s = a.format == "vidur" ? import_vidur(a.path) : import_apxinf(a.path, &measured_on);
  if (!measured_on.empty())
    if (const std::string why = device_name_mismatch(measured_on, d); !why.empty())
      throw ConfigError(a.path, 0, 0, "device_name", why + "; give the --device it ran on");
  const DeviceProfile p = samples_to_profile(s, d, a.format, a.format + " " + a.path);
  save_profile(p, a.out);
  if (!a.quiet)
    std::cout << "imported " << s.size() << " ops (" << a.format << ", " << a.path << ") for " << d.name << " ("
              << d.sms << " SMs) into " << a.out << "\n";
  return 0;
}


// vlasim import vidur-network: Vidur's send_recv / all_reduce profiles fitted per link kind and
// GPU count (sim/measured/gpu_network.h) into a network profile a scenario's link can name; prints each
// fit with its error on the rows fitted and, held out, its error above --holdout-mib when fitted
// on the smaller sizes only; --compare LINK=ENTRY checks a catalog link against a fit's rows.
int run_import_network(const Common& c, const ImportArgs& a) {
  if (a.out.empty()) throw ConfigError("<command line>", 0, 0, "--out", "-o/--out is required: the network profile (YAML) to write");
  if (!a.device.empty())
    throw ConfigError("<command line>", 0, 0, "--device", "vidur-network takes no --device: each fit is named by its folder (h100_dgx)");
  check_output_file("--out", a.out);
  const Catalog cat = Catalog::load_dir(c.catalog);
  std::vector<std::pair<const DeviceSpec*, std::string>> checks;
  for (const std::string& cmp : a.compare) {
    const size_t eq = cmp.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == cmp.size())
      throw ConfigError("<command line>", 0, 0, "--compare", "'" + cmp + "': expected LINK=ENTRY, e.g. nvlink4=h100_dgx.send_recv.intra_node");
    const DeviceSpec& d = cat.get(cmp.substr(0, eq), command_line("--compare", cmp));
    if (d.type != DeviceType::Link)
      throw ConfigError("<command line>", 0, 0, "--compare", "'" + d.name + "' is a " + to_string(d.type) + ", not a link");
    checks.push_back({&d, cmp.substr(eq + 1)});
  }
  const std::vector<NetworkGroup> groups = import_vidur_network(a.path);
  std::vector<NetworkFit> fits;
  for (const NetworkGroup& g : groups) fits.push_back(fit_network(g));
  std::vector<size_t> order(fits.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return fits[x].name < fits[y].name; });
  std::vector<NetworkFit> sorted;
  for (size_t i : order) sorted.push_back(fits[i]);
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].name == sorted[i - 1].name)
      throw ConfigError(groups[order[i]].file, groups[order[i]].points.front().line, 0, "",
                        sorted[i].name + " is measured twice (also " + sorted[i - 1].source + ")");
  // Every --compare entry found and a send_recv before anything is written (no output on refusal).
  std::vector<const NetworkGroup*> compared;
  for (const auto& [link, entry] : checks) {
    const NetworkGroup* g = nullptr;
    for (size_t i = 0; i < groups.size(); ++i)
      if (fits[i].name == entry) g = &groups[i];
    if (!g) {
      std::vector<std::string> names;
      for (const NetworkFit& f : sorted) names.push_back(f.name);
      throw ConfigError("<command line>", 0, 0, "--compare", "no measured entry '" + entry + "'; valid names are: " + join_names(names));
    }
    if (g->collective != "send_recv")
      throw ConfigError("<command line>", 0, 0, "--compare", "'" + entry + "' is a collective; a link compares with a send_recv entry");
    compared.push_back(g);
  }
  write_file(a.out, network_profile_yaml(sorted,
      "vlasim network profile, written by `vlasim import vidur-network` from Vidur's measured NCCL kernel times\n"
      "(fp16 buffers; median of 11 back-to-back calls' kernel durations on rank 0; sim/measured/gpu_network.h).\n"
      "seconds = latency_us + bytes x f / bandwidth: send_recv f = 1 (gbs: per direction); all_reduce\n"
      "f = 2 (gpus - 1) / gpus (bus_gbs: bus bandwidth). error_*: |fit / measured - 1| over the rows fitted.\n"
      "A scenario link uses a send_recv entry: {catalog: ..., between: [a, b], profile: THIS_FILE, entry: NAME}."));
  if (a.quiet) return 0;
  std::printf("imported %zu configurations (%s) into %s\n", sorted.size(), a.path.c_str(), a.out.c_str());
  const double cut = a.holdout_mib * 1024 * 1024;
  auto med = [](std::vector<double> e) {
    std::sort(e.begin(), e.end());
    if (e.empty()) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.1f%%", 100 * e[e.size() / 2]);
    return std::string(b);
  };
  std::printf("| entry | rows | latency us | GB/s | median error | < 1 MiB | 1-16 MiB | >= 16 MiB | p90 error | "
              "held out: rows > %g MiB | their median error |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
              a.holdout_mib);
  for (size_t i : order) {
    const NetworkFit& f = fits[i];
    const NetworkGroup& g = groups[i];
    std::vector<double> band[3];
    for (const NetworkPoint& p : g.points)
      band[p.bytes < (1 << 20) ? 0 : p.bytes < (16 << 20) ? 1 : 2].push_back(
          std::abs(collective_seconds(f, p.bytes) / p.seconds - 1));
    std::vector<double> held;
    try {
      held = fit_errors(fit_network(g, cut), g, cut);
    } catch (const ConfigError&) {  // fewer than two sizes up to the cut: no held-out figure
    }
    std::printf("| %s | %d | %.2f | %.1f%s | %.1f%% | %s | %s | %s | %.1f%% | %zu | %s |\n", f.name.c_str(), f.points,
                f.latency_s * 1e6, f.bytes_per_s / 1e9, f.collective == "send_recv" ? "" : " bus", 100 * f.median_error,
                med(band[0]).c_str(), med(band[1]).c_str(), med(band[2]).c_str(), 100 * f.p90_error, held.size(),
                med(held).c_str());
  }
  for (size_t k = 0; k < checks.size(); ++k) {
    const DeviceSpec* link = checks[k].first;
    const std::string& entry = checks[k].second;
    const NetworkGroup* g = compared[k];
    std::printf("\ncatalog %s (%.2f us + bytes / %.1f GB/s) against %s (%zu rows): catalog / measured - 1\n",
                link->name.c_str(), link->latency_s * 1e6, link->h2d_bw / 1e9, entry.c_str(), g->points.size());
    std::printf("| bytes | rows | median | min | max |\n|---|---|---|---|---|\n");
    const double bands[] = {0, 1 << 20, 16 << 20, 1e300};
    const char* names[] = {"< 1 MiB", "1-16 MiB", ">= 16 MiB"};
    for (int b = 0; b < 3; ++b) {
      std::vector<double> e;
      for (const NetworkPoint& p : g->points)
        if (p.bytes >= bands[b] && p.bytes < bands[b + 1])
          e.push_back((link->latency_s + p.bytes / link->h2d_bw) / p.seconds - 1);
      if (e.empty()) continue;
      std::sort(e.begin(), e.end());
      std::printf("| %s | %zu | %+.1f%% | %+.1f%% | %+.1f%% |\n", names[b], e.size(), 100 * e[e.size() / 2], 100 * e.front(),
                  100 * e.back());
    }
  }
  return 0;
}

// Stage figures of a trace: per stage the mean over inferences of its first start to last end.
void print_stages(const TorchTrace& t, const std::vector<TraceInference>& inf, const std::string& name) {
  std::printf("%zu inferences (record_function '%s'): mean %.3f ms\n", inf.size(), name.c_str(), [&] {
    double s = 0;
    for (const TraceInference& i : inf) s += i.end_us - i.start_us;
    return s / double(inf.size()) / 1e3;
  }());
  for (Stage st : {Stage::Vision, Stage::Prefix, Stage::Action, Stage::Decode, Stage::Head}) {
    double s = 0;
    size_t n = 0;
    for (const TraceInference& i : inf)
      if (i.stage_start_us[int(st)] >= 0) s += i.stage_end_us[int(st)] - i.stage_start_us[int(st)], ++n;
    if (n) std::printf("  %-7s %zu ranges, mean %.3f ms\n", to_string(st), n, s / double(n) / 1e3);
  }
  (void)t;
}

int run_import_trace(const Common& c, const ImportArgs& a) {
  const Catalog cat = Catalog::load_dir(c.catalog);
  const DeviceSpec* d = a.device.empty() ? nullptr : &gpu_entry(cat, a.device);
  if (a.card.empty()) throw ConfigError("<command line>", 0, 0, "--card", "import trace needs --card CARD (the model the trace ran)");
  if (!a.out.empty()) check_output_file("--out", a.out);
  ConfigNode where(YAML::Node(a.card), std::make_shared<const std::string>("<command line>"), "--card");
  const ModelCard card = find_card(c.cards, a.card, where);
  RunShape shape = card.defaults;
  if (a.views > 0) shape.views = a.views;
  if (a.prompt >= 0) shape.prompt = a.prompt;
  if (a.chunk > 0) shape.chunk = a.chunk;
  if (a.steps > 0) shape.steps = a.steps;
  shape.batch = a.batch;
  if (!a.dtype.empty() && !parse_dtype(a.dtype, &shape.dtype))
    throw ConfigError("<command line>", 0, 0, "--dtype", "unknown dtype '" + a.dtype + "'; valid names are: fp32, bf16, fp16, int8");
  if (a.passes) shape.passes = passes_option(*a.passes, card, shape);
  OpGraph g;
  try {
    g = build_graph(card, shape);
  } catch (const GraphTooLarge& e) {
    throw ConfigError("<command line>", 0, 0, "--card", card.name + ": " + e.what());
  }
  const TorchTrace t = read_torch_trace(a.path);
  if (d)
    if (const std::string w = trace_device_mismatch(t, d->name, d->description); !w.empty())
      std::cerr << "warning: " << w << "\n";
  std::printf("%s: %s trace, %zu events: %zu ops on %zu threads, %zu record_function ranges\n", a.path.c_str(),
              t.kineto ? "Kineto" : "legacy (no Kineto)", t.events, t.ops.size(), t.threads.size(), t.ranges.size());
  if (t.kernels + t.copies + t.sets > 0)
    std::printf("  device: %s; %zu kernels, %zu copies, %zu sets on %zu streams, %.3f ms; %.1f%% of it launched by an op\n",
                t.device_name.empty() ? "not named" : t.device_name.c_str(), t.kernels, t.copies, t.sets,
                t.streams.size(), t.device_us() / 1e3, t.device_us() > 0 ? 100 * t.launched_us / t.device_us() : 0.0);
  if (t.inflight > 0)
    std::printf("  launched before the trace: %zu device events in flight when the profiler started, %.3f ms "
                "(%.1f%% of the device time; tied to no op)\n",
                t.inflight, t.inflight_us / 1e3, t.device_us() > 0 ? 100 * t.inflight_us / t.device_us() : 0.0);
  std::vector<TraceInference> inf;
  std::string inf_name;
  bool have_stages = true;
  try {
    inf = trace_inferences(t, a.inference, &inf_name);
  } catch (const ConfigError& e) {
    if (!a.inference.empty()) throw;
    have_stages = false;
    std::printf("  no inferences: %s\n", e.message().c_str());
  }
  if (have_stages) print_stages(t, inf, inf_name);
  if (!t.shapes) {
    if (have_stages)
      std::printf("no per-op figures: the trace has no Input Dims (record with torch.profiler, record_shapes=True); "
                  "stage-level figures only (vlasim compare SCENARIO --trace %s); no profile written\n", a.path.c_str());
    else
      std::printf("no per-op figures: the trace has no Input Dims (record with torch.profiler, record_shapes=True), "
                  "and no stage figures: no record_function range named after a stage; no profile written\n");
    return 0;
  }
  const TraceMatch m = match_trace(t, g, inf);
  std::printf("matched %zu of %zu %s ops (%s, %s); %.1f%% of the %s time%s (%.3f of %.3f ms)\n",
              m.graph_ops_matched, m.graph_ops, card.name.c_str(), to_string(shape.dtype),
              shape.passes && shape.passes->empty() ? "no passes" : "card's passes",
              m.total_s > 0 ? 100 * m.matched_s / m.total_s : 0.0, m.device ? "device" : "top-level op (CPU)",
              inf.empty() ? "" : " inside inferences",
              m.matched_s * 1e3, m.total_s * 1e3);
  for (const auto& [k, f] : m.folded)
    std::printf("  folded (the graph fuses it into the GEMM): %-50s x%d %.3f ms\n", k.c_str(), f.count, f.seconds * 1e3);
  int shown = 0;
  std::vector<std::pair<double, std::string>> un;
  for (const auto& [k, u] : m.unmatched) un.push_back({u.seconds, k});
  std::sort(un.rbegin(), un.rend());
  for (const auto& [sec, k] : un) {
    if (shown++ == 8) break;
    std::printf("  unmatched trace op %-50s x%d %.3f ms\n", k.c_str(), m.unmatched.at(k).count, sec * 1e3);
  }
  shown = 0;
  for (const auto& [k, n] : m.unseen) {
    if (shown++ == 8) break;
    std::printf("  never seen in the trace: %-44s %d ops\n", k.c_str(), n);
  }
  for (const std::string& note : m.notes) std::printf("  note: %s\n", note.c_str());
  if (const std::string w = trace_match_warning(t, m, card.name); !w.empty()) std::cerr << "warning: " << w << "\n";
  if (!m.device) {
    std::printf("no kernels: the op times above are CPU times; a GPU profile needs a trace of a GPU run "
                "(ProfilerActivity.CUDA); no profile written\n");
    return 0;
  }
  if (!d || a.out.empty())
    throw ConfigError("<command line>", 0, 0, d ? "--out" : "--device",
                      "the trace has kernels: give --device (the catalog GPU it ran on) and -o (the profile to write)");
  std::vector<KernelSample> samples;
  std::set<std::string> seen;
  for (size_t i = 0; i < g.size(); ++i) {
    if (m.op_seconds[i] <= 0) continue;
    const Op& o = g.op(int(i));
    if (!seen.insert(op_signature(o)).second) continue;
    KernelSample s;
    s.op = o;
    s.label = graph_op_key(o);
    s.seconds = m.op_seconds[i];
    s.reps = m.op_occurrences[i];
    s.source = "trace:" + a.path + ":" + graph_op_key(o);
    samples.push_back(std::move(s));
  }
  if (samples.empty()) {
    std::printf("no graph op matched: no profile written\n");
    return 0;
  }
  const DeviceProfile p = samples_to_profile(samples, *d, "torch-trace", t.device_name.empty() ? a.path : t.device_name);
  save_profile(p, a.out);
  if (!a.quiet)
    std::cout << "imported " << samples.size() << " op shapes (trace " << a.path << ") for " << d->name << " (" << d->sms
              << " SMs) into " << a.out << "\n";
  return 0;
}

// The vendored data sets: folder under the data root, catalog GPU, description.
struct DataSet {
  std::string format, path, gpu, what;
  bool event_timed = false;  // CUDA events around each launch, not kernel (CUPTI) time
};
const std::vector<DataSet> kDataSets = {
    {"vidur", "vidur/data/profiling/compute/h100", "h100-sxm", "Vidur fp16, CUPTI kernel time, warm L2"},
    {"vidur", "vidur/data/profiling/compute/a100", "a100-sxm-80gb", "Vidur fp16, CUPTI kernel time, warm L2"},
    {"vidur", "vidur/data/profiling/compute/a40", "a40", "Vidur fp16, CUPTI kernel time, warm L2"},
    {"apxinf", "apxinf/configs/pi05/orin_sm87_bf16_v2_v3_h10_tactics.json", "jetson-agx-orin-64gb",
     "ApxInf pi0.5 bf16 GEMMs, CUDA events, cold L2", true},
    {"apxinf", "apxinf/configs/pi05/thor_sm110_bf16_v2_v3_h10_tactics.json", "jetson-agx-thor",
     "ApxInf pi0.5 bf16 GEMMs, CUDA events, cold L2", true},
    {"apxinf", "apxinf/configs/pi05/rtx4090_sm89_bf16_v2_v3_h10_tactics.json", "rtx4090",
     "ApxInf pi0.5 bf16 GEMMs, CUDA events, cold L2", true},
};

struct EvalArgs {
  std::string data = "data/gpu_profiles", out = "reports", fit_out, traces, stack_out;
  bool quiet = false;
};

// gpu-eval --traces DIR: the software stack model on real traces (sim/costs/stack_eval.h).
int run_trace_eval(const Common& c, const EvalArgs& a, const Catalog& cat, const std::vector<GpuSamples>& data) {
  if (!a.stack_out.empty()) check_output_file("--stack-out", a.stack_out);
  const TraceManifest m = load_trace_manifest(a.traces, c.cards, cat);
  const StackEvaluation e = evaluate_stacks(m, data, cat, [&](const std::string& s) {
    if (!a.quiet) std::cerr << "gpu-eval: " << s << "\n";
  });
  fs::create_directories(a.out);
  const std::string cmd = "vlasim gpu-eval --traces " + a.traces;
  write_file(a.out + "/gpu_stack.md", stack_evaluation_markdown(e, cmd));
  write_file(a.out + "/gpu_stack.csv", stack_evaluation_csv(e));
  if (!a.stack_out.empty())
    write_file(a.stack_out, stack_params_csv(e.all_fit,
                                             "Software stack model parameters (sim/costs/stack_model.h), fitted on every trace of\n"
                                             "# data/gpu_traces/ by `vlasim gpu-eval --traces data/gpu_traces --stack-out`. Generated: rebuild\n"
                                             "# with scripts/gpu_profiles.sh, do not edit. Read by the `stack` registry's entries."));
  if (!a.quiet)
    std::printf("wrote %s/gpu_stack.md, gpu_stack.csv: wall time held out by GPU, median |error| %.1f%%, worst %.1f%%\n",
                a.out.c_str(), 100 * e.median_wall, 100 * e.worst_wall);
  return 0;
}

int run_gpu_eval(const Common& c, const EvalArgs& a) {
  const Catalog cat = Catalog::load_dir(c.catalog);
  check_output_dir("--out", a.out);
  if (!a.fit_out.empty()) check_output_file("--fit-out", a.fit_out);
  if (!a.stack_out.empty() && a.traces.empty())
    throw ConfigError("<command line>", 0, 0, "--stack-out", "--stack-out writes the stack fitted on traces: give --traces DIR");
  std::vector<GpuSamples> data;
  for (const DataSet& ds : kDataSets) {
    gpu_entry(cat, ds.gpu);
    const std::string p = a.data + "/" + ds.path;
    data.push_back({ds.gpu, ds.what, ds.format == "vidur" ? import_vidur(p) : import_apxinf(p), ds.event_timed});
  }
  if (!a.traces.empty()) {
    if (!a.fit_out.empty())
      throw ConfigError("<command line>", 0, 0, "--fit-out",
                        "--fit-out writes the kernel fit of a plain gpu-eval; with --traces, give --stack-out");
    return run_trace_eval(c, a, cat, data);
  }
  const GpuEvaluation e = evaluate_gpus(data, cat);
  fs::create_directories(a.out);
  write_file(a.out + "/gpu_cost_model.md", gpu_evaluation_markdown(e, data));
  write_file(a.out + "/gpu_cost_model.csv", gpu_evaluation_csv(e));
  if (!a.fit_out.empty())
    write_file(a.fit_out,
               kernel_params_csv(e.all_fit,
                                 "Kernel GPU op model parameters (sim/costs/gpu_kernel_model.h), fitted on every GPU vendored in\n"
                                 "data/gpu_profiles/ by `vlasim gpu-eval --fit-out`. Generated: rebuild with\n"
                                 "scripts/gpu_profiles.sh, do not edit. Read by the `kernel` cost model."));
  if (!a.quiet) std::cout << "wrote " << a.out << "/gpu_cost_model.md, gpu_cost_model.csv\n";
  return 0;
}

}  // namespace

Command add_import(CLI::App& app) {
  auto a = std::make_shared<ImportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "import",
      "public measured GPU kernel times as a device profile: 'vidur' (a Vidur mlp.csv, or a folder of them) or "
      "'apxinf' (an ApxInf tactics JSON), for a catalog GPU; or 'trace' (a PyTorch profiler trace, .json or .json.gz, "
      "matched to the graph of --card); or 'vidur-network' (Vidur send_recv.csv / all_reduce.csv, a file or a folder): "
      "a latency + bandwidth per link kind and GPU count, as a network profile a scenario's link can name");
  cmd->add_option("format", a->format, "vidur, apxinf, trace or vidur-network")
      ->required()
      ->check(CLI::IsMember({"vidur", "apxinf", "trace", "vidur-network"}));
  cmd->add_option("path", a->path,
                  "file (or, for vidur, a folder searched for mlp.csv; for vidur-network, for send_recv.csv and "
                  "all_reduce.csv)")
      ->required();
  cmd->add_option("--device", a->device,
                  "catalog GPU the data was measured on (e.g. h100-sxm); for a trace, needed only to write a GPU "
                  "profile");
  cmd->add_option("-o,--out", a->out, "profile JSON to write (a trace: when it has kernels and shapes)");
  cmd->add_flag("-q,--quiet", a->quiet, "no summary line");
  cmd->add_option("--compare", a->compare,
                  "vidur-network: check catalog link LINK against the measured send_recv rows of ENTRY "
                  "(LINK=ENTRY, repeatable)");
  cmd->add_option("--holdout-mib", a->holdout_mib,
                  "vidur-network: the held-out check fits sizes up to this many MiB and predicts the larger ones")
      ->check(number_in(0.001, 1e6, false));
  cmd->add_option("--card", a->card, "trace: model card the traced model follows");
  cmd->add_option("--views", a->views, "trace: camera views")->check(whole_number(1, kMaxViews));
  cmd->add_option("--prompt", a->prompt, "trace: prompt tokens")->check(whole_number(0, kMaxPrompt));
  cmd->add_option("--chunk", a->chunk, "trace: action chunk")->check(whole_number(1, kMaxChunk));
  cmd->add_option("--steps", a->steps, "trace: denoising / decoding steps")->check(whole_number(1, kMaxSteps));
  cmd->add_option("--batch", a->batch, "trace: batch size")->check(whole_number(1, kMaxBatch));
  cmd->add_option("--dtype", a->dtype, "trace: fp32, bf16, fp16 or int8");
  cmd->add_option_function<std::vector<std::string>>(
         "--passes", [a](const std::vector<std::string>& v) { a->passes = v; },
         "trace: graph passes, comma-separated, or none (default: the card's)")
      ->delimiter(',');
  cmd->add_option("--inference", a->inference,
                  "trace: name of the record_function range around each inference (default: the most frequent range "
                  "holding a stage range)");
  return {cmd, [a, cmd](const Common& c) {
            for (const CLI::Option* o : cmd->get_options())
              if (o->count() > 0 && !o->get_lnames().empty()) a->given.insert("--" + o->get_lnames().front());
            return run_import(c, *a);
          }};
}

Command add_gpu_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gpu-eval",
      "leave-one-GPU-out evaluation of the GPU cost models (roofline, shaped, fitted kernel model) on the "
      "vendored measured kernel times; writes gpu_cost_model.md and .csv");
  cmd->add_option("data", a->data, "vendored data folder (default: data/gpu_profiles)");
  cmd->add_option("-o,--out", a->out, "folder for gpu_cost_model.md and .csv (default: reports)");
  cmd->add_option("--fit-out", a->fit_out,
                  "also write the kernel model fitted on every GPU, as the kernel cost model reads it");
  cmd->add_option("--traces", a->traces,
                  "instead: evaluate the software stack model on the Kineto traces DIR/traces.yaml lists, leaving "
                  "each trace's GPU out (writes gpu_stack.md and .csv; e.g. data/gpu_traces)");
  cmd->add_option("--stack-out", a->stack_out, "with --traces: also write the stack fitted on every trace");
  cmd->add_flag("-q,--quiet", a->quiet, "no summary line");
  return {cmd, [a](const Common& c) { return run_gpu_eval(c, *a); }};
}

}  // namespace vlasim::cli
