// LiteralMatcher: finds which prefilter atoms (each rule's key literals,
// lower-case) occur in a line, case-insensitively.
//
// Bucketed shift-or after Hyperscan's FDR, with stride 2. Every atom has a
// fingerprint (its first 8 bytes; a shorter atom is right-aligned behind
// wildcards) and one of 8 groups. The text is sampled at every other byte: a
// sample is a "super-character", the byte and 3 bits of the byte after it, so
// a sample sees both bytes. A 64-bit state holds, for each of the last 4
// samples, 16 bucket bits: group b's fingerprint ending on the sample (bit b)
// or one byte after it (bit 8+b). Each sample costs a table load, a shift and
// an OR, with no data-dependent branch:
//
//   D = (D << 16) | table[sample]
//   top 16 bits of D have bit b clear  <=>  a bucket-b fingerprint may end here
//
// A candidate end is confirmed through a hash of the 8 bytes before it (atoms
// of 8+ bytes) or a short list (shorter atoms), then the whole atom is
// compared.
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
  const std::string& atom(int id) const { return atoms_[id]; }

  // Appends the ids of atoms found in text (each at most once) to *ids.
  // `seen` is caller scratch; entries are reset before returning.
  void FindAll(std::string_view text, std::vector<int>* ids, std::vector<uint8_t>* seen) const;

 private:
  static constexpr int kWindow = 8;                      // fingerprint length
  static constexpr int kStride = 2;                      // text bytes per sample
  static constexpr int kPositions = kWindow / kStride;   // samples per fingerprint: one state field each
  static constexpr int kGroups = 8;                      // atom groups; a bucket is a group and an alignment
  static constexpr int kBucketBits = kGroups * kStride;  // bits per state field
  static constexpr int kNextBits = 3;                    // bits of the following byte in a super-character
  static constexpr int kTableSize = 256 << kNextBits;

  // Confirms the candidates whose fingerprint ends at text[end].
  void Confirm(const unsigned char* p, size_t n, size_t end, uint32_t buckets, std::vector<int>* ids,
               std::vector<uint8_t>* seen) const;
  void Report(int id, std::vector<int>* ids, std::vector<uint8_t>* seen) const;

  std::vector<std::string> atoms_;
  std::vector<std::string> folds_;  // per atom: 0x20 at its letters (case-blind compare)
  std::vector<uint64_t> table_;     // [super-character]: bit (16*j + bucket) clear = accepted at sample j (3 = newest)
  uint64_t initial_carry_ = 0;      // the state's carry before the first sample
  uint32_t short_buckets_ = 0;      // groups holding atoms shorter than kWindow
  std::vector<int32_t> short_atoms_;
  // Short atoms of 2+ bytes by the key of their last two bytes: those of key
  // k are short_by_tail_[tail_begin_[k], tail_begin_[k + 1]); 1-byte atoms apart.
  std::vector<int32_t> short_by_tail_;
  std::vector<uint32_t> tail_begin_;
  std::vector<int32_t> short_one_;
  // Atoms of kWindow+ bytes by their first 8 bytes OR 0x20 (open addressing).
  struct Slot {
    uint64_t key = 0;             // 0 = empty (a folded key has no zero byte)
    uint32_t begin = 0, end = 0;  // range in long_atoms_
  };
  std::vector<Slot> slots_;
  int slot_shift_ = 64;
  std::vector<int32_t> long_atoms_;
  std::vector<int32_t> empty_atoms_;  // "" occurs in every text
};

}  // namespace ncclscan

#endif  // NCCLSCAN_RULES_LITERAL_MATCHER_H_
