// How the segments running on one GPU share it (SYSTEMS.md systems 2 and 4; issues 30, 45): a
// GPU device's `gpu_sharing:` names a model from gpu_sharing_models() (`vlasim list gpu_sharing`):
// - `fluid`: the running segments share two fluid resources (the SMs' compute, DRAM bandwidth)
//   max-min fair (Domain::share in sim/engine/engine.cc); nothing ever waits for SMs.
// - `blocks` (the default): the GPU as its hardware schedules it (BlockScheduler below):
//   each op is a kernel of thread blocks; a block scheduler gives free SMs to ready kernels in
//   launch order (stream priority first) at block granularity; separate processes time-slice
//   the GPU unless it runs MPS; a stream with an SM limit (a green context, a lockstep's first
//   stream) has its SMs alone. Issue 45's effects (SharingEffects), each switchable for ablation:
//   memory-bound kernels need only the SMs that saturate DRAM; running blocks are never
//   preempted (a higher-priority kernel waits for the wave in flight); a kernel's last wave
//   frees SMs for the next kernel; DRAM is shared max-min fair (a kernel that asks little keeps
//   what it asks); co-running kernels share L2; a lockstep limits its first stream only, so
//   the second takes the first's SMs when its batch ends.
// - `blocks_v1`: issue 30's block scheduler, kept for comparison (none of those effects).
// No SystemC here: the engine drives a BlockScheduler with its clock, and tests drive it alone.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "models/graph.h"
#include "scenarios/config/registry.h"
#include "sim/hardware/hardware.h"

