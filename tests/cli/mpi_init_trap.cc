// Preloaded (LD_PRELOAD) by mpi_sweep_test.sh in runs that must not initialise MPI (every
// command run without an MPI launcher): MPI_Init or MPI_Init_thread, when called, says so and
// aborts, so such a run fails instead of starting Open MPI's slow, fragile singleton mode.
#include <cstdio>
#include <cstdlib>

extern "C" int MPI_Init(int*, char***) {
  std::fprintf(stderr, "mpi_init_trap: MPI_Init called\n");
  std::abort();
}

extern "C" int MPI_Init_thread(int*, char***, int, int*) {
  std::fprintf(stderr, "mpi_init_trap: MPI_Init_thread called\n");
  std::abort();
}
