// Convolutional component builders (Diffusion Policy): a ResNet image encoder and a
// conditional 1D U-Net denoiser, every convolution written as an im2col GEMM.
#include "models/emit.h"

namespace vlasim::detail {

namespace {

std::vector<int64_t> positive_list(const ConfigNode& n, const std::string& key, size_t min_size) {
  return positive_ints(n, key, min_size, "needs at least " + std::to_string(min_size) + " entries");
}

// GroupNorm followed by the block's activation (ReLU / Mish), costed as one op: the graph
// has no separate activation function for these.
int group_norm(Ctx& c, const Site& s, const std::string& leaf, int64_t rows, int64_t ch, int x) {
  return c.norm(s, leaf, OpFn::GroupNorm, rows, ch, true, true, {x}, 7);
}

}  // namespace

void build_resnet(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const int64_t image = dim(n, "image_size"), ch = dim(n, "channels", 3), stem = dim(n, "stem");
  const std::vector<int64_t> widths = positive_list(n, "widths", 1);
  const std::vector<int64_t> blocks = positive_list(n, "blocks", 1);
  if (blocks.size() != widths.size())
    n.required("blocks").fail("needs one entry per stage in 'widths' (" +
                              std::to_string(widths.size()) + ")");
  const int64_t obs = dim(n, "obs_steps", 1), kp = dim(n, "keypoints"), feat = dim(n, "out_features");
  const int64_t N = c.B() * c.shape.views * obs;  // images through the encoder
  Site s{stage, -1, -1, name};
  auto conv = [&](const std::string& leaf, int64_t cin, int64_t cout, int64_t kernel,
                  int64_t stride, int64_t& h, std::vector<Dep> deps) {
    h = (h + stride - 1) / stride;
    return c.gemm(s, leaf, OpFn::Conv, N * h * h, cout, cin * kernel * kernel, Epilogue{}, deps);
  };
  int64_t h = image;
  int x = conv("conv1", ch, stem, 7, 2, h, {});
  x = group_norm(c, s, "norm1", N * h * h, stem, x);
  h = (h + 1) / 2;  // 3x3 max pool, stride 2
  x = c.eltwise(s, "maxpool", OpFn::Copy, N * h * h, stem, 9, 4, {x});
  int64_t cin = stem;
  int b = 0;
  for (size_t si = 0; si < widths.size(); ++si)
    for (int64_t bi = 0; bi < blocks[si]; ++bi, ++b) {
      s.block = b;
      const int64_t cout = widths[si], stride = si > 0 && bi == 0 ? 2 : 1;
      int64_t h1 = h, h2;
      int y = conv("conv1", cin, cout, 3, stride, h1, {x});
      y = group_norm(c, s, "norm1", N * h1 * h1, cout, y);
      h2 = h1;
      y = conv("conv2", cout, cout, 3, 1, h2, {y});
      y = group_norm(c, s, "norm2", N * h2 * h2, cout, y);
      int skip = x;
      if (stride != 1 || cin != cout) {
        int64_t hd = h;
        skip = conv("down", cin, cout, 1, stride, hd, {x});
        skip = group_norm(c, s, "down_norm", N * hd * hd, cout, skip);
      }
      x = c.eltwise(s, "add", OpFn::Add, N * h2 * h2, cout, 2, 2, {y, skip});
      h = h2;
      cin = cout;
    }
  s.block = -1;
  // Spatial softmax over keypoint maps, then a linear layer to the feature size.
  int y = c.gemm(s, "keypoints", OpFn::Conv, N * h * h, kp, cin, Epilogue{.bias = true}, {x});
  y = c.eltwise(s, "spatial_softmax", OpFn::Softmax, N * h * h, kp, 8, 1, {y});
  y = c.gemm(s, "out", OpFn::Linear, N, feat, 2 * kp, Epilogue{.bias = true},
             {{y, double(N * 2 * kp) * c.eb}});
  c.outputs[name] = {y, c.shape.views * obs, feat, name};
}

void build_unet1d(Ctx& c, const ConfigNode& n, const std::string& name, Stage stage) {
  const std::vector<int64_t> down = positive_list(n, "down_dims", 1);
  const int64_t K = dim(n, "kernel"), dse = dim(n, "step_embed");
  const int64_t action_dim = dim(n, "action_dim"), low_dim = n.get_count("low_dim", 0, 0);
  std::vector<Tensor> in = inputs_of(c, n);
  int64_t global = low_dim;
  std::vector<Dep> cond_in;
  for (const Tensor& t : in) {
    global += t.tokens * t.width;
    cond_in.push_back(t.op);
  }
  const int64_t cond_dim = dse + global, B = c.B();
  int64_t L = c.shape.chunk;
  const int64_t levels = int64_t(down.size());
  if (L % (int64_t(1) << (levels - 1)) != 0)
    n.required("down_dims").fail("horizon (chunk) " + std::to_string(L) +
                                 " must be divisible by 2^" + std::to_string(levels - 1));
  c.suffix_tokens = L;
  // DP-Cache on a U-Net (the DeepCache way): a cached step runs the top `keep` levels' down
  // blocks and everything above them on the way up, and replaces the rest (the deeper levels,
  // the middle, and the up path back to level keep - 1) by the change it made at the last full
  // step, kept as `delta` ([B L, down[keep - 1]] at that level's length).
  const DpCache& dc = c.shape.dp_cache;
  if (dc.on() && (dc.keep < 1 || dc.keep >= levels))
    n.required("down_dims").fail("dp_cache keep " + std::to_string(dc.keep) + " levels of the " +
                                 std::to_string(levels) + " of '" + name + "': keep from 1 to " +
                                 std::to_string(levels - 1) + " so that some deeper level is reused");
  if (dc.on()) c.dp_cache_used = true;
  int delta = -1;
  int prev = -1;
  for (int step = 0; step < c.shape.steps; ++step) {
    Site s{stage, step, -1, name};
    const bool cached = dc.cached(step);
    const bool keeps = dc.on() && !cached && dc.cached(step + 1);
    int deep_in = -1;
    // Diffusion-step encoder: sinusoidal -> Linear(4x) -> Mish -> Linear.
    int se = c.gemm(s, "step_mlp1", OpFn::Linear, B, 4 * dse, dse,
                    Epilogue{.bias = true, .act = Activation::Silu}, {});
    se = c.gemm(s, "step_mlp2", OpFn::Linear, B, dse, 4 * dse, Epilogue{.bias = true}, {se});
    std::vector<Dep> cond = cond_in;
    cond.push_back(se);
    int b = 0;
    // ConditionalResidualBlock1D: conv-GN-Mish, FiLM from the condition, conv-GN-Mish,
    // residual (1x1 conv when the width changes). `skip` is concatenated to x on input.
    auto res = [&](int x, int skip, int64_t cin, int64_t cout) {
      s.block = b++;
      std::vector<Dep> xin{x, skip};
      int y = c.gemm(s, "conv1", OpFn::Conv, B * L, cout, cin * K, Epilogue{.bias = true}, xin);
      y = group_norm(c, s, "norm1", B * L, cout, y);
      const int film = c.gemm(s, "film", OpFn::Linear, B, 2 * cout, cond_dim,
                              Epilogue{.bias = true}, cond);
      y = c.eltwise(s, "film_apply", OpFn::Mul, B * L, cout, 2, 1, {y, film});
      y = c.gemm(s, "conv2", OpFn::Conv, B * L, cout, cout * K, Epilogue{.bias = true}, {y});
      y = group_norm(c, s, "norm2", B * L, cout, y);
      if (cin != cout) {
        xin.push_back(y);
        return c.gemm(s, "res_conv", OpFn::Conv, B * L, cout, cin,
                      Epilogue{.bias = true, .residual = true}, xin);
      }
      return c.eltwise(s, "add", OpFn::Add, B * L, cout, 1, 2, {y, x});
    };
    int x = prev;
    int64_t cin = action_dim;
    std::vector<int> skips;
    for (int64_t i = 0; i < levels; ++i) {
      x = res(x, -1, cin, down[size_t(i)]);
      x = res(x, -1, down[size_t(i)], down[size_t(i)]);
      skips.push_back(x);
      cin = down[size_t(i)];
      if (i == dc.keep - 1 && (cached || keeps)) deep_in = x;
      if (cached && i == dc.keep - 1) {
        s.block = -1;
        x = c.eltwise(s, "dp_cache_add", OpFn::Add, B * L, cin, 1, 2, {delta, x});
        break;
      }
      if (i + 1 < levels) {
        s.block = -1;
        L /= 2;
        x = c.gemm(s, "down" + std::to_string(i), OpFn::Conv, B * L, cin, cin * 3,
                   Epilogue{.bias = true}, {x});
      }
    }
    if (!cached) {
      x = res(x, -1, cin, cin);
      x = res(x, -1, cin, cin);
    }
    for (int64_t i = cached ? dc.keep - 1 : levels - 1; i >= 1; --i) {
      b = int(2 * levels + 2 + 2 * (levels - 1 - i));  // the same block numbers in cached steps
      const int64_t out = down[size_t(i - 1)];
      x = res(x, skips[size_t(i)], 2 * cin, out);
      x = res(x, -1, out, out);
      cin = out;
      s.block = -1;
      // ConvTranspose1d(k=4, s=2): each output position sees 2 taps of every channel.
      L *= 2;
      x = c.gemm(s, "up" + std::to_string(levels - 1 - i), OpFn::Conv, B * L, cin, 2 * cin,
                 Epilogue{.bias = true}, {x}, double(cin) * cin * 4);
      if (keeps && i == dc.keep)
        delta = c.eltwise(s, "dp_cache_delta", OpFn::Sub, B * L, cin, 1, 2, {deep_in, x});
    }
    s.block = -1;
    x = c.gemm(s, "final_conv", OpFn::Conv, B * L, cin, cin * K, Epilogue{.bias = true}, {x});
    x = group_norm(c, s, "final_norm", B * L, cin, x);
    x = c.gemm(s, "out_conv", OpFn::Conv, B * L, action_dim, cin, Epilogue{.bias = true}, {x});
    prev = c.eltwise(s, "scheduler_step", OpFn::EulerUpdate, B * L, action_dim, 3, 2, {x, prev});
  }
  c.outputs[name] = {prev, L, action_dim, name};
}

}  // namespace vlasim::detail
