// Model cards (YAML files under models/cards/) and the builder that turns a card plus a
// run-time shape into an operator graph.
//
// Card schema (every value cites its upstream source in `source:` or a comment):
//   name: pi0                  # must equal the file name without .yaml
//   description: ...           # required; source:, notes: optional text
//   defaults: {views, prompt, chunk, steps, batch, dtype}   # required map; counts >= 1
//   max_views / max_prompt / max_chunk: limits a RunShape may not exceed
//   passes: [qkv_fuse, ...]    # graph passes applied by default (models/passes/passes.h);
//                              # without it: the builder passes that apply to the card
//   components:                # executed in order; each has name, type, optional stage,
//     - {name: vision, type: vit, ...}   # source, notes, and the keys of its type
// Every component may also have:
//   dtype: fp16               # its ops run at this dtype whatever the run's (e.g. an autocast
//                             # backbone beside an fp32 LLM); casts between them are not costed
//   weights_from: llm         # uses that earlier component's parameters (same type and the
//                             # same values for every key but inputs/prefix/decoder): counted
//                             # once in memory, read again by each pass (LoRA passes of one LLM)
// Component types (card_component_types() lists them): vit, encoder, projector, decoder,
// expert, dit, ar_decode, qtformer, head, resnet, unet1d. A component reads the previous
// component's output unless it lists `inputs:`; expert/ar_decode name their decoder
// (`prefix:` / `decoder:`).
//
// Graph conventions:
// - Ops are named component[.s<step>][.b<block>].<leaf>; weight ids drop the step, so an
//   action expert's (or a decode step's) parameters are counted once.
// - A layer's K/V cache is complete after its RoPE op (which rotates Q and K in place) or,
//   without RoPE, after its QKV/KV GEMM; that op has kv_bytes = the layer's K+V bytes and
//   kv_cache = true when a later stage (or decode step) reads it. CrossAttention ops point
//   at it with kv_source and have an edge from it carrying the cache bytes.
// - Embedding lookups have weight_bytes = the whole table (it must be resident) but
//   bytes_read = only the gathered rows.
// - Ops that run once before a denoising loop (GR00T's state encoder) are in step 0.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/card.h"
#include "models/graph.h"
#include "scenarios/config/config.h"

namespace vlasim {

// Loads and validates a card file (including a build at its defaults, which checks widths and
// depths across components). Throws ConfigError (file, line, key) on a bad card.
ModelCard load_card(const std::string& path);
// The same checks on a card already read: `text` is the file's contents, `path` its name (whose
// stem the card's name must match). For tests and fuzzing.
ModelCard load_card_text(const std::string& text, const std::string& path);
ModelCard parse_card(const ConfigNode& document, const std::string& path);
// Finds `name` in `dir` (dir/name.yaml). `name` is a card name, optionally under subfolders
// of `dir` ("sub/name"); an absolute path, "..", "." or an empty part is refused, so a card
// never comes from outside `dir`. Throws ConfigError at `where` listing the cards in `dir` if
// the name is refused or there is no such card.
ModelCard find_card(const std::string& dir, const std::string& name, const ConfigNode& where);
// Names of the cards in `dir`, sorted.
std::vector<std::string> card_names(const std::string& dir);

// Builds the operator graph of one inference. Throws ConfigError for an impossible shape
// (e.g. more views than the card allows, a negative prompt); the error's key is the RunShape
// field and its line the card's matching limit (or defaults).
OpGraph build_graph(const ModelCard& card, const RunShape& shape);

// Why `dc` cannot apply to `card` run at `steps` steps (why empty when it can): a window outside
// the steps or caching no step, an interval below 2, a negative keep, no flow-matching expert
// (component type expert) in the card, or a keep that leaves an expert no block to reuse.
// `field` names the DpCache field at fault ("start", "end", "interval", "keep"; "" for the
// whole). The scenario reader, build_graph and the command line all check with it.
struct DpCacheProblem {
  std::string field, why;
};
DpCacheProblem dp_cache_problem(const ModelCard& card, const DpCache& dc, int steps);

// Why the passes `names` cannot all apply to `card` at `shape` (why empty when they can): a
// name that is no pass (listing the valid ones), or a pass with no site in this card's graph
// (e.g. time_bias_fold on a card without a concatenated time embedding). `index` is the
// offending entry of names (-1: none). The scenario reader, build_graph and the command line
// all check with it.
struct PassesProblem {
  int index = -1;
  std::string why;
};
PassesProblem passes_problem(const ModelCard& card, const std::vector<std::string>& names,
                             const RunShape& shape);

// Component types a card may use, as (type, one-line description), in registry order.
std::vector<std::pair<std::string, std::string>> card_component_types();

// Directory holding the shipped cards: VLASIM_CARDS, else an installed vlasim's share/vlasim/cards, else the source tree's (scenarios/config/data_dir.h).
std::string default_cards_dir();

}  // namespace vlasim
