// Hand-built ops and graphs for the executor tests and benchmark.
#pragma once

#include <string>
#include <vector>

#include "models/graph.h"

namespace vlasim::testing {

Op gemm(const std::string& name, int64_t m, int64_t n, int64_t k, Epilogue e = {},
        int64_t batch = 1);
Op attention(const std::string& name, OpFn fn, int64_t batch, int64_t heads, int64_t kv_heads,
             int64_t head_dim, int64_t q_len, int64_t kv_len, bool causal = false,
             int64_t window = 0, int kv_source = -1, int64_t kv_cached = 0);
Op rowwise(const std::string& name, OpKind kind, OpFn fn, int64_t rows, int64_t width);

// Dimensions of a pi0-shaped model: SigLIP-like vision, Gemma-like MQA backbone with GeGLU,
// an action expert cross-attending to each backbone layer's K/V, Euler flow steps.
struct Pi0Dims {
  int views = 1;
  int64_t patches = 16, patch_k = 48;  // tokens per view, patch pixels * channels
  int64_t v_width = 64, v_heads = 4, v_mlp = 128;
  int v_depth = 1;
  int64_t width = 64, heads = 4, head_dim = 16, mlp = 128, prompt = 8, vocab = 100;
  int depth = 2;
  int64_t e_width = 32, e_mlp = 64, chunk = 8, action_dim = 8;
  int steps = 2;
};
// The pi0-shaped graph for `d` (ops in execution order, stages Vision/Prefix/Action).
OpGraph pi0_graph(const Pi0Dims& d);
// pi0_small-like dims (used when models/cards/pi0_small.yaml is not available).
Pi0Dims pi0_small_dims();

// max |a - ref| / max |ref| (max |a - ref| when ref is all zero). REQUIRES: a.size() >= ref.size().
double rel_err(const std::vector<float>& a, const std::vector<float>& ref);

}  // namespace vlasim::testing
