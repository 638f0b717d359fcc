#include "sim/measured/profile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "scenarios/config/config.h"

namespace vlasim {

using nlohmann::json;

// ---------------------------------------------------------------------------------------
// Signatures and work features

std::string op_signature(const Op& o) {
  std::ostringstream s;
  s << to_string(o.kind) << "/" << to_string(o.fn) << "/" << to_string(o.dtype) << "/";
  switch (o.kind) {
    case OpKind::Gemm:
      s << "m=" << o.m << ",n=" << o.n << ",k=" << o.k << ",batch=" << o.batch
        << ",bias=" << o.epi.bias << ",act=" << to_string(o.epi.act) << ",gate_up=" << o.epi.gate_up
        << ",residual=" << o.epi.residual << ",gate=" << o.epi.gate;
      if (o.epi.rope()) s << ",rope=" << o.epi.rope_cols << "/" << o.epi.rope_head_dim;
      break;
    case OpKind::Attention:
      s << "batch=" << o.batch << ",heads=" << o.heads << ",kv_heads=" << o.kv_heads
        << ",head_dim=" << o.head_dim << ",q_len=" << o.q_len << ",kv_len=" << o.kv_len
        << ",kv_cached=" << o.kv_cached << ",window=" << o.window << ",causal=" << o.causal;
      break;
    case OpKind::Embedding:
      s << "rows=" << o.rows << ",width=" << o.width << ",vocab=" << o.vocab;
      break;
    case OpKind::Elementwise:
      s << "rows=" << o.rows << ",width=" << o.width;
      if (o.fn == OpFn::RoPE)
        s << ",batch=" << o.batch << ",heads=" << o.heads << ",kv_heads=" << o.kv_heads
          << ",head_dim=" << o.head_dim;
      break;
    case OpKind::Norm:
    case OpKind::Transfer:
      s << "rows=" << o.rows << ",width=" << o.width;
      if (o.scale_folded) s << ",scale_folded=1";
      break;
  }
  return s.str();
}

OpWork op_work(const Op& o) {
  const double eb = dtype_bytes(o.dtype);
  OpWork w;
  switch (o.kind) {
    case OpKind::Gemm: {
      const double rows = double(o.batch) * double(o.m);
      const double out_n = o.epi.gate_up ? double(o.n / 2) : double(o.n);
      w.flops = 2.0 * rows * double(o.n) * double(o.k);
      w.bytes = eb * (rows * double(o.k) + double(o.k) * double(o.n) + rows * out_n);
      if (o.epi.bias) w.bytes += eb * double(o.n);
      if (o.epi.residual) w.bytes += eb * rows * out_n;
      if (o.epi.gate) w.bytes += eb * rows * out_n;
      break;
    }
    case OpKind::Attention: {
      double kv_eff = double(o.kv_len);
      if (o.causal) kv_eff = double(o.kv_len - o.q_len) + double(o.q_len + 1) / 2.0;
      if (o.window > 0) kv_eff = std::min(kv_eff, double(o.window));
      const double bh = double(o.batch) * double(o.heads);
      w.flops = 4.0 * bh * double(o.q_len) * kv_eff * double(o.head_dim);
      w.bytes = eb * (2.0 * bh * double(o.q_len) * double(o.head_dim) +
                      2.0 * double(o.batch) * double(o.kv_heads) * double(o.kv_len) * double(o.head_dim)) +
                bh * double(o.q_len) * double(o.kv_len) * (4.0 + eb);
      break;
    }
    case OpKind::Norm: {
      const double e = double(o.rows) * double(o.width);
      w.flops = 5.0 * e;
      w.bytes = eb * (2.0 * e + 2.0 * double(o.width));
      break;
    }
    case OpKind::Elementwise: {
      const double e = double(o.rows) * double(o.width);
      double per = 1, inputs = 1;
      switch (o.fn) {
        case OpFn::Add: case OpFn::Mul: case OpFn::Sub: inputs = 2; break;
        case OpFn::EulerUpdate: per = 2; inputs = 2; break;
        case OpFn::Gelu: per = 8; break;
        case OpFn::Silu: per = 4; break;
        case OpFn::Softmax: per = 5; break;
        case OpFn::RoPE: per = 6; break;
        case OpFn::Copy: per = 0; break;
        default: break;
      }
      w.flops = per * e;
      w.bytes = eb * (inputs + 1.0) * e;
      break;
    }
    case OpKind::Embedding:
      w.bytes = eb * 2.0 * double(o.rows) * double(o.width) + 4.0 * double(o.rows);
      break;
    case OpKind::Transfer:
      w.bytes = 2.0 * std::max(o.out_bytes, eb * double(o.rows) * double(o.width));
      break;
  }
  return w;
}

// ---------------------------------------------------------------------------------------
// Fitting

const char* to_string(FitForm f) { return f == FitForm::Roofline ? "roofline" : "linear"; }

double FitModel::predict(const OpWork& w) const {
  const double c = w.flops * s_per_flop, m = w.bytes * s_per_byte;
  const double t = overhead_s + (form == FitForm::Roofline ? std::max(c, m) : c + m);
  return std::max(t, 1e-9);
}

namespace {

struct Pt {
  double f, b, t;
};

// Least squares on relative error over the columns in `mask` (bit 0: constant, 1: flops,
// 2: bytes) of rows x[i] (already chosen per row), coefficients >= 0, by enumerating the
// subsets of `mask`. Returns false when no subset gives a non-negative solution.
bool nnls3(const std::vector<std::array<double, 3>>& x, const std::vector<double>& t,
           std::array<double, 3>* best) {
  double best_err = INFINITY;
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<int> cols;
    for (int j = 0; j < 3; ++j)
      if (mask & (1 << j)) cols.push_back(j);
    const size_t k = cols.size();
    // Column scales (of the relative-error rows) for conditioning.
    std::array<double, 3> scale{0, 0, 0};
    for (size_t i = 0; i < x.size(); ++i)
      for (size_t a = 0; a < k; ++a) scale[a] += std::pow(x[i][cols[a]] / t[i], 2);
    bool zero = false;
    for (size_t a = 0; a < k; ++a) {
      scale[a] = std::sqrt(scale[a]);
      if (scale[a] <= 0) zero = true;
    }
    if (zero) continue;
    double A[3][4] = {};
    for (size_t i = 0; i < x.size(); ++i) {
      double r[3];
      for (size_t a = 0; a < k; ++a) r[a] = x[i][cols[a]] / t[i] / scale[a];
      for (size_t a = 0; a < k; ++a) {
        for (size_t b = 0; b < k; ++b) A[a][b] += r[a] * r[b];
        A[a][3] += r[a];  // target 1 after dividing by t
      }
    }
    bool singular = false;
    for (size_t c = 0; c < k && !singular; ++c) {
      size_t p = c;
      for (size_t r = c + 1; r < k; ++r)
        if (std::fabs(A[r][c]) > std::fabs(A[p][c])) p = r;
      if (std::fabs(A[p][c]) < 1e-12) {
        singular = true;
        break;
      }
      for (int q = 0; q < 4; ++q) std::swap(A[c][q], A[p][q]);
      for (size_t r = 0; r < k; ++r) {
        if (r == c) continue;
        const double f = A[r][c] / A[c][c];
        for (int q = 0; q < 4; ++q) A[r][q] -= f * A[c][q];
      }
    }
    if (singular) continue;
    std::array<double, 3> coef{0, 0, 0};
    bool neg = false;
    for (size_t a = 0; a < k; ++a) {
      coef[cols[a]] = A[a][3] / A[a][a] / scale[a];
      if (coef[cols[a]] < 0) neg = true;
    }
    if (neg) continue;
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double p = coef[0] * x[i][0] + coef[1] * x[i][1] + coef[2] * x[i][2];
      err += std::pow(p / t[i] - 1, 2);
    }
    if (err < best_err) {
      best_err = err;
      *best = coef;
    }
  }
  return std::isfinite(best_err);
}

