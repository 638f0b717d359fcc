#include "sim/costs/gpu_sharing.h"

#include <algorithm>
#include <stdexcept>

namespace vlasim {

GpuSharingRegistry& gpu_sharing_models() {
  static GpuSharingRegistry* r = [] {
    auto* reg = new GpuSharingRegistry("gpu_sharing");
    reg->add({"fluid",
              "the running segments share the SMs' compute and DRAM bandwidth as two fluid resources, "
              "max-min fair; nothing waits for SMs, processes never time-slice (the model before issue 30)",
              {},
              [](const Params&) {
                auto m = std::make_unique<GpuSharingModel>();
                m->name = "fluid";
                return m;
              }});
    // time_slice_us and context_switch_us, as both block models take them.
    auto slicing = [](const Params& p, GpuSharingModel& m) {
      if (p.node().defined() && p.node().has("time_slice_us")) {
        const double v = p.get_double("time_slice_us", 0);
        if (!(v >= 1 && v <= 1e7)) p.node().required("time_slice_us").fail("must be from 1 to 1e7 us");
        m.time_slice_s = v * 1e-6;
      }
      if (p.node().defined() && p.node().has("context_switch_us")) {
        const double v = p.get_double("context_switch_us", 0);
        if (!(v >= 0 && v <= 1e6)) p.node().required("context_switch_us").fail("must be from 0 to 1e6 us");
        m.context_switch_s = v * 1e-6;
      }
    };
    reg->add({"blocks",
              "kernels take free SMs in launch order (stream priority first) at block granularity: blocks in "
              "flight are not preempted, a kernel's last wave frees SMs, memory-bound kernels need only the SMs "
              "that saturate DRAM, DRAM shared max-min fair, L2 shared; a stream with an SM limit has its SMs "
              "alone, a lockstep limits its first stream only; separate processes time-slice unless the device "
              "declares mps (kernel by kernel only while streams overlap on shared SMs)",
              {{"time_slice_us", "time slice of a process's context while another waits, us", "catalog time_slice_us"},
               {"context_switch_us", "time the GPU runs nothing while it switches contexts, us",
                "catalog context_switch_us"},
               {"memory_sms", "memory-bound kernels need only the SMs that saturate DRAM (false: g/w for all)", "true"},
               {"no_preemption", "blocks in flight keep their SMs to their wave's end (false: priority takes them)",
                "true"},
               {"wave_tails", "a kernel's last wave holds only the SMs its blocks fill", "true"},
               {"dram_fair", "DRAM shared max-min fair (false: every rate cut alike)", "true"},
               {"l2_shared", "co-running kernels' activations share L2", "true"},
               {"give_back", "a lockstep limits its first stream only (false: two hard partitions)", "true"}},
              [slicing](const Params& p) {
                auto m = std::make_unique<GpuSharingModel>();
                m->name = "blocks";
                m->kernel_level = true;
                slicing(p, *m);
                SharingEffects& e = m->effects;
                e.memory_sms = p.get_bool("memory_sms", true);
                e.no_preemption = p.get_bool("no_preemption", true);
                e.wave_tails = p.get_bool("wave_tails", true);
                e.dram_fair = p.get_bool("dram_fair", true);
                e.l2_shared = p.get_bool("l2_shared", true);
                e.give_back = p.get_bool("give_back", true);
                return m;
              }});
    reg->add({"blocks_v1",
              "issue 30's block scheduler, kept for comparison: kernels take free SMs in launch order (stream "
              "priority first, re-sorted at every change), each holding all its SMs to its end, at g/w of its speed "
              "on g of w SMs; DRAM oversubscription cuts every rate alike; a lockstep's streams are two hard partitions",
              {{"time_slice_us", "time slice of a process's context while another waits, us", "catalog time_slice_us"},
               {"context_switch_us", "time the GPU runs nothing while it switches contexts, us",
                "catalog context_switch_us"}},
              [slicing](const Params& p) {
                auto m = std::make_unique<GpuSharingModel>();
                m->name = "blocks_v1";
                m->kernel_level = true;
                slicing(p, *m);
                return m;
              }});
    return reg;
  }();
  return *r;
}

double KernelShape::width(double sms) const {
  return std::clamp(std::ceil(blocks / std::max(1.0, per_sm)), 1.0, std::max(1.0, sms));
}

double KernelShape::waves(double sms) const {
  return std::max(1.0, std::ceil(blocks / (std::max(1.0, per_sm) * std::max(1.0, sms))));
}

double KernelShape::tail_sms(double sms) const {
  const double per_wave = std::max(1.0, per_sm) * std::max(1.0, sms);
  const double last = blocks - (waves(sms) - 1) * per_wave;
  return std::clamp(last / std::max(1.0, per_sm), 1.0, width(sms));
}

KernelShape kernel_shape(const Op& op, const DeviceSpec& d, int sms) {
  auto cdiv = [](double a, double b) { return std::ceil(a / b); };
  KernelShape k;
  const double S = std::max(1, sms);
  if (op.kind == OpKind::Gemm) {
    const double M = std::max<int64_t>(1, op.m), N = std::max<int64_t>(1, op.n), K = std::max<int64_t>(1, op.k);
    const double tm = M <= 64 ? 64 : d.kernels.tile_m, tn = d.kernels.tile_n;
    const double tiles = cdiv(M, tm) * cdiv(N, tn);
    double split = 1;
    while (split < 16 && tiles * split < S && K / (2 * split) >= 256) split *= 2;
    k.blocks = tiles * split;
  } else if (op.kind == OpKind::Attention) {
    const double q = std::max<int64_t>(1, op.q_len), kv = std::max<int64_t>(1, op.kv_len);
    const double items = std::max<int64_t>(1, op.batch) * std::max<int64_t>(1, op.heads) * cdiv(q, q <= 64 ? 64 : 128);
    double split = 1;
    while (items * split < S && kv / (2 * split) >= 128) split *= 2;
    k.blocks = items * split;
  } else if (op.kind == OpKind::Norm) {
    k.blocks = std::max<double>(1, op.rows);
    k.per_sm = 8;
  } else {
    k.blocks = cdiv(std::max<double>(1, double(op.rows) * std::max<int64_t>(1, op.width)), 2048);
    k.per_sm = 8;
  }
  return k;
}

void KernelTable::add(const KernelSpec& k) {
  kernels.push_back(k);
  end.push_back(total() + k.seconds);
}

BlockScheduler::BlockScheduler(Options o) : o_(o) {
  if (o_.sms < 1) throw std::invalid_argument("BlockScheduler: a GPU needs at least one SM");
  pool_sms_.push_back(o_.sms);
  pool_lends_.push_back(0);
}

int BlockScheduler::add_pool(double sms, bool lends) {
  pool_sms_.push_back(sms);
  pool_lends_.push_back(lends ? 1 : 0);
  return static_cast<int>(pool_sms_.size()) - 1;
}

void BlockScheduler::set_pool_sms(int pool, double sms) { pool_sms_.at(static_cast<size_t>(pool)) = sms; }

double BlockScheduler::pool_now(int pool) const {
  double sms = pool_sms_[static_cast<size_t>(pool)];
  if (pool != 0) return sms;
  for (size_t p = 1; p < pool_sms_.size(); ++p) {
    if (!pool_lends_[p]) continue;
    for (const Job& j : jobs_)
      if (j.spec.pool == static_cast<int>(p) && on_gpu(j)) {  // not in its host delay, its context on
        sms -= pool_sms_[p];
        break;
      }
  }
  return std::max(0.0, sms);
}

void BlockScheduler::set_background(double compute, double memory) {
  bg_compute_ = std::clamp(compute, 0.0, 0.95);
  bg_memory_ = std::clamp(memory, 0.0, 0.95);
}

int BlockScheduler::add(JobSpec spec, double now) {
  if (spec.pool < 0 || static_cast<size_t>(spec.pool) >= pool_sms_.size())
    throw std::logic_error("BlockScheduler::add: no pool " + std::to_string(spec.pool));
  last_ = std::max(last_, now);
  Job j;
  j.id = next_id_++;
  j.remaining = spec.seconds;
  j.delay = spec.delay;
  j.launch = launches_++;
  j.spec = std::move(spec);
  jobs_.push_back(std::move(j));
  return jobs_.back().id;
}

BlockScheduler::Job* BlockScheduler::find(int id) {
  for (Job& j : jobs_)
    if (j.id == id) return &j;
  return nullptr;
}
const BlockScheduler::Job* BlockScheduler::find(int id) const {
  for (const Job& j : jobs_)
    if (j.id == id) return &j;
  return nullptr;
}

double BlockScheduler::rate(int id) const { const Job* j = find(id); return j ? j->rate : 0; }
double BlockScheduler::sms_held(int id) const { const Job* j = find(id); return j ? j->held : 0; }
double BlockScheduler::memory_used(int id) const { const Job* j = find(id); return j ? j->rate * j->mem : 0; }
bool BlockScheduler::kernel_level(int id) const { const Job* j = find(id); return j && j->kernel; }

void BlockScheduler::usage(double* sm_fraction, double* memory_fraction) const {
  double sm = 0, mem = 0;
  for (const Job& j : jobs_) {
    if (j.delay > 0 || j.rate <= 0) continue;
    // A segment sped up on a grown pool (JobSpec::wide_sms) uses the SMs it grew into.
    const double grown = j.spec.sms > 0 && j.spec.wide_sms > j.spec.sms ? j.spec.wide_sms / j.spec.sms : 1;
    sm += j.kernel ? j.held / o_.sms : std::min(grown, j.rate) * j.spec.usage_compute;
    mem += j.rate * j.mem;
  }
  *sm_fraction = std::min(1.0, sm);
  *memory_fraction = std::min(1.0, mem);
}

void BlockScheduler::advance(double t) {
  const double dt = t - last_;
  if (dt > 0)
    for (Job& j : jobs_) {
      if (j.delay > 0) {  // an event falls at the delay's end, so dt never passes it
        j.delay = std::max(0.0, j.delay - dt);
        continue;
      }
      const double done = j.rate * dt;
      j.remaining -= done;
      if (j.kernel) {
        j.krem -= done;
        j.wrem -= done;
      }
    }
  last_ = std::max(last_, t);
}

namespace {
// Alone seconds of one wave of kernel `k` of `t` scaled by `scale`.
double wave_seconds(const KernelTable& t, size_t k, double scale) {
  return t.kernels[k].seconds * scale / std::max(1.0, t.kernels[k].waves);
}
}  // namespace

void BlockScheduler::start_wave(Job& j) {
  const bool waves = o_.effects.no_preemption || o_.effects.wave_tails;
  const KernelSpec& k = j.table->kernels[j.k];
  j.open = true;
  j.tail = false;
  if (!waves || k.waves <= 1) {
    j.wrem = INFINITY;
    return;
  }
  // The alone seconds to the next wave's start: the current kernel runs its waves in turn.
  const double len = wave_seconds(*j.table, j.k, j.scale);
  const double done = std::max(0.0, k.seconds * j.scale - j.krem);
  j.wrem = len - std::fmod(done, len);
  if (j.wrem <= len * 1e-9) j.wrem = len;
  j.wrem = std::min(j.wrem, j.krem);
  j.tail = j.krem <= len * (1 + 1e-9);
}

const std::vector<int>& BlockScheduler::take_done(double now, double slack) {
  std::vector<int>& done = done_;
  done.clear();
  for (Job& j : jobs_)
    if (j.delay > 0 && j.delay <= slack) j.delay = 0;
  for (Job& j : jobs_) {
    if (j.delay > 0) continue;
    if (j.kernel) {
      const std::vector<KernelSpec>& ks = j.table->kernels;
      bool next = false;
      while (j.krem <= j.rate * slack) {  // the current kernel ends: its stream launches the next
        if (++j.k >= ks.size()) break;
        j.krem = ks[j.k].seconds * j.scale;
        j.launch = launches_++;
        next = true;
      }
      if (j.k >= ks.size()) {
        j.remaining = 0;
        done.push_back(j.id);
        continue;
      }
      j.remaining = j.krem + (j.table->total() - j.table->end[j.k]) * j.scale;
      if (next) {
        start_wave(j);
      } else if (j.wrem <= j.rate * slack) {  // a wave ends: its SMs go to the next blocks
        const double len = wave_seconds(*j.table, j.k, j.scale);
        j.open = true;
        j.wrem = std::min(j.krem, len);
        // The clock runs an event up to its slack early: what is left past one wave within
        // that is the last wave's.
        j.tail = j.krem <= len * (1 + 1e-9) + j.rate * slack;
        if (j.tail) j.wrem = j.krem;
      }
    } else if (j.remaining <= j.rate * slack) {
      done.push_back(j.id);
    }
  }
  (void)now;
  if (!done.empty())
    jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(),
                               [&](const Job& j) { return std::find(done.begin(), done.end(), j.id) != done.end(); }),
                jobs_.end());
  return done;
}

