// Demonstration trajectories cut into action chunks (issue 47): recorded ones from a CSV, or
// synthetic ones where a scenario has none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "scheduler/robot/retime.h"

namespace vlasim {

// `count` consecutive chunks of `steps` steps (steps + 1 waypoints each, a chunk's last
// waypoint the next one's first) of one smooth synthetic demonstration of `dof` joints at step
// h: each joint a sum of three sines (0.15, 0.4 and 0.9 Hz, seeded amplitudes and phases),
// scaled so that the fastest joint's peak velocity over the whole demonstration is `peak_vel`
// rad/s. The same arguments give the same chunks.
std::vector<Trajectory> synthetic_demonstration(int dof, int steps, double h, double peak_vel, uint64_t seed,
                                                int count);

// The chunks of `steps` steps a recorded demonstration holds: `path` is a CSV of joint
// positions (rad), a header line of names, then a row per step at step h, every row the same
// columns. Throws ConfigError naming the file and line for a malformed row or a file shorter
// than one chunk.
std::vector<Trajectory> recorded_demonstration(const std::string& path, int steps, double h);

}  // namespace vlasim