double sq_rel_error(const FitModel& m, const std::vector<Pt>& pts) {
  double e = 0;
  for (const Pt& p : pts) e += std::pow(m.predict({p.f, p.b}) / p.t - 1, 2);
  return e;
}

FitModel fit_form(FitForm form, const std::vector<Pt>& pts) {
  FitModel m;
  m.form = form;
  m.points = static_cast<int>(pts.size());
  std::vector<double> t;
  for (const Pt& p : pts) t.push_back(p.t);
  auto from = [&](const std::array<double, 3>& c) {
    FitModel r = m;
    r.overhead_s = c[0];
    r.s_per_flop = c[1];
    r.s_per_byte = c[2];
    return r;
  };
  if (form == FitForm::Linear) {
    std::vector<std::array<double, 3>> x;
    for (const Pt& p : pts) x.push_back({1.0, p.f, p.b});
    std::array<double, 3> c{0, 0, 0};
    if (nnls3(x, t, &c)) return from(c);
    return m;
  }
  // Roofline: with flops * u >= bytes * v exactly for the points of arithmetic intensity
  // f/b above a threshold, try every threshold, fit the piecewise-linear system, and keep
  // the split whose max-form model has the lowest error; then reassign points by the
  // fitted max and refit until the assignment stops changing.
  std::vector<size_t> order(pts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto intensity = [&](size_t i) { return pts[i].b > 0 ? pts[i].f / pts[i].b : INFINITY; };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return intensity(a) < intensity(b); });
  auto fit_split = [&](const std::vector<bool>& compute, FitModel* out) {
    std::vector<std::array<double, 3>> x;
    for (size_t i = 0; i < pts.size(); ++i)
      x.push_back({1.0, compute[i] ? pts[i].f : 0.0, compute[i] ? 0.0 : pts[i].b});
    std::array<double, 3> c{0, 0, 0};
    if (!nnls3(x, t, &c)) return false;
    *out = from(c);
    return true;
  };
  FitModel best = m;
  double best_err = INFINITY;
  for (size_t s = 0; s <= order.size(); ++s) {
    if (s > 0 && s < order.size() && intensity(order[s]) == intensity(order[s - 1])) continue;
    std::vector<bool> compute(pts.size(), false);
    for (size_t r = s; r < order.size(); ++r) compute[order[r]] = true;
    FitModel cand;
    if (!fit_split(compute, &cand)) continue;
    double e = sq_rel_error(cand, pts);
    if (e < best_err) {
      best_err = e;
      best = cand;
    }
  }
  for (int iter = 0; iter < 20 && std::isfinite(best_err); ++iter) {
    std::vector<bool> compute(pts.size());
    for (size_t i = 0; i < pts.size(); ++i)
      compute[i] = pts[i].f * best.s_per_flop >= pts[i].b * best.s_per_byte;
    FitModel cand;
    if (!fit_split(compute, &cand)) break;
    double e = sq_rel_error(cand, pts);
    if (!(e < best_err * (1 - 1e-12))) break;
    best_err = e;
    best = cand;
  }
  return best;
}

