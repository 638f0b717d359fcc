#include "sim/costs/shaped_cost_model.h"

#include <algorithm>
#include <cmath>

namespace vlasim {

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

// The DRAM bandwidth `ctas` thread blocks on `sms` SMs can pull (bytes/s).
double bandwidth(const DeviceSpec& d, int sms, double ctas) {
  const KernelModel& k = d.kernels;
  const double full = d.mem_bw * k.memory;
  const double per_sm = full / std::max(1.0, k.saturating_sms * d.sms);
  return std::min(full, per_sm * std::max(1.0, std::min<double>(ctas, sms)));
}

// DRAM bytes of an op: weights and KV cache always (an embedding lookup: only the rows it
// gathers, which its bytes_read count, not the whole table); activations small enough for L2
// at a fraction of their DRAM time.
double dram_bytes(const Op& op, const DeviceSpec& d, double l2_hit_cost) {
  if (op.kind == OpKind::Embedding) return op.bytes_read + op.bytes_written;
  const double fixed = op.weight_bytes + op.kv_bytes;
  const double act = std::max(0.0, op.bytes_read + op.bytes_written - fixed);
  return fixed + (act <= d.l2_bytes / 2 ? act * l2_hit_cost : act);
}

struct Kernel {
  double compute = 0, memory = 0;
  double seconds() const { return std::max(compute, memory); }
};

// Tile shapes a GEMM library chooses among, as a fraction of the device's largest tile, with
// the fraction of the per-SM rate each reaches (less operand reuse in smaller tiles).
struct TileChoice {
  double m, n, rate;
};
constexpr TileChoice kTiles[] = {{1, 1, 1.0}, {1, 0.5, 0.9}, {0.5, 0.5, 0.75}, {0.25, 0.5, 0.6}};
constexpr int kSplitK[] = {1, 2, 4, 8, 16};

Kernel gemm(const Op& op, const DeviceSpec& d, int sms, const ShapedParams& p) {
  const KernelModel& k = d.kernels;
  const double M = std::max<int64_t>(1, op.m), N = std::max<int64_t>(1, op.n),
               K = std::max<int64_t>(1, op.k);
  const double frac = op.dtype == DType::F32 ? k.gemm_fp32 : k.gemm;
  const double per_sm = d.peak.matrix(op.dtype) / d.sms * std::min(1.0, frac * p.eff_scale);
  const double bytes = dram_bytes(op, d, p.l2_hit_cost);
  Kernel best;
  bool any = false;
  for (const TileChoice& t : kTiles) {
    const double tm = std::max(16.0, k.tile_m * t.m), tn = std::max(16.0, k.tile_n * t.n);
    const double tiles_mn = ceil_div(M, tm) * ceil_div(N, tn);
    for (int split : kSplitK) {
      if (split > 1 && (K / split < 128 || tiles_mn >= sms)) break;
      const double tiles = tiles_mn * split;
      const double waves = ceil_div(tiles, sms);
      Kernel c;
      c.compute = waves * 2 * tm * tn * ceil_div(K, split) / (per_sm * t.rate);
      // split-K partial sums: written and read back in fp32
      const double partial = split > 1 ? 2.0 * split * M * N * 4 : 0;
      c.memory = (bytes + partial) / bandwidth(d, sms, std::min<double>(tiles, sms));
      if (!any || c.seconds() < best.seconds()) best = c;
      any = true;
    }
  }
  return best;
}

Kernel attention(const Op& op, const DeviceSpec& d, int sms, const ShapedParams& p) {
  const KernelModel& k = d.kernels;
  const double q = std::max<int64_t>(1, op.q_len), kv = std::max<int64_t>(1, op.kv_len);
  const double q_tile = q <= 64 ? 64 : 128;
  const double q_tiles = ceil_div(q, q_tile);
  const double heads = std::max<int64_t>(1, op.batch) * std::max<int64_t>(1, op.heads) * q_tiles;
  const double padded = op.flops * q_tiles * q_tile / q;
  const double per_sm = d.peak.matrix(op.dtype) / d.sms * std::min(1.0, k.attention * p.eff_scale);
  const double bytes = dram_bytes(op, d, p.l2_hit_cost);
  // Keys split over otherwise idle SMs (flash decoding), at least 128 keys a split; the
  // partial results (fp32, a row of head_dim per query and split) are written and combined.
  Kernel best;
  for (int split = 1;; split *= 2) {
    const double items = heads * split;
    Kernel c;
    c.compute = ceil_div(items, sms) * (padded / items) / per_sm;
    const double partial = split > 1 ? 2.0 * items * q_tile * std::max<int64_t>(1, op.head_dim) * 4 : 0;
    c.memory = (bytes + partial) / bandwidth(d, sms, std::min<double>(items, sms));
    if (split == 1 || c.seconds() < best.seconds()) best = c;
    if (kv / (2 * split) < 128 || items >= sms) break;
  }
  return best;
}

// Norms (a thread block per row) and elementwise / embedding ops (a block per 2048 elements).
Kernel vector_op(const Op& op, const DeviceSpec& d, int sms, const ShapedParams& p) {
  const double elems = std::max<double>(1, double(op.rows) * std::max<int64_t>(1, op.width));
  const double ctas = op.kind == OpKind::Norm ? std::max<double>(1, op.rows) : ceil_div(elems, 2048);
  const double busy = std::min<double>(ctas, sms);
  Kernel c;
  c.compute = op.flops / (d.peak.vector_fp32 / d.sms * busy * d.kernels.vector);
  c.memory = dram_bytes(op, d, p.l2_hit_cost) / bandwidth(d, sms, ctas);
  return c;
}

class Shaped : public CostModel {
 public:
  explicit Shaped(ShapedParams p) : p_(p), roofline_(make_roofline(p.l2_hit_cost, true)) {}

