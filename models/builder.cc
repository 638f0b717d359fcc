#include "models/builder.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "models/emit.h"
#include "models/passes/passes.h"
#include "scenarios/config/data_dir.h"

#ifndef VLASIM_CARDS_DIR
#define VLASIM_CARDS_DIR "models/cards"
#endif

namespace vlasim {

namespace detail {

const std::vector<ComponentType>& component_types() {
  static const std::vector<ComponentType> types = {
      {"vit", "ViT image encoder: patch embed, pre-norm blocks (optional windows, RoPE), "
              "optional pixel shuffle; one pass per view",
       Stage::Vision,
       {"image_size", "patch", "channels", "width", "depth", "heads", "head_dim", "mlp", "act",
        "gated", "norm", "bias", "rope", "window", "global_blocks", "pixel_shuffle",
        "final_norm", "pos_embed"},
       build_vit},
      {"encoder", "transformer blocks over its input tokens (no patch embed)", Stage::Prefix,
       {"inputs", "width", "depth", "heads", "head_dim", "mlp", "act", "gated", "norm", "bias",
        "rope", "causal", "input_norm"},
       build_encoder},
      {"projector", "MLP applied to every token (inputs concatenated along channels)",
       Stage::Vision, {"inputs", "dims", "act", "bias", "norm"}, build_projector},
      {"decoder", "LLM backbone over the prefix (inputs + prompt + state tokens); keeps a "
                  "per-layer K/V cache",
       Stage::Prefix,
       {"inputs", "width", "depth", "heads", "kv_heads", "head_dim", "mlp", "act", "gated",
        "norm", "qkv_bias", "qk_norm", "rope", "vocab", "causal", "kv_only_last",
        "final_norm", "state_tokens", "state_dim"},
       build_decoder},
      {"expert", "flow-matching action expert attending to a decoder's K/V cache every step "
                 "(pi0 joint attention, SmolVLA alternating cross layers, pi0.5 adaRMS)",
       Stage::Action,
       {"prefix", "width", "depth", "heads", "kv_heads", "head_dim", "mlp", "act", "gated",
        "norm", "rope", "action_dim", "state_tokens", "state_dim", "time", "cross_every"},
       build_expert},
      {"dit", "diffusion transformer action head (GR00T): AdaLayerNorm, cross-attention to its "
              "input on every cross_every-th layer",
       Stage::Action,
       {"inputs", "width", "depth", "heads", "head_dim", "mlp", "act", "cross_every",
        "action_dim", "state_dim", "state_hidden", "future_tokens", "output_dim",
        "decoder_hidden", "time_dim"},
       build_dit},
      {"ar_decode", "autoregressive decoding of chunk * action_dims tokens with a decoder's "
                    "weights and a growing K/V cache",
       Stage::Decode, {"decoder", "action_dims"}, build_ar_decode},
      {"qtformer", "query transformer: learned queries self-attend, cross-attend to image "
                   "features, FFN",
       Stage::Vision,
       {"inputs", "width", "depth", "heads", "head_dim", "mlp", "act", "queries",
        "memory_tokens", "out_tokens"},
       build_qtformer},
      {"head", "MLP over the last `rows` tokens of its input (planner, policy head)",
       Stage::Head, {"inputs", "dims", "act", "rows"}, build_head},
      {"resnet", "ResNet image encoder with GroupNorm, convolutions as GEMMs, spatial-softmax "
                 "keypoints; one pass per view and observation step",
       Stage::Vision,
       {"image_size", "channels", "stem", "widths", "blocks", "obs_steps", "keypoints",
        "out_features"},
       build_resnet},
      {"unet1d", "conditional 1D U-Net denoiser (Diffusion Policy), one pass per step",
       Stage::Action,
       {"inputs", "down_dims", "kernel", "step_embed", "action_dim", "low_dim"}, build_unet1d},
  };
  return types;
}

const ComponentType* find_component_type(const std::string& type) {
  for (const auto& t : component_types())
    if (type == t.type) return &t;
  return nullptr;
}

}  // namespace detail

namespace {

const std::vector<std::string> kCardKeys = {"name",      "description", "source",
                                            "notes",     "defaults",    "max_views",
                                            "max_prompt", "max_chunk",  "components",
                                            "passes"};
const std::vector<std::string> kCommonKeys = {"name", "type", "stage", "source", "notes",
                                              "weights_from", "dtype"};
// Keys that may differ between a component and the one it takes its weights from: where its
// input comes from, not what its parameters are.
const std::vector<std::string> kWiringKeys = {"inputs", "prefix", "decoder"};

// Whether two YAML values are equal: scalars by text, sequences and maps element by element.
bool same_value(const YAML::Node& a, const YAML::Node& b) {
  if (!a.IsDefined() || a.IsNull() || !b.IsDefined() || b.IsNull())
    return (!a.IsDefined() || a.IsNull()) == (!b.IsDefined() || b.IsNull());
  if (a.Type() != b.Type()) return false;
  if (a.IsScalar()) return a.Scalar() == b.Scalar();
  if (a.size() != b.size()) return false;
  if (a.IsSequence()) {
    for (size_t i = 0; i < a.size(); ++i)
      if (!same_value(a[i], b[i])) return false;
    return true;
  }
  for (const auto& kv : a)
    if (!same_value(kv.second, b[kv.first.Scalar()])) return false;
  return true;
}

// Checks `weights_from` of component c: it names an earlier component of the same type whose
// parameter keys all have the same values, so the two can share one set of weights.
void check_weights_from(const ConfigNode& c, const detail::ComponentType& t,
                        const std::vector<ConfigNode>& earlier) {
  ConfigNode wf = c.optional("weights_from");
  if (!wf.defined()) return;
  if (t.type == std::string("ar_decode"))
    wf.fail("an ar_decode already uses its decoder's weights; name the decoder with 'decoder:'");
  const std::string target = wf.as_string();
  const ConfigNode* src = nullptr;
  std::vector<std::string> names;
  for (const ConfigNode& e : earlier) {
    names.push_back(e.required("name").as_string());
    if (names.back() == target) src = &e;
  }
  if (!src)
    wf.fail("weights_from names no earlier component: '" + target + "'; earlier components are: " +
            join_names(names));
  const std::string src_type = src->required("type").as_string();
  if (src_type != t.type)
    wf.fail("weights_from '" + target + "' is of type " + src_type + ", this component of type " +
            t.type);
  std::vector<std::string> keys = t.keys;
  keys.push_back("dtype");
  for (const std::string& k : keys) {
    if (std::find(kWiringKeys.begin(), kWiringKeys.end(), k) != kWiringKeys.end()) continue;
    if (!same_value(c.raw()[k], src->raw()[k]))
      wf.fail("weights_from '" + target + "': key '" + k +
              "' differs, so the weights cannot be the same");
  }
}

std::vector<std::string> type_names() {
  std::vector<std::string> out;
  for (const auto& t : detail::component_types()) out.push_back(t.type);
  return out;
}

[[noreturn]] void shape_error(const ModelCard& card, const std::string& card_key,
                              const std::string& key, const std::string& message) {
  ConfigNode at = card.node.optional(card_key);
  if (!at.defined()) at = card.node.optional("defaults");
  throw ConfigError(card.file, at.line(), 0, key, message);
}

// Fills the zero/negative fields of `shape` from the card and checks the result.
RunShape resolve(const ModelCard& card, const RunShape& shape) {
  const RunShape& d = card.defaults;
  RunShape r = shape;
  if (r.views < 0) shape_error(card, "max_views", "views", "views must not be negative");
  if (r.prompt < -1) shape_error(card, "defaults", "prompt", "prompt must not be negative");
  if (r.chunk < 0) shape_error(card, "defaults", "chunk", "chunk must not be negative");
  if (r.steps < 0) shape_error(card, "defaults", "steps", "steps must not be negative");
  if (r.batch < 0) shape_error(card, "defaults", "batch", "batch must not be negative");
  if (r.views == 0) r.views = d.views;
  if (r.prompt < 0) r.prompt = d.prompt;
  if (r.chunk == 0) r.chunk = d.chunk;
  if (r.steps == 0) r.steps = d.steps;
  if (r.batch == 0) r.batch = d.batch;
  if (r.prompt > kMaxPrompt)
    shape_error(card, "defaults", "prompt", "prompt must be at most " + std::to_string(kMaxPrompt));
  if (r.chunk > kMaxChunk)
    shape_error(card, "defaults", "chunk", "chunk must be at most " + std::to_string(kMaxChunk));
  if (r.steps > kMaxSteps)
    shape_error(card, "defaults", "steps", "steps must be at most " + std::to_string(kMaxSteps));
  if (r.batch > kMaxBatch)
    shape_error(card, "defaults", "batch", "batch must be at most " + std::to_string(kMaxBatch));
  const long long max_views = card.node.get_int("max_views", d.views);
  if (r.views > max_views)
    shape_error(card, "max_views", "views",
                std::to_string(r.views) + " views requested but card '" + card.name +
                    "' allows at most " + std::to_string(max_views));
  if (ConfigNode mp = card.node.optional("max_prompt"); mp.defined() && r.prompt > mp.as_int())
    shape_error(card, "max_prompt", "prompt",
                "prompt of " + std::to_string(r.prompt) + " tokens exceeds the card's max_prompt " +
                    mp.as_string());
  if (ConfigNode mc = card.node.optional("max_chunk"); mc.defined() && r.chunk > mc.as_int())
    shape_error(card, "max_chunk", "chunk",
                "chunk " + std::to_string(r.chunk) + " exceeds the card's max_chunk " +
                    mc.as_string());
  if (r.dp_cache.on())
    if (const DpCacheProblem p = dp_cache_problem(card, r.dp_cache, r.steps); !p.why.empty())
      shape_error(card, "defaults", "dp_cache", p.why);
  if (!r.passes) r.passes = d.passes;
  if (!r.passes) r.passes = std::vector<std::string>{};
  for (const std::string& p : *r.passes)
    if (!find_pass(p))
      shape_error(card, "passes", "passes", "unknown pass '" + p + "'; valid are: " + join_names(pass_names()));
  return r;
}

// Decoders last_layer_skip may cut: a flow-matching expert reads their K/V (its `prefix`, else
// the latest decoder before it) and nothing reads their output (no `inputs:` names them, no
// ar_decode decodes with them, and the next component is not one reading the previous
// component's output).
std::vector<std::string> skippable_decoders(const ModelCard& card) {
  const std::vector<ConfigNode> items = card.node.required("components").items();
  std::vector<std::string> read_by_expert, output_read;
  std::string latest;
  for (size_t i = 0; i < items.size(); ++i) {
    const ConfigNode& n = items[i];
    const std::string type = n.get_string("type", ""), name = n.get_string("name", "");
    if (type == "expert") read_by_expert.push_back(n.get_string("prefix", latest));
    if (type == "ar_decode") output_read.push_back(n.get_string("decoder", latest));
    if (ConfigNode in = n.optional("inputs"); in.defined() && in.is_sequence())
      for (const ConfigNode& x : in.items()) output_read.push_back(x.as_string());
    else if (i > 0 && type != "expert" && type != "ar_decode")
      output_read.push_back(items[i - 1].get_string("name", ""));
    if (type == "decoder") latest = name;
  }
  std::vector<std::string> out;
  for (const std::string& d : read_by_expert)
    if (std::find(output_read.begin(), output_read.end(), d) == output_read.end()) out.push_back(d);
  return out;
}

// The graph of `card` at the resolved `shape`, with its passes applied; `sites` gets, per
// pass, the sites it could apply to (builder passes) or rewrote (rewrite passes, when on).
OpGraph build(const ModelCard& card, const RunShape& shape, std::map<std::string, int>* sites);

}  // namespace

DpCacheProblem dp_cache_problem(const ModelCard& card, const DpCache& dc, int steps) {
  const std::string window = "[" + std::to_string(dc.start) + ", " + std::to_string(dc.end) + ")";
  if (dc.start < 0) return {"start", "start must not be negative"};
  if (dc.end > steps)
    return {"end", "the window ends at step " + std::to_string(dc.end) + ", past the model's " +
                       std::to_string(steps) + " steps"};
  if (dc.start >= dc.end)
    return {"start", "start (" + std::to_string(dc.start) + ") must be below end (" + std::to_string(dc.end) + ")"};
  if (dc.interval < 2) return {"interval", "interval " + std::to_string(dc.interval) + " caches no step: it must be at least 2"};
  if (dc.keep < 0) return {"keep", "keep must not be negative"};
  int experts = 0;
  for (const ConfigNode& c : card.node.required("components").items()) {
    const std::string type = c.get_string("type", "");
    if (type == "unet1d") {
      ++experts;
      const long long levels = c.has("down_dims") ? static_cast<long long>(c.required("down_dims").as_ints().size()) : 0;
      if (dc.keep < 1 || dc.keep >= levels)
        return {"keep", "keep " + std::to_string(dc.keep) + " levels of the " + std::to_string(levels) + " of U-Net '" +
                            c.get_string("name", "unet") + "': keep from 1 to " + std::to_string(levels - 1) +
                            " so that some deeper level is reused"};
      continue;
    }
    if (type != "expert" && type != "dit") continue;
    ++experts;
    const long long depth = c.get_int("depth", 0);
    if (2LL * dc.keep >= depth)
      return {"keep", "keep " + std::to_string(dc.keep) + " blocks at each end leaves none of the " +
                          std::to_string(depth) + " blocks of '" + c.get_string("name", "expert") + "' to reuse"};
  }
  if (experts == 0)
    return {"", "dp_cache applies to a diffusion or flow action head (component type expert, dit or unet1d); card '" +
                    card.name + "' has none"};
  bool any = false;
  for (int t = dc.start; t < dc.end && !any; ++t) any = dc.cached(t);
  if (!any)
    return {"", "caches no step: the window " + window + " with interval " + std::to_string(dc.interval) +
                    " runs every step fully"};
  return {};
}

ModelCard load_card(const std::string& path) {
  return parse_card(ConfigNode::load_file(path), path);
}

ModelCard load_card_text(const std::string& text, const std::string& path) {
  ConfigNode root = ConfigNode::load_string(text, path);
  if (!root.defined()) throw ConfigError(path, 0, 0, "", "file is empty");
  return parse_card(root, path);
}

ModelCard parse_card(const ConfigNode& document, const std::string& path) {
  ModelCard card;
  card.file = path;
  card.node = document;
  const ConfigNode& root = card.node;
  if (!root.is_map()) root.fail("a model card must be a map");
  root.check_keys(kCardKeys);
  ConfigNode name = root.required("name");
  card.name = name.as_string();
  const std::string stem = std::filesystem::path(path).stem().string();
  if (card.name != stem)
    name.fail("card name '" + card.name + "' must match its file name '" + stem + "'");
  card.description = root.required("description").as_string();

  ConfigNode d = root.required("defaults");
  d.check_keys({"views", "prompt", "chunk", "steps", "batch", "dtype"});
  card.defaults.views = int(d.get_count("views", 1, 1, kMaxViews));
  card.defaults.prompt = int(d.get_count("prompt", 0, 0, kMaxPrompt));
  card.defaults.chunk = int(d.get_count("chunk", 1, 1, kMaxChunk));
  card.defaults.steps = int(d.get_count("steps", 1, 1, kMaxSteps));
  card.defaults.batch = int(d.get_count("batch", 1, 1, kMaxBatch));
  if (ConfigNode dt = d.optional("dtype"); dt.defined() &&
                                           !parse_dtype(dt.as_string(), &card.defaults.dtype))
    dt.fail("unknown dtype '" + dt.as_string() + "'; valid are: fp32, bf16, fp16, int8");
  const long long max_views = root.get_count("max_views", card.defaults.views, 1, kMaxViews);
  if (card.defaults.views > max_views)
    d.required("views").fail("default views " + std::to_string(card.defaults.views) +
                             " exceed max_views " + std::to_string(max_views));
  for (const char* k : {"max_prompt", "max_chunk"}) root.get_count(k, 1, 0);
  if (card.defaults.prompt > root.get_int("max_prompt", 1 << 20))
    d.required("prompt").fail("default prompt exceeds max_prompt");
  if (card.defaults.chunk > root.get_int("max_chunk", 1 << 20))
    d.required("chunk").fail("default chunk exceeds max_chunk");

  ConfigNode comps = root.required("components");
  std::vector<ConfigNode> items = comps.items();
  if (items.empty()) comps.fail("a card needs at least one component");
  std::vector<std::string> seen;
  std::vector<ConfigNode> earlier;
  for (const ConfigNode& c : items) {
    if (!c.is_map()) c.fail("a component must be a map");
    ConfigNode type = c.required("type");
    const detail::ComponentType* t = detail::find_component_type(type.as_string());
    if (!t)
      type.fail("unknown component type '" + type.as_string() + "'; valid types are: " +
                join_names(type_names()));
    std::vector<std::string> keys = kCommonKeys;
    keys.insert(keys.end(), t->keys.begin(), t->keys.end());
    c.check_keys(keys);
    ConfigNode cname = c.required("name");
    if (std::find(seen.begin(), seen.end(), cname.as_string()) != seen.end())
      cname.fail("duplicate component name '" + cname.as_string() + "'");
    seen.push_back(cname.as_string());
    if (ConfigNode dt = c.optional("dtype"); dt.defined()) {
      DType parsed;
      if (!parse_dtype(dt.as_string(), &parsed))
        dt.fail("unknown dtype '" + dt.as_string() + "'; valid are: fp32, bf16, fp16, int8");
    }
    check_weights_from(c, *t, earlier);
    earlier.push_back(c);
    if (ConfigNode st = c.optional("stage"); st.defined()) {
      Stage s;
      if (!parse_stage(st.as_string(), &s))
        st.fail("unknown stage '" + st.as_string() +
                "'; valid are: vision, prefix, action, decode, head");
    }
  }
  if (ConfigNode ps = root.optional("passes"); ps.defined()) {
    if (!ps.is_sequence()) ps.fail("expected a list of pass names, e.g. [qkv_fuse, gateup_fuse]");
    std::vector<std::string> names;
    for (const ConfigNode& i : ps.items()) names.push_back(i.as_string());
    card.defaults.passes = names;
    try {
      if (const PassesProblem p = passes_problem(card, names, card.defaults); p.index >= 0)
        ps.items()[size_t(p.index)].fail(p.why);
    } catch (const GraphTooLarge& e) {
      root.fail("card '" + card.name + "' at its defaults: " + e.what());
    }
  } else {
    // The builder passes that apply: the graph the builder made before passes were switchable.
    std::vector<std::string> builder = {"qkv_fuse", "gateup_fuse", "epilogue_fuse"};
    for (const ConfigNode& c : items)
      if (c.get_bool("kv_only_last", false)) builder.push_back("last_layer_skip");
    RunShape probe = card.defaults;
    probe.passes = builder;
    std::map<std::string, int> sites;
    try {
      build(card, resolve(card, probe), &sites);
    } catch (const GraphTooLarge& e) {
      root.fail("card '" + card.name + "' at its defaults: " + e.what());
    }
    card.defaults.passes = std::vector<std::string>{};
    for (const std::string& p : builder)
      if (sites[p] > 0) card.defaults.passes->push_back(p);
  }
  // Everything that depends on several components (widths, depths) was checked by the build
  // above, at the defaults (a builder pass without sites changes nothing it builds).
  return card;
}

ModelCard find_card(const std::string& dir, const std::string& name, const ConfigNode& where) {
  bool inside = !name.empty();
  for (size_t start = 0; inside && start <= name.size();) {
    const size_t end = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, end - start);
    inside = !part.empty() && part != "." && part != ".." &&
             part.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789_-.") == std::string::npos;
    start = end + 1;
  }
  if (!inside)
    where.fail("'" + name + "' is not a card name: a card is a name in " + dir +
               " (subfolders with '/', no '..' or absolute paths); cards are: " +
               join_names(card_names(dir)));
  const std::filesystem::path p = std::filesystem::path(dir) / (name + ".yaml");
  if (!std::filesystem::exists(p))
    where.fail("no model card '" + name + "' in " + dir + "; cards are: " +
               join_names(card_names(dir)));
  return load_card(p.string());
}