double mean_abs_rel(const FitModel& m, const std::vector<Pt>& pts) {
  double e = 0;
  for (const Pt& p : pts) e += std::fabs(m.predict({p.f, p.b}) / p.t - 1);
  return pts.empty() ? 0 : e / double(pts.size());
}

// k-fold (k = min(5, n)) cross-validated mean |pred / t - 1|; -1 with fewer than 2 points.
double cross_validate(FitForm form, const std::vector<Pt>& pts) {
  const size_t n = pts.size();
  if (n < 2) return -1;
  const size_t k = std::min<size_t>(5, n);
  double e = 0;
  for (size_t fold = 0; fold < k; ++fold) {
    std::vector<Pt> train, test;
    for (size_t i = 0; i < n; ++i) (i % k == fold ? test : train).push_back(pts[i]);
    FitModel m = fit_form(form, train);
    for (const Pt& p : test) e += std::fabs(m.predict({p.f, p.b}) / p.t - 1);
  }
  return e / double(n);
}

}  // namespace

FitModel fit_times(const std::vector<const Measurement*>& points) {
  if (points.empty()) throw std::invalid_argument("fit_times: no points");
  std::vector<Pt> pts;
  for (const Measurement* m : points) pts.push_back({m->work.flops, m->work.bytes, m->median_s});
  const double cv_r = cross_validate(FitForm::Roofline, pts);
  const double cv_l = cross_validate(FitForm::Linear, pts);
  const FitForm form = cv_l >= 0 && cv_l < cv_r ? FitForm::Linear : FitForm::Roofline;
  FitModel m = fit_form(form, pts);
  m.cv_roofline = cv_r;
  m.cv_linear = cv_l;
  m.fit_error = mean_abs_rel(m, pts);
  return m;
}

// ---------------------------------------------------------------------------------------
// Sections

void ProfileSection::refit() {
  fits.clear();
  std::map<std::string, std::vector<const Measurement*>> groups;
  for (const auto& [sig, m] : table) {
    groups[std::string(to_string(m.kind)) + "/" + to_string(m.fn)].push_back(&m);
    groups[std::string(to_string(m.kind)) + "/*"].push_back(&m);
  }
  for (const auto& [key, pts] : groups) fits[key] = fit_times(pts);
}

const Measurement* ProfileSection::exact(const Op& op) const {
  auto it = table.find(op_signature(op));
  return it == table.end() ? nullptr : &it->second;
}

const FitModel* ProfileSection::fit_for(const Op& op) const {
  auto it = fits.find(std::string(to_string(op.kind)) + "/" + to_string(op.fn));
  if (it != fits.end() && it->second.points >= 3) return &it->second;
  auto fn_fit = it;
  it = fits.find(std::string(to_string(op.kind)) + "/*");
  if (it != fits.end()) return &it->second;
  return fn_fit == fits.end() ? nullptr : &fn_fit->second;
}

const HostGroupBandwidth* HostEntry::group(int cores) const {
  for (const HostGroupBandwidth& g : groups)
    if (g.cores == cores) return &g;
  return nullptr;
}

double HostEntry::core_bw() const { return groups.empty() ? 0 : groups.front().alone_bw / groups.front().cores; }

double HostEntry::core_bw_loaded(int cpus) const { return cpus > 0 ? node_bw / cpus : 0; }

const CorunSlowdown* HostEntry::corun_for(const std::string& key) const {
  auto it = std::lower_bound(corun.begin(), corun.end(), key,
                             [](const CorunSlowdown& c, const std::string& k) { return c.key < k; });
  return it != corun.end() && it->key == key ? &*it : nullptr;
}

void HostEntry::merge_corun(const std::vector<CorunSlowdown>& more) {
  std::map<std::string, CorunSlowdown> by_key;
  for (const CorunSlowdown& c : corun) by_key[c.key] = c;
  for (const CorunSlowdown& c : more) by_key[c.key] = c;
  corun.clear();
  for (auto& [k, c] : by_key) corun.push_back(c);
}

double curve_llc_bytes(const HostEntry& h) {
  const auto& c = h.curve;
  if (c.size() < 3) return 0;
  const double plateau = c.back().second, before = c[c.size() - 2].second;
  if (std::abs(before / plateau - 1) > 0.15) return 0;  // still falling at the largest size
  for (size_t i = c.size() - 1; i-- > 0;)
    if (c[i].second >= 1.3 * plateau) return c[i].first;
  return 0;
}

std::string llc_problem(const HostEntry& h) {
  if (!(h.llc_bytes > 0)) return "";
  const int sharing = std::max(1, h.llc_shared_cpus);
  char b[320];
  if (h.llc_bytes / sharing <= kMaxLlcPerCpu) {
    const double fits = curve_llc_bytes(h);
    if (!(fits > 0)) return "";
    size_t i = 0;  // the first size past the last fast one
    while (i < h.curve.size() && h.curve[i].first <= fits) ++i;
    if (i >= h.curve.size() || h.curve[i].first > h.llc_bytes / 2) return "";
    std::snprintf(b, sizeof b,
                  "one core's triad falls from %.1f GB/s at %.0f MiB to memory's %.1f GB/s by %.0f MiB, so it "
                  "gets far less cache than the %.0f MiB sysfs reports",
                  h.curve[i - 1].second / 1e9, h.curve[i - 1].first / 1048576, h.curve.back().second / 1e9,
                  h.curve[i].first / 1048576, h.llc_bytes / 1048576);
    return b;
  }
  std::snprintf(b, sizeof b,
                "%.0f MiB shared by %d CPU(s) is %.0f MiB per CPU, more than any real CPU gives one (at most %.0f "
                "MiB); a virtual machine's sysfs shows its physical host's whole cache, not the share this guest "
                "gets",
                h.llc_bytes / 1048576, sharing, h.llc_bytes / sharing / 1048576, kMaxLlcPerCpu / 1048576);
  return b;
}

