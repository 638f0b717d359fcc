// Robion's locksteps and SM lookup table (SYSTEMS.md system 2): on a GPU with `lockstep:`, the
// two streams start one batch each together; the SM-limited stream's share for the pair of
// batches comes from a table made offline for every pair of power-of-two batch sizes. No
// SystemC here: the plan holds the table and the segment costs at the SM counts it uses.
#pragma once

#include <string>
#include <vector>

#include "scheduler/policy.h"
#include "sim/engine/plan.h"

namespace vlasim {

// The classes (batch_bucket, scheduler/policy.h) of every size `policy` may run on a unit of max_batch, increasing.
std::vector<int> batch_classes(const BatchPolicy& policy, int max_batch);
// The SM counts a table may give the first stream of a GPU: multiples of a step (the device's
// SM granularity, raised so that there are at most 16) below the GPU's SMs; the GPU's SMs
// alone when it has no more than one step (plan_locksteps refuses such a lockstep).
std::vector<int> sm_candidates(const DeviceSpec& spec);

// The table for lockstep `lp` of plan `p`: for every pair of (model, batch class) that may meet
// in a lockstep, the first stream's SMs that minimise the pair's time from `cost` (ties: fewer
// SMs): the longer of the two batches' times alone on their SMs; under a sharing model with
// give_back, the second batch moves to the whole GPU when the first ends (as the paper's
// offline pass measures the pair run together). Sets lp.lut and lp.lut_source.
void profile_sm_lut(const Scenario& s, const Plan& p, const CostModel& cost, LockstepPlan& lp);

// The pairs the table of lockstep `lp` must hold (each pair of model and batch class that
// may meet in a lockstep), in key order.
std::vector<SmLutKey> sm_lut_keys(const Scenario& s, const Plan& p, const LockstepPlan& lp);

// The table as a YAML document (`vlasim profile-lut` writes it, `lut: FILE` reads it).
std::string sm_lut_yaml(const Scenario& s, const Plan& p, const LockstepPlan& lp);
// Reads table `path` (as a scenario's `lut:` names it; relative to the scenario's folder)
// into lp.lut; a table made for one device serves any with the same streams and SMs (every
// copy of a `count:` device). Throws ConfigError at the file's line and key for a malformed
// entry, an unknown model, SMs out of range or off the granularity, or other streams or SMs;
// at the scenario's `lut:` when the file is missing or lacks a pair the lockstep needs
// (naming the pair).
void read_sm_lut(const Scenario& s, const Plan& p, const ConfigNode& lut_where, LockstepPlan& lp);

// Plans every lockstep of `s` into p.locksteps (its table made or read) and costs each plan's
// segments on the lockstep streams at every SM count they may run with (ModelPlan::split).
// Throws ConfigError as read_sm_lut; at the lockstep when a stream runs no model or the GPU
// has too few SMs to split; at a model's dynamic_zone when the model runs on a lockstep.
void plan_locksteps(const Scenario& s, const CostModel& cost, Plan& p);

}  // namespace vlasim