std::vector<std::string> card_names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".yaml")
      out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

PassesProblem passes_problem(const ModelCard& card, const std::vector<std::string>& names,
                             const RunShape& shape) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (!find_pass(names[i]))
      return {int(i), "unknown pass '" + names[i] + "'; valid are: " + join_names(pass_names())};
    for (size_t j = 0; j < i; ++j)
      if (names[j] == names[i]) return {int(i), "pass '" + names[i] + "' is listed twice"};
  }
  RunShape r = shape;
  r.passes = names;
  std::map<std::string, int> sites;
  build(card, resolve(card, r), &sites);
  for (size_t i = 0; i < names.size(); ++i)
    if (sites[names[i]] == 0)
      return {int(i), "pass '" + names[i] + "' does not apply to card '" + card.name + "': " +
                          find_pass(names[i])->not_applicable};
  return {};
}

OpGraph build_graph(const ModelCard& card, const RunShape& shape) {
  const RunShape r = resolve(card, shape);
  std::map<std::string, int> sites;
  OpGraph g = build(card, r, &sites);
  for (const std::string& p : *r.passes)
    if (sites[p] == 0)
      shape_error(card, "passes", "passes", "pass '" + p + "' does not apply to card '" + card.name + "': " +
                                                find_pass(p)->not_applicable);
  return g;
}

