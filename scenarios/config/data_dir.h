// Where vlasim's shipped data (model cards, hardware catalog) is found at run time, so that an
// installed vlasim works from its install prefix and a build tree from its source tree.
#pragma once

#include <string>

namespace vlasim {

// Absolute directory of the binary that holds vlasim's code: the folder of libvlasim.so when
// vlasim runs from the shared library, the executable's folder when vlasim is linked into it
// statically. Symbolic links are resolved. Empty when it cannot be determined.
std::string module_dir();

// The data directory `name` ("cards", "catalog", "kernel_fit"), first match wins:
//   1. the environment variable `env_var`, when it is set and not empty;
//   2. $VLASIM_DATA_DIR/<name>, when VLASIM_DATA_DIR is set and not empty (whether or not that
//      folder exists: a wrong VLASIM_DATA_DIR is reported by the reader, not passed over);
//   3. <module_dir()>/../share/vlasim/<name>, when that directory exists (an installed vlasim
//      or a GPU kit: P/lib/libvlasim.so and P/bin/vlasim both find P/share/vlasim/<name>);
//   4. `built_in` (the source tree's folder, compiled in).
std::string find_data_dir(const char* env_var, const std::string& name, const std::string& built_in);

}  // namespace vlasim