bool BlockScheduler::on_gpu(const Job& j) const {
  return j.delay <= 0 && (o_.mps || (!switching_ && j.spec.process == cur_));
}

void BlockScheduler::to_kernel(Job& j, bool running) {
  if (j.kernel) return;
  if (!j.table) {
    j.table = j.spec.kernels ? j.spec.kernels() : o_.tables ? o_.tables(j.spec.key) : nullptr;
    if (!j.table || j.table->kernels.empty() || !(j.table->total() > 0))
      throw std::logic_error("BlockScheduler: a job running kernel by kernel has no kernels");
    j.scale = j.spec.seconds / j.table->total();
  }
  const double pos = std::clamp((j.spec.seconds - j.remaining) / j.scale, 0.0, j.table->total());
  size_t k = static_cast<size_t>(std::upper_bound(j.table->end.begin(), j.table->end.end(), pos) - j.table->end.begin());
  k = std::min(k, j.table->kernels.size() - 1);
  j.k = k;
  j.krem = std::max(0.0, (j.table->end[k] - pos) * j.scale);
  j.kernel = true;
  start_wave(j);
  if (running && o_.effects.no_preemption) {
    // Its blocks are on the SMs already: they stay there until their wave ends.
    j.open = false;
    j.held = want(j);
  }
}

