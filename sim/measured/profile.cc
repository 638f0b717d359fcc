#include "sim/measured/profile.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace vlasim {

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

bool SentinelRecord::disturbed() const { return others_cpu > kLoadTarget || steal > kLoadTarget; }

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
  if (h.empty()) return "host entry: not measured (vlasim calibrate writes one; the catalog CPU stands for the machine)\n";
  std::ostringstream o;
  char buf[200];
  o << "host entry (measured by calibrate; stands for the catalog CPU wherever the profile is used):\n";
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
  if (const HostSteadiness& st = h.steadiness; st.measured()) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "  steadiness over %g s (%d windows of %g s): memory speed moved %.1f%%, core speed %.1f%% "
                  "(largest window median over the smallest)%s\n",
                  st.seconds, st.windows, st.window_s, 100 * st.memory_spread, 100 * st.core_spread,
                  st.memory_spread > kDriftTarget || st.core_spread > kDriftTarget
                      ? "; over the 3% target: the same work moves more than that here with nothing changed, "
                        "so a 3% prediction error cannot be told from the machine"
                      : "");
    o << line;
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

}  // namespace vlasim
