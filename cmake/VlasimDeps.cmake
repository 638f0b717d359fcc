# Finds every external dependency once, as imported targets the folders link to.
find_package(PkgConfig REQUIRED)
pkg_check_modules(VLASIM_SYSTEMC REQUIRED IMPORTED_TARGET systemc)
# Debian's SystemC 2.3.4 is built as C++17; its API-version symbol must match.
add_library(vlasim::systemc INTERFACE IMPORTED)
target_link_libraries(vlasim::systemc INTERFACE PkgConfig::VLASIM_SYSTEMC)
target_compile_definitions(vlasim::systemc INTERFACE SC_CPLUSPLUS=201703L)
target_sources(vlasim::systemc INTERFACE ${PROJECT_SOURCE_DIR}/sim/sc_main.cc)

find_package(Boost 1.74 REQUIRED)            # Boost.Graph is header-only for our use
find_package(yaml-cpp REQUIRED)
find_package(dnnl REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
if(VLASIM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(VLASIM_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