namespace vlasim {

// Issue 45's refinements of the block scheduler (all off: issue 30's `blocks_v1`).
struct SharingEffects {
  // A kernel on g of the w SMs it occupies alone runs its compute at g/w but its DRAM traffic
  // at the bandwidth g SMs pull: all of it from the catalog's saturating_sms fraction of the
  // GPU on (sim/hardware/hardware.h; the shaped cost model's own figure). Off: g/w for all.
  bool memory_sms = false;
  // Blocks in flight are not preempted: a kernel keeps the SMs it holds until its current
  // wave ends; stream priority orders only the SMs that free up (CUDA stream priorities).
  // Off: every change re-sorts all SMs by priority at once.
  bool no_preemption = false;
  // A kernel's last wave (its blocks past whole waves) holds only the SMs its blocks fill, and
  // the next kernel's blocks take the rest. Off: a kernel holds all its SMs to its end.
  bool wave_tails = false;
  // DRAM bandwidth shared max-min fair over what each running kernel asks (a kernel asking less
  // than an equal share keeps it). Off: every rate cut by one factor.
  bool dram_fair = false;
  // L2 shared: when the L2-resident activations of the kernels running at once outgrow the
  // half of L2 the shaped cost model grants one kernel, those activations go to DRAM.
  bool l2_shared = false;
  // A lockstep's SM limit binds its first stream only (SYSTEMS.md: the VLM stream is limited);
  // the second shares the GPU's SMs the first does not hold, all of them when its batch ends.
  // Off: two hard partitions.
  bool give_back = false;
  static SharingEffects all() { return {true, true, true, true, true, true}; }
};

// A named GPU sharing model and its figures.
struct GpuSharingModel {
  std::string name;
  bool kernel_level = false;  // false: fluid
  SharingEffects effects;
  // Time slicing between processes (< 0: the device's catalog figure).
  double time_slice_s = -1, context_switch_s = -1;
};
using GpuSharingRegistry = Registry<GpuSharingModel>;
// "fluid", "blocks" and "blocks_v1".
GpuSharingRegistry& gpu_sharing_models();
// The default for GPUs.
inline const char* kDefaultGpuSharing = "blocks";

// Thread blocks of the kernel that runs `op` on a GPU of `sms` SMs, and how many of them one SM
// holds at once, from the op's shape (a stand-in, documented here, for the tile/wave function
// of sim/costs/gpu_kernel_model.h: the two should become one):
// - GEMM: output tiles of the catalog tile (64 rows when M <= 64), per batch; when the tiles
//   cannot fill the SMs the K dimension is split (in powers of two, each part at least 256
//   deep) until they do, as vendor libraries' split-K heuristics do; one block per SM (a large
//   tile's shared memory and registers take most of an SM).
// - fused attention: one block per (batch, head, tile of 64 or 128 queries); keys split over
//   idle SMs (flash decoding) as for GEMMs; one block per SM.
// - norms: one block per row; elementwise and embeddings: one block per 2048 elements; both
//   small (256 threads), 8 blocks per SM (2048 resident threads).
struct KernelShape {
  double blocks = 1;
  double per_sm = 1;
  // The SMs the kernel occupies when it runs alone on `sms` SMs: all its blocks at once, at
  // most `sms`.
  double width(double sms) const;
  // Its waves alone on `sms` SMs (at least 1), and the SMs its last wave's blocks fill (SMs'
  // worth of blocks: blocks of other kernels share an SM with a partly filled one).
  double waves(double sms) const;
  double tail_sms(double sms) const;
};
KernelShape kernel_shape(const Op& op, const DeviceSpec& d, int sms);

// One kernel of a segment: its time alone (seconds, the op's cost-model time with its launch
// gap), the SMs it occupies alone, and the fractions of that time its DRAM traffic and its
// compute take alone (memory is also the fraction of DRAM bandwidth it uses, as issue 30's
// scheduler reads it). The rest of the time (launch gap, latency) needs neither.
struct KernelSpec {
  double seconds = 0;
  double sms = 1;
  double memory = 0;
  double compute = -1;   // < 0: not known, all of its time needs SMs (issue 30's reading)
  // Waves of blocks alone on its SMs, and the SMs the last wave's blocks fill (<= sms).
  double waves = 1, tail_sms = -1;  // tail_sms < 0: sms
  // Activations it keeps in L2 alone, and its memory fraction when they go to DRAM instead.
  double l2_bytes = 0, memory_cold = -1;  // memory_cold < 0: memory
};

// A segment as the kernels it launches, in order.
struct KernelTable {
  std::vector<KernelSpec> kernels;
  std::vector<double> end;  // end[i]: the sum of kernels[0..i].seconds
  double total() const { return end.empty() ? 0 : end.back(); }
  // Appends a kernel.
  void add(const KernelSpec& k);
};

// The SM scheduler of one GPU. Jobs (a segment's run on a stream) are added and advanced with
// the engine's clock; the scheduler gives each its rate (fraction of its alone speed).
// - Pools: every stream with an SM limit has a pool of its own (its partition: no other
//   stream's blocks run there); streams without one share the device's shared pool. A stream
//   runs one job at a time, so only the shared pool can hold several jobs. A lending pool (a
//   lockstep's first stream under give_back) holds its SMs only while it has a job.
// - A GPU with one stream never shares: the engine runs it as `fluid` does, which gives the
//   same rates (one segment at its alone speed, less background load).
// - Kernel-level resolution only where it matters: while a job is the only one running in its
//   pool it runs as a whole segment (its mean compute and memory shares, one completion
//   event; faster on a pool grown past the SMs it was costed on, JobSpec::wide_sms); while two
//   or more jobs of the shared pool run, each runs kernel by kernel (an event at every
//   kernel's end and, under no_preemption or wave_tails, every wave's), and the block
//   scheduler gives the pool's SMs to the ready kernels in order of stream priority (lower
//   first, as CUDA's), then launch time (a kernel is launched when its stream's previous
//   kernel ends), each taking up to the SMs its blocks occupy on the SMs its stream was costed
//   on (the pool may hold fewer: the GPU's SMs less other streams' partitions). Under
//   no_preemption a kernel keeps what it holds until its wave ends, so priority orders only
//   the SMs that free up (a job already running when a second arrives keeps its blocks). A
//   kernel holding g of the w SMs it wants runs its compute at g/w and (memory_sms) its DRAM
//   traffic at the bandwidth g SMs pull; issue 30's model runs the whole kernel at g/w. The
//   launch gap between two kernels is counted as kernel time.
// - DRAM: every running job (or kernel) asks for its alone bandwidth times its rate; when the
//   asks exceed the bandwidth left by background load they are met max-min fair (dram_fair),
//   or (issue 30) every rate is scaled by the same factor. Under l2_shared, kernels running at
//   once whose L2-resident activations together pass half the L2 run at their cold memory time.
// - Processes: jobs of different processes time-slice the GPU (unless MPS): one process's
//   context runs (its jobs as above) for a time slice while another has work, then the GPU
//   switches (no job runs for the switch time) to the next process with work, round robin.
//   A process alone runs without slices; the first context loaded costs no switch.
class BlockScheduler {
 public:
  struct Options {
    int sms = 1;           // the GPU's SMs
    bool mps = false;      // processes share SMs as streams of one process do
    SharingEffects effects;
    double saturating_sms = 0.5;  // fraction of the SMs whose loads saturate DRAM (memory_sms)
    double l2_bytes = 0;          // the GPU's L2 (l2_shared)
    double time_slice_s = 2e-3, context_switch_s = 50e-6;
    // The kernels of a job whose JobSpec::kernels is empty, by its JobSpec::key (asked the
    // first time it must run kernel by kernel; at least one kernel).
    std::function<const KernelTable*(const std::array<int, 5>& key)> tables;
  };
  explicit BlockScheduler(Options o);

  // Declares a pool of `sms` SMs (its index is returned). Pool 0, the shared pool, exists
  // from the start with the GPU's SMs (set_pool_sms changes it). A pool that `lends` takes
  // its SMs from the shared pool only while it has a job (a lockstep's first stream under
  // give_back): the shared pool has them back when it has none.
  int add_pool(double sms, bool lends = false);
  void set_pool_sms(int pool, double sms);

