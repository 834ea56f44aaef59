// Fuzzes the rule loader (YAML -> structs -> validation -> compile) on arbitrary text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rules/rule_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  ncclscan::RuleLoader loader;
  loader.AddSource("fuzz.yaml", std::string(reinterpret_cast<const char*>(data), size));
  std::vector<ncclscan::Diagnostic> diags;
  auto set = loader.Build(&diags);
  for (const auto& d : diags) (void)ncclscan::RenderDiagnostic(d, loader.sources());
  return 0;
}
