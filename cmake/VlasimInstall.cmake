# The installable vlasim: one shared library (libvlasim.so) holding every library above and
# the sc_main stub, its headers, the `vlasim` CLI, the shipped model cards and hardware
# catalog, and a CMake package whose one target, vlasim::vlasim, carries the dependencies,
# include directory and SystemC define. Install layout (fixed, so that code finds its data at
# <binary dir>/../share/vlasim; see scenarios/config/data_dir.h):
#   P/lib/libvlasim.so  P/bin/vlasim  P/include/vlasim/<folder>/*.h
#   P/share/vlasim/{cards,catalog}/*.yaml  P/share/vlasim/kernel_fit/{kernel,stack}_model.csv  P/lib/cmake/vlasim/
# The in-tree static libraries stay as they are (tests, CLI and benchmarks link them).
include(CMakePackageConfigHelpers)

# The libraries libvlasim.so is made of. vlasim_cuda stays out (a CUDA probe only the tests
# use). Built from their object files rather than whole-archive linking: every archive that
# links vlasim::systemc carries its own copy of sc_main.cc.o (an interface source), and
# whole-archive would define sc_main four times. Those copies are filtered out; the library
# compiles sc_main.cc once itself.
set(VLASIM_SHARED_PARTS
  vlasim_config vlasim_models vlasim_scheduler vlasim_hardware vlasim_measured vlasim_scenario vlasim_costs vlasim_sim
  vlasim_executors vlasim_runtime vlasim_calibration vlasim_reports)
set(_vlasim_objects)
foreach(part IN LISTS VLASIM_SHARED_PARTS)
  list(APPEND _vlasim_objects "$<FILTER:$<TARGET_OBJECTS:${part}>,EXCLUDE,/sc_main\\.cc\\.o$>")
endforeach()

add_library(vlasim_shared SHARED ${PROJECT_SOURCE_DIR}/sim/engine/sc_main.cc ${_vlasim_objects})
add_library(vlasim::vlasim ALIAS vlasim_shared)
add_dependencies(vlasim_shared ${VLASIM_SHARED_PARTS})
set_target_properties(vlasim_shared PROPERTIES
  OUTPUT_NAME vlasim
  EXPORT_NAME vlasim
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR})
target_include_directories(vlasim_shared PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
  $<INSTALL_INTERFACE:include/vlasim>)
target_compile_features(vlasim_shared PUBLIC cxx_std_20)
# Debian's SystemC 2.3.4 is built as C++17; its API-version symbol must match.
target_compile_definitions(vlasim_shared PUBLIC SC_CPLUSPLUS=201703L)
# What the parts link (their PUBLIC dependencies), stated once for consumers.
target_link_libraries(vlasim_shared
  PUBLIC PkgConfig::VLASIM_SYSTEMC yaml-cpp DNNL::dnnl nlohmann_json::nlohmann_json
         OpenMP::OpenMP_CXX Threads::Threads Boost::boost
  PRIVATE ${CMAKE_DL_LIBS} ZLIB::ZLIB)
# The parts' objects must be complete: no undefined symbol left for a consumer to supply.
target_link_options(vlasim_shared PRIVATE LINKER:--no-undefined)

install(TARGETS vlasim_shared EXPORT vlasimTargets LIBRARY DESTINATION lib)
install(TARGETS vlasim RUNTIME DESTINATION bin)

# Public headers: every header of the library folders, under include/vlasim/<folder>/ so
# that `#include "sim/engine/engine.h"` works as in the source tree.
foreach(folder scenarios scenarios/config models models/passes scheduler scheduler/fleet scheduler/robot sim/hardware sim/measured
               sim/costs sim/engine executors executors/runtime executors/calibration reports)
  file(GLOB _headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.h)
  install(FILES ${_headers} DESTINATION include/vlasim/${folder})
endforeach()

file(GLOB _cards CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/models/cards/*.yaml)
install(FILES ${_cards} DESTINATION share/vlasim/cards)
file(GLOB _catalog CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sim/catalog/*.yaml)
install(FILES ${_catalog} DESTINATION share/vlasim/catalog)
# The kernel GPU cost model's shipped fit, which an installed vlasim finds beside its catalog.
install(FILES ${PROJECT_SOURCE_DIR}/sim/kernel_fit/kernel_model.csv ${PROJECT_SOURCE_DIR}/sim/kernel_fit/stack_model.csv
        DESTINATION share/vlasim/kernel_fit)

install(EXPORT vlasimTargets NAMESPACE vlasim:: DESTINATION lib/cmake/vlasim)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vlasimConfig.cmake.in
  ${PROJECT_BINARY_DIR}/vlasimConfig.cmake
  INSTALL_DESTINATION lib/cmake/vlasim)
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vlasimConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vlasimConfig.cmake ${PROJECT_BINARY_DIR}/vlasimConfigVersion.cmake
  DESTINATION lib/cmake/vlasim)