double SentinelRecord::drift() const {
  if (samples.size() < 2) return 0;
  return samples.back().second / samples.front().second - 1;
}

double SentinelRecord::max_deviation() const {
  double m = 0;
  for (const auto& [t, s] : samples) m = std::max(m, std::abs(s / samples.front().second - 1));
  return m;
}

double SentinelRecord::median_s() const {
  if (samples.empty()) return 0;
  std::vector<double> v;
  for (const auto& [t, s] : samples) v.push_back(s);
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double SentinelRecord::idle_s() const {
  if (samples.empty()) return 0;
  return (samples.front().second + samples.back().second) / 2;
}

void apply_host_entry(DeviceSpec& spec, const HostEntry& h, int cpus) {
  spec.core_bw = h.core_bw();
  spec.mem_bw = h.node_bw / std::max(1, spec.numa_nodes);
  // One core never pulls more with others streaming than alone (noise can say otherwise).
  spec.core_bw_loaded = std::min(spec.core_bw, h.core_bw_loaded(cpus));
  if (h.llc_bytes > 0 && llc_problem(h).empty()) spec.l2_bytes = h.llc_bytes;
  else if (h.llc_bytes > 0 && curve_llc_bytes(h) > 0) spec.l2_bytes = curve_llc_bytes(h);
  spec.corun_slowdown.clear();
  for (const CorunSlowdown& c : h.corun) spec.corun_slowdown[c.key] = c.slowdown;
}

std::string host_entry_text(const HostEntry& h, int cpus) {
  if (h.empty()) return "host entry: not measured (vlasim calibrate writes one; the catalog CPU stands for this machine)\n";
  std::ostringstream o;
  char buf[200];
  o << "host entry (measured by calibrate; stands for the catalog CPU on this machine):\n";
  for (const HostGroupBandwidth& g : h.groups) {
    std::snprintf(buf, sizeof buf, "  %d-core group: %.2f GB/s alone, %.2f GB/s with every other CPU streaming (x%.2f)\n",
                  g.cores, g.alone_bw / 1e9, g.loaded_bw / 1e9, g.alone_bw / g.loaded_bw);
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "  all %d CPUs together: %.2f GB/s; per core %.2f GB/s alone, %.2f GB/s loaded\n", cpus,
                h.node_bw / 1e9, h.core_bw() / 1e9, h.core_bw_loaded(cpus) / 1e9);
  o << buf;
  if (h.llc_bytes > 0) {
    std::snprintf(buf, sizeof buf, "  last-level cache: %.1f MB shared by %d of the allowed CPUs\n", h.llc_bytes / 1e6,
                  h.llc_shared_cpus);
    o << buf;
    if (std::string why = llc_problem(h); !why.empty()) {
      const double fits = curve_llc_bytes(h);
      o << "  last-level cache implausible, not used (" << (fits > 0 ? "the bandwidth curve's estimate stands in" : "the catalog CPU's stays")
        << "): " << why << "\n";
    }
  } else {
    o << "  last-level cache: unknown (sysfs says nothing)\n";
  }
  if (!h.curve.empty()) {
    o << "  one core's triad by working set:";
    for (const auto& [bytes, bw] : h.curve) {
      std::snprintf(buf, sizeof buf, " %.0f MiB %.1f GB/s;", bytes / 1048576, bw / 1e9);
      o << buf;
    }
    const double fits = curve_llc_bytes(h);
    if (fits > 0) {
      std::snprintf(buf, sizeof buf, " cache it gets: about %.0f MiB", fits / 1048576);
      o << buf;
    } else {
      o << " (no fall to a memory plateau within these sizes)";
    }
    o << "\n";
  }
  if (h.freq_hz > 0) {
    std::snprintf(buf, sizeof buf, "  clock under load: %.0f MHz\n", h.freq_hz / 1e6);
    o << buf;
  } else {
    o << "  clock under load: not readable here\n";
  }
  if (h.corun.empty()) {
    o << "  co-run slowdowns of segments: none measured (calibrate --in-context with scenarios whose core groups "
         "run at once measures them; the bandwidth model above stands in)\n";
  } else {
    o << "  co-run slowdowns of segments (measured in context with every other core busy; the engine uses them "
         "for these segments of these scenarios):\n";
    for (const CorunSlowdown& c : h.corun) {
      std::snprintf(buf, sizeof buf, "    x%.3f  %s  (%d runs, %.0f%% overlapped; key %s)\n", c.slowdown,
                    c.segment.c_str(), c.runs, 100 * c.overlap, c.key.c_str());
      o << buf;
    }
  }
  return o.str();
}

double MemcpyFit::seconds(double bytes) const {
  if (points.empty()) return latency_s + bytes / bytes_per_s;
  if (bytes <= points.front().first) return points.front().second;
  for (size_t i = 1; i < points.size(); ++i)
    if (bytes <= points[i].first) {
      const auto& [b0, t0] = points[i - 1];
      const auto& [b1, t1] = points[i];
      return t0 + (bytes - b0) / (b1 - b0) * (t1 - t0);
    }
  return points.back().second + (bytes - points.back().first) / bytes_per_s;
}

const ProfileSection* DeviceProfile::section(int t, DType d) const {
  for (const ProfileSection& s : sections)
    if (s.threads == t && s.dtype == d) return &s;
  return nullptr;
}

// ---------------------------------------------------------------------------------------
// JSON

namespace {

json work_json(const OpWork& w) { return json{{"flops", w.flops}, {"bytes", w.bytes}}; }

json fit_json(const FitModel& f) {
  return json{{"form", to_string(f.form)},     {"overhead_s", f.overhead_s},
              {"s_per_flop", f.s_per_flop},   {"s_per_byte", f.s_per_byte},
              {"points", f.points},           {"cv_roofline", f.cv_roofline},
              {"cv_linear", f.cv_linear},     {"fit_error", f.fit_error}};
}

// A JSON value with its key path, for precise errors.
class At {
 public:
  At(const json& j, std::string file, std::string path) : j_(j), file_(std::move(file)), path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& msg) const { throw ConfigError(file_, 0, 0, path_, msg); }

  At key(const std::string& k) const {
    if (!j_.is_object()) fail("expected an object");
    auto it = j_.find(k);
    if (it == j_.end()) At(j_, file_, child(k)).fail("missing");
    return At(*it, file_, child(k));
  }
  bool has(const std::string& k) const { return j_.is_object() && j_.contains(k); }
  std::vector<At> items() const {
    if (!j_.is_array()) fail("expected an array");
    std::vector<At> out;
    for (size_t i = 0; i < j_.size(); ++i) out.emplace_back(j_[i], file_, path_ + "[" + std::to_string(i) + "]");
    return out;
  }
  std::vector<std::pair<std::string, At>> entries() const {
    if (!j_.is_object()) fail("expected an object");
    std::vector<std::pair<std::string, At>> out;
    for (auto it = j_.begin(); it != j_.end(); ++it) out.emplace_back(it.key(), At(it.value(), file_, child(it.key())));
    return out;
  }
  void check_keys(const std::vector<std::string>& allowed) const {
    for (const auto& [k, v] : entries())
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        v.fail("unknown key; valid keys are: " + join_names(allowed));
  }
  std::string str() const {
    if (!j_.is_string()) fail("expected a string");
    return j_.get<std::string>();
  }
  bool boolean() const {
    if (!j_.is_boolean()) fail("expected true or false");
    return j_.get<bool>();
  }
  double num() const {
    if (!j_.is_number()) fail("expected a number");
    double v = j_.get<double>();
    if (!std::isfinite(v)) fail("expected a finite number");
    return v;
  }
  double nonneg() const {
    double v = num();
    if (v < 0) fail("must be >= 0");
    return v;
  }
  // A number from 0 to hi.
  double at_most(double hi) const {
    double v = nonneg();
    if (v > hi) fail("must be at most " + std::to_string(hi));
    return v;
  }
  // A measured figure within physical bounds: from lo to hi (inclusive), `what` saying the unit
  // and why ("bytes/s: 0.1 GB/s to 10 TB/s").
  double within(double lo, double hi, const std::string& what) const {
    const double v = num();
    if (lo > 0 && !(v > 0)) fail("must be > 0: from " + what);
    if (!(v >= lo && v <= hi)) fail("must be from " + what);
    return v;
  }
  double positive() const {
    double v = num();
    if (!(v > 0)) fail("must be > 0");
    return v;
  }
  int integer(int lo, int hi) const {
    if (!j_.is_number_integer()) fail("expected an integer");
    long long v = j_.get<long long>();
    if (v < lo || v > hi) fail("must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return static_cast<int>(v);
  }
  DType dtype() const {
    DType d;
    std::string s = str();
    if (!parse_dtype(s, &d)) fail("unknown dtype '" + s + "'; valid: fp32, bf16, fp16, int8");
    return d;
  }

 private:
  std::string child(const std::string& k) const { return path_.empty() ? k : path_ + "." + k; }
  const json& j_;
  std::string file_, path_;
};

OpKind parse_kind(const At& a) {
  std::string s = a.str();
  for (OpKind k : {OpKind::Gemm, OpKind::Attention, OpKind::Norm, OpKind::Elementwise,
                   OpKind::Embedding, OpKind::Transfer})
    if (s == to_string(k)) return k;
  a.fail("unknown op kind '" + s + "'");
}

OpFn parse_fn(const At& a) {
  std::string s = a.str();
  for (int i = static_cast<int>(OpFn::None); i <= static_cast<int>(OpFn::DeviceToDevice); ++i)
    if (s == to_string(static_cast<OpFn>(i))) return static_cast<OpFn>(i);
  a.fail("unknown op fn '" + s + "'");
}

FitModel parse_fit(const At& a) {
  a.check_keys({"form", "overhead_s", "s_per_flop", "s_per_byte", "points", "cv_roofline", "cv_linear", "fit_error"});
  FitModel f;
  std::string form = a.key("form").str();
  if (form == "roofline") f.form = FitForm::Roofline;
  else if (form == "linear") f.form = FitForm::Linear;
  else a.key("form").fail("unknown fit form '" + form + "'; valid: roofline, linear");
  // At most a second an op, a microsecond a FLOP or byte: past them no kernel was timed.
  f.overhead_s = a.key("overhead_s").at_most(1);
  f.s_per_flop = a.key("s_per_flop").at_most(1e-6);
  f.s_per_byte = a.key("s_per_byte").at_most(1e-6);
  f.points = a.key("points").integer(1, 1 << 30);
  f.cv_roofline = a.key("cv_roofline").num();
  f.cv_linear = a.key("cv_linear").num();
  f.fit_error = a.key("fit_error").nonneg();
  return f;
}

}  // namespace

std::string profile_to_json(const DeviceProfile& p) {
  json j;
  j["format"] = "vlasim-device-profile";
  j["version"] = DeviceProfile::kVersion;
  j["catalog_device"] = p.catalog_device;
  j["made_with"] = json{{"machine", p.machine},         {"logical_cpus", p.logical_cpus},
                        {"load_average", p.load_average},
                        {"executor", p.executor},       {"libraries", p.libraries},
                        {"date", p.date},               {"grid", p.grid},
                        {"repetitions", p.repetitions}, {"warmup", p.warmup}};
  if (!p.isa.empty()) j["made_with"]["isa"] = p.isa;
  if (p.graph) j["made_with"]["graph"] = true;
  j["threads"] = p.threads;
  json dts = json::array();
  for (DType d : p.dtypes) dts.push_back(to_string(d));
  j["dtypes"] = dts;
  json pts = json::array();
  for (const auto& [b, s] : p.memcpy.points) pts.push_back(json::array({b, s}));
  j["memcpy"] = json{{"link", p.memcpy.link},
                     {"latency_s", p.memcpy.latency_s},
                     {"bytes_per_s", p.memcpy.bytes_per_s},
                     {"points", pts}};
  if (!p.host.empty()) {
    json gs = json::array();
    for (const HostGroupBandwidth& g : p.host.groups)
      gs.push_back(json{{"cores", g.cores}, {"alone_bw", g.alone_bw}, {"loaded_bw", g.loaded_bw}});
    j["host"] = json{{"groups", gs},
                     {"node_bw", p.host.node_bw},
                     {"llc_bytes", p.host.llc_bytes},
                     {"llc_shared_cpus", p.host.llc_shared_cpus},
                     {"freq_hz", p.host.freq_hz}};
    if (!p.host.curve.empty()) {
      json cv = json::array();
      for (const auto& [bytes, bw] : p.host.curve) cv.push_back(json::array({bytes, bw}));
      j["host"]["curve"] = cv;
    }
    if (!p.host.corun.empty()) {
      json cs = json::array();
      for (const CorunSlowdown& c : p.host.corun)
        cs.push_back(json{{"key", c.key}, {"segment", c.segment}, {"runs", c.runs}, {"overlap", c.overlap},
                          {"slowdown", c.slowdown}});
      j["host"]["corun"] = cs;
    }
  }
  if (!p.sentinel.empty()) {
    json ss = json::array();
    for (const auto& [t, v] : p.sentinel.samples) ss.push_back(json::array({t, v}));
    j["sentinel"] = ss;
  }
  json secs = json::array();
  for (const ProfileSection& s : p.sections) {
    json js;
    js["threads"] = s.threads;
    js["dtype"] = to_string(s.dtype);
    js["executor_device"] = s.executor_device;
    json table = json::object();
    for (const auto& [sig, m] : s.table)
      table[sig] = json{{"kind", to_string(m.kind)}, {"fn", to_string(m.fn)},
                        {"work", work_json(m.work)}, {"median_s", m.median_s},
                        {"spread", m.spread},       {"reps", m.reps},
                        {"source", m.source}};
    js["table"] = table;
    json fits = json::object();
    for (const auto& [key, f] : s.fits) fits[key] = fit_json(f);
    js["fits"] = fits;
    js["skipped"] = s.skipped;
    if (s.op_overhead_s > 0) js["op_overhead_s"] = s.op_overhead_s;
    if (!s.service_quantiles.empty()) js["service_quantiles"] = s.service_quantiles;
    secs.push_back(js);
  }
  j["sections"] = secs;
  return j.dump(1) + "\n";
}

void save_profile(const DeviceProfile& p, const std::string& path) {
  write_output_file(path, profile_to_json(p));
}

namespace {

// A SAX pass that only checks every object's keys for repeats (nlohmann keeps the last
// silently) and turns a syntax error into a ConfigError naming the file. Linear in the text:
// nlohmann's callback parser, used for this before, rescans a parent array at each object's
// end and took quadratic time on a long array of objects (issue 28).
struct DuplicateKeyCheck : nlohmann::json_sax<json> {
  const std::string& name;
  std::vector<std::set<std::string>> keys;  // keys seen in each open object, innermost last
  explicit DuplicateKeyCheck(const std::string& n) : name(n) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    keys.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!keys.back().insert(k).second) throw ConfigError(name, 0, 0, k, "duplicate key in a JSON object");
    return true;
  }
  bool end_object() override {
    keys.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // parse_error, and out_of_range for a number past a double's range ("1e400")
    throw ConfigError(name, 0, 0, "", std::string("malformed JSON: ") + e.what());
  }
};

}  // namespace

