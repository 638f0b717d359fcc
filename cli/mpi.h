// The vlasim command under mpirun: how this process was started (read from the launcher's
// environment, without MPI), and, in builds with VLASIM_WITH_MPI, `vlasim sweep` spread over
// the ranks of MPI_COMM_WORLD. Only the sweep command initialises MPI, and only when a
// launcher started the process; every other command and every plain run never calls MPI_Init.
#pragma once

#include <cstdlib>
#include <exception>
#include <functional>
#include <string>

#include "reports/sweep.h"
#include "scenarios/config/config.h"

namespace vlasim {

// How the process was started.
struct MpiLaunch {
  bool launched = false;  // an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) started it
  int rank = 0;
  int size = 0;           // ranks in the job; 0 when the launcher's environment does not say
};

// Reads OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK (Open MPI), PMI_SIZE / PMI_RANK (MPICH,
// Slurm) and PMIX_RANK (PMIx launchers). Never initialises MPI.
inline MpiLaunch detect_mpi_launch() {
  auto number = [](const char* name) -> int {
    const char* v = std::getenv(name);
    if (!v || !*v) return -1;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return (*end || n < 0 || n > 1'000'000'000) ? -1 : static_cast<int>(n);
  };
  MpiLaunch l;
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (int n = number(name); n > 0 && l.size == 0) l.size = n;
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (int n = number(name); n >= 0 && !l.launched) {
      l.rank = n;
      l.launched = true;
    }
  l.launched = l.launched || l.size > 0;
  return l;
}

// An error that ends the command: the exit status (0: none) and the text to print, as the
// command line prints it ("error: ..." and a newline).
struct CommandFailure {
  int status = 0;
  std::string message;
};

// Runs `f` and returns the failure it throws the way vlasim's main() reports errors: a
// ConfigError exits 2, any other exception 1; nothing thrown gives status 0.
template <class F>
CommandFailure attempt(F&& f) {
  try {
    f();
    return {};
  } catch (const ConfigError& e) {
    return {2, std::string("error: ") + e.what() + "\n"};
  } catch (const std::exception& e) {
    return {1, std::string("error: ") + e.what() + "\n"};
  }
}

#ifdef VLASIM_WITH_MPI
// `vlasim sweep` over the ranks of MPI_COMM_WORLD; initialises MPI (and finalises it before
// returning). Every rank runs `setup` (it reads the command line and the scenario and returns
// the spec; `lead` is true on rank 0, which alone checks the output directory) and
// check_sweep_work; if any rank fails there, every rank stops. Rank r then simulates the
// values i with i % size == r; the rows are gathered on rank 0, which finishes the sweep
// exactly as a serial run does and hands it to `publish` (print the table, write the files).
// `progress` (rank 0's share of the values done) is called on rank 0 only. Any error that
// stops the sweep is printed once, by rank 0, and every rank returns the same non-zero
// status; no rank waits for one that has stopped.
int run_sweep_over_ranks(const std::function<SweepSpec(bool lead)>& setup,
                         const std::function<void(double)>& progress,
                         const std::function<void(const SweepResult&)>& publish);
#endif

}  // namespace vlasim