  // A job: the segment run on one stream.
  struct JobSpec {
    int pool = 0, process = 0, priority = 0;
    double seconds = 0;  // alone time on its pool (its segment's ops, variability drawn)
    double delay = 0;    // host seconds before it starts (no SM, no bandwidth)
    // Whole-segment shares, as the fluid model's: the fractions of the GPU's SMs and of its
    // DRAM bandwidth the segment uses alone (on its pool).
    double usage_compute = 0, usage_memory = 0;
    // Its kernels (alone on its pool), scaled so that they add to `seconds`; asked for the
    // first time the job must run kernel by kernel. Must return a table with at least one
    // kernel. When empty, Options::tables is asked with `key` instead.
    std::function<const KernelTable*()> kernels;
    std::array<int, 5> key{};
    // Run as a whole segment, the job was costed on `sms` SMs; on a pool of `wide_sms` (more)
    // it runs `wide_speedup` times as fast, in between in proportion (0: it never speeds up).
    double sms = 0, wide_sms = 0, wide_speedup = 1;
  };
  // Adds a job at time `now` (after advance(now)); returns its id.
  int add(JobSpec spec, double now);

  // Moves every job forward to `t` at its current rate.
  void advance(double t);
  // Ends the kernels due at `now` (within `slack` seconds of their end) and returns the jobs
  // that have ended (in order of id), removing them. Call resolve() after.
  // The list is valid until the next call.
  const std::vector<int>& take_done(double now, double slack);
  // Sets every rate for the state at `now` (after advance(now) and take_done).
  void resolve(double now);
  // The absolute time of the next event (a job or kernel end, a delay's end, a time slice's
  // or a context switch's end); INFINITY when nothing is running.
  double next_event() const;

  // Background load from outside the scenario: shares of the SMs and of DRAM bandwidth.
  void set_background(double compute, double memory);

  // For statistics and tests.
  bool empty() const { return jobs_.empty(); }
  double rate(int id) const;
  double sms_held(int id) const;           // SMs the job holds now (aggregate: its mean)
  double memory_used(int id) const;        // fraction of DRAM bandwidth it uses now
  bool kernel_level(int id) const;         // runs kernel by kernel now
  int active_process() const { return cur_; }
  bool switching() const { return switching_; }
  uint64_t context_switches() const { return switches_; }
  // Sums over running jobs of (SM fraction of the GPU) and (DRAM fraction) in use now.
  void usage(double* sm_fraction, double* memory_fraction) const;

 private:
  struct Job {
    int id = 0;
    JobSpec spec;
    double remaining = 0;  // alone seconds left in all
    double delay = 0;
    bool kernel = false;   // kernel by kernel now
    const KernelTable* table = nullptr;
    double scale = 1;      // seconds / table total
    size_t k = 0;          // the current kernel
    double krem = 0;       // alone seconds left in it
    uint64_t launch = 0;   // when the current kernel was launched (a sequence number)
    double rate = 0, held = 0, mem = 0;
    // Block granularity (no_preemption, wave_tails): alone seconds left in the current wave,
    // and whether its SMs are open to re-sorting (a kernel or wave just began).
    double wrem = INFINITY;
    bool open = true;
    bool tail = false;  // in its kernel's last wave (wave_tails)
  };
  // The SMs the pool of job `j` has now (a shared pool less its lending pools' SMs in use).
  double pool_now(int pool) const;
  // Its current kernel: the SMs it wants now (its wave's), its rate on g of them.
  double want(const Job& j) const;
  double kernel_rate(const Job& j, double g) const;
  double memory_of(const Job& j) const;  // its kernel's memory fraction (L2 lost or kept)
  void start_wave(Job& j);
  // DRAM: `ask` is the asks' sum in issue 30's order (segments by job, then kernels by SM order).
  void share_dram(double ask);
  Job* find(int id);
  const Job* find(int id) const;
  bool on_gpu(const Job& j) const;  // its process's context runs now (or MPS)
  void to_kernel(Job& j, bool running);  // running: its blocks are on the SMs already
  void to_segment(Job& j);
  void schedule_processes(double now);

  Options o_;
  std::vector<double> pool_sms_;
  std::vector<char> pool_lends_;
  bool l2_cold_ = false;  // the running kernels' L2 activations do not all fit
  std::vector<Job> jobs_;
  int next_id_ = 0;
  uint64_t launches_ = 0;
  double last_ = 0;
  double bg_compute_ = 0, bg_memory_ = 0;
  // Time slicing.
  int cur_ = -1;               // the process whose context is on the GPU (-1: none yet)
  bool switching_ = false;     // a context switch is under way, to `next_`
  int next_ = -1;
  double phase_end_ = INFINITY;  // the switch's end, or the slice's end while others wait
  uint64_t switches_ = 0;
  std::vector<int> done_, procs_, count_;  // scratch
  std::vector<Job*> kernel_jobs_;
};

}  // namespace vlasim
