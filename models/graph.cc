#include "models/graph.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <stdexcept>

namespace vlasim {

int dtype_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16: return 2;
    case DType::F16: return 2;
    case DType::I8: return 1;
  }
  return 4;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
    case DType::I8: return "int8";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
  if (s == "fp32" || s == "f32") *out = DType::F32;
  else if (s == "bf16") *out = DType::BF16;
  else if (s == "fp16" || s == "f16") *out = DType::F16;
  else if (s == "int8" || s == "i8") *out = DType::I8;
  else return false;
  return true;
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Gemm: return "gemm";
    case OpKind::Attention: return "attention";
    case OpKind::Norm: return "norm";
    case OpKind::Elementwise: return "elementwise";
    case OpKind::Embedding: return "embedding";
    case OpKind::Transfer: return "transfer";
  }
  return "?";
}

const char* to_string(OpFn f) {
  switch (f) {
    case OpFn::None: return "none";
    case OpFn::Linear: return "linear";
    case OpFn::PatchEmbed: return "patch_embed";
    case OpFn::Conv: return "conv";
    case OpFn::SelfAttention: return "self_attention";
    case OpFn::CrossAttention: return "cross_attention";
    case OpFn::RMSNorm: return "rmsnorm";
    case OpFn::LayerNorm: return "layernorm";
    case OpFn::GroupNorm: return "groupnorm";
    case OpFn::RoPE: return "rope";
    case OpFn::Add: return "add";
    case OpFn::Mul: return "mul";
    case OpFn::Sub: return "sub";
    case OpFn::BiasAdd: return "bias_add";
    case OpFn::Gelu: return "gelu";
    case OpFn::Silu: return "silu";
    case OpFn::EulerUpdate: return "euler_update";
    case OpFn::Softmax: return "softmax";
    case OpFn::Copy: return "copy";
    case OpFn::Lookup: return "lookup";
    case OpFn::HostToDevice: return "h2d";
    case OpFn::DeviceToHost: return "d2h";
    case OpFn::DeviceToDevice: return "d2d";
  }
  return "?";
}

const char* to_string(Stage s) {
  switch (s) {
    case Stage::Vision: return "vision";
    case Stage::Prefix: return "prefix";
    case Stage::Action: return "action";
    case Stage::Decode: return "decode";
    case Stage::Head: return "head";
  }
  return "?";
}

bool parse_stage(const std::string& s, Stage* out) {
  for (Stage st : {Stage::Vision, Stage::Prefix, Stage::Action, Stage::Decode, Stage::Head})
    if (s == to_string(st)) {
      *out = st;
      return true;
    }
  return false;
}

const char* to_string(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::GeluErf: return "gelu_erf";
    case Activation::Silu: return "silu";
    case Activation::Relu: return "relu";
  }
  return "?";
}

void OpGraph::check_room(size_t more) const {
  if (more > kMaxGraphOps || size() + more > kMaxGraphOps)
    throw GraphTooLarge("the operator graph would pass " + std::to_string(kMaxGraphOps) +
                        " ops (the limit); fewer steps, views, chunk or prompt tokens give fewer");
}

int OpGraph::add(Op op) {
  check_room(1);
  op.id = static_cast<int>(boost::num_vertices(*g_));
  boost::add_vertex(std::move(op), *g_);
  return static_cast<int>(boost::num_vertices(*g_)) - 1;
}

void OpGraph::depend(int from, int to, double bytes) {
  if (from < 0 || to < 0 || from >= to || static_cast<size_t>(to) >= size())
    throw std::logic_error("OpGraph::depend: edge must go forward between existing ops");
  boost::add_edge(static_cast<size_t>(from), static_cast<size_t>(to), Edge{bytes}, *g_);
}

std::vector<int> OpGraph::preds(int id) const {
  std::vector<int> out;
  for (auto [it, end] = boost::in_edges(static_cast<size_t>(id), *g_); it != end; ++it)
    out.push_back(static_cast<int>(boost::source(*it, *g_)));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> OpGraph::succs(int id) const {
  std::vector<int> out;
  for (auto [it, end] = boost::out_edges(static_cast<size_t>(id), *g_); it != end; ++it)
    out.push_back(static_cast<int>(boost::target(*it, *g_)));
  std::sort(out.begin(), out.end());
  return out;
}

double OpGraph::edge_bytes(int from, int to) const {
  auto [e, found] = boost::edge(static_cast<size_t>(from), static_cast<size_t>(to), *g_);
  return found ? (*g_)[e].bytes : 0.0;
}

double OpGraph::flops() const {
  double f = 0;
  for (size_t i = 0; i < size(); ++i) f += (*g_)[i].flops;
  return f;
}

double OpGraph::flops(Stage s) const {
  double f = 0;
  for (size_t i = 0; i < size(); ++i)
    if ((*g_)[i].stage == s) f += (*g_)[i].flops;
  return f;
}

static double unique_weights(const GraphImpl& g, bool filter, Stage s) {
  std::set<std::string> seen;
  double b = 0;
  for (size_t i = 0; i < boost::num_vertices(g); ++i) {
    const Op& o = g[i];
    if (o.weight_id.empty() || (filter && o.stage != s)) continue;
    if (seen.insert(o.weight_id).second) b += o.weight_bytes;
  }
  return b;
}

double OpGraph::param_bytes() const { return unique_weights(*g_, false, Stage::Vision); }
double OpGraph::param_bytes(Stage s) const { return unique_weights(*g_, true, s); }

int OpGraph::blocks(Stage s) const {
  int b = -1;
  for (size_t i = 0; i < size(); ++i)
    if ((*g_)[i].stage == s) b = std::max(b, (*g_)[i].block);
  return b + 1;
}

}  // namespace vlasim
