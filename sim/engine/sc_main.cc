// libsystemc refers to sc_main; vlasim owns main() and drives SystemC itself
// (sim/engine/engine.cc), so this is never called. Compiled into every target that links SystemC
// (an INTERFACE source of vlasim::systemc), so no link depends on which objects an archive
// happens to contribute.
extern "C" int sc_main(int, char*[]) { return 1; }