void BlockScheduler::to_segment(Job& j) {
  if (!j.kernel) return;
  j.remaining = j.krem + (j.table->total() - j.table->end[j.k]) * j.scale;
  j.kernel = false;
  j.wrem = INFINITY;
}

double BlockScheduler::want(const Job& j) const {
  const KernelSpec& k = j.table->kernels[j.k];
  if (o_.effects.wave_tails && k.waves > 1 && k.tail_sms > 0 && j.tail) return std::min(k.sms, k.tail_sms);
  return k.sms;
}

double BlockScheduler::memory_of(const Job& j) const {
  const KernelSpec& k = j.table->kernels[j.k];
  return l2_cold_ && k.l2_bytes > 0 && k.memory_cold > k.memory ? k.memory_cold : k.memory;
}

double BlockScheduler::kernel_rate(const Job& j, double g) const {
  const KernelSpec& k = j.table->kernels[j.k];
  const double w = want(j);
  if (!(w > 0)) return 1;  // occupies no SM (issue 30's reading)
  if (!(g > 0)) return 0;
  const bool cold = l2_cold_ && k.l2_bytes > 0 && k.memory_cold > k.memory;
  if (!o_.effects.memory_sms && !cold) return g >= w ? 1 : g / w;  // issue 30's, bit for bit
  const double c = k.compute >= 0 ? k.compute : 1;
  const double m0 = std::min(1.0, k.memory), m = std::min(1.0, memory_of(j));
  const double other = std::max(0.0, 1 - std::max(c, m0));  // launch gap, latency: neither
  double t;  // time on g SMs, per second alone
  if (o_.effects.memory_sms && k.compute >= 0) {
    const double sat = std::max(1.0, o_.saturating_sms * o_.sms);
    auto pull = [&](double x) { return std::min(1.0, x / sat); };  // DRAM bandwidth x SMs pull
    t = other + std::max(c * std::max(1.0, w / g), m * pull(w) / pull(std::min(g, w)));
  } else {
    t = (other + std::max(c, m)) * std::max(1.0, w / g);
  }
  return t > 0 ? 1 / t : 1;
}

