// Graph passes (SYSTEMS.md system 4, "equivalent-graph rewrites"): named, listable rewrites
// that make an operator graph cheaper while computing the same function. A run shape (or a
// card's `passes:`, or a scenario model's) names the passes to apply; what the builder emitted
// before passes existed is each card's default set, so graphs without `passes:` are unchanged.
//
// Two kinds, both listed by graph_passes():
// - builder passes (qkv_fuse, gateup_fuse, epilogue_fuse, last_layer_skip) choose which form
//   the builder emits: without them it writes the unfused graph (separate Q, K, V GEMMs
//   gathered into one Q|K|V buffer; separate gate and up GEMMs and a multiply; bias add,
//   activation and residual add as ops after a GEMM; a full last prefix layer);
// - rewrite passes (rmsnorm_fold, rope_fold, time_bias_fold) rewrite the built OpGraph, in
//   registry order, after the builder.
// A pass that changes the parameters records where they come from (Op::param, the norm's
// scale_folded, the GEMM's rope epilogue), so the executors run the rewritten graph on the
// original model's synthetic weights, transformed, and its outputs match the unrewritten
// graph's within the dtype's rounding.
#pragma once

#include <string>
#include <vector>

#include "models/graph.h"

namespace vlasim {

struct GraphPass {
  const char* name;
  const char* description;  // one line
  bool builder;             // applied by the builder, else a rewrite of the built graph
  // A rewrite pass: rewrites `g` in place and returns how many sites it rewrote (0: the
  // pass does not apply to this graph). Null for builder passes.
  int (*rewrite)(OpGraph& g);
  const char* not_applicable;  // why, when a graph has no site for it
};

// Every pass, in the order they apply (builder passes first).
const std::vector<GraphPass>& graph_passes();
// The pass called `name`, or null.
const GraphPass* find_pass(const std::string& name);
std::vector<std::string> pass_names();

// The passes `names` (validated names, any order) sorted into registry order without
// duplicates.
std::vector<std::string> ordered_passes(const std::vector<std::string>& names);

// Rewrites. Each promises that the executors compute the same outputs (within rounding) on
// the rewritten graph as on `g`, and returns the number of sites rewritten.
// rmsnorm_fold: an RMSNorm with a scale whose every consumer is a Linear GEMM reading only it
// loses its scale; the GEMMs' weight rows are multiplied by it (Op::param).
int fold_rmsnorm(OpGraph& g);
// rope_fold: a RoPE op whose only input is a plain Linear GEMM becomes that GEMM's epilogue
// (Epilogue::rope_*); the RoPE op is removed and its readers (and K/V cache users) read the
// GEMM.
int fold_rope(OpGraph& g);
// time_bias_fold: a GEMM whose input is the column concatenation of an activation and a
// per-step constant (a Copy with const_rows: pi0's time embedding) reads the activation alone;
// the constant's product with its weight rows is added to the bias (a per-step bias table,
// precomputed once), and the constant and the concatenation are removed.
int fold_time_bias(OpGraph& g);

// `g` without the ops where redirect[id] != id: an edge out of such an op leaves from
// redirect[id] instead (dropped when redirect[id] is -1 or the edge would be a loop; merged
// edges add their bytes, capped at the new source's out_bytes), edges into it are dropped, and
// kv_source ids follow. Kept ops keep their order; ids are renumbered. REQUIRES: redirect has
// g.size() entries and redirect[id] (when not -1) is a kept op below every reader of id.
OpGraph rebuild_graph(const OpGraph& g, const std::vector<int>& redirect);

}  // namespace vlasim