namespace {

// Physical bounds of a host entry's measured figures (calibrate measures them): a bandwidth
// (a core group's, the node's, a point of the curve) from 0.1 GB/s to 10 TB/s, the LLC 0 or
// 64 KiB to 64 GiB, the clock 0 or 10 MHz to 100 GHz; a sentinel kernel at most 60 s, taken at
// most 1e7 s after the start.
constexpr double kMinHostBw = 1e8, kMaxHostBw = 1e13;
constexpr const char* kHostBwRange = "1e8 to 1e13 bytes/s (0.1 GB/s to 10 TB/s)";
constexpr double kMaxSentinelKernelS = 60, kMaxSentinelAtS = 1e7;

HostEntry parse_host_entry(const At& h) {
  h.check_keys({"groups", "node_bw", "llc_bytes", "llc_shared_cpus", "freq_hz", "curve", "corun"});
  HostEntry e;
  for (const At& ga : h.key("groups").items()) {
    ga.check_keys({"cores", "alone_bw", "loaded_bw"});
    HostGroupBandwidth g;
    g.cores = ga.key("cores").integer(1, 1 << 16);
    if (!e.groups.empty() && g.cores <= e.groups.back().cores)
      ga.key("cores").fail("groups must grow in cores (each size once)");
    g.alone_bw = ga.key("alone_bw").within(kMinHostBw, kMaxHostBw, kHostBwRange);
    g.loaded_bw = ga.key("loaded_bw").within(kMinHostBw, kMaxHostBw, kHostBwRange);
    e.groups.push_back(g);
  }
  if (e.groups.empty()) h.key("groups").fail("a host entry needs at least one measured core group");
  e.node_bw = h.key("node_bw").within(kMinHostBw, kMaxHostBw, kHostBwRange);
  e.llc_bytes = h.key("llc_bytes").nonneg();
  if (e.llc_bytes != 0 && !(e.llc_bytes >= 65536 && e.llc_bytes <= 68719476736.0 && e.llc_bytes == std::floor(e.llc_bytes)))
    h.key("llc_bytes").fail("must be 0 (not measured) or a whole number of bytes from 64 KiB to 64 GiB");
  e.llc_shared_cpus = h.key("llc_shared_cpus").integer(0, 1 << 20);
  e.freq_hz = h.key("freq_hz").nonneg();
  if (e.freq_hz != 0 && !(e.freq_hz >= 1e7 && e.freq_hz <= 1e11))
    h.key("freq_hz").fail("must be 0 (not measured) or from 1e7 to 1e11 Hz (10 MHz to 100 GHz)");
  if (h.has("curve"))
    for (const At& pt : h.key("curve").items()) {
      std::vector<At> v = pt.items();
      if (v.size() != 2) pt.fail("expected [working-set bytes, bytes/s]");
      const double bytes = v[0].positive();
      if (bytes > 1e13) v[0].fail("must be at most 1e13 bytes (10 TB)");
      if (!e.curve.empty() && bytes <= e.curve.back().first) v[0].fail("curve sizes must increase");
      e.curve.push_back({bytes, v[1].within(kMinHostBw, kMaxHostBw, kHostBwRange)});
    }
  if (h.has("corun"))
    for (const At& ca : h.key("corun").items()) {
      ca.check_keys({"key", "segment", "runs", "overlap", "slowdown"});
      CorunSlowdown c;
      c.key = ca.key("key").str();
      if (c.key.empty()) ca.key("key").fail("must not be empty");
      if (!e.corun.empty() && c.key <= e.corun.back().key)
        ca.key("key").fail("co-run keys must increase (each key once)");
      c.segment = ca.key("segment").str();
      c.runs = ca.key("runs").integer(1, 1 << 30);
      c.overlap = ca.key("overlap").positive();
      if (c.overlap > 1) ca.key("overlap").fail("must be at most 1 (a share of the segment's time)");
      c.slowdown = ca.key("slowdown").positive();
      if (c.slowdown > 100) ca.key("slowdown").fail("must be at most 100");
      e.corun.push_back(std::move(c));
    }
  return e;
}

SentinelRecord parse_sentinel(const At& a) {
  SentinelRecord r;
  for (const At& pt : a.items()) {
    std::vector<At> v = pt.items();
    if (v.size() != 2) pt.fail("expected [seconds since start, kernel seconds]");
    const double t = v[0].within(0, kMaxSentinelAtS, "0 to 1e7 seconds since the start (116 days)");
    if (!r.samples.empty() && t < r.samples.back().first) v[0].fail("sentinel samples must not go back in time");
    const double kernel = v[1].positive();
    if (kernel > kMaxSentinelKernelS) v[1].fail("must be at most 60 seconds (one sentinel kernel)");
    r.samples.push_back({t, kernel});
  }
  return r;
}

}  // namespace