void BlockScheduler::schedule_processes(double now) {
  if (o_.mps) {
    phase_end_ = INFINITY;
    return;
  }
  constexpr double eps = 1e-9;
  if (!switching_ && jobs_.size() == 1 && jobs_[0].delay <= 0 &&
      (cur_ < 0 || cur_ == jobs_[0].spec.process)) {  // one job, its context on the GPU (or none yet)
    cur_ = jobs_[0].spec.process;
    phase_end_ = now + o_.time_slice_s;
    return;
  }
  if (switching_) {
    if (now < phase_end_ - eps) return;
    switching_ = false;
    cur_ = next_;
    ++switches_;
    phase_end_ = now + o_.time_slice_s;
  }
  std::vector<int>& procs = procs_;
  procs.clear();
  for (const Job& j : jobs_)
    if (j.delay <= 0) procs.push_back(j.spec.process);
  std::sort(procs.begin(), procs.end());
  procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
  if (procs.empty()) return;
  if (cur_ < 0) {  // the first context loaded: no switch
    cur_ = procs.front();
    phase_end_ = now + o_.time_slice_s;
  }
  const bool cur_has = std::binary_search(procs.begin(), procs.end(), cur_);
  if (cur_has && procs.size() == 1) {
    phase_end_ = now + o_.time_slice_s;  // alone: its slice runs from its latest event
    return;
  }
  if (cur_has && now < phase_end_ - eps) return;  // others wait for the slice's end
  // Switch to the next process with work after the current one, round robin.
  auto it = std::upper_bound(procs.begin(), procs.end(), cur_);
  const int target = it != procs.end() ? *it : procs.front();
  if (target == cur_) {
    phase_end_ = now + o_.time_slice_s;
    return;
  }
  next_ = target;
  if (o_.context_switch_s <= 0) {
    cur_ = target;
    ++switches_;
    phase_end_ = now + o_.time_slice_s;
    return;
  }
  switching_ = true;
  phase_end_ = now + o_.context_switch_s;
}

