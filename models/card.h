// What a model card and a run hold (models/builder.h reads cards and builds graphs from them):
// the run-time shape of one inference, DP-Cache's window, the parsed card.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/config.h"

namespace vlasim {

// Run-time shape of one inference. Zero fields (prompt: -1) take the card's defaults; other
// negative values, and values past the kMax* limits below, are errors. dtype is always taken
// from here (copy card.defaults.dtype in to use the card's), except for components whose card
// entry sets their own.
// DP-Cache (SYSTEMS.md system 3): in the stable middle of the denoising schedule, a
// flow-matching action expert reuses the deep blocks' work of the last full step instead of
// recomputing it. In a cached step, blocks [keep, depth - keep) do not run: the residual
// stream after block keep - 1 gets the change those blocks made at the last full step (their
// output minus their input, kept by that step), added back. Steps in [start, end) are cached
// except every interval-th from start, which run fully and refresh the kept change.
struct DpCache {
  int start = -1;    // first step of the window; < 0: off
  int end = 0;       // one past the window's last step
  int interval = 2;  // a full step every `interval` steps of the window
  int keep = 1;      // blocks that still run at each end of the expert in a cached step
  bool on() const { return start >= 0; }
  bool cached(int step) const { return on() && step >= start && step < end && (step - start) % interval != 0; }
  bool operator==(const DpCache&) const = default;
};

struct RunShape {
  int views = 0;        // camera views (card default when 0)
  int prompt = -1;      // prompt tokens (card default when -1)
  int chunk = 0;        // action chunk / horizon (card default when 0)
  int steps = 0;        // flow-matching / diffusion / decoding steps (card default when 0)
  int batch = 1;        // requests run together
  DType dtype = DType::BF16;
  DpCache dp_cache;     // off unless a scenario's model entry turns it on
  // Graph passes to apply (models/passes/passes.h), any order; unset: the card's default set.
  std::optional<std::vector<std::string>> passes;
};

// Largest run-shape values a card's defaults, a scenario's model entry or `vlasim graph` may
// ask for (the smallest are 1, prompt 0).
inline constexpr int kMaxViews = 64;
inline constexpr int kMaxPrompt = 1 << 20;
inline constexpr int kMaxChunk = 1 << 20;
inline constexpr int kMaxSteps = 100000;
inline constexpr int kMaxBatch = 4096;

// A parsed model card: the file's name, its components in execution order, and defaults.
struct ModelCard {
  std::string name;
  std::string file;
  std::string description;
  ConfigNode node;  // the whole card, kept for the component builders and for errors
  // defaults.passes is always set: the card's `passes:` or, without it, the builder passes
  // that apply to it (qkv_fuse, gateup_fuse, epilogue_fuse, and last_layer_skip where a
  // decoder has kv_only_last): the graph the builder made before passes were switchable.
  RunShape defaults;
};

}  // namespace vlasim
