// LiteralMatcher: finds which prefilter atoms (each rule's key literals,
// lower-case) occur in a line, case-insensitively.
//
// Wu-Manber multi-pattern search: a window of m bytes (m = the shortest atom,
// at least 3) slides over the line; the hash of its last 3 bytes indexes a shift
// table, so on ordinary text the window jumps up to m-2 bytes at a time and only
// windows whose tail is the tail of some atom's m-byte prefix are verified. On
// NCCL logs this looks at a few dozen windows per line instead of every byte.
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
  // Returns the atom's id (ids are dense, in insertion order).
  int Add(std::string_view atom);
  void Build();
  size_t size() const { return atoms_.size(); }

  // Appends the ids of atoms found in text (each at most once) to *ids.
  // `seen` is caller scratch; entries are reset before returning.
  void FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const;

 private:
  static constexpr int kBlock = 3;
  std::vector<std::string> atoms_;
  std::vector<int> tiny_atoms_;          // shorter than kBlock: plain scan
  size_t m_ = 0;                         // window length
  std::vector<uint8_t> shift_;           // by block hash
  std::vector<uint32_t> bucket_begin_;   // CSR: atoms whose prefix ends with block hash h
  std::vector<int32_t> bucket_atoms_;
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_LITERAL_MATCHER_H_