void BlockScheduler::resolve(double now) {
  last_ = std::max(last_, now);
  schedule_processes(now);
  const double sm_left = 1 - bg_compute_;
  // A segment alone in its pool: at most the pool's SMs now (less background load); a stream
  // costed on more SMs than its pool has slows; one costed on fewer speeds up as the pool grows.
  auto segment_rate = [&](Job& j) {
    const double pool = pool_now(j.spec.pool);
    const double avail = std::max(0.05, sm_left) * pool / o_.sms;
    double r = j.spec.usage_compute > avail ? avail / j.spec.usage_compute : 1;
    if (j.spec.wide_sms > j.spec.sms && j.spec.sms > 0 && j.spec.wide_speedup > 1) {
      const double f = std::clamp((pool * sm_left - j.spec.sms) / (j.spec.wide_sms - j.spec.sms), 0.0, 1.0);
      r *= 1 + (j.spec.wide_speedup - 1) * f;
    }
    j.rate = r;
    j.mem = j.spec.usage_memory;
    j.held = j.spec.usage_compute * o_.sms;
  };
  if (jobs_.size() == 1 && !jobs_[0].kernel && on_gpu(jobs_[0])) {  // the common case: one segment
    Job& j = jobs_[0];
    segment_rate(j);
    const double bw = std::max(0.05, 1 - bg_memory_);
    if (j.rate * j.mem > bw) j.rate = bw / j.mem;
    return;
  }
  // Jobs on the GPU per pool: two or more share SMs kernel by kernel.
  std::vector<int>& count = count_;
  count.assign(pool_sms_.size(), 0);
  for (const Job& j : jobs_)
    if (on_gpu(j)) ++count[static_cast<size_t>(j.spec.pool)];
  std::vector<Job*>& kernels = kernel_jobs_;
  kernels.clear();
  double ask = 0;  // DRAM asked for, in issue 30's order: segments by job, then kernels
  for (Job& j : jobs_) {
    const bool running = j.rate > 0;
    j.rate = j.mem = 0;
    if (!on_gpu(j)) {
      j.held = 0;
      j.open = true;  // its blocks drain while it waits: they compete again when it is back
      continue;
    }
    if (count[static_cast<size_t>(j.spec.pool)] >= 2) {
      to_kernel(j, running);
      kernels.push_back(&j);
      continue;
    }
    to_segment(j);
    segment_rate(j);
    ask += j.rate * j.mem;
  }
  l2_cold_ = false;
  if (!kernels.empty()) {
    // The block scheduler: each pool's SMs to its ready kernels by (priority, launch). Under
    // no_preemption a kernel keeps the SMs its blocks in flight hold (until its wave ends) and
    // only SMs that are free are sorted.
    std::sort(kernels.begin(), kernels.end(), [](const Job* a, const Job* b) {
      if (a->spec.pool != b->spec.pool) return a->spec.pool < b->spec.pool;
      if (a->spec.priority != b->spec.priority) return a->spec.priority < b->spec.priority;
      if (a->launch != b->launch) return a->launch < b->launch;
      return a->id < b->id;
    });
    const bool keep = o_.effects.no_preemption;
    for (size_t a = 0; a < kernels.size();) {
      const int pool = kernels[a]->spec.pool;
      size_t b = a;
      while (b < kernels.size() && kernels[b]->spec.pool == pool) ++b;
      const double cap = pool_now(pool) * sm_left;
      double kept = 0;
      for (size_t i = a; i < b; ++i) {
        Job& j = *kernels[i];
        j.held = keep && !j.open ? std::min(j.held, want(j)) : 0;
        kept += j.held;
      }
      // The pool shrank under them (a lending pool's job began): they keep what is left, in
      // proportion (an approximation: the hardware would hold the lender's blocks back instead).
      if (kept > cap && kept > 0)
        for (size_t i = a; i < b; ++i) kernels[i]->held *= cap / kept;
      double free = std::max(0.0, cap - kept);
      for (size_t i = a; i < b; ++i) {
        Job& j = *kernels[i];
        const double add = std::clamp(want(j) - j.held, 0.0, free);  // want may exceed the pool
        j.held += add;
        free -= add;
        j.open = false;
      }
      a = b;
    }
    // L2: the L2-resident activations of the kernels that hold SMs now, together, against
    // the half of L2 one kernel is granted alone (segments alone on their SMs are not counted).
    if (o_.effects.l2_shared && o_.l2_bytes > 0) {
      double l2 = 0;
      int running = 0;
      for (const Job* j : kernels)
        if (j->held > 0) {
          l2 += j->table->kernels[j->k].l2_bytes;
          ++running;
        }
      l2_cold_ = running >= 2 && l2 > o_.l2_bytes / 2;
    }
    for (Job* jp : kernels) {
      Job& j = *jp;
      j.rate = kernel_rate(j, j.held);
      const KernelSpec& k = j.table->kernels[j.k];
      const double m = memory_of(j);
      if (o_.effects.memory_sms && k.compute >= 0) {
        const double sat = std::max(1.0, o_.saturating_sms * o_.sms);
        j.mem = m * std::min(1.0, want(j) / sat);  // the bandwidth its memory phase pulls alone
      } else {
        j.mem = m;
      }
      ask += j.rate * j.mem;
    }
  }
  share_dram(ask);
}

