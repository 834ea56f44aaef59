// LiteralMatcher: finds which prefilter atoms (RE2 FilteredRE2's required
// literals, lower-case) occur in a line, case-insensitively.
//
// Every 3-byte window of the line is hashed into a 64 Kbit bitset built from the
// first three bytes of every atom; only windows whose bit is set are verified
// against the atoms starting with them. The windows are independent of each
// other, so the loop runs at a couple of cycles per byte (a byte-at-a-time
// automaton is a chain of dependent loads and was 4x slower on real logs).
//
// Thread-safety: immutable after Build(); FindAll() is const.
#ifndef NCCLSCAN_RULES_LITERAL_MATCHER_H_
#define NCCLSCAN_RULES_LITERAL_MATCHER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ncclscan {

class LiteralMatcher {
 public:
  // Returns the atom's id (ids are dense, in insertion order). Atoms shorter
  // than 3 bytes are matched by a slower exact scan.
  int Add(std::string_view atom);
  void Build();
  size_t size() const { return atoms_.size(); }

  // Appends the ids of atoms found in text (each at most once) to *ids.
  // `seen` is caller scratch; entries are reset before returning.
  void FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const;

 private:
  static uint32_t Hash(uint32_t window) { return (window * 0x9E3779B1u) >> 16; }

  std::vector<std::string> atoms_;
  std::vector<int> short_atoms_;         // shorter than 3 bytes
  std::vector<uint64_t> bits_;           // 65536 bits
  std::vector<uint32_t> bucket_begin_;   // CSR: atoms whose first window hashes to h
  std::vector<int32_t> bucket_atoms_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_LITERAL_MATCHER_H_
