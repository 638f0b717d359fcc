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
    reg->add({"blocks",
              "kernels take free SMs in launch order (stream priority first), up to the SMs their thread "
              "blocks occupy; DRAM shared in proportion to what each kernel issues from its SMs; a stream "
              "with an SM limit has its SMs alone; separate processes time-slice unless the device declares "
              "mps (kernel by kernel only while streams overlap on shared SMs)",
              {{"time_slice_us", "time slice of a process's context while another waits, us", "catalog time_slice_us"},
               {"context_switch_us", "time the GPU runs nothing while it switches contexts, us",
                "catalog context_switch_us"}},
              [](const Params& p) {
                auto m = std::make_unique<GpuSharingModel>();
                m->name = "blocks";
                m->kernel_level = true;
                if (p.node().defined() && p.node().has("time_slice_us")) {
                  const double v = p.get_double("time_slice_us", 0);
                  if (!(v >= 1 && v <= 1e7)) p.node().required("time_slice_us").fail("must be from 1 to 1e7 us");
                  m->time_slice_s = v * 1e-6;
                }
                if (p.node().defined() && p.node().has("context_switch_us")) {
                  const double v = p.get_double("context_switch_us", 0);
                  if (!(v >= 0 && v <= 1e6)) p.node().required("context_switch_us").fail("must be from 0 to 1e6 us");
                  m->context_switch_s = v * 1e-6;
                }
                return m;
              }});
    return reg;
  }();
  return *r;
}

double KernelShape::width(double sms) const {
  return std::clamp(std::ceil(blocks / std::max(1.0, per_sm)), 1.0, std::max(1.0, sms));
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
}

int BlockScheduler::add_pool(double sms) {
  pool_sms_.push_back(sms);
  return static_cast<int>(pool_sms_.size()) - 1;
}

void BlockScheduler::set_pool_sms(int pool, double sms) { pool_sms_.at(static_cast<size_t>(pool)) = sms; }

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
    sm += j.kernel ? j.held / o_.sms : j.rate * j.spec.usage_compute;
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
      if (j.kernel) j.krem -= done;
    }
  last_ = std::max(last_, t);
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
      while (j.krem <= j.rate * slack) {  // the current kernel ends: its stream launches the next
        if (++j.k >= ks.size()) break;
        j.krem = ks[j.k].seconds * j.scale;
        j.launch = launches_++;
      }
      if (j.k >= ks.size()) {
        j.remaining = 0;
        done.push_back(j.id);
      } else {
        j.remaining = j.krem + (j.table->total() - j.table->end[j.k]) * j.scale;
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

void BlockScheduler::to_kernel(Job& j) {
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
}

void BlockScheduler::to_segment(Job& j) {
  if (!j.kernel) return;
  j.remaining = j.krem + (j.table->total() - j.table->end[j.k]) * j.scale;
  j.kernel = false;
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
  if (jobs_.size() == 1 && !jobs_[0].kernel && on_gpu(jobs_[0])) {  // the common case: one segment
    Job& j = jobs_[0];
    const double avail = std::max(0.05, 1 - bg_compute_) * pool_sms_[static_cast<size_t>(j.spec.pool)] / o_.sms;
    j.rate = j.spec.usage_compute > avail ? avail / j.spec.usage_compute : 1;
    j.mem = j.spec.usage_memory;
    j.held = j.spec.usage_compute * o_.sms;
    const double bw = std::max(0.05, 1 - bg_memory_);
    if (j.rate * j.mem > bw) j.rate = bw / j.mem;
    return;
  }
  // Jobs on the GPU per pool: two or more share SMs kernel by kernel.
  std::vector<int>& count = count_;
  count.assign(pool_sms_.size(), 0);
  for (const Job& j : jobs_)
    if (on_gpu(j)) ++count[static_cast<size_t>(j.spec.pool)];
  const double sm_left = 1 - bg_compute_;
  double ask = 0;
  std::vector<Job*>& kernels = kernel_jobs_;
  kernels.clear();
  for (Job& j : jobs_) {
    j.rate = j.held = j.mem = 0;
    if (!on_gpu(j)) continue;
    if (count[static_cast<size_t>(j.spec.pool)] >= 2) {
      to_kernel(j);
      kernels.push_back(&j);
      continue;
    }
    to_segment(j);
    // A segment alone in its pool: at most the pool's SMs (less background load); a stream
    // costed on more SMs than its pool has (the GPU's less other streams' partitions) slows.
    double cap = 1;
    const double avail = std::max(0.05, sm_left) * pool_sms_[static_cast<size_t>(j.spec.pool)] / o_.sms;
    if (j.spec.usage_compute > avail) cap = avail / j.spec.usage_compute;
    j.rate = cap;
    j.mem = j.spec.usage_memory;
    j.held = j.spec.usage_compute * o_.sms;
    ask += cap * j.mem;
  }
  if (!kernels.empty()) {
    // The block scheduler: each pool's SMs to its ready kernels by (priority, launch).
    std::sort(kernels.begin(), kernels.end(), [](const Job* a, const Job* b) {
      if (a->spec.pool != b->spec.pool) return a->spec.pool < b->spec.pool;
      if (a->spec.priority != b->spec.priority) return a->spec.priority < b->spec.priority;
      if (a->launch != b->launch) return a->launch < b->launch;
      return a->id < b->id;
    });
    int pool = -1;
    double free = 0;
    for (Job* j : kernels) {
      if (j->spec.pool != pool) {
        pool = j->spec.pool;
        free = pool_sms_[static_cast<size_t>(pool)] * sm_left;
      }
      const KernelSpec& k = j->table->kernels[j->k];
      const double w = k.sms;  // may exceed the pool: the stream was costed on more SMs
      const double g = std::min(w, free);
      free -= g;
      j->held = g;
      j->rate = w > 0 ? g / w : 1;
      j->mem = k.memory;
      ask += j->rate * j->mem;
    }
  }
  // DRAM: asks past the bandwidth left scale every rate alike (each gets bandwidth in
  // proportion to what it issues).
  const double avail = std::max(0.05, 1 - bg_memory_);
  if (ask > avail) {
    const double f = avail / ask;
    for (Job& j : jobs_) j.rate *= f;
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
    if (j.rate > 0) next = std::min(next, last_ + std::max(0.0, j.kernel ? j.krem : j.remaining) / j.rate);
  }
  if (switching_ || waiting) next = std::min(next, phase_end_);
  return next;
}

}  // namespace vlasim
