// vlasim graph and vlasim passes: the operator graph a model card builds, and the speed-up
// table of its graph passes.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "reports/plot.h"
#include "executors/onednn_executor.h"
#include "models/passes/passes.h"
#include "reports/passes.h"

namespace vlasim::cli {
namespace {

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

// `vlasim passes`: the cumulative speed-up table of the graph passes (reports/passes.h).
int run_passes(const Common& c, ModelChoice mc, const std::string& device, bool measure, int reps,
               const std::string& dir, bool quiet, bool progress) {
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
  const PassTable t = make_pass_table(s, model, o, progress_for(quiet, progress));
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

// The graph command's options.
struct GraphArgs {
  std::string card, dtype, dp_cache;
  int views = 0, prompt = -1, chunk = 0, steps = 0, batch = 1;
  std::optional<std::vector<std::string>> passes;
  bool ops = false;
};

// The passes command's options.
struct PassesArgs {
  ModelChoice mc;
  std::string device, dir;
  bool measure = false, quiet = false, progress = false;
  int reps = 5;
};

}  // namespace

Command add_graph(CLI::App& app) {
  auto a = std::make_shared<GraphArgs>();
  CLI::App* graph = app.add_subcommand("graph", "summarise the operator graph a model card builds");
  graph->add_option("card", a->card, "model card name")->required();
  graph->add_option("--views", a->views, "camera views")->check(whole_number(1, kMaxViews));
  graph->add_option("--prompt", a->prompt, "prompt tokens")->check(whole_number(0, kMaxPrompt));
  graph->add_option("--chunk", a->chunk, "action chunk")->check(whole_number(1, kMaxChunk));
  graph->add_option("--steps", a->steps, "denoising / decoding steps")->check(whole_number(1, kMaxSteps));
  graph->add_option("--batch", a->batch, "batch size")->check(whole_number(1, kMaxBatch));
  graph->add_option("--dtype", a->dtype, "fp32, bf16, fp16 or int8");
  graph->add_option("--dp-cache", a->dp_cache,
                    "DP-Cache on the diffusion or flow action head: START:END[:INTERVAL[:KEEP]] (see `leaderboard --help`)");
  graph->add_option_function<std::vector<std::string>>(
           "--passes", [a](const std::vector<std::string>& v) { a->passes = v; },
           "graph passes to apply, comma-separated, or none (default: the card's; `vlasim list passes`)")
      ->delimiter(',');
  graph->add_flag("--ops", a->ops, "list every operator");
  return {graph, [a](const Common& c) {
            return run_graph(c, a->card, a->views, a->prompt, a->chunk, a->steps, a->batch, a->dtype, a->dp_cache,
                             a->passes, a->ops);
          }};
}

Command add_passes(CLI::App& app) {
  auto a = std::make_shared<PassesArgs>();
  CLI::App* pss = app.add_subcommand("passes",
                                     "speed-up table of the graph passes: naive, graph capture (GPUs), then each pass "
                                     "added; kernels, FLOPs, bytes and predicted time per step (and measured with "
                                     "--measure)");
  add_model_options(pss, a->mc);
  pss->add_option("--device", a->device, "catalog entry to run a card (or a scenario's model) on alone");
  pss->add_flag("--measure", a->measure, "also run each step's graph on this CPU (oneDNN) and time it");
  pss->add_option("--reps", a->reps, "timed runs per step with --measure (the median is reported)")
      ->capture_default_str()->check(whole_number(1, 1000));
  pss->add_option("-o,--out", a->dir, "directory for passes.md and passes.csv");
  pss->add_flag("-q,--quiet", a->quiet, "print nothing but errors");
  add_progress_flag(pss, a->progress);
  return {pss, [a](const Common& c) {
            return run_passes(c, a->mc, a->device, a->measure, a->reps, a->dir, a->quiet, a->progress);
          }};
}

}  // namespace vlasim::cli