namespace {

OpGraph build(const ModelCard& card, const RunShape& shape, std::map<std::string, int>* sites) {
  OpGraph g;
  detail::Ctx c{.g = g, .card = card, .shape = shape};
  c.skippable_decoders = skippable_decoders(card);
  c.eb = dtype_bytes(c.shape.dtype);
  g.model = card.name;
  g.views = c.shape.views;
  g.prompt = c.shape.prompt;
  g.chunk = c.shape.chunk;
  g.steps = c.shape.steps;
  g.batch = c.shape.batch;
  std::map<std::string, double> weight_bytes;  // weight id -> bytes, as first built
  for (const ConfigNode& n : card.node.required("components").items()) {
    const detail::ComponentType* t = detail::find_component_type(n.required("type").as_string());
    if (!t) n.required("type").fail("unknown component type");
    Stage stage = t->stage;
    if (ConfigNode st = n.optional("stage"); st.defined() && !parse_stage(st.as_string(), &stage))
      st.fail("unknown stage '" + st.as_string() + "'");
    const std::string name = n.required("name").as_string();
    if (ConfigNode wf = n.optional("weights_from"); wf.defined()) {
      const std::string from = wf.as_string();
      auto it = c.weight_owner.find(from);
      c.weight_owner[name] = it != c.weight_owner.end() ? it->second : from;
    }
    // A component's own dtype overrides the run's for its ops (element bytes and the matrix
    // rate they are costed at); tensors crossing into it are not charged a cast.
    const DType run_dtype = c.shape.dtype;
    if (ConfigNode dt = n.optional("dtype"); dt.defined() && !parse_dtype(dt.as_string(), &c.shape.dtype))
      dt.fail("unknown dtype '" + dt.as_string() + "'");
    c.eb = dtype_bytes(c.shape.dtype);
    const size_t first_op = g.size();
    t->build(c, n, name, stage);
    c.shape.dtype = run_dtype;
    c.eb = dtype_bytes(run_dtype);
    c.order.push_back(name);
    // Ops that share a weight id must agree on its size (a borrowed weight read at another
    // width or dtype would make memory depend on which op is counted first).
    for (size_t i = first_op; i < g.size(); ++i) {
      const Op& o = g.op(int(i));
      if (o.weight_id.empty()) continue;
      auto [it, fresh] = weight_bytes.emplace(o.weight_id, o.weight_bytes);
      if (!fresh && it->second != o.weight_bytes) {
        ConfigNode at = n.optional("weights_from");
        if (!at.defined()) at = n.required("name");
        at.fail("op '" + o.name + "' shares weights '" + o.weight_id + "' of " +
                std::to_string(static_cast<long long>(it->second)) + " bytes but needs " +
                std::to_string(static_cast<long long>(o.weight_bytes)) +
                " (its inputs or dtype differ from the owner's)");
      }
    }
  }
  if (c.shape.dp_cache.on() && !c.dp_cache_used)
    card.node.required("components").fail("dp_cache applies to a diffusion or flow action head (component type "
                                          "expert, dit or unet1d); card '" + card.name + "' has none");
  g.prefix_tokens = c.prefix_tokens;
  g.suffix_tokens = c.suffix_tokens;
  *sites = c.sites;
  for (const std::string& name : ordered_passes(*shape.passes))
    if (const GraphPass* p = find_pass(name); p && p->rewrite) (*sites)[name] = p->rewrite(g);
  return g;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> card_component_types() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& t : detail::component_types()) out.emplace_back(t.type, t.description);
  return out;
}

std::string default_cards_dir() {
  return find_data_dir("VLASIM_CARDS", "cards", VLASIM_CARDS_DIR);
}

}  // namespace vlasim