void BlockScheduler::share_dram(double ask) {
  const double avail = std::max(0.05, 1 - bg_memory_);
  if (!(ask > avail)) return;
  if (!o_.effects.dram_fair) {
    // Every rate cut alike: each gets bandwidth in proportion to what it issues.
    const double f = avail / ask;
    for (Job& j : jobs_) j.rate *= f;
    return;
  }
  // Max-min fair: asks below the level are met, the rest get the level.
  std::vector<std::pair<double, Job*>> asks;
  for (Job& j : jobs_)
    if (j.rate * j.mem > 0) asks.emplace_back(j.rate * j.mem, &j);
  std::sort(asks.begin(), asks.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first < y.first : x.second->id < y.second->id;
  });
  double left = avail;
  for (size_t i = 0; i < asks.size(); ++i) {
    const double level = left / static_cast<double>(asks.size() - i);
    const double got = std::min(asks[i].first, level);
    asks[i].second->rate *= got / asks[i].first;
    left -= got;
  }
}

double BlockScheduler::next_event() const {
  double next = INFINITY;
  bool waiting = false;  // a job of a process whose context is not on the GPU
  for (const Job& j : jobs_) {
    if (j.delay > 0) {
      next = std::min(next, last_ + j.delay);
      continue;
    }
    if (!on_gpu(j)) waiting = true;
    if (j.rate > 0) {
      const double left = j.kernel ? std::min(j.krem, j.wrem) : j.remaining;
      next = std::min(next, last_ + std::max(0.0, left) / j.rate);
    }
  }
  if (switching_ || waiting) next = std::min(next, phase_end_);
  return next;
}

}  // namespace vlasim
