// vlasim: the command-line front-end. Thin by design: every subcommand parses its options,
// calls the library, and turns errors into a message and a non-zero exit status.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "models/builder.h"
#include "reports/report.h"
#include "scenarios/scenario.h"
#include "scheduler/policy.h"
#include "sim/cost_model.h"
#include "sim/engine.h"
#include "sim/plan.h"

namespace fs = std::filesystem;
using namespace vlasim;

namespace {

struct Common {
  std::string catalog = default_catalog_dir();
  std::string cards = default_cards_dir();
};

// Draws a one-line progress bar on stderr when it is a terminal or when forced.
void progress_bar(double f) {
  int n = static_cast<int>(f * 40);
  std::fprintf(stderr, "\r[%-40s] %3d%%", std::string(static_cast<size_t>(n), '#').c_str(),
               static_cast<int>(f * 100));
  if (f >= 1) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

int run_simulate(const Common& c, const std::string& path, const std::string& out_dir,
                 long long seed, size_t trace_limit, bool quiet, bool progress) {
  Scenario s = load_scenario(path, c.catalog, c.cards);
  if (seed >= 0) s.seed = static_cast<uint64_t>(seed);
  auto cost = cost_models().make(s.cost_model.name, s.cost_model.params, s.cost_model.where);
  auto pipe = pipeline_policies().make(s.pipeline.name, s.pipeline.params, s.pipeline.where);
  // Memory is checked with each model's pipeline window (requests in flight together).
  std::vector<int> window;
  {
    Plan probe = make_plan(s, *cost, std::vector<int>(s.models.size(), 1));
    for (const auto& mp : probe.models) window.push_back(pipe->window(mp.pipeline_stages));
  }
  Plan plan = make_plan(s, *cost, window);
  SimOptions opt;
  opt.trace_limit = trace_limit;
  if (progress) opt.progress = progress_bar;
  SimResult r = simulate(s, plan, opt);
  Report rep = make_report(s, plan, r, "simulate");
  if (!quiet) std::cout << summary_text(rep);
  if (!out_dir.empty()) {
    fs::create_directories(out_dir);
    write_json(rep, out_dir + "/report.json");
    write_requests_csv(s, plan, r, out_dir + "/requests.csv");
    write_trace(s, plan, r, out_dir + "/trace.json");
    if (!quiet)
      std::cout << "\nwrote " << out_dir << "/report.json, requests.csv, trace.json "
                << "(open trace.json in ui.perfetto.dev or chrome://tracing)\n";
  }
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
  const std::vector<std::string> families = {"cost_models", "queue_policies", "pipeline_policies",
                                             "devices", "cards", "workloads"};
  bool all = what.empty() || what == "all";
  if (!all && std::find(families.begin(), families.end(), what) == families.end()) {
    std::cerr << "vlasim list: unknown family '" << what << "'; valid names are: " << join_names(families)
              << "\n";
    return 2;
  }
  if (all || what == "cost_models") list_registry(cost_models());
  if (all || what == "queue_policies") list_registry(queue_policies());
  if (all || what == "pipeline_policies") list_registry(pipeline_policies());
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
  if (all || what == "workloads") {
    std::cout << "workloads (arrival processes of a stream):\n"
              << "  periodic - one request every 1/rate_hz seconds, +- uniform jitter_ms\n"
              << "  poisson - exponential gaps with mean 1/rate_hz\n";
  }
  return 0;
}

int run_graph(const Common& c, const std::string& card_name, int views, int prompt, int chunk,
              int steps, int batch, const std::string& dtype, bool ops) {
  ConfigNode where = ConfigNode::load_string("card: " + card_name, "<command line>").required("card");
  ModelCard card = find_card(c.cards, card_name, where);
  RunShape shape = card.defaults;
  if (views > 0) shape.views = views;
  if (prompt >= 0) shape.prompt = prompt;
  if (chunk > 0) shape.chunk = chunk;
  if (steps > 0) shape.steps = steps;
  shape.batch = batch;
  if (!dtype.empty() && !parse_dtype(dtype, &shape.dtype)) {
    std::cerr << "vlasim graph: unknown dtype '" << dtype << "'; valid names are: fp32, bf16, fp16, int8\n";
    return 2;
  }
  OpGraph g = build_graph(card, shape);
  std::printf("%s: %zu ops, %.3f TFLOP, %.1f M parameters, prefix %lld tokens, suffix %lld tokens\n",
              card.name.c_str(), g.size(), g.flops() / 1e12, g.param_bytes() / dtype_bytes(shape.dtype) / 1e6,
              static_cast<long long>(g.prefix_tokens), static_cast<long long>(g.suffix_tokens));
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vlasim: simulate and run Vision-Language-Action inference across GPUs, CPUs and links"};
  app.require_subcommand(1);
  Common c;
  app.add_option("--catalog", c.catalog, "hardware catalog directory")->capture_default_str();
  app.add_option("--cards", c.cards, "model card directory")->capture_default_str();

  auto* sim = app.add_subcommand("simulate", "predict latency, throughput, memory and deadlines of a scenario");
  std::string scenario, out_dir;
  long long seed = -1;
  size_t trace_limit = 20000;
  bool quiet = false, progress = false;
  sim->add_option("scenario", scenario, "scenario YAML file")->required();
  sim->add_option("-o,--out", out_dir, "directory for report.json, requests.csv and trace.json");
  sim->add_option("--seed", seed, "override the scenario's seed");
  sim->add_option("--trace-limit", trace_limit, "segment executions kept in the trace")->capture_default_str();
  sim->add_flag("-q,--quiet", quiet, "print nothing but errors");
  sim->add_flag("--progress", progress, "show a progress bar on stderr");

  auto* list = app.add_subcommand("list", "list the registered parts and their parameters");
  std::string family;
  list->add_option("family", family,
                   "cost_models, queue_policies, pipeline_policies, devices, cards or workloads (default: all)");

  auto* graph = app.add_subcommand("graph", "summarise the operator graph a model card builds");
  std::string card, dtype;
  int views = 0, prompt = -1, chunk = 0, steps = 0, batch = 1;
  bool ops = false;
  graph->add_option("card", card, "model card name")->required();
  graph->add_option("--views", views, "camera views");
  graph->add_option("--prompt", prompt, "prompt tokens");
  graph->add_option("--chunk", chunk, "action chunk");
  graph->add_option("--steps", steps, "denoising / decoding steps");
  graph->add_option("--batch", batch, "batch size")->check(CLI::PositiveNumber);
  graph->add_option("--dtype", dtype, "fp32, bf16, fp16 or int8");
  graph->add_flag("--ops", ops, "list every operator");

  CLI11_PARSE(app, argc, argv);
  try {
    if (*sim) return run_simulate(c, scenario, out_dir, seed, trace_limit, quiet, progress);
    if (*list) return run_list(c, family);
    if (*graph) return run_graph(c, card, views, prompt, chunk, steps, batch, dtype, ops);
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