void check_json_unique_keys(const std::string& text, const std::string& name) {
  DuplicateKeyCheck check(name);
  json::sax_parse(text, &check);
}

DeviceProfile parse_profile(const std::string& text, const std::string& name) {
  check_json_unique_keys(text, name);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw ConfigError(name, 0, 0, "", std::string("malformed JSON: ") + e.what());
  }
  At root(j, name, "");
  root.check_keys({"format", "version", "catalog_device", "made_with", "threads", "dtypes", "memcpy", "host",
                   "sentinel", "sections"});
  if (root.key("format").str() != "vlasim-device-profile")
    root.key("format").fail("not a vlasim device profile (expected 'vlasim-device-profile')");
  int version = root.key("version").integer(0, 1 << 20);
  if (version != DeviceProfile::kVersion)
    root.key("version").fail("profile format version " + std::to_string(version) +
                             " is not supported (this build reads version " +
                             std::to_string(DeviceProfile::kVersion) + "); recalibrate");
  DeviceProfile p;
  p.catalog_device = root.key("catalog_device").str();
  if (p.catalog_device.empty()) root.key("catalog_device").fail("must not be empty");
  At mw = root.key("made_with");
  mw.check_keys({"machine", "isa", "graph", "logical_cpus", "load_average", "executor", "libraries", "date", "grid",
                 "repetitions", "warmup"});
  p.machine = mw.key("machine").str();
  if (mw.has("isa")) p.isa = mw.key("isa").str();
  if (mw.has("graph")) p.graph = mw.key("graph").boolean();
  p.logical_cpus = mw.key("logical_cpus").integer(0, 1 << 20);
  p.load_average = mw.key("load_average").nonneg();
  p.executor = mw.key("executor").str();
  for (const auto& [k, v] : mw.key("libraries").entries()) p.libraries[k] = v.str();
  p.date = mw.key("date").str();
  p.grid = mw.key("grid").str();
  p.repetitions = mw.key("repetitions").integer(0, 1 << 20);
  p.warmup = mw.key("warmup").integer(0, 1 << 20);
  for (const At& t : root.key("threads").items()) p.threads.push_back(t.integer(1, 1 << 16));
  for (const At& d : root.key("dtypes").items()) p.dtypes.push_back(d.dtype());

  At mc = root.key("memcpy");
  mc.check_keys({"link", "latency_s", "bytes_per_s", "points"});
  p.memcpy.link = mc.key("link").str();
  p.memcpy.latency_s = mc.key("latency_s").nonneg();
  p.memcpy.bytes_per_s = mc.key("bytes_per_s").nonneg();
  if (!p.memcpy.link.empty() && !(p.memcpy.bytes_per_s > 0))
    mc.key("bytes_per_s").fail("must be > 0 when a link is named");
  for (const At& pt : mc.key("points").items()) {
    std::vector<At> v = pt.items();
    if (v.size() != 2) pt.fail("expected [bytes, seconds]");
    p.memcpy.points.push_back({v[0].positive(), v[1].positive()});
    const size_t n = p.memcpy.points.size();
    if (n > 1 && (p.memcpy.points[n - 1].first <= p.memcpy.points[n - 2].first ||
                  p.memcpy.points[n - 1].second < p.memcpy.points[n - 2].second))
      pt.fail("memcpy points must grow in bytes and not shrink in seconds");
  }

  if (root.has("host")) {
    p.host = parse_host_entry(root.key("host"));
    if (p.logical_cpus > 0 && p.host.groups.back().cores > p.logical_cpus)
      root.key("host").key("groups").fail("a group of " + std::to_string(p.host.groups.back().cores) +
                                          " cores, but the profile was made on " +
                                          std::to_string(p.logical_cpus) + " logical CPUs");
  }
  if (root.has("sentinel")) p.sentinel = parse_sentinel(root.key("sentinel"));

  for (const At& sa : root.key("sections").items()) {
    sa.check_keys({"threads", "dtype", "executor_device", "table", "fits", "skipped", "op_overhead_s",
                   "service_quantiles"});
    ProfileSection s;
    s.threads = sa.key("threads").integer(1, 1 << 16);
    s.dtype = sa.key("dtype").dtype();
    if (std::find(p.threads.begin(), p.threads.end(), s.threads) == p.threads.end())
      sa.key("threads").fail("thread count " + std::to_string(s.threads) + " is not listed in 'threads'");
    if (std::find(p.dtypes.begin(), p.dtypes.end(), s.dtype) == p.dtypes.end())
      sa.key("dtype").fail(std::string("dtype ") + to_string(s.dtype) + " is not listed in 'dtypes'");
    if (p.section(s.threads, s.dtype))
      sa.fail("a second section for " + std::to_string(s.threads) + " threads, " + to_string(s.dtype));
    s.executor_device = sa.key("executor_device").str();
    for (const auto& [sig, ma] : sa.key("table").entries()) {
      ma.check_keys({"kind", "fn", "work", "median_s", "spread", "reps", "source"});
      Measurement m;
      m.kind = parse_kind(ma.key("kind"));
      m.fn = parse_fn(ma.key("fn"));
      const std::string prefix = std::string(to_string(m.kind)) + "/" + to_string(m.fn) + "/" +
                                 to_string(s.dtype) + "/";
      if (sig.rfind(prefix, 0) != 0)
        ma.fail("signature does not start with '" + prefix + "' (its kind, fn and the section's dtype)");
      At wa = ma.key("work");
      wa.check_keys({"flops", "bytes"});
      m.work.flops = wa.key("flops").nonneg();
      m.work.bytes = wa.key("bytes").nonneg();
      m.median_s = ma.key("median_s").positive();
      m.spread = ma.key("spread").nonneg();
      m.reps = ma.key("reps").integer(1, 1 << 30);
      m.source = ma.key("source").str();
      if (m.source != "grid" && m.source != "graph" && m.source != "in-context" &&
          m.source.rfind("vidur:", 0) != 0 && m.source.rfind("apxinf:", 0) != 0 && m.source.rfind("trace:", 0) != 0)
        ma.key("source").fail("must be 'grid', 'graph', 'in-context' or an import's 'vidur:<file>:<line>' / "
                              "'apxinf:<file>:<line> ...' / 'trace:<file>:<op key>'");
      s.table[sig] = m;
    }
    for (const auto& [key, fa] : sa.key("fits").entries()) s.fits[key] = parse_fit(fa);
    for (const auto& [sig, why] : sa.key("skipped").entries()) s.skipped[sig] = why.str();
    if (sa.has("op_overhead_s")) s.op_overhead_s = sa.key("op_overhead_s").at_most(1);
    if (sa.has("service_quantiles")) {
      for (const At& q : sa.key("service_quantiles").items()) {
        const double v = q.positive();
        if (!s.service_quantiles.empty() && v < s.service_quantiles.back())
          q.fail("service quantiles must not decrease");
        s.service_quantiles.push_back(v);
      }
      if (s.service_quantiles.size() < 2)
        sa.key("service_quantiles").fail("needs at least 2 quantiles (the minimum and the maximum)");
    }
    p.sections.push_back(std::move(s));
  }
  if (p.sections.empty()) root.key("sections").fail("a profile needs at least one section");
  return p;
}

DeviceProfile load_profile(const std::string& path) {
  return parse_profile(read_input_file(path), path);
}

}  // namespace vlasim
