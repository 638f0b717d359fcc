// A block-scheduler job (sim/costs/gpu_sharing.h) for the sharing tests: the job runs the
// kernels of `t` (which must outlive it) on a 100-SM GPU, its usage figures the kernels'
// time-weighted SMs and DRAM share.
#pragma once

#include "sim/costs/gpu_sharing.h"

namespace vlasim::test {

inline BlockScheduler::JobSpec block_job(const KernelTable* t, int pool = 0, int process = 0, int priority = 0) {
  BlockScheduler::JobSpec j;
  j.pool = pool;
  j.process = process;
  j.priority = priority;
  j.seconds = t->total();
  double sm = 0, mem = 0;
  for (const KernelSpec& k : t->kernels) {
    sm += k.seconds * k.sms;
    mem += k.seconds * k.memory;
  }
  j.usage_compute = sm / t->total() / 100;
  j.usage_memory = mem / t->total();
  j.kernels = [t] { return t; };
  return j;
}

}  // namespace vlasim::test