  OpCost op_cost(const Op& op, const DeviceInstance& dev, const UnitDecl& unit) const override {
    if (dev.spec.type != DeviceType::Gpu) return roofline_->op_cost(op, dev, unit);
    return shaped_gpu_op_cost(op, dev.spec, stream_sms(dev, unit), dev.graph_capture, p_);
  }

  OpCost transfer_cost(double bytes, const LinkInstance& link, bool h2d) const override {
    return roofline_->transfer_cost(bytes, link, h2d);
  }

 private:
  ShapedParams p_;
  std::unique_ptr<CostModel> roofline_;
};

}  // namespace

OpCost shaped_gpu_op_cost(const Op& op, const DeviceSpec& d, int sms, bool graph,
                          const ShapedParams& p) {
  sms = std::clamp(sms, 1, std::max(1, d.sms));
  Kernel k = op.kind == OpKind::Gemm        ? gemm(op, d, sms, p)
             : op.kind == OpKind::Attention ? attention(op, d, sms, p)
                                            : vector_op(op, d, sms, p);
  OpCost c;
  c.compute_seconds = k.compute;
  c.memory_seconds = k.memory;
  const double kernel = std::max(k.seconds(), d.kernels.kernel_s) + d.graph_launch_s;
  c.seconds = graph ? kernel : std::max(kernel, p.host_op_s);
  c.overhead_seconds = c.seconds - k.seconds();
  c.kernel_seconds = std::max(k.seconds(), d.kernels.kernel_s);
  return c;
}

std::unique_ptr<CostModel> make_shaped_cost_model(const Params& prm) {
  const ShapedParams def;
  ShapedParams p;
  p.host_op_s = prm.get_double("host_op_us", def.host_op_s * 1e6) * 1e-6;
  p.eff_scale = prm.get_double("eff_scale", def.eff_scale);
  p.l2_hit_cost = prm.get_double("l2_hit_cost", def.l2_hit_cost);
  if (!(p.host_op_s >= 0 && p.host_op_s <= 1e-2))
    prm.node().required("host_op_us").fail("must be from 0 to 10000");
  if (!(p.eff_scale > 0.05 && p.eff_scale <= 4))
    prm.node().required("eff_scale").fail("must be above 0.05 and at most 4");
  if (!(p.l2_hit_cost >= 0 && p.l2_hit_cost <= 1))
    prm.node().required("l2_hit_cost").fail("must be in [0, 1]");
  return std::make_unique<Shaped>(p);
}

void register_shaped_cost_model(CostModelRegistry& r) {
  r.add({"shaped",
         "GPU ops from their shapes (tiles and waves over the SMs, padding, achievable bandwidth, "
         "empty-kernel floor, eager host time); CPU units as the roofline",
         {{"host_op_us", "eager (no CUDA Graph) framework time per operator on the host, us",
           "25"},
          {"eff_scale", "multiplies every GPU's gemm and attention fractions (catalog kernels:)",
           "0.9"},
          {"l2_hit_cost", "DRAM-time fraction charged for activations that fit in L2", "0.3"}},
         make_shaped_cost_model});
}

}  // namespace vlasim
