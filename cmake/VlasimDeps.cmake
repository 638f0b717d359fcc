# Finds every external dependency once, as imported targets the folders link to.
find_package(PkgConfig REQUIRED)
pkg_check_modules(VLASIM_SYSTEMC REQUIRED IMPORTED_TARGET systemc)
# Debian's SystemC 2.3.4 is built as C++17; its API-version symbol must match.
add_library(vlasim::systemc INTERFACE IMPORTED)
target_link_libraries(vlasim::systemc INTERFACE PkgConfig::VLASIM_SYSTEMC)
target_compile_definitions(vlasim::systemc INTERFACE SC_CPLUSPLUS=201703L)
target_sources(vlasim::systemc INTERFACE ${PROJECT_SOURCE_DIR}/sim/engine/sc_main.cc)

find_package(Boost 1.74 REQUIRED)            # Boost.Graph is header-only for our use
find_package(yaml-cpp REQUIRED)
find_package(dnnl REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(ZLIB REQUIRED)                  # gzip-compressed PyTorch profiler traces (sim/measured/torch_trace.h)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)

# Optional: Boost.MPI over Open MPI (Debian: libboost-mpi-dev, which brings libopenmpi-dev)
# lets `vlasim sweep` under mpirun spread its values over the ranks (cli/mpi.cc). Without
# it the build works and sweeps run in one process. Boost::mpi does not carry MPI itself, so
# MPI's C++ target comes too (without the deprecated MPI C++ bindings).
find_package(Boost 1.74 QUIET OPTIONAL_COMPONENTS mpi serialization)
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI QUIET COMPONENTS CXX)
if(Boost_MPI_FOUND AND Boost_SERIALIZATION_FOUND AND MPI_CXX_FOUND)
  set(_mpi_default ON)
else()
  set(_mpi_default OFF)
endif()
option(VLASIM_WITH_MPI "Spread `vlasim sweep` over mpirun's ranks with Boost.MPI (on when found)" ${_mpi_default})
if(VLASIM_WITH_MPI AND NOT _mpi_default)
  message(FATAL_ERROR "VLASIM_WITH_MPI is ON but Boost.MPI or MPI was not found: install "
                      "libboost-mpi-dev (scripts/setup.sh does) or configure with -DVLASIM_WITH_MPI=OFF")
elseif(NOT VLASIM_WITH_MPI)
  if(_mpi_default)
    set(_why "VLASIM_WITH_MPI=OFF")
  else()
    set(_why "Boost.MPI or MPI not found; libboost-mpi-dev brings both")
  endif()
  message(STATUS "vlasim: building without MPI (${_why}): `vlasim sweep` runs in one process "
                 "and refuses to run under mpirun with more than one rank")
endif()
find_package(OpenMP REQUIRED)
if(VLASIM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(VLASIM_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
