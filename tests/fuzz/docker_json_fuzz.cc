// Fuzzes the docker json-file unwrapper: every input is presented as a
// {"log": ...} line so the simdjson path is always taken.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parsers/line_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ncclscan::LineParser parser;
  ncclscan::Arena arena;
  std::string line = "{\"log\":";
  line.append(reinterpret_cast<const char*>(data), size);
  ncclscan::ParsedLine pl;
  std::string_view rest;
  parser.Parse(line, &arena, &pl, &rest);
  // Raw input too (it may itself be a full docker line).
  parser.Parse(std::string_view(reinterpret_cast<const char*>(data), size), &arena, &pl, &rest);
  return 0;
}
