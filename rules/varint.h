// LEB128-style unsigned integers for the build's encoded rule trees and
// prefilter atoms (rules/rule_node.h, rules/pattern_atoms.h).
//
// Thread-safety: free functions over their arguments.
#ifndef NCCLSCAN_RULES_VARINT_H_
#define NCCLSCAN_RULES_VARINT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace ncclscan {

inline void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// False on bytes that end inside a number or hold one over 64 bits.
inline bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_VARINT_H_
