// Fuzzes the Flight Recorder reader: the pickle subset and the JSON form,
// through ParseFlightRecorder (sniffing, parsing, limits, mapping to FrDump)
// and the bare pickle machine on the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "parsers/flight_recorder.h"
#include "parsers/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)ncclscan::LooksLikeFlightRecorder(in.substr(0, 8192));
  (void)ncclscan::RankFromDumpName(in.substr(0, 256));
  ncclscan::FrDump dump;
  std::string err;
  if (!ncclscan::ParseFlightRecorder(in, &dump, &err) && err.empty()) __builtin_trap();  // a failure has a reason
  ncclscan::PyTree tree;
  if (!ncclscan::ParsePickle(in, &tree, &err) && err.empty()) __builtin_trap();
  return 0;
}
