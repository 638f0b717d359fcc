# Sanitizer builds (issue 15): -DVLASIM_SANITIZE=address,undefined or -DVLASIM_SANITIZE=thread.
# The value is passed to -fsanitize= as is, on the compile and link lines of every target.
# With `undefined`, float-cast-overflow is added (GCC's `undefined` group leaves it out, and a
# double-to-integer overflow in the engine's time arithmetic was one of the issue's findings),
# and every UBSan check is fatal, so that ctest sees a failure rather than a line in a log.
# VLASIM_SANITIZE_OPT (below) comes after CMAKE_CXX_FLAGS_<CONFIG> on the command line, so it
# wins over -O2/-O3; at -O0 -g1 the stacks still name our functions and lines.
# scripts/sanitize.sh configures and runs these builds; a normal build leaves this empty.
# -DVLASIM_FUZZ=ON (clang; scripts/fuzz.sh) adds libFuzzer's coverage instrumentation to every
# target and builds the fuzz programs of tests/fuzz.
option(VLASIM_FUZZ "Build the libFuzzer programs of tests/fuzz (clang only)" OFF)
if(VLASIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VLASIM_FUZZ needs clang (libFuzzer); e.g. CXX=clang++-14 (scripts/fuzz.sh)")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
# Optimisation of sanitizer builds: -O0 -g1 compiles in half the time of -O1 -g (what lets the
# sanitizer and fuzzing legs fit in CI); long fuzzing runs pass -O1, where the fuzzers run
# about twice as many inputs a second.
set(VLASIM_SANITIZE_OPT "-O0 -g1" CACHE STRING "Optimisation flags of a sanitizer build")
set(VLASIM_SANITIZE "" CACHE STRING
    "Sanitizers to build with, as -fsanitize= takes them (address,undefined or thread); empty: none")

if(VLASIM_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "VLASIM_SANITIZE needs GCC or Clang (compiler: ${CMAKE_CXX_COMPILER_ID})")
  endif()
  string(REPLACE "," ";" _vlasim_san_list "${VLASIM_SANITIZE}")
  if("thread" IN_LIST _vlasim_san_list AND
     ("address" IN_LIST _vlasim_san_list OR "leak" IN_LIST _vlasim_san_list))
    message(FATAL_ERROR "VLASIM_SANITIZE: thread cannot be combined with address or leak")
  endif()
  set(_vlasim_san_flags -fsanitize=${VLASIM_SANITIZE})
  if("undefined" IN_LIST _vlasim_san_list)
    list(APPEND _vlasim_san_flags -fsanitize=float-cast-overflow
                                  -fno-sanitize-recover=undefined,float-cast-overflow)
  endif()
  separate_arguments(_vlasim_san_opt UNIX_COMMAND "${VLASIM_SANITIZE_OPT}")
  list(APPEND _vlasim_san_flags -fno-omit-frame-pointer ${_vlasim_san_opt})
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_vlasim_san_flags}>")
  add_link_options("$<$<LINK_LANGUAGE:CXX>:${_vlasim_san_flags}>")
  message(STATUS "vlasim: sanitizers ${VLASIM_SANITIZE} (${_vlasim_san_flags})")
endif()

# vlasim_unity_keep_sc_main(): for a unity build (CMAKE_UNITY_BUILD=ON, as scripts/sanitize.sh
# configures to halve its compile time), keeps sim/engine/sc_main.cc out of the unity sources of every
# target. It is an interface source of vlasim::systemc, compiled into each consumer; merged
# into a static library's unity object it would come along with everything else in that
# object and define sc_main a second time in each program. Called once all folders are added
# (source properties are per folder, and the file is compiled in many).
function(vlasim_unity_keep_sc_main)
  if(NOT CMAKE_UNITY_BUILD)
    return()
  endif()
  set(dirs ${PROJECT_SOURCE_DIR})
  set(todo ${PROJECT_SOURCE_DIR})
  while(todo)
    list(POP_FRONT todo d)
    get_property(sub DIRECTORY ${d} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${sub})
    list(APPEND todo ${sub})
  endwhile()
  set_source_files_properties(${PROJECT_SOURCE_DIR}/sim/engine/sc_main.cc DIRECTORY ${dirs}
                              PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
